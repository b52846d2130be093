//! An SMMU stand-in for the PLDMA tests: identity translation, except for pages the test
//! marks as faulting or stalling, per protection domain (the engine presents PD p as stream
//! `hal::pldma::stream_id(p)`); the test resumes stalls as software would.

use qemu_virt::models::iommu::{Access, IoTranslate, StallId, StallOutcome, Translation};
use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Page {
    Fault,
    Stall,
    /// Translates to an address past the node's memory (a bus error).
    Outside,
}

#[derive(Default)]
struct State {
    pages: HashMap<(u16, u64), Page>,
    /// Only accesses of this kind fault or stall on a marked page (None: both).
    only: HashMap<(u16, u64), Access>,
    next_stall: u64,
    stalled: HashMap<StallId, (u16, u64)>,
    outcomes: HashMap<StallId, StallOutcome>,
    translations: Vec<(u16, u64, Access)>,
    faults: HashSet<(u16, u64)>,
}

#[derive(Default)]
pub struct TestIommu {
    state: Mutex<State>,
}

/// The stream of PD `pd`.
fn stream(pd: u16) -> u16 {
    hal::pldma::stream_id(hal::pldma::Pd::new(pd).expect("a PD"))
}

impl TestIommu {
    pub fn new() -> Self {
        Self::default()
    }

    /// Accesses of PD `pd` to the page of `va` (of kind `only`, or any) fault or stall.
    pub fn mark(&self, pd: u16, va: u64, page: Page, only: Option<Access>) {
        let stream = stream(pd);
        let mut s = self.state.lock().unwrap();
        s.pages.insert((stream, va >> 12), page);
        match only {
            Some(a) => s.only.insert((stream, va >> 12), a),
            None => s.only.remove(&(stream, va >> 12)),
        };
    }

    /// PD `pd`'s page is mapped now (what the kernel's fault handler does).
    pub fn map(&self, pd: u16, va: u64) {
        self.state.lock().unwrap().pages.remove(&(stream(pd), va >> 12));
    }

    /// Transactions stalled and not yet resumed: (id, PD, page address).
    pub fn stalled(&self) -> Vec<(StallId, u16, u64)> {
        let s = self.state.lock().unwrap();
        let mut v: Vec<_> = s
            .stalled
            .iter()
            .filter(|(id, _)| !s.outcomes.contains_key(id))
            .map(|(id, (st, page))| (*id, *st - stream(0), *page << 12))
            .collect();
        v.sort_by_key(|(id, ..)| id.0);
        v
    }

    /// RESUME: retry or terminate a stalled transaction.
    pub fn resume(&self, id: StallId, outcome: StallOutcome) {
        self.state.lock().unwrap().outcomes.insert(id, outcome);
    }

    /// The pages that faulted (stream, page number).
    pub fn faulted(&self) -> HashSet<(u16, u64)> {
        self.state.lock().unwrap().faults.clone()
    }

    pub fn translations(&self) -> usize {
        self.state.lock().unwrap().translations.len()
    }
}

impl IoTranslate for TestIommu {
    fn translate(&self, stream: u16, iova: u64, access: Access) -> Translation {
        let mut s = self.state.lock().unwrap();
        s.translations.push((stream, iova, access));
        let key = (stream, iova >> 12);
        let applies = s.only.get(&key).is_none_or(|&a| a == access);
        match s.pages.get(&key) {
            Some(Page::Fault) if applies => {
                s.faults.insert(key);
                Translation::Fault
            }
            Some(Page::Stall) if applies => {
                s.next_stall += 1;
                let id = StallId(s.next_stall);
                s.stalled.insert(id, key);
                Translation::Stalled(id)
            }
            Some(Page::Outside) if applies => Translation::Ok(super::DDR_BYTES + (iova & 0xfff)),
            _ => Translation::Ok(iova),
        }
    }

    fn stall_outcome(&self, stall: StallId) -> StallOutcome {
        let mut s = self.state.lock().unwrap();
        match s.outcomes.remove(&stall) {
            Some(o) => {
                s.stalled.remove(&stall);
                o
            }
            None if s.stalled.contains_key(&stall) => StallOutcome::Pending,
            None => StallOutcome::Terminate,
        }
    }
}

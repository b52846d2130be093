//! Active Access, the kernel's decisions (`docs/hw/active-access.md`, "Who owns what"): which
//! process owns each IUID, which pages are marked in the engine's active page table (APT), and
//! what is written to the engine's `active` and `apt` pages when a process opens a log, marks a
//! page, closes a log, or ends. Plain logic over [`ActiveHw`], host-tested; `rdma_node` applies it to the
//! engine under its lock.
//!
//! The rules it keeps: an IUID has one owner, a process that holds its PD here; a page is marked
//! only for its owner's PD and only by the owner of the IUID it names, only if the caller says it
//! lies in the caller's own regions; the log's place is the kernel's (a fixed slot of the PLDMA
//! area per IUID), never an address a process gives.

use board::layout::{ACTIVE_LOG_RING, ACTIVE_LOG_SLOT, ACTIVE_LOGS};
use hal::pldma::Pd;
use hal::pldma::active::{APT_ENTRIES, APT_WAYS, Attr, IUIDS, KERNEL_LOG, LogCtrl, MAX_SIZE_LOG2, apt_set, apt_tag};
use proto::gsas::MailboxOpcode;
use proto::syscall::active as actions;

/// What the decisions write to the engine.
pub trait ActiveHw {
    /// Programs log `log`: invalid first, base and header, the header's `consumed` zeroed, then
    /// `ctrl` (valid, the owner's PD, the ring's size).
    fn open_log(&mut self, log: usize, ctrl: LogCtrl, base: u64, header: u64);
    /// Makes log `log` invalid.
    fn close_log(&mut self, log: usize);
    /// Rewrites valid log `log`'s `ctrl` (only its NOTIFY changes: the log keeps its entries).
    fn set_ctrl(&mut self, log: usize, ctrl: LogCtrl);
    /// Writes APT entry `index` (`attr` first, then `tag`; a tag of 0 frees it).
    fn write_apt(&mut self, index: usize, tag: u64, attr: u32);
}

/// Why a call is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ActiveError {
    /// Every IUID is taken, or the page's APT set is full.
    Busy,
    /// The IUID is not the caller's, an action bit is unknown, or FLUSH comes with another.
    BadArgument,
    /// The address is not in the caller's own memory.
    BadAddress,
}

/// An IUID's owner: the process in a table slot, and the PD it holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Owner {
    slot: usize,
    pd: Pd,
}

/// A marked page: whose (PD), which page (VA >> 12), for which IUID.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Mark {
    pd: Pd,
    page: u64,
    iuid: u8,
}

/// The node's IUIDs and marked pages, as the kernel keeps them (the engine's tables mirror it).
#[derive(Debug)]
pub struct ActiveTable {
    owners: [Option<Owner>; IUIDS],
    apt: [Option<Mark>; APT_ENTRIES],
    /// Per IUID: the owner's mailbox opcode that an entry appended is told on (`ACTIVE_NOTIFY`).
    notify: [Option<MailboxOpcode>; IUIDS],
}

/// An entry went to a log whose owner asked to be told: notify `opcode` of the process in
/// `slot`, with the IUID as the payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LogNotice {
    pub slot: usize,
    pub iuid: u8,
    pub opcode: MailboxOpcode,
}

impl Default for ActiveTable {
    fn default() -> Self {
        Self::new()
    }
}

/// The PA of IUID (or kernel log) `log`'s ring and header.
pub const fn log_pa(log: usize) -> (u64, u64) {
    let ring = ACTIVE_LOGS + log as u64 * ACTIVE_LOG_SLOT;
    (ring, ring + ACTIVE_LOG_RING)
}

/// The ring's granules: the whole 16 KiB.
const SIZE_LOG2: u32 = MAX_SIZE_LOG2;
const _: () = assert!((1u64 << SIZE_LOG2) * hal::pldma::active::GRANULE == ACTIVE_LOG_RING);

impl ActiveTable {
    pub const fn new() -> Self {
        Self { owners: [None; IUIDS], apt: [None; APT_ENTRIES], notify: [None; IUIDS] }
    }

    /// Programs the kernel fault log (E = 0) at boot; it notifies, so that the engine's
    /// interrupt says when the kernel has entries to take.
    pub fn open_kernel_log(hw: &mut (impl ActiveHw + ?Sized)) {
        let (base, header) = log_pa(KERNEL_LOG);
        hw.open_log(KERNEL_LOG, LogCtrl { valid: true, notify: true, pd: 0, size_log2: SIZE_LOG2 }, base, header);
    }

    fn ctrl(pd: Pd, notify: bool) -> LogCtrl {
        LogCtrl { valid: true, notify, pd: pd.raw() as u8, size_log2: SIZE_LOG2 }
    }

    /// Takes a free IUID for the holder of `pd` in `slot` and programs its log (emptied).
    pub fn open(&mut self, hw: &mut (impl ActiveHw + ?Sized), slot: usize, pd: Pd) -> Result<u8, ActiveError> {
        let iuid = self.owners.iter().position(Option::is_none).ok_or(ActiveError::Busy)?;
        self.owners[iuid] = Some(Owner { slot, pd });
        self.notify[iuid] = None;
        let (base, header) = log_pa(iuid);
        hw.open_log(iuid, Self::ctrl(pd, false), base, header);
        Ok(iuid as u8)
    }

    /// The caller (the process in `slot` holding `pd`) asks to be told on `opcode` (a mailbox
    /// opcode it receives: the caller checks) of every entry appended to its log `iuid`, or no
    /// longer (`None`: the log is polled). Sets the log's NOTIFY; the log keeps its entries.
    pub fn notify(
        &mut self,
        hw: &mut (impl ActiveHw + ?Sized),
        (slot, pd): (usize, Pd),
        iuid: u64,
        opcode: Option<MailboxOpcode>,
    ) -> Result<(), ActiveError> {
        let i = usize::from(self.owned_by((slot, pd), iuid)?);
        self.notify[i] = opcode;
        hw.set_ctrl(i, Self::ctrl(pd, opcode.is_some()));
        Ok(())
    }

    /// Who to tell of the entries the engine's `appended` bits report (bit `i`: log `i`); the
    /// kernel log's bit and logs nobody asked for are not here.
    pub fn notices(&self, appended: u32) -> impl Iterator<Item = LogNotice> + '_ {
        (0..IUIDS).filter(move |&i| appended & (1 << i) != 0).filter_map(|i| {
            let (owner, opcode) = (self.owners[i]?, self.notify[i]?);
            Some(LogNotice { slot: owner.slot, iuid: i as u8, opcode })
        })
    }

    /// Marks the page at `va` of the caller, the process in `slot` holding PD `pd`, with `bits` (`proto::syscall::
    /// active`; 0 unmarks it) for IUID `iuid`. `own` says whether `va` lies in the caller's own
    /// memory that the engine may reach (its regions).
    pub fn assoc(
        &mut self,
        hw: &mut (impl ActiveHw + ?Sized),
        (slot, pd): (usize, Pd),
        iuid: u64,
        va: u64,
        bits: u64,
        own: impl FnOnce(u64) -> bool,
    ) -> Result<(), ActiveError> {
        let iuid = self.owned_by((slot, pd), iuid)?;
        if bits & !actions::ALL != 0 {
            return Err(ActiveError::BadArgument);
        }
        if bits & actions::FLUSH != 0 && bits != actions::FLUSH | actions::E && bits != actions::FLUSH {
            return Err(ActiveError::BadArgument);
        }
        if !own(va) {
            return Err(ActiveError::BadAddress);
        }
        let page = va >> 12;
        let set = apt_set(va);
        let ways = set * APT_WAYS..(set + 1) * APT_WAYS;
        let same = ways.clone().find(|&i| matches!(self.apt[i], Some(m) if m.pd == pd && m.page == page));
        if bits == 0 {
            if let Some(i) = same {
                // Only the IUID that marked it may unmark it.
                if self.apt[i].map(|m| m.iuid) != Some(iuid) {
                    return Err(ActiveError::BadArgument);
                }
                self.apt[i] = None;
                hw.write_apt(i, 0, 0);
            }
            return Ok(());
        }
        let index = same.or_else(|| ways.clone().find(|&i| self.apt[i].is_none())).ok_or(ActiveError::Busy)?;
        self.apt[index] = Some(Mark { pd, page, iuid });
        // A FLUSH page is plain memory that is served, never logged: E only names whose log it
        // waits for.
        let attr = Attr::decode(bits as u32);
        let attr = Attr { e: attr.e || attr.flush, w: attr.w || attr.flush, iuid, ..attr };
        hw.write_apt(index, apt_tag(pd, va), attr.encode());
        Ok(())
    }

    /// IUID `iuid` if it is the caller's (the process in `slot` holding `pd`), else
    /// `BadArgument`.
    pub fn owned_by(&self, (slot, pd): (usize, Pd), iuid: u64) -> Result<u8, ActiveError> {
        let i = usize::try_from(iuid).ok().filter(|&i| i < IUIDS).ok_or(ActiveError::BadArgument)?;
        if self.owners[i] != Some(Owner { slot, pd }) {
            return Err(ActiveError::BadArgument);
        }
        Ok(i as u8)
    }

    /// `ACTIVE_CLOSE`: the caller gives back its IUID `iuid` (`BadArgument` if it is not the
    /// caller's): its pages are unmarked, its log invalidated, and the IUID is free for the
    /// next [`open`](Self::open). The caller has taken the log out of the process's address space
    /// first: the next owner's log will be in the same place.
    pub fn close_owned(
        &mut self,
        hw: &mut (impl ActiveHw + ?Sized),
        caller: (usize, Pd),
        iuid: u64,
    ) -> Result<u8, ActiveError> {
        let iuid = self.owned_by(caller, iuid)?;
        self.close(hw, caller.0, iuid);
        Ok(iuid)
    }

    /// Gives back IUID `iuid` of the process in `slot` (its pages unmarked, its log invalid).
    pub fn close(&mut self, hw: &mut (impl ActiveHw + ?Sized), slot: usize, iuid: u8) {
        let i = usize::from(iuid);
        if !matches!(self.owners.get(i), Some(Some(o)) if o.slot == slot) {
            return;
        }
        for (index, m) in self.apt.iter_mut().enumerate() {
            if matches!(m, Some(m) if m.iuid == iuid) {
                *m = None;
                hw.write_apt(index, 0, 0);
            }
        }
        hw.close_log(i);
        self.owners[i] = None;
        self.notify[i] = None;
    }

    /// The process in `slot` ended: its pages are unmarked and its logs invalidated, so that
    /// neither outlives it (its memory and its PD may go to another process next).
    pub fn release(&mut self, hw: &mut (impl ActiveHw + ?Sized), slot: usize) {
        for iuid in 0..IUIDS as u8 {
            self.close(hw, slot, iuid);
        }
    }

    /// The IUIDs the process in `slot` owns.
    pub fn owned(&self, slot: usize) -> impl Iterator<Item = u8> + '_ {
        (0..IUIDS).filter(move |&i| matches!(self.owners[i], Some(o) if o.slot == slot)).map(|i| i as u8)
    }

    /// Pages marked now.
    pub fn marked(&self) -> usize {
        self.apt.iter().flatten().count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec;
    use std::vec::Vec;

    /// A log opened (ctrl, base, header), or closed.
    type Opened = Option<(LogCtrl, u64, u64)>;

    #[derive(Debug, Default)]
    struct Fake {
        logs: Vec<(usize, Opened)>,
        apt: Vec<(usize, u64, u32)>,
        ctrls: Vec<(usize, LogCtrl)>,
    }

    impl ActiveHw for Fake {
        fn open_log(&mut self, log: usize, ctrl: LogCtrl, base: u64, header: u64) {
            self.logs.push((log, Some((ctrl, base, header))));
        }
        fn close_log(&mut self, log: usize) {
            self.logs.push((log, None));
        }
        fn set_ctrl(&mut self, log: usize, ctrl: LogCtrl) {
            self.ctrls.push((log, ctrl));
        }
        fn write_apt(&mut self, index: usize, tag: u64, attr: u32) {
            self.apt.push((index, tag, attr));
        }
    }

    fn pd(n: u16) -> Pd {
        Pd::new(n).unwrap()
    }

    const VA: u64 = 0x10_0000_3000;
    const ACTIVE_PUT: u64 = actions::WL | actions::WLD | actions::E;

    #[test]
    fn an_iuid_is_one_process_s_and_its_log_the_kernel_s_slot() {
        let (mut t, mut hw) = (ActiveTable::new(), Fake::default());
        assert_eq!(t.open(&mut hw, 4, pd(2)), Ok(0));
        assert_eq!(t.open(&mut hw, 5, pd(3)), Ok(1));
        let (ctrl, base, header) = hw.logs[1].1.unwrap();
        assert_eq!((ctrl.valid, ctrl.pd, ctrl.granules()), (true, 3, 512));
        assert_eq!((base, header), (ACTIVE_LOGS + ACTIVE_LOG_SLOT, ACTIVE_LOGS + ACTIVE_LOG_SLOT + ACTIVE_LOG_RING));
        for _ in 2..IUIDS {
            t.open(&mut hw, 6, pd(4)).unwrap();
        }
        assert_eq!(t.open(&mut hw, 7, pd(5)), Err(ActiveError::Busy), "16 IUIDs per node");
        t.release(&mut hw, 5);
        assert_eq!(hw.logs.last(), Some(&(1, None)), "the ended owner's log is invalidated");
        assert_eq!(t.open(&mut hw, 7, pd(5)), Ok(1), "and its IUID free again");
        // The kernel's own log is the 17th slot.
        ActiveTable::open_kernel_log(&mut hw);
        let (ctrl, base, _) = hw.logs.last().unwrap().1.unwrap();
        assert_eq!((ctrl.valid, base), (true, log_pa(KERNEL_LOG).0));
    }

    #[test]
    fn only_the_owner_marks_and_only_its_own_pages() {
        let (mut t, mut hw) = (ActiveTable::new(), Fake::default());
        let mine = t.open(&mut hw, 4, pd(2)).unwrap();
        let theirs = t.open(&mut hw, 5, pd(3)).unwrap();
        let own = |_| true;
        // Another process's IUID, a forged one, a PD not the owner's: refused, nothing written.
        assert_eq!(t.assoc(&mut hw, (4, pd(2)), theirs.into(), VA, ACTIVE_PUT, own), Err(ActiveError::BadArgument));
        assert_eq!(t.assoc(&mut hw, (4, pd(2)), 16, VA, ACTIVE_PUT, own), Err(ActiveError::BadArgument));
        assert_eq!(t.assoc(&mut hw, (4, pd(2)), u64::MAX, VA, ACTIVE_PUT, own), Err(ActiveError::BadArgument));
        assert_eq!(t.assoc(&mut hw, (4, pd(3)), mine.into(), VA, ACTIVE_PUT, own), Err(ActiveError::BadArgument));
        // Unknown bits, FLUSH with others.
        assert_eq!(t.assoc(&mut hw, (4, pd(2)), mine.into(), VA, 128, own), Err(ActiveError::BadArgument));
        let flush_put = actions::FLUSH | actions::WL;
        assert_eq!(t.assoc(&mut hw, (4, pd(2)), mine.into(), VA, flush_put, own), Err(ActiveError::BadArgument));
        // Memory that is not the caller's.
        assert_eq!(t.assoc(&mut hw, (4, pd(2)), mine.into(), VA, ACTIVE_PUT, |_| false), Err(ActiveError::BadAddress));
        assert!(hw.apt.is_empty());
        // The owner's own page: the entry is (PD 2, page), IUID mine.
        t.assoc(&mut hw, (4, pd(2)), mine.into(), VA + 0x123, ACTIVE_PUT, own).unwrap();
        let (index, tag, attr) = hw.apt[0];
        assert_eq!(index / APT_WAYS, apt_set(VA));
        assert_eq!(tag, apt_tag(pd(2), VA));
        let a = Attr::decode(attr);
        assert_eq!((a.w, a.wl, a.wld, a.e, a.iuid), (false, true, true, true, mine));
        // Marking it again rewrites the same entry; another IUID of another process cannot
        // unmark it.
        t.assoc(&mut hw, (4, pd(2)), mine.into(), VA, actions::W | actions::WL | actions::E, own).unwrap();
        assert_eq!(hw.apt[1].0, index);
        assert_eq!(t.assoc(&mut hw, (5, pd(3)), theirs.into(), VA, 0, own), Ok(()), "PD 3 has no such page");
        assert_eq!(t.marked(), 1);
        t.assoc(&mut hw, (4, pd(2)), mine.into(), VA, 0, own).unwrap();
        assert_eq!(hw.apt.last(), Some(&(index, 0, 0)));
        assert_eq!(t.marked(), 0);
    }

    #[test]
    fn a_full_set_is_busy_and_an_exit_clears_every_mark() {
        let (mut t, mut hw) = (ActiveTable::new(), Fake::default());
        let i = t.open(&mut hw, 4, pd(2)).unwrap();
        let j = t.open(&mut hw, 4, pd(2)).unwrap();
        // Pages 256 KiB apart fall into one set.
        for k in 0..APT_WAYS as u64 {
            t.assoc(&mut hw, (4, pd(2)), i.into(), VA + k * 0x4_0000, ACTIVE_PUT, |_| true).unwrap();
        }
        let fifth = VA + 4 * 0x4_0000;
        assert_eq!(t.assoc(&mut hw, (4, pd(2)), j.into(), fifth, ACTIVE_PUT, |_| true), Err(ActiveError::Busy));
        t.assoc(&mut hw, (4, pd(2)), j.into(), VA + 0x1000, actions::FLUSH, |_| true).unwrap();
        let flush = Attr::decode(hw.apt.last().unwrap().2);
        assert!(flush.flush && flush.e && !flush.logs_get() && !flush.logs_put());
        assert_eq!(t.owned(4).collect::<Vec<_>>(), [i, j]);
        hw.apt.clear();
        t.release(&mut hw, 4);
        assert_eq!(hw.apt.len(), 5, "every page marked by the ended process is cleared");
        assert!(hw.apt.iter().all(|&(_, tag, attr)| tag == 0 && attr == 0));
        assert_eq!(t.marked(), 0);
        assert_eq!(t.owned(4).count(), 0);
    }

    #[test]
    fn an_owner_closes_only_its_own_iuid_which_is_then_free_for_anyone() {
        let (mut t, mut hw) = (ActiveTable::new(), Fake::default());
        let own = |_| true;
        let mine = t.open(&mut hw, 4, pd(2)).unwrap();
        let kept = t.open(&mut hw, 4, pd(2)).unwrap();
        let theirs = t.open(&mut hw, 5, pd(3)).unwrap();
        t.assoc(&mut hw, (4, pd(2)), mine.into(), VA, ACTIVE_PUT, own).unwrap();
        t.assoc(&mut hw, (4, pd(2)), kept.into(), VA + 0x1000, ACTIVE_PUT, own).unwrap();
        t.assoc(&mut hw, (4, pd(2)), mine.into(), VA + 0x2000, actions::FLUSH, own).unwrap();
        t.assoc(&mut hw, (5, pd(3)), theirs.into(), VA, ACTIVE_PUT, own).unwrap();
        let mine_marks = [hw.apt[0].0, hw.apt[2].0];
        t.notify(&mut hw, (4, pd(2)), mine.into(), Some(MailboxOpcode::user(1).unwrap())).unwrap();
        hw.apt.clear();
        hw.logs.clear();
        // Another process's IUID, a PD not the caller's, an IUID nobody opened, no IUID at all.
        let refused = [((4, pd(2)), u64::from(theirs)), ((4, pd(3)), mine.into()), ((4, pd(2)), 3), ((4, pd(2)), 16)];
        for (caller, iuid) in refused.into_iter().chain([((4, pd(2)), u64::MAX)]) {
            assert_eq!(t.close_owned(&mut hw, caller, iuid), Err(ActiveError::BadArgument), "{iuid}");
        }
        assert!(hw.apt.is_empty() && hw.logs.is_empty(), "nothing refused reached the engine");
        assert_eq!(t.close_owned(&mut hw, (4, pd(2)), mine.into()), Ok(mine));
        // Its two pages unmarked, the other IUID's and the other process's kept; its log invalid.
        assert_eq!(
            hw.apt.iter().map(|&(i, tag, attr)| (i, tag | u64::from(attr))).collect::<Vec<_>>(),
            [(mine_marks[0], 0), (mine_marks[1], 0)]
        );
        assert_eq!(hw.logs, [(usize::from(mine), None)]);
        assert_eq!((t.marked(), t.owned(4).collect::<Vec<_>>()), (2, vec![kept]));
        assert_eq!(t.notices(1 << mine).count(), 0, "its notices end with it");
        assert_eq!(t.close_owned(&mut hw, (4, pd(2)), mine.into()), Err(ActiveError::BadArgument), "closed twice");
        // Free for the next open, of any process, whose log starts polled.
        assert_eq!(t.open(&mut hw, 6, pd(4)), Ok(mine));
        assert!(!hw.logs.last().unwrap().1.unwrap().0.notify);
        assert_eq!(t.notices(1 << mine).count(), 0);
    }

    #[test]
    fn only_the_owner_asks_to_be_told_and_notices_name_it() {
        let (mut t, mut hw) = (ActiveTable::new(), Fake::default());
        let op = |n| MailboxOpcode::user(n).unwrap();
        let mine = t.open(&mut hw, 4, pd(2)).unwrap();
        let theirs = t.open(&mut hw, 5, pd(3)).unwrap();
        assert!(!hw.logs[0].1.unwrap().0.notify, "a log is polled until asked");
        for (caller, iuid) in [((4, pd(2)), u64::from(theirs)), ((4, pd(3)), mine.into()), ((4, pd(2)), 16)] {
            assert_eq!(t.notify(&mut hw, caller, iuid, Some(op(1))), Err(ActiveError::BadArgument));
        }
        assert!(hw.ctrls.is_empty());
        t.notify(&mut hw, (4, pd(2)), mine.into(), Some(op(1))).unwrap();
        let (log, ctrl) = hw.ctrls[0];
        assert_eq!(
            (log, ctrl.valid, ctrl.notify, ctrl.pd, ctrl.size_log2),
            (usize::from(mine), true, true, 2, SIZE_LOG2)
        );
        // The engine's bits: this log, the other (polled) one, the kernel's.
        let appended = 1 << mine | 1 << theirs | 1 << KERNEL_LOG;
        assert_eq!(t.notices(appended).collect::<Vec<_>>(), [LogNotice { slot: 4, iuid: mine, opcode: op(1) }]);
        t.notify(&mut hw, (4, pd(2)), mine.into(), None).unwrap();
        assert!(!hw.ctrls[1].1.notify && hw.ctrls[1].1.valid, "polled again, the log kept");
        assert_eq!(t.notices(appended).count(), 0);
        // A closed IUID's next owner starts polled.
        t.notify(&mut hw, (4, pd(2)), mine.into(), Some(op(2))).unwrap();
        t.release(&mut hw, 4);
        assert_eq!(t.open(&mut hw, 6, pd(4)), Ok(mine));
        assert_eq!(t.notices(appended).count(), 0);
        // The kernel's own log notifies.
        ActiveTable::open_kernel_log(&mut hw);
        assert!(hw.logs.last().unwrap().1.unwrap().0.notify);
    }
}

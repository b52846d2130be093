//! Stall mode: held transactions, RESUME retry and terminate, HUPCF, and the IoTranslate side
//! (outcomes reported once, waiting across threads, the interrupt callback).

use super::*;
use crate::models::iommu::{StallId, StallOutcome};
use hal::smmu500::{FaultMode, Resume};
use std::sync::atomic::AtomicUsize;
use std::time::Duration;

fn stalled(t: Translation) -> StallId {
    match t {
        Translation::Stalled(id) => id,
        other => panic!("expected a stall, got {other:?}"),
    }
}

#[test]
fn a_stalled_source_read_is_retried_after_the_kernel_maps_the_page() {
    let mut node = Node::with_domain(2, FaultPolicy::STALL);
    let id = stalled(node.read(2, 0x7000));
    assert_eq!(node.model.stall_outcome(id), StallOutcome::Pending);
    assert_eq!(node.r32(cb(2, FSR)), TF | SS);
    assert!(node.model.irq());
    // The kernel's handler: decode, clear, map (touch-ahead), resume.
    let f = node.smmu.next_fault().unwrap();
    assert!(f.stalled && !f.multiple);
    node.smmu.clear_fault(&f);
    assert_eq!(node.r32(cb(2, FSR)), SS, "SS is not write-1-to-clear: the transaction is still held");
    assert!(!node.model.irq(), "a held transaction alone does not interrupt");
    assert!(node.smmu.is_stalled(bank(2)) && node.smmu.next_fault().is_none());
    node.tables.map(0x7000, DATA, USER_RW);
    assert_eq!(node.model.stall_outcome(id), StallOutcome::Pending);
    node.smmu.resume(bank(2), Resume::Retry);
    assert_eq!(node.model.stall_outcome(id), StallOutcome::Retry);
    assert_eq!(node.model.stall_outcome(id), StallOutcome::Terminate, "reported once, then forgotten");
    assert_eq!(node.read(2, 0x7000), Translation::Ok(DATA));
    assert_eq!(node.r32(cb(2, FSR)), 0);
    assert!(!node.smmu.is_stalled(bank(2)));
}

#[test]
fn resume_terminate_aborts_the_stalled_transaction() {
    let mut node = Node::with_domain(3, FaultPolicy::STALL);
    let id = stalled(node.write(3, 0x5000));
    // Linux's order in reverse (RESUME before the W1C) works too.
    node.smmu.resume(bank(3), Resume::Terminate);
    assert_eq!(node.r32(cb(3, FSR)), TF, "SS went with RESUME; the record stays until cleared");
    node.smmu.clear_fault(&node.smmu.fault(bank(3)).unwrap());
    assert_eq!(node.model.stall_outcome(id), StallOutcome::Terminate);
    // A RESUME with nothing held is ignored.
    node.smmu.resume(bank(3), Resume::Retry);
    assert_eq!(node.r32(cb(3, FSR)), 0);
    assert_eq!(node.model.stall_outcome(StallId(12345)), StallOutcome::Terminate, "unknown ids");
}

#[test]
fn hit_under_fault_in_stall_mode_lets_hits_through_and_holds_every_fault() {
    let mut node = Node::with_domain(4, FaultPolicy::STALL);
    node.tables.map(0x1000, DATA, USER_RW);
    // A 16 KiB block whose last three source pages are missing: three stalls, one record.
    assert_eq!(node.read(4, 0x1000), Translation::Ok(DATA));
    let ids: Vec<StallId> = (2..5).map(|p| stalled(node.read(4, p * 0x1000))).collect();
    assert_eq!(node.read(4, 0x1008), Translation::Ok(DATA + 8), "hits proceed");
    assert_eq!(node.r32(cb(4, FSR)), TF | SS | MULTI);
    assert_eq!(node.model.read(cb(4, FAR), 8), Ok(0x2000));
    let f = node.smmu.next_fault().unwrap();
    node.smmu.clear_fault(&f);
    for p in 2..5 {
        node.tables.map(p * 0x1000, DATA + p * 0x1000, USER_RW);
    }
    node.smmu.resume(bank(4), Resume::Retry);
    for (id, p) in ids.iter().zip(2..5) {
        assert_eq!(node.model.stall_outcome(*id), StallOutcome::Retry);
        assert_eq!(node.read(4, p * 0x1000), Translation::Ok(DATA + p * 0x1000));
    }
    assert_eq!(node.r32(cb(4, FSR)), 0);
}

/// The race behind the stall-mode timeouts: a second access faults between the handler's read
/// of FSR and its write-1-to-clear, so it gets only MULTI; that MULTI goes with the next clear,
/// and the access stays held with no record and no interrupt. The driver finds it
/// (`unrecorded_stalls`), and RESUME retry makes it fault again, recorded in full.
#[test]
fn a_stall_left_with_no_record_is_found_and_retried_into_a_full_record() {
    let mut node = Node::with_domain(9, FaultPolicy::STALL);
    let first = stalled(node.write(9, 0x1000));
    let read = node.smmu.next_fault().unwrap();
    assert!(read.has_address() && !read.multiple);
    let second = stalled(node.write(9, 0x2000));
    node.smmu.clear_fault(&read);
    assert_eq!(node.r32(cb(9, FSR)), MULTI | SS, "the second fault is MULTI alone");
    node.tables.map(0x1000, DATA, USER_RW);
    node.smmu.resume(bank(9), Resume::Retry);
    assert_eq!(node.model.stall_outcome(first), StallOutcome::Retry);
    assert_eq!(node.model.stall_outcome(second), StallOutcome::Retry);
    // The engine retries the second access: MULTI is still set, so it is held unrecorded.
    let again = stalled(node.write(9, 0x2000));
    let multi = node.smmu.next_fault().unwrap();
    assert!(!multi.has_address() && multi.stalled, "MULTI alone: FAR is the first fault's");
    node.smmu.clear_fault(&multi);
    assert_eq!(node.r32(cb(9, FSR)), SS);
    assert!(!node.model.irq() && node.smmu.next_fault().is_none(), "nothing interrupts for it");
    assert_eq!(node.smmu.unrecorded_stalls().collect::<Vec<_>>(), [bank(9)]);
    node.smmu.resume(bank(9), Resume::Retry);
    assert_eq!(node.model.stall_outcome(again), StallOutcome::Retry);
    let last = stalled(node.write(9, 0x2000));
    assert!(node.model.irq(), "recorded in full this time");
    let full = node.smmu.next_fault().unwrap();
    assert_eq!((full.address, full.has_address(), full.multiple), (0x2000, true, false));
    assert_eq!(node.smmu.unrecorded_stalls().count(), 0, "a recorded stall is the handler's, not an orphan");
    node.smmu.clear_fault(&full);
    node.tables.map(0x2000, DATA + 0x1000, USER_RW);
    node.smmu.resume(bank(9), Resume::Retry);
    assert_eq!(node.model.stall_outcome(last), StallOutcome::Retry);
    assert_eq!(node.write(9, 0x2000), Translation::Ok(DATA + 0x1000));
}

#[test]
fn resume_terminate_aborts_only_the_recorded_fault_and_retries_the_multi_ones() {
    let mut node = Node::with_domain(10, FaultPolicy::STALL);
    let bad = stalled(node.write(10, 0x7000_0000));
    let innocent = stalled(node.write(10, 0x3000));
    assert_eq!(node.r32(cb(10, FSR)), TF | SS | MULTI);
    let f = node.smmu.next_fault().unwrap();
    assert_eq!((f.address, f.multiple), (0x7000_0000, true));
    node.smmu.clear_fault(&f);
    node.smmu.resume(bank(10), Resume::Terminate);
    assert_eq!(node.model.stall_outcome(bad), StallOutcome::Terminate);
    assert_eq!(node.model.stall_outcome(innocent), StallOutcome::Retry, "it faults again, in full");
    let _ = stalled(node.write(10, 0x3000));
    assert_eq!(node.smmu.next_fault().map(|f| (f.address, f.multiple)), Some((0x3000, false)));
}

#[test]
fn without_hit_under_fault_a_stall_holds_the_whole_bank() {
    let mut node = Node::new();
    node.attach(5, FaultPolicy { mode: FaultMode::Stall, hit_under_fault: false });
    node.tables.map(0x1000, DATA, USER_RW);
    let faulted = stalled(node.read(5, 0x9000));
    let behind = stalled(node.read(5, 0x1000));
    let behind_fault = stalled(node.write(5, 0xa000));
    assert_eq!(node.r32(cb(5, FSR)), TF | SS, "held behind the fault: not translated, not MULTI");
    node.smmu.clear_fault(&node.smmu.next_fault().unwrap());
    node.smmu.resume(bank(5), Resume::Terminate);
    assert_eq!(node.model.stall_outcome(faulted), StallOutcome::Terminate);
    assert_eq!(node.model.stall_outcome(behind), StallOutcome::Retry, "never faulted: retried");
    assert_eq!(node.model.stall_outcome(behind_fault), StallOutcome::Retry);
    assert_eq!(node.read(5, 0x1000), Translation::Ok(DATA));
    // Held behind a fault whose RESUME came first: let go when the record is cleared.
    let again = stalled(node.read(5, 0x9000));
    node.smmu.resume(bank(5), Resume::Retry);
    assert_eq!(node.model.stall_outcome(again), StallOutcome::Retry);
    let queued = stalled(node.read(5, 0x1000));
    assert_eq!(node.model.stall_outcome(queued), StallOutcome::Pending, "the record is still pending");
    node.smmu.clear_fault(&node.smmu.next_fault().unwrap());
    assert_eq!(node.model.stall_outcome(queued), StallOutcome::Retry);
}

#[test]
fn detaching_or_changing_the_fault_mode_terminates_what_is_held() {
    let mut node = Node::with_domain(6, FaultPolicy::STALL);
    let a = stalled(node.read(6, 0x1000));
    node.smmu.detach(bank(6)).unwrap();
    assert_eq!(node.model.stall_outcome(a), StallOutcome::Terminate);
    assert!(!node.model.holds(6));
    node.attach(6, FaultPolicy::STALL);
    let b = stalled(node.read(6, 0x1000));
    node.attach(6, FaultPolicy::TERMINATE);
    assert_eq!(node.model.stall_outcome(b), StallOutcome::Terminate, "a new address space");
    assert_eq!(node.read(6, 0x1000), Translation::Fault, "terminate mode now");
    node.smmu.clear_fault(&node.smmu.next_fault().unwrap());
    node.attach(6, FaultPolicy::STALL);
    let c = stalled(node.read(6, 0x1000));
    let scr0 = node.r32(0);
    node.w32(0, scr0 | 1);
    assert_eq!(node.model.stall_outcome(c), StallOutcome::Terminate, "sCR0.CLIENTPD");
}

#[test]
fn an_engine_thread_waits_for_the_kernels_resume() {
    let mut node = Node::with_domain(7, FaultPolicy::STALL);
    let model = node.model.clone();
    let engine = std::thread::spawn(move || {
        let mut tries = 0;
        loop {
            tries += 1;
            match model.translate(stream(7), 0x3000, Access::Write) {
                Translation::Stalled(id) => match model.wait_stall(id, Duration::from_secs(10)) {
                    StallOutcome::Retry => continue,
                    other => return Err(other),
                },
                Translation::Ok(pa) => return Ok((pa, tries)),
                Translation::Fault => return Err(StallOutcome::Terminate),
            }
        }
    });
    // The kernel: wait for the interrupt (the fault), then map and resume.
    let fault = loop {
        if let Some(f) = node.smmu.next_fault() {
            break f;
        }
        std::thread::yield_now();
    };
    node.smmu.clear_fault(&fault);
    node.tables.map(0x3000, DATA, USER_RW);
    node.smmu.resume(fault.bank, Resume::Retry);
    assert_eq!(engine.join().unwrap(), Ok((DATA, 2)));
    assert_eq!(node.model.wait_stall(StallId(999), Duration::from_millis(1)), StallOutcome::Terminate);
}

#[test]
fn a_fault_found_by_a_translation_calls_the_interrupt_callback_once_per_rise() {
    let node = Node::with_domain(8, FaultPolicy::TERMINATE);
    let calls = Arc::new(AtomicUsize::new(0));
    let counter = calls.clone();
    node.model.set_irq_notifier(Box::new(move || {
        counter.fetch_add(1, Ordering::SeqCst);
    }));
    node.tables.map(0x1000, DATA, USER_RW);
    assert_eq!(node.read(8, 0x1000), Translation::Ok(DATA));
    assert_eq!(node.read(8, 0x2000), Translation::Fault);
    assert_eq!(node.read(8, 0x3000), Translation::Fault);
    assert_eq!(calls.load(Ordering::SeqCst), 1, "MULTI does not raise the line again");
    node.w32(cb(8, FSR), TF | MULTI);
    assert_eq!(node.read(8, 0x2000), Translation::Fault);
    assert_eq!(calls.load(Ordering::SeqCst), 2);
}

#[test]
fn translations_and_register_accesses_from_many_threads() {
    let mut node = Node::with_domain(9, FaultPolicy::STALL);
    for p in 0..64 {
        node.tables.map(p * 0x1000, DATA + p * 0x1000, USER_RW);
    }
    let engines: Vec<_> = (0..4)
        .map(|t| {
            let model = node.model.clone();
            std::thread::spawn(move || {
                for i in 0..2000u64 {
                    let va = ((i * 7 + t) % 64) * 0x1000 + 8;
                    assert_eq!(model.translate(stream(9), va, Access::Read), Translation::Ok(DATA + va));
                }
            })
        })
        .collect();
    for _ in 0..200 {
        node.smmu.invalidate_asid(bank(9)).unwrap();
        assert!(node.smmu.next_fault().is_none());
    }
    for e in engines {
        e.join().unwrap();
    }
}

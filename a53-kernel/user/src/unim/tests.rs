//! The seed's RDMA calls over the fake R5 and fake regions (`fake.rs`).

use core::ffi::c_void;
use std::sync::Mutex;
use std::vec::Vec;

use super::*;
use crate::SysError;
use crate::fake::{FakeR5, FakeRegions};
use crate::rdma::CqeStatus;

const ME: u16 = 4;

/// The library state of node `ME` over `r5`.
fn dma(r5: &mut FakeR5) -> UnimDma<&mut FakeR5, FakeRegions> {
    let set = r5.set;
    // SAFETY: the fake's queue set, used by this `Rdma` only.
    UnimDma::new(unsafe { Rdma::new(set, r5) }, ME, FakeRegions::default())
}

/// The bytes at a buffer's local memory.
fn bytes(d: &UnimDma<&mut FakeR5, FakeRegions>, id: BufferId) -> &'static mut [u8] {
    let b = d.buffer(id).unwrap();
    // SAFETY: a fake region (host memory) that lives as long as the test's `d`, and nothing
    // else touches it while the slice is used.
    unsafe { core::slice::from_raw_parts_mut(b.addr as *mut u8, b.len as usize) }
}

static CALLED: Mutex<Vec<usize>> = Mutex::new(Vec::new());

fn callback(arg: usize) {
    CALLED.lock().unwrap().push(arg);
}

#[test]
fn the_seeds_calls_map_onto_the_queues_and_run_callbacks_from_poll() {
    let mut r5 = FakeR5::new();
    let mut dma = dma(&mut r5);
    let mut local = std::vec![9u8; 64];
    let mut remote = std::vec![0u8; 64];
    let l = UnimBuffer { node: ME, addr: local.as_mut_ptr() as u64, len: 64 };
    let r = UnimBuffer { node: 2, addr: remote.as_mut_ptr() as u64, len: 64 };
    let far = UnimBuffer { node: 3, ..r };
    // SAFETY: both buffers outlive the transfers, which end before they are read.
    unsafe {
        assert_eq!(dma.submit(&l, &r, 0, 60, 5, None, 0), 0, "past the buffer's end");
        assert_eq!(dma.try_submit(&l, &r, 0, 60, 5, None), Err(UnimError::OutsideBuffer));
        assert_eq!(dma.submit(&far, &r, 0, 0, 8, None, 0), 0, "neither end here");
        assert_eq!(dma.try_submit(&far, &r, 0, 0, 8, None), Err(UnimError::BothRemote));
        let refused = Err(UnimError::Lib(Error::Transfer(CqeStatus::BadRequest)));
        assert_eq!(dma.try_submit(&l, &r, 0, 0, 0, None), refused, "nothing to move");
        let w = dma.submit(&l, &r, 8, 16, 32, Some(callback), 41);
        assert_ne!(w, 0);
        assert_eq!(dma.status(w), UnimDmaStatus::Started);
        dma.rdma().with_queues(|q| q.wait(w, 0)).unwrap();
        assert_eq!(dma.status(w), UnimDmaStatus::Completed);
        assert!(CALLED.lock().unwrap().is_empty(), "callbacks run from poll only");
        assert_eq!(dma.poll(), 1);
        assert_eq!(dma.poll(), 0, "once");
        local.fill(0);
        let rd = dma.submit(&r, &l, 16, 0, 32, Some(callback), 42);
        assert_eq!(dma.wait(rd, 0), Ok(UnimDmaStatus::Completed));
        assert_eq!(dma.poll(), 1);
        assert_eq!(dma.status(rd), UnimDmaStatus::Completed);
    }
    assert_eq!(*CALLED.lock().unwrap(), [41, 42]);
    assert_eq!(&remote[16..48], &[9; 32][..]);
    assert_eq!(&local[..32], &[9; 32][..]);
    assert_eq!(dma.status(12345), UnimDmaStatus::Unknown);
    assert_eq!(dma.in_progress(), 0);
}

#[test]
fn buffers_are_regions_with_ids_that_are_never_reused() {
    let mut r5 = FakeR5::new();
    let mut d = dma(&mut r5);
    let a = d.alloc_buf_l(5000).unwrap();
    assert_eq!(d.buffer(a).unwrap().len, 5000);
    assert_eq!(d.buffer_at(a.slot()), Some(a));
    assert!(bytes(&d, a).iter().all(|&b| b == 0), "zeroed");
    assert_eq!(d.buf_memory(a), Ok(d.buffer(a).unwrap().addr));
    assert_eq!(d.regions().live().len(), 1);
    d.free_buf(a).unwrap();
    assert!(d.regions().live().is_empty(), "freeing unmaps the region");
    assert_eq!(d.buffer(a), Err(UnimError::NoSuchBuffer));
    assert_eq!(d.free_buf(a), Err(UnimError::NoSuchBuffer), "twice");
    let b = d.alloc_buf_r(16, ME).unwrap();
    assert_eq!(b.slot(), a.slot(), "the slot is reused");
    assert_ne!(b, a, "the id is not");
    assert_eq!(d.buffer(a), Err(UnimError::NoSuchBuffer), "a stale id does not name the new buffer");
    assert_eq!(BufferId::from_raw(0), None);
    assert_eq!(d.alloc_buf_l(0), Err(UnimError::EmptyBuffer));
    assert_eq!(d.alloc_buf_r(16, 2), Err(UnimError::RemoteAllocation));
    let peer = d.attach_buf(2, 0x10_0000_0000, 4096).unwrap();
    assert_eq!(d.buffer(peer), Ok(UnimBuffer { node: 2, addr: 0x10_0000_0000, len: 4096 }));
    assert_eq!(d.buf_memory(peer), Err(UnimError::NotLocal));
    assert_eq!(d.attach_buf(2, 0x10_0000_0000, 0), Err(UnimError::EmptyBuffer));
    d.free_buf(peer).unwrap();
    assert_eq!(d.regions().live().len(), 1, "an attached buffer's memory is not ours to unmap");
}

#[test]
fn the_table_holds_sixty_four_and_a_refused_allocation_maps_nothing() {
    let mut r5 = FakeR5::new();
    let mut d = dma(&mut r5);
    let ids: Vec<BufferId> = (0..MAX_BUFFERS).map(|_| d.alloc_buf_l(1).unwrap()).collect();
    assert_eq!(d.alloc_buf_l(1), Err(UnimError::TooManyBuffers));
    assert_eq!(d.attach_buf(ME, 0x1000, 1), Err(UnimError::TooManyBuffers));
    assert_eq!(d.regions().live().len(), MAX_BUFFERS, "no region for the refused one");
    d.free_buf(ids[7]).unwrap();
    assert!(d.alloc_buf_l(1).is_ok());
    d.cleanup();
    assert!(d.regions().live().is_empty());
    let mut full = dma(&mut r5);
    let mut regions = FakeRegions::default();
    regions.full = true;
    full.buffers = Buffers::new(regions);
    assert_eq!(full.alloc_buf_l(1), Err(UnimError::Lib(Error::Syscall(SysError::BadArgument))));
}

#[test]
fn transfers_between_buffer_objects_and_plain_memory() {
    let mut r5 = FakeR5::new();
    let mut d = dma(&mut r5);
    let local = d.alloc_buf_l(256).unwrap();
    bytes(&d, local).iter_mut().enumerate().for_each(|(i, b)| *b = i as u8);
    let mut peer_memory = std::vec![0u8; 256];
    let peer = d.attach_buf(2, peer_memory.as_mut_ptr() as u64, 256).unwrap();
    let mut plain = std::vec![0u8; 64];
    // SAFETY: every memory outlives its transfer, each waited for before it is read.
    unsafe {
        let w = d.submit_buffers(local, peer, 10, 100, 50, None).unwrap();
        assert_eq!(d.wait(w, 0), Ok(UnimDmaStatus::Completed));
        let back = d.submit_to_mem(peer, plain.as_mut_ptr() as u64, 100, 4, 50, None).unwrap();
        assert_eq!(d.wait(back, 0), Ok(UnimDmaStatus::Completed));
        let source = [0xeeu8; 8];
        let from = d.submit_from_mem(source.as_ptr() as u64, peer, 0, 200, 8, None).unwrap();
        assert_eq!(d.wait(from, 0), Ok(UnimDmaStatus::Completed));
        assert_eq!(d.submit_buffers(local, peer, 250, 0, 7, None), Err(UnimError::OutsideBuffer));
        assert_eq!(d.submit_buffers(peer, peer, 0, 0, 8, None), Err(UnimError::BothRemote));
        assert_eq!(d.submit_to_mem(local, 0x1000, u64::MAX, 0, 2, None), Err(UnimError::OutsideBuffer));
        let gone = BufferId::from_raw(12345).unwrap();
        assert_eq!(d.submit_buffers(gone, peer, 0, 0, 8, None), Err(UnimError::NoSuchBuffer));
    }
    assert_eq!(&peer_memory[100..150], &(10..60).collect::<Vec<u8>>()[..]);
    assert_eq!(&plain[4..54], &peer_memory[100..150]);
    assert_eq!(&peer_memory[200..208], &[0xee; 8]);
}

#[test]
fn a_callback_not_run_yet_keeps_its_slot_until_it_is_taken() {
    static RUN: Mutex<usize> = Mutex::new(0);
    fn count(_: usize) {
        *RUN.lock().unwrap() += 1;
    }
    let mut r5 = FakeR5::new();
    let mut d = dma(&mut r5);
    let src = [1u8; 8];
    let mut dst = [0u8; 8];
    let (s, t) = (src.as_ptr() as u64, dst.as_mut_ptr() as u64);
    let from = UnimBuffer { node: ME, addr: s, len: 8 };
    let to = UnimBuffer { node: 2, addr: t, len: 8 };
    // SAFETY: both arrays outlive every transfer, which all end before the test does.
    unsafe {
        let ids: Vec<u64> =
            (0..64).map(|_| d.try_submit(&from, &to, 0, 0, 8, Some(Callback::new(count, 0))).unwrap()).collect();
        assert_eq!(d.wait(ids[63], 0), Ok(UnimDmaStatus::Completed));
        assert_eq!(d.in_progress(), 0, "all ended");
        let more = d.try_submit(&from, &to, 0, 0, 8, None);
        assert_eq!(more, Err(UnimError::Lib(Error::Busy)), "64 callbacks wait for a poll");
        assert_eq!(d.poll(), 64);
        assert!(d.try_submit(&from, &to, 0, 0, 8, None).is_ok());
    }
    assert_eq!(*RUN.lock().unwrap(), 64);
    assert_eq!(dst, src);
}

#[test]
fn cleanup_waits_for_the_engine_then_forgets_everything() {
    let mut r5 = FakeR5::new();
    let mut d = dma(&mut r5);
    let buffer = d.alloc_buf_l(32).unwrap();
    let mut remote = [0u8; 32];
    bytes(&d, buffer).fill(5);
    let peer = d.attach_buf(1, remote.as_mut_ptr() as u64, 32).unwrap();
    // SAFETY: the region lives until `cleanup`, which waits for the transfer first.
    let id = unsafe { d.submit_buffers(buffer, peer, 0, 0, 32, Some(Callback::new(callback, 7))) }.unwrap();
    d.cleanup();
    assert_eq!(remote, [5; 32], "the transfer ended before its region was unmapped");
    assert!(d.regions().live().is_empty());
    assert_eq!(d.buffer(peer), Err(UnimError::NoSuchBuffer));
    assert_eq!(d.status(id), UnimDmaStatus::Unknown);
    assert_eq!(d.poll(), 0, "its callback went with it");
    assert_eq!(d.rdma().with_queues(|q| q.in_progress()), 0, "every queue slot is free");
}

#[test]
fn a_c_callback_gets_its_pointer_back() {
    unsafe extern "C" fn bump(arg: *mut c_void) {
        // SAFETY: the test passes a live `u32`.
        unsafe { *arg.cast::<u32>() += 1 };
    }
    let mut hits = 0u32;
    // SAFETY: `hits` outlives the call below, the only one.
    let cb = unsafe { Callback::c(bump, (&raw mut hits).cast()) };
    cb.run();
    assert_eq!(hits, 1);
}

#[test]
fn every_refusal_has_its_own_exit_status_above_the_librarys() {
    let all = [
        UnimError::NotInitialised,
        UnimError::NotThisNode(3),
        UnimError::NoSuchBuffer,
        UnimError::EmptyBuffer,
        UnimError::TooManyBuffers,
        UnimError::RemoteAllocation,
        UnimError::NotLocal,
        UnimError::OutsideBuffer,
        UnimError::BothRemote,
    ];
    let mut statuses: Vec<u64> = all.iter().map(|e| e.exit_status()).collect();
    let top = Error::Transfer(CqeStatus::ALL[CqeStatus::ALL.len() - 1]).exit_status();
    assert!(statuses.iter().all(|&s| s > top && s < 0x1000), "{statuses:x?}");
    statuses.sort_unstable();
    statuses.dedup();
    assert_eq!(statuses.len(), all.len());
    assert_eq!(UnimError::Lib(Error::Timeout).exit_status(), Error::Timeout.exit_status());
}

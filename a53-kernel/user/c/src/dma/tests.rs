//! The C layer of the RDMA calls against the library's fake R5 and fake regions.

use core::ffi::c_void;
use std::vec::Vec;

use unimem_user::fake::{FakeR5, FakeRegions};
use unimem_user::rdma::{CqeStatus, Rdma};
use unimem_user::unim::{UnimDma, UnimDmaStatus, UnimError};
use unimem_user::{Error, SysError};

use super::*;
use crate::status::{code, unimem_last_error};

const ME: u16 = 1;

fn dma(r5: &mut FakeR5) -> UnimDma<&mut FakeR5, FakeRegions> {
    let set = r5.set;
    // SAFETY: the fake's queue set, used by this `Rdma` only.
    UnimDma::new(unsafe { Rdma::new(set, r5) }, ME, FakeRegions::default())
}

/// The bytes of a local buffer object's memory.
fn bytes<D: Doorbell, M: Regions>(d: &UnimDma<D, M>, buf: *mut UnimDmaBuffer) -> &'static mut [u8] {
    let memory = buf_get_memory(d, buf).unwrap();
    let len = d.buffer(buffer(d, buf).unwrap()).unwrap().len as usize;
    // SAFETY: a fake region (host memory) that outlives the test's use of the slice, which
    // nothing else touches meanwhile.
    unsafe { core::slice::from_raw_parts_mut(memory.cast::<u8>(), len) }
}

#[test]
fn buffer_objects_and_ids_turn_into_each_other_and_bad_ones_are_refused() {
    let mut r5 = FakeR5::new();
    let mut d = dma(&mut r5);
    let a = alloc_buf_l(&mut d, 100).unwrap();
    let b = alloc_buf_r(&mut d, 100, node_object(ME)).unwrap();
    assert_ne!(a, b);
    let id = get_buf_id(&d, a).unwrap();
    assert_ne!(id, 0);
    assert_eq!(get_buf(&d, id), Ok(a));
    assert_eq!(get_buf(&d, 0), Err(CError::Unim(UnimError::NoSuchBuffer)), "0 is never an id");
    assert_eq!(get_buf(&d, id + 64), Err(CError::Unim(UnimError::NoSuchBuffer)), "same slot, not its id");
    assert_eq!(get_buf_id(&d, core::ptr::null_mut()), Err(CError::Null));
    let mut not_ours = 0u8;
    let stray: *mut UnimDmaBuffer = (&raw mut not_ours).cast();
    assert_eq!(get_buf_id(&d, stray), Err(CError::Unim(UnimError::NoSuchBuffer)), "not one of OBJECTS");
    let past_the_end = OBJECTS.as_ptr().wrapping_add(MAX_BUFFERS).cast_mut().cast();
    assert_eq!(free_buf(&mut d, past_the_end), Err(CError::Unim(UnimError::NoSuchBuffer)));
    free_buf(&mut d, a).unwrap();
    assert_eq!(free_buf(&mut d, a), Err(CError::Unim(UnimError::NoSuchBuffer)), "freed");
    assert_eq!(buf_get_memory(&d, a), Err(CError::Unim(UnimError::NoSuchBuffer)));
    assert_eq!(get_buf(&d, id), Err(CError::Unim(UnimError::NoSuchBuffer)));
    assert_eq!(CError::Unim(UnimError::NoSuchBuffer).status(), UnimError::NoSuchBuffer.exit_status());
}

#[test]
fn node_objects_and_remote_buffers() {
    let mut r5 = FakeR5::new();
    let mut d = dma(&mut r5);
    assert_ne!(node_object(0), core::ptr::null(), "node 0 is an object");
    assert_eq!(node_of(node_object(0)), Ok(0));
    assert_eq!(node_of(node_object(u16::MAX)), Ok(u16::MAX));
    assert_eq!(node_of(core::ptr::null()), Err(CError::Null));
    assert_eq!(node_of(core::ptr::without_provenance(0x1_0001)), Err(CError::BadArgument));
    let remote = alloc_buf_r(&mut d, 64, node_object(2));
    assert_eq!(remote, Err(CError::Unim(UnimError::RemoteAllocation)));
    assert_eq!(remote.unwrap_err().status(), UnimError::RemoteAllocation.exit_status());
    assert_eq!(alloc_buf_r(&mut d, 64, core::ptr::null()), Err(CError::Null));
    let peer = attach_buf_r(&mut d, 0x10_0000_0000, 4096, node_object(2)).unwrap();
    assert_eq!(buf_get_memory(&d, peer), Err(CError::Unim(UnimError::NotLocal)));
    assert_eq!(alloc_buf_l(&mut d, 0), Err(CError::Unim(UnimError::EmptyBuffer)));
}

static CALLED: std::sync::Mutex<Vec<usize>> = std::sync::Mutex::new(Vec::new());

unsafe extern "C" fn note(arg: *mut c_void) {
    CALLED.lock().unwrap().push(arg.addr());
}

#[test]
fn transfers_run_between_buffer_objects_and_plain_memory_and_call_back() {
    let mut r5 = FakeR5::new();
    let mut d = dma(&mut r5);
    let src = alloc_buf_l(&mut d, 64).unwrap();
    bytes(&d, src).iter_mut().enumerate().for_each(|(i, b)| *b = i as u8);
    let mut peer_memory = [0u8; 64];
    let peer = attach_buf_r(&mut d, peer_memory.as_mut_ptr() as u64, 64, node_object(3)).unwrap();
    let mut plain = [0u8; 16];
    let arg: *mut c_void = core::ptr::without_provenance_mut(77);
    // SAFETY: every memory outlives its transfer, each waited for before it is read; `note`
    // may be called with `arg`.
    unsafe {
        let id = submit(&mut d, src, peer, 8, 0, 32, Some(note), arg).unwrap();
        assert_eq!(waited(d.wait(id, 0).map_err(CError::from)), DmaStatus::Completed);
        assert_eq!(d.poll(), 1);
        let back = submit_to_mem(&mut d, peer, plain.as_mut_ptr().cast(), 4, 0, 16, None, arg).unwrap();
        assert_eq!(d.wait(back, 0), Ok(UnimDmaStatus::Completed));
        let from = [0xaau8; 4];
        let id = submit_from_mem(&mut d, from.as_ptr().cast(), peer, 0, 60, 4, None, arg).unwrap();
        assert_eq!(d.wait(id, 0), Ok(UnimDmaStatus::Completed));
        let null = submit_from_mem(&mut d, core::ptr::null(), peer, 0, 0, 4, None, arg);
        assert_eq!(null, Err(CError::Null));
        let null = submit_to_mem(&mut d, peer, core::ptr::null_mut(), 0, 0, 4, None, arg);
        assert_eq!(null, Err(CError::Null));
        let both_remote = submit(&mut d, peer, peer, 0, 0, 8, None, arg);
        assert_eq!(both_remote, Err(CError::Unim(UnimError::BothRemote)));
        let outside = submit(&mut d, src, peer, 60, 0, 8, None, arg);
        assert_eq!(outside, Err(CError::Unim(UnimError::OutsideBuffer)));
        let empty = submit(&mut d, src, peer, 0, 0, 0, None, arg);
        assert_eq!(empty, Err(CError::Lib(Error::Transfer(CqeStatus::BadRequest))), "nothing to move");
        assert_eq!(submit(&mut d, core::ptr::null_mut(), peer, 0, 0, 8, None, arg), Err(CError::Null));
    }
    assert_eq!(&peer_memory[..32], &(8..40).collect::<Vec<u8>>()[..]);
    assert_eq!(&plain[..], &peer_memory[4..20]);
    assert_eq!(&peer_memory[60..], &[0xaa; 4]);
    assert_eq!(*CALLED.lock().unwrap(), [77], "the callback got its argument back, once");
}

/// A wait that ends before the transfer, at its timeout or by a signal (`unimem_mailbox.h`:
/// a signal ends an RDMA wait), returns the transfer as it stands: started, not unknown.
#[test]
fn a_wait_that_times_out_or_is_interrupted_leaves_the_transfer_started() {
    assert_eq!(waited(Err(CError::Lib(Error::Timeout))), DmaStatus::Started);
    assert_eq!(waited(Err(CError::Lib(Error::Syscall(SysError::Interrupted)))), DmaStatus::Started);
    assert_eq!(waited(Err(CError::Unim(UnimError::NotInitialised))), DmaStatus::Unknown);
    assert_eq!(waited(Ok(UnimDmaStatus::Failed)), DmaStatus::Failed);
    assert_eq!(DmaStatus::from(UnimDmaStatus::Unknown), DmaStatus::Unknown);
}

/// The exports on the host: `unim_dma_init` fails (no kernel), so every call is refused as
/// before `unim_dma_init`, with the reason in the last error.
#[test]
fn the_exports_before_init_refuse_with_a_reason() {
    let no_kernel = Error::Syscall(SysError::NoSuchCall).exit_status();
    assert_eq!(unim_dma_init(0), -1);
    assert_eq!(unimem_last_error(), no_kernel);
    let not_initialised = UnimError::NotInitialised.exit_status();
    assert_eq!(unim_alloc_buf_l(64), core::ptr::null_mut());
    assert_eq!(unimem_last_error(), not_initialised);
    assert_eq!(unim_get_buf_id(core::ptr::null_mut()), 0);
    assert_eq!(unimem_last_error(), not_initialised, "the library state is looked at first");
    assert_eq!(unim_dma_status(5), DmaStatus::Unknown);
    assert_eq!(unim_dma_wait(5, 1), DmaStatus::Unknown);
    assert_eq!(unim_dma_poll(), 0);
    assert_eq!(unim_dma_get_node(0), core::ptr::null());
    assert_eq!(unimem_last_error(), no_kernel);
    unim_free_buf(core::ptr::null_mut());
    assert_eq!(unimem_last_error(), not_initialised);
    assert_ne!(code::NULL, not_initialised);
}

//! The C layer of the GSAS calls against the library's fake service.

use core::ffi::{c_char, c_void};

use proto::gsas::{ErrorCode, GlobalAddress, Sharing};
use unimem_user::fake::{FakeNet, WINDOW};
use unimem_user::{Error, Gsas, SysError};

use super::*;
use crate::status::{code, unimem_last_error};

fn client(nodes: u16) -> Gsas<FakeNet> {
    Gsas::new(FakeNet::new(nodes), FakeNet::ME, 0, nodes, WINDOW)
}

/// A C pointer carrying `page + offset`.
fn at<T>(page: *mut c_void, offset: usize) -> *mut T {
    page.wrapping_byte_add(offset).cast()
}

#[test]
fn pointers_carry_the_address_and_the_calls_reach_its_node() {
    let mut g = client(3);
    let page = alloc(&mut g, 1, 2, Sharing::Shared.bits()).unwrap();
    assert_eq!(GlobalAddress::from_raw(page.addr() as u64).node(), 2);
    write64(&mut g, at(page, 8), 0x1122_3344_5566_7788).unwrap();
    assert_eq!(read64(&mut g, at(page, 8)), Ok(0x1122_3344_5566_7788));
    assert_eq!(read32(&mut g, at(page, 12)), Ok(0x1122_3344));
    write8(&mut g, at(page, 1), 0xab_u8 as c_char).unwrap();
    assert_eq!(read8(&mut g, at(page, 1)), Ok(0xab_u8 as c_char));
    write32(&mut g, at(page, 4), 0xdead_beef).unwrap();
    assert_eq!(read64(&mut g, at(page, 0)), Ok(0xdead_beef_0000_ab00));
    let mut val = [0x0102_0304_0506_0708u64, 0x1112_1314_1516_1718];
    // SAFETY: `val` is two u64.
    unsafe { write128(&mut g, at(page, 16), val.as_mut_ptr()) }.unwrap();
    assert_eq!(read64(&mut g, at(page, 16)), Ok(val[0]), "val[0] at addr");
    assert_eq!(read64(&mut g, at(page, 24)), Ok(val[1]), "val[1] at addr + 8");
    assert_eq!(fad64(&mut g, at(page, 32), -5), Ok(0));
    assert_eq!(fad64(&mut g, at(page, 32), 2), Ok(-5), "signed, as the seed's int64_t");
    assert_eq!(cas64(&mut g, at(page, 32), 1, 9), Ok(0));
    assert_eq!(cas64(&mut g, at(page, 32), (-3i64) as u64, 9), Ok(1));
    assert_eq!(swap64(&mut g, at(page, 32), 4), Ok(9));
    let mut buffer = [0 as c_char; 4096];
    // SAFETY: `buffer` is 4096 bytes.
    assert_eq!(unsafe { read4k(&mut g, page, buffer.as_mut_ptr()) }, Ok(4096));
    assert_eq!(buffer[16] as u8, 0x08, "the page, byte for byte");
    assert_eq!(free(&mut g, page), Ok(1));
    assert_eq!(read64(&mut g, page.cast()), Err(CError::Lib(Error::Service(ErrorCode::Unmapped))));
}

#[test]
fn the_alignment_rule_refuses_before_sending() {
    let mut g = client(2);
    let page = alloc(&mut g, 1, 1, Sharing::Shared.bits()).unwrap();
    let sent = g.link().sent.len();
    let unaligned = Err(CError::Lib(Error::Local(ErrorCode::Unaligned)));
    assert_eq!(read64(&mut g, at(page, 4)), unaligned, "READ64: 8");
    assert_eq!(read32(&mut g, at(page, 2)), unaligned.map(|_: u64| 0), "READ32: 4");
    assert_eq!(write32(&mut g, at(page, 1), 1), unaligned.map(drop));
    assert_eq!(cas64(&mut g, at(page, 12), 0, 1), unaligned);
    assert_eq!(fad64(&mut g, at(page, 12), 1), unaligned.map(|_| 0));
    assert_eq!(swap64(&mut g, at(page, 12), 1), unaligned);
    let mut val = [0u64; 2];
    // SAFETY: `val` is two u64.
    let crossing = unsafe { write128(&mut g, at(page, 0xff8), val.as_mut_ptr()) };
    assert_eq!(crossing, unaligned.map(drop), "WRITE128 may not cross the page end");
    let mut buffer = [0 as c_char; 4096];
    // SAFETY: as above.
    assert_eq!(unsafe { read4k(&mut g, at(page, 8), buffer.as_mut_ptr()) }, unaligned, "READ4K: 4096");
    assert_eq!(free(&mut g, at(page, 8)), unaligned, "FREE: 4096");
    assert_eq!(read8(&mut g, at(page, 3)), Ok(0), "READ8: any byte");
    assert_eq!(g.link().sent.len(), sent + 1, "only the aligned READ8 went out");
    assert_eq!(CError::Lib(Error::Local(ErrorCode::Unaligned)).status(), 0x182);
}

#[test]
fn null_pointers_and_bad_arguments_are_refused() {
    let mut g = client(2);
    let page = alloc(&mut g, 1, 1, Sharing::Shared.bits()).unwrap();
    // SAFETY: every pointer given is NULL or live.
    unsafe {
        assert_eq!(write128(&mut g, page.cast(), core::ptr::null_mut()), Err(CError::Null));
        assert_eq!(read4k(&mut g, page, core::ptr::null_mut()), Err(CError::Null));
        assert_eq!(remote_fork(&mut g, core::ptr::null(), 1, 1), Err(CError::Null));
    }
    let bad = Err(CError::Lib(Error::Local(ErrorCode::BadArgument)));
    assert_eq!(alloc(&mut g, 1, 1, 3), bad.map(|_: ()| core::ptr::null_mut()), "sharing mode 3");
    assert_eq!(alloc(&mut g, 0, 1, 0), bad.map(|_: ()| core::ptr::null_mut()), "no pages");
    let far = alloc(&mut g, 1, 0x1_0000, 0);
    assert_eq!(far, Err(CError::Lib(Error::NoSuchNode(0x1_0000))), "a node past 16 bits is not cut to 0");
    assert_eq!(CError::Null.status(), code::NULL);
}

#[test]
fn remote_fork_takes_a_c_string_and_refuses_what_cannot_be_a_name() {
    let mut g = client(2);
    // SAFETY: every string is NUL-terminated.
    unsafe {
        let handle = remote_fork(&mut g, c"spawn-tree".as_ptr(), 0x33, 1);
        assert_eq!(handle, Ok(1));
        let long = [b'x' as c_char; 400];
        let mut long = long.to_vec();
        long.push(0);
        let bad = Err(CError::Lib(Error::Local(ErrorCode::BadArgument)));
        assert_eq!(remote_fork(&mut g, long.as_ptr(), 1, 1), bad, "longer than an image name can be");
        let not_utf8 = [0xff_u8 as c_char, 0];
        assert_eq!(remote_fork(&mut g, not_utf8.as_ptr(), 1, 1), bad);
        assert_eq!(remote_fork(&mut g, c"x".as_ptr(), 1, 0x1_0001), Err(CError::Lib(Error::NoSuchNode(0x1_0001))));
    }
    assert_eq!(g.link().services[1].spawned, std::vec![("spawn-tree".into(), 0x33)]);
}

/// The exports on the host, where the client cannot open (no kernel: `NODE_INFO` answers
/// `NoSuchCall`): the calls that report failure do so, and a NULL result pointer is refused
/// before anything is tried. (The calls that exit are not called here: their exit is a panic
/// on the host, which cannot cross `extern "C"`.)
#[test]
fn the_exports_report_failure_in_the_last_error() {
    let no_kernel = Error::Syscall(SysError::NoSuchCall).exit_status();
    assert_eq!(allocSharedPage(1, 0), core::ptr::null_mut());
    assert_eq!(unimem_last_error(), no_kernel);
    assert_eq!(freeSharedPage(core::ptr::without_provenance_mut(0x1000)), 0);
    assert_eq!(unimem_last_error(), no_kernel);
    let mut value = 5u64;
    // SAFETY: `value` is live; the others are NULL.
    unsafe {
        assert_eq!(READ64_e(core::ptr::without_provenance_mut(0x1000), core::ptr::null_mut()), code::NULL);
        assert_eq!(READ64_e(core::ptr::without_provenance_mut(0x1000), &raw mut value), no_kernel);
        assert_eq!(value, 5, "untouched on failure");
        assert_eq!(WRITE128_e(core::ptr::without_provenance_mut(0x1000), core::ptr::null_mut()), no_kernel);
        assert_eq!(remoteFork(core::ptr::null_mut(), 1, 0), 0);
    }
    assert_eq!(unimem_last_error(), no_kernel);
    assert_eq!(readThreadArgument(), SysError::NoSuchCall as i64 as u64, "the raw register, as on the target");
}

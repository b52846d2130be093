//! `forge-pid`: a sender cannot choose its PID.
//!
//! Argument: the GSAS address of another domain's Private page (from `private-owner`). Sends
//! write64 requests built by hand whose payload0[47:0] holds a forged PID, once the PID of
//! interface 1 of domain 1 on the page's node and once a kernel-domain PID (domain 0) there.
//! The packetizer replaces those bits with our real PID, so each must get `PermissionDenied`.
//! Exit status: 0; 1 = a forged write was accepted; 2 = it failed with another code;
//! otherwise an error status (`README.md`).
#![no_std]
#![no_main]

use unimem_user::{
    Error, ErrorCode, GlobalAddress, Opcode, Pid, RawRequest, ensure, log, request, thread_argument, with_client,
};

unimem_user::entry!(main);

fn main() -> Result<u64, Error> {
    let page = GlobalAddress::from_raw(thread_argument()?);
    let node = page.node();
    let forged = [Pid::new(node, 1, 0, 1), Pid::new(node, 0, 0, 1)];
    for pid in forged.into_iter().flatten() {
        let raw = forged_write(page, pid);
        let answer = with_client(|g| g.call_raw(node, &raw))?;
        ensure!(answer.error.is_some(), 1, "write64 as forged PID {:#x} was accepted", pid.raw());
        let denied = answer.error == Some(ErrorCode::PermissionDenied);
        ensure!(denied, 2, "write64 as forged PID {:#x}: {:?}", pid.raw(), answer.error);
    }
    log!("write64 to {:#x} with forged PIDs: PermissionDenied", page.raw());
    Ok(0)
}

/// A write64 of 0x1badd00d to `page` whose sender field claims to be `pid`.
fn forged_write(page: GlobalAddress, pid: Pid) -> RawRequest {
    RawRequest { sender: pid, ..request(Opcode::Write64, page, 0x1bad_d00d, 0) }
}

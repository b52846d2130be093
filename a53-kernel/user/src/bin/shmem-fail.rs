//! How an OpenSHMEM job ends when one PE fails (run on node 0, `--nodes 2` or more): the last
//! PE frees a pointer `shmem_malloc` did not return and ends with that error's status
//! (`ForeignFree`, 0x364); every other PE, in a barrier it can never pass, must end it with
//! `PeGone` within 30 s, not hang. Exit status: the last PE 0x364; the others 0 when their
//! barrier ended with `PeGone` in time (PE 0 logs the verdict), 1 when the barrier passed,
//! 2 when it took too long, or the unexpected error's status.
#![no_std]
#![no_main]

use unimem_user::shmem::{ShmemError, with_pe};
use unimem_user::{ensure, log, sys};

unimem_user::entry!(main);

/// How long the others may take to find the failed PE gone.
const WITHIN_US: u64 = 30_000_000;

fn main() -> Result<u64, ShmemError> {
    let world = unimem_user::shmem::init()?;
    let (me, n) = (world.my_pe(), world.n_pes());
    let last = n - 1;
    ensure!(n >= 2, 3, "shmem-fail needs 2 nodes or more");
    let buf = with_pe(|p| p.malloc(64, 16))?;
    world.barrier_all()?;
    if me == last {
        let stack = [0u8; 8];
        let foreign = stack.as_ptr() as u64;
        with_pe(|p| p.free(foreign))?;
        log!("free of a stack address {foreign:#x} was accepted");
        return Ok(4);
    }
    let _ = buf;
    let start = sys::time_us()?;
    let result = world.barrier_all();
    let took = sys::time_us()? - start;
    ensure!(result.is_err(), 1, "the barrier passed without PE {last}");
    ensure!(took < WITHIN_US, 2, "PE {me} took {took} us to find the failure");
    match result {
        Err(ShmemError::PeGone(pe)) => {
            if me == 0 {
                log!("shmem-fail: ok: PE {pe} found gone after {} ms", took / 1000);
            }
            Ok(0)
        }
        Err(e) => Err(e),
        Ok(()) => Ok(1),
    }
}

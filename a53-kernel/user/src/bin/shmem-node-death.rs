//! How an OpenSHMEM job ends when a node dies (the kernel's test
//! `cluster::shmem_a_node_dying_ends_the_job_with_pe_gone`, on 2 nodes: the runner kills the
//! last node when its PE says it waits): the last PE passes one barrier, then waits to be
//! killed; every other PE, in the next barrier, must end it with `PeGone` naming the last PE
//! within 30 s (the dead node is unreachable at once), not hang. Exit status of the others: 0
//! when that held (PE 0 logs the verdict), 1 when the barrier passed, 2 when it took too long,
//! or the unexpected error's status; the last PE never ends by itself.
#![no_std]
#![no_main]

use unimem_user::shmem::ShmemError;
use unimem_user::{ensure, log, sys};

unimem_user::entry!(main);

/// How long the others may take to find the dead node's PE gone.
const WITHIN_US: u64 = 30_000_000;

fn main() -> Result<u64, ShmemError> {
    let world = unimem_user::shmem::init()?;
    let (me, n) = (world.my_pe(), world.n_pes());
    let last = n - 1;
    ensure!(n >= 2, 3, "shmem-node-death needs 2 nodes or more");
    world.barrier_all()?;
    if me == last {
        log!("shmem-node-death: PE {last} waits to be killed");
        loop {
            sys::sleep_us(1_000_000)?;
        }
    }
    let start = sys::time_us()?;
    let result = world.barrier_all();
    let took = sys::time_us()? - start;
    ensure!(result.is_err(), 1, "the barrier passed without PE {last}");
    ensure!(took < WITHIN_US, 2, "PE {me} took {took} us to find the dead node");
    match result {
        Err(ShmemError::PeGone(pe)) if pe == last => {
            if me == 0 {
                log!("shmem-node-death: ok: PE {pe} found gone after {} ms", took / 1000);
            }
            Ok(0)
        }
        Err(e) => Err(e),
        Ok(()) => Ok(1),
    }
}

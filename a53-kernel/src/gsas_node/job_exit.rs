//! `JOB_EXIT` between the kernels (`gsas::node::job_exit`): the caller's kernel notifies every
//! node, itself included; each ends the job's processes on its node through the normal kill
//! path (`process::lifecycle::end_job`), so their resources are released as at any exit.

use super::{NotifyError, handlers, notify};
use crate::cluster;
use crate::gsas::node::job_exit::{JOB_EXIT, decode, encode};
use crate::process::lifecycle;
use hal::pldma::Pd;
use proto::gsas::{Notification, Pid};

/// Takes kernel opcode 0x7 (at boot, [`super::init`]).
pub(super) fn register() {
    if handlers::register(JOB_EXIT, on_job_exit).is_err() {
        defmt::error!("the kernel could not take the job-exit opcode: JOB_EXIT reaches no process here");
    }
}

fn on_job_exit(notification: Notification, from: Pid) {
    match decode(notification, from) {
        Some((pd, status)) => {
            let ended = lifecycle::end_job(pd, status);
            if ended > 0 {
                defmt::println!(
                    "job exit from node {=u16}: PD {=u16}, status {=u8}: {=usize} process(es) ended",
                    from.node(),
                    pd.raw(),
                    status,
                    ended
                );
            }
        }
        None => defmt::warn!("a malformed job exit from node {=u16} was ignored", from.node()),
    }
}

/// Ends job `pd` with `status` on every node of the cluster, this one included (each node's
/// kernel ends its members). Returns how many nodes it could not tell (gone, or unreachable).
///
/// Node 0 is told last: an OpenSHMEM job's PE 0 runs there, and its end ends the run (the
/// other nodes only serve), so every other node holds the exit in its MIF 0 before the run can
/// end, and serves it before it stops (`serve_what_arrived`).
pub fn send(pd: Pd, status: u8) -> usize {
    let Some(notification) = encode(pd, status) else { return 0 };
    let (_, nodes) = cluster::node_and_count();
    (1..nodes)
        .chain([0])
        .filter(|&node| {
            let sent: Result<(), NotifyError> = notify(node, notification);
            if sent.is_err() {
                defmt::warn!("job exit of PD {=u16}: node {=u16} was not told", pd.raw(), node);
            }
            sent.is_err()
        })
        .count()
}

//! The job-exit notification (`JOB_EXIT`, `docs/hw/gsas-packets.md`, "Notifications"): kernel
//! opcode 0x7, sent by the caller's kernel to every node's kernel, itself included; each ends
//! the processes of the job on its node with the status. Its payload is
//! `proto::gsas::Message::JobExit`'s. Only kernels send it (kernel opcodes are refused from
//! other domains).

use hal::pldma::Pd;
use proto::gsas::{MailboxOpcode, Message, Notification, Pid};
use proto::rdma::domain::NO_RDMA;

/// Kernel opcode 0x7.
pub const JOB_EXIT: MailboxOpcode = MailboxOpcode::JOB_EXIT;

/// The notification that ends job `pd` with `status`; none for PD 15 (`NO_RDMA`, shared by
/// unrelated jobs: never ended as one).
pub fn encode(pd: Pd, status: u8) -> Option<Notification> {
    if pd == NO_RDMA {
        return None;
    }
    Message::JobExit { pd: u8::try_from(pd.raw()).ok()?, status }.encode().ok()
}

/// The job and status a job-exit notification from `from` asks to end: only from a kernel
/// (the mailbox refuses kernel opcodes from other domains already; checked again), only a
/// well-formed payload (`Message::decode`), never PD 15.
pub fn decode(notification: Notification, from: Pid) -> Option<(Pd, u8)> {
    if !from.owner().is_kernel() {
        return None;
    }
    match Message::decode(notification) {
        Ok(Message::JobExit { pd, status }) => Some((Pd::new(u16::from(pd)).filter(|&pd| pd != NO_RDMA)?, status)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gsas::mailbox::{DeliverError, KernelHandler, MailboxService, Receiver};

    fn kernel(node: u16) -> Pid {
        Pid::atomic_service(node)
    }

    #[test]
    fn a_job_exit_carries_its_pd_and_status_and_only_a_kernels_is_taken() {
        let pd = Pd::new(6).unwrap();
        for status in [0, 1, 42, 255] {
            let n = encode(pd, status).unwrap();
            assert_eq!(n.opcode(), JOB_EXIT);
            assert_eq!(decode(n, kernel(3)), Some((pd, status)));
        }
        assert_eq!(encode(NO_RDMA, 1), None, "PD 15 is no job");
        let n = encode(pd, 9).unwrap();
        assert_eq!(decode(n, Pid::new(3, 0x16, 0, 4).unwrap()), None, "from a process");
        let bad = Notification::new(JOB_EXIT, n.payload() | 1 << 12).unwrap();
        assert_eq!(decode(bad, kernel(3)), None, "bits beyond the status");
        let fifteen = Notification::new(JOB_EXIT, 0xf | 9 << 4).unwrap();
        assert_eq!(decode(fifteen, kernel(3)), None);
        let other = Notification::new(MailboxOpcode::PING, n.payload()).unwrap();
        assert_eq!(decode(other, kernel(3)), None);
    }

    #[test]
    fn a_process_cannot_send_a_job_exit() {
        let mut mailbox = MailboxService::new(4, 4).unwrap();
        mailbox.register(JOB_EXIT, Receiver::Kernel(KernelHandler(1))).unwrap();
        let n = encode(Pd::new(2).unwrap(), 0).unwrap();
        let process = Pid::new(0, 0x12, 0, 5).unwrap();
        assert_eq!(mailbox.deliver(process, n), Err(DeliverError::Forbidden));
        assert!(mailbox.deliver(kernel(0), n).is_ok(), "a kernel's is delivered to the kernel's handler");
    }
}

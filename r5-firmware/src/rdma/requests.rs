//! The kernel's RDMA requests over the IPC ring (`docs/hw/ipc.md`, `proto::rdma::ipc`).

use super::pds::RegisterError;
use super::{Engine, QueueMemory, Scheduler};
use hal::pldma::event::TxnRef;
use proto::ipc::{Message, op};
use proto::rdma::ipc::{RdmaRequest, RdmaStatus};

impl<'q> Scheduler<'q> {
    /// The reply to `req` if it is an RDMA request, else `None` (not ours).
    pub fn handle_request(
        &mut self,
        req: &Message,
        memory: &impl QueueMemory<'q>,
        engine: &mut impl Engine,
        now: u64,
    ) -> Option<Message> {
        let request = RdmaRequest::decode(req)?;
        let reply = |status: RdmaStatus, rest: [u64; 6]| {
            let [a, b, c, d, e, f] = rest;
            Some(Message::new(req.op | op::REPLY, req.seq, [status as u64, a, b, c, d, e, f]))
        };
        let status = match request {
            Err(status) => status,
            Ok(RdmaRequest::Register { pd, queue_set }) => match memory.queue_set(queue_set) {
                None => RdmaStatus::BadQueueAddress,
                Some(queues) => match self.register(pd, queue_set, queues) {
                    Ok(()) => RdmaStatus::Ok,
                    Err(RegisterError::AlreadyRegistered) => RdmaStatus::AlreadyRegistered,
                    Err(RegisterError::Overlap) => RdmaStatus::BadQueueAddress,
                },
            },
            Ok(RdmaRequest::Unregister { pd }) => {
                if self.forget(pd) {
                    RdmaStatus::Ok
                } else {
                    RdmaStatus::NotRegistered
                }
            }
            Ok(RdmaRequest::FaultResolved { pd, tid, seq, action }) => {
                let txn = TxnRef { pd, tid, seq };
                match self.fault_resolved(engine, self.node, txn, pd.raw(), action, now) {
                    Ok(()) => {
                        if action == hal::pldma::codes::RapfAction::Retry {
                            self.stats.local_retransmits += 1;
                        }
                        // Sent now, not at the next poll.
                        self.poll(engine, now);
                        RdmaStatus::Ok
                    }
                    Err(why) => {
                        match why {
                            super::events::Ignored::Stale => self.stats.stale_messages += 1,
                            super::events::Ignored::Foreign => self.stats.foreign_messages += 1,
                        }
                        why.into()
                    }
                }
            }
            Ok(RdmaRequest::Config { args }) => match self.config.updated(&args) {
                Some(config) => {
                    self.set_config(config);
                    let [a, b, c, d] = config.to_args();
                    return reply(RdmaStatus::Ok, [a, b, c, d, 0, 0]);
                }
                None => RdmaStatus::BadArgument,
            },
            Ok(RdmaRequest::Stats { page }) => match self.stats.page(page) {
                Some(counters) => return Some(Message::new(req.op | op::REPLY, req.seq, counters)),
                None => return Some(Message::new(op::UNKNOWN, req.seq, [u64::from(req.op), 0, 0, 0, 0, 0, 0])),
            },
        };
        reply(status, [0; 6])
    }
}

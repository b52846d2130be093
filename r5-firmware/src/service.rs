//! Requests from the A53 and what the firmware answers (`proto::ipc::op`).

use proto::ipc::{Message, op};

/// What the image must do besides sending the reply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    None,
    /// Write a trace line carrying this nonce before replying.
    TraceNonce(u64),
    /// Probe the PL (`op::PL_PROBE`): the image performs the accesses and fills the reply.
    PlProbe {
        scratch: u32,
        reads: u32,
    },
    /// Load from this address (which the MPU must refuse): the fault-path self-test. There is
    /// no reply.
    FaultTest(u32),
}

#[derive(Debug, Default)]
pub struct Service {
    pub requests: u64,
    pub replies: u64,
}

impl Service {
    pub fn new() -> Self {
        Self::default()
    }

    /// The ready message, answering kernel boot `nonce`.
    pub fn ready(version: u32, nonce: u32) -> Message {
        Message::new(op::READY, 0, [u64::from(version), u64::from(nonce), 0, 0, 0, 0, 0])
    }

    /// Answers one request. Every request gets exactly one reply, unknown ones included.
    pub fn handle(&mut self, req: &Message) -> (Message, Action) {
        self.requests += 1;
        let mut action = Action::None;
        let reply = match req.op {
            op::PING => Message::new(op::PING | op::REPLY, req.seq, [self.requests, self.replies, 0, 0, 0, 0, 0]),
            op::ECHO => Message::new(op::ECHO | op::REPLY, req.seq, req.args),
            op::TRACE_NONCE => {
                action = Action::TraceNonce(req.args[0]);
                Message::new(op::TRACE_NONCE | op::REPLY, req.seq, [req.args[0], 0, 0, 0, 0, 0, 0])
            }
            op::PL_PROBE => {
                action = Action::PlProbe {
                    scratch: req.args[0] as u32,
                    reads: req.args[1].min(op::PL_PROBE_MAX_READS) as u32,
                };
                Message::new(op::PL_PROBE | op::REPLY, req.seq, [0; 7])
            }
            op::FAULT_TEST if req.args[0] == op::FAULT_TEST_KEY => {
                action = Action::FaultTest(req.args[1] as u32);
                Message::new(op::FAULT_TEST | op::REPLY, req.seq, [0; 7])
            }
            unknown => Message::new(op::UNKNOWN, req.seq, [u64::from(unknown), 0, 0, 0, 0, 0, 0]),
        };
        self.replies += 1;
        (reply, action)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn echo_returns_sequence_and_arguments() {
        let mut s = Service::new();
        let req = Message::new(op::ECHO, 77, [1, 2, 3, 4, 5, 6, 7]);
        let (reply, action) = s.handle(&req);
        assert_eq!(reply, Message::new(op::ECHO | op::REPLY, 77, [1, 2, 3, 4, 5, 6, 7]));
        assert_eq!(action, Action::None);
    }

    #[test]
    fn ready_answers_the_boot_nonce() {
        let ready = Service::ready(0x100, 0xabcd);
        assert_eq!((ready.op, ready.args[0], ready.args[1]), (op::READY, 0x100, 0xabcd));
    }

    #[test]
    fn ping_reports_counters() {
        let mut s = Service::new();
        s.handle(&Message::new(op::ECHO, 1, [0; 7]));
        let (reply, _) = s.handle(&Message::new(op::PING, 2, [0; 7]));
        assert_eq!(reply.args[0], 2);
        assert_eq!(reply.args[1], 1);
    }

    #[test]
    fn trace_nonce_asks_for_a_trace_line() {
        let (reply, action) = Service::new().handle(&Message::new(op::TRACE_NONCE, 3, [0xabc, 0, 0, 0, 0, 0, 0]));
        assert_eq!(action, Action::TraceNonce(0xabc));
        assert_eq!(reply.args[0], 0xabc);
    }

    #[test]
    fn pl_probe_bounds_its_read_count() {
        let (reply, action) = Service::new().handle(&Message::new(op::PL_PROBE, 6, [7, u64::MAX, 0, 0, 0, 0, 0]));
        assert_eq!(action, Action::PlProbe { scratch: 7, reads: op::PL_PROBE_MAX_READS as u32 });
        assert_eq!(reply.op, op::PL_PROBE | op::REPLY);
    }

    #[test]
    fn fault_test_needs_its_key() {
        let mut s = Service::new();
        let (reply, action) = s.handle(&Message::new(op::FAULT_TEST, 4, [1, 0x4000_0000, 0, 0, 0, 0, 0]));
        assert_eq!((reply.op, action), (op::UNKNOWN, Action::None));
        let (_, action) = s.handle(&Message::new(op::FAULT_TEST, 5, [op::FAULT_TEST_KEY, 0x4000_0000, 0, 0, 0, 0, 0]));
        assert_eq!(action, Action::FaultTest(0x4000_0000));
    }

    #[test]
    fn unknown_and_reply_ops_get_an_error_reply() {
        let mut s = Service::new();
        for bad in [0, 0x7777, op::REPLY | op::ECHO, u32::MAX] {
            let (reply, _) = s.handle(&Message::new(bad, 9, [0; 7]));
            assert_eq!(reply.op, op::UNKNOWN);
            assert_eq!(reply.args[0], u64::from(bad));
            assert_eq!(reply.seq, 9);
        }
    }
}

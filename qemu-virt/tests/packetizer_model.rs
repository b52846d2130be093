//! The packetizer model against `docs/hw/packetizer.md` (offsets written as the doc gives them).

use std::sync::{Arc, Mutex};

use hal::packetizer::{Destination, assemble, base_dest};
use qemu_virt::models::packetizer::{OutgoingPacket, PacketizerModel};
use qemu_virt::models::{Completion, Delivery, ModelError};

const TIF: u64 = 0x40000;
const PIDT: u64 = TIF;
const BASE_DEST: u64 = TIF + 0x200;
const PID_CONF: u64 = TIF + 0x208;
const CLR_REQ: u64 = TIF + 0x210;
const WINDOW: u16 = 0x0a02;
const PEND: u128 = 1 << 0;
const ILLEGAL: u128 = 1 << 1;
const NACK: u128 = 1 << 2;
const ACK: u128 = 1 << 3;
const OVERWR_BUF: u128 = 1 << 4;

fn pif(n: u64, reg: u64) -> u64 {
    n * 0x1000 + reg
}

struct Rig {
    model: PacketizerModel,
    sent: Arc<Mutex<Vec<OutgoingPacket>>>,
    answer: Arc<Mutex<Delivery>>,
}

impl Rig {
    fn new() -> Self {
        let sent = Arc::new(Mutex::new(Vec::new()));
        let answer = Arc::new(Mutex::new(Delivery::Ack));
        let (s, a) = (sent.clone(), answer.clone());
        let model = PacketizerModel::new(
            7,
            Box::new(move |p| {
                s.lock().unwrap().push(p);
                *a.lock().unwrap()
            }),
        );
        let mut rig = Self { model, sent, answer };
        rig.w(BASE_DEST, 8, u128::from(base_dest(WINDOW)));
        rig
    }

    fn w(&mut self, offset: u64, size: usize, value: u128) {
        self.model.write(offset, size, value).unwrap();
    }

    fn r(&mut self, offset: u64, size: usize) -> u128 {
        self.model.read(offset, size).unwrap()
    }

    fn enable(&mut self, n: u64, pid: u64) {
        self.w(PIDT + 8 * n, 8, u128::from(pid));
        let conf = self.r(PID_CONF, 8);
        self.w(PID_CONF, 8, conf | 1 << n);
    }

    fn status(&mut self, n: u64) -> u128 {
        self.r(pif(n, 0x30), 4)
    }

    fn sent(&self) -> Vec<OutgoingPacket> {
        self.sent.lock().unwrap().clone()
    }
}

fn dest(node: u16, interface: u8) -> u128 {
    u128::from(Destination::mailbox(node, WINDOW, interface).unwrap().encode())
}

#[test]
fn third_write_sends_in_all_six_orders() {
    let orders = [[0, 1, 2], [0, 2, 1], [1, 0, 2], [1, 2, 0], [2, 0, 1], [2, 1, 0]];
    for (k, order) in orders.iter().enumerate() {
        let mut rig = Rig::new();
        let n = 3 + k as u64;
        rig.enable(n, 0xabc_0000_0100 + n);
        let values = [(0x00, u128::MAX - k as u128), (0x10, 0x1111 * (k as u128 + 1)), (0x20, dest(2, 9))];
        for (i, &reg) in order.iter().enumerate() {
            assert!(rig.sent().is_empty(), "order {order:?}: sent after {i} writes");
            let (offset, value) = values[reg];
            rig.w(pif(n, offset), 16, value);
        }
        let sent = rig.sent();
        assert_eq!(sent.len(), 1, "order {order:?}");
        let p = sent[0];
        assert_eq!((p.src_node, p.dest_node, p.dest_interface, p.src_interface), (7, 2, 9, n as u8));
        assert_eq!(p.words, assemble(0xabc_0000_0100 + n, values[0].1, values[1].1));
        assert_eq!(&p.words[..6], &(0xabc_0000_0100 + n).to_le_bytes()[..6], "PID prefix");
        assert_eq!(rig.status(n), ACK);
    }
}

#[test]
fn prefix_replaces_whatever_the_thread_wrote() {
    let mut rig = Rig::new();
    rig.enable(1, 0x0001_0005_0041);
    rig.w(pif(1, 0x00), 16, 0xffff_ffff_ffff_ffff_ffff_ffff_ffff_ffff);
    assert_eq!(rig.r(pif(1, 0x00), 16), u128::MAX << 48, "payload0[47:0] reads 0");
    rig.w(pif(1, 0x10), 16, 5);
    rig.w(pif(1, 0x20), 8, dest(0, 1));
    let p = rig.sent()[0];
    assert_eq!(&p.words[..6], &[0x41, 0x00, 0x05, 0x00, 0x01, 0x00]);
    assert_eq!(&p.words[6..16], &[0xff; 10]);
}

#[test]
fn rewriting_a_register_does_not_count_twice() {
    let mut rig = Rig::new();
    rig.enable(2, 1);
    rig.w(pif(2, 0x00), 16, 1 << 64);
    rig.w(pif(2, 0x00), 16, 2 << 64);
    rig.w(pif(2, 0x20), 16, dest(1, 1));
    assert!(rig.sent().is_empty());
    rig.w(pif(2, 0x10), 16, 3);
    assert_eq!(rig.sent()[0].words, assemble(1, 2 << 64, 3), "the last value of payload0 is sent");
    // After a packet the set starts again: one write does not resend.
    rig.w(pif(2, 0x10), 16, 4);
    assert_eq!(rig.sent().len(), 1);
}

#[test]
fn nack_then_ack_and_status_clearing() {
    let mut rig = Rig::new();
    rig.enable(1, 1);
    *rig.answer.lock().unwrap() = Delivery::Nack;
    for reg in [0x00, 0x10, 0x20] {
        rig.w(pif(1, reg), 16, if reg == 0x20 { dest(1, 1) } else { 0 });
    }
    assert_eq!(rig.status(1), NACK);
    *rig.answer.lock().unwrap() = Delivery::Ack;
    for reg in [0x20, 0x10, 0x00] {
        rig.w(pif(1, reg), 16, if reg == 0x20 { dest(1, 1) } else { 0 });
    }
    assert_eq!(rig.status(1), ACK, "NACK cleared by the next packet");
    assert_eq!(rig.r(pif(1, 0x30), 16), ACK);
    assert_eq!(rig.r(pif(1, 0x30), 8), ACK);
}

#[test]
fn pending_overwrite_and_late_completion() {
    let mut rig = Rig::new();
    rig.enable(4, 1);
    *rig.answer.lock().unwrap() = Delivery::Pending;
    for reg in [0x00, 0x10, 0x20] {
        rig.w(pif(4, reg), 16, if reg == 0x20 { dest(1, 1) } else { 0x77 });
    }
    assert_eq!(rig.status(4), PEND);
    let seq = rig.sent()[0].seq;
    rig.w(pif(4, 0x10), 16, 0x99);
    assert_eq!(rig.status(4), PEND | OVERWR_BUF, "write during PEND is flagged");
    assert_eq!(rig.r(pif(4, 0x10), 16), 0x77, "and dropped");
    assert_eq!(
        rig.model.complete(4, seq + 1, Completion::Ack),
        Err(ModelError::NoPendingPacket { pif: 4, seq: seq + 1 })
    );
    rig.model.complete(4, seq, Completion::Ack).unwrap();
    assert_eq!(rig.status(4), ACK | OVERWR_BUF, "OVERWR_BUF stays until the next packet");
    assert_eq!(rig.model.complete(4, seq, Completion::Nack), Err(ModelError::NoPendingPacket { pif: 4, seq }));
    *rig.answer.lock().unwrap() = Delivery::Ack;
    for reg in [0x00, 0x10, 0x20] {
        rig.w(pif(4, reg), 16, if reg == 0x20 { dest(1, 1) } else { 0 });
    }
    assert_eq!(rig.status(4), ACK);
}

#[test]
fn clr_req_aborts_and_is_write_one_to_clear() {
    let mut rig = Rig::new();
    rig.enable(5, 1);
    rig.enable(6, 2);
    *rig.answer.lock().unwrap() = Delivery::Pending;
    for n in [5, 6] {
        for reg in [0x00, 0x10, 0x20] {
            rig.w(pif(n, reg), 16, if reg == 0x20 { dest(1, 1) } else { 0 });
        }
    }
    let seq5 = rig.sent()[0].seq;
    rig.w(CLR_REQ, 8, 1 << 5);
    assert_eq!(rig.status(5), 0);
    assert_eq!(rig.status(6), PEND, "only bit 5 was written");
    assert_eq!(rig.r(CLR_REQ, 8), 0, "reads 0");
    assert!(rig.model.complete(5, seq5, Completion::Ack).is_err(), "late answer of an aborted packet is ignored");
    assert_eq!(rig.status(5), 0);
    // A half-written set is also cleared.
    rig.w(pif(5, 0x00), 16, 0);
    rig.w(pif(5, 0x10), 16, 0);
    rig.w(CLR_REQ, 8, 1 << 5);
    rig.w(pif(5, 0x20), 16, dest(1, 1));
    assert_eq!(rig.sent().len(), 2);
}

#[test]
fn illegal_destination_and_disabled_interface() {
    let mut rig = Rig::new();
    let send = |rig: &mut Rig, n: u64, d: u128| {
        for reg in [0x00, 0x10, 0x20] {
            rig.w(pif(n, reg), 16, if reg == 0x20 { d } else { 0 });
        }
        rig.status(n)
    };
    assert_eq!(send(&mut rig, 1, dest(1, 1)), ILLEGAL, "PID_CONF bit clear");
    rig.enable(1, 1);
    let other_window = u128::from(Destination { node: 1, window: WINDOW + 1, interface: 1, page_offset: 0 }.encode());
    assert_eq!(send(&mut rig, 1, other_window), ILLEGAL, "[33:18] differs from BASE_DEST");
    assert_eq!(send(&mut rig, 1, dest(1, 1) | 0x10), ILLEGAL, "not the DATA register");
    assert_eq!(send(&mut rig, 1, dest(1, 1) | 0x40000), ILLEGAL, "the control page is outside the window");
    assert!(rig.sent().is_empty());
    assert_eq!(send(&mut rig, 1, dest(1, 1) | (0xffu128 << 40)), ACK, "bits above 39 are ignored");
    assert_eq!(rig.r(pif(1, 0x20), 8), dest(1, 1));
    // BASE_DEST keeps only [33:18].
    rig.w(BASE_DEST, 8, u128::MAX);
    assert_eq!(rig.r(BASE_DEST, 8), 0x3_fffc_0000);
}

#[test]
fn tif_registers() {
    let mut rig = Rig::new();
    rig.w(PIDT + 8 * 63, 8, u128::MAX);
    assert_eq!(rig.r(PIDT + 8 * 63, 8), (1 << 48) - 1, "PID entries are 48 bits");
    rig.w(PID_CONF, 8, 0x8000_0000_0000_0001);
    assert_eq!(rig.r(PID_CONF, 8), 0x8000_0000_0000_0001);
    assert_eq!(rig.model.read(PIDT + 4, 8), Err(ModelError::Unmapped { offset: PIDT + 4 }));
    assert_eq!(rig.model.read(TIF + 0x218, 8), Err(ModelError::Unmapped { offset: TIF + 0x218 }));
    assert_eq!(rig.model.read(PID_CONF, 4), Err(ModelError::AccessSize { offset: PID_CONF, size: 4 }));
    assert_eq!(rig.model.read(0x41000, 8), Err(ModelError::Unmapped { offset: 0x41000 }));
}

#[test]
fn access_sizes() {
    let mut rig = Rig::new();
    for (reg, bad) in [(0x00, 8), (0x10, 4), (0x20, 4)] {
        assert_eq!(
            rig.model.write(pif(1, reg), bad, 0),
            Err(ModelError::AccessSize { offset: pif(1, reg), size: bad })
        );
        assert_eq!(rig.model.read(pif(1, reg), bad), Err(ModelError::AccessSize { offset: pif(1, reg), size: bad }));
    }
    assert_eq!(rig.model.write(pif(1, 0x30), 4, 0), Err(ModelError::ReadOnly { offset: pif(1, 0x30) }));
    assert_eq!(rig.model.read(pif(1, 0x28), 8), Err(ModelError::Unmapped { offset: pif(1, 0x28) }));
    assert_eq!(rig.model.read(pif(1, 0x34), 4), Err(ModelError::Unmapped { offset: pif(1, 0x34) }));
    assert_eq!(rig.status(1), 0, "refused accesses changed nothing");
}

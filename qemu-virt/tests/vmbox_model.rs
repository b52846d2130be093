//! The vmbox model against `docs/hw/vmbox.md` (offsets written as the doc gives them).

use hal::vmbox::EMPTY_SENTINEL;
use qemu_virt::models::vmbox::VmboxModel;
use qemu_virt::models::{Delivery, ModelError};

const DATA: u64 = 0x00;
const STATUS: u64 = 0x10;
const DEPTH: u64 = 0x14;
const IRQ_ENABLE: u64 = 0x18;
const IRQ_STATUS: u64 = 0x1c;
const THRESHOLD: u64 = 0x20;
const REFUSED: u64 = 0x24;
const PACKET: u64 = 0x40;
const CONTROL: u64 = 0x40000;
const NOT_EMPTY: u128 = 1 << 0;
const THRESHOLD_HIT: u128 = 1 << 1;
const REFUSED_BIT: u128 = 1 << 2;
const EMPTY: u128 = 1 << 16;
const FULL: u128 = 1 << 17;
const ABOVE: u128 = 1 << 18;

fn mif(n: u64, reg: u64) -> u64 {
    n * 0x1000 + reg
}

fn packet(a: u128, b: u128) -> Vec<u8> {
    [a.to_le_bytes(), b.to_le_bytes()].concat()
}

fn r(m: &mut VmboxModel, offset: u64, size: usize) -> u128 {
    m.read(offset, size).unwrap()
}

#[test]
fn enqueue_dequeue_and_sentinel() {
    let mut m = VmboxModel::new(8).unwrap();
    assert_eq!(r(&mut m, mif(3, STATUS), 4), EMPTY);
    assert_eq!(r(&mut m, mif(3, DEPTH), 4), 8);
    assert_eq!(r(&mut m, mif(3, DATA), 16), EMPTY_SENTINEL);
    assert_eq!(EMPTY_SENTINEL, 0xCAFEBEBE_DEADBEAF_CAFEBEBE_DEADBEAF);
    assert_eq!(m.deliver(3, &packet(1, 2)), Delivery::Ack);
    m.write(mif(3, DATA), 16, 3).unwrap();
    assert_eq!(r(&mut m, mif(3, STATUS), 4), 3);
    assert_eq!(m.queued(4), 0, "other FIFOs untouched");
    for want in [1, 2, 3] {
        assert_eq!(r(&mut m, mif(3, DATA), 16), want);
    }
    assert_eq!(r(&mut m, mif(3, DATA), 16), EMPTY_SENTINEL);
    assert_eq!(r(&mut m, mif(3, STATUS), 4), EMPTY);
}

#[test]
fn full_fifo_refuses_whole_packets() {
    let mut m = VmboxModel::new(5).unwrap();
    assert_eq!(m.deliver(1, &packet(1, 2)), Delivery::Ack);
    assert_eq!(m.deliver(1, &packet(3, 4)), Delivery::Ack);
    // One word free: the seed's vmbox would take word 5 and ACK (seed §5.1.2). Here: nothing, NACK.
    assert_eq!(m.deliver(1, &packet(5, 6)), Delivery::Nack);
    assert_eq!(m.queued(1), 4);
    assert_eq!(r(&mut m, mif(1, REFUSED), 4), 1);
    m.write(mif(1, DATA), 16, 7).unwrap();
    assert_eq!(r(&mut m, mif(1, STATUS), 4), FULL | 5);
    m.write(mif(1, DATA), 16, 8).unwrap();
    assert_eq!(m.deliver(1, &[0; 16]), Delivery::Nack, "single word to a full FIFO");
    assert_eq!(r(&mut m, mif(1, REFUSED), 4), 3, "two refused packets and one refused write");
    let words: Vec<u128> = (0..6).map(|_| r(&mut m, mif(1, DATA), 16)).collect();
    assert_eq!(words, [1, 2, 3, 4, 7, EMPTY_SENTINEL], "packet (5, 6) left no trace");
    m.write(mif(1, REFUSED), 4, 0x1234).unwrap();
    assert_eq!(r(&mut m, mif(1, REFUSED), 4), 0, "any write clears");
}

#[test]
fn malformed_deliveries_are_refused() {
    let mut m = VmboxModel::new(4).unwrap();
    assert_eq!(m.deliver(0, &[]), Delivery::Nack);
    assert_eq!(m.deliver(0, &[0; 17]), Delivery::Nack);
    assert_eq!(m.deliver(64, &[0; 16]), Delivery::Nack);
    assert_eq!(m.queued(0), 0);
    assert!(matches!(VmboxModel::new(1), Err(ModelError::InvalidConfig)));
}

#[test]
fn not_empty_interrupt_reasserts_while_data_remains() {
    let mut m = VmboxModel::new(8).unwrap();
    m.deliver(2, &packet(1, 2));
    assert_eq!(r(&mut m, mif(2, IRQ_STATUS), 4), NOT_EMPTY);
    assert!(!m.irq_line(), "not enabled");
    m.write(mif(2, IRQ_ENABLE), 4, 0xffff_ffff).unwrap();
    assert_eq!(r(&mut m, mif(2, IRQ_ENABLE), 4), 0b111, "only defined bits stick");
    assert!(m.irq_line() && m.interface_irq(2) && !m.interface_irq(1));
    assert_eq!(r(&mut m, CONTROL, 8), 1 << 2, "summary names MIF 2");
    m.write(mif(2, IRQ_STATUS), 4, NOT_EMPTY).unwrap();
    assert_eq!(r(&mut m, mif(2, IRQ_STATUS), 4), NOT_EMPTY, "W1C of a condition that still holds has no effect");
    r(&mut m, mif(2, DATA), 16);
    r(&mut m, mif(2, DATA), 16);
    assert_eq!(r(&mut m, mif(2, IRQ_STATUS), 4), NOT_EMPTY, "sticky: a dequeue does not clear it");
    m.write(mif(2, IRQ_STATUS), 4, NOT_EMPTY).unwrap();
    assert_eq!(r(&mut m, mif(2, IRQ_STATUS), 4), 0);
    assert!(!m.irq_line());
    assert_eq!(r(&mut m, CONTROL, 8), 0);
    m.deliver(2, &packet(3, 4));
    assert!(m.irq_line(), "new data raises it again");
}

#[test]
fn threshold_and_refused_interrupts() {
    let mut m = VmboxModel::new(8).unwrap();
    m.write(mif(9, IRQ_ENABLE), 4, THRESHOLD_HIT | REFUSED_BIT).unwrap();
    m.write(mif(9, THRESHOLD), 4, 4).unwrap();
    assert_eq!(r(&mut m, mif(9, THRESHOLD), 4), 4);
    m.deliver(9, &packet(1, 2));
    assert!(!m.irq_line(), "NOT_EMPTY is set but masked; 2 < 4");
    m.deliver(9, &packet(3, 4));
    assert_eq!(r(&mut m, mif(9, IRQ_STATUS), 4), NOT_EMPTY | THRESHOLD_HIT);
    assert_eq!(r(&mut m, mif(9, STATUS), 4), ABOVE | 4);
    assert!(m.irq_line());
    r(&mut m, mif(9, DATA), 16);
    m.write(mif(9, IRQ_STATUS), 4, THRESHOLD_HIT).unwrap();
    assert_eq!(r(&mut m, mif(9, IRQ_STATUS), 4), NOT_EMPTY, "3 < 4: cleared");
    assert!(!m.irq_line());
    m.write(mif(9, THRESHOLD), 4, 3).unwrap();
    assert_eq!(r(&mut m, mif(9, IRQ_STATUS), 4) & THRESHOLD_HIT, THRESHOLD_HIT, "lowering the level re-evaluates");
    m.write(mif(9, THRESHOLD), 4, 0).unwrap();
    m.write(mif(9, IRQ_STATUS), 4, 0b111).unwrap();
    assert_eq!(r(&mut m, mif(9, IRQ_STATUS), 4), NOT_EMPTY, "level 0 disables the threshold");
    for _ in 0..3 {
        m.deliver(9, &packet(0, 0));
    }
    assert_eq!(r(&mut m, mif(9, IRQ_STATUS), 4) & REFUSED_BIT, REFUSED_BIT);
    assert!(m.irq_line());
    m.write(mif(9, IRQ_STATUS), 4, REFUSED_BIT).unwrap();
    assert!(!m.irq_line(), "REFUSED is an event: it stays clear");
}

#[test]
fn registers_and_access_sizes() {
    let mut m = VmboxModel::new(512).unwrap();
    assert_eq!(r(&mut m, mif(63, DEPTH), 4), 512);
    assert_eq!(r(&mut m, CONTROL + 8, 4), 0x5642_0001);
    assert_eq!(m.read(mif(0, DATA), 8), Err(ModelError::AccessSize { offset: 0, size: 8 }));
    assert_eq!(m.write(mif(0, DATA), 4, 1), Err(ModelError::AccessSize { offset: 0, size: 4 }));
    assert_eq!(m.read(mif(0, STATUS), 8), Err(ModelError::AccessSize { offset: STATUS, size: 8 }));
    assert_eq!(m.write(mif(0, STATUS), 4, 0), Err(ModelError::ReadOnly { offset: STATUS }));
    assert_eq!(m.write(mif(0, DEPTH), 4, 0), Err(ModelError::ReadOnly { offset: DEPTH }));
    assert_eq!(m.write(CONTROL, 8, 0), Err(ModelError::ReadOnly { offset: CONTROL }));
    assert_eq!(m.read(mif(0, 0x28), 4), Err(ModelError::Unmapped { offset: 0x28 }));
    assert_eq!(m.read(CONTROL + 0x10, 4), Err(ModelError::Unmapped { offset: CONTROL + 0x10 }));
    assert_eq!(m.read(0x41000, 4), Err(ModelError::Unmapped { offset: 0x41000 }));
    assert_eq!(m.queued(0), 0, "refused accesses changed nothing");
}

/// `packet[0]` takes a whole packet and keeps its second word for `packet[1]`; with less than a
/// packet queued both halves are the sentinel and nothing is dequeued, so a packet that arrives
/// between the two halves is not torn.
#[test]
fn packet_reads_take_whole_packets_or_nothing() {
    let mut m = VmboxModel::new(8).unwrap();
    let pair = |m: &mut VmboxModel| [r(m, mif(2, PACKET), 16), r(m, mif(2, PACKET + 16), 16)];
    assert_eq!(pair(&mut m), [EMPTY_SENTINEL; 2], "empty");
    assert_eq!(m.deliver(2, &packet(1, 2)), Delivery::Ack);
    assert_eq!(m.deliver(2, &packet(3, 4)), Delivery::Ack);
    assert_eq!(pair(&mut m), [1, 2]);
    assert_eq!(r(&mut m, mif(2, STATUS), 4), 2, "one packet left");
    // A lone word (a local write) is not a packet: it stays.
    assert_eq!(pair(&mut m), [3, 4]);
    m.write(mif(2, DATA), 16, 5).unwrap();
    assert_eq!(pair(&mut m), [EMPTY_SENTINEL; 2]);
    assert_eq!(r(&mut m, mif(2, STATUS), 4), 1);
    assert_eq!(r(&mut m, mif(2, DATA), 16), 5);
    // The first half finds nothing; a packet arrives; the second half still says nothing, and
    // the packet is whole for the next read.
    assert_eq!(r(&mut m, mif(2, PACKET), 16), EMPTY_SENTINEL);
    assert_eq!(m.deliver(2, &packet(6, 7)), Delivery::Ack);
    assert_eq!(r(&mut m, mif(2, PACKET + 16), 16), EMPTY_SENTINEL);
    assert_eq!(pair(&mut m), [6, 7]);
    assert_eq!(r(&mut m, mif(2, PACKET + 16), 16), EMPTY_SENTINEL, "the kept word is given once");
    assert_eq!(m.read(mif(2, PACKET), 4), Err(ModelError::AccessSize { offset: mif(2, PACKET), size: 4 }));
    assert_eq!(m.write(mif(2, PACKET), 16, 1), Err(ModelError::ReadOnly { offset: mif(2, PACKET) }));
    assert_eq!(m.queued(2), 0);
}

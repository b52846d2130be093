//! The (emulated or real) PL as one node sees it: the system block, PL interrupts, the global
//! window to itself, and clear faults where nothing answers.

use crate::cluster_support::{local, remote, whoami};
use crate::testkit::{Test, TestResult};
use crate::{arch, ensure};
use a53_kernel::arch::cpu;
use a53_kernel::cluster::with_sysblock;
use a53_kernel::exception::catch_fault;
use board::layout::TEST_BUFFER;
use hal::mmio::{read_u128, write_u128};

pub const TESTS: &[Test] = &[
    Test::new("platform", "sysblock_identifies_the_node", identity),
    Test::new("platform", "sysblock_scratch_registers_round_trip", scratch),
    Test::new("platform", "pl_interrupt_reaches_its_handler", pl_interrupt),
    Test::new("platform", "unmodelled_pl_address_is_a_clear_fault", unmodelled),
    Test::new("platform", "window_to_a_missing_node_is_a_clear_fault", missing_node),
    Test::new("platform", "window_accesses_of_every_size_reach_local_ddr", window_sizes),
];

fn identity() -> TestResult {
    let (node, count) = whoami()?;
    ensure(count >= 1 && node < count, "node id outside the node count")
}

fn scratch() -> TestResult {
    let round_trip = |value| {
        with_sysblock(|block| {
            block.set_scratch(value);
            block.scratch()
        })
    };
    for value in [0, 0xdead_beef, 0x1234_5678, u32::MAX] {
        ensure(round_trip(value) == Some(value), "32-bit scratch did not keep its value")?;
    }
    // SCRATCH64 (docs/hw/sysblock.md): one 64-bit access each way.
    let round_trip64 = |value| {
        with_sysblock(|block| {
            block.set_scratch64(value);
            block.scratch64()
        })
    };
    for value in [0x0123_4567_89ab_cdef, u64::MAX, 0] {
        ensure(round_trip64(value) == Some(value), "64-bit scratch did not keep its value")?;
    }
    Ok(())
}

/// The system block's doorbell raises PL line 0; the kernel's handler for the line
/// (`cluster`) counts it.
fn pl_interrupt() -> TestResult {
    let before = a53_kernel::cluster::doorbells();
    with_sysblock(|block| block.enable_doorbell_irq()).ok_or("no system block")?;
    for ring in 1..=3 {
        with_sysblock(|block| block.ring_doorbell());
        let give_up = a53_kernel::timer::now() + a53_kernel::timer::hz();
        cpu::idle_until(|| a53_kernel::cluster::doorbells() >= before + ring || a53_kernel::timer::now() > give_up);
        ensure(
            a53_kernel::cluster::doorbells() == before + ring,
            "the doorbell interrupt did not reach its handler exactly once",
        )?;
    }
    Ok(())
}

fn unmodelled() -> TestResult {
    let addr = a53_kernel::arch::phys_to_virt(0x8050_0000) as *const u32;
    let start = a53_kernel::timer::now();
    // SAFETY: no device answers here: the access faults and the catcher skips it.
    let (_, caught) = catch_fault(|| unsafe { addr.read_volatile() });
    let f = caught.ok_or("an access to an unmodelled PL address did not fault")?;
    ensure(f.far == addr as u64, "the fault names a different address")?;
    if <a53_kernel::Board as board::Board>::FORWARDING.is_some() {
        let note = f.note.ok_or("the fault report does not say why")?;
        ensure(note.what.contains("no device model"), "the fault report does not say that no device answers")?;
        ensure(note.addr == 0x8050_0000, "the note names a different physical address")?;
    }
    ensure(
        a53_kernel::timer::now() - start < a53_kernel::timer::hz(),
        "the fault took a second: it behaved like a hang",
    )
}

fn missing_node() -> TestResult {
    let (_, count) = whoami()?;
    let p = remote::<u64>(count, TEST_BUFFER);
    // SAFETY: no such node: the access faults and the catcher skips it.
    let (_, caught) = catch_fault(|| unsafe { p.read_volatile() });
    ensure(caught.is_some(), "a window access to a node that does not exist did not fault")
}

fn window_sizes() -> TestResult {
    let (me, _) = whoami()?;
    let at = TEST_BUFFER + 0x3_0000;
    let through = |off: u64| remote::<u8>(me, at + off);
    let direct = |off: u64| local::<u8>(at + off);
    // SAFETY: TEST_BUFFER is reserved for these tests; the window view and the linear view are
    // the same bytes of this node's DDR.
    unsafe {
        (through(0x01)).write_volatile(0xa5);
        (through(0x02) as *mut u16).write_volatile(0xbeef);
        (through(0x04) as *mut u32).write_volatile(0xdead_beef);
        (through(0x08) as *mut u64).write_volatile(0x0123_4567_89ab_cdef);
        let q: u128 = 0xfedc_ba98_7654_3210_0f1e_2d3c_4b5a_6978;
        write_u128(through(0x10) as *mut u128, q);
        ensure(direct(0x01).read_volatile() == 0xa5, "8-bit store")?;
        ensure((direct(0x02) as *const u16).read_volatile() == 0xbeef, "16-bit store")?;
        ensure((direct(0x04) as *const u32).read_volatile() == 0xdead_beef, "32-bit store")?;
        ensure((direct(0x08) as *const u64).read_volatile() == 0x0123_4567_89ab_cdef, "64-bit store")?;
        ensure((direct(0x10) as *const u128).read_volatile() == q, "128-bit store")?;
        ensure(through(0x01).read_volatile() == 0xa5, "8-bit load")?;
        ensure((through(0x02) as *const u16).read_volatile() == 0xbeef, "16-bit load")?;
        ensure((through(0x04) as *const u32).read_volatile() == 0xdead_beef, "32-bit load")?;
        ensure((through(0x08) as *const u64).read_volatile() == 0x0123_4567_89ab_cdef, "64-bit load")?;
        let back = read_u128(through(0x10) as *const u128);
        ensure(back == q, "128-bit load")?;
        // Sign extension happens in the core, after the forwarded load.
        let signed = arch::load_signed_byte(through(0x01));
        ensure(signed == 0xa5u8 as i8 as i64, "sign-extending load")?;
    }
    Ok(())
}

//! The on-target test image: boots like the kernel, then runs the tests selected by the boot
//! arguments and ends with the summary line (see `a53_ktest::testkit`).
#![no_std]
#![no_main]

use a53_kernel::{cluster, kernel};

#[unsafe(no_mangle)]
extern "C" fn kernel_main(_core: usize, entry_el: u64) -> ! {
    kernel::init_boot_core(entry_el);
    // The other nodes of a cluster run may still need this one: the run ends together.
    cluster::finish(a53_ktest::run())
}

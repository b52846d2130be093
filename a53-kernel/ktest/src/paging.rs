//! Demand-paged process regions from the CPU's side (`process::paging`; `regions` program):
//! pages come at the first touch and go on EVICT and UNMAP (device regions too, which system
//! calls do not read); a write to a read-only region and a touch of an unmapped one kill the
//! process, never the kernel.

use crate::ensure;
use crate::gsas::run;
use crate::testkit::{Test, TestResult};
use a53_kernel::process::table::Exit;

pub const TESTS: &[Test] = &[
    Test::new("paging", "region_pages_come_on_first_touch_and_go_on_evict_and_unmap", checks),
    Test::new("paging", "a_write_to_a_read_only_region_kills_the_process", write_read_only),
    Test::new("paging", "a_touch_of_an_unmapped_region_kills_the_process", touch_unmapped),
];

fn checks() -> TestResult {
    let frames = a53_kernel::mm::kernel_frames::free_frames();
    match run("regions", 0)? {
        Exit::Status(0) => {}
        other => {
            defmt::println!("regions ended with {}", defmt::Debug2Format(&other));
            return Err("the program failed");
        }
    }
    ensure(a53_kernel::mm::kernel_frames::free_frames() == frames, "the process's pages did not all come back")
}

fn killed(mode: u64) -> TestResult {
    match run("regions", mode)? {
        Exit::Fault { .. } => Ok(()),
        other => {
            defmt::println!("regions {=u64} ended with {}", mode, defmt::Debug2Format(&other));
            Err("the process was not killed by its fault")
        }
    }
}

fn write_read_only() -> TestResult {
    killed(1)
}

fn touch_unmapped() -> TestResult {
    killed(2)
}

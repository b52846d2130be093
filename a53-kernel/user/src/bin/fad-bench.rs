//! `fad-bench`: `args::fad_bench::OPS` x `fad64(counter, 1)` with a window of requests outstanding, as fast
//! as the target's service answers. The timing is the kernel's (`cargo xtask bench gsas`).
//!
//! Argument: `args::fad_bench` (the counter's page | the window).
//! Exit status: 0; 1 = a reply carried an error; 2 = old values not increasing (the service
//! answers a requester's requests in order, so each is above the one before); otherwise an
//! error status (`README.md`).
#![no_std]
#![no_main]

use unimem_user::{Error, Opcode, args, ensure, thread_argument, with_client};

unimem_user::entry!(main);

const OPS: u32 = args::fad_bench::OPS;

fn main() -> Result<u64, Error> {
    let (counter, window) = args::fad_bench::unpack(thread_argument()?);
    with_client(|g| {
        let mut pipeline = g.pipeline(counter.node())?;
        let (mut posted, mut last) = (0, None);
        for _ in 0..OPS {
            while posted < OPS && pipeline.outstanding() < u32::from(window) {
                pipeline.post(Opcode::Fad, counter, 1, 0)?;
                posted += 1;
            }
            let (_, response) = pipeline.collect()?;
            ensure!(response.error.is_none(), 1, "FAD error {:?}", response.error);
            ensure!(last.is_none_or(|l| response.result > l), 2, "old value {} after {:?}", response.result, last);
            last = Some(response.result);
        }
        Ok(0)
    })
}

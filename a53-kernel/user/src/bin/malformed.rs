//! `malformed`: 10,000 invalid requests, each answered once with the right error code, and the
//! service still works afterwards.
//!
//! Argument: node | seed << 16 (seed 0: a fixed default). Requests have random opcode bytes,
//! reserved bytes, address nodes and offsets and unused arguments (`unimem_user::fuzz`); only
//! those the service's static checks must refuse are sent, so none can succeed, and each has
//! the code `docs/hw/gsas-packets.md` prescribes ("Error codes", checks in order). Then no
//! further reply may come within 200 ms, and a read64 of a page allocated before must still
//! return what was written.
//! Exit status: 0; 1 = a request succeeded; 2 = some requests got another nonzero code than
//! prescribed (the first is logged; all 10,000 are still sent); 3 = a reply beyond the one per
//! request; 4 = the final read64 differs; otherwise an error status (`README.md`; a reply that
//! echoes another opcode is a protocol error).
#![no_std]
#![no_main]

use unimem_user::fuzz::invalid_request;
use unimem_user::rand::XorShift64;
use unimem_user::{
    Error, ErrorCode, alloc_shared, args, ensure, free_shared, log, read64, thread_argument, with_client, write64,
};

unimem_user::entry!(main);

const REQUESTS: u32 = 10_000;
const DEFAULT_SEED: u64 = 0x5eed_0bad_f00d;
const VALUE: u64 = 0x5a11_0000_0000_0001;
const QUIET_US: u64 = 200_000;

fn main() -> Result<u64, Error> {
    let arg = thread_argument()?;
    let node = args::node(arg & 0xffff)?;
    let seed = match arg >> 16 {
        0 => DEFAULT_SEED,
        s => s,
    };
    let page = alloc_shared(1, node)?;
    write64(page, VALUE)?;
    let mut rng = XorShift64::new(seed);
    let status = with_client(|g| {
        let mut per_code = [0u32; 12];
        let mut mismatches = 0u32;
        for i in 0..REQUESTS {
            let (raw, expected) = invalid_request(&mut rng, node);
            let answer = g.call_raw(node, &raw)?;
            let Some(code) = answer.error else {
                log!("request {}: {:?} succeeded with {:#x}", i, raw, answer.result);
                return Ok(1);
            };
            per_code[code.as_u64() as usize] += 1;
            if code != expected {
                if mismatches == 0 {
                    log!("request {}: {:?} got {:?}, prescribed {:?}", i, raw, code, expected);
                }
                mismatches += 1;
            }
        }
        let extra = g.pipeline(node)?.collect_within(QUIET_US);
        ensure!(extra == Err(Error::Timeout), 3, "after {} requests: {:?}", REQUESTS, extra);
        let named = |c: ErrorCode| per_code[c.as_u64() as usize];
        log!(
            "{} invalid requests: BadOpcode {}, Unaligned {}, BadArgument {}, WrongNode {}; {} stray packets",
            REQUESTS,
            named(ErrorCode::BadOpcode),
            named(ErrorCode::Unaligned),
            named(ErrorCode::BadArgument),
            named(ErrorCode::WrongNode),
            g.stats().stray,
        );
        ensure!(mismatches == 0, 2, "{} requests got another code than prescribed", mismatches);
        Ok(0)
    })?;
    if status != 0 {
        return Ok(status);
    }
    let got = read64(page)?;
    ensure!(got == VALUE, 4, "read64 after the storm: {:#x}, wrote {:#x}", got, VALUE);
    free_shared(page)?;
    Ok(0)
}

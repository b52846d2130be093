//! Invalid requests for the `malformed` program: random opcode bytes, reserved bytes, nodes,
//! offsets and arguments, kept only when the service's static checks ([`static_check`]) must
//! refuse them, together with the code they must get. A request that could succeed is never
//! produced, so sending these changes nothing at the target.

use proto::gsas::{EMPTY_THREAD_ARGUMENT, ErrorCode, GlobalAddress, OFFSET_BITS, Opcode, Pid, RawRequest};

use crate::check::static_check;
use crate::rand::XorShift64;

/// One invalid request for node `node` and the error code the service must answer.
pub fn invalid_request(rng: &mut XorShift64, node: u16) -> (RawRequest, ErrorCode) {
    loop {
        let raw = random_request(rng, node);
        if let Err(code) = static_check(&raw, node) {
            return (raw, code);
        }
    }
}

fn random_request(rng: &mut XorShift64, node: u16) -> RawRequest {
    let opcode = if rng.one_in(2) {
        Opcode::ALL[rng.below(Opcode::ALL.len() as u64) as usize].as_u8()
    } else {
        rng.next_u64() as u8
    };
    let reserved = if rng.one_in(4) { rng.next_u64() as u8 } else { 0 };
    let target = if rng.one_in(4) { rng.next_u64() as u16 } else { node };
    let offset = match rng.below(4) {
        0 => 0,
        1 => rng.below(0x1000),
        2 => rng.next_u64() & ((1 << OFFSET_BITS) - 8),
        _ => rng.next_u64() & ((1 << OFFSET_BITS) - 1),
    };
    let address = GlobalAddress::new(target, offset).map_or(0, GlobalAddress::raw);
    RawRequest { sender: Pid::default(), reserved, opcode, address, arg1: argument(rng), arg2: argument(rng) }
}

fn argument(rng: &mut XorShift64) -> u64 {
    match rng.below(5) {
        0 | 1 => 0,
        2 => rng.below(0x200),
        3 => rng.next_u64(),
        _ => [EMPTY_THREAD_ARGUMENT, 0x8000_0000_0000_0001, 3, 257, u64::MAX][rng.below(5) as usize],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_request_is_refused_with_its_code_and_every_code_occurs() {
        let mut rng = XorShift64::new(42);
        let mut seen = std::collections::BTreeMap::new();
        for _ in 0..100_000 {
            let (raw, code) = invalid_request(&mut rng, 3);
            assert_eq!(static_check(&raw, 3), Err(code));
            *seen.entry(code).or_insert(0u32) += 1;
        }
        for code in [ErrorCode::BadOpcode, ErrorCode::BadArgument, ErrorCode::WrongNode, ErrorCode::Unaligned] {
            assert!(seen.get(&code).copied().unwrap_or(0) > 1000, "{code:?}: {seen:?}");
        }
    }
}

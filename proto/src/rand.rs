//! A small deterministic generator for tests and fuzzing, on the host and on target: xorshift64*
//! (Vigna, "An experimental exploration of Marsaglia's xorshift generators", 2016).

#[derive(Clone, Debug)]
pub struct XorShift64 {
    state: u64,
}

impl XorShift64 {
    /// Any seed; 0 (a fixed point of xorshift) is replaced by a constant.
    pub const fn new(seed: u64) -> Self {
        Self { state: if seed == 0 { 0x9E37_79B9_7F4A_7C15 } else { seed } }
    }

    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.state;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.state = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A value in `0..n` (`n` > 0; the slight bias of a modulo does not matter here).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }

    /// True with probability 1/`n`.
    pub fn one_in(&mut self, n: u64) -> bool {
        self.below(n) == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deterministic_and_spread() {
        let mut a = XorShift64::new(1);
        let mut b = XorShift64::new(1);
        let xs: std::vec::Vec<u64> = (0..1000).map(|_| a.next_u64()).collect();
        assert!(xs.iter().all(|&x| x == b.next_u64()));
        let mut hist = [0u32; 8];
        let mut c = XorShift64::new(0);
        for _ in 0..8000 {
            hist[c.below(8) as usize] += 1;
        }
        assert!(hist.iter().all(|&h| (800..1200).contains(&h)), "{hist:?}");
    }
}

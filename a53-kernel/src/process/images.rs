//! The user programs embedded in the kernel image (built by xtask from `a53-kernel/user`).

include!(concat!(env!("OUT_DIR"), "/user_images.rs"));

/// The ELF of the program called `name`.
pub fn find(name: &str) -> Option<&'static [u8]> {
    IMAGES.iter().find(|(n, _)| *n == name).map(|(_, elf)| *elf)
}

pub fn names() -> impl Iterator<Item = &'static str> {
    IMAGES.iter().map(|(n, _)| *n)
}

//! The user programs, by name: the program store that the loader placed in its DDR region
//! (`docs/hw/program-store.md`, read with `proto::store`), checked once at boot by [`init`].
//! Without a valid store the node has no programs, and every spawn by name fails with
//! `SpawnError::UnknownImage`.

use crate::Board;
use crate::arch::phys_to_virt;
use board::Board as _;
use proto::store::{Refusal, Store};

/// The store [`init`] accepted; set once at boot, read-only afterwards.
static STORE: spin::Once<Store<'static>> = spin::Once::new();

/// Checks the store in its region and, if it is sound, serves [`find`] and [`names`] from it
/// for the rest of the run. Returns the store, or why it was refused (then there are no
/// programs). Called once, by the boot core, after the kernel map is up.
pub fn init() -> Result<Store<'static>, Refusal> {
    let layout = Board::DDR_LAYOUT;
    // SAFETY: the board reserves this region for the store alone (`board::layout` asserts that
    // nothing else overlaps it); the kernel's linear map covers it for the kernel's lifetime,
    // and nothing writes it after the loader.
    let region = unsafe {
        core::slice::from_raw_parts(phys_to_virt(layout.program_store) as *const u8, layout.program_store_size as usize)
    };
    let store = Store::parse(region)?;
    Ok(*STORE.call_once(|| store))
}

/// The program called `name`: its name as the store holds it, and its ELF.
pub fn named(name: &str) -> Option<(&'static str, &'static [u8])> {
    STORE.get()?.programs().find(|(n, _)| *n == name)
}

/// The ELF of the program called `name`.
pub fn find(name: &str) -> Option<&'static [u8]> {
    named(name).map(|(_, elf)| elf)
}

/// The programs' names, in the store's order; none without a valid store.
pub fn names() -> impl Iterator<Item = &'static str> {
    STORE.get().into_iter().flat_map(|store| store.programs().map(|(name, _)| name))
}

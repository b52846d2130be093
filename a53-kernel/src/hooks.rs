//! How a lower layer calls an upper one without importing it: the lower layer owns a [`Hooks`]
//! list (or a single [`Hook`]) and calls what is registered there; each subsystem registers its
//! functions at boot, in the order `kernel::wire` gives (`docs/architecture.md`, "Layers").
//!
//! Registration happens before the events it serves can happen (at boot, on the boot core,
//! before interrupts): a list is append-only and read without a lock, from any core and from
//! interrupt handlers.

use core::sync::atomic::{AtomicUsize, Ordering};

/// The list is full: a registration too many (a bug in the wiring, reported at boot).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Full;

/// Up to `N` registered values (functions, or small structs of them), called in the order they
/// were registered.
pub struct Hooks<T: 'static, const N: usize> {
    slots: [spin::Once<T>; N],
    claimed: AtomicUsize,
}

impl<T: 'static, const N: usize> Hooks<T, N> {
    pub const fn new() -> Self {
        Self { slots: [const { spin::Once::new() }; N], claimed: AtomicUsize::new(0) }
    }

    /// Adds `value` at the end of the list.
    pub fn register(&self, value: T) -> Result<(), Full> {
        let index = self.claimed.fetch_add(1, Ordering::AcqRel);
        let Some(slot) = self.slots.get(index) else {
            self.claimed.fetch_sub(1, Ordering::AcqRel);
            return Err(Full);
        };
        slot.call_once(|| value);
        Ok(())
    }

    /// The registered values, oldest first (a slot claimed but not yet filled is skipped).
    pub fn iter(&self) -> impl Iterator<Item = &T> {
        let claimed = self.claimed.load(Ordering::Acquire).min(N);
        self.slots[..claimed].iter().filter_map(spin::Once::get)
    }
}

impl<T: 'static, const N: usize> Default for Hooks<T, N> {
    fn default() -> Self {
        Self::new()
    }
}

/// One registered value: set once at boot, read without a lock afterwards.
pub struct Hook<T: 'static> {
    value: spin::Once<T>,
}

/// The hook was set already.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AlreadySet;

impl<T: 'static> Hook<T> {
    pub const fn new() -> Self {
        Self { value: spin::Once::new() }
    }

    pub fn set(&self, value: T) -> Result<(), AlreadySet> {
        let mut fresh = false;
        self.value.call_once(|| {
            fresh = true;
            value
        });
        if fresh { Ok(()) } else { Err(AlreadySet) }
    }

    /// The value, if a subsystem set it.
    pub fn get(&self) -> Option<&T> {
        self.value.get()
    }
}

impl<T: 'static> Default for Hook<T> {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec::Vec;

    #[test]
    fn hooks_are_called_in_registration_order_and_a_full_list_refuses() {
        let hooks: Hooks<u32, 3> = Hooks::new();
        assert_eq!(hooks.iter().count(), 0);
        for v in [7, 8, 9] {
            hooks.register(v).unwrap();
        }
        assert_eq!(hooks.register(10), Err(Full));
        assert_eq!(hooks.iter().copied().collect::<Vec<_>>(), [7, 8, 9], "the refused one is not listed");
        assert_eq!(hooks.register(11), Err(Full), "and the list stays full");
    }

    #[test]
    fn a_hook_is_set_once() {
        let hook: Hook<fn() -> u8> = Hook::new();
        assert!(hook.get().is_none());
        hook.set(|| 1).unwrap();
        assert_eq!(hook.set(|| 2), Err(AlreadySet));
        assert_eq!(hook.get().map(|f| f()), Some(1));
    }
}

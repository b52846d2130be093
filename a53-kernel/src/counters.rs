//! A set of event counters as one struct: [`counter_set!`] declares, from one list of fields,
//! the live counters (atomics that interrupt handlers and any core bump without a lock) and
//! the snapshot a reader gets (plain `u64`s, `Copy`), so that a counter is named once.

/// `counter_set! { /// doc  pub struct Snapshot / Live { /// doc  field, ... } }` declares
/// `Snapshot` (`Clone, Copy, Debug, Default, PartialEq, Eq`, a `pub u64` per field) and `Live`
/// (a `pub AtomicU64` per field, bumped as `LIVE.field.fetch_add(1, Relaxed)`; `const fn new()`
/// and `snapshot()`).
#[macro_export]
macro_rules! counter_set {
    (
        $(#[$meta:meta])*
        pub struct $snapshot:ident / $live:ident {
            $( $(#[$field_meta:meta])* $field:ident ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
        pub struct $snapshot {
            $( $(#[$field_meta])* pub $field: u64, )*
        }

        #[doc = concat!("The live counters of [`", stringify!($snapshot), "`]: one atomic each.")]
        pub struct $live {
            $( pub $field: core::sync::atomic::AtomicU64, )*
        }

        impl $live {
            pub const fn new() -> Self {
                Self { $( $field: core::sync::atomic::AtomicU64::new(0), )* }
            }

            /// Every counter, as of now (each read on its own: a snapshot taken while others
            /// count is not one instant).
            pub fn snapshot(&self) -> $snapshot {
                $snapshot { $( $field: self.$field.load(core::sync::atomic::Ordering::Relaxed), )* }
            }
        }

        impl Default for $live {
            fn default() -> Self {
                Self::new()
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use core::sync::atomic::Ordering;

    crate::counter_set! {
        /// Two counters.
        pub struct Seen / LiveSeen {
            /// The first.
            apples,
            pears,
        }
    }

    #[test]
    fn a_snapshot_holds_every_field_as_counted() {
        static LIVE: LiveSeen = LiveSeen::new();
        assert_eq!(LIVE.snapshot(), Seen::default());
        LIVE.apples.fetch_add(3, Ordering::Relaxed);
        LIVE.pears.fetch_add(1, Ordering::Relaxed);
        assert_eq!(LIVE.snapshot(), Seen { apples: 3, pears: 1 });
    }
}

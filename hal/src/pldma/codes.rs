//! The small code spaces of the contract (`docs/hw/pldma.md`): NACK and PF-NACK codes, RAPF
//! actions, fault codes and descriptor refusals. Each decodes from its byte or refuses it.

macro_rules! code_enum {
    (
        $(#[$doc:meta])*
        $name:ident { $($(#[$variant_doc:meta])* $variant:ident = $value:literal, $text:literal;)* }
    ) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[repr(u8)]
        pub enum $name {
            $($(#[$variant_doc])* $variant = $value,)*
        }

        impl $name {
            /// Every code, in value order.
            pub const ALL: &'static [$name] = &[$($name::$variant,)*];

            /// The code whose value is `raw`, or `None` for a value the table does not list.
            pub const fn from_raw(raw: u8) -> Option<Self> {
                match raw {
                    $($value => Some($name::$variant),)*
                    _ => None,
                }
            }

            /// Its value, as the code byte holds it.
            pub const fn raw(self) -> u8 {
                self as u8
            }

            /// The name the docs give it.
            pub const fn name(self) -> &'static str {
                match self {
                    $($name::$variant => $text,)*
                }
            }
        }
    };
}

code_enum! {
    /// Why a packet failed at its target, or a read request was refused.
    NackCode {
        /// A write at the target left memory (retransmitted at once, a bounded number of times).
        WriteError = 0x1, "WriteError";
        /// The source read left memory (retransmitted the same way).
        ReadError = 0x2, "ReadError";
        /// The target has no process of this PD (`pd_enable` bit clear or no queue registered); final.
        NoPd = 0x3, "NoPd";
    }
}

code_enum! {
    /// Which end of a block faulted.
    PfNackCode {
        /// A destination page faulted.
        Destination = 0x1, "Destination";
        /// A source page faulted.
        Source = 0x2, "Source";
        /// An access of the block is stalled in the SMMU (stall mode): no fault, no
        /// retransmission; the kernel will RESUME it. The owner only pauses the block's timeout.
        Stalled = 0x3, "Stalled";
        /// The block's stalled accesses were RESUMEd with retry and went through: the owner
        /// takes the block off pause and arms its ordinary timeout again (nothing is resent).
        Resumed = 0x4, "Resumed";
    }
}

code_enum! {
    /// What a RAPF asks of the owner's R5.
    RapfAction {
        /// The pages are mapped: retransmit.
        Retry = 0x0, "Retry";
        /// The fault cannot be resolved (no region, write to a read-only one): fail the transfer.
        Abort = 0x1, "Abort";
    }
}

code_enum! {
    /// A fault FIFO entry's cause.
    FaultCode {
        /// The SMMU terminated a write at the target (translation or permission fault).
        DestinationFault = 0x1, "DestinationFault";
        /// The SMMU terminated a read of the block's source.
        SourceFault = 0x2, "SourceFault";
        /// A write's translation left memory.
        DestinationBusError = 0x3, "DestinationBusError";
        /// A source read's translation left memory.
        SourceBusError = 0x4, "SourceBusError";
    }
}

code_enum! {
    /// Why the engine refused a descriptor.
    RefusalCode {
        /// A rule of the descriptor table is broken.
        Malformed = 0x1, "Malformed";
        /// `pd_enable` bit `pd` is clear.
        PdDisabled = 0x2, "PdDisabled";
        /// `node` is not a node of the cluster.
        NoRoute = 0x3, "NoRoute";
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::string::String;
    use std::vec::Vec;

    pub(crate) const DOC: &str = include_str!("../../../docs/hw/pldma.md");

    /// The rows of a code table: (name, value).
    pub(crate) fn doc_codes(title: &str) -> Vec<(String, usize)> {
        crate::doc_table(DOC, title)
    }

    pub(crate) fn codes<T: Copy>(
        all: &[T],
        name: impl Fn(T) -> &'static str,
        raw: impl Fn(T) -> u8,
    ) -> Vec<(String, usize)> {
        all.iter().map(|&c| (name(c).into(), usize::from(raw(c)))).collect()
    }

    #[test]
    fn code_tables_match_the_doc() {
        assert_eq!(doc_codes("#### NACK codes"), codes(NackCode::ALL, NackCode::name, NackCode::raw));
        assert_eq!(doc_codes("PF-NACK codes"), codes(PfNackCode::ALL, PfNackCode::name, PfNackCode::raw));
        assert_eq!(doc_codes("Fault codes"), codes(FaultCode::ALL, FaultCode::name, FaultCode::raw));
        assert_eq!(doc_codes("Descriptor refusal codes"), codes(RefusalCode::ALL, RefusalCode::name, RefusalCode::raw));
    }

    #[test]
    fn unknown_codes_are_refused() {
        assert_eq!(NackCode::from_raw(0), None);
        assert_eq!(NackCode::from_raw(4), None);
        assert_eq!(RapfAction::from_raw(2), None);
        assert_eq!(FaultCode::from_raw(0xff), None);
        for c in FaultCode::ALL {
            assert_eq!(FaultCode::from_raw(c.raw()), Some(*c));
        }
    }
}

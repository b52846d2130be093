//! Typed views of the attribute words.
//!
//! * Partition attributes: partition header word 0x24, bit layout from UG1283
//!   "Zynq UltraScale+ MPSoC Partition Attribute Bits" (also `XIH_PH_ATTRB_*` in the
//!   FSBL's `xfsbl_image_header.h` and `PH_*_SHIFT_ZYNQMP` in bootgen).
//! * Boot header image attributes: boot header word 0x44, UG1283 "Zynq UltraScale+ MPSoC
//!   Boot Header Attribute Bits" (UG1085 "Boot Header" table).
//! * Key source (boot header word 0x28) and the partition-present boot device (image
//!   header table word 0x14).

use std::fmt;

use serde::Deserialize;
use thiserror::Error;

/// A field of an attribute word holds a value the format reserves.
///
/// The FSBL rejects reserved destination CPUs (`XFSBL_ERROR_INVALID_CPU_TYPE`), devices
/// (`XFSBL_ERROR_INVALID_DEST_DEVICE`), checksum types
/// (`XFSBL_ERROR_INVALID_CHECKSUM_TYPE`) and boot devices (`XFSBL_ERROR_PPD`).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{field} field ({location}) is {value}, valid values are 0..={max}")]
pub struct AttributeError {
    /// Field name, e.g. "destination cpu".
    pub field: &'static str,
    /// Where the field lives, e.g. "partition attribute bits 11:8".
    pub location: &'static str,
    /// The value found.
    pub value: u32,
    /// The largest valid value.
    pub max: u32,
}

macro_rules! simple_enum {
    (
        $(#[$meta:meta])*
        pub enum $name:ident : $field:expr, $location:expr => {
            $( $(#[$vmeta:meta])* $variant:ident = $value:expr, $text:expr, $serde:expr $(, alias $alias:expr)*; )+
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize)]
        pub enum $name {
            $( $(#[$vmeta])* #[serde(rename = $serde $(, alias = $alias)*)] $variant, )+
        }

        impl $name {
            /// Every value, in encoding order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The raw field value.
            pub const fn bits(self) -> u8 {
                match self { $($name::$variant => $value,)+ }
            }

            /// Decodes the raw field value.
            pub fn from_bits(v: u8) -> Result<Self, AttributeError> {
                match v {
                    $($value => Ok($name::$variant),)+
                    other => Err(AttributeError {
                        field: $field,
                        location: $location,
                        value: u32::from(other),
                        max: u32::from(Self::ALL[Self::ALL.len() - 1].bits()),
                    }),
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(match self { $($name::$variant => $text,)+ })
            }
        }
    };
}

simple_enum! {
    /// Destination CPU, partition attribute bits 11:8.
    pub enum DestCpu : "destination cpu", "partition attribute bits 11:8" => {
        /// No CPU (the FSBL treats it as "the CPU running the FSBL").
        None = 0, "none", "none";
        /// Cortex-A53 core 0.
        A53_0 = 1, "A53-0", "a53-0";
        /// Cortex-A53 core 1.
        A53_1 = 2, "A53-1", "a53-1";
        /// Cortex-A53 core 2.
        A53_2 = 3, "A53-2", "a53-2";
        /// Cortex-A53 core 3.
        A53_3 = 4, "A53-3", "a53-3";
        /// Cortex-R5 core 0 (split mode).
        R5_0 = 5, "R5-0", "r5-0";
        /// Cortex-R5 core 1 (split mode).
        R5_1 = 6, "R5-1", "r5-1";
        /// Cortex-R5 pair in lockstep.
        R5Lockstep = 7, "R5-lockstep", "r5-lockstep", alias "r5-l";
        /// Platform management unit (MicroBlaze).
        Pmu = 8, "PMU", "pmu";
    }
}

impl DestCpu {
    /// True for the four Cortex-A53 cores.
    pub fn is_a53(self) -> bool {
        matches!(self, DestCpu::A53_0 | DestCpu::A53_1 | DestCpu::A53_2 | DestCpu::A53_3)
    }

    /// True for the Cortex-R5 cores (split or lockstep).
    pub fn is_r5(self) -> bool {
        matches!(self, DestCpu::R5_0 | DestCpu::R5_1 | DestCpu::R5Lockstep)
    }
}

simple_enum! {
    /// Destination device, partition attribute bits 6:4.
    ///
    /// UG1283 lists 0 = none, 1 = PS, 2 = PL; the FSBL and bootgen also use 3 = PMU
    /// (`XIH_PH_ATTRB_DEST_DEVICE_PMU`).
    pub enum DestDevice : "destination device", "partition attribute bits 6:4" => {
        /// No device.
        None = 0, "none", "none";
        /// Processing system (memory loaded by the FSBL).
        Ps = 1, "PS", "ps";
        /// Programmable logic (bitstream sent to PCAP).
        Pl = 2, "PL", "pl";
        /// Platform management unit.
        Pmu = 3, "PMU", "pmu";
    }
}

simple_enum! {
    /// Exception level the partition is handed off at, partition attribute bits 2:1.
    pub enum ExceptionLevel : "exception level", "partition attribute bits 2:1" => {
        /// EL0.
        El0 = 0, "EL0", "el0", alias "el-0";
        /// EL1.
        El1 = 1, "EL1", "el1", alias "el-1";
        /// EL2.
        El2 = 2, "EL2", "el2", alias "el-2";
        /// EL3 (bootgen's default).
        El3 = 3, "EL3", "el3", alias "el-3";
    }
}

simple_enum! {
    /// TrustZone security state, partition attribute bit 0.
    pub enum TrustZone : "trustzone", "partition attribute bit 0" => {
        /// Non-secure (bootgen's default).
        NonSecure = 0, "non-secure", "non-secure", alias "nonsecure";
        /// Secure.
        Secure = 1, "secure", "secure";
    }
}

simple_enum! {
    /// A53 execution state, partition attribute bit 3 ("A5X Exec State").
    ///
    /// bootgen sets 1 (AArch32) for every 32-bit ARM ELF, so R5 partitions carry it too.
    pub enum ExecState : "exec state", "partition attribute bit 3" => {
        /// AArch64 (0).
        AArch64 = 0, "AArch64", "aarch64";
        /// AArch32 (1).
        AArch32 = 1, "AArch32", "aarch32";
    }
}

simple_enum! {
    /// Endianness of the partition, partition attribute bit 18.
    pub enum Endianness : "endianness", "partition attribute bit 18" => {
        /// Little endian (0).
        Little = 0, "little", "little";
        /// Big endian (1).
        Big = 1, "big", "big";
    }
}

simple_enum! {
    /// Partition data checksum type, partition attribute bits 14:12.
    ///
    /// UG1283 lists 0 = none and 3 = SHA3 as the only non-reserved values for ZynqMP;
    /// old bootgen releases also wrote 1 = MD5 and 2 = SHA2, which are decoded so that
    /// such images can be dumped.
    pub enum ChecksumType : "checksum type", "partition attribute bits 14:12" => {
        /// No checksum.
        None = 0, "none", "none";
        /// MD5 (legacy, not accepted by current FSBLs).
        Md5 = 1, "MD5", "md5";
        /// SHA-256 (legacy, not accepted by current FSBLs).
        Sha2 = 2, "SHA2", "sha2";
        /// SHA3-384.
        Sha3 = 3, "SHA3", "sha3";
    }
}

simple_enum! {
    /// Partition owner, partition attribute bits 17:16.
    pub enum PartitionOwner : "partition owner", "partition attribute bits 17:16" => {
        /// Loaded by the FSBL (0).
        Fsbl = 0, "FSBL", "fsbl";
        /// Loaded by U-Boot (1).
        UBoot = 1, "U-Boot", "uboot", alias "u-boot";
        /// Reserved value 2.
        Reserved2 = 2, "reserved (2)", "reserved2";
        /// Reserved value 3.
        Reserved3 = 3, "reserved (3)", "reserved3";
    }
}

simple_enum! {
    /// Exception vector location, partition attribute bit 23 (R5 and A53 AArch32 only).
    pub enum VectorLocation : "vector location", "partition attribute bit 23" => {
        /// Low vectors (0, default).
        Lovec = 0, "LOVEC", "lovec";
        /// High vectors (1).
        Hivec = 1, "HIVEC", "hivec";
    }
}

/// Bit positions of the partition attribute word (UG1283 "Zynq UltraScale+ MPSoC
/// Partition Attribute Bits").
pub mod partition_bits {
    /// Bit 0: TrustZone.
    pub const TRUSTZONE_SHIFT: u32 = 0;
    /// Bits 2:1: exception level.
    pub const EL_SHIFT: u32 = 1;
    /// Bit 3: A53 execution state.
    pub const EXEC_STATE_SHIFT: u32 = 3;
    /// Bits 6:4: destination device.
    pub const DEST_DEVICE_SHIFT: u32 = 4;
    /// Bit 7: encryption present.
    pub const ENCRYPTED_SHIFT: u32 = 7;
    /// Bits 11:8: destination CPU.
    pub const DEST_CPU_SHIFT: u32 = 8;
    /// Bits 14:12: checksum type.
    pub const CHECKSUM_SHIFT: u32 = 12;
    /// Bit 15: RSA authentication certificate present.
    pub const RSA_AC_SHIFT: u32 = 15;
    /// Bits 17:16: partition owner.
    pub const OWNER_SHIFT: u32 = 16;
    /// Bit 18: endianness.
    pub const ENDIAN_SHIFT: u32 = 18;
    /// Bit 19: early handoff.
    pub const EARLY_HANDOFF_SHIFT: u32 = 19;
    /// Bits 22:20: authentication block size (bootgen; reserved in UG1283).
    pub const AUTH_BLOCK_SHIFT: u32 = 20;
    /// Bit 23: vector location.
    pub const VECTOR_LOCATION_SHIFT: u32 = 23;
    /// Bits 31:24: reserved.
    pub const RESERVED_SHIFT: u32 = 24;
}

/// Decoded partition attribute word (partition header offset 0x24).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PartitionAttributes {
    /// Bit 0.
    pub trustzone: TrustZone,
    /// Bits 2:1.
    pub exception_level: ExceptionLevel,
    /// Bit 3.
    pub exec_state: ExecState,
    /// Bits 6:4.
    pub dest_device: DestDevice,
    /// Bit 7: the partition is encrypted.
    pub encrypted: bool,
    /// Bits 11:8.
    pub dest_cpu: DestCpu,
    /// Bits 14:12.
    pub checksum: ChecksumType,
    /// Bit 15: an RSA authentication certificate is present.
    pub rsa_auth_cert: bool,
    /// Bits 17:16.
    pub owner: PartitionOwner,
    /// Bit 18.
    pub endianness: Endianness,
    /// Bit 19: hand off immediately after loading.
    pub early_handoff: bool,
    /// Bits 22:20: authentication block size code written by bootgen (`log2(MiB) - 1`),
    /// 0 when unused. Kept raw.
    pub auth_block: u8,
    /// Bit 23.
    pub vector_location: VectorLocation,
    /// Bits 31:24, reserved; kept raw so that a round trip is exact.
    pub reserved: u8,
}

impl Default for PartitionAttributes {
    /// bootgen's defaults: EL3, non-secure, AArch64, PS, no CPU, little endian.
    fn default() -> Self {
        PartitionAttributes {
            trustzone: TrustZone::NonSecure,
            exception_level: ExceptionLevel::El3,
            exec_state: ExecState::AArch64,
            dest_device: DestDevice::Ps,
            encrypted: false,
            dest_cpu: DestCpu::None,
            checksum: ChecksumType::None,
            rsa_auth_cert: false,
            owner: PartitionOwner::Fsbl,
            endianness: Endianness::Little,
            early_handoff: false,
            auth_block: 0,
            vector_location: VectorLocation::Lovec,
            reserved: 0,
        }
    }
}

impl PartitionAttributes {
    /// Encodes the attribute word.
    pub fn to_bits(&self) -> u32 {
        use partition_bits::*;
        (u32::from(self.trustzone.bits()) << TRUSTZONE_SHIFT)
            | (u32::from(self.exception_level.bits()) << EL_SHIFT)
            | (u32::from(self.exec_state.bits()) << EXEC_STATE_SHIFT)
            | (u32::from(self.dest_device.bits()) << DEST_DEVICE_SHIFT)
            | (u32::from(self.encrypted) << ENCRYPTED_SHIFT)
            | (u32::from(self.dest_cpu.bits()) << DEST_CPU_SHIFT)
            | (u32::from(self.checksum.bits()) << CHECKSUM_SHIFT)
            | (u32::from(self.rsa_auth_cert) << RSA_AC_SHIFT)
            | (u32::from(self.owner.bits()) << OWNER_SHIFT)
            | (u32::from(self.endianness.bits()) << ENDIAN_SHIFT)
            | (u32::from(self.early_handoff) << EARLY_HANDOFF_SHIFT)
            | (u32::from(self.auth_block & 0x7) << AUTH_BLOCK_SHIFT)
            | (u32::from(self.vector_location.bits()) << VECTOR_LOCATION_SHIFT)
            | (u32::from(self.reserved) << RESERVED_SHIFT)
    }

    /// Decodes the attribute word; reserved CPU, device and checksum values are errors.
    pub fn from_bits(w: u32) -> Result<Self, AttributeError> {
        use partition_bits::*;
        let field = |shift: u32, mask: u32| ((w >> shift) & mask) as u8;
        Ok(PartitionAttributes {
            trustzone: TrustZone::from_bits(field(TRUSTZONE_SHIFT, 0x1))?,
            exception_level: ExceptionLevel::from_bits(field(EL_SHIFT, 0x3))?,
            exec_state: ExecState::from_bits(field(EXEC_STATE_SHIFT, 0x1))?,
            dest_device: DestDevice::from_bits(field(DEST_DEVICE_SHIFT, 0x7))?,
            encrypted: field(ENCRYPTED_SHIFT, 0x1) != 0,
            dest_cpu: DestCpu::from_bits(field(DEST_CPU_SHIFT, 0xF))?,
            checksum: ChecksumType::from_bits(field(CHECKSUM_SHIFT, 0x7))?,
            rsa_auth_cert: field(RSA_AC_SHIFT, 0x1) != 0,
            owner: PartitionOwner::from_bits(field(OWNER_SHIFT, 0x3))?,
            endianness: Endianness::from_bits(field(ENDIAN_SHIFT, 0x1))?,
            early_handoff: field(EARLY_HANDOFF_SHIFT, 0x1) != 0,
            auth_block: field(AUTH_BLOCK_SHIFT, 0x7),
            vector_location: VectorLocation::from_bits(field(VECTOR_LOCATION_SHIFT, 0x1))?,
            reserved: field(RESERVED_SHIFT, 0xFF),
        })
    }
}

/// CPU the boot ROM hands the FSBL to, boot header attribute bits 11:10.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FsblCpu {
    /// 0: R5 single (R5-0).
    R5Single,
    /// 1: A53 single, 32-bit (AArch32).
    A53Single32,
    /// 2: A53 single, 64-bit (AArch64).
    A53Single64,
    /// 3: R5 dual (lockstep).
    R5Dual,
}

impl FsblCpu {
    /// Raw 2-bit field value.
    pub const fn bits(self) -> u32 {
        match self {
            FsblCpu::R5Single => 0,
            FsblCpu::A53Single32 => 1,
            FsblCpu::A53Single64 => 2,
            FsblCpu::R5Dual => 3,
        }
    }

    /// Decodes the raw 2-bit value (all four values are defined).
    pub const fn from_bits(v: u32) -> Self {
        match v & 3 {
            0 => FsblCpu::R5Single,
            1 => FsblCpu::A53Single32,
            2 => FsblCpu::A53Single64,
            _ => FsblCpu::R5Dual,
        }
    }

    /// The reset-vector filler bootgen writes in boot header words 0x00..0x1C: an
    /// AArch64 `b .` (0x1400_0000) for A53 64-bit, an A32 `b .` (0xEAFF_FFFE) otherwise.
    pub const fn jump_to_self(self) -> u32 {
        match self {
            FsblCpu::A53Single64 => 0x1400_0000,
            _ => 0xEAFF_FFFE,
        }
    }
}

impl fmt::Display for FsblCpu {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            FsblCpu::R5Single => "R5 single",
            FsblCpu::A53Single32 => "A53 single 32-bit",
            FsblCpu::A53Single64 => "A53 single 64-bit",
            FsblCpu::R5Dual => "R5 dual (lockstep)",
        })
    }
}

/// Bit positions of the boot header image-attribute word 0x44 (UG1283 "Zynq UltraScale+
/// MPSoC Boot Header Attribute Bits"; bootgen `*_BIT_SHIFT` in `bootheader.h`).
/// Every field is two bits wide and "enabled" means both bits set (0b11).
pub mod boot_header_bits {
    /// Bits 3:2: optional key in the secure header.
    pub const OPT_KEY_SHIFT: u32 = 2;
    /// Bits 5:4: authentication only.
    pub const AUTH_ONLY_SHIFT: u32 = 4;
    /// Bits 7:6: PUF helper data in the boot header (0b11).
    pub const PUF_HD_SHIFT: u32 = 6;
    /// Bits 9:8: boot image integrity (0b11 = SHA3 checksum of the FSBL).
    pub const BI_HASH_SHIFT: u32 = 8;
    /// Bits 11:10: FSBL CPU select.
    pub const CORE_SHIFT: u32 = 10;
    /// Bits 13:12: authentication hash (0b11 = SHA2, otherwise SHA3).
    pub const AUTH_HASH_SHIFT: u32 = 12;
    /// Bits 15:14: boot header authentication (0b11 = enabled).
    pub const BH_RSA_SHIFT: u32 = 14;
    /// Bits 17:16: PUF mode (0b11 = 4K).
    pub const PUF_MODE_SHIFT: u32 = 16;
}

/// The boot header image-attribute word (offset 0x44), kept raw with decoding accessors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct BootHeaderAttributes(pub u32);

impl BootHeaderAttributes {
    /// Attributes for a plain (unencrypted, unauthenticated) image booting `cpu`.
    pub const fn for_cpu(cpu: FsblCpu) -> Self {
        BootHeaderAttributes(cpu.bits() << boot_header_bits::CORE_SHIFT)
    }

    fn two_bits(self, shift: u32) -> u32 {
        (self.0 >> shift) & 3
    }

    /// Bits 11:10.
    pub fn fsbl_cpu(self) -> FsblCpu {
        FsblCpu::from_bits(self.two_bits(boot_header_bits::CORE_SHIFT))
    }

    /// Bits 3:2 == 0b11.
    pub fn optional_key(self) -> bool {
        self.two_bits(boot_header_bits::OPT_KEY_SHIFT) == 3
    }

    /// Bits 5:4 == 0b11.
    pub fn auth_only(self) -> bool {
        self.two_bits(boot_header_bits::AUTH_ONLY_SHIFT) == 3
    }

    /// Bits 7:6 == 0b11: 1544 bytes of PUF helper data follow the register
    /// initialization table, making the boot header 0xEC0 bytes long.
    pub fn puf_helper_data_in_boot_header(self) -> bool {
        self.two_bits(boot_header_bits::PUF_HD_SHIFT) == 3
    }

    /// Bits 9:8 == 0b11: the FSBL partition carries a SHA3 integrity digest.
    pub fn integrity_sha3(self) -> bool {
        self.two_bits(boot_header_bits::BI_HASH_SHIFT) == 3
    }

    /// Bits 13:12 == 0b11: SHA2 is used for authentication (SHA3 otherwise).
    pub fn auth_hash_sha2(self) -> bool {
        self.two_bits(boot_header_bits::AUTH_HASH_SHIFT) == 3
    }

    /// Bits 15:14 == 0b11: boot header authentication enabled.
    pub fn boot_header_rsa(self) -> bool {
        self.two_bits(boot_header_bits::BH_RSA_SHIFT) == 3
    }

    /// Bits 17:16 == 0b11: PUF 4K mode.
    pub fn puf_4k_mode(self) -> bool {
        self.two_bits(boot_header_bits::PUF_MODE_SHIFT) == 3
    }
}

/// Encryption key source, boot header word 0x28 (UG1283 "Zynq UltraScale+ MPSoC Boot
/// Header": Key Source; values from bootgen `bootheader.h`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KeySource {
    /// 0: not encrypted.
    None,
    /// 0xA5C3C5A3: red key in eFUSE.
    EfuseRed,
    /// 0x3A5C3C5A: red key in BBRAM.
    BbramRed,
    /// 0xA5C3C5A5: black key in eFUSE.
    EfuseBlack,
    /// 0xA35C7C53: black key in the boot header.
    BootHeaderBlack,
    /// 0xA5C3C5A7: grey (obfuscated) key in eFUSE.
    EfuseGrey,
    /// 0xA35C7CA5: grey (obfuscated) key in the boot header.
    BootHeaderGrey,
    /// 0xA3A5C3C5: user key (KUP) in the boot header.
    BootHeaderKup,
    /// Any other value.
    Unknown(u32),
}

impl KeySource {
    /// Decodes the raw word.
    pub const fn from_word(w: u32) -> Self {
        match w {
            0 => KeySource::None,
            0xA5C3_C5A3 => KeySource::EfuseRed,
            0x3A5C_3C5A => KeySource::BbramRed,
            0xA5C3_C5A5 => KeySource::EfuseBlack,
            0xA35C_7C53 => KeySource::BootHeaderBlack,
            0xA5C3_C5A7 => KeySource::EfuseGrey,
            0xA35C_7CA5 => KeySource::BootHeaderGrey,
            0xA3A5_C3C5 => KeySource::BootHeaderKup,
            other => KeySource::Unknown(other),
        }
    }

    /// The raw word.
    pub const fn word(self) -> u32 {
        match self {
            KeySource::None => 0,
            KeySource::EfuseRed => 0xA5C3_C5A3,
            KeySource::BbramRed => 0x3A5C_3C5A,
            KeySource::EfuseBlack => 0xA5C3_C5A5,
            KeySource::BootHeaderBlack => 0xA35C_7C53,
            KeySource::EfuseGrey => 0xA5C3_C5A7,
            KeySource::BootHeaderGrey => 0xA35C_7CA5,
            KeySource::BootHeaderKup => 0xA3A5_C3C5,
            KeySource::Unknown(w) => w,
        }
    }
}

impl fmt::Display for KeySource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeySource::None => f.write_str("none (not encrypted)"),
            KeySource::EfuseRed => f.write_str("eFUSE red key"),
            KeySource::BbramRed => f.write_str("BBRAM red key"),
            KeySource::EfuseBlack => f.write_str("eFUSE black key"),
            KeySource::BootHeaderBlack => f.write_str("boot header black key"),
            KeySource::EfuseGrey => f.write_str("eFUSE grey (obfuscated) key"),
            KeySource::BootHeaderGrey => f.write_str("boot header grey (obfuscated) key"),
            KeySource::BootHeaderKup => f.write_str("boot header user key (KUP)"),
            KeySource::Unknown(w) => write!(f, "unknown ({w:#010x})"),
        }
    }
}

/// Device holding the partitions, image header table word 0x14 ("partition present
/// device" in the FSBL, `XIH_IHT_PPD_*`; bootgen's `boot_device` BIF attribute).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BootDevice {
    /// 0: same device as the boot header.
    #[default]
    Same,
    /// 1: QSPI, 32-bit addressing.
    Qspi32,
    /// 2: QSPI, 24-bit addressing.
    Qspi24,
    /// 3: NAND.
    Nand,
    /// 4: SD0.
    Sd0,
    /// 5: SD1.
    Sd1,
    /// 6: SD1 with level shifter.
    SdLs,
    /// 7: eMMC.
    Mmc,
    /// 8: USB.
    Usb,
    /// 9: Ethernet.
    Ethernet,
    /// 10: PCIe.
    Pcie,
    /// 11: SATA.
    Sata,
}

impl BootDevice {
    /// Raw word value.
    pub const fn word(self) -> u32 {
        self as u32
    }

    /// Decodes the raw word; values above 11 are rejected like the FSBL does.
    pub fn from_word(w: u32) -> Result<Self, AttributeError> {
        Ok(match w {
            0 => BootDevice::Same,
            1 => BootDevice::Qspi32,
            2 => BootDevice::Qspi24,
            3 => BootDevice::Nand,
            4 => BootDevice::Sd0,
            5 => BootDevice::Sd1,
            6 => BootDevice::SdLs,
            7 => BootDevice::Mmc,
            8 => BootDevice::Usb,
            9 => BootDevice::Ethernet,
            10 => BootDevice::Pcie,
            11 => BootDevice::Sata,
            other => {
                return Err(AttributeError {
                    field: "boot device",
                    location: "image header table word 0x14",
                    value: other,
                    max: 11,
                });
            }
        })
    }
}

impl fmt::Display for BootDevice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            BootDevice::Same => "same as boot device",
            BootDevice::Qspi32 => "QSPI32",
            BootDevice::Qspi24 => "QSPI24",
            BootDevice::Nand => "NAND",
            BootDevice::Sd0 => "SD0",
            BootDevice::Sd1 => "SD1",
            BootDevice::SdLs => "SD-LS",
            BootDevice::Mmc => "MMC",
            BootDevice::Usb => "USB",
            BootDevice::Ethernet => "Ethernet",
            BootDevice::Pcie => "PCIe",
            BootDevice::Sata => "SATA",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_bootgen_attribute_words_decode() {
        // Attribute words seen in bootgen output: FSBL on A53-0 at EL3 non-secure (0x116),
        // ATF BL31 at EL3 secure (0x117), U-Boot at EL2 non-secure (0x114).
        let fsbl = PartitionAttributes::from_bits(0x116).unwrap();
        assert_eq!(fsbl.dest_cpu, DestCpu::A53_0);
        assert_eq!(fsbl.dest_device, DestDevice::Ps);
        assert_eq!(fsbl.exception_level, ExceptionLevel::El3);
        assert_eq!(fsbl.trustzone, TrustZone::NonSecure);
        assert_eq!(fsbl.exec_state, ExecState::AArch64);
        assert_eq!(PartitionAttributes::from_bits(0x117).unwrap().trustzone, TrustZone::Secure);
        assert_eq!(PartitionAttributes::from_bits(0x114).unwrap().exception_level, ExceptionLevel::El2);
    }

    #[test]
    fn every_field_round_trips() {
        for &cpu in DestCpu::ALL {
            for &el in ExceptionLevel::ALL {
                for &tz in TrustZone::ALL {
                    for &es in ExecState::ALL {
                        for &dev in DestDevice::ALL {
                            let a = PartitionAttributes {
                                dest_cpu: cpu,
                                exception_level: el,
                                trustzone: tz,
                                exec_state: es,
                                dest_device: dev,
                                endianness: Endianness::Big,
                                checksum: ChecksumType::Sha3,
                                early_handoff: true,
                                vector_location: VectorLocation::Hivec,
                                owner: PartitionOwner::UBoot,
                                ..Default::default()
                            };
                            assert_eq!(PartitionAttributes::from_bits(a.to_bits()), Ok(a));
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn bit_positions_match_ug1283() {
        let a = PartitionAttributes { trustzone: TrustZone::Secure, ..Default::default() };
        assert_eq!(a.to_bits() & 1, 1);
        let a = PartitionAttributes { endianness: Endianness::Big, ..Default::default() };
        assert_eq!(a.to_bits() & (1 << 18), 1 << 18);
        let a = PartitionAttributes { early_handoff: true, ..Default::default() };
        assert_eq!(a.to_bits() & (1 << 19), 1 << 19);
        let a = PartitionAttributes { vector_location: VectorLocation::Hivec, ..Default::default() };
        assert_eq!(a.to_bits() & (1 << 23), 1 << 23);
        let a = PartitionAttributes { exec_state: ExecState::AArch32, ..Default::default() };
        assert_eq!(a.to_bits() & (1 << 3), 1 << 3);
        let a = PartitionAttributes {
            dest_cpu: DestCpu::Pmu,
            dest_device: DestDevice::Pl,
            checksum: ChecksumType::Sha3,
            exception_level: ExceptionLevel::El0,
            ..Default::default()
        };
        assert_eq!(a.to_bits(), 0x800 | 0x20 | 0x3000);
    }

    #[test]
    fn reserved_values_are_rejected() {
        let e = PartitionAttributes::from_bits(9 << 8).unwrap_err();
        assert_eq!((e.field, e.value, e.max), ("destination cpu", 9, 8));
        let e = PartitionAttributes::from_bits(4 << 4).unwrap_err();
        assert_eq!((e.field, e.value, e.max), ("destination device", 4, 3));
        let e = PartitionAttributes::from_bits(5 << 12).unwrap_err();
        assert_eq!((e.field, e.value, e.max), ("checksum type", 5, 3));
        let e = BootDevice::from_word(12).unwrap_err();
        assert_eq!((e.field, e.value, e.max), ("boot device", 12, 11));
        assert_eq!(e.to_string(), "boot device field (image header table word 0x14) is 12, valid values are 0..=11");
        assert!(ExceptionLevel::from_bits(4).is_err());
    }

    #[test]
    fn boot_header_cpu_select() {
        assert_eq!(BootHeaderAttributes::for_cpu(FsblCpu::A53Single64).0, 0x800);
        assert_eq!(BootHeaderAttributes(0x800).fsbl_cpu(), FsblCpu::A53Single64);
        assert_eq!(BootHeaderAttributes(0xC00).fsbl_cpu(), FsblCpu::R5Dual);
        assert!(BootHeaderAttributes(0xC0).puf_helper_data_in_boot_header());
    }

    #[test]
    fn key_source_round_trips() {
        for w in [0, 0xA5C3_C5A3, 0x3A5C_3C5A, 0xA35C_7CA5, 0x1234_5678] {
            assert_eq!(KeySource::from_word(w).word(), w);
        }
    }
}

//! What goes into a boot image: [`ImageSpec`] and its [`PartitionSpec`]s, plus the
//! [`StandardStack`] convenience builder for FSBL + PMU FW + bitstream + BL31 + R5 +
//! kernel.
//!
//! One [`PartitionSpec`] is one *image* of the boot image format (one image header, UG1283
//! "Zynq UltraScale+ MPSoC Image Header"): an ELF payload expands to one *partition* per
//! loadable segment, all sharing the spec's attributes.

use crate::attributes::{
    BootDevice, ChecksumType, DestCpu, DestDevice, Endianness, ExceptionLevel, ExecState, PartitionOwner, TrustZone,
    VectorLocation,
};
use crate::boot_header::{DEFAULT_SHUTTER, RegisterInit};

/// Where a partition's bytes come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Payload {
    /// An ELF file: one partition per `PT_LOAD` segment with file contents (load address
    /// `p_paddr`), execution address `e_entry` on the first. Boot loader and PMU firmware
    /// ELFs are combined into a single blob.
    Elf(Vec<u8>),
    /// Raw bytes loaded at `load_address`, entered at `exec_address`.
    Raw {
        /// The bytes.
        data: Vec<u8>,
        /// Destination load address.
        load_address: u64,
        /// Destination execution address (0 when not executable).
        exec_address: u64,
    },
    /// A PL bitstream, `.bit` or raw `.bin` (see [`crate::bitstream`]); destination device
    /// PL, load address 0xFFFF_FFFF, execution address 0.
    Bitstream(Vec<u8>),
}

/// The special role a partition plays.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum PartitionRole {
    /// Loaded by the FSBL (or whoever reads the partition headers).
    #[default]
    Normal,
    /// The first stage boot loader, loaded by the boot ROM using the boot header fields.
    /// At most one; it must be the first spec.
    BootLoader,
    /// PMU firmware loaded by the boot ROM: it is stored in front of the boot loader in
    /// the same partition, and described by boot header words 0x34/0x38. At most one;
    /// needs a boot loader. (To have the FSBL load PMU firmware instead, use a
    /// [`PartitionRole::Normal`] spec with destination CPU PMU.)
    PmuFirmware,
}

/// One input file of the boot image and the attributes of its partitions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionSpec {
    /// Image name written into the image header (bootgen uses the file's base name).
    pub name: String,
    /// The bytes.
    pub payload: Payload,
    /// Boot loader, ROM-loaded PMU firmware, or ordinary partition.
    pub role: PartitionRole,
    /// Partition attribute bits 11:8.
    pub dest_cpu: DestCpu,
    /// Partition attribute bits 6:4.
    pub dest_device: DestDevice,
    /// Partition attribute bits 2:1.
    pub exception_level: ExceptionLevel,
    /// Partition attribute bit 0.
    pub trustzone: TrustZone,
    /// Partition attribute bit 3; `None` derives it from the ELF like bootgen (AArch32
    /// for 32-bit ARM ELFs) and uses AArch64 for raw data.
    pub exec_state: Option<ExecState>,
    /// Partition attribute bit 18; `None` takes the ELF's byte order (little for raw).
    pub endianness: Option<Endianness>,
    /// Partition attribute bits 14:12: `None` or `Sha3` (SHA3 is not supported on the
    /// boot loader).
    pub checksum: ChecksumType,
    /// Partition attribute bits 17:16.
    pub owner: PartitionOwner,
    /// Partition attribute bit 19.
    pub early_handoff: bool,
    /// Partition attribute bit 23.
    pub vector_location: VectorLocation,
}

impl PartitionSpec {
    fn with_payload(name: impl Into<String>, payload: Payload) -> Self {
        PartitionSpec {
            name: name.into(),
            payload,
            role: PartitionRole::Normal,
            dest_cpu: DestCpu::None,
            dest_device: DestDevice::Ps,
            exception_level: ExceptionLevel::El3,
            trustzone: TrustZone::NonSecure,
            exec_state: None,
            endianness: None,
            checksum: ChecksumType::None,
            owner: PartitionOwner::Fsbl,
            early_handoff: false,
            vector_location: VectorLocation::Lovec,
        }
    }

    /// An ELF image with bootgen's defaults (PS, no CPU, EL3, non-secure).
    pub fn elf(name: impl Into<String>, elf: Vec<u8>) -> Self {
        Self::with_payload(name, Payload::Elf(elf))
    }

    /// Raw data loaded at `load_address`, entered at `exec_address`.
    pub fn raw(name: impl Into<String>, data: Vec<u8>, load_address: u64, exec_address: u64) -> Self {
        Self::with_payload(name, Payload::Raw { data, load_address, exec_address })
    }

    /// A PL bitstream (`.bit` or `.bin`), destination device PL.
    pub fn bitstream(name: impl Into<String>, bytes: Vec<u8>) -> Self {
        let mut s = Self::with_payload(name, Payload::Bitstream(bytes));
        s.dest_device = DestDevice::Pl;
        s
    }

    /// Sets the role.
    pub fn role(mut self, role: PartitionRole) -> Self {
        self.role = role;
        self
    }

    /// Sets the destination CPU; PMU also sets destination device PMU (as bootgen does).
    pub fn cpu(mut self, cpu: DestCpu) -> Self {
        self.dest_cpu = cpu;
        if cpu == DestCpu::Pmu {
            self.dest_device = DestDevice::Pmu;
        }
        self
    }

    /// Sets the destination device.
    pub fn device(mut self, device: DestDevice) -> Self {
        self.dest_device = device;
        self
    }

    /// Sets the exception level.
    pub fn el(mut self, el: ExceptionLevel) -> Self {
        self.exception_level = el;
        self
    }

    /// Sets the TrustZone state.
    pub fn trustzone(mut self, tz: TrustZone) -> Self {
        self.trustzone = tz;
        self
    }

    /// Forces the execution state.
    pub fn exec_state(mut self, state: ExecState) -> Self {
        self.exec_state = Some(state);
        self
    }

    /// Forces the endianness bit.
    pub fn endianness(mut self, e: Endianness) -> Self {
        self.endianness = Some(e);
        self
    }

    /// Sets the checksum type.
    pub fn checksum(mut self, c: ChecksumType) -> Self {
        self.checksum = c;
        self
    }

    /// Sets the partition owner.
    pub fn owner(mut self, o: PartitionOwner) -> Self {
        self.owner = o;
        self
    }

    /// Sets early handoff.
    pub fn early_handoff(mut self, on: bool) -> Self {
        self.early_handoff = on;
        self
    }

    /// Sets the vector location.
    pub fn vector_location(mut self, v: VectorLocation) -> Self {
        self.vector_location = v;
        self
    }
}

/// Everything needed to write a boot image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageSpec {
    /// The images, in partition order. A boot loader, if any, comes first (a ROM-loaded
    /// PMU firmware spec may come before or after it; it is merged into the boot loader
    /// partition).
    pub partitions: Vec<PartitionSpec>,
    /// Image header table word 0x14.
    pub boot_device: BootDevice,
    /// Register initialization pairs for the boot ROM (at most 256).
    pub register_init: Vec<RegisterInit>,
    /// Boot header word 0x6C.
    pub shutter: u32,
    /// Boot header words 0x70..0x97.
    pub user_defined: [u32; 10],
    /// Boot header words 0x00..0x1F; `None` writes the `b .` filler matching the FSBL CPU.
    pub boot_vectors: Option<[u32; 8]>,
}

impl Default for ImageSpec {
    fn default() -> Self {
        ImageSpec {
            partitions: Vec::new(),
            boot_device: BootDevice::Same,
            register_init: Vec::new(),
            shutter: DEFAULT_SHUTTER,
            user_defined: [0; 10],
            boot_vectors: None,
        }
    }
}

impl ImageSpec {
    /// A spec with these partitions and defaults elsewhere.
    pub fn new(partitions: Vec<PartitionSpec>) -> Self {
        ImageSpec { partitions, ..Default::default() }
    }
}

/// CPU the FSBL runs on in the [`StandardStack`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum FsblTarget {
    /// Cortex-A53 core 0; AArch64 or AArch32 follows the ELF class.
    #[default]
    A53_0,
    /// Cortex-R5 core 0.
    R5_0,
    /// Cortex-R5 lockstep.
    R5Lockstep,
}

/// How the R5 firmware runs in the [`StandardStack`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum R5Mode {
    /// Split mode, core 0.
    #[default]
    Split0,
    /// Split mode, core 1.
    Split1,
    /// Lockstep.
    Lockstep,
}

/// Exception level the A53 kernel is entered at in the [`StandardStack`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum KernelEl {
    /// EL1 (guest/OS).
    El1,
    /// EL2 (hypervisor), the usual choice under ATF.
    #[default]
    El2,
}

/// The usual ZynqMP boot stack; [`StandardStack::to_spec`] turns it into an [`ImageSpec`]
/// in the order FSBL (+ ROM-loaded PMU FW), bitstream, BL31, R5 firmware, kernel.
/// Load and execution addresses come from the ELFs.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct StandardStack {
    /// FSBL ELF (name, bytes).
    pub fsbl: (String, Vec<u8>),
    /// Where the FSBL runs.
    pub fsbl_target: FsblTarget,
    /// PMU firmware, ELF or raw (name, bytes); loaded by the boot ROM.
    pub pmufw: Option<(String, Vec<u8>)>,
    /// PL bitstream, `.bit` or `.bin` (name, bytes).
    pub bitstream: Option<(String, Vec<u8>)>,
    /// ARM Trusted Firmware BL31 ELF (name, bytes): A53-0, EL3, secure, AArch64.
    pub bl31: Option<(String, Vec<u8>)>,
    /// R5 firmware ELF (name, bytes).
    pub r5: Option<(String, Vec<u8>)>,
    /// R5 mode.
    pub r5_mode: R5Mode,
    /// A53 kernel ELF (name, bytes): A53-0, non-secure, AArch64.
    pub kernel: Option<(String, Vec<u8>)>,
    /// Kernel exception level.
    pub kernel_el: KernelEl,
    /// Image header table boot device.
    pub boot_device: BootDevice,
}

impl StandardStack {
    /// A stack with just an FSBL on A53-0.
    pub fn new(fsbl_name: impl Into<String>, fsbl_elf: Vec<u8>) -> Self {
        StandardStack { fsbl: (fsbl_name.into(), fsbl_elf), ..Default::default() }
    }

    /// The equivalent [`ImageSpec`].
    pub fn to_spec(&self) -> ImageSpec {
        let mut parts = Vec::new();
        let (name, elf) = &self.fsbl;
        let fsbl = PartitionSpec::elf(name.clone(), elf.clone()).role(PartitionRole::BootLoader);
        parts.push(match self.fsbl_target {
            FsblTarget::A53_0 => fsbl.cpu(DestCpu::A53_0),
            FsblTarget::R5_0 => fsbl.cpu(DestCpu::R5_0),
            FsblTarget::R5Lockstep => fsbl.cpu(DestCpu::R5Lockstep),
        });
        if let Some((name, bytes)) = &self.pmufw {
            let payload = if crate::elf::is_elf(bytes) {
                Payload::Elf(bytes.clone())
            } else {
                Payload::Raw { data: bytes.clone(), load_address: 0, exec_address: 0 }
            };
            let mut pmu =
                PartitionSpec::with_payload(name.clone(), payload).role(PartitionRole::PmuFirmware).cpu(DestCpu::Pmu);
            pmu.exec_state = Some(ExecState::AArch64);
            parts.push(pmu);
        }
        if let Some((name, bytes)) = &self.bitstream {
            parts.push(PartitionSpec::bitstream(name.clone(), bytes.clone()));
        }
        if let Some((name, elf)) = &self.bl31 {
            parts.push(
                PartitionSpec::elf(name.clone(), elf.clone())
                    .cpu(DestCpu::A53_0)
                    .el(ExceptionLevel::El3)
                    .trustzone(TrustZone::Secure)
                    .exec_state(ExecState::AArch64),
            );
        }
        if let Some((name, elf)) = &self.r5 {
            let cpu = match self.r5_mode {
                R5Mode::Split0 => DestCpu::R5_0,
                R5Mode::Split1 => DestCpu::R5_1,
                R5Mode::Lockstep => DestCpu::R5Lockstep,
            };
            parts.push(PartitionSpec::elf(name.clone(), elf.clone()).cpu(cpu));
        }
        if let Some((name, elf)) = &self.kernel {
            let el = match self.kernel_el {
                KernelEl::El1 => ExceptionLevel::El1,
                KernelEl::El2 => ExceptionLevel::El2,
            };
            parts.push(
                PartitionSpec::elf(name.clone(), elf.clone())
                    .cpu(DestCpu::A53_0)
                    .el(el)
                    .trustzone(TrustZone::NonSecure)
                    .exec_state(ExecState::AArch64),
            );
        }
        ImageSpec { partitions: parts, boot_device: self.boot_device, ..Default::default() }
    }
}

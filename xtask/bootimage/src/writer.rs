//! The boot image writer, [`build`].
//!
//! The layout reproduces bootgen's default output for an unencrypted, unauthenticated
//! ZynqMP image (`Binary::StackAndAlign` with the default 64-byte alignment and
//! `-padimageheader 1`):
//!
//! 1. boot header + register initialization table at 0 (0x8B8 bytes);
//! 2. image header table at 0x8C0;
//! 3. image headers from 0x900, each 64-byte aligned; the last one reserves room for 32
//!    image headers, so the partition headers start at 0x1100;
//! 4. partition headers, 64 bytes each, then the NULL partition header, which reserves
//!    room for 32 partition headers plus one RSA-4096 header authentication certificate
//!    (0xEC0 bytes), so the first partition starts at 0x2800;
//! 5. partitions, each 64-byte aligned; the boot loader partition holds the ROM-loaded
//!    PMU firmware followed by the FSBL;
//! 6. SHA3 checksums of partitions that asked for one, each 64-byte aligned.
//!
//! Gaps are filled with 0xFF (bootgen's default fill byte); the file ends with the last
//! section. The reserved space keeps the partitions in place when authentication
//! certificates or more headers are added later.

use thiserror::Error;

use crate::attributes::{
    BootHeaderAttributes, ChecksumType, DestCpu, Endianness, ExecState, FsblCpu, PartitionAttributes,
};
use crate::bitstream::{self, BitstreamError, PL_LOAD_ADDRESS};
use crate::boot_header::{BOOT_HEADER_LEN, BootHeader, REGISTER_INIT_ENTRIES, RegisterInit};
use crate::checksum::{SHA3_DIGEST_LEN, sha3_384};
use crate::elf::{ElfError, ElfImage};
use crate::image_header::{
    IMAGE_HEADER_TABLE_LEN, IMAGE_HEADER_TABLE_VERSION, ImageHeader, ImageHeaderError, ImageHeaderTable, validate_name,
};
use crate::partition_header::{PARTITION_HEADER_LEN, PartitionHeader};
use crate::spec::{ImageSpec, PartitionRole, PartitionSpec, Payload};

/// Alignment of every section (bootgen's default alignment).
pub const SECTION_ALIGN: u64 = 64;
/// Maximum number of partitions (and so of images): `XIH_MAX_PARTITIONS`, bootgen
/// `MAX_NUM_PARTITIONS_ZYNQMP`.
pub const MAX_PARTITIONS: usize = 32;
/// Size of the RSA-4096 authentication certificate bootgen reserves after the partition
/// header table (`sizeof(AuthCertificate4096Structure)`).
pub const AUTH_CERT_RESERVE: u64 = 0xEC0;
/// Largest PMU firmware the boot ROM loads (bootgen `PMU_MAX_SIZE`, 128 KiB of PMU RAM).
pub const PMU_FW_MAX_LEN: usize = 0x2_0000;

/// Errors building an image. `index` and `name` identify the [`PartitionSpec`].
#[derive(Debug, Error)]
pub enum BuildError {
    /// The spec has no partitions.
    #[error("the image spec has no partitions")]
    NoPartitions,
    /// More than 32 images or partitions.
    #[error("{what}: {count} exceeds the maximum of {max}")]
    TooMany {
        /// "images", "partitions" or "register init entries".
        what: &'static str,
        /// How many there are.
        count: usize,
        /// The maximum.
        max: usize,
    },
    /// An image name is invalid.
    #[error("partition spec {index}: {source}")]
    Name {
        /// Spec index.
        index: usize,
        /// The problem.
        source: ImageHeaderError,
    },
    /// The ELF could not be used.
    #[error("partition spec {index} ({name}): {source}")]
    Elf {
        /// Spec index.
        index: usize,
        /// Image name.
        name: String,
        /// The problem.
        source: ElfError,
    },
    /// The bitstream could not be used.
    #[error("partition spec {index} ({name}): {source}")]
    Bitstream {
        /// Spec index.
        index: usize,
        /// Image name.
        name: String,
        /// The problem.
        source: BitstreamError,
    },
    /// Two specs claim the same unique role.
    #[error("partition specs {first} and {second} are both marked {role}; only one is allowed")]
    DuplicateRole {
        /// "boot loader" or "PMU firmware".
        role: &'static str,
        /// First spec index.
        first: usize,
        /// Second spec index.
        second: usize,
    },
    /// The boot loader is not the first image.
    #[error(
        "partition spec {index} is the boot loader but is not the first image; the FSBL \
         expects its own partition to be partition 0"
    )]
    BootLoaderNotFirst {
        /// Spec index.
        index: usize,
    },
    /// ROM-loaded PMU firmware without a boot loader to attach it to.
    #[error("partition spec {index} is ROM-loaded PMU firmware, but there is no boot loader")]
    PmuFirmwareWithoutBootLoader {
        /// Spec index.
        index: usize,
    },
    /// The boot loader's CPU cannot be selected in the boot header.
    #[error(
        "boot loader ({name}) has destination cpu {cpu} ({exec_state}); the boot ROM can only \
         start A53-0 (AArch64 or AArch32), R5-0 or the R5 lockstep pair"
    )]
    BootLoaderCpu {
        /// Image name.
        name: String,
        /// Its destination CPU.
        cpu: DestCpu,
        /// Its execution state.
        exec_state: ExecState,
    },
    /// A bitstream cannot be the boot loader or PMU firmware.
    #[error("partition spec {index} ({name}): a bitstream cannot be {role}")]
    BitstreamRole {
        /// Spec index.
        index: usize,
        /// Image name.
        name: String,
        /// The role.
        role: &'static str,
    },
    /// PMU firmware larger than PMU RAM.
    #[error("PMU firmware ({name}) is {len:#x} bytes; the boot ROM loads at most {max:#x}")]
    PmuFirmwareTooLarge {
        /// Image name.
        name: String,
        /// Its length.
        len: usize,
        /// The maximum.
        max: usize,
    },
    /// A payload without bytes.
    #[error("partition spec {index} ({name}): the payload is empty")]
    EmptyPayload {
        /// Spec index.
        index: usize,
        /// Image name.
        name: String,
    },
    /// A load address that is not word aligned.
    #[error("partition spec {index} ({name}): load address {address:#x} is not 4-byte aligned")]
    UnalignedLoadAddress {
        /// Spec index.
        index: usize,
        /// Image name.
        name: String,
        /// The address.
        address: u64,
    },
    /// A checksum type this writer cannot produce for this partition.
    #[error("partition spec {index} ({name}): checksum type {checksum} is not supported: {reason}")]
    UnsupportedChecksum {
        /// Spec index.
        index: usize,
        /// Image name.
        name: String,
        /// The requested type.
        checksum: ChecksumType,
        /// Why.
        reason: &'static str,
    },
    /// A value does not fit its 32-bit field.
    #[error("{what} {value:#x} does not fit in 32 bits")]
    TooLarge {
        /// Which value.
        what: &'static str,
        /// The value.
        value: u64,
    },
}

/// One partition ready to be laid out.
struct PlannedPartition {
    data: Vec<u8>,
    load: u64,
    exec: u64,
    attributes: PartitionAttributes,
    sha3: bool,
}

/// One image (image header) ready to be laid out.
struct PlannedImage {
    name: String,
    partitions: Vec<PlannedPartition>,
}

/// Boot loader facts for the boot header.
struct BootLoaderInfo {
    cpu: FsblCpu,
    exec: u64,
    pmu_len: usize,
    fsbl_len: usize,
}

fn pad_to_word(mut data: Vec<u8>) -> Vec<u8> {
    data.resize(data.len().next_multiple_of(4), 0);
    data
}

/// Bytes to load at an address, before layout.
struct Chunk {
    load: u64,
    exec: u64,
    data: Vec<u8>,
}

/// A resolved payload: its chunks plus the defaults for execution state and endianness.
struct Resolved {
    chunks: Vec<Chunk>,
    exec_state: ExecState,
    endianness: Endianness,
}

/// Resolves a spec's payload to chunks plus the ELF defaults for execution state and
/// endianness. Boot loader / PMU firmware ELFs are combined.
fn payload_chunks(index: usize, spec: &PartitionSpec, combine: bool) -> Result<Resolved, BuildError> {
    let elf_err = |source| BuildError::Elf { index, name: spec.name.clone(), source };
    match &spec.payload {
        Payload::Elf(bytes) => {
            let elf = ElfImage::parse(bytes).map_err(elf_err)?;
            let chunks = if combine {
                let (load, data) = elf.combined().map_err(elf_err)?;
                vec![Chunk { load, exec: elf.entry, data }]
            } else {
                elf.segments
                    .iter()
                    .enumerate()
                    .map(|(i, s)| Chunk {
                        load: s.paddr,
                        exec: if i == 0 { elf.entry } else { 0 },
                        data: s.data.clone(),
                    })
                    .collect()
            };
            Ok(Resolved { chunks, exec_state: elf.exec_state(), endianness: elf.endianness })
        }
        Payload::Raw { data, load_address, exec_address } => Ok(Resolved {
            chunks: vec![Chunk { load: *load_address, exec: *exec_address, data: data.clone() }],
            exec_state: ExecState::AArch64,
            endianness: Endianness::Little,
        }),
        Payload::Bitstream(bytes) => {
            let data = bitstream::partition_data(bytes).map_err(|source| BuildError::Bitstream {
                index,
                name: spec.name.clone(),
                source,
            })?;
            Ok(Resolved {
                chunks: vec![Chunk { load: PL_LOAD_ADDRESS, exec: 0, data }],
                exec_state: ExecState::AArch64,
                endianness: Endianness::Little,
            })
        }
    }
}

fn attributes_of(spec: &PartitionSpec, exec_state: ExecState, endianness: Endianness) -> PartitionAttributes {
    PartitionAttributes {
        trustzone: spec.trustzone,
        exception_level: spec.exception_level,
        exec_state: spec.exec_state.unwrap_or(exec_state),
        dest_device: spec.dest_device,
        encrypted: false,
        dest_cpu: spec.dest_cpu,
        checksum: spec.checksum,
        rsa_auth_cert: false,
        owner: spec.owner,
        endianness: spec.endianness.unwrap_or(endianness),
        early_handoff: spec.early_handoff,
        auth_block: 0,
        vector_location: spec.vector_location,
        reserved: 0,
    }
}

/// Checks roles and returns (boot loader index, PMU firmware index).
fn check_roles(spec: &ImageSpec) -> Result<(Option<usize>, Option<usize>), BuildError> {
    let mut boot_loader = None;
    let mut pmu = None;
    for (i, p) in spec.partitions.iter().enumerate() {
        let (slot, role) = match p.role {
            PartitionRole::Normal => continue,
            PartitionRole::BootLoader => (&mut boot_loader, "boot loader"),
            PartitionRole::PmuFirmware => (&mut pmu, "PMU firmware"),
        };
        if let Some(first) = *slot {
            return Err(BuildError::DuplicateRole { role, first, second: i });
        }
        if matches!(p.payload, Payload::Bitstream(_)) {
            return Err(BuildError::BitstreamRole { index: i, name: p.name.clone(), role });
        }
        *slot = Some(i);
    }
    if let Some(b) = boot_loader {
        // Only a ROM-loaded PMU firmware spec may precede the boot loader.
        if spec.partitions[..b].iter().any(|p| p.role != PartitionRole::PmuFirmware) {
            return Err(BuildError::BootLoaderNotFirst { index: b });
        }
    }
    if let (Some(p), None) = (pmu, boot_loader) {
        return Err(BuildError::PmuFirmwareWithoutBootLoader { index: p });
    }
    Ok((boot_loader, pmu))
}

fn fsbl_cpu(name: &str, attrs: &PartitionAttributes) -> Result<FsblCpu, BuildError> {
    match (attrs.dest_cpu, attrs.exec_state) {
        (DestCpu::A53_0, ExecState::AArch64) => Ok(FsblCpu::A53Single64),
        (DestCpu::A53_0, ExecState::AArch32) => Ok(FsblCpu::A53Single32),
        (DestCpu::R5_0, _) => Ok(FsblCpu::R5Single),
        (DestCpu::R5Lockstep, _) => Ok(FsblCpu::R5Dual),
        (cpu, exec_state) => Err(BuildError::BootLoaderCpu { name: name.to_string(), cpu, exec_state }),
    }
}

fn plan(spec: &ImageSpec) -> Result<(Vec<PlannedImage>, Option<BootLoaderInfo>), BuildError> {
    if spec.partitions.is_empty() {
        return Err(BuildError::NoPartitions);
    }
    if spec.register_init.len() > REGISTER_INIT_ENTRIES {
        return Err(BuildError::TooMany {
            what: "register init entries",
            count: spec.register_init.len(),
            max: REGISTER_INIT_ENTRIES,
        });
    }
    let (boot_loader, pmu) = check_roles(spec)?;
    for (index, p) in spec.partitions.iter().enumerate() {
        validate_name(&p.name).map_err(|source| BuildError::Name { index, source })?;
    }

    let pmu_data = match pmu {
        Some(i) => {
            let p = &spec.partitions[i];
            let resolved = payload_chunks(i, p, true)?;
            let data = pad_to_word(resolved.chunks.into_iter().next().map(|c| c.data).unwrap_or_default());
            if data.is_empty() {
                return Err(BuildError::EmptyPayload { index: i, name: p.name.clone() });
            }
            if data.len() > PMU_FW_MAX_LEN {
                return Err(BuildError::PmuFirmwareTooLarge {
                    name: p.name.clone(),
                    len: data.len(),
                    max: PMU_FW_MAX_LEN,
                });
            }
            Some(data)
        }
        None => None,
    };

    let mut images = Vec::new();
    let mut info = None;
    for (index, p) in spec.partitions.iter().enumerate() {
        if p.role == PartitionRole::PmuFirmware {
            continue;
        }
        let is_boot_loader = Some(index) == boot_loader;
        let resolved = payload_chunks(index, p, is_boot_loader)?;
        let attributes = attributes_of(p, resolved.exec_state, resolved.endianness);
        let sha3 = match p.checksum {
            ChecksumType::None => false,
            ChecksumType::Sha3 if !is_boot_loader => true,
            checksum => {
                return Err(BuildError::UnsupportedChecksum {
                    index,
                    name: p.name.clone(),
                    checksum,
                    reason: if is_boot_loader {
                        "the boot loader's integrity digest (boot header bits 9:8) is not written by this tool"
                    } else {
                        "the ZynqMP FSBL only accepts none or SHA3"
                    },
                });
            }
        };
        let mut partitions = Vec::new();
        for Chunk { load, exec, data } in resolved.chunks {
            if data.is_empty() {
                return Err(BuildError::EmptyPayload { index, name: p.name.clone() });
            }
            if load % 4 != 0 && load != PL_LOAD_ADDRESS {
                return Err(BuildError::UnalignedLoadAddress { index, name: p.name.clone(), address: load });
            }
            let mut data = pad_to_word(data);
            if is_boot_loader {
                let cpu = fsbl_cpu(&p.name, &attributes)?;
                let pmu = pmu_data.clone().unwrap_or_default();
                info = Some(BootLoaderInfo { cpu, exec, pmu_len: pmu.len(), fsbl_len: data.len() });
                let mut combined = pmu;
                combined.extend_from_slice(&data);
                data = combined;
            }
            partitions.push(PlannedPartition { data, load, exec, attributes, sha3 });
        }
        images.push(PlannedImage { name: p.name.clone(), partitions });
    }
    let partition_count: usize = images.iter().map(|i| i.partitions.len()).sum();
    if images.len() > MAX_PARTITIONS {
        return Err(BuildError::TooMany { what: "images", count: images.len(), max: MAX_PARTITIONS });
    }
    if partition_count > MAX_PARTITIONS {
        return Err(BuildError::TooMany { what: "partitions", count: partition_count, max: MAX_PARTITIONS });
    }
    Ok((images, info))
}

/// A section to place: its length, the space it reserves from its start, and whether
/// it continues the previous one (bootgen's `Section::continuation`).
struct Section {
    len: u64,
    reserve: u64,
    continuation: bool,
}

/// bootgen's `Binary::StackAndAlign`: returns each section's address.
fn stack(sections: &[Section]) -> Vec<u64> {
    let mut running = 0u64;
    let mut reserved = 0u64;
    let mut out = Vec::with_capacity(sections.len());
    for s in sections {
        if !s.continuation && running < reserved {
            running = reserved;
        }
        let addr = running;
        if s.reserve != 0 {
            reserved = addr + s.reserve;
        }
        running = (addr + s.len).next_multiple_of(SECTION_ALIGN);
        out.push(addr);
    }
    out
}

fn to_u32(what: &'static str, value: u64) -> Result<u32, BuildError> {
    u32::try_from(value).map_err(|_| BuildError::TooLarge { what, value })
}

fn word(what: &'static str, byte_offset: u64) -> Result<u32, BuildError> {
    to_u32(what, byte_offset / 4)
}

/// Where every section of the image goes (bootgen's order), from the plan.
struct Layout {
    /// Each section's address, in the order below.
    addrs: Vec<u64>,
    /// Index in `addrs` of the first image header, partition header, null partition header,
    /// partition data and checksum.
    ih_first: usize,
    ph_first: usize,
    null_ph: usize,
    data_first: usize,
    checksum_first: usize,
    total_len: u64,
}

impl Layout {
    fn new(images: &[PlannedImage], image_headers: &[ImageHeader], checksums: usize) -> Result<Self, BuildError> {
        let partition_count: usize = images.iter().map(|i| i.partitions.len()).sum();
        let mut sections = vec![
            Section { len: BOOT_HEADER_LEN as u64, reserve: 0, continuation: false },
            Section { len: IMAGE_HEADER_TABLE_LEN as u64, reserve: 0, continuation: false },
        ];
        let ih_first = sections.len();
        for (i, ih) in image_headers.iter().enumerate() {
            let last = i + 1 == image_headers.len();
            sections.push(Section {
                len: ih.encoded_len() as u64,
                // `-padimageheader`: the last image header reserves room for 32 of them.
                reserve: if last && image_headers.len() < MAX_PARTITIONS {
                    (1 + (MAX_PARTITIONS - image_headers.len()) as u64) * SECTION_ALIGN
                } else {
                    0
                },
                continuation: false,
            });
        }
        let ph_first = sections.len();
        for _ in 0..partition_count {
            sections.push(Section { len: PARTITION_HEADER_LEN as u64, reserve: 0, continuation: false });
        }
        let null_ph = sections.len();
        let pad = if partition_count < MAX_PARTITIONS {
            (1 + (MAX_PARTITIONS - partition_count) as u64) * SECTION_ALIGN
        } else {
            0
        };
        sections.push(Section {
            len: PARTITION_HEADER_LEN as u64,
            reserve: pad + AUTH_CERT_RESERVE,
            continuation: false,
        });
        let data_first = sections.len();
        for img in images {
            for (j, p) in img.partitions.iter().enumerate() {
                sections.push(Section { len: p.data.len() as u64, reserve: 0, continuation: j != 0 });
            }
        }
        let checksum_first = sections.len();
        for _ in 0..checksums {
            sections.push(Section { len: SHA3_DIGEST_LEN as u64, reserve: 0, continuation: false });
        }
        let addrs = stack(&sections);
        let total_len = sections.last().zip(addrs.last()).map(|(s, a)| a + s.len).unwrap_or(0);
        to_u32("image size", total_len)?;
        Ok(Self { addrs, ih_first, ph_first, null_ph, data_first, checksum_first, total_len })
    }
}

/// Every partition of every image in order: (image index, index in the image, partition).
type Flat<'a> = Vec<(usize, usize, &'a PlannedPartition)>;

/// The partition headers, linked to each other, their data, checksums and images; and the
/// address of each image's first partition header.
fn partition_headers(
    images: &[PlannedImage],
    flat: &Flat<'_>,
    digests: &[Option<[u8; SHA3_DIGEST_LEN]>],
    layout: &Layout,
) -> Result<(Vec<PartitionHeader>, Vec<u64>), BuildError> {
    let addrs = &layout.addrs;
    let mut checksum_sections = addrs[layout.checksum_first..].iter();
    let mut partition_headers = Vec::with_capacity(flat.len());
    let mut image_first_ph = vec![0u64; images.len()];
    for (k, &(i, j, p)) in flat.iter().enumerate() {
        let ph_addr = addrs[layout.ph_first + k];
        if j == 0 {
            image_first_ph[i] = ph_addr;
        }
        let words = word("partition length", p.data.len() as u64)?;
        let next =
            if k + 1 < flat.len() { word("partition header offset", addrs[layout.ph_first + k + 1])? } else { 0 };
        let checksum_word_offset = match digests[k] {
            Some(_) => word("checksum offset", *checksum_sections.next().unwrap_or(&0))?,
            None => 0,
        };
        let mut ph = PartitionHeader {
            encrypted_word_len: words,
            unencrypted_word_len: words,
            total_word_len: words,
            next_partition_header_word_offset: next,
            exec_address: if j == 0 { p.exec } else { 0 },
            load_address: p.load,
            data_word_offset: word("partition offset", addrs[layout.data_first + k])?,
            attributes: p.attributes,
            section_count: if j == 0 { images[i].partitions.len() as u32 } else { 0 },
            checksum_word_offset,
            image_header_word_offset: word("image header offset", addrs[layout.ih_first + i])?,
            auth_cert_word_offset: 0,
            partition_number: k as u32,
            checksum: 0,
        };
        ph.update_checksum();
        partition_headers.push(ph);
    }
    Ok((partition_headers, image_first_ph))
}

/// The boot header: where the table and the partition headers are, and the boot loader the
/// boot ROM loads, if there is one.
fn boot_header(
    spec: &ImageSpec,
    boot_loader: Option<&BootLoaderInfo>,
    layout: &Layout,
) -> Result<BootHeader, BuildError> {
    let mut register_init = spec.register_init.clone();
    register_init.resize(REGISTER_INIT_ENTRIES, RegisterInit::UNUSED);
    let cpu = boot_loader.map_or(FsblCpu::R5Single, |b| b.cpu);
    let mut bh = BootHeader {
        boot_vectors: spec.boot_vectors.unwrap_or([cpu.jump_to_self(); 8]),
        attributes: BootHeaderAttributes::for_cpu(cpu),
        shutter: spec.shutter,
        user_defined: spec.user_defined,
        image_header_table_offset: to_u32("image header table offset", layout.addrs[1])?,
        partition_header_table_offset: to_u32("partition header offset", layout.addrs[layout.ph_first])?,
        register_init,
        ..Default::default()
    };
    if let Some(b) = boot_loader {
        bh.fsbl_exec_address = to_u32("FSBL execution address", b.exec)?;
        bh.source_offset = to_u32("FSBL source offset", layout.addrs[layout.data_first])?;
        bh.pmu_fw_len = b.pmu_len as u32;
        bh.total_pmu_fw_len = b.pmu_len as u32;
        bh.fsbl_len = to_u32("FSBL length", b.fsbl_len as u64)?;
        bh.total_fsbl_len = bh.fsbl_len;
    }
    bh.update_checksum();
    Ok(bh)
}

/// Writes a complete boot image for `spec`.
///
/// The result parses with [`crate::parse`] and follows the layout described in the
/// module documentation and `FORMAT.md`.
pub fn build(spec: &ImageSpec) -> Result<Vec<u8>, BuildError> {
    let (images, boot_loader) = plan(spec)?;
    let partition_count: usize = images.iter().map(|i| i.partitions.len()).sum();

    // Image header skeletons (offsets filled in later) give the section lengths.
    let mut image_headers: Vec<ImageHeader> = images
        .iter()
        .map(|img| ImageHeader {
            next_image_header_word_offset: 0,
            partition_header_word_offset: 0,
            reserved: 0,
            partition_count: img.partitions.len() as u32,
            name: img.name.clone(),
        })
        .collect();
    let digests: Vec<Option<[u8; SHA3_DIGEST_LEN]>> =
        images.iter().flat_map(|img| img.partitions.iter()).map(|p| p.sha3.then(|| sha3_384(&p.data))).collect();
    let layout = Layout::new(&images, &image_headers, digests.iter().flatten().count())?;
    let addrs = &layout.addrs;

    let flat: Flat<'_> = images
        .iter()
        .enumerate()
        .flat_map(|(i, img)| img.partitions.iter().enumerate().map(move |(j, p)| (i, j, p)))
        .collect();
    let (partition_headers, image_first_ph) = partition_headers(&images, &flat, &digests, &layout)?;

    // Image headers.
    for (i, ih) in image_headers.iter_mut().enumerate() {
        ih.partition_header_word_offset = word("partition header offset", image_first_ph[i])?;
        ih.next_image_header_word_offset =
            if i + 1 < images.len() { word("image header offset", addrs[layout.ih_first + i + 1])? } else { 0 };
    }

    // Image header table.
    let mut iht = ImageHeaderTable {
        version: IMAGE_HEADER_TABLE_VERSION,
        partition_count: partition_count as u32,
        first_partition_header_word_offset: word("partition header offset", addrs[layout.ph_first])?,
        first_image_header_word_offset: word("image header offset", addrs[layout.ih_first])?,
        header_auth_cert_word_offset: 0,
        boot_device: spec.boot_device.word(),
        reserved: [0; 9],
        checksum: 0,
    };
    iht.update_checksum();
    let bh = boot_header(spec, boot_loader.as_ref(), &layout)?;

    // Emit.
    let mut out = vec![0xFFu8; layout.total_len as usize];
    let mut put = |addr: u64, bytes: &[u8]| {
        let a = addr as usize;
        out[a..a + bytes.len()].copy_from_slice(bytes);
    };
    put(addrs[0], &bh.encode());
    put(addrs[1], &iht.encode());
    for (i, ih) in image_headers.iter().enumerate() {
        put(addrs[layout.ih_first + i], &ih.encode());
    }
    for (k, ph) in partition_headers.iter().enumerate() {
        put(addrs[layout.ph_first + k], &ph.encode());
    }
    put(addrs[layout.null_ph], &PartitionHeader::null_header_bytes());
    for (k, &(_, _, p)) in flat.iter().enumerate() {
        put(addrs[layout.data_first + k], &p.data);
    }
    for (n, digest) in digests.iter().flatten().enumerate() {
        put(addrs[layout.checksum_first + n], digest);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stacking_reproduces_bootgen_offsets() {
        // Three images with one partition each (FSBL, BL31, U-Boot): bootgen puts the
        // image header table at 0x8C0, image headers at 0x900/0x940/0x980, partition
        // headers from 0x1100 and the FSBL at 0x2800.
        let mut s = vec![
            Section { len: 0x8B8, reserve: 0, continuation: false },
            Section { len: 64, reserve: 0, continuation: false },
            Section { len: 36, reserve: 0, continuation: false },
            Section { len: 28, reserve: 0, continuation: false },
            Section { len: 32, reserve: 30 * 64, continuation: false },
        ];
        for _ in 0..3 {
            s.push(Section { len: 64, reserve: 0, continuation: false });
        }
        s.push(Section { len: 64, reserve: 30 * 64 + 0xEC0, continuation: false });
        s.push(Section { len: 0x3_8EA0, reserve: 0, continuation: false });
        s.push(Section { len: 0xC778, reserve: 0, continuation: false });
        let a = stack(&s);
        assert_eq!(&a[1..5], &[0x8C0, 0x900, 0x940, 0x980]);
        assert_eq!(&a[5..9], &[0x1100, 0x1140, 0x1180, 0x11C0]);
        assert_eq!(a[9], 0x2800);
        assert_eq!(a[10], 0x3_B6C0);
    }
}

//! Native writer and reader for Xilinx Zynq UltraScale+ MPSoC (ZynqMP) boot images
//! (`BOOT.BIN`), so that no bootgen, Vivado or SDK is needed, plus SD card images.
//!
//! The format follows Xilinx UG1283 (Bootgen User Guide, "Zynq UltraScale+ MPSoC Boot
//! Image Format") and UG1085 (Zynq UltraScale+ Device TRM, chapter 11 "Boot and
//! Configuration"); where the manuals are silent, the behaviour of bootgen and of the
//! FSBL's image header parser was matched. `FORMAT.md` documents the byte layout.
//!
//! * [`build`] writes an image from an [`ImageSpec`] (or a [`StandardStack`], or a TOML
//!   [`config::BootConfig`]).
//! * [`parse`] reads any ZynqMP boot image, verifying every checksum and the structure;
//!   `Display` on the resulting [`BootImage`] prints a full dump.
//! * [`sdimage`] wraps a boot image into an MBR + FAT32 SD card image.
//!
//! ```
//! use bootimage::{PartitionSpec, ImageSpec, PartitionRole, DestCpu, build, parse};
//!
//! // A raw "FSBL" and a raw payload; real images use ELF files (`PartitionSpec::elf`).
//! let fsbl = PartitionSpec::raw("fsbl.bin", vec![0; 256], 0xFFFC_0000, 0xFFFC_0000)
//!     .role(PartitionRole::BootLoader)
//!     .cpu(DestCpu::A53_0);
//! let app = PartitionSpec::raw("app.bin", vec![1; 64], 0x10_0000, 0x10_0000).cpu(DestCpu::A53_0);
//! let image = build(&ImageSpec::new(vec![fsbl, app]))?;
//! let parsed = parse(&image)?;
//! assert_eq!(parsed.partitions.len(), 2);
//! assert_eq!(parsed.boot_header.source_offset, 0x2800);
//! println!("{parsed}");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod attributes;
pub mod bitstream;
pub mod boot_header;
pub mod checksum;
pub mod config;
mod dump;
pub mod elf;
pub mod image_header;
pub mod partition_header;
pub mod reader;
pub mod sdimage;
pub mod spec;
pub mod writer;

pub use attributes::{
    BootDevice, BootHeaderAttributes, ChecksumType, DestCpu, DestDevice, Endianness, ExceptionLevel, ExecState,
    FsblCpu, KeySource, PartitionAttributes, PartitionOwner, TrustZone, VectorLocation,
};
pub use boot_header::{BootHeader, RegisterInit};
pub use image_header::{ImageHeader, ImageHeaderTable};
pub use partition_header::PartitionHeader;
pub use reader::{BootImage, DataChecksum, ParseError, ParsedImage, ParsedPartition, parse};
pub use spec::{FsblTarget, ImageSpec, KernelEl, PartitionRole, PartitionSpec, Payload, R5Mode, StandardStack};
pub use writer::{BuildError, build};

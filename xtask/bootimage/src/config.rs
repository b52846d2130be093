//! TOML description of a boot image, mapped onto [`ImageSpec`].
//!
//! ```toml
//! boot_device = "same"          # optional, image header table word 0x14
//!
//! [[partition]]
//! file = "fsbl.elf"
//! kind = "fsbl"                 # fsbl | pmufw | bitstream | bl31 | r5 | kernel | data
//!
//! [[partition]]
//! file = "pmufw.elf"
//! kind = "pmufw"                # loaded by the boot ROM (pmufw_loader = "rom", default)
//!
//! [[partition]]
//! file = "system.bit"
//! kind = "bitstream"
//!
//! [[partition]]
//! file = "bl31.elf"
//! kind = "bl31"
//!
//! [[partition]]
//! file = "r5.elf"
//! kind = "r5"
//! cpu = "r5-lockstep"           # default r5-0
//!
//! [[partition]]
//! file = "kernel.elf"
//! kind = "kernel"
//! el = "el1"                    # default el2
//!
//! [[partition]]
//! file = "table.bin"
//! kind = "data"
//! load = 0x1000_0000            # required for raw (non-ELF) data
//! ```
//!
//! Every key of a `[[partition]]` other than `file` and `kind` overrides the kind's
//! default: `name`, `cpu`, `device`, `el`, `trustzone`, `exec_state`, `endianness`,
//! `checksum`, `owner`, `early_handoff`, `vector_location`, `load`, `entry`,
//! `pmufw_loader`. Unknown keys are errors.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use thiserror::Error;

use crate::attributes::{
    BootDevice, ChecksumType, DestCpu, DestDevice, Endianness, ExceptionLevel, ExecState, PartitionOwner, TrustZone,
    VectorLocation,
};
use crate::boot_header::{DEFAULT_SHUTTER, RegisterInit};
use crate::elf::is_elf;
use crate::spec::{ImageSpec, PartitionRole, PartitionSpec, Payload};

/// Errors reading a TOML description.
#[derive(Debug, Error)]
pub enum ConfigError {
    /// The TOML does not parse or does not match the schema.
    #[error("invalid boot image description: {0}")]
    Toml(#[from] toml::de::Error),
    /// A file could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The path.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// A key that does not apply to this partition.
    #[error("partition {index} ({file}): {reason}")]
    Invalid {
        /// Index in the `[[partition]]` list.
        index: usize,
        /// Its `file`.
        file: String,
        /// What is wrong.
        reason: String,
    },
}

/// What a partition is; selects the defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// First stage boot loader: boot loader role, A53-0, EL3, non-secure.
    Fsbl,
    /// PMU firmware: loaded by the boot ROM by default, PMU.
    Pmufw,
    /// PL bitstream (`.bit`/`.bin`): destination device PL.
    Bitstream,
    /// ARM Trusted Firmware BL31: A53-0, EL3, secure, AArch64.
    Bl31,
    /// R5 firmware: R5-0.
    R5,
    /// A53 kernel/OS: A53-0, EL2, non-secure, AArch64.
    Kernel,
    /// Anything else: PS, no CPU, EL3, non-secure.
    Data,
}

/// Who loads the PMU firmware.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum PmuFwLoader {
    /// The boot ROM, from the boot header (stored in front of the FSBL).
    #[default]
    Rom,
    /// The FSBL, as an ordinary partition with destination CPU PMU.
    Fsbl,
}

/// One register initialization pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RegisterInitConfig {
    /// Register address.
    pub address: u32,
    /// Value.
    pub value: u32,
}

/// One `[[partition]]` entry.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PartitionConfig {
    /// Input file, relative to the description's directory.
    pub file: PathBuf,
    /// What it is.
    pub kind: Kind,
    /// Image name (default: the file's base name).
    pub name: Option<String>,
    /// Destination CPU.
    pub cpu: Option<DestCpu>,
    /// Destination device.
    pub device: Option<DestDevice>,
    /// Exception level.
    pub el: Option<ExceptionLevel>,
    /// TrustZone state.
    pub trustzone: Option<TrustZone>,
    /// Execution state (default: from the ELF).
    pub exec_state: Option<ExecState>,
    /// Endianness (default: from the ELF).
    pub endianness: Option<Endianness>,
    /// Data checksum.
    pub checksum: Option<ChecksumType>,
    /// Partition owner.
    pub owner: Option<PartitionOwner>,
    /// Early handoff.
    pub early_handoff: Option<bool>,
    /// Vector location.
    pub vector_location: Option<VectorLocation>,
    /// Load address (raw data only).
    pub load: Option<u64>,
    /// Execution address (raw data only).
    pub entry: Option<u64>,
    /// Who loads PMU firmware (kind = "pmufw" only).
    pub pmufw_loader: Option<PmuFwLoader>,
}

/// The whole description.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BootConfig {
    /// Image header table boot device.
    #[serde(default)]
    pub boot_device: BootDevice,
    /// Boot header shutter value.
    pub shutter: Option<u32>,
    /// Register initialization pairs.
    #[serde(default)]
    pub register_init: Vec<RegisterInitConfig>,
    /// The partitions, in order.
    #[serde(rename = "partition", default)]
    pub partitions: Vec<PartitionConfig>,
}

impl BootConfig {
    /// Parses a TOML description.
    pub fn from_toml_str(text: &str) -> Result<Self, ConfigError> {
        Ok(toml::from_str(text)?)
    }

    /// Builds the spec, reading files relative to `base_dir`.
    pub fn to_spec(&self, base_dir: &Path) -> Result<ImageSpec, ConfigError> {
        self.to_spec_with(|p| {
            let path = base_dir.join(p);
            std::fs::read(&path).map_err(|source| ConfigError::Io { path, source })
        })
    }

    /// Builds the spec, reading each `file` with `read` (useful for tests and for
    /// callers with their own file lookup).
    pub fn to_spec_with(
        &self,
        mut read: impl FnMut(&Path) -> Result<Vec<u8>, ConfigError>,
    ) -> Result<ImageSpec, ConfigError> {
        let mut partitions = Vec::with_capacity(self.partitions.len());
        for (index, p) in self.partitions.iter().enumerate() {
            let bytes = read(&p.file)?;
            partitions.push(p.to_partition_spec(index, bytes)?);
        }
        Ok(ImageSpec {
            partitions,
            boot_device: self.boot_device,
            register_init: self
                .register_init
                .iter()
                .map(|r| RegisterInit { address: r.address, value: r.value })
                .collect(),
            shutter: self.shutter.unwrap_or(DEFAULT_SHUTTER),
            ..Default::default()
        })
    }
}

impl PartitionConfig {
    fn to_partition_spec(&self, index: usize, bytes: Vec<u8>) -> Result<PartitionSpec, ConfigError> {
        let invalid = |reason: &str| ConfigError::Invalid {
            index,
            file: self.file.display().to_string(),
            reason: reason.to_string(),
        };
        let name = match &self.name {
            Some(n) => n.clone(),
            None => self
                .file
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .ok_or_else(|| invalid("the file has no base name; set `name`"))?,
        };
        if self.pmufw_loader.is_some() && self.kind != Kind::Pmufw {
            return Err(invalid("`pmufw_loader` only applies to kind = \"pmufw\""));
        }
        let elf = is_elf(&bytes);
        let rom_pmufw = self.kind == Kind::Pmufw && self.pmufw_loader.unwrap_or_default() == PmuFwLoader::Rom;
        let mut spec = if self.kind == Kind::Bitstream {
            if self.load.is_some() || self.entry.is_some() {
                return Err(invalid("`load`/`entry` do not apply to bitstreams"));
            }
            PartitionSpec::bitstream(name, bytes)
        } else if elf {
            if self.load.is_some() || self.entry.is_some() {
                return Err(invalid(
                    "`load`/`entry` only apply to raw (non-ELF) data; ELF addresses come from the file",
                ));
            }
            PartitionSpec::elf(name, bytes)
        } else {
            let load = match (self.load, rom_pmufw) {
                (Some(l), _) => l,
                (None, true) => 0,
                (None, false) => {
                    return Err(invalid("raw (non-ELF) data needs a `load` address"));
                }
            };
            let entry = self.entry.unwrap_or(if self.kind == Kind::Data { 0 } else { load });
            PartitionSpec::raw(name, bytes, load, entry)
        };
        spec = match self.kind {
            Kind::Fsbl => spec.role(PartitionRole::BootLoader).cpu(DestCpu::A53_0).el(ExceptionLevel::El3),
            Kind::Pmufw => {
                let s = spec.cpu(DestCpu::Pmu).exec_state(ExecState::AArch64);
                if rom_pmufw { s.role(PartitionRole::PmuFirmware) } else { s }
            }
            Kind::Bitstream | Kind::Data => spec,
            Kind::Bl31 => spec
                .cpu(DestCpu::A53_0)
                .el(ExceptionLevel::El3)
                .trustzone(TrustZone::Secure)
                .exec_state(ExecState::AArch64),
            Kind::R5 => spec.cpu(DestCpu::R5_0),
            Kind::Kernel => spec
                .cpu(DestCpu::A53_0)
                .el(ExceptionLevel::El2)
                .trustzone(TrustZone::NonSecure)
                .exec_state(ExecState::AArch64),
        };
        if let Some(cpu) = self.cpu {
            spec = spec.cpu(cpu);
        }
        if let Some(d) = self.device {
            spec.dest_device = d;
        }
        if let Some(el) = self.el {
            spec.exception_level = el;
        }
        if let Some(tz) = self.trustzone {
            spec.trustzone = tz;
        }
        if let Some(es) = self.exec_state {
            spec.exec_state = Some(es);
        }
        if let Some(e) = self.endianness {
            spec.endianness = Some(e);
        }
        if let Some(c) = self.checksum {
            spec.checksum = c;
        }
        if let Some(o) = self.owner {
            spec.owner = o;
        }
        if let Some(h) = self.early_handoff {
            spec.early_handoff = h;
        }
        if let Some(v) = self.vector_location {
            spec.vector_location = v;
        }
        if matches!(spec.payload, Payload::Raw { .. }) && spec.exec_state.is_none() {
            spec.exec_state = Some(ExecState::AArch64);
        }
        Ok(spec)
    }
}

/// Reads a TOML description from `path` and builds the spec; files are relative to the
/// description's directory.
pub fn load_spec(path: &Path) -> Result<ImageSpec, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Io { path: path.to_path_buf(), source })?;
    let config = BootConfig::from_toml_str(&text)?;
    config.to_spec(path.parent().unwrap_or(Path::new(".")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_keys_are_rejected() {
        let e = BootConfig::from_toml_str("[[partition]]\nfile = \"a\"\nkind = \"data\"\nlaod = 1\n").unwrap_err();
        assert!(e.to_string().contains("laod"), "{e}");
        let e = BootConfig::from_toml_str("bootdevice = \"sd0\"\n").unwrap_err();
        assert!(e.to_string().contains("bootdevice"), "{e}");
        let e = BootConfig::from_toml_str("[[partition]]\nfile = \"a\"\nkind = \"rom\"\n").unwrap_err();
        assert!(e.to_string().contains("rom"), "{e}");
    }

    #[test]
    fn kinds_set_defaults_and_keys_override() {
        let cfg = BootConfig::from_toml_str(
            r#"
            boot_device = "sd1"
            register_init = [{ address = 0xFF180000, value = 1 }]
            [[partition]]
            file = "dir/blob.bin"
            kind = "data"
            load = 0x1000
            cpu = "a53-1"
            el = "el-1"
            trustzone = "secure"
            checksum = "sha3"
            [[partition]]
            file = "k.bin"
            kind = "kernel"
            load = 0x80000
            el = "el1"
            "#,
        )
        .unwrap();
        let spec = cfg.to_spec_with(|_| Ok(vec![1, 2, 3, 4])).unwrap();
        assert_eq!(spec.boot_device, BootDevice::Sd1);
        assert_eq!(spec.register_init, vec![RegisterInit { address: 0xFF18_0000, value: 1 }]);
        let d = &spec.partitions[0];
        assert_eq!(d.name, "blob.bin");
        assert_eq!(d.dest_cpu, DestCpu::A53_1);
        assert_eq!(d.exception_level, ExceptionLevel::El1);
        assert_eq!(d.trustzone, TrustZone::Secure);
        assert_eq!(d.checksum, ChecksumType::Sha3);
        assert_eq!(d.payload, Payload::Raw { data: vec![1, 2, 3, 4], load_address: 0x1000, exec_address: 0 });
        let k = &spec.partitions[1];
        assert_eq!(k.dest_cpu, DestCpu::A53_0);
        assert_eq!(k.exception_level, ExceptionLevel::El1);
        assert_eq!(k.payload, Payload::Raw { data: vec![1, 2, 3, 4], load_address: 0x80000, exec_address: 0x80000 });
    }

    #[test]
    fn raw_data_needs_a_load_address() {
        let cfg = BootConfig::from_toml_str("[[partition]]\nfile = \"x\"\nkind = \"data\"\n").unwrap();
        let e = cfg.to_spec_with(|_| Ok(vec![0; 4])).unwrap_err();
        assert!(e.to_string().contains("needs a `load` address"), "{e}");
    }

    #[test]
    fn pmufw_loader() {
        let cfg = BootConfig::from_toml_str(
            "[[partition]]\nfile = \"p\"\nkind = \"pmufw\"\n[[partition]]\nfile = \"q\"\nkind = \"pmufw\"\npmufw_loader = \"fsbl\"\nload = 0xFFDC0000\n",
        )
        .unwrap();
        let spec = cfg.to_spec_with(|_| Ok(vec![0; 4])).unwrap();
        assert_eq!(spec.partitions[0].role, PartitionRole::PmuFirmware);
        assert_eq!(spec.partitions[1].role, PartitionRole::Normal);
        assert_eq!(spec.partitions[1].dest_cpu, DestCpu::Pmu);
        assert_eq!(spec.partitions[1].dest_device, DestDevice::Pmu);
    }
}

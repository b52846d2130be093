//! `cargo xtask bootbin` and `cargo xtask sdimage`: ZynqMP boot images written natively (no
//! Vivado, SDK or bootgen), and SD card images that hold them (`docs/hw/boot-image.md`,
//! `docs/hardware.md`). The standard image carries the program store as a data partition
//! (`docs/hw/program-store.md`), so an SD card holds the programs with the kernel.

use crate::images;
use anyhow::{Context, bail};
use bootimage::spec::{FsblTarget, KernelEl, R5Mode, StandardStack};
use bootimage::{DestCpu, PartitionSpec};
use std::path::{Path, PathBuf};

#[derive(clap::Args, Debug)]
pub struct BootbinArgs {
    /// Print every header field and partition of FILE and verify its checksums.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["fsbl", "config"])]
    pub dump: Option<PathBuf>,
    /// Describe the image in a TOML file instead of the flags below.
    #[arg(long, value_name = "TOML")]
    pub config: Option<PathBuf>,
    /// First-stage boot loader (ELF).
    #[arg(long, required_unless_present_any = ["dump", "config"])]
    pub fsbl: Option<PathBuf>,
    /// Run the FSBL on R5-0 instead of A53-0.
    #[arg(long)]
    pub fsbl_on_r5: bool,
    /// PMU firmware (ELF or raw), loaded by the boot ROM.
    #[arg(long)]
    pub pmufw: Option<PathBuf>,
    /// PL bitstream (.bit or .bin).
    #[arg(long)]
    pub bitstream: Option<PathBuf>,
    /// ARM Trusted Firmware BL31 (ELF): A53-0, EL3, secure.
    #[arg(long)]
    pub bl31: Option<PathBuf>,
    /// The R5 firmware (ELF); default: our freshly built QFDB firmware.
    #[arg(long)]
    pub r5: Option<PathBuf>,
    /// Run the R5 cores in lockstep instead of split mode (R5-0).
    #[arg(long)]
    pub lockstep: bool,
    /// The A53 kernel (ELF); default: our freshly built QFDB kernel.
    #[arg(long)]
    pub kernel: Option<PathBuf>,
    /// Put the test image (a53-ktest) in instead of the kernel, for `cargo xtask test --serial`.
    #[arg(long, conflicts_with = "kernel")]
    pub test_image: bool,
    /// Hand the kernel over at EL1 instead of EL2.
    #[arg(long)]
    pub el1: bool,
    /// Boot arguments for the kernel, as a data partition (docs/hw/boot-args.md).
    #[arg(long)]
    pub boot_args: Option<String>,
    /// The program store, as a data partition (docs/hw/program-store.md); default: the store of
    /// our freshly built user programs.
    #[arg(long, value_name = "FILE")]
    pub program_store: Option<PathBuf>,
    /// Use release builds of our images.
    #[arg(long)]
    pub release: bool,
    /// Where to write the boot image.
    #[arg(short, long, value_name = "BOOT.bin", required_unless_present = "dump")]
    pub output: Option<PathBuf>,
}

fn read(path: &Path) -> anyhow::Result<(String, Vec<u8>)> {
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    let name = path.file_name().map_or_else(|| "image".into(), |n| n.to_string_lossy().into_owned());
    Ok((name, bytes))
}

fn boot_args_partition(text: &str) -> anyhow::Result<PartitionSpec> {
    use board::Board;
    let addr = board::qfdb::Qfdb::BOOT_ARGS.context("the QFDB board has no boot-arguments block")?;
    let mut block = vec![0u8; proto::boot_args::HEADER_SIZE + proto::boot_args::MAX_TEXT];
    let len = proto::boot_args::encode(text, &mut block).context("boot arguments too long")?;
    block.truncate(len.next_multiple_of(4));
    Ok(PartitionSpec::raw("bootargs", block, addr, addr).cpu(DestCpu::None))
}

/// The program store as a data partition that the FSBL copies to the store's region; checked
/// first with the kernel's own reader, so a store the kernel would refuse never reaches a card.
fn program_store_partition(mut store: Vec<u8>) -> anyhow::Result<PartitionSpec> {
    use board::Board;
    let layout = board::qfdb::Qfdb::DDR_LAYOUT;
    images::store_programs(&store).context("the program store")?;
    anyhow::ensure!(
        store.len() as u64 <= layout.program_store_size,
        "the program store takes {} bytes, more than its region's {}",
        store.len(),
        layout.program_store_size
    );
    // A partition is whole words; the store's own length field ignores the padding.
    store.resize(store.len().next_multiple_of(4), 0);
    Ok(PartitionSpec::raw("program-store", store, layout.program_store, layout.program_store).cpu(DestCpu::None))
}

pub fn run(args: BootbinArgs) -> anyhow::Result<()> {
    if let Some(path) = &args.dump {
        let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
        let image =
            bootimage::parse(&bytes).with_context(|| format!("{} is not a valid ZynqMP boot image", path.display()))?;
        print!("{image}");
        return Ok(());
    }
    let output = args.output.clone().context("--output is required")?;
    let spec = match &args.config {
        Some(toml) => bootimage::config::load_spec(toml).with_context(|| format!("cannot use {}", toml.display()))?,
        None => standard_stack(&args)?,
    };
    let bytes = bootimage::build(&spec)?;
    // Read back before writing: the image we hand out always passes our own checks.
    let image = bootimage::parse(&bytes).context("the image just built does not parse back")?;
    std::fs::write(&output, &bytes).with_context(|| format!("cannot write {}", output.display()))?;
    println!("wrote {} ({} bytes, {} partitions)", output.display(), bytes.len(), image.partitions.len());
    Ok(())
}

fn standard_stack(args: &BootbinArgs) -> anyhow::Result<bootimage::ImageSpec> {
    let Some(fsbl) = &args.fsbl else { bail!("--fsbl is required (or --config)") };
    let (name, elf) = read(fsbl)?;
    let mut stack = StandardStack::new(name, elf);
    stack.fsbl_target = if args.fsbl_on_r5 { FsblTarget::R5_0 } else { FsblTarget::A53_0 };
    stack.pmufw = args.pmufw.as_deref().map(read).transpose()?;
    stack.bitstream = args.bitstream.as_deref().map(read).transpose()?;
    stack.bl31 = args.bl31.as_deref().map(read).transpose()?;
    if args.bl31.is_none() {
        eprintln!("note: no --bl31: the kernel is started by the FSBL, without ATF (no PSCI, no PM calls)");
    }
    let opts = images::Options { release: args.release, qfdb: true };
    let ours = if args.r5.is_none() || args.kernel.is_none() { Some(images::build_all(opts)?) } else { None };
    let r5 = args.r5.clone().or_else(|| ours.as_ref().map(|i| i.r5.clone()));
    let kernel = args
        .kernel
        .clone()
        .or_else(|| ours.as_ref().map(|i| if args.test_image { i.ktest.clone() } else { i.kernel.clone() }));
    stack.r5 = r5.as_deref().map(read).transpose()?;
    stack.r5_mode = if args.lockstep { R5Mode::Lockstep } else { R5Mode::Split0 };
    stack.kernel = kernel.as_deref().map(read).transpose()?;
    stack.kernel_el = if args.el1 { KernelEl::El1 } else { KernelEl::El2 };
    let store = match (&args.program_store, &ours) {
        (Some(path), _) => path.clone(),
        (None, Some(ours)) => ours.store.clone(),
        (None, None) => images::build_programs(opts)?,
    };
    let mut spec = stack.to_spec();
    spec.partitions.push(program_store_partition(read(&store)?.1)?);
    if let Some(text) = &args.boot_args {
        spec.partitions.push(boot_args_partition(text)?);
    }
    Ok(spec)
}

#[derive(clap::Args, Debug)]
pub struct SdimageArgs {
    /// The boot image to put on the card.
    pub boot_bin: PathBuf,
    /// Where to write the disk image.
    #[arg(short, long, value_name = "sd.img")]
    pub output: PathBuf,
    /// Size of the disk image in MiB.
    #[arg(long, default_value_t = 64)]
    pub size_mib: u32,
}

pub fn sdimage(args: SdimageArgs) -> anyhow::Result<()> {
    let boot = std::fs::read(&args.boot_bin).with_context(|| format!("cannot read {}", args.boot_bin.display()))?;
    bootimage::parse(&boot).with_context(|| format!("{} is not a valid ZynqMP boot image", args.boot_bin.display()))?;
    bootimage::sdimage::write_sd_image_file(&boot, &args.output, args.size_mib)?;
    // Read BOOT.bin back through the FAT driver before saying it is there.
    let mut disk = std::fs::File::open(&args.output)?;
    let back = bootimage::sdimage::read_boot_bin(&mut disk)?;
    anyhow::ensure!(back == boot, "the SD image does not hold BOOT.bin byte for byte");
    println!("wrote {} ({} MiB, FAT32 partition with BOOT.BIN)", args.output.display(), args.size_mib);
    println!("write it to a card with: sudo dd if={} of=/dev/sdX bs=4M conv=fsync", args.output.display());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use bootimage::PartitionRole;

    fn store(files: &[(&str, &[u8])]) -> Vec<u8> {
        let mut bytes = vec![0u8; proto::store::size(files)];
        proto::store::write(files, &mut bytes).unwrap();
        bytes
    }

    /// A boot image with the store, written to an SD image and read back through the FAT
    /// driver, as the board's boot ROM and FSBL would find it: one data partition, loaded at the
    /// store's region, for no CPU, whose bytes the kernel's reader accepts.
    #[test]
    fn the_program_store_travels_in_boot_bin_and_on_the_sd_card() {
        use board::Board;
        let elf = b"\x7fELF and the rest of a program";
        let bytes = store(&[("hello", elf), ("spin", b"\x7fELF")]);
        let fsbl = PartitionSpec::raw("fsbl", vec![0; 64], 0xFFFC_0000, 0xFFFC_0000)
            .role(PartitionRole::BootLoader)
            .cpu(DestCpu::A53_0);
        let spec = bootimage::ImageSpec::new(vec![fsbl, program_store_partition(bytes.clone()).unwrap()]);
        let boot = bootimage::build(&spec).unwrap();
        let mut disk = std::io::Cursor::new(Vec::new());
        bootimage::sdimage::write_sd_image(&boot, &mut disk, 64).unwrap();
        let back = bootimage::sdimage::read_boot_bin(&mut disk).unwrap();
        assert_eq!(back, boot);
        let image = bootimage::parse(&back).unwrap();
        let region = board::qfdb::Qfdb::DDR_LAYOUT.program_store;
        let found: Vec<_> = image.partitions.iter().filter(|p| p.header.load_address == region).collect();
        assert_eq!(found.len(), 1, "one partition at the store's region");
        let partition = found[0];
        assert_eq!(partition.header.attributes.dest_cpu, DestCpu::None, "data, run by no CPU");
        assert_eq!(partition.data, bytes);
        let programs = images::store_programs(&partition.data).unwrap();
        assert_eq!(programs, [("hello".to_string(), elf.len()), ("spin".to_string(), 4)]);
    }

    #[test]
    fn a_store_the_kernel_would_refuse_makes_no_partition() {
        let mut bytes = store(&[("hello", b"\x7fELF")]);
        *bytes.last_mut().unwrap() ^= 1;
        let error = program_store_partition(bytes).unwrap_err();
        assert!(format!("{error:#}").contains("BadChecksum"), "{error:#}");
        assert!(program_store_partition(b"not a store".to_vec()).is_err());
    }
}

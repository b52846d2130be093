//! SD card image: MBR + FAT32 holding BOOT.BIN, read back through the FAT driver.

mod common;

use std::io::Cursor;

use bootimage::sdimage::{
    MIN_SIZE_MIB, PARTITION_START_LBA, PARTITION_TYPE_FAT32_LBA, read_boot_bin, read_mbr, write_sd_image,
    write_sd_image_file,
};
use bootimage::spec::PartitionRole;
use bootimage::{DestCpu, ImageSpec, PartitionSpec, build, parse};
use common::*;

fn boot_bin() -> Vec<u8> {
    let mut rng = Rng(42);
    let fsbl = make_elf(true, false, EM_AARCH64, 0xFFFC_0000, &[Seg::load(0xFFFC_0000, rng.bytes(40_000))]);
    let app = make_elf(true, false, EM_AARCH64, 0x10_0000, &[Seg::load(0x10_0000, rng.bytes(300_001))]);
    build(&ImageSpec::new(vec![
        PartitionSpec::elf("fsbl.elf", fsbl).role(PartitionRole::BootLoader).cpu(DestCpu::A53_0),
        PartitionSpec::elf("app.elf", app).cpu(DestCpu::A53_0),
    ]))
    .unwrap()
}

#[test]
fn sd_image_holds_boot_bin() {
    let boot = boot_bin();
    let size_mib = 64;
    let mut disk = Cursor::new(Vec::new());
    write_sd_image(&boot, &mut disk, size_mib).unwrap();
    assert_eq!(disk.get_ref().len(), 64 * 1024 * 1024);

    // MBR sanity.
    assert_eq!(&disk.get_ref()[0x1FE..0x200], &[0x55, 0xAA]);
    let entries = read_mbr(&mut disk).unwrap();
    let e = entries[0];
    assert_eq!(e.partition_type, PARTITION_TYPE_FAT32_LBA);
    assert_eq!(e.partition_type, 0x0C);
    assert_eq!(e.status, 0x80);
    assert_eq!(e.start_lba, PARTITION_START_LBA);
    assert_eq!(u64::from(e.start_lba) * 512, 1024 * 1024, "1 MiB aligned");
    assert_eq!(u64::from(e.start_lba + e.sector_count) * 512, 64 * 1024 * 1024, "runs to the end");
    for other in &entries[1..] {
        assert_eq!(other.partition_type, 0);
        assert_eq!(other.sector_count, 0);
    }
    // FAT32 boot sector inside the partition.
    let bs = &disk.get_ref()[1024 * 1024..1024 * 1024 + 512];
    assert_eq!(&bs[0x52..0x5A], b"FAT32   ");
    assert_eq!(&bs[0x1C..0x20], &2048u32.to_le_bytes(), "hidden sectors = partition start");
    assert_eq!(&bs[0x1FE..0x200], &[0x55, 0xAA]);

    // BOOT.BIN read back through the FAT driver is byte identical and still parses.
    let back = read_boot_bin(&mut disk).unwrap();
    assert_eq!(back, boot);
    parse(&back).unwrap();

    // Deterministic output.
    let mut again = Cursor::new(Vec::new());
    write_sd_image(&boot, &mut again, size_mib).unwrap();
    assert!(again.get_ref() == disk.get_ref());
}

#[test]
fn sd_image_file() {
    let boot = boot_bin();
    let path = std::env::temp_dir().join(format!("bootimage-sd-{}.img", std::process::id()));
    write_sd_image_file(&boot, &path, MIN_SIZE_MIB).unwrap();
    let mut f = std::fs::OpenOptions::new().read(true).write(true).open(&path).unwrap();
    assert_eq!(f.metadata().unwrap().len(), u64::from(MIN_SIZE_MIB) * 1024 * 1024);
    let back = read_boot_bin(&mut f).unwrap();
    drop(f);
    std::fs::remove_file(&path).ok();
    assert_eq!(back, boot);
}

#[test]
fn read_rejects_non_mbr() {
    let mut disk = Cursor::new(vec![0u8; 4096]);
    let e = read_boot_bin(&mut disk).unwrap_err();
    assert!(e.to_string().contains("bad MBR"), "{e}");
}

//! `parse` must never panic, whatever the input: truncations at every length, random
//! mutations (with and without checksum fix-ups so that the deeper checks are reached),
//! and random bytes behind a valid boot header.

mod common;

use bootimage::boot_header::BootHeader;
use bootimage::spec::PartitionRole;
use bootimage::{ChecksumType, DestCpu, ImageSpec, PartitionSpec, build, parse};
use common::*;

fn base() -> Vec<u8> {
    let fsbl = make_elf(true, false, EM_AARCH64, 0xFFFC_0000, &[Seg::load(0xFFFC_0000, vec![0x11; 96])]);
    let app = make_elf(false, false, EM_ARM, 0, &[Seg::load(0, vec![0x22; 40]), Seg::load(0x2_0000, vec![0x33; 24])]);
    build(&ImageSpec::new(vec![
        PartitionSpec::elf("fsbl.elf", fsbl).role(PartitionRole::BootLoader).cpu(DestCpu::A53_0),
        PartitionSpec::raw("pmufw.bin", vec![0x44; 32], 0, 0).role(PartitionRole::PmuFirmware),
        PartitionSpec::elf("r5.elf", app).cpu(DestCpu::R5_0),
        PartitionSpec::raw("blob", vec![0x55; 64], 0x3000_0000, 0).checksum(ChecksumType::Sha3),
    ]))
    .unwrap()
}

fn check(bytes: &[u8]) {
    if let Ok(img) = parse(bytes) {
        // The dump must not panic either.
        let _ = img.to_string();
    }
}

#[test]
fn every_truncation() {
    let img = base();
    for len in 0..=img.len() {
        let r = parse(&img[..len]);
        if len < img.len() {
            assert!(r.is_err(), "truncated to {len:#x} bytes must be rejected");
        } else {
            r.unwrap();
        }
    }
}

#[test]
fn random_mutations() {
    let img = base();
    let mut rng = Rng(0xDEAD_BEEF_CAFE_F00D);
    let interesting = [
        0u32,
        1,
        4,
        0xFFFF_FFFF,
        0x8000_0000,
        img.len() as u32,
        img.len() as u32 / 4,
        0x8C0,
        0x230,
        0x440,
        0x450,
        0xA00,
        0x0102_0000,
        33,
    ];
    for round in 0..30_000 {
        let mut m = img.clone();
        for _ in 0..1 + rng.below(6) {
            // Mostly hit the header area, sometimes anywhere.
            let span = if rng.below(4) == 0 { m.len() } else { 0x1300.min(m.len()) };
            let at = (rng.below(span as u64) as usize) & !3;
            let word_at = at.min(m.len() - 4);
            match rng.below(3) {
                0 => m[at] = rng.next() as u8,
                1 => put_u32(&mut m, word_at, interesting[rng.below(interesting.len() as u64) as usize]),
                _ => put_u32(&mut m, word_at, rng.next() as u32),
            }
        }
        if round % 2 == 0 {
            fix_all_checksums(&mut m);
        }
        if round % 7 == 0 {
            let cut = rng.below(m.len() as u64 + 1) as usize;
            m.truncate(cut);
        }
        check(&m);
    }
}

#[test]
fn random_bytes_behind_a_valid_boot_header() {
    let mut rng = Rng(0x0123_4567_89AB_CDEF);
    for round in 0..3_000 {
        let mut bh = BootHeader {
            image_header_table_offset: if round % 3 == 0 { 0 } else { (rng.below(0x1000) as u32) & !3 },
            partition_header_table_offset: (rng.below(0x1000) as u32) & !3,
            source_offset: rng.below(0x3000) as u32,
            fsbl_len: rng.below(0x100) as u32,
            total_fsbl_len: rng.below(0x200) as u32,
            pmu_fw_len: rng.below(0x40) as u32,
            total_pmu_fw_len: rng.below(0x80) as u32,
            attributes: bootimage::BootHeaderAttributes(rng.next() as u32),
            ..Default::default()
        };
        bh.update_checksum();
        let mut bytes = bh.encode();
        let tail_len = rng.below(0x3000) as usize;
        let tail = rng.bytes(tail_len);
        bytes.extend_from_slice(&tail);
        fix_all_checksums(&mut bytes);
        check(&bytes);
    }
}

#[test]
fn boot_header_only_image() {
    // Like U-Boot's mkimage output: no image header table, FSBL right after the header.
    let mut bh = BootHeader {
        source_offset: 0x8C0,
        fsbl_len: 0x100,
        total_fsbl_len: 0x100,
        fsbl_exec_address: 0xFFFC_0000,
        attributes: bootimage::BootHeaderAttributes(0x800),
        ..Default::default()
    };
    bh.update_checksum();
    let mut bytes = bh.encode();
    bytes.resize(0x8C0, 0);
    bytes.extend(std::iter::repeat_n(0xAB, 0x100));
    let img = parse(&bytes).unwrap();
    assert!(img.image_header_table.is_none());
    assert!(img.partitions.is_empty());
    assert_eq!(img.fsbl.as_deref(), Some(&[0xAB; 0x100][..]));
    assert!(img.to_string().contains("No image header table"));
}

//! build -> parse round trips, layout, ELF splitting and the convenience builders.

mod common;

use std::collections::HashSet;

use bootimage::bitstream::{BitHeader, make_bit_file};
use bootimage::checksum::sha3_384;
use bootimage::config::BootConfig;
use bootimage::spec::PartitionRole;
use bootimage::{
    BootDevice, BuildError, ChecksumType, DataChecksum, DestCpu, DestDevice, Endianness, ExceptionLevel, ExecState,
    FsblCpu, FsblTarget, ImageSpec, KernelEl, PartitionSpec, R5Mode, RegisterInit, StandardStack, TrustZone, build,
    parse,
};
use common::*;

/// What one partition of the parsed image must look like.
#[derive(Debug)]
struct Expected {
    image_name: String,
    dest_cpu: DestCpu,
    dest_device: DestDevice,
    el: ExceptionLevel,
    tz: TrustZone,
    exec_state: ExecState,
    endianness: Endianness,
    checksum: ChecksumType,
    load: u64,
    exec: u64,
    data: Vec<u8>,
    section_count: u32,
}

fn padded(mut v: Vec<u8>) -> Vec<u8> {
    v.resize(v.len().next_multiple_of(4), 0);
    v
}

const CPUS: [DestCpu; 7] =
    [DestCpu::A53_0, DestCpu::A53_1, DestCpu::A53_2, DestCpu::A53_3, DestCpu::R5_0, DestCpu::R5_1, DestCpu::R5Lockstep];

/// Builds a spec with exactly `n` partitions and the expectations for it.
fn random_spec(rng: &mut Rng, n: usize, variant: usize) -> (ImageSpec, Vec<Expected>, Option<FsblCpu>) {
    let mut specs = Vec::new();
    let mut expected = Vec::new();

    // Boot loader: A53 (64-bit ELF, two segments with a gap) or R5 (32-bit ARM ELF).
    let a53_fsbl = variant.is_multiple_of(2);
    let seg_a = rng.bytes_range(100, 200);
    let seg_b = rng.bytes_range(1, 50);
    let gap_base = 0xFFFC_0000u64;
    let second = gap_base + (seg_a.len() as u64).next_multiple_of(8) + 8;
    let fsbl_elf = if a53_fsbl {
        make_elf(
            true,
            false,
            EM_AARCH64,
            gap_base,
            &[Seg::load(gap_base, seg_a.clone()), Seg::load(second, seg_b.clone())],
        )
    } else {
        make_elf(
            false,
            false,
            EM_ARM,
            gap_base,
            &[Seg::load(gap_base, seg_a.clone()), Seg::load(second, seg_b.clone())],
        )
    };
    let mut combined = seg_a.clone();
    combined.resize((second - gap_base) as usize, 0);
    combined.extend_from_slice(&seg_b);
    let combined = padded(combined);
    let pmu = (variant % 3 != 2).then(|| rng.bytes_range(33, 100));
    let mut fsbl_data = pmu.clone().map(padded).unwrap_or_default();
    fsbl_data.extend_from_slice(&combined);
    let (fsbl_cpu, fsbl_state, fsbl_bh_cpu) = if a53_fsbl {
        (DestCpu::A53_0, ExecState::AArch64, FsblCpu::A53Single64)
    } else if variant % 4 == 1 {
        (DestCpu::R5_0, ExecState::AArch32, FsblCpu::R5Single)
    } else {
        (DestCpu::R5Lockstep, ExecState::AArch32, FsblCpu::R5Dual)
    };
    specs.push(PartitionSpec::elf("fsbl.elf", fsbl_elf).role(PartitionRole::BootLoader).cpu(fsbl_cpu));
    if let Some(p) = &pmu {
        // The ROM-loaded PMU firmware may be listed before or after the boot loader.
        let spec = PartitionSpec::raw("pmufw.bin", p.clone(), 0, 0).role(PartitionRole::PmuFirmware).cpu(DestCpu::Pmu);
        if variant.is_multiple_of(2) {
            specs.push(spec);
        } else {
            specs.insert(0, spec);
        }
    }
    expected.push(Expected {
        image_name: "fsbl.elf".into(),
        dest_cpu: fsbl_cpu,
        dest_device: DestDevice::Ps,
        el: ExceptionLevel::El3,
        tz: TrustZone::NonSecure,
        exec_state: fsbl_state,
        endianness: Endianness::Little,
        checksum: ChecksumType::None,
        load: gap_base,
        exec: gap_base,
        data: fsbl_data,
        section_count: 1,
    });

    // The other partitions.
    let mut left = n - 1;
    let mut img = 0usize;
    while left > 0 {
        let k = expected.len() + variant;
        let cpu = CPUS[k % CPUS.len()];
        let el = ExceptionLevel::ALL[(k + variant / 2) % 4];
        let tz = if (k + variant).is_multiple_of(2) { TrustZone::Secure } else { TrustZone::NonSecure };
        let exec_state =
            if cpu.is_a53() && (k / 2 + variant).is_multiple_of(2) { ExecState::AArch64 } else { ExecState::AArch32 };
        let checksum = if k.is_multiple_of(3) { ChecksumType::Sha3 } else { ChecksumType::None };
        let name = format!("image{img}.elf");
        img += 1;
        let kind = rng.below(4);
        if kind == 3 && variant % 2 == 1 {
            // Bitstream (PL).
            let mut cfg: Vec<u8> = [0xFFFF_FFFFu32, 0x0000_00BB, 0x1122_0044, 0xFFFF_FFFF, 0xAA99_5566]
                .iter()
                .flat_map(|w| w.to_be_bytes())
                .collect();
            cfg.extend(padded(rng.bytes_range(8, 64)));
            let bit = make_bit_file(
                &BitHeader { design_name: "d".into(), part_name: "xczu3eg".into(), date: "x".into(), time: "y".into() },
                &cfg,
            );
            let le: Vec<u8> = cfg.chunks(4).flat_map(|w| [w[3], w[2], w[1], w[0]]).collect();
            specs.push(PartitionSpec::bitstream(name.clone(), bit).el(el).trustzone(tz));
            expected.push(Expected {
                image_name: name,
                dest_cpu: DestCpu::None,
                dest_device: DestDevice::Pl,
                el,
                tz,
                exec_state: ExecState::AArch64,
                endianness: Endianness::Little,
                checksum: ChecksumType::None,
                load: 0xFFFF_FFFF,
                exec: 0,
                data: le,
                section_count: 1,
            });
            left -= 1;
        } else if kind == 0 {
            // Raw data.
            let data = rng.bytes_range(1, 500);
            let load = 0x1000_0000 + 0x1_0000 * img as u64;
            specs.push(
                PartitionSpec::raw(name.clone(), data.clone(), load, load + 0x40)
                    .cpu(cpu)
                    .el(el)
                    .trustzone(tz)
                    .exec_state(exec_state)
                    .checksum(checksum),
            );
            expected.push(Expected {
                image_name: name,
                dest_cpu: cpu,
                dest_device: DestDevice::Ps,
                el,
                tz,
                exec_state,
                endianness: Endianness::Little,
                checksum,
                load,
                exec: load + 0x40,
                data: padded(data),
                section_count: 1,
            });
            left -= 1;
        } else {
            // ELF with one or two segments (two only when room is left).
            let segs_n = if left >= 2 && kind == 2 { 2 } else { 1 };
            let big = kind == 1 && variant.is_multiple_of(3);
            let is_64 = exec_state == ExecState::AArch64 && !big;
            let machine = if is_64 { EM_AARCH64 } else { EM_ARM };
            let base = if cpu.is_r5() { 0x0 } else { 0x0800_0000 + 0x10_0000 * img as u64 };
            let entry = base + 0x100;
            let segs: Vec<Seg> = (0..segs_n)
                .map(|s| {
                    let mut seg = Seg::load(base + 0x1_0000 * s as u64, rng.bytes_range(1, 400));
                    seg.vaddr = seg.paddr + 0x4000_0000; // p_paddr must be used, not p_vaddr
                    seg
                })
                .collect();
            let elf = make_elf(is_64, big, machine, entry, &segs);
            specs.push(
                PartitionSpec::elf(name.clone(), elf)
                    .cpu(cpu)
                    .el(el)
                    .trustzone(tz)
                    .exec_state(exec_state)
                    .checksum(checksum),
            );
            for (s, seg) in segs.iter().enumerate() {
                expected.push(Expected {
                    image_name: name.clone(),
                    dest_cpu: cpu,
                    dest_device: DestDevice::Ps,
                    el,
                    tz,
                    exec_state,
                    endianness: if big { Endianness::Big } else { Endianness::Little },
                    checksum,
                    load: seg.paddr,
                    exec: if s == 0 { entry } else { 0 },
                    data: padded(seg.data.clone()),
                    section_count: if s == 0 { segs_n as u32 } else { 0 },
                });
            }
            left -= segs_n;
        }
    }
    let mut spec = ImageSpec::new(specs);
    const DEVICES: [BootDevice; 4] = [BootDevice::Same, BootDevice::Sd0, BootDevice::Qspi32, BootDevice::Sd1];
    spec.boot_device = DEVICES[variant % DEVICES.len()];
    spec.register_init = (0..variant as u32).map(|i| RegisterInit { address: 0xFF18_0000 + 4 * i, value: i }).collect();
    (spec, expected, Some(fsbl_bh_cpu))
}

#[test]
fn round_trip_2_to_7_partitions() {
    let mut seen_el = HashSet::new();
    let mut seen_state = HashSet::new();
    let mut seen_tz = HashSet::new();
    let mut seen_cpu = HashSet::new();
    let mut rng = Rng(0x1234_5678_9ABC_DEF1);
    for variant in 0..12 {
        for n in 2..=7 {
            let (spec, expected, fsbl_cpu) = random_spec(&mut rng, n, variant);
            let image = build(&spec).unwrap_or_else(|e| panic!("variant {variant} n {n}: {e}"));
            assert_eq!(build(&spec).unwrap(), image, "build is deterministic");
            let parsed = parse(&image).unwrap_or_else(|e| panic!("variant {variant} n {n}: {e}"));

            // Every checksum verifies (parse already rejected mismatches; recompute anyway).
            let bh = &parsed.boot_header;
            assert_eq!(bh.checksum, bh.compute_checksum());
            let iht = &parsed.image_header_table.as_ref().unwrap().table;
            assert_eq!(iht.checksum, iht.compute_checksum());
            assert_eq!(iht.partition_count as usize, n);
            assert_eq!(iht.boot_device, spec.boot_device.word());
            assert_eq!(bh.used_register_inits().copied().collect::<Vec<_>>(), spec.register_init);
            assert_eq!(bh.attributes.fsbl_cpu(), fsbl_cpu.unwrap());
            assert_eq!(bh.boot_vectors, [fsbl_cpu.unwrap().jump_to_self(); 8]);

            assert_eq!(parsed.partitions.len(), n, "variant {variant}");
            for (k, (p, e)) in parsed.partitions.iter().zip(&expected).enumerate() {
                let h = &p.header;
                let a = &h.attributes;
                assert_eq!(h.checksum, h.compute_checksum());
                assert_eq!(parsed.image_of(k).unwrap().header.name, e.image_name);
                assert_eq!(a.dest_cpu, e.dest_cpu, "partition {k}");
                assert_eq!(a.dest_device, e.dest_device, "partition {k}");
                assert_eq!(a.exception_level, e.el, "partition {k}");
                assert_eq!(a.trustzone, e.tz, "partition {k}");
                assert_eq!(a.exec_state, e.exec_state, "partition {k}");
                assert_eq!(a.endianness, e.endianness, "partition {k}");
                assert_eq!(a.checksum, e.checksum, "partition {k}");
                assert!(!a.encrypted && !a.rsa_auth_cert);
                assert_eq!(h.load_address, e.load, "partition {k}");
                assert_eq!(h.exec_address, e.exec, "partition {k}");
                assert_eq!(h.section_count, e.section_count, "partition {k}");
                assert_eq!(h.partition_number as usize, k);
                assert_eq!(h.auth_cert_word_offset, 0);
                assert_eq!(p.data, e.data, "partition {k} data");
                assert_eq!(p.data_offset % 64, 0, "partitions are 64-byte aligned");
                assert_eq!(p.is_boot_loader, k == 0);
                match e.checksum {
                    ChecksumType::Sha3 => {
                        assert!(matches!(p.data_checksum, DataChecksum::Verified { .. }))
                    }
                    _ => assert_eq!(p.data_checksum, DataChecksum::None),
                }
                seen_el.insert(a.exception_level);
                seen_state.insert(a.exec_state);
                seen_tz.insert(a.trustzone);
                seen_cpu.insert(a.dest_cpu);
            }
            // Boot header describes the ROM-loaded part.
            let fsbl_part = &parsed.partitions[0];
            assert_eq!(u64::from(bh.source_offset), fsbl_part.data_offset);
            assert_eq!(bh.source_offset, 0x2800);
            assert_eq!(u64::from(bh.fsbl_exec_address), fsbl_part.header.exec_address);
            assert_eq!((bh.total_pmu_fw_len + bh.total_fsbl_len) as usize, fsbl_part.data.len());
            let pmu_len = parsed.pmu_firmware.as_ref().map_or(0, Vec::len);
            assert_eq!(&fsbl_part.data[pmu_len..], parsed.fsbl.as_deref().unwrap());
            // The dump names everything.
            let dump = parsed.to_string();
            assert!(dump.contains("checksum ok"));
            assert!(dump.contains("destination cpu:"));
        }
    }
    assert_eq!(seen_el.len(), 4, "all exception levels covered");
    assert_eq!(seen_state.len(), 2, "both execution states covered");
    assert_eq!(seen_tz.len(), 2, "both security states covered");
    assert!(seen_cpu.iter().any(|c| c.is_a53()) && seen_cpu.iter().any(|c| c.is_r5()));
    assert!(seen_cpu.contains(&DestCpu::None), "a PL bitstream was included");
}

/// Reproduces the headers of a bootgen-generated image (FSBL with PMU FW, BL31, U-Boot;
/// lengths and addresses taken from a real BOOT.BIN): same offsets, same checksums.
#[test]
fn layout_and_checksums_match_bootgen() {
    let pmu = vec![0xAB; 0x1_FAE0];
    let fsbl = make_elf(true, false, EM_AARCH64, 0xFFFC_0000, &[Seg::load(0xFFFC_0000, vec![0x11; 0x1_93C0])]);
    let bl31 = make_elf(true, false, EM_AARCH64, 0xFFFE_A000, &[Seg::load(0xFFFE_A000, vec![0x22; 0xC778])]);
    let uboot = make_elf(true, false, EM_AARCH64, 0x0800_0000, &[Seg::load(0x0800_0000, vec![0x33; 0xC_B6DC])]);
    let mut stack = StandardStack::new("zynqmp_fsbl.elf", fsbl);
    stack.pmufw = Some(("pmufw.elf".into(), pmu));
    stack.bl31 = Some(("bl31.elf".into(), bl31));
    stack.kernel = Some(("u-boot.elf".into(), uboot));
    let image = build(&stack.to_spec()).unwrap();
    let w = |o| get_u32(&image, o);

    // Boot header.
    assert_eq!(w(0x00), 0x1400_0000);
    assert_eq!(w(0x2C), 0xFFFC_0000);
    assert_eq!(w(0x30), 0x2800);
    assert_eq!((w(0x34), w(0x38)), (0x1_FAE0, 0x1_FAE0));
    assert_eq!((w(0x3C), w(0x40)), (0x1_93C0, 0x1_93C0));
    assert_eq!(w(0x44), 0x800);
    assert_eq!(w(0x48), 0xFD17_0F01);
    assert_eq!(w(0x6C), 0x0100_0020);
    assert_eq!((w(0x98), w(0x9C)), (0x8C0, 0x1100));
    assert_eq!((w(0xB8), w(0xBC)), (0xFFFF_FFFF, 0));
    assert_eq!(&image[0x8B8..0x8C0], &[0xFF; 8]);
    // Image header table.
    assert_eq!(w(0x8C0), 0x0102_0000);
    assert_eq!(w(0x8C4), 3);
    assert_eq!((w(0x8C8), w(0x8CC)), (0x440, 0x240));
    assert_eq!(w(0x8FC), 0xFEFD_F97C);
    // Image headers at 0x900, 0x940, 0x980; names packed.
    assert_eq!((w(0x900), w(0x904), w(0x908), w(0x90C)), (0x250, 0x440, 0, 1));
    assert_eq!(&image[0x910..0x920], b"qnyzf_pm.lbs\0fle");
    assert_eq!((w(0x940), w(0x944)), (0x260, 0x450));
    assert_eq!((w(0x980), w(0x984)), (0, 0x460));
    assert_eq!(&image[0x9A0..0x1100], &vec![0xFF; 0x1100 - 0x9A0][..]);
    // Partition headers and their checksums.
    let ph = [0x1100, 0x1140, 0x1180];
    assert_eq!(w(ph[0]), 0xE3A8);
    assert_eq!(w(ph[0] + 0xC), 0x450);
    assert_eq!(w(ph[0] + 0x20), 0xA00);
    assert_eq!(w(ph[0] + 0x24), 0x116);
    assert_eq!(w(ph[0] + 0x3C), 0x0005_4360);
    assert_eq!(w(ph[1] + 0x20), 0xEDB0);
    assert_eq!(w(ph[1] + 0x24), 0x117);
    assert_eq!(w(ph[1] + 0x3C), 0x0001_34EC);
    assert_eq!(w(ph[2] + 0xC), 0);
    assert_eq!(w(ph[2] + 0x20), 0x1_1F90);
    assert_eq!(w(ph[2] + 0x24), 0x114);
    assert_eq!(w(ph[2] + 0x3C), 0xEFF5_53D3);
    // NULL partition header.
    assert!(image[0x11C0..0x11FC].iter().all(|&b| b == 0));
    assert_eq!(w(0x11FC), 0xFFFF_FFFF);
    assert!(image[0x1200..0x2800].iter().all(|&b| b == 0xFF));
    // File ends with the last partition.
    assert_eq!(image.len(), 0x47E40 + 0xC_B6DC);
    parse(&image).unwrap();
}

#[test]
fn elf_load_segments_become_partitions() {
    // 64-bit AArch64: two file-backed PT_LOADs, one bss-only PT_LOAD and a PT_NOTE.
    let a = vec![0xA1; 123];
    let b = vec![0xB2; 64];
    let mut bss = Seg::load(0x9000_0000, Vec::new());
    bss.mem_size = 0x1000;
    let mut note = Seg::load(0, vec![1, 2, 3, 4]);
    note.p_type = PT_NOTE;
    let mut seg_a = Seg::load(0x8000_0000, a.clone());
    seg_a.vaddr = 0xFFFF_0000_8000_0000;
    let elf64 = make_elf(true, false, EM_AARCH64, 0x8000_0040, &[note, seg_a, bss, Seg::load(0x8010_0000, b.clone())]);
    // 32-bit ARM, little and big endian.
    let c = vec![0xC3; 7];
    let elf32 = make_elf(false, false, EM_ARM, 0x20, &[Seg::load(0x0, c.clone()), Seg::load(0x2_0000, vec![0xD4; 8])]);
    let elf32be = make_elf(false, true, EM_ARM, 0x100, &[Seg::load(0x100, vec![0xE5; 12])]);
    let fsbl = PartitionSpec::raw("fsbl", vec![0; 64], 0xFFFC_0000, 0xFFFC_0000)
        .role(PartitionRole::BootLoader)
        .cpu(DestCpu::A53_0);
    let spec = ImageSpec::new(vec![
        fsbl,
        PartitionSpec::elf("a53.elf", elf64).cpu(DestCpu::A53_0).el(ExceptionLevel::El1),
        PartitionSpec::elf("r5.elf", elf32).cpu(DestCpu::R5_1),
        PartitionSpec::elf("be.elf", elf32be).cpu(DestCpu::R5_0),
    ]);
    let parsed = parse(&build(&spec).unwrap()).unwrap();
    let p = &parsed.partitions;
    assert_eq!(p.len(), 6);
    // a53.elf -> partitions 1 and 2.
    assert_eq!(p[1].header.load_address, 0x8000_0000, "p_paddr, not p_vaddr");
    assert_eq!(p[1].header.exec_address, 0x8000_0040);
    assert_eq!(p[1].header.section_count, 2);
    assert_eq!(&p[1].data[..123], &a[..]);
    assert_eq!(p[1].data.len(), 124, "padded to a word");
    assert_eq!(p[1].header.attributes.exec_state, ExecState::AArch64);
    assert_eq!(p[2].header.load_address, 0x8010_0000);
    assert_eq!(p[2].header.exec_address, 0, "only the first partition of an image has an entry");
    assert_eq!(p[2].header.section_count, 0);
    assert_eq!(p[2].data, b);
    assert_eq!(parsed.images[1].partitions, 1..3);
    // r5.elf -> partitions 3 and 4, AArch32 like bootgen.
    assert_eq!(p[3].header.load_address, 0);
    assert_eq!(p[3].header.exec_address, 0x20);
    assert_eq!(&p[3].data[..7], &c[..]);
    assert_eq!(p[3].header.attributes.exec_state, ExecState::AArch32);
    assert_eq!(p[3].header.attributes.dest_cpu, DestCpu::R5_1);
    assert_eq!(p[4].data, vec![0xD4; 8]);
    // be.elf -> big endian attribute.
    assert_eq!(p[5].header.attributes.endianness, Endianness::Big);
    assert_eq!(p[5].data, vec![0xE5; 12]);
}

#[test]
fn standard_stack_attributes() {
    let elf64 = |addr: u64| make_elf(true, false, EM_AARCH64, addr, &[Seg::load(addr, vec![0x5A; 256])]);
    let r5 = make_elf(false, false, EM_ARM, 0, &[Seg::load(0, vec![0x11; 100]), Seg::load(0x2_0000, vec![0x22; 40])]);
    let pmufw = make_elf(
        false,
        false,
        EM_MICROBLAZE,
        0xFFDC_0000,
        &[Seg::load(0xFFDC_0000, vec![0x77; 1000]), Seg::load(0xFFDC_1000, vec![0x78; 10])],
    );
    let cfg: Vec<u8> = [0xFFFF_FFFFu32, 0xAA99_5566, 0x2000_0000].iter().flat_map(|w| w.to_be_bytes()).collect();
    let stack = StandardStack {
        fsbl: ("fsbl.elf".into(), elf64(0xFFFC_0000)),
        fsbl_target: FsblTarget::A53_0,
        pmufw: Some(("pmufw.elf".into(), pmufw)),
        bitstream: Some(("system.bit".into(), make_bit_file(&BitHeader::default(), &cfg))),
        bl31: Some(("bl31.elf".into(), elf64(0xFFFE_A000))),
        r5: Some(("r5.elf".into(), r5)),
        r5_mode: R5Mode::Lockstep,
        kernel: Some(("kernel.elf".into(), elf64(0x0008_0000))),
        kernel_el: KernelEl::El1,
        boot_device: BootDevice::Sd1,
    };
    let parsed = parse(&build(&stack.to_spec()).unwrap()).unwrap();
    let names: Vec<_> = parsed.images.iter().map(|i| i.header.name.as_str()).collect();
    assert_eq!(names, ["fsbl.elf", "system.bit", "bl31.elf", "r5.elf", "kernel.elf"]);
    let attr = |k: usize| parsed.partitions[k].header.attributes;
    // FSBL + ROM-loaded PMU FW (combined MicroBlaze segments, gap zero filled).
    assert_eq!(parsed.pmu_firmware.as_ref().unwrap().len(), 0x1000 + 12);
    assert_eq!(parsed.boot_header.pmu_fw_len, 0x100C);
    assert_eq!(attr(0).dest_cpu, DestCpu::A53_0);
    assert_eq!(attr(0).exception_level, ExceptionLevel::El3);
    // Bitstream to PL.
    assert_eq!(attr(1).dest_device, DestDevice::Pl);
    assert_eq!(parsed.partitions[1].header.load_address, 0xFFFF_FFFF);
    assert_eq!(&parsed.partitions[1].data[4..8], &0xAA99_5566u32.to_le_bytes());
    // BL31: A53-0, EL3, secure, AArch64.
    assert_eq!(
        (attr(2).dest_cpu, attr(2).exception_level, attr(2).trustzone, attr(2).exec_state),
        (DestCpu::A53_0, ExceptionLevel::El3, TrustZone::Secure, ExecState::AArch64)
    );
    // R5 lockstep, two segments.
    assert_eq!(attr(3).dest_cpu, DestCpu::R5Lockstep);
    assert_eq!(attr(4).dest_cpu, DestCpu::R5Lockstep);
    // Kernel: A53-0, EL1, non-secure, AArch64.
    assert_eq!(
        (attr(5).dest_cpu, attr(5).exception_level, attr(5).trustzone, attr(5).exec_state),
        (DestCpu::A53_0, ExceptionLevel::El1, TrustZone::NonSecure, ExecState::AArch64)
    );
    assert_eq!(parsed.image_header_table.unwrap().boot_device, BootDevice::Sd1);

    // FSBL on R5-0.
    let mut r5_fsbl = StandardStack::new(
        "fsbl_r5.elf",
        make_elf(false, false, EM_ARM, 0xFFFC_0000, &[Seg::load(0xFFFC_0000, vec![1; 64])]),
    );
    r5_fsbl.fsbl_target = FsblTarget::R5_0;
    r5_fsbl.kernel = Some(("k.elf".into(), elf64(0x10_0000)));
    let parsed = parse(&build(&r5_fsbl.to_spec()).unwrap()).unwrap();
    assert_eq!(parsed.boot_header.attributes.fsbl_cpu(), FsblCpu::R5Single);
    assert_eq!(parsed.boot_header.boot_vectors[0], 0xEAFF_FFFE);
    assert_eq!(parsed.partitions[1].header.attributes.exception_level, ExceptionLevel::El2);
}

#[test]
fn sha3_partition_checksums() {
    let fsbl = PartitionSpec::raw("fsbl", vec![9; 40], 0xFFFC_0000, 0xFFFC_0000)
        .role(PartitionRole::BootLoader)
        .cpu(DestCpu::A53_0);
    let data = vec![0x42; 1000];
    let app = PartitionSpec::raw("app", data.clone(), 0x100_0000, 0x100_0000).checksum(ChecksumType::Sha3);
    let image = build(&ImageSpec::new(vec![fsbl, app])).unwrap();
    let parsed = parse(&image).unwrap();
    let p = &parsed.partitions[1];
    let DataChecksum::Verified { offset, .. } = p.data_checksum else { panic!("not verified: {:?}", p.data_checksum) };
    assert_eq!(u64::from(p.header.checksum_word_offset) * 4, offset);
    assert!(offset >= p.data_offset + 1000, "checksums follow the partitions");
    assert_eq!(&image[offset as usize..offset as usize + 48], &sha3_384(&data));
    assert!(parsed.to_string().contains("SHA3 at"));
}

#[test]
fn toml_description_end_to_end() {
    let dir = std::env::temp_dir().join(format!("bootimage-toml-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("fsbl.elf"),
        make_elf(true, false, EM_AARCH64, 0xFFFC_0000, &[Seg::load(0xFFFC_0000, vec![1; 256])]),
    )
    .unwrap();
    std::fs::write(dir.join("pmufw.bin"), vec![2u8; 1000]).unwrap();
    std::fs::write(
        dir.join("bl31.elf"),
        make_elf(true, false, EM_AARCH64, 0xFFFE_A000, &[Seg::load(0xFFFE_A000, vec![3; 256])]),
    )
    .unwrap();
    std::fs::write(dir.join("r5.elf"), make_elf(false, false, EM_ARM, 0, &[Seg::load(0, vec![4; 256])])).unwrap();
    std::fs::write(dir.join("data.bin"), vec![5u8; 77]).unwrap();
    let toml = r#"
        boot_device = "sd0"
        [[partition]]
        file = "fsbl.elf"
        kind = "fsbl"
        [[partition]]
        file = "pmufw.bin"
        kind = "pmufw"
        [[partition]]
        file = "bl31.elf"
        kind = "bl31"
        [[partition]]
        file = "r5.elf"
        kind = "r5"
        cpu = "r5-1"
        [[partition]]
        file = "data.bin"
        kind = "data"
        name = "table"
        load = 0x2000_0000
        checksum = "sha3"
    "#;
    std::fs::write(dir.join("boot.toml"), toml).unwrap();
    let spec = bootimage::config::load_spec(&dir.join("boot.toml")).unwrap();
    let parsed = parse(&build(&spec).unwrap()).unwrap();
    std::fs::remove_dir_all(&dir).ok();
    assert_eq!(parsed.boot_header.pmu_fw_len, 1000);
    assert_eq!(parsed.partitions.len(), 4);
    assert_eq!(parsed.partitions[1].header.attributes.trustzone, TrustZone::Secure);
    assert_eq!(parsed.partitions[2].header.attributes.dest_cpu, DestCpu::R5_1);
    assert_eq!(parsed.images[3].header.name, "table");
    assert_eq!(parsed.partitions[3].header.load_address, 0x2000_0000);
    assert!(matches!(parsed.partitions[3].data_checksum, DataChecksum::Verified { .. }));
    assert_eq!(parsed.image_header_table.unwrap().boot_device, BootDevice::Sd0);

    // Unknown keys are rejected.
    assert!(BootConfig::from_toml_str("[[partition]]\nfile = \"a\"\nkind = \"data\"\nload_addr = 1\n").is_err());
}

#[test]
fn build_rejects_bad_specs() {
    let raw = |n: &str| PartitionSpec::raw(n, vec![0; 16], 0x1000, 0x1000);
    let fsbl = || raw("fsbl").role(PartitionRole::BootLoader).cpu(DestCpu::A53_0);
    let err = |s: Vec<PartitionSpec>| build(&ImageSpec::new(s)).unwrap_err();

    assert!(matches!(err(vec![]), BuildError::NoPartitions));
    assert!(matches!(err(vec![raw("a"), fsbl()]), BuildError::BootLoaderNotFirst { index: 1 }));
    assert!(matches!(err(vec![fsbl(), fsbl()]), BuildError::DuplicateRole { .. }));
    assert!(matches!(
        err(vec![raw("p").role(PartitionRole::PmuFirmware), raw("a")]),
        BuildError::PmuFirmwareWithoutBootLoader { .. }
    ));
    assert!(matches!(
        err(vec![raw("f").role(PartitionRole::BootLoader).cpu(DestCpu::A53_1)]),
        BuildError::BootLoaderCpu { .. }
    ));
    assert!(matches!(
        err(vec![fsbl(), PartitionSpec::raw("u", vec![1], 0x1002, 0)]),
        BuildError::UnalignedLoadAddress { address: 0x1002, .. }
    ));
    assert!(matches!(err(vec![fsbl(), PartitionSpec::raw("e", vec![], 0, 0)]), BuildError::EmptyPayload { .. }));
    assert!(matches!(err(vec![fsbl().checksum(ChecksumType::Sha3)]), BuildError::UnsupportedChecksum { .. }));
    assert!(matches!(err(vec![fsbl(), raw("m").checksum(ChecksumType::Md5)]), BuildError::UnsupportedChecksum { .. }));
    assert!(matches!(err(vec![fsbl(), PartitionSpec::elf("x", b"nope".to_vec())]), BuildError::Elf { .. }));
    assert!(matches!(err(vec![fsbl(), PartitionSpec::bitstream("b", vec![0; 8])]), BuildError::Bitstream { .. }));
    assert!(matches!(err(vec![fsbl(), raw("")]), BuildError::Name { .. }));
    let big_pmu = PartitionSpec::raw("p", vec![0; 0x2_0004], 0, 0).role(PartitionRole::PmuFirmware);
    assert!(matches!(err(vec![fsbl(), big_pmu]), BuildError::PmuFirmwareTooLarge { len: 0x2_0004, .. }));
    let many: Vec<_> = std::iter::once(fsbl()).chain((0..32).map(|i| raw(&format!("p{i}")))).collect();
    let e = err(many);
    assert!(matches!(e, BuildError::TooMany { what: "images", count: 33, max: 32 }), "{e}");
    let ok: Vec<_> = std::iter::once(fsbl()).chain((0..31).map(|i| raw(&format!("p{i}")))).collect();
    let image = build(&ImageSpec::new(ok)).unwrap();
    let parsed = parse(&image).unwrap();
    assert_eq!(parsed.partitions.len(), 32);
    // With 32 partitions only the authentication certificate space is reserved.
    assert_eq!(parsed.partitions[0].data_offset, 0x1100 + 32 * 64 + 0xEC0);
}

#[test]
fn image_without_boot_loader() {
    let spec = ImageSpec::new(vec![
        PartitionSpec::raw("a", vec![1; 8], 0x1000, 0x1000),
        PartitionSpec::raw("b", vec![2; 8], 0x2000, 0),
    ]);
    let parsed = parse(&build(&spec).unwrap()).unwrap();
    assert_eq!(parsed.boot_header.source_offset, 0);
    assert_eq!(parsed.boot_header.fsbl_len, 0);
    assert!(parsed.fsbl.is_none());
    assert!(parsed.partitions.iter().all(|p| !p.is_boot_loader));
}

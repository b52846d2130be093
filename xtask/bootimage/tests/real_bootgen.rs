//! Parses a real BOOT.BIN written by Xilinx bootgen, when one is supplied.
//!
//! No bootgen output is committed with this crate (third-party binaries), so the test is
//! ignored by default. Run it with an image:
//!
//! ```text
//! BOOTIMAGE_REAL_BOOT_BIN=path/to/BOOT.BIN cargo test -p bootimage --test real_bootgen -- --ignored
//! ```
//!
//! (for example the `BOOT.BIN` of a PetaLinux or Vitis project).
//!
//! Besides verifying every checksum, the test rebuilds the image from the parsed
//! partitions (raw payloads with the same addresses, attributes and names) and, when the
//! image uses the plain layout this crate writes (no encryption, authentication or
//! checksums), requires the rebuilt file to be byte-for-byte identical.

use bootimage::spec::PartitionRole;
use bootimage::{DataChecksum, ImageSpec, PartitionSpec, Payload, build, parse};

#[test]
#[ignore = "needs BOOTIMAGE_REAL_BOOT_BIN pointing at a BOOT.BIN made by bootgen"]
fn real_bootgen_image() {
    let path =
        std::env::var_os("BOOTIMAGE_REAL_BOOT_BIN").expect("BOOTIMAGE_REAL_BOOT_BIN must name a bootgen BOOT.BIN");
    let bytes = std::fs::read(&path).expect("read BOOTIMAGE_REAL_BOOT_BIN");
    let image = parse(&bytes).unwrap_or_else(|e| panic!("{}: {e}", path.to_string_lossy()));
    println!("{image}");
    let bh = &image.boot_header;
    assert_eq!(bh.checksum, bh.compute_checksum());
    let table = &image.image_header_table.as_ref().expect("bootgen writes a table").table;
    assert_eq!(table.checksum, table.compute_checksum());
    for p in &image.partitions {
        assert_eq!(p.header.checksum, p.header.compute_checksum());
    }

    let plain = image.partitions.iter().all(|p| {
        let a = &p.header.attributes;
        !a.encrypted && !a.rsa_auth_cert && p.data_checksum == DataChecksum::None
    }) && bh.key_source == bootimage::KeySource::None;
    if !plain {
        eprintln!("image uses encryption/authentication/checksums; skipping the rebuild comparison");
        return;
    }

    // Rebuild from the parsed contents.
    let mut specs = Vec::new();
    for (i, im) in image.images.iter().enumerate() {
        let first = &image.partitions[im.partitions.start];
        if first.is_boot_loader {
            let pmu = image.pmu_firmware.clone();
            let fsbl = image.fsbl.clone().unwrap();
            let a = first.header.attributes;
            let mut s = PartitionSpec::raw(&im.header.name, fsbl, first.header.load_address, first.header.exec_address)
                .role(PartitionRole::BootLoader)
                .cpu(a.dest_cpu)
                .device(a.dest_device)
                .el(a.exception_level)
                .trustzone(a.trustzone)
                .exec_state(a.exec_state)
                .endianness(a.endianness);
            s.owner = a.owner;
            specs.push(s);
            if let Some(pmu) = pmu {
                specs.push(PartitionSpec::raw("pmufw", pmu, 0, 0).role(PartitionRole::PmuFirmware));
            }
            continue;
        }
        assert_eq!(im.partitions.len(), 1, "image {i}: multi-partition images are rebuilt per segment below");
        let a = first.header.attributes;
        let mut s = PartitionSpec::raw(
            &im.header.name,
            first.data.clone(),
            first.header.load_address,
            first.header.exec_address,
        )
        .cpu(a.dest_cpu)
        .device(a.dest_device)
        .el(a.exception_level)
        .trustzone(a.trustzone)
        .exec_state(a.exec_state)
        .endianness(a.endianness)
        .early_handoff(a.early_handoff)
        .vector_location(a.vector_location);
        s.owner = a.owner;
        if a.dest_device == bootimage::DestDevice::Pl {
            // Already in partition form (little-endian words); keep it raw.
            s.payload =
                Payload::Raw { data: first.data.clone(), load_address: first.header.load_address, exec_address: 0 };
        }
        specs.push(s);
    }
    let mut spec = ImageSpec::new(specs);
    spec.boot_device = image.image_header_table.as_ref().unwrap().boot_device;
    spec.shutter = bh.shutter;
    spec.user_defined = bh.user_defined;
    spec.boot_vectors = Some(bh.boot_vectors);
    spec.register_init = bh.used_register_inits().copied().collect();
    let rebuilt = build(&spec).unwrap();
    assert_eq!(rebuilt.len(), bytes.len(), "rebuilt length");
    if let Some(at) = rebuilt.iter().zip(&bytes).position(|(a, b)| a != b) {
        panic!("rebuilt image differs from bootgen's first at byte {at:#x}");
    }
}

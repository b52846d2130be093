//! Corrupted images are rejected with precise, typed errors.

mod common;

use bootimage::boot_header::BootHeaderError;
use bootimage::image_header::ImageHeaderError;
use bootimage::partition_header::PartitionHeaderError;
use bootimage::spec::PartitionRole;
use bootimage::{ChecksumType, DestCpu, ImageSpec, ParseError, PartitionSpec, build, parse};
use common::*;

/// FSBL (+PMU FW), an app with two ELF segments, and a data blob with a SHA3 checksum.
fn base() -> Vec<u8> {
    let fsbl = make_elf(true, false, EM_AARCH64, 0xFFFC_0000, &[Seg::load(0xFFFC_0000, vec![0x11; 300])]);
    let app = make_elf(
        true,
        false,
        EM_AARCH64,
        0x10_0000,
        &[Seg::load(0x10_0000, vec![0x22; 200]), Seg::load(0x20_0000, vec![0x33; 100])],
    );
    build(&ImageSpec::new(vec![
        PartitionSpec::elf("fsbl.elf", fsbl).role(PartitionRole::BootLoader).cpu(DestCpu::A53_0),
        PartitionSpec::raw("pmufw.bin", vec![0x44; 64], 0, 0).role(PartitionRole::PmuFirmware),
        PartitionSpec::elf("app.elf", app).cpu(DestCpu::A53_1),
        PartitionSpec::raw("blob", vec![0x55; 128], 0x3000_0000, 0).checksum(ChecksumType::Sha3),
    ]))
    .unwrap()
}

/// Byte offsets of the interesting structures of `base()`.
struct Offsets {
    iht: usize,
    ih: Vec<usize>,
    ph: Vec<usize>,
    data: Vec<usize>,
}

fn offsets(image: &[u8]) -> Offsets {
    let p = parse(image).unwrap();
    Offsets {
        iht: p.image_header_table.as_ref().unwrap().offset as usize,
        ih: p.images.iter().map(|i| i.offset as usize).collect(),
        ph: p.partitions.iter().map(|p| p.header_offset as usize).collect(),
        data: p.partitions.iter().map(|p| p.data_offset as usize).collect(),
    }
}

fn err(image: &[u8]) -> ParseError {
    parse(image).expect_err("corrupted image must be rejected")
}

#[test]
fn base_image_parses() {
    let o = offsets(&base());
    assert_eq!(o.ph.len(), 4);
    assert_eq!(o.ih.len(), 3);
}

#[test]
fn bad_boot_header_checksum() {
    let mut img = base();
    img[0x2C] ^= 0x04; // FSBL execution address
    let e = err(&img);
    assert!(matches!(e, ParseError::BootHeader(BootHeaderError::BadChecksum { .. })), "{e:?}");
    let msg = e.to_string();
    assert!(
        msg.contains("boot header checksum at 0x48") && msg.contains("stored") && msg.contains("computed"),
        "{msg}"
    );
}

#[test]
fn wrong_magic() {
    let mut img = base();
    put_u32(&mut img, 0x20, 0x6655_99AA);
    fix_all_checksums(&mut img);
    let e = err(&img);
    assert!(matches!(e, ParseError::BootHeader(BootHeaderError::BadWidthDetection { found: 0x6655_99AA })), "{e:?}");
    assert!(e.to_string().contains("0x6655_99aa".replace('_', "").as_str()), "{e}");

    let mut img = base();
    img[0x24..0x28].copy_from_slice(b"XLNX");
    fix_all_checksums(&mut img);
    let e = err(&img);
    assert!(matches!(e, ParseError::BootHeader(BootHeaderError::BadIdentification { .. })), "{e:?}");
    assert!(e.to_string().contains("XNLX"));
}

#[test]
fn truncated_headers() {
    let img = base();
    let o = offsets(&img);
    assert!(matches!(
        err(&img[..0x100]),
        ParseError::BootHeader(BootHeaderError::Truncated { needed: 0x8B8, available: 0x100 })
    ));
    assert!(matches!(err(&[]), ParseError::BootHeader(BootHeaderError::Truncated { .. })));
    let e = err(&img[..o.iht + 10]);
    assert!(
        matches!(e, ParseError::ImageHeader(ImageHeaderError::Truncated { what: "image header table", .. })),
        "{e:?}"
    );
    let e = err(&img[..o.ih[0] + 8]);
    assert!(matches!(e, ParseError::ImageHeader(ImageHeaderError::Truncated { what: "image header", .. })), "{e:?}");
    let e = err(&img[..o.ph[1] + 63]);
    assert!(
        matches!(e, ParseError::PartitionHeader { index: 1, source: PartitionHeaderError::Truncated { .. } }),
        "{e:?}"
    );
    assert!(e.to_string().starts_with("partition 1: truncated partition header"), "{e}");
}

#[test]
fn bad_partition_header_checksum() {
    let mut img = base();
    let o = offsets(&img);
    img[o.ph[2] + 0x18] ^= 0x80; // load address
    let e = err(&img);
    assert!(
        matches!(e, ParseError::PartitionHeader { index: 2, source: PartitionHeaderError::BadChecksum { .. } }),
        "{e:?}"
    );
    assert!(e.to_string().contains("bad partition header checksum"), "{e}");
}

#[test]
fn bad_image_header_table_checksum() {
    let mut img = base();
    let o = offsets(&img);
    img[o.iht + 0x14] = 1;
    let e = err(&img);
    assert!(matches!(e, ParseError::ImageHeader(ImageHeaderError::BadChecksum { .. })), "{e:?}");
}

#[test]
fn truncated_partition() {
    let img = base();
    let o = offsets(&img);
    // Cut inside the last partition's data.
    let e = err(&img[..o.data[3] + 20]);
    assert!(matches!(&e, ParseError::OutOfBounds { what, .. } if what == "partition 3 data"), "{e:?}");
    assert!(e.to_string().starts_with("truncated file: partition 3 data spans"), "{e}");
}

#[test]
fn overlapping_partitions() {
    let mut img = base();
    let o = offsets(&img);
    // Point partition 2's data at partition 1's.
    let w = get_u32(&img, o.ph[1] + 0x20);
    put_u32(&mut img, o.ph[2] + 0x20, w + 4);
    fix_all_checksums(&mut img);
    let e = err(&img);
    assert!(
        matches!(&e, ParseError::Overlap { first, second, .. } if first == "partition 1 data" && second == "partition 2 data"),
        "{e:?}"
    );
    assert!(e.to_string().contains("overlaps"), "{e}");

    // Partition data placed over the partition header table.
    let mut img = base();
    put_u32(&mut img, o.ph[2] + 0x20, (o.ph[0] / 4) as u32);
    fix_all_checksums(&mut img);
    assert!(matches!(err(&img), ParseError::Overlap { .. }));
}

#[test]
fn zero_length_partition() {
    let mut img = base();
    let o = offsets(&img);
    for f in [0x0, 0x4, 0x8] {
        put_u32(&mut img, o.ph[2] + f, 0);
    }
    fix_all_checksums(&mut img);
    let e = err(&img);
    assert!(matches!(e, ParseError::ZeroLength { index: 2, .. }), "{e:?}");
    assert!(e.to_string().contains("zero length"), "{e}");
}

#[test]
fn inconsistent_lengths() {
    let mut img = base();
    let o = offsets(&img);
    let t = get_u32(&img, o.ph[1] + 0x8);
    put_u32(&mut img, o.ph[1] + 0x8, t + 1);
    fix_all_checksums(&mut img);
    let e = err(&img);
    assert!(matches!(e, ParseError::Lengths { index: 1, .. }), "{e:?}");
    assert!(e.to_string().contains("encrypted = unencrypted = total"), "{e}");

    // Boot header FSBL length larger than its total.
    let mut img = base();
    let total = get_u32(&img, 0x40);
    put_u32(&mut img, 0x3C, total + 4);
    fix_all_checksums(&mut img);
    assert!(matches!(err(&img), ParseError::Inconsistent(m) if m.contains("FSBL length (0x3C)")));

    // Boot header source offset beyond the end of the file.
    let mut img = base();
    let len = img.len() as u32;
    put_u32(&mut img, 0x30, len);
    fix_all_checksums(&mut img);
    assert!(matches!(err(&img), ParseError::OutOfBounds { .. }));
}

#[test]
fn next_offset_loops() {
    let mut img = base();
    let o = offsets(&img);
    put_u32(&mut img, o.ph[2] + 0xC, (o.ph[1] / 4) as u32);
    fix_all_checksums(&mut img);
    let e = err(&img);
    assert!(matches!(e, ParseError::Loop { what: "partition header", .. }), "{e:?}");

    let mut img = base();
    put_u32(&mut img, o.ih[2], (o.ih[0] / 4) as u32);
    let e = err(&img);
    assert!(matches!(e, ParseError::Loop { what: "image header", .. }), "{e:?}");
    assert!(e.to_string().contains("loops"));
}

#[test]
fn list_too_short_and_bad_links() {
    let mut img = base();
    let o = offsets(&img);
    put_u32(&mut img, o.ph[1] + 0xC, 0);
    fix_all_checksums(&mut img);
    assert!(matches!(err(&img), ParseError::ListTooShort { found: 2, expected: 4, .. }));

    // Image header 1 pointing at the wrong partition header.
    let mut img = base();
    put_u32(&mut img, o.ih[1] + 4, (o.ph[3] / 4) as u32);
    assert!(matches!(err(&img), ParseError::Inconsistent(m) if m.contains("image header 1")));

    // Image headers declaring a different total than the table.
    let mut img = base();
    put_u32(&mut img, o.ih[2] + 0xC, 2);
    assert!(matches!(err(&img), ParseError::Inconsistent(m) if m.contains("declare 5 partitions")));
}

#[test]
fn table_fields() {
    let img = base();
    let o = offsets(&img);
    let set = |off: usize, v: u32| {
        let mut i = img.clone();
        put_u32(&mut i, off, v);
        fix_all_checksums(&mut i);
        err(&i)
    };
    assert!(matches!(set(o.iht, 0x0101_0000), ParseError::UnsupportedVersion { found: 0x0101_0000, .. }));
    assert!(matches!(set(o.iht + 4, 0), ParseError::PartitionCount { count: 0, .. }));
    assert!(matches!(set(o.iht + 4, 33), ParseError::PartitionCount { count: 33, .. }));
    let e = set(o.iht + 0x14, 12);
    assert!(matches!(e, ParseError::Attribute(_)), "{e:?}");
    assert!(e.to_string().contains("boot device"));
    assert!(matches!(set(0x98, 0x8C2), ParseError::Misaligned { .. }));
    assert!(matches!(set(0x9C, 0x1140), ParseError::Inconsistent(_)));
    // Reserved destination CPU in a partition header.
    let mut i = img.clone();
    let a = get_u32(&i, o.ph[2] + 0x24);
    put_u32(&mut i, o.ph[2] + 0x24, (a & !0xF00) | 0xF00);
    fix_all_checksums(&mut i);
    let e = err(&i);
    assert!(
        matches!(e, ParseError::PartitionHeader { index: 2, source: PartitionHeaderError::Attributes { .. } }),
        "{e:?}"
    );
    assert!(e.to_string().contains("destination cpu field (partition attribute bits 11:8) is 15"), "{e}");
}

#[test]
fn bad_data_checksum() {
    let mut img = base();
    let o = offsets(&img);
    img[o.data[3] + 5] ^= 1;
    let e = err(&img);
    assert!(matches!(e, ParseError::DataChecksum { index: 3, kind: "SHA3-384", .. }), "{e:?}");
}

#[test]
fn zynq_7000_images_are_identified() {
    let mut img = base();
    put_u32(&mut img, 0x2C, 0x0101_0000); // Zynq-7000 header version
    put_u32(&mut img, 0x44, 1); // Zynq-7000 QSPI configuration word
    fix_all_checksums(&mut img);
    let e = err(&img);
    assert!(matches!(e, ParseError::Zynq7000), "{e:?}");
    assert!(e.to_string().contains("Zynq-7000"));
}

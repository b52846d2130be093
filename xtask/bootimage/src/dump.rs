//! Human-readable dump of a parsed boot image (`impl Display for BootImage`), the
//! output of `cargo xtask bootbin --dump FILE`.
//!
//! Every header field is printed with its offset within the structure, its name and its
//! value in hex; attribute words are decoded; checksums are reported as verified (a
//! [`BootImage`] only exists once [`crate::parse`] has verified them).

use std::fmt::{self, Display, Formatter};

use crate::attributes::BootHeaderAttributes;
use crate::boot_header::REGISTER_INIT_ENTRIES;
use crate::reader::{BootImage, DataChecksum, ParsedPartition};

fn line(f: &mut Formatter<'_>, indent: usize, offset: usize, name: &str, value: impl Display) -> fmt::Result {
    writeln!(f, "{:indent$}0x{offset:02x}  {name:<36} {value}", "")
}

fn sub(f: &mut Formatter<'_>, name: &str, value: impl Display) -> fmt::Result {
    writeln!(f, "{:10}{name:<34} {value}", "")
}

fn hex32(v: u32) -> String {
    format!("{v:#010x}")
}

fn words(ws: &[u32]) -> String {
    ws.iter().map(|w| format!("{w:08x}")).collect::<Vec<_>>().join(" ")
}

fn bytes_of(words: u32) -> String {
    format!("{words:#010x} ({} bytes)", u64::from(words) * 4)
}

fn boot_header_attributes(f: &mut Formatter<'_>, a: BootHeaderAttributes) -> fmt::Result {
    let yes = |b: bool| if b { "yes" } else { "no" };
    sub(f, "fsbl cpu (bits 11:10):", a.fsbl_cpu())?;
    sub(f, "optional key (bits 3:2):", yes(a.optional_key()))?;
    sub(f, "authentication only (bits 5:4):", yes(a.auth_only()))?;
    sub(f, "puf helper data in header (7:6):", yes(a.puf_helper_data_in_boot_header()))?;
    sub(f, "integrity sha3 (bits 9:8):", yes(a.integrity_sha3()))?;
    sub(f, "authentication hash (bits 13:12):", if a.auth_hash_sha2() { "SHA2" } else { "SHA3" })?;
    sub(f, "boot header rsa (bits 15:14):", yes(a.boot_header_rsa()))?;
    sub(f, "puf 4k mode (bits 17:16):", yes(a.puf_4k_mode()))
}

fn partition(f: &mut Formatter<'_>, img: &BootImage, k: usize, p: &ParsedPartition) -> fmt::Result {
    let h = &p.header;
    let a = &h.attributes;
    let image_name = img.image_of(k).map_or("?", |i| i.header.name.as_str());
    writeln!(
        f,
        "Partition {k} ({image_name}) header @ {:#x}: header checksum ok{}",
        p.header_offset,
        if p.is_boot_loader { ", boot loader (loaded by the boot ROM)" } else { "" }
    )?;
    line(f, 2, 0x00, "encrypted data word length:", bytes_of(h.encrypted_word_len))?;
    line(f, 2, 0x04, "unencrypted data word length:", bytes_of(h.unencrypted_word_len))?;
    line(f, 2, 0x08, "total partition word length:", bytes_of(h.total_word_len))?;
    line(
        f,
        2,
        0x0c,
        "next partition header offset:",
        format!(
            "{} (byte {:#x})",
            hex32(h.next_partition_header_word_offset),
            u64::from(h.next_partition_header_word_offset) * 4
        ),
    )?;
    line(f, 2, 0x10, "destination execution address:", format!("{:#018x}", h.exec_address))?;
    line(f, 2, 0x18, "destination load address:", format!("{:#018x}", h.load_address))?;
    line(f, 2, 0x20, "data word offset:", format!("{} (byte {:#x})", hex32(h.data_word_offset), p.data_offset))?;
    line(f, 2, 0x24, "attributes:", hex32(a.to_bits()))?;
    sub(f, "destination cpu:", a.dest_cpu)?;
    sub(f, "destination device:", a.dest_device)?;
    sub(f, "exception level:", a.exception_level)?;
    sub(f, "trustzone:", a.trustzone)?;
    sub(f, "exec state:", a.exec_state)?;
    sub(f, "endianness:", a.endianness)?;
    sub(f, "encrypted:", if a.encrypted { "yes" } else { "no" })?;
    sub(f, "rsa authentication certificate:", if a.rsa_auth_cert { "yes" } else { "no" })?;
    sub(f, "checksum type:", a.checksum)?;
    sub(f, "owner:", a.owner)?;
    sub(f, "early handoff:", if a.early_handoff { "yes" } else { "no" })?;
    sub(f, "vector location:", a.vector_location)?;
    sub(f, "authentication block code:", a.auth_block)?;
    line(f, 2, 0x28, "section count:", hex32(h.section_count))?;
    line(f, 2, 0x2c, "checksum word offset:", hex32(h.checksum_word_offset))?;
    line(f, 2, 0x30, "image header word offset:", hex32(h.image_header_word_offset))?;
    line(f, 2, 0x34, "authentication certificate offset:", hex32(h.auth_cert_word_offset))?;
    line(f, 2, 0x38, "partition number:", hex32(h.partition_number))?;
    line(f, 2, 0x3c, "header checksum:", format!("{} (checksum ok)", hex32(h.checksum)))?;
    let checksum = match p.data_checksum {
        DataChecksum::None => "none".to_string(),
        DataChecksum::Verified { kind, offset } => format!("{kind} at {offset:#x}: checksum ok"),
        DataChecksum::NotVerified { kind } => format!("{kind}: present, not verified"),
    };
    writeln!(
        f,
        "  data: {:#x}..{:#x} ({} bytes), data checksum: {checksum}",
        p.data_offset,
        p.data_offset + p.data.len() as u64,
        p.data.len()
    )
}

impl Display for BootImage {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        let bh = &self.boot_header;
        writeln!(f, "ZynqMP boot image, {} bytes ({:#x})", self.file_len, self.file_len)?;
        writeln!(f, "Boot header @ 0x0 ({:#x} bytes): checksum ok", bh.encoded_len())?;
        line(f, 2, 0x00, "arm vector table:", words(&bh.boot_vectors))?;
        line(f, 2, 0x20, "width detection word:", hex32(bh.width_detection))?;
        line(f, 2, 0x24, "header signature:", format!("{} (\"XNLX\")", hex32(bh.identification)))?;
        line(f, 2, 0x28, "encryption key source:", format!("{} ({})", hex32(bh.key_source.word()), bh.key_source))?;
        line(f, 2, 0x2c, "fsbl execution address:", hex32(bh.fsbl_exec_address))?;
        line(f, 2, 0x30, "source offset:", hex32(bh.source_offset))?;
        line(f, 2, 0x34, "pmu fw length:", hex32(bh.pmu_fw_len))?;
        line(f, 2, 0x38, "total pmu fw length:", hex32(bh.total_pmu_fw_len))?;
        line(f, 2, 0x3c, "fsbl length:", hex32(bh.fsbl_len))?;
        line(f, 2, 0x40, "total fsbl length:", hex32(bh.total_fsbl_len))?;
        line(f, 2, 0x44, "image attributes:", hex32(bh.attributes.0))?;
        boot_header_attributes(f, bh.attributes)?;
        line(f, 2, 0x48, "header checksum:", format!("{} (checksum ok)", hex32(bh.checksum)))?;
        line(f, 2, 0x4c, "obfuscated/black key:", words(&bh.grey_black_key))?;
        line(f, 2, 0x6c, "shutter value:", hex32(bh.shutter))?;
        line(f, 2, 0x70, "user defined:", words(&bh.user_defined))?;
        line(f, 2, 0x98, "image header table offset:", hex32(bh.image_header_table_offset))?;
        line(f, 2, 0x9c, "partition header table offset:", hex32(bh.partition_header_table_offset))?;
        line(f, 2, 0xa0, "secure header iv:", words(&bh.secure_header_iv))?;
        line(f, 2, 0xac, "obfuscated/black key iv:", words(&bh.grey_black_iv))?;
        let used: Vec<_> = bh.used_register_inits().collect();
        line(
            f,
            2,
            0xb8,
            "register initialization table:",
            format!("{} of {REGISTER_INIT_ENTRIES} entries used", used.len()),
        )?;
        for r in used {
            sub(f, &format!("[{:#010x}]", r.address), format!("<- {}", hex32(r.value)))?;
        }
        if bh.puf_helper_data.is_some() {
            writeln!(f, "  0x8b8 puf helper data: 1544 bytes")?;
        }
        if let Some(p) = &self.pmu_firmware {
            writeln!(f, "PMU firmware (boot ROM): {:#x}, {} bytes", bh.source_offset, p.len())?;
        }
        if let Some(fsbl) = &self.fsbl {
            writeln!(
                f,
                "FSBL (boot ROM): {:#x}, {} bytes, entry {:#010x} on {}",
                u64::from(bh.source_offset) + u64::from(bh.total_pmu_fw_len),
                fsbl.len(),
                bh.fsbl_exec_address,
                bh.attributes.fsbl_cpu()
            )?;
        }
        let Some(t) = &self.image_header_table else {
            return writeln!(f, "No image header table (boot header 0x98 is 0)");
        };
        let iht = &t.table;
        writeln!(f, "Image header table @ {:#x}: checksum ok", t.offset)?;
        line(f, 2, 0x00, "version:", hex32(iht.version))?;
        line(f, 2, 0x04, "partition count:", hex32(iht.partition_count))?;
        line(
            f,
            2,
            0x08,
            "first partition header word offset:",
            format!(
                "{} (byte {:#x})",
                hex32(iht.first_partition_header_word_offset),
                u64::from(iht.first_partition_header_word_offset) * 4
            ),
        )?;
        line(
            f,
            2,
            0x0c,
            "first image header word offset:",
            format!(
                "{} (byte {:#x})",
                hex32(iht.first_image_header_word_offset),
                u64::from(iht.first_image_header_word_offset) * 4
            ),
        )?;
        line(f, 2, 0x10, "header auth certificate offset:", hex32(iht.header_auth_cert_word_offset))?;
        line(f, 2, 0x14, "boot device:", format!("{} ({})", hex32(iht.boot_device), t.boot_device))?;
        line(f, 2, 0x18, "reserved:", words(&iht.reserved))?;
        line(f, 2, 0x3c, "checksum:", format!("{} (checksum ok)", hex32(iht.checksum)))?;
        for (i, im) in self.images.iter().enumerate() {
            let h = &im.header;
            writeln!(f, "Image {i} \"{}\" header @ {:#x}", h.name, im.offset)?;
            line(f, 2, 0x00, "next image header word offset:", hex32(h.next_image_header_word_offset))?;
            line(f, 2, 0x04, "partition header word offset:", hex32(h.partition_header_word_offset))?;
            line(f, 2, 0x08, "reserved:", hex32(h.reserved))?;
            line(f, 2, 0x0c, "partition count:", hex32(h.partition_count))?;
            line(f, 2, 0x10, "image name:", format!("{:?}", h.name))?;
            writeln!(f, "  partitions: {:?}", im.partitions)?;
        }
        for (k, p) in self.partitions.iter().enumerate() {
            partition(f, self, k, p)?;
        }
        Ok(())
    }
}

//! Puts `boot/link` on the linker search path of every image that depends on `boot`, so the
//! image crates can name `a53-kernel.ld` (and the R5 memory description they generate) with -T.
fn main() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("link");
    println!("cargo:rustc-link-search={}", dir.display());
    println!("cargo:rerun-if-changed=link");
}

//! Links the test image like the kernel image: `a53-kernel.ld` (from `boot/link`) with the
//! kernel's generated `kernel-memory.ld`, both on the search path through the build scripts of
//! `boot` and `a53-kernel`.
fn main() {
    if std::env::var("TARGET").unwrap() == "aarch64-unknown-none" {
        println!("cargo:rustc-link-arg-bins=-Ta53-kernel.ld");
        println!("cargo:rustc-link-arg-bins=-Tdefmt.x");
    }
    println!("cargo:rerun-if-changed=build.rs");
}

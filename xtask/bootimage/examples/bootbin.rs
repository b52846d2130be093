//! Minimal command line front end, the shape `cargo xtask bootbin` is expected to take:
//!
//! ```text
//! cargo run --example bootbin -- --dump BOOT.BIN
//! cargo run --example bootbin -- --build boot.toml BOOT.BIN
//! cargo run --example bootbin -- --sd BOOT.BIN sd.img 64
//! ```

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

fn run(args: &[String]) -> Result<(), Box<dyn std::error::Error>> {
    match args {
        [flag, file] if flag == "--dump" => {
            let bytes = std::fs::read(file)?;
            let dump = bootimage::parse(&bytes)?.to_string();
            std::io::stdout().write_all(dump.as_bytes())?;
        }
        [flag, toml, out] if flag == "--build" => {
            let spec = bootimage::config::load_spec(Path::new(toml))?;
            std::fs::write(out, bootimage::build(&spec)?)?;
        }
        [flag, boot, out, size] if flag == "--sd" => {
            let boot = std::fs::read(boot)?;
            bootimage::sdimage::write_sd_image_file(&boot, Path::new(out), size.parse()?)?;
        }
        _ => {
            return Err("usage: --dump FILE | --build TOML OUT | --sd BOOT.BIN OUT SIZE_MIB".into());
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

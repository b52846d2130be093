//! Decoding of defmt streams (the A53 console, the R5 trace ring) into text lines, using the
//! image's ELF for the format strings and source locations.

use defmt_decoder::{DecodeError, Locations, StreamDecoder, Table};
use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

#[derive(Debug, thiserror::Error)]
pub enum ConsoleError {
    #[error("cannot read {path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("{path}: no defmt table (was the image linked with defmt.x?)")]
    NoTable { path: PathBuf },
    #[error("{path}: {message}")]
    Table { path: PathBuf, message: String },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Trace,
    Debug,
    Info,
    Warn,
    Error,
}

impl Level {
    fn from_defmt(level: defmt_parser::Level) -> Self {
        match level {
            defmt_parser::Level::Trace => Level::Trace,
            defmt_parser::Level::Debug => Level::Debug,
            defmt_parser::Level::Info => Level::Info,
            defmt_parser::Level::Warn => Level::Warn,
            defmt_parser::Level::Error => Level::Error,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Level::Trace => "TRACE",
            Level::Debug => "DEBUG",
            Level::Info => "INFO",
            Level::Warn => "WARN",
            Level::Error => "ERROR",
        }
    }
}

/// One decoded log frame. `println!` frames have no level.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Line {
    pub level: Option<Level>,
    pub timestamp: Option<String>,
    pub text: String,
    /// `file:line` of the log statement, when the ELF has debug information.
    pub location: Option<String>,
}

impl Line {
    /// A line that did not come from a defmt frame (raw text, runner messages).
    pub fn plain(text: impl Into<String>) -> Self {
        Self { level: None, timestamp: None, text: text.into(), location: None }
    }
}

impl fmt::Display for Line {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(ts) = &self.timestamp {
            write!(f, "{ts:>10} ")?;
        }
        if let Some(level) = self.level {
            write!(f, "{:<5} ", level.as_str())?;
        }
        f.write_str(&self.text)?;
        if let (Some(Level::Warn | Level::Error), Some(loc)) = (self.level, &self.location) {
            write!(f, "  ({loc})")?;
        }
        Ok(())
    }
}

/// A parsed ELF: its defmt table and locations, shared by every decoder of that image.
struct Firmware {
    table: Table,
    locations: Locations,
}

fn firmware(path: &Path) -> Result<&'static Firmware, ConsoleError> {
    static CACHE: OnceLock<Mutex<HashMap<PathBuf, &'static Firmware>>> = OnceLock::new();
    let mut cache = CACHE.get_or_init(Default::default).lock().unwrap();
    if let Some(fw) = cache.get(path) {
        return Ok(fw);
    }
    let elf = std::fs::read(path).map_err(|source| ConsoleError::Read { path: path.into(), source })?;
    let table = Table::parse(&elf)
        .map_err(|e| ConsoleError::Table { path: path.into(), message: e.to_string() })?
        .ok_or_else(|| ConsoleError::NoTable { path: path.into() })?;
    let locations = table.get_locations(&elf).unwrap_or_default();
    // Tables live for the whole run; leaking them lets decoders borrow them for 'static.
    let fw: &'static Firmware = Box::leak(Box::new(Firmware { table, locations }));
    cache.insert(path.into(), fw);
    Ok(fw)
}

/// Turns a byte stream of rzCOBS-framed defmt frames into [`Line`]s.
pub struct Decoder {
    stream: Box<dyn StreamDecoder + Send + Sync + 'static>,
    firmware: &'static Firmware,
    /// Frames that could not be decoded (lost bytes, a frame cut by a nested one).
    pub malformed: u64,
}

impl Decoder {
    pub fn for_elf(path: &Path) -> Result<Self, ConsoleError> {
        let firmware = firmware(path)?;
        Ok(Self { stream: firmware.table.new_stream_decoder(), firmware, malformed: 0 })
    }

    /// Feeds bytes and returns every frame they complete.
    pub fn feed(&mut self, bytes: &[u8]) -> Vec<Line> {
        self.stream.received(bytes);
        let mut lines = Vec::new();
        loop {
            match self.stream.decode() {
                Ok(frame) => {
                    let location = self.firmware.locations.get(&frame.index()).map(|l| {
                        let file = l.file.to_string_lossy();
                        let short = file.rsplit_once("/src/").map_or(&*file, |(_, rest)| rest);
                        format!("{short}:{}", l.line)
                    });
                    lines.push(Line {
                        level: frame.level().map(Level::from_defmt),
                        timestamp: frame.display_timestamp().map(|t| t.to_string()),
                        text: frame.display_message().to_string(),
                        location,
                    });
                }
                Err(DecodeError::UnexpectedEof) => break,
                Err(DecodeError::Malformed) => self.malformed += 1,
            }
        }
        lines
    }
}

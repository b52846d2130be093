//! `--trace FILE`: Chrome trace-event JSON (loads in Perfetto and chrome://tracing) of forwarded
//! accesses, interrupts and interconnect packets, one process per node and one track per CPU.
//!
//! Events are streamed as they happen; the file is a complete JSON document once the writer is
//! finished (or dropped).
//!
//! A cluster spread over several ranks writes one file per rank, each with the wall-clock time
//! it began (`otherData.start_unix_us`); [`merge`] makes one file of them, on one time line.

use serde_json::{Value, json};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::sync::Mutex;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// Track ids inside a node's process: CPUs use their forwarding slot (0..8).
pub const TRACK_IRQ: u64 = 100;
pub const TRACK_NET: u64 = 101;

/// One forwarded access, for [`TraceWriter::access`].
#[derive(Clone, Copy, Debug)]
pub struct AccessRecord {
    pub node: usize,
    /// The forwarding slot: A53 cores 0..4, R5 4.
    pub cpu: usize,
    pub start_us: f64,
    pub write: bool,
    pub size: u32,
    pub addr: u64,
    pub value: u128,
    pub ok: bool,
}

struct Inner {
    out: BufWriter<File>,
    first: bool,
    finished: bool,
}

pub struct TraceWriter {
    start: Instant,
    inner: Mutex<Inner>,
}

impl TraceWriter {
    pub fn create(path: &Path, nodes: usize) -> std::io::Result<Self> {
        let mut out = BufWriter::new(File::create(path)?);
        let (start, start_unix_us) = (Instant::now(), unix_us(SystemTime::now()));
        writeln!(out, "{{\"displayTimeUnit\":\"ns\",\"otherData\":{{\"{START}\":{start_unix_us}}},\"traceEvents\":[")?;
        let writer = Self { start, inner: Mutex::new(Inner { out, first: true, finished: false }) };
        for node in 0..nodes as u64 {
            writer.event(
                json!({"ph": "M", "name": "process_name", "pid": node, "args": {"name": format!("node{node}")}}),
            );
            for (tid, name) in [(0, "a53 core 0"), (1, "a53 core 1"), (2, "a53 core 2"), (3, "a53 core 3"), (4, "r5")]
                .into_iter()
                .chain([(TRACK_IRQ, "PL interrupts"), (TRACK_NET, "interconnect")])
            {
                writer
                    .event(json!({"ph": "M", "name": "thread_name", "pid": node, "tid": tid, "args": {"name": name}}));
            }
        }
        Ok(writer)
    }

    /// Microseconds since the trace began.
    pub fn now_us(&self) -> f64 {
        self.start.elapsed().as_secs_f64() * 1e6
    }

    pub fn event(&self, event: Value) {
        let mut inner = self.inner.lock().unwrap();
        if inner.finished {
            return;
        }
        let sep: &[u8] = if inner.first { b"" } else { b",\n" };
        inner.first = false;
        let _ =
            inner.out.write_all(sep).and_then(|()| serde_json::to_writer(&mut inner.out, &event).map_err(Into::into));
    }

    /// A forwarded access: a complete ("X") event on the CPU's track, from `start_us` to now.
    pub fn access(&self, a: &AccessRecord) {
        let name = format!("{} {}B {:#x}", if a.write { "write" } else { "read" }, a.size, a.addr);
        self.event(json!({
            "ph": "X", "cat": "mmio", "name": name, "pid": a.node, "tid": a.cpu,
            "ts": a.start_us, "dur": (self.now_us() - a.start_us).max(0.0),
            "args": {"addr": format!("{:#x}", a.addr), "value": format!("{:#x}", a.value), "ok": a.ok}
        }));
    }

    pub fn interrupt(&self, node: usize, line: u8) {
        self.event(json!({"ph": "i", "s": "t", "cat": "irq", "name": format!("PL line {line}"), "pid": node, "tid": TRACK_IRQ, "ts": self.now_us()}));
    }

    pub fn packet(&self, src: usize, dst: usize, channel: u8, bytes: usize, what: &str) {
        self.event(json!({
            "ph": "i", "s": "t", "cat": "interconnect", "name": format!("{what} {src}->{dst}"), "pid": src, "tid": TRACK_NET,
            "ts": self.now_us(), "args": {"channel": channel, "bytes": bytes}
        }));
    }

    /// Ends the JSON document. Later events are ignored.
    pub fn finish(&self) {
        let mut inner = self.inner.lock().unwrap();
        if !inner.finished {
            inner.finished = true;
            let _ = inner.out.write_all(b"\n]}\n").and_then(|()| inner.out.flush());
        }
    }
}

impl Drop for TraceWriter {
    fn drop(&mut self) {
        self.finish();
    }
}

/// Where a trace file says when it began: microseconds since the Unix epoch.
const START: &str = "start_unix_us";

fn unix_us(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_micros() as u64)
}

#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    #[error("{path}: {error}")]
    Io { path: std::path::PathBuf, error: std::io::Error },
    #[error("{path} is not a trace file: {why}")]
    Format { path: std::path::PathBuf, why: String },
    #[error("no trace files to merge")]
    Nothing,
}

/// One trace of the files of several ranks (`inputs`, each written by a [`TraceWriter`]): their
/// events on one time line (each file's shifted by when it began after the first), every
/// process and track named once. A file whose rank died before finishing it is taken as far
/// as it goes. Returns how many events `output` has.
pub fn merge(inputs: &[&Path], output: &Path) -> Result<usize, MergeError> {
    let mut files = Vec::new();
    for &path in inputs {
        let format = |why: String| MergeError::Format { path: path.to_path_buf(), why };
        let text = std::fs::read_to_string(path).map_err(|error| MergeError::Io { path: path.to_path_buf(), error })?;
        // An unfinished file lacks its end, and maybe the end of its last event (events are
        // separated by ",\n").
        let before_last = text.rfind(",\n").map_or(text.as_str(), |at| &text[..at]);
        let doc: Value = serde_json::from_str(&text)
            .or_else(|e| serde_json::from_str(&format!("{text}\n]}}")).map_err(|_| e))
            .or_else(|e| serde_json::from_str(&format!("{before_last}\n]}}")).map_err(|_| e))
            .map_err(|e| format(e.to_string()))?;
        let start = doc["otherData"][START].as_u64().ok_or_else(|| format(format!("no otherData.{START}")))?;
        let Value::Array(events) = doc["traceEvents"].clone() else { return Err(format("no traceEvents".into())) };
        files.push((start, events));
    }
    let first = files.iter().map(|(start, _)| *start).min().ok_or(MergeError::Nothing)?;
    let mut named = std::collections::HashSet::new();
    let mut events = Vec::new();
    for (start, file_events) in files {
        let shift = (start - first) as f64;
        for mut event in file_events {
            if event["ph"] == "M" {
                let key = (event["name"].to_string(), event["pid"].to_string(), event["tid"].to_string());
                if !named.insert(key) {
                    continue;
                }
            } else if let Some(ts) = event["ts"].as_f64() {
                event["ts"] = json!(ts + shift);
            }
            events.push(event);
        }
    }
    let count = events.len();
    let doc = json!({"displayTimeUnit": "ns", "otherData": {START: first}, "traceEvents": events});
    let io = |error| MergeError::Io { path: output.to_path_buf(), error };
    let mut out = BufWriter::new(File::create(output).map_err(io)?);
    serde_json::to_writer(&mut out, &doc).map_err(|e| io(e.into()))?;
    out.flush().map_err(io)?;
    Ok(count)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_is_valid_json_with_the_expected_events() {
        let file = tempfile::NamedTempFile::new().unwrap();
        {
            let trace = TraceWriter::create(file.path(), 2).unwrap();
            let t = trace.now_us();
            trace.access(&AccessRecord {
                node: 1,
                cpu: 3,
                start_us: t,
                write: true,
                size: 4,
                addr: 0x8000_0014,
                value: 0x1234,
                ok: true,
            });
            trace.interrupt(0, 1);
            trace.packet(0, 1, 2, 32, "datagram");
        }
        let doc: Value = serde_json::from_str(&std::fs::read_to_string(file.path()).unwrap()).unwrap();
        let events = doc["traceEvents"].as_array().unwrap();
        let access = events.iter().find(|e| e["cat"] == "mmio").unwrap();
        assert_eq!(
            (access["ph"].as_str(), access["pid"].as_u64(), access["tid"].as_u64()),
            (Some("X"), Some(1), Some(3))
        );
        assert_eq!(access["args"]["addr"], "0x80000014");
        assert!(events.iter().any(|e| e["cat"] == "irq" && e["name"] == "PL line 1"));
        assert!(events.iter().any(|e| e["cat"] == "interconnect" && e["args"]["bytes"] == 32));
        assert!(events.iter().any(|e| e["name"] == "process_name" && e["args"]["name"] == "node1"));
    }

    #[test]
    fn the_files_of_several_ranks_merge_into_one_time_line() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b, out) = (dir.path().join("rank0.json"), dir.path().join("rank1.json"), dir.path().join("all.json"));
        let first = TraceWriter::create(&a, 2).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        let second = TraceWriter::create(&b, 2).unwrap();
        first.packet(0, 1, 1, 32, "packet");
        second.packet(1, 0, 1, 32, "packet");
        first.finish();
        // The second rank died: its file has no end.
        second.inner.lock().unwrap().out.flush().unwrap();
        std::mem::forget(second);
        let mut cut = std::fs::OpenOptions::new().append(true).open(&b).unwrap();
        cut.write_all(b",\n{\"ph\":\"i\",\"na").unwrap();

        merge(&[&a, &b], &out).unwrap();
        let doc: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
        let events = doc["traceEvents"].as_array().unwrap();
        let names = events.iter().filter(|e| e["name"] == "process_name").count();
        assert_eq!(names, 2, "each node named once");
        let ts = |name: &str| events.iter().find(|e| e["name"] == name).unwrap()["ts"].as_f64().unwrap();
        let (early, late) = (ts("packet 0->1"), ts("packet 1->0"));
        assert!(late >= 20_000.0 && late > early, "the later rank's events shifted by its later start: {early} {late}");

        std::fs::write(&a, "{}").unwrap();
        assert!(matches!(merge(&[&a], &out), Err(MergeError::Format { .. })));
        assert!(matches!(merge(&[], &out), Err(MergeError::Nothing)));
        assert!(matches!(merge(&[&dir.path().join("none")], &out), Err(MergeError::Io { .. })));
    }
}

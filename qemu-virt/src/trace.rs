//! `--trace FILE`: Chrome trace-event JSON (loads in Perfetto and chrome://tracing) of forwarded
//! accesses, interrupts and interconnect packets, one process per node and one track per CPU.
//!
//! Events are streamed as they happen; the file is a complete JSON document once the writer is
//! finished (or dropped).

use serde_json::{Value, json};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::sync::Mutex;
use std::time::Instant;

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
        out.write_all(b"{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n")?;
        let writer = Self { start: Instant::now(), inner: Mutex::new(Inner { out, first: true, finished: false }) };
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
}

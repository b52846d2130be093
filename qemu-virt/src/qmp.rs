//! A minimal QMP client: enough to release a node paused with `-S` and to stop it.

use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;

#[derive(Debug, thiserror::Error)]
pub enum QmpError {
    #[error("QMP i/o: {0}")]
    Io(#[from] std::io::Error),
    #[error("QMP protocol: {0}")]
    Protocol(String),
}

pub struct Qmp {
    reader: BufReader<UnixStream>,
    writer: UnixStream,
}

impl Qmp {
    /// Takes a connected QMP socket, reads the greeting and enters command mode.
    pub fn handshake(stream: UnixStream) -> Result<Self, QmpError> {
        let writer = stream.try_clone()?;
        let mut qmp = Self { reader: BufReader::new(stream), writer };
        let greeting = qmp.read_message()?;
        if greeting.get("QMP").is_none() {
            return Err(QmpError::Protocol(format!("unexpected greeting {greeting}")));
        }
        qmp.execute("qmp_capabilities")?;
        Ok(qmp)
    }

    fn read_message(&mut self) -> Result<Value, QmpError> {
        let mut line = String::new();
        loop {
            line.clear();
            if self.reader.read_line(&mut line)? == 0 {
                return Err(QmpError::Protocol("connection closed".into()));
            }
            let value: Value = serde_json::from_str(&line).map_err(|e| QmpError::Protocol(e.to_string()))?;
            // Asynchronous events interleave with replies; they are not what we wait for.
            if value.get("event").is_none() {
                return Ok(value);
            }
        }
    }

    /// Runs a command without arguments and returns its `return` value.
    pub fn execute(&mut self, command: &str) -> Result<Value, QmpError> {
        writeln!(self.writer, "{}", json!({ "execute": command }))?;
        let reply = self.read_message()?;
        match (reply.get("return"), reply.get("error")) {
            (Some(ret), _) => Ok(ret.clone()),
            (_, Some(err)) => Err(QmpError::Protocol(format!("{command}: {err}"))),
            _ => Err(QmpError::Protocol(format!("{command}: unexpected reply {reply}"))),
        }
    }
}

//! `log!`: `format!`-style lines, formatted into a buffer on the stack and written with one LOG
//! call. A line longer than `LOG_MAX` bytes is cut at a character boundary and ends in "...",
//! so the kernel always receives valid UTF-8.

use core::fmt;

use proto::syscall::LOG_MAX;

const MAX: usize = LOG_MAX as usize;
const ELLIPSIS: &str = "...";

/// One log line being formatted.
pub struct Line {
    buf: [u8; MAX],
    len: usize,
    truncated: bool,
}

impl Line {
    pub const fn new() -> Self {
        Self { buf: [0; MAX], len: 0, truncated: false }
    }

    /// The finished line: what was written, or its longest prefix that fits with "..." after it.
    pub fn as_str(&self) -> &str {
        // Only whole `&str` prefixes cut at character boundaries are ever copied in.
        core::str::from_utf8(&self.buf[..self.len]).unwrap_or("")
    }

    fn push(&mut self, s: &str) {
        let room = MAX - self.len;
        let take = floor_char_boundary(s, room);
        self.buf[self.len..self.len + take].copy_from_slice(&s.as_bytes()[..take]);
        self.len += take;
        if take < s.len() {
            self.truncate();
        }
    }

    /// Makes room for the ellipsis at a character boundary and stops accepting text.
    fn truncate(&mut self) {
        if self.truncated {
            return;
        }
        self.truncated = true;
        let mut keep = self.len.min(MAX - ELLIPSIS.len());
        while keep > 0 && (self.buf[keep] & 0xc0) == 0x80 {
            keep -= 1;
        }
        self.buf[keep..keep + ELLIPSIS.len()].copy_from_slice(ELLIPSIS.as_bytes());
        self.len = keep + ELLIPSIS.len();
    }
}

impl Default for Line {
    fn default() -> Self {
        Self::new()
    }
}

/// The largest `n <= max` such that `s[..n]` ends on a character boundary.
fn floor_char_boundary(s: &str, max: usize) -> usize {
    if max >= s.len() {
        return s.len();
    }
    (0..=max).rev().find(|&i| s.is_char_boundary(i)).unwrap_or(0)
}

impl fmt::Write for Line {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        if !self.truncated {
            self.push(s);
        }
        Ok(())
    }
}

/// Formats `args` and writes the line to the console. Logging never fails the caller.
pub fn log_args(args: fmt::Arguments<'_>) {
    let mut line = Line::new();
    let _ = fmt::Write::write_fmt(&mut line, args);
    let _ = crate::sys::log(line.as_str().as_bytes());
}

/// Writes a `format!`-style line to the node's console (system call LOG).
#[macro_export]
macro_rules! log {
    ($($arg:tt)*) => {
        $crate::log_args(core::format_args!($($arg)*))
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::fmt::Write;

    #[test]
    fn short_lines_are_kept_whole() {
        let mut l = Line::new();
        write!(l, "node {} of {}", 1, 4).unwrap();
        assert_eq!(l.as_str(), "node 1 of 4");
    }

    #[test]
    fn long_lines_end_in_an_ellipsis_at_a_char_boundary() {
        let mut l = Line::new();
        for _ in 0..MAX {
            write!(l, "é").unwrap();
        }
        let s = l.as_str();
        assert!(s.len() <= MAX && s.ends_with(ELLIPSIS), "{}", s.len());
        assert!(s.trim_end_matches(ELLIPSIS).chars().all(|c| c == 'é'));

        let mut l = Line::new();
        write!(l, "{}", "a".repeat(MAX)).unwrap();
        write!(l, "more").unwrap();
        assert_eq!(l.as_str().len(), MAX);
        assert!(l.as_str().ends_with("a..."));
    }

    #[test]
    fn exactly_full_is_not_truncated() {
        let mut l = Line::new();
        write!(l, "{}", "b".repeat(MAX)).unwrap();
        assert_eq!(l.as_str(), "b".repeat(MAX));
    }
}

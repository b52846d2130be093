//! The terminal while `cargo xtask qemu` forwards keys to node 0's console: raw, so that each key
//! goes at once and is not echoed, and restored on every way out (return, error, Ctrl-C, which
//! ends the run through its handler, and panic).

use std::os::fd::RawFd;
use std::sync::Mutex;

/// The settings to restore, for the panic hook.
static SAVED: Mutex<Option<(RawFd, libc::termios)>> = Mutex::new(None);

/// The terminal on `fd` in raw mode until this is dropped.
pub struct RawMode {
    fd: RawFd,
    saved: libc::termios,
}

impl RawMode {
    /// Raw input (no line buffering, no echo) with output processing and signals kept: Ctrl-C
    /// still interrupts, and `\n` still starts a new line.
    pub fn enter(fd: RawFd) -> std::io::Result<Self> {
        // SAFETY: termios is plain data; tcgetattr fills it or fails.
        let mut saved: libc::termios = unsafe { std::mem::zeroed() };
        // SAFETY: `fd` is open; `saved` is a valid termios to write.
        if unsafe { libc::tcgetattr(fd, &mut saved) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        let mut raw = saved;
        raw.c_lflag &= !(libc::ICANON | libc::ECHO | libc::IEXTEN);
        raw.c_iflag &= !(libc::ICRNL | libc::IXON);
        raw.c_cc[libc::VMIN] = 1;
        raw.c_cc[libc::VTIME] = 0;
        install_panic_hook();
        *SAVED.lock().unwrap_or_else(|e| e.into_inner()) = Some((fd, saved));
        // SAFETY: as above, with a termios derived from the terminal's own.
        if unsafe { libc::tcsetattr(fd, libc::TCSANOW, &raw) } != 0 {
            SAVED.lock().unwrap_or_else(|e| e.into_inner()).take();
            return Err(std::io::Error::last_os_error());
        }
        Ok(Self { fd, saved })
    }
}

impl Drop for RawMode {
    fn drop(&mut self) {
        // SAFETY: restores the settings read in `enter` on the same descriptor.
        unsafe { libc::tcsetattr(self.fd, libc::TCSANOW, &self.saved) };
        SAVED.lock().unwrap_or_else(|e| e.into_inner()).take();
    }
}

fn install_panic_hook() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if let Some((fd, saved)) = SAVED.lock().unwrap_or_else(|e| e.into_inner()).take() {
                // SAFETY: restores the saved settings; nothing else is touched.
                unsafe { libc::tcsetattr(fd, libc::TCSANOW, &saved) };
            }
            previous(info);
        }));
    });
}

//! Reading a real serial port (a board's console): raw mode at a given baud rate.

use anyhow::{Context, bail};
use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::Path;

fn baud_constant(baud: u32) -> anyhow::Result<libc::speed_t> {
    Ok(match baud {
        9600 => libc::B9600,
        19_200 => libc::B19200,
        38_400 => libc::B38400,
        57_600 => libc::B57600,
        115_200 => libc::B115200,
        230_400 => libc::B230400,
        460_800 => libc::B460800,
        921_600 => libc::B921600,
        other => bail!("unsupported baud rate {other}"),
    })
}

/// Opens `path` for reading and writing in raw mode (8N1, no flow control, no echo).
pub fn open(path: &Path, baud: u32) -> anyhow::Result<File> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .with_context(|| format!("cannot open serial port {}", path.display()))?;
    let fd = file.as_raw_fd();
    // SAFETY: termios is plain data; tcgetattr fills it for a valid fd.
    let mut tio: libc::termios = unsafe { std::mem::zeroed() };
    // SAFETY: fd is open for the lifetime of `file`; tio is a valid termios.
    if unsafe { libc::tcgetattr(fd, &mut tio) } != 0 {
        bail!("{} is not a terminal: {}", path.display(), std::io::Error::last_os_error());
    }
    // SAFETY: cfmakeraw/cfset*speed only modify the struct.
    unsafe {
        libc::cfmakeraw(&mut tio);
        let speed = baud_constant(baud)?;
        libc::cfsetispeed(&mut tio, speed);
        libc::cfsetospeed(&mut tio, speed);
    }
    tio.c_cflag |= libc::CLOCAL | libc::CREAD;
    tio.c_cflag &= !libc::CRTSCTS;
    tio.c_cc[libc::VMIN] = 0;
    tio.c_cc[libc::VTIME] = 1; // reads return after 100 ms without data
    // SAFETY: as above.
    if unsafe { libc::tcsetattr(fd, libc::TCSANOW, &tio) } != 0 {
        bail!("cannot configure {}: {}", path.display(), std::io::Error::last_os_error());
    }
    Ok(file)
}

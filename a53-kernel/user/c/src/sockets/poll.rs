//! `poll` over sockets, the console and the event counter, with one `SOCKET_POLL` for all the
//! sockets and the counter, so that the process sleeps until any of them is ready.

use proto::socket::{EVENT_COUNTER, POLL_MAX, PollEntry, ready};

use super::addr::{POLLERR, POLLHUP, POLLIN, POLLNVAL, POLLOUT, POLLRDHUP};
use super::fds::{Connection, Kind};
use super::{Errno, Net, Sockets};

/// C's `struct pollfd`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PollFd {
    pub fd: i32,
    pub events: i16,
    pub revents: i16,
}

/// What the kernel is asked about a descriptor: the readiness bits `events` need, and only
/// those (`ASKED_ONLY`), so that the wait does not end at a hang-up that is no event here (a
/// peer that stopped reading). The peer's end is asked for when it is `POLLRDHUP`, or
/// `POLLHUP` (always reported) because this end's writing is shut.
fn interest(events: i16, connection: Option<Connection>) -> u16 {
    let mut bits = ready::ASKED_ONLY;
    if events & POLLIN != 0 {
        bits |= ready::READABLE;
    }
    if events & POLLOUT != 0 {
        bits |= ready::WRITABLE;
    }
    if events & POLLRDHUP != 0 || connection.is_some_and(|c| c.write_shut) {
        bits |= ready::ENDED;
    }
    bits
}

/// The `revents` of a descriptor the kernel answered `bits` for. `POLLHUP` is Linux's: the
/// connection is over both ways (it broke, or the peer's stream ended and this end shut its
/// writing); the peer's end alone is `POLLRDHUP`, asked for. A peer that only stopped reading
/// (`HANGUP` without `ENDED`) is none of them: writes fail (`POLLOUT`, then `EPIPE`), and it
/// may still write. (A closing peer stops reading before its stream ends, so `HANGUP` alone
/// must not be taken for the end.)
fn revents(bits: u16, events: i16, connection: Option<Connection>) -> i16 {
    let mut r = 0;
    if bits & ready::READABLE != 0 {
        r |= POLLIN;
    }
    if bits & ready::WRITABLE != 0 {
        r |= POLLOUT;
    }
    if bits & ready::ERROR != 0 {
        r |= POLLERR | POLLHUP | events & POLLRDHUP;
    }
    if bits & ready::ENDED != 0 {
        r |= events & POLLRDHUP;
        if connection.is_some_and(|c| c.write_shut) {
            r |= POLLHUP;
        }
    }
    if bits & ready::INVALID != 0 {
        r |= POLLNVAL;
    }
    r
}

/// `poll`'s timeout in milliseconds as the kernel's in microseconds (negative: none).
fn timeout_us(ms: i32) -> u64 {
    u64::try_from(ms).map_or(u64::MAX, |ms| ms * 1000)
}

impl<N: Net> Sockets<N> {
    /// `poll(fds, nfds, timeout)`: each `revents`, and how many are not 0. A negative `fd` is
    /// skipped; one that is not open is `POLLNVAL`; the console is always ready (`stdin` reads
    /// its end, `stdout` and `stderr` take anything); an unconnected socket is `POLLHUP`, as on
    /// Linux. More than `POLL_MAX` (64) sockets at once is `EINVAL`.
    pub fn poll(&mut self, fds: &mut [PollFd], timeout_ms: i32) -> Result<usize, Errno> {
        let mut entries = [PollEntry::default(); POLL_MAX];
        let mut asked = [0usize; POLL_MAX];
        let mut count = 0;
        for (i, p) in fds.iter_mut().enumerate() {
            p.revents = 0;
            if p.fd < 0 {
                continue;
            }
            let mut connection = None;
            let handle = match self.fds.get(p.fd).map(|f| f.kind) {
                Err(_) => {
                    p.revents = POLLNVAL;
                    continue;
                }
                Ok(Kind::Console) => {
                    p.revents = p.events & if p.fd == 0 { POLLIN } else { POLLOUT };
                    continue;
                }
                Ok(Kind::Unconnected { .. }) => {
                    p.revents = POLLHUP;
                    continue;
                }
                Ok(Kind::Listener { handle, .. }) => handle as u32,
                Ok(Kind::Connected(c)) => {
                    connection = Some(c);
                    c.handle as u32
                }
                Ok(Kind::EventCounter) => EVENT_COUNTER,
            };
            if count == POLL_MAX {
                return Err(Errno::EINVAL);
            }
            entries[count] = PollEntry { handle, interest: interest(p.events, connection), ready: 0 };
            asked[count] = i;
            count += 1;
        }
        // Something is ready already: the kernel is only asked what else is.
        let timeout = if fds.iter().any(|p| p.revents != 0) { 0 } else { timeout_us(timeout_ms) };
        if count > 0 {
            self.net.poll(&mut entries[..count], timeout)?;
            for (e, &i) in entries[..count].iter().zip(&asked[..count]) {
                let connection = match self.fds.get(fds[i].fd).map(|f| f.kind) {
                    Ok(Kind::Connected(c)) => Some(c),
                    _ => None,
                };
                fds[i].revents = revents(e.ready, fds[i].events, connection);
            }
        } else if timeout == u64::MAX {
            // Nothing to wait for, for ever: as POSIX has it, the call does not return (but a
            // signal ends it).
            loop {
                self.net.sleep_us(u64::from(u32::MAX))?;
            }
        } else if timeout > 0 {
            self.net.sleep_us(timeout)?;
        }
        Ok(fds.iter().filter(|p| p.revents != 0).count())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readiness_bits_become_linux_revents() {
        let shut = Connection {
            handle: 1,
            peer: crate::sockets::addr::SockAddr { node: 0, port: 1 },
            port: 0,
            write_shut: true,
            reset_reported: false,
        };
        let open = Connection { write_shut: false, ..shut };
        let both = POLLIN | POLLOUT | POLLRDHUP;
        let asked = ready::ASKED_ONLY | ready::READABLE | ready::WRITABLE;
        assert_eq!(interest(both, Some(open)), asked | ready::ENDED);
        assert_eq!(interest(POLLIN | POLLOUT, Some(open)), asked, "no hang-up ends this wait");
        assert_eq!(interest(POLLIN | POLLOUT, Some(shut)), asked | ready::ENDED, "for POLLHUP");
        assert_eq!(interest(POLLIN, None), ready::ASKED_ONLY | ready::READABLE, "a listener");
        let ended = ready::READABLE | ready::HANGUP | ready::ENDED;
        assert_eq!(revents(ready::READABLE | ready::WRITABLE, both, Some(open)), POLLIN | POLLOUT);
        assert_eq!(revents(ended, both, Some(open)), POLLIN | POLLRDHUP, "half closed");
        assert_eq!(revents(ended, POLLIN, Some(open)), POLLIN, "POLLRDHUP is asked for");
        assert_eq!(revents(ended, POLLIN, Some(shut)), POLLIN | POLLHUP, "over both ways");
        assert_eq!(revents(ready::HANGUP, both, Some(shut)), 0, "the peer stopped reading: its stream goes on");
        assert_eq!(revents(ready::WRITABLE | ready::HANGUP, both, Some(open)), POLLOUT, "a write fails at once");
        let broken = ready::READABLE | ready::HANGUP | ready::ERROR;
        assert_eq!(revents(broken, POLLIN, Some(open)), POLLIN | POLLERR | POLLHUP);
        assert_eq!(revents(ready::HANGUP | ready::ERROR, POLLRDHUP, Some(open)), POLLERR | POLLHUP | POLLRDHUP);
        assert_eq!(revents(ready::INVALID, POLLIN, None), POLLNVAL);
        assert_eq!((timeout_us(-1), timeout_us(0), timeout_us(250)), (u64::MAX, 0, 250_000));
    }
}

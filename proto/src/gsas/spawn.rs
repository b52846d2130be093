//! The description page of a RemoteSpawn request (seed §2.2.8: "the filename of the executable"
//! written into an allocated shared page; `docs/hw/gsas-packets.md` "RemoteSpawn").
//!
//! Choice: bare metal has no file system, so the page starts with the name of an image the
//! target node has registered, UTF-8, 1..=[`MAX_SPAWN_NAME`] bytes, ended by a NUL byte. The
//! rest of the page is ignored. The seed's `_MAX_FORK_PATH_FILENAME_` has no value; 255 is ours.

/// Longest image name, without the NUL.
pub const MAX_SPAWN_NAME: usize = 255;
/// `_EMPTY_THREAD_ARGUMENT_` (seed §2.3.5): what a process without a parent reads as its
/// argument, so no spawn may pass it. Not the vmbox sentinel, which ends in ...BEAF.
pub const EMPTY_THREAD_ARGUMENT: u64 = 0xCAFE_BEBE_DEAD_BEEF;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpawnDescriptionError {
    Empty,
    /// No NUL in the first `MAX_SPAWN_NAME + 1` bytes.
    Unterminated,
    NotUtf8,
}

/// The image name at the start of `page`.
pub fn parse_description(page: &[u8]) -> Result<&str, SpawnDescriptionError> {
    let window = &page[..page.len().min(MAX_SPAWN_NAME + 1)];
    let len = window.iter().position(|&b| b == 0).ok_or(SpawnDescriptionError::Unterminated)?;
    if len == 0 {
        return Err(SpawnDescriptionError::Empty);
    }
    core::str::from_utf8(&window[..len]).map_err(|_| SpawnDescriptionError::NotUtf8)
}

/// Writes a description into `out` (the first `name.len() + 1` bytes); returns the bytes used.
pub fn write_description(name: &str, out: &mut [u8]) -> Result<usize, SpawnDescriptionError> {
    let bytes = name.as_bytes();
    if bytes.is_empty() {
        return Err(SpawnDescriptionError::Empty);
    }
    if bytes.len() > MAX_SPAWN_NAME || bytes.contains(&0) || out.len() <= bytes.len() {
        return Err(SpawnDescriptionError::Unterminated);
    }
    out[..bytes.len()].copy_from_slice(bytes);
    out[bytes.len()] = 0;
    Ok(bytes.len() + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_errors() {
        let mut page = [0xffu8; 4096];
        assert_eq!(write_description("worker", &mut page), Ok(7));
        assert_eq!(parse_description(&page), Ok("worker"));
        page[0] = 0;
        assert_eq!(parse_description(&page), Err(SpawnDescriptionError::Empty));
        let full = [b'a'; 4096];
        assert_eq!(parse_description(&full), Err(SpawnDescriptionError::Unterminated));
        let mut long = [b'a'; 4096];
        long[MAX_SPAWN_NAME] = 0;
        assert_eq!(parse_description(&long).map(str::len), Ok(MAX_SPAWN_NAME));
        long[MAX_SPAWN_NAME] = b'a';
        long[MAX_SPAWN_NAME + 1] = 0;
        assert_eq!(parse_description(&long), Err(SpawnDescriptionError::Unterminated));
        assert_eq!(parse_description(&[0xff, 0xfe, 0]), Err(SpawnDescriptionError::NotUtf8));
        assert_eq!(write_description("", &mut page), Err(SpawnDescriptionError::Empty));
        assert_eq!(write_description("a\0b", &mut page), Err(SpawnDescriptionError::Unterminated));
    }
}

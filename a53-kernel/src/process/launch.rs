//! Starting a program from text (the boot arguments `run=PROGRAM arg=...`, the console's `r`
//! command) and judging how it ended. Plain logic, host-tested; the kernel image calls it.

use proto::syscall::ARGS_MAX;

/// A program's arguments as the kernel keeps them: each followed by a zero byte.
pub type PackedArgs = heapless::Vec<u8, ARGS_MAX>;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArgsError {
    /// More than `ARGS_MAX` bytes in all.
    TooLong,
    /// A boot-argument value that is not a valid escaped word (`proto::boot_args::escaped`).
    BadEscape,
    /// An argument containing a zero byte (it would end the argument early).
    ZeroByte,
}

/// Packs `args` (already plain bytes).
pub fn pack<'a>(args: impl IntoIterator<Item = &'a [u8]>) -> Result<PackedArgs, ArgsError> {
    let mut packed = PackedArgs::new();
    for arg in args {
        if arg.contains(&0) {
            return Err(ArgsError::ZeroByte);
        }
        packed.extend_from_slice(arg).map_err(|_| ArgsError::TooLong)?;
        packed.push(0).map_err(|_| ArgsError::TooLong)?;
    }
    Ok(packed)
}

/// Packs the escaped words of the boot arguments' `arg=` values.
pub fn pack_escaped<'a>(words: impl IntoIterator<Item = &'a str>) -> Result<PackedArgs, ArgsError> {
    let mut packed = PackedArgs::new();
    for word in words {
        let mut arg = [0u8; ARGS_MAX];
        let len = proto::boot_args::unescape(word, &mut arg).ok_or(ArgsError::BadEscape)?;
        let one = pack([&arg[..len]])?;
        packed.extend_from_slice(&one).map_err(|_| ArgsError::TooLong)?;
    }
    Ok(packed)
}

/// A console command line `PROGRAM ARG...` (split at spaces): the program and its packed
/// arguments, or `None` for an empty line.
pub fn parse_command(line: &str) -> Option<Result<(&str, PackedArgs), ArgsError>> {
    let mut words = line.split_ascii_whitespace();
    let program = words.next()?;
    Some(pack(words.map(str::as_bytes)).map(|args| (program, args)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_are_packed_with_a_zero_after_each() {
        assert_eq!(&pack([&b"one"[..], b"", b"two"]).unwrap()[..], b"one\0\0two\0");
        assert_eq!(pack([&b"a\0b"[..]]), Err(ArgsError::ZeroByte));
        let long = [b'x'; ARGS_MAX];
        assert_eq!(pack([&long[..]]), Err(ArgsError::TooLong), "no room for its zero");
        assert_eq!(pack([&long[..ARGS_MAX - 1]]).unwrap().len(), ARGS_MAX);
    }

    #[test]
    fn boot_argument_words_are_unescaped() {
        assert_eq!(&pack_escaped(["two%20words", "x%3Dy"]).unwrap()[..], b"two words\0x=y\0");
        assert_eq!(pack_escaped(["%4"]), Err(ArgsError::BadEscape));
        assert_eq!(pack_escaped(["a%00b"]), Err(ArgsError::ZeroByte));
    }

    #[test]
    fn console_lines_name_a_program_and_its_arguments() {
        let (program, args) = parse_command("  hello  5 world ").unwrap().unwrap();
        assert_eq!((program, &args[..]), ("hello", &b"5\0world\0"[..]));
        assert_eq!(parse_command("   "), None);
        let (program, args) = parse_command("spin").unwrap().unwrap();
        assert_eq!((program, args.len()), ("spin", 0));
    }
}

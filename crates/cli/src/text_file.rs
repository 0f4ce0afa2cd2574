//! Text files named on the command line (`--topology`'s net file, `--partitions`), read with a
//! bound: `std::fs::read_to_string` on a path that never ends (`/dev/zero`, a pipe that keeps
//! writing) grows its string until the kernel's OOM killer ends the process (22 GB on the test
//! machine before it did), where the user is owed a one-line error.

use std::io::Read as _;

/// The most bytes read from such a file. An ibnetdiscover file of the largest generated fat tree
/// (32,258 hosts, 254 switches of 254 ports) is some 13 MB, a partitions.conf naming every one of
/// its port GUIDs (20 bytes each) in each of 64 partitions some 41 MB (OpenSM's `ALL` names them
/// in 3 bytes).
pub const MAX_BYTES: u64 = 64 << 20;

/// Whether `path` is a regular file no larger than [`MAX_BYTES`] (`Ok(true)`), something else that
/// is read as a stream (`Ok(false)`: a pipe, `/dev/stdin`, a device), or a regular file too large
/// (an error naming `flag`).
pub fn is_small_regular_file(flag: &str, path: &str) -> Result<bool, String> {
    let meta = std::fs::metadata(path).map_err(|e| format!("{flag} {path}: {e}"))?;
    if !meta.is_file() {
        return Ok(false);
    }
    if meta.len() > MAX_BYTES {
        return Err(too_large(flag, path));
    }
    Ok(true)
}

/// The text of `path`, read up to [`MAX_BYTES`]; an error naming `flag` when it cannot be read,
/// is no UTF-8 or holds more.
pub fn read(flag: &str, path: &str) -> Result<String, String> {
    let file = std::fs::File::open(path).map_err(|e| format!("{flag} {path}: {e}"))?;
    // Bytes first, the bound checked before the text: the bound may cut a character in two,
    // which is no reason to call a file too large "no UTF-8".
    let mut bytes = Vec::new();
    file.take(MAX_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("{flag} {path}: {e}"))?;
    if bytes.len() as u64 > MAX_BYTES {
        return Err(too_large(flag, path));
    }
    String::from_utf8(bytes).map_err(|_| format!("{flag} {path}: {NOT_UTF8}"))
}

/// What `std::io::Read::read_to_string` says of bytes that are no UTF-8 (said before as it).
const NOT_UTF8: &str = "stream did not contain valid UTF-8";

fn too_large(flag: &str, path: &str) -> String {
    format!(
        "{flag} {path}: more than {} MiB, far more than any such file (is it the right one?)",
        MAX_BYTES >> 20
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Seek as _, SeekFrom, Write as _};

    // A file past the bound whose bound falls inside a character (a sparse file of zeros, then
    // "é" across byte MAX_BYTES) is too large, not "no UTF-8" (it was read as text up to the
    // bound, which failed as UTF-8 before its length was looked at); a small file of no UTF-8
    // still says so.
    #[test]
    fn a_bound_inside_a_character_is_still_too_large() {
        let dir = tempfile::tempdir().unwrap();
        let big = dir.path().join("big");
        let mut f = std::fs::File::create(&big).unwrap();
        f.set_len(MAX_BYTES).unwrap();
        f.seek(SeekFrom::Start(MAX_BYTES)).unwrap();
        f.write_all("é".as_bytes()).unwrap();
        drop(f);
        let big = big.to_str().unwrap();
        assert_eq!(
            read("--partitions", big),
            Err(too_large("--partitions", big))
        );
        let bad = dir.path().join("bad");
        std::fs::write(&bad, [b'a', 0xff, b'\n']).unwrap();
        let bad = bad.to_str().unwrap();
        assert_eq!(
            read("--partitions", bad),
            Err(format!(
                "--partitions {bad}: stream did not contain valid UTF-8"
            ))
        );
    }
}

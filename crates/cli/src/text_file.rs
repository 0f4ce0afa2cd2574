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
    let mut text = String::new();
    file.take(MAX_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(|e| format!("{flag} {path}: {e}"))?;
    if text.len() as u64 > MAX_BYTES {
        return Err(too_large(flag, path));
    }
    Ok(text)
}

fn too_large(flag: &str, path: &str) -> String {
    format!(
        "{flag} {path}: more than {} MiB, far more than any such file (is it the right one?)",
        MAX_BYTES >> 20
    )
}

//! The `--pcap` file of `ipoib sim` and `ipoib rping`, which write their capture once the run is
//! over: opened before the run, so that an unwritable path is refused at once rather than after
//! minutes of simulation, but emptied only when the capture is written, so that a run stopped
//! before that (Ctrl-C) leaves a file that was already there as it was, not empty.

use std::fs::{File, OpenOptions};
use std::io::{self, Seek, SeekFrom, Write};

/// Opens `path` for writing, creating it when missing, without emptying it.
pub fn open(path: &str) -> Result<File, String> {
    OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(|e| format!("--pcap {path}: {e}"))
}

/// Replaces what `file` held with `bytes`: a regular file is emptied first (a device such as
/// /dev/full is written as it is).
pub fn replace(file: &mut File, bytes: &[u8]) -> io::Result<()> {
    if file.metadata()?.is_file() {
        file.set_len(0)?;
        file.seek(SeekFrom::Start(0))?;
    }
    file.write_all(bytes)?;
    file.flush()
}

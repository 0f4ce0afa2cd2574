//! The `--pcap` file of `ipoib sim` and `ipoib rping`, which write their capture once the run is
//! over: opened before the run, so that an unwritable path is refused at once rather than after
//! minutes of simulation, but emptied only when the capture is written, so that a run stopped
//! before that (Ctrl-C) leaves a file that was already there as it was, not empty.
//!
//! And what `ipoib fabric`, `ipoib lab`, `ipoib ibsim-server` and `ipoib attach`, which record as
//! they run ([`ipoib_runtime::capture_file`]), say of their `--pcap` ([`Told`]); they too open
//! the file early ([`open`]) and empty it only when the recording starts.

use ipoib_runtime::capture_file::CaptureFile;
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

/// `--pcap-limit`: below the file's own header nothing fits (the file stayed empty, not even a
/// capture).
pub fn check_limit(limit: Option<u64>) -> Result<(), String> {
    let header = ipoib_wire::pcap::GLOBAL_HEADER_LEN as u64;
    match limit.filter(|&l| l < header) {
        Some(l) => Err(format!(
            "--pcap-limit {l}: at least {header} bytes, the pcap file's header"
        )),
        None => Ok(()),
    }
}

/// What a process that records as it runs (`ipoib fabric`, `ipoib lab`) says of its `--pcap`:
/// once, on standard error, when the recording stopped (a write error, the limit), and how much
/// it holds at the end.
#[derive(Debug)]
pub struct Told {
    prog: &'static str,
    path: String,
    limit: Option<u64>,
    error: bool,
    full: bool,
}

impl Told {
    /// For `prog`'s `--pcap path` with `--pcap-limit limit`.
    pub fn new(prog: &'static str, path: &str, limit: Option<u64>) -> Told {
        Told {
            prog,
            path: path.to_owned(),
            limit,
            error: false,
            full: false,
        }
    }

    /// Says that the recording stopped, the first time it finds it so.
    pub fn check(&mut self, c: &CaptureFile, goes_on: &str) {
        let (prog, path) = (self.prog, &self.path);
        if let (false, Some(e)) = (self.error, c.error()) {
            self.error = true;
            note!("{prog}: --pcap {path}: {e}: recording stopped, {goes_on}");
        }
        if !self.full && c.full() {
            self.full = true;
            note!(
                "{prog}: --pcap {path}: recording stopped at --pcap-limit {} ({} bytes written)",
                self.limit.unwrap_or_default(),
                c.written()
            );
        }
    }

    /// The line for the end of the run: what the file holds.
    pub fn summary(&self, c: &CaptureFile) -> String {
        format!(
            "{}: --pcap {}: {} packets, {} bytes{}",
            self.prog,
            self.path,
            c.records(),
            c.written(),
            match (c.error().is_some(), c.full()) {
                (true, _) => " (stopped by a write error)",
                (false, true) => " (stopped at --pcap-limit)",
                (false, false) => "",
            }
        )
    }
}

//! A pcap file that a running emulation records into (`ipoib fabric`, `ipoib lab` and `ipoib
//! ibsim-server --pcap`: every packet on every link of the simulator,
//! [`Simulator::set_capture`]; `ipoib attach --pcap`: the host's cable, a capture that lives in
//! its `RemoteHost`; both a [`Recorder`]), ERF records (`ipoib_wire::pcap`), written as
//! the capture grows, so that memory stays bounded however long the process runs, up to a byte
//! limit.
//!
//! Time stamps are the wall clock's ([`epoch_of`], `Capture::with_epoch`), so that the file lines
//! up with a capture of a host's `ib0` (`mergecap`) and with the process's log.
//!
//! A write that fails (a full disk) stops the recording, not the emulation its hosts depend on;
//! the limit stops it at the last whole record that fits. Either is kept for the caller to say
//! once ([`CaptureFile::error`], [`CaptureFile::full`]).

use crate::realtime::Clock;
use ipoib_fabric::hw::capture::Capture;
use ipoib_fabric::hw::sim::Simulator;
use ipoib_fabric::node::remote::RemoteHost;
use ipoib_wire::pcap::{GLOBAL_HEADER_LEN, RECORD_HEADER_LEN};
use std::fs::File;
use std::io::{self, Write};
use std::time::{Instant as Wall, SystemTime, UNIX_EPOCH};

/// Nanoseconds since the Unix epoch at `clock`'s virtual zero: the wall clock's time now less the
/// virtual time now.
pub fn epoch_of(clock: &Clock) -> u64 {
    let unix = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
    unix.saturating_sub(clock.virtual_at(Wall::now()).as_nanos())
}

/// The pcap file an emulation records into, up to a byte limit.
#[derive(Debug)]
pub struct CaptureFile {
    file: File,
    written: u64,
    records: u64,
    limit: Option<u64>,
    /// The limit stopped the recording.
    full: bool,
    /// A write failed (a full disk), which stopped the recording.
    error: Option<String>,
}

/// Where a capture lives: a simulator's tap ([`Simulator::set_capture`]), or a remote host's,
/// which its rebuilt simulators take over (`RemoteHost::set_capture`, `ipoib attach --pcap`).
pub trait Recorder {
    /// Starts recording into `capture`.
    fn set_capture(&mut self, capture: Capture);
    /// The capture, while one records.
    fn capture_mut(&mut self) -> Option<&mut Capture>;
    /// Stops recording.
    fn take_capture(&mut self) -> Option<Capture>;
}

impl Recorder for Simulator {
    fn set_capture(&mut self, capture: Capture) {
        Simulator::set_capture(self, capture);
    }
    fn capture_mut(&mut self) -> Option<&mut Capture> {
        Simulator::capture_mut(self)
    }
    fn take_capture(&mut self) -> Option<Capture> {
        Simulator::take_capture(self)
    }
}

impl Recorder for RemoteHost {
    fn set_capture(&mut self, capture: Capture) {
        RemoteHost::set_capture(self, capture);
    }
    fn capture_mut(&mut self) -> Option<&mut Capture> {
        RemoteHost::capture_mut(self)
    }
    fn take_capture(&mut self) -> Option<Capture> {
        RemoteHost::take_capture(self)
    }
}

impl CaptureFile {
    /// Creates `path` (truncating it), starts a capture in `rec`, its time stamps `epoch_ns`
    /// after virtual time ([`epoch_of`]), and writes the file's header. `limit`, when given, must
    /// leave room for the header ([`GLOBAL_HEADER_LEN`] bytes).
    pub fn start(
        path: &str,
        limit: Option<u64>,
        rec: &mut impl Recorder,
        epoch_ns: u64,
    ) -> io::Result<CaptureFile> {
        if let Some(l) = limit.filter(|&l| l < GLOBAL_HEADER_LEN as u64) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "a limit of {l} bytes leaves no room for the {GLOBAL_HEADER_LEN}-byte header"
                ),
            ));
        }
        let mut c = CaptureFile {
            file: File::create(path)?,
            written: 0,
            records: 0,
            limit,
            full: false,
            error: None,
        };
        rec.set_capture(Capture::new().with_epoch(epoch_ns));
        c.drain(rec);
        match c.error.take() {
            Some(e) => Err(io::Error::other(e)),
            None => Ok(c),
        }
    }

    /// Writes what `rec` recorded since the last call. On a write error or at the limit the
    /// recording stops (the capture is taken away, so that it keeps no more packets).
    pub fn drain(&mut self, rec: &mut impl Recorder) {
        if self.full || self.error.is_some() {
            return;
        }
        let Some(c) = rec.capture_mut() else {
            return;
        };
        if let Err(e) = self.write(c.take_bytes()) {
            // A write that failed part-way (a full disk, a file size limit) may have left half a
            // record: the file is cut back to its last whole one where it can be (a device
            // cannot), so that it reads as a capture and holds what `written` says.
            let _ = self.file.set_len(self.written);
            self.error = Some(e.to_string());
        }
        if self.full || self.error.is_some() {
            rec.take_capture();
        }
    }

    fn write(&mut self, bytes: Vec<u8>) -> io::Result<()> {
        let header = self.written == 0;
        let room = self
            .limit
            .map_or(u64::MAX, |l| l.saturating_sub(self.written));
        let fit = records_within(&bytes, room, header);
        self.file.write_all(&bytes[..fit])?;
        self.written += fit as u64;
        self.records += count_records(&bytes[..fit], header);
        // Whole records only: those that fit are written, the first that does not ends the
        // recording (a sweep alone may pass a small limit in one batch).
        self.full = fit < bytes.len();
        Ok(())
    }

    /// Bytes written so far, the header included.
    pub fn written(&self) -> u64 {
        self.written
    }

    /// Packets written so far.
    pub fn records(&self) -> u64 {
        self.records
    }

    /// The limit stopped the recording.
    pub fn full(&self) -> bool {
        self.full
    }

    /// The write error that stopped the recording, if one did.
    pub fn error(&self) -> Option<&str> {
        self.error.as_deref()
    }
}

/// The length of the longest prefix of `bytes` (pcap records, after the global header when
/// `header`) that ends at a record's end and is at most `room` long (the writer's records are
/// little-endian, `ipoib_wire::pcap::PcapWriter`).
fn records_within(bytes: &[u8], room: u64, header: bool) -> usize {
    let room = usize::try_from(room).unwrap_or(usize::MAX).min(bytes.len());
    let mut end = if header { GLOBAL_HEADER_LEN } else { 0 };
    if end > room {
        return 0;
    }
    while let Some(h) = bytes.get(end..end + RECORD_HEADER_LEN) {
        let incl = u32::from_le_bytes([h[8], h[9], h[10], h[11]]) as usize;
        let next = end + RECORD_HEADER_LEN + incl;
        if next > room {
            break;
        }
        end = next;
    }
    end
}

/// The records in `bytes`, which hold whole records only (after the global header when
/// `header`).
fn count_records(bytes: &[u8], header: bool) -> u64 {
    let mut end = if header { GLOBAL_HEADER_LEN } else { 0 };
    let mut n = 0;
    while let Some(h) = bytes.get(end..end + RECORD_HEADER_LEN) {
        end += RECORD_HEADER_LEN + u32::from_le_bytes([h[8], h[9], h[10], h[11]]) as usize;
        n += 1;
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;
    use ipoib_fabric::Instant;

    #[test]
    fn records_within_keeps_whole_records() {
        let mut c = Capture::new();
        let head = c.take_bytes();
        assert_eq!(head.len(), GLOBAL_HEADER_LEN);
        for i in 0..3u8 {
            c.record(Instant::ZERO, &[i; 40]);
        }
        let recs = c.take_bytes();
        let one = recs.len() / 3;
        let mut all = head.clone();
        all.extend_from_slice(&recs);
        let room = (GLOBAL_HEADER_LEN + 2 * one + one / 2) as u64;
        assert_eq!(
            records_within(&all, room, true),
            GLOBAL_HEADER_LEN + 2 * one
        );
        assert_eq!(records_within(&recs, one as u64 - 1, false), 0);
        assert_eq!(records_within(&recs, u64::MAX, false), recs.len());
        assert_eq!(records_within(&all, 10, true), 0);
        assert_eq!(count_records(&all, true), 3);
        assert_eq!(count_records(&recs[..2 * one], false), 2);
        assert_eq!(count_records(&head, true), 0);
    }

    /// Records `n` packets of 40 bytes into `sim`'s capture, as its links would.
    fn put(sim: &mut Simulator, n: u8) {
        for i in 0..n {
            sim.capture_mut().unwrap().record(Instant::ZERO, &[i; 40]);
        }
    }

    // The file grows turn by turn, in whole records, until the limit stops it: then the
    // simulator keeps no capture (no memory for packets nobody writes), and later turns write
    // nothing more.
    #[test]
    fn a_capture_file_stops_at_its_limit_with_whole_records() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.pcap");
        let mut sim = Simulator::new(1);
        // One record's length: its header, the ERF header and the 40 bytes.
        let mut probe = Capture::new();
        probe.record(Instant::ZERO, &[0; 40]);
        let one = (probe.take_bytes().len() - GLOBAL_HEADER_LEN) as u64;
        let limit = GLOBAL_HEADER_LEN as u64 + 5 * one + one / 2;
        let mut c = CaptureFile::start(path.to_str().unwrap(), Some(limit), &mut sim, 0).unwrap();
        assert_eq!((c.written(), c.records()), (GLOBAL_HEADER_LEN as u64, 0));
        put(&mut sim, 3);
        c.drain(&mut sim);
        assert_eq!(c.records(), 3);
        assert!(!c.full());
        put(&mut sim, 3);
        c.drain(&mut sim);
        assert_eq!((c.records(), c.full()), (5, true));
        assert!(sim.capture_mut().is_none());
        c.drain(&mut sim);
        let len = std::fs::metadata(&path).unwrap().len();
        assert_eq!(len, GLOBAL_HEADER_LEN as u64 + 5 * one);
        assert_eq!(c.written(), len);
        assert_eq!(c.error(), None);
    }

    // A limit below the file's header, and a file the disk refuses (/dev/full), are errors at
    // the start, before the simulator records anything.
    #[test]
    fn a_capture_file_that_cannot_hold_its_header_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.pcap");
        let mut sim = Simulator::new(1);
        let e = CaptureFile::start(path.to_str().unwrap(), Some(10), &mut sim, 0).unwrap_err();
        assert!(
            e.to_string().contains("no room for the 24-byte header"),
            "{e}"
        );
        assert!(sim.capture_mut().is_none());
        if std::path::Path::new("/dev/full").exists() {
            let e = CaptureFile::start("/dev/full", None, &mut sim, 0).unwrap_err();
            assert!(e.to_string().contains("No space left"), "{e}");
            assert!(sim.capture_mut().is_none());
        }
    }
}

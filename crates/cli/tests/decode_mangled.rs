//! `ipoib decode` on mangled captures of the product: the captures of `ipoib demo --mode
//! connected` and `ipoib rping` cut short at many points and with bytes overwritten (a fixed
//! pseudo-random sequence, so every run tries the same inputs), as text and as JSON. Every run
//! must exit 0 or 1 (a malformed packet or a bad CRC) with the summary line last on standard
//! error, or 2 with a reason (no capture; or one that cannot be read further, said with the byte
//! offset): never a panic.
//! The fuzz targets (`fuzz/`) search wider; this keeps the whole program, input reader included,
//! on a fixed set of inputs in every test run.

mod common;

use common::BIN;
use std::path::Path;
use std::process::Command;

/// A small linear congruential generator (Knuth's MMIX constants): the same bytes every run.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        self.0 >> 33
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

fn capture(dir: &Path, name: &str, args: &[&str]) -> Vec<u8> {
    let path = dir.join(format!("{name}.pcap"));
    let out = Command::new(BIN)
        .args(args)
        .arg("--pcap")
        .arg(&path)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "ipoib {args:?}");
    std::fs::read(&path).unwrap()
}

/// The length of the file header and the whole records of `pcap` (classic, little-endian, as
/// ours are) within `limit` bytes.
fn whole_records(pcap: &[u8], limit: usize) -> usize {
    let mut at = 24;
    while at + 16 <= pcap.len() {
        let incl = u32::from_le_bytes(pcap[at + 8..at + 12].try_into().unwrap()) as usize;
        if at + 16 + incl > limit.min(pcap.len()) {
            break;
        }
        at += 16 + incl;
    }
    at
}

/// Decodes `data` as a file, text and JSON; says what went wrong, if anything.
fn check(dir: &Path, data: &[u8], what: &str, codes: &mut [usize; 3]) {
    let path = dir.join("mangled.pcap");
    std::fs::write(&path, data).unwrap();
    for json in [false, true] {
        let mut cmd = Command::new(BIN);
        cmd.arg("decode");
        if json {
            cmd.arg("--json");
        }
        let out = cmd.arg(&path).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        let code = out.status.code();
        if let Some(c @ 0..=2) = code {
            codes[c as usize] += 1;
        }
        assert!(
            matches!(code, Some(0..=2)) && !err.contains("panicked"),
            "{what} (json {json}): exit {code:?}, {err}"
        );
        let last = err.lines().last().unwrap_or("");
        // The summary line, or (exit 2, input refused before any packet) why it is no capture.
        assert!(
            last.starts_with("ipoib decode: ") && (code == Some(2) || last.contains(" packet")),
            "{what} (json {json}): last line {last:?}"
        );
        if code == Some(2) && data.len() > 24 {
            // A capture that stops being readable says where.
            assert!(err.contains("byte "), "{what}: {err}");
        }
    }
}

#[test]
fn mangled_captures_give_errors_not_panics() {
    let dir = tempfile::tempdir().unwrap();
    let captures = [
        capture(
            dir.path(),
            "connected",
            &["demo", "--mode", "connected", "--bulk-bytes", "0"],
        ),
        capture(
            dir.path(),
            "rping",
            &["rping", "--count", "1", "--size", "8K"],
        ),
    ];
    let mut rng = Lcg(0x1b1b_c0de);
    let mut runs = 0;
    let mut codes = [0; 3];
    for c in &captures {
        // Cut short: inside the file header, inside a record header, inside a packet.
        for cut in [0, 1, 23, 24, 25, 39, 40, 41, 100, 333, 1000] {
            check(
                dir.path(),
                &c[..cut.min(c.len())],
                &format!("cut at {cut}"),
                &mut codes,
            );
            runs += 1;
        }
        // Bytes overwritten (past the file header: a bad magic is refused at once), some also cut
        // short. The first 60 000 bytes' whole records keep each run short.
        let base = &c[..whole_records(c, 60_000)];
        for i in 0..60 {
            let mut m = base.to_vec();
            for _ in 0..1 + rng.below(30) {
                let at = 24 + rng.below(m.len() - 24);
                m[at] = rng.next() as u8;
            }
            if i % 3 == 0 {
                m.truncate(24 + rng.below(m.len() - 24));
            }
            check(dir.path(), &m, &format!("mangled input {i}"), &mut codes);
            runs += 1;
        }
    }
    eprintln!("{runs} mangled captures, each decoded as text and JSON; exit 0, 1, 2: {codes:?}");
    // The inputs reach every outcome: clean prefixes, bad packets, unreadable records.
    assert!(codes.iter().all(|&n| n > 0), "{codes:?}");
}

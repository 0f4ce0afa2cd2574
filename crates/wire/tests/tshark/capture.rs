//! Running tshark on a capture of samples: writing the ERF pcap into a temporary file, one
//! `tshark -T fields` run for many fields at once, and reading its output back per packet.

use ipoib_wire::pcap::{LinkType, PcapWriter};
use ipoib_wire::samples::Sample;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Separates the occurrences of one field in tshark's output (`-E aggregator`).
const AGGREGATOR: char = '|';

/// The tshark executable, if one is installed.
pub struct Tshark {
    path: PathBuf,
}

impl Tshark {
    /// Finds `tshark` on the `PATH` (or at /usr/bin/tshark).
    pub fn find() -> Option<Tshark> {
        let dirs = std::env::var_os("PATH").unwrap_or_default();
        std::env::split_paths(&dirs)
            .chain([PathBuf::from("/usr/bin")])
            .map(|d| d.join("tshark"))
            .find(|p| p.is_file())
            .map(|path| Tshark { path })
    }

    /// Runs tshark on `capture` with `args` and returns its standard output. Personal preferences
    /// are kept out (HOME is the temporary directory); name resolution is off; IPv4 and UDP
    /// checksums are verified (tshark leaves them unverified by default).
    fn run(&self, capture: &Path, args: &[&str]) -> String {
        let out = Command::new(&self.path)
            .arg("-n")
            .arg("-r")
            .arg(capture)
            .args([
                "-o",
                "ip.check_checksum:TRUE",
                "-o",
                "udp.check_checksum:TRUE",
            ])
            .args(args)
            .env("HOME", std::env::temp_dir())
            .output()
            .expect("tshark runs");
        assert!(
            out.status.success(),
            "tshark failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).expect("tshark prints UTF-8")
    }

    /// One dissection per packet of `capture`, holding every occurrence of each of `fields`.
    pub fn fields(&self, capture: &Path, fields: &[&str]) -> Vec<Dissection> {
        let mut args = vec!["-T", "fields", "-E", "header=n", "-E", "separator=/t"];
        args.extend(["-E", "occurrence=a", "-E", "aggregator=|"]);
        for f in fields {
            args.extend(["-e", f]);
        }
        self.run(capture, &args)
            .lines()
            .map(|line| Dissection::from_line(fields, line))
            .collect()
    }

    /// The frame numbers and expert messages (`|`-separated) of the packets matching display
    /// filter `filter`.
    pub fn matching(&self, capture: &Path, filter: &str) -> Vec<(usize, String)> {
        let mut args = vec!["-Y", filter, "-T", "fields", "-E", "occurrence=a"];
        args.extend([
            "-E",
            "aggregator=|",
            "-e",
            "frame.number",
            "-e",
            "_ws.expert.message",
        ]);
        self.run(capture, &args)
            .lines()
            .map(|l| {
                let (n, msg) = l.split_once('\t').unwrap_or((l, ""));
                (n.parse().expect("a frame number"), msg.to_string())
            })
            .collect()
    }
}

/// What tshark showed of one packet: each requested field's occurrences, as printed.
#[derive(Debug, Default)]
pub struct Dissection {
    values: BTreeMap<String, Vec<String>>,
}

impl Dissection {
    fn from_line(fields: &[&str], line: &str) -> Dissection {
        let columns: Vec<&str> = line.split('\t').collect();
        assert_eq!(columns.len(), fields.len(), "tshark line: {line}");
        let values = fields
            .iter()
            .zip(columns)
            .filter(|(_, c)| !c.is_empty())
            .map(|(f, c)| {
                (
                    f.to_string(),
                    c.split(AGGREGATOR).map(str::to_string).collect(),
                )
            })
            .collect();
        Dissection { values }
    }

    /// Every occurrence of `field` (none if tshark did not show it).
    pub fn get(&self, field: &str) -> &[String] {
        self.values.get(field).map_or(&[], Vec::as_slice)
    }
}

/// A capture file in the temporary directory, removed on drop unless KEEP_PCAP is set.
pub struct TempCapture {
    path: PathBuf,
}

impl TempCapture {
    /// Writes `samples` as an ERF capture (link type 197, ERF type 21), one microsecond apart.
    pub fn write(tag: &str, samples: &[Sample]) -> TempCapture {
        static SEQ: AtomicUsize = AtomicUsize::new(0);
        let mut w = PcapWriter::new(Vec::new(), LinkType::Erf).expect("pcap header");
        for (i, s) in samples.iter().enumerate() {
            let ts = 1_700_000_000_000_000_000 + 1000 * i as u64;
            w.write_packet(ts, &s.bytes).expect("in-memory write");
        }
        let name = format!(
            "ipoib-wire-tshark-{tag}-{}-{}.pcap",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::Relaxed)
        );
        let path = std::env::temp_dir().join(name);
        std::fs::write(&path, w.into_inner().expect("in-memory write")).expect("temp file");
        TempCapture { path }
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for TempCapture {
    fn drop(&mut self) {
        if std::env::var_os("KEEP_PCAP").is_some() {
            eprintln!("capture kept at {}", self.path.display());
        } else {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

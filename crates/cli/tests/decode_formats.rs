//! `ipoib decode` on every capture format it reads: pcapng as editcap and mergecap write it (one
//! interface, and several with different link types), classic pcap in both byte orders and both
//! time resolutions, and a capture piped to `decode -`. Each must print what the same packets give
//! from the pcap this crate writes.

use ipoib_wire::pcap::{LinkType, PcapWriter, TsResolution};
use ipoib_wire::samples;
use serde_json::Value as Json;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn ipoib(args: &[&str], stdin: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_ipoib"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    let data = stdin.to_vec();
    // A thread, so that a large input cannot block on a full output pipe.
    let feeder = std::thread::spawn(move || {
        let _ = input.write_all(&data);
    });
    let o = child.wait_with_output().unwrap();
    feeder.join().unwrap();
    o
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Every sample packet, at 1 µs steps from `t0` (whole microseconds, so that a microsecond pcap
/// and a nanosecond one carry the same times).
fn packets() -> Vec<Vec<u8>> {
    samples::all().into_iter().map(|s| s.bytes).collect()
}

fn pcap(link: LinkType, res: TsResolution, t0: u64, step: u64, pkts: &[Vec<u8>]) -> Vec<u8> {
    let mut w = PcapWriter::with_options(Vec::new(), link, res, 65535).unwrap();
    for (i, p) in pkts.iter().enumerate() {
        w.write_packet(t0 + i as u64 * step, p).unwrap();
    }
    w.into_inner().unwrap()
}

fn write(dir: &Path, name: &str, data: &[u8]) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, data).unwrap();
    p
}

fn tool(name: &str) -> Option<PathBuf> {
    let p = Path::new("/usr/bin").join(name);
    if p.exists() {
        Some(p)
    } else {
        eprintln!(
            "skipping: {} not installed (Debian: wireshark-common)",
            p.display()
        );
        None
    }
}

fn run_tool(tool: &Path, args: &[&Path]) {
    let o = Command::new(tool).args(args).output().unwrap();
    assert!(
        o.status.success(),
        "{}: {}",
        tool.display(),
        text(&o.stderr)
    );
}

fn decode(args: &[&str], stdin: &[u8]) -> (Option<i32>, String, String) {
    let o = ipoib(args, stdin);
    (o.status.code(), text(&o.stdout), text(&o.stderr))
}

/// The JSON objects of `--json` output, without their `packet` index.
fn objects(out: &str) -> Vec<Json> {
    out.lines()
        .map(|l| {
            let mut v: Json = serde_json::from_str(l).unwrap();
            v.as_object_mut().unwrap().remove("packet");
            v
        })
        .collect()
}

// pcapng as editcap writes it decodes to the same text and JSON as the pcap it came from; so does
// the same pcapng piped to `decode -`.
#[test]
fn pcapng_from_editcap_decodes_like_the_pcap() {
    let Some(editcap) = tool("editcap") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let pkts = packets();
    let p = write(
        dir.path(),
        "in.pcap",
        &pcap(
            LinkType::Erf,
            TsResolution::Nano,
            1_700_000_000_000_000_000,
            1000,
            &pkts,
        ),
    );
    let ng = dir.path().join("out.pcapng");
    run_tool(&editcap, &[Path::new("-F"), Path::new("pcapng"), &p, &ng]);
    let ng_bytes = std::fs::read(&ng).unwrap();
    assert_eq!(
        ng_bytes[..4],
        [0x0a, 0x0d, 0x0d, 0x0a],
        "editcap wrote pcapng"
    );
    for json in [true, false] {
        let args = |f: &Path| -> Vec<String> {
            let mut a = vec!["decode".to_string(), f.to_str().unwrap().to_string()];
            if json {
                a.insert(1, "--json".into());
            }
            a
        };
        let a = args(&p);
        let b = args(&ng);
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        let b: Vec<&str> = b.iter().map(String::as_str).collect();
        let from_pcap = decode(&a, b"");
        assert_eq!(from_pcap.0, Some(0), "{}", from_pcap.2);
        assert_eq!(decode(&b, b""), from_pcap);
        let mut piped = b.clone();
        *piped.last_mut().unwrap() = "-";
        assert_eq!(decode(&piped, &ng_bytes), from_pcap);
    }
}

/// A classic pcap of link type 1 (Ethernet) with one frame at `ts_s` seconds.
fn ethernet_pcap(ts_s: u32) -> Vec<u8> {
    let mut f = vec![0xd4, 0xc3, 0xb2, 0xa1, 2, 0, 4, 0];
    f.extend_from_slice(&[0; 8]);
    f.extend_from_slice(&65535u32.to_le_bytes());
    f.extend_from_slice(&1u32.to_le_bytes());
    let frame = [0xffu8; 60];
    f.extend_from_slice(&ts_s.to_le_bytes());
    f.extend_from_slice(&0u32.to_le_bytes());
    f.extend_from_slice(&(frame.len() as u32).to_le_bytes());
    f.extend_from_slice(&(frame.len() as u32).to_le_bytes());
    f.extend_from_slice(&frame);
    f
}

/// (time in ns, record data) of each record of a capture.
type Records<'a> = Vec<(u64, &'a [u8])>;

/// The records of a pcap written by [`PcapWriter`] (nanosecond).
fn records(pcap: &[u8]) -> Records<'_> {
    let mut out = Vec::new();
    let mut at = 24;
    while at < pcap.len() {
        let word = |i: usize| u32::from_le_bytes(pcap[at + i..at + i + 4].try_into().unwrap());
        let ts = u64::from(word(0)) * 1_000_000_000 + u64::from(word(4));
        let incl = word(8) as usize;
        out.push((ts, &pcap[at + 16..at + 16 + incl]));
        at += 16 + incl;
    }
    out
}

/// A little-endian pcapng block: type, total length, body padded to 4 bytes, total length.
fn block(out: &mut Vec<u8>, ty: u32, body: &[u8]) {
    let padded = (body.len() + 3) & !3;
    let total = (12 + padded) as u32;
    out.extend_from_slice(&ty.to_le_bytes());
    out.extend_from_slice(&total.to_le_bytes());
    out.extend_from_slice(body);
    out.resize(out.len() + padded - body.len(), 0);
    out.extend_from_slice(&total.to_le_bytes());
}

/// pcapng by hand (draft-ietf-opsawg-pcapng §4.1-4.3): one section, an interface per
/// `(link type, records)` with nanosecond time stamps (`if_tsresol` 9), and the records of all
/// interfaces in time order.
fn pcapng(interfaces: &[(u16, Records<'_>)]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut shb = 0x1a2b_3c4du32.to_le_bytes().to_vec();
    shb.extend_from_slice(&[1, 0, 0, 0]);
    shb.extend_from_slice(&[0xff; 8]);
    block(&mut out, 0x0a0d_0d0a, &shb);
    for (link, _) in interfaces {
        let mut idb = link.to_le_bytes().to_vec();
        idb.extend_from_slice(&[0, 0, 0, 0, 0, 0]);
        idb.extend_from_slice(&[9, 0, 1, 0, 9, 0, 0, 0, 0, 0, 0, 0]);
        block(&mut out, 1, &idb);
    }
    let mut all: Vec<(u64, u32, &[u8])> = interfaces
        .iter()
        .enumerate()
        .flat_map(|(i, (_, r))| r.iter().map(move |&(t, d)| (t, i as u32, d)))
        .collect();
    all.sort_by_key(|&(t, i, _)| (t, i));
    for (t, i, d) in all {
        let mut epb = i.to_le_bytes().to_vec();
        epb.extend_from_slice(&((t >> 32) as u32).to_le_bytes());
        epb.extend_from_slice(&(t as u32).to_le_bytes());
        epb.extend_from_slice(&(d.len() as u32).to_le_bytes());
        epb.extend_from_slice(&(d.len() as u32).to_le_bytes());
        epb.extend_from_slice(d);
        block(&mut out, 6, &epb);
    }
    out
}

// One pcapng with an interface per link type, ERF (197), INFINIBAND (247) and Ethernet (1): each
// IB packet decodes as it does from its own pcap; the Ethernet frame is listed, not decoded, and
// makes the exit status 1.
#[test]
fn pcapng_interfaces_of_different_link_types() {
    let dir = tempfile::tempdir().unwrap();
    let pkts = packets();
    let n = pkts.len();
    let t0 = 1_700_000_000_000_000_000;
    // Interleaved in time: ERF packets at even microseconds, INFINIBAND ones at odd.
    let erf = pcap(LinkType::Erf, TsResolution::Nano, t0, 2000, &pkts);
    let ib = pcap(
        LinkType::Infiniband,
        TsResolution::Nano,
        t0 + 1000,
        2000,
        &pkts,
    );
    let eth = ethernet_pcap(1_800_000_000);
    let ng = pcapng(&[
        (197, records(&erf)),
        (247, records(&ib)),
        (1, records(&eth)),
    ]);
    let ng = write(dir.path(), "three.pcapng", &ng);
    let (code, out, err) = decode(&["decode", "--json", ng.to_str().unwrap()], b"");
    assert_eq!(code, Some(1), "{err}");
    assert_eq!(
        err.lines().last().unwrap(),
        format!(
            "ipoib decode: {} packets (link type 1: 1, 197 ERF: {n}, 247 INFINIBAND: {n}): \
             0 malformed packets, 0 bad ICRC, 0 bad VCRC, 1 not InfiniBand (not decoded)",
            2 * n + 1
        )
    );
    let merged = objects(&out);
    let erf = write(dir.path(), "erf.pcap", &erf);
    let (_, a, _) = decode(&["decode", "--json", erf.to_str().unwrap()], b"");
    let ib = write(dir.path(), "ib.pcap", &ib);
    let (_, b, _) = decode(&["decode", "--json", ib.to_str().unwrap()], b"");
    let (a, b) = (objects(&a), objects(&b));
    assert_eq!(merged.len(), 2 * n + 1);
    for i in 0..n {
        assert_eq!(merged[2 * i], a[i], "ERF packet {i}");
        assert_eq!(merged[2 * i + 1], b[i], "INFINIBAND packet {i}");
    }
    let last = &merged[2 * n];
    assert_eq!(last["link_type"], 1);
    assert_eq!(last["len"], 60);
    assert_eq!(last["ts_ns"], 1_800_000_000_000_000_000u64);
    assert!(last.get("error").is_none() && last.get("icrc_ok").is_none());
    assert_eq!(last["summary"], "link type 1, not InfiniBand: not decoded");

    // The same from mergecap, which writes an interface per input file (for ERF and Ethernet: it
    // does not know link type 247).
    let Some(mergecap) = tool("mergecap") else {
        return;
    };
    let eth = write(dir.path(), "eth.pcap", &ethernet_pcap(1_800_000_000));
    let m = dir.path().join("merged.pcapng");
    run_tool(
        &mergecap,
        &[
            Path::new("-F"),
            Path::new("pcapng"),
            Path::new("-w"),
            &m,
            &erf,
            &eth,
        ],
    );
    let (code, out, err) = decode(&["decode", "--json", m.to_str().unwrap()], b"");
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.ends_with(&format!(
            "{} packets (link type 1: 1, 197 ERF: {n}): 0 malformed packets, 0 bad ICRC, \
             0 bad VCRC, 1 not InfiniBand (not decoded)\n",
            n + 1
        )),
        "{err}"
    );
    let m = objects(&out);
    assert_eq!(m[..n], a[..]);
    assert_eq!(m[n], *last);
}

/// `le`, a little-endian pcap of link type 247, rewritten big-endian field by field (as a
/// big-endian machine writes it; the packets themselves are byte strings and stay as they are).
fn to_big_endian(le: &[u8]) -> Vec<u8> {
    let mut b = le.to_vec();
    let swap = |b: &mut [u8], at: usize, n: usize| b[at..at + n].reverse();
    swap(&mut b, 0, 4);
    swap(&mut b, 4, 2);
    swap(&mut b, 6, 2);
    for at in [8, 12, 16, 20] {
        swap(&mut b, at, 4);
    }
    let mut at = 24;
    while at < b.len() {
        let incl = u32::from_le_bytes(b[at + 8..at + 12].try_into().unwrap()) as usize;
        for f in 0..4 {
            swap(&mut b, at + 4 * f, 4);
        }
        at += 16 + incl;
    }
    b
}

// Classic pcap in both byte orders and both resolutions decodes alike, from a file and piped.
#[test]
fn classic_pcap_byte_orders_resolutions_and_stdin() {
    let dir = tempfile::tempdir().unwrap();
    let pkts = packets();
    let nano = pcap(
        LinkType::Infiniband,
        TsResolution::Nano,
        1_600_000_000_000_000_000,
        1000,
        &pkts,
    );
    let micro = pcap(
        LinkType::Infiniband,
        TsResolution::Micro,
        1_600_000_000_000_000_000,
        1000,
        &pkts,
    );
    let big = to_big_endian(&nano);
    assert_eq!(big[..4], [0xa1, 0xb2, 0x3c, 0x4d]);
    let reference = decode(
        &[
            "decode",
            "--json",
            write(dir.path(), "n.pcap", &nano).to_str().unwrap(),
        ],
        b"",
    );
    assert_eq!(reference.0, Some(0), "{}", reference.2);
    assert_eq!(objects(&reference.1).len(), pkts.len());
    for (name, data) in [
        ("micro.pcap", &micro),
        ("big.pcap", &big),
        ("big-micro.pcap", &to_big_endian(&micro)),
    ] {
        let f = write(dir.path(), name, data);
        assert_eq!(
            decode(&["decode", "--json", f.to_str().unwrap()], b""),
            reference,
            "{name}"
        );
        // `cat x.pcap | ipoib decode -`: a capture by its magic number, not hex.
        assert_eq!(
            decode(&["decode", "--json", "-"], data),
            reference,
            "{name} on stdin"
        );
    }
    // Text too, and a capture cut short on standard input stops with status 2 after its packets.
    let t = decode(
        &[
            "decode",
            write(dir.path(), "t.pcap", &big).to_str().unwrap(),
        ],
        b"",
    );
    assert_eq!(decode(&["decode", "-"], &big), t);
    let (code, out, err) = decode(&["decode", "--json", "-"], &big[..big.len() - 5]);
    assert_eq!(code, Some(2));
    assert_eq!(out.lines().count(), pkts.len() - 1);
    assert!(
        err.contains("standard input: stopped: record at byte"),
        "{err}"
    );
}

// A capture on standard input streams through: its packets come out while it is still being
// written. A reader that took the whole input first would print nothing before the writer closed
// it; this one prints once its output buffers fill (about 1 MiB of JSON), whatever the input's size.
#[test]
fn stdin_streams_before_the_input_ends() {
    use std::io::Read;
    let pkts = packets();
    let one = pcap(
        LinkType::Erf,
        TsResolution::Nano,
        1_700_000_000_000_000_000,
        1,
        &pkts,
    );
    let (header, records) = one.split_at(24);
    let mut child = Command::new(env!("CARGO_BIN_EXE_ipoib"))
        .args(["decode", "--json", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    let mut output = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        let mut first = vec![0u8; 1 << 12];
        let n = output.read(&mut first).unwrap();
        first.truncate(n);
        tx.send(first).unwrap();
        let _ = output.read_to_end(&mut Vec::new());
    });
    input.write_all(header).unwrap();
    let mut written = header.len();
    let first = loop {
        if let Ok(first) = rx.try_recv() {
            break first;
        }
        input.write_all(records).unwrap();
        written += records.len();
        assert!(
            written < 64 << 20,
            "no output after {written} bytes of input"
        );
    };
    drop(input);
    assert!(child.wait().unwrap().success());
    reader.join().unwrap();
    assert!(
        text(&first).starts_with("{\"packet\":1,"),
        "{}",
        text(&first)
    );
}

// The README's example summary line is what decoding the default demo's capture prints now.
#[test]
fn readme_summary_line_is_real() {
    let readme = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md");
    let readme = std::fs::read_to_string(readme).unwrap();
    let shown = readme
        .lines()
        .find(|l| l.starts_with("ipoib decode: "))
        .expect("a summary line in the README");
    let dir = tempfile::tempdir().unwrap();
    let demo = Command::new(env!("CARGO_BIN_EXE_ipoib"))
        .arg("demo")
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(demo.status.success(), "{}", text(&demo.stderr));
    let pcap = dir.path().join("ipoib-demo.pcap");
    let (code, _, err) = decode(&["decode", pcap.to_str().unwrap()], b"");
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(err.lines().last(), Some(shown));
}

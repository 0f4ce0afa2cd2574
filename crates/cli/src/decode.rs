//! `ipoib decode`: reads a capture (or hex lines) and prints each packet through the wire crate's
//! layer-by-layer decoder, as text for people or JSON lines for machines.

use ipoib_wire::decode::Decoder;
use ipoib_wire::describe::{Describer, Value};
use ipoib_wire::pcap::PcapReader;
use ipoib_wire::render::{Json, Text};
use std::fmt::Write as _;
use std::io::{self, BufRead, Write};
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// A pcap file, or `-` for hex packets on standard input.
    file: String,
    /// One JSON object per packet, one per line.
    #[arg(long)]
    json: bool,
}

/// One input packet: its time stamp and bytes (borrowed from the capture or the parsed hex
/// lines), or why its line could not be read.
struct Input<'a> {
    ts_ns: Option<u64>,
    bytes: Result<&'a [u8], &'a str>,
}

/// Output is rendered into one string and written out when it reaches this size.
const FLUSH_AT: usize = 1 << 20;

pub fn run(args: &Args) -> ExitCode {
    let stdout = io::stdout();
    let mut out = io::BufWriter::with_capacity(1 << 16, stdout.lock());
    let result = if args.file == "-" {
        let stdin = io::stdin();
        let mut lines = Vec::new();
        for (n, line) in stdin.lock().lines().enumerate() {
            let line = match line {
                Ok(l) => l,
                Err(e) => {
                    eprintln!("ipoib decode: reading standard input: {e}");
                    return ExitCode::from(2);
                }
            };
            let text = line.split('#').next().unwrap_or("");
            if text.trim().is_empty() {
                continue;
            }
            lines.push(parse_hex(text).map_err(|e| format!("line {}: {e}", n + 1)));
        }
        let packets = lines.iter().map(|l| Input {
            ts_ns: None,
            bytes: l.as_deref().map_err(String::as_str),
        });
        decode_all(packets, args.json, &mut out)
    } else {
        let data = match std::fs::read(&args.file) {
            Ok(d) => d,
            Err(e) => {
                eprintln!("ipoib decode: {}: {e}", args.file);
                return ExitCode::from(2);
            }
        };
        let reader = match PcapReader::new(&data) {
            Ok(r) => r,
            Err(e) => {
                eprintln!(
                    "ipoib decode: {}: not a capture this tool reads: {e}",
                    args.file
                );
                return ExitCode::from(2);
            }
        };
        let mut fatal = None;
        let packets = reader.map_while(|r| match r {
            Ok(p) => Some(Input {
                ts_ns: Some(p.ts_ns),
                bytes: Ok(p.data),
            }),
            Err(e) => {
                fatal = Some(e);
                None
            }
        });
        let r = decode_all(packets, args.json, &mut out);
        if let Some(e) = fatal {
            let _ = out.flush();
            eprintln!("ipoib decode: {}: stopped: {e}", args.file);
            return ExitCode::from(2);
        }
        r
    };
    match result.and_then(|bad| out.flush().map(|_| bad)) {
        Ok(0) => ExitCode::SUCCESS,
        Ok(bad) => {
            eprintln!("ipoib decode: {bad} malformed packet(s)");
            ExitCode::from(1)
        }
        // A closed pipe (`| head`) is a normal way to stop reading.
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ipoib decode: writing output: {e}");
            ExitCode::from(2)
        }
    }
}

/// Decodes every packet and writes it out; returns how many were malformed. One renderer and one
/// output string serve every packet, written out every [`FLUSH_AT`] bytes.
fn decode_all<'a>(
    packets: impl Iterator<Item = Input<'a>>,
    json: bool,
    out: &mut impl Write,
) -> io::Result<usize> {
    let mut decoder = Decoder::new();
    let mut bad = 0;
    if json {
        let mut j = Json::lines();
        j.out.reserve(FLUSH_AT + FLUSH_AT / 4);
        for (i, p) in packets.enumerate() {
            j.open();
            j.field("packet", Value::Uint(i as u64 + 1));
            if let Some(ts) = p.ts_ns {
                j.field("ts_ns", Value::Uint(ts));
            }
            let ok = describe_one(&mut decoder, &p, &mut j);
            bad += usize::from(!ok);
            j.close();
            j.out.push('\n');
            if j.out.len() >= FLUSH_AT {
                out.write_all(j.out.as_bytes())?;
                j.out.clear();
            }
        }
        out.write_all(j.out.as_bytes())?;
    } else {
        let mut t = Text::default();
        let mut summary = String::new();
        let mut page = String::with_capacity(FLUSH_AT + FLUSH_AT / 4);
        for (i, p) in packets.enumerate() {
            let index = i as u64 + 1;
            t.clear();
            summary.clear();
            let ok = describe_one(
                &mut decoder,
                &p,
                &mut Summarise {
                    inner: &mut t,
                    summary: &mut summary,
                },
            );
            bad += usize::from(!ok);
            let _ = match p.ts_ns {
                Some(ts) => writeln!(
                    page,
                    "Packet {index} at {}.{:09} s: {summary}",
                    ts / 1_000_000_000,
                    ts % 1_000_000_000
                ),
                None => writeln!(page, "Packet {index}: {summary}"),
            };
            for line in t.out.lines() {
                page.push_str("    ");
                page.push_str(line);
                page.push('\n');
            }
            page.push('\n');
            if page.len() >= FLUSH_AT {
                out.write_all(page.as_bytes())?;
                page.clear();
            }
        }
        out.write_all(page.as_bytes())?;
    }
    Ok(bad)
}

/// Describes one packet; false when it was malformed.
fn describe_one(decoder: &mut Decoder, p: &Input<'_>, d: &mut dyn Describer) -> bool {
    match p.bytes {
        Ok(bytes) => {
            d.field("len", Value::Uint(bytes.len() as u64));
            decoder.packet(bytes, d).is_ok()
        }
        Err(e) => {
            d.field("summary", Value::Str("unreadable input"));
            d.field("error", Value::Str(e));
            false
        }
    }
}

/// Passes fields through to a text renderer but keeps the top-level `summary` for the heading line.
struct Summarise<'a> {
    inner: &'a mut Text,
    summary: &'a mut String,
}

impl Describer for Summarise<'_> {
    fn field(&mut self, name: &str, value: Value<'_>) {
        if name == "summary" {
            if let Value::Str(s) = value {
                self.summary.clear();
                self.summary.push_str(s);
                return;
            }
        }
        self.inner.field(name, value)
    }
    fn enter(&mut self, name: &str) {
        self.inner.enter(name)
    }
    fn leave(&mut self) {
        self.inner.leave()
    }
}

/// Parses one line of hex: pairs of hex digits, with spaces, tabs, colons and dashes ignored.
fn parse_hex(line: &str) -> Result<Vec<u8>, String> {
    let digits: Vec<u8> = line
        .bytes()
        .filter(|c| !matches!(c, b' ' | b'\t' | b':' | b'-' | b'\r'))
        .collect();
    if digits.len() & 1 == 1 {
        return Err(format!("odd number of hex digits ({})", digits.len()));
    }
    digits
        .chunks(2)
        .map(|pair| {
            let hi = (pair[0] as char).to_digit(16);
            let lo = (pair[1] as char).to_digit(16);
            match (hi, lo) {
                (Some(h), Some(l)) => Ok((h * 16 + l) as u8),
                _ => Err(format!("not hex: {:?}", String::from_utf8_lossy(pair))),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::parse_hex;

    #[test]
    fn hex_lines() {
        assert_eq!(
            parse_hex("f0 02:00-1a").unwrap(),
            vec![0xf0, 0x02, 0x00, 0x1a]
        );
        assert!(parse_hex("f0 0").unwrap_err().contains("odd"));
        assert!(parse_hex("zz").unwrap_err().contains("not hex"));
    }
}

//! `ipoib decode`: reads a capture (or hex lines) and prints each packet through the wire crate's
//! layer-by-layer decoder, as text for people or JSON lines for machines.

use crate::render::{Json, Text};
use ipoib_wire::decode::Decoder;
use ipoib_wire::describe::{Describer, Value};
use ipoib_wire::pcap::PcapReader;
use std::io::{self, BufRead, Read, Write};
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// A pcap file, or `-` for hex packets on standard input.
    file: String,
    /// One JSON object per packet, one per line.
    #[arg(long)]
    json: bool,
}

/// One input packet: its number, time stamp and bytes, or why its line could not be read.
struct Input {
    ts_ns: Option<u64>,
    bytes: Result<Vec<u8>, String>,
}

pub fn run(args: &Args) -> ExitCode {
    let stdout = io::stdout();
    let mut out = io::BufWriter::with_capacity(1 << 16, stdout.lock());
    let result = if args.file == "-" {
        let stdin = io::stdin();
        let mut packets = Vec::new();
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
            packets.push(Input {
                ts_ns: None,
                bytes: parse_hex(text).map_err(|e| format!("line {}: {e}", n + 1)),
            });
        }
        decode_all(packets.into_iter(), args.json, &mut out)
    } else {
        let data = match read_file(&args.file) {
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
                bytes: Ok(p.data.to_vec()),
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

fn read_file(path: &str) -> io::Result<Vec<u8>> {
    let mut f = std::fs::File::open(path)?;
    let mut data = Vec::new();
    f.read_to_end(&mut data)?;
    Ok(data)
}

/// Decodes every packet and writes it out; returns how many were malformed.
fn decode_all(
    packets: impl Iterator<Item = Input>,
    json: bool,
    out: &mut impl Write,
) -> io::Result<usize> {
    let mut decoder = Decoder::new();
    let mut bad = 0;
    for (i, p) in packets.enumerate() {
        let index = i as u64 + 1;
        if json {
            let mut j = Json::default();
            j.field("packet", Value::Uint(index));
            if let Some(ts) = p.ts_ns {
                j.field("ts_ns", Value::Uint(ts));
            }
            let ok = describe_one(&mut decoder, &p, &mut j);
            bad += usize::from(!ok);
            out.write_all(j.finish().as_bytes())?;
            out.write_all(b"\n")?;
        } else {
            let mut t = Text::default();
            let (ok, summary) = {
                let mut s = Summarise {
                    inner: &mut t,
                    summary: String::new(),
                };
                let ok = describe_one(&mut decoder, &p, &mut s);
                (ok, s.summary)
            };
            bad += usize::from(!ok);
            match p.ts_ns {
                Some(ts) => writeln!(
                    out,
                    "Packet {index} at {}.{:09} s: {summary}",
                    ts / 1_000_000_000,
                    ts % 1_000_000_000
                )?,
                None => writeln!(out, "Packet {index}: {summary}")?,
            }
            for line in t.out.lines() {
                writeln!(out, "    {line}")?;
            }
            writeln!(out)?;
        }
    }
    Ok(bad)
}

/// Describes one packet; false when it was malformed.
fn describe_one(decoder: &mut Decoder, p: &Input, d: &mut dyn Describer) -> bool {
    match &p.bytes {
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
    summary: String,
}

impl Describer for Summarise<'_> {
    fn field(&mut self, name: &str, value: Value<'_>) {
        if name == "summary" {
            if let Value::Str(s) = value {
                self.summary = s.to_string();
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

//! `ipoib decode`: reads a capture (or hex lines) and prints each packet through the wire crate's
//! layer-by-layer decoder, as text for people or JSON lines for machines.

mod input;
mod totals;

use input::{Body, Item, Source};
use ipoib_wire::decode::Decoder;
use ipoib_wire::describe::{Describer, Value};
use ipoib_wire::render::{Json, Text};
use std::fmt::Write as _;
use std::io::{self, Read, Write};
use std::process::ExitCode;
use totals::{Outcome, Totals, Watch};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// A capture file (pcap or pcapng), or `-` for standard input: a capture, or hex packets.
    /// An empty input, file or standard input, is refused (exit status 2): it holds no capture
    /// header and no hex line.
    file: String,
    /// One JSON object per packet, one per line.
    #[arg(long)]
    json: bool,
}

/// Output is rendered into one string and written out when it reaches this size.
const FLUSH_AT: usize = 1 << 20;

/// Why decoding stopped before the end of the input.
enum Stop {
    /// Writing the output failed.
    Output(io::Error),
    /// The input could not be read further.
    Input(String),
}

pub fn run(args: &Args) -> ExitCode {
    let stdin = args.file == "-";
    let name = if stdin { "standard input" } else { &args.file };
    let input: Box<dyn Read> = if stdin {
        Box::new(io::stdin().lock())
    } else {
        match std::fs::File::open(&args.file) {
            Ok(f) => Box::new(f),
            Err(e) => {
                note!("ipoib decode: {name}: {e}");
                return ExitCode::from(2);
            }
        }
    };
    let mut source = match Source::open(input, stdin) {
        Ok(s) => s,
        Err(e) => {
            note!("ipoib decode: {name}: {e}");
            return ExitCode::from(2);
        }
    };
    let stdout = io::stdout();
    let mut out = io::BufWriter::with_capacity(1 << 16, stdout.lock());
    let mut totals = Totals::default();
    let result = decode_all(&mut source, args.json, &mut out, &mut totals);
    let result = match result {
        Ok(()) => out.flush().map_err(Stop::Output),
        Err(Stop::Input(e)) => {
            let _ = out.flush();
            Err(Stop::Input(e))
        }
        Err(e) => Err(e),
    };
    // The summary is the last line on standard error, after any error, whatever the outcome.
    let summary = format!("ipoib decode: {totals}");
    match result {
        Ok(()) => {
            note!("{summary}");
            if totals.all_good() {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            }
        }
        Err(Stop::Input(e)) => {
            note!("ipoib decode: {name}: stopped: {e}");
            note!("{summary}");
            ExitCode::from(2)
        }
        // A closed pipe (`| head`) is a normal way to stop reading; the verdict is that of the
        // packets decoded so far, so a bad packet shown before the pipe closed still fails.
        Err(Stop::Output(e)) if e.kind() == io::ErrorKind::BrokenPipe => {
            note!("{summary}");
            if totals.all_good() {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            }
        }
        Err(Stop::Output(e)) => {
            note!("ipoib decode: writing output: {e}");
            ExitCode::from(2)
        }
    }
}

/// Decodes every packet, writes it out and counts it into `totals`. One renderer and one output
/// string serve every packet, written out every [`FLUSH_AT`] bytes; the input is read one packet at
/// a time.
fn decode_all(
    source: &mut Source,
    json: bool,
    out: &mut impl Write,
    totals: &mut Totals,
) -> Result<(), Stop> {
    let mut decoder = Decoder::new();
    // JSON lines are rendered straight into the renderer's string, text into `page`.
    let mut j = Json::lines();
    j.out
        .reserve(if json { FLUSH_AT + FLUSH_AT / 4 } else { 0 });
    let mut t = Text::default();
    let mut summary = String::new();
    let mut page = String::with_capacity(if json { 0 } else { FLUSH_AT + FLUSH_AT / 4 });
    let mut index = 0u64;
    let stopped = loop {
        let p = match source.next_item() {
            None => break None,
            Some(Ok(p)) => p,
            Some(Err(e)) => break Some(e),
        };
        index += 1;
        if json {
            j.open();
            j.field("packet", Value::Uint(index));
            if let Some(ts) = p.ts_ns {
                j.field("ts_ns", Value::Uint(ts));
            }
            let mut w = Watch::new(&mut j);
            w.verdicts.outcome = describe_one(&mut decoder, &p, &mut w);
            totals.add(p.link_type, w.verdicts);
            j.close();
            j.out.push('\n');
            if j.out.len() >= FLUSH_AT {
                out.write_all(j.out.as_bytes()).map_err(Stop::Output)?;
                j.out.clear();
            }
        } else {
            t.clear();
            summary.clear();
            let mut s = Summarise {
                inner: &mut t,
                summary: &mut summary,
            };
            let mut w = Watch::new(&mut s);
            w.verdicts.outcome = describe_one(&mut decoder, &p, &mut w);
            totals.add(p.link_type, w.verdicts);
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
                out.write_all(page.as_bytes()).map_err(Stop::Output)?;
                page.clear();
            }
        }
    };
    out.write_all(j.out.as_bytes()).map_err(Stop::Output)?;
    out.write_all(page.as_bytes()).map_err(Stop::Output)?;
    match stopped {
        Some(e) => Err(Stop::Input(e)),
        None => Ok(()),
    }
}

/// Describes one packet.
fn describe_one(decoder: &mut Decoder, p: &Item<'_>, d: &mut dyn Describer) -> Outcome {
    match p.body {
        Body::Ib(bytes) => {
            d.field("len", Value::Uint(bytes.len() as u64));
            match decoder.packet(bytes, d) {
                Ok(()) => Outcome::Decoded,
                Err(_) => Outcome::Malformed,
            }
        }
        Body::Unreadable(e) => {
            d.field("summary", Value::Str("unreadable input"));
            d.field("error", Value::Str(e));
            Outcome::Malformed
        }
        Body::OtherLink(link, len) => {
            d.field("len", Value::Uint(len as u64));
            d.field("link_type", Value::Uint(link.into()));
            d.field(
                "summary",
                Value::Str(&format!("link type {link}, not InfiniBand: not decoded")),
            );
            Outcome::NotInfiniband
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

//! Where `ipoib decode` gets its packets: a capture (pcap or pcapng, told by its first bytes, from a
//! file or standard input) or lines of hex on standard input, read one packet at a time so that
//! memory does not grow with the input.

use ipoib_wire::pcap::{self, CaptureReader, LinkType};
use std::io::{self, BufRead, BufReader, Read};

/// One input packet, borrowed from its source until the next one is read.
pub struct Item<'a> {
    /// Nanoseconds since the epoch, when the input has time stamps.
    pub ts_ns: Option<u64>,
    /// The capture's link type for this packet; `None` for a hex line.
    pub link_type: Option<LinkType>,
    pub body: Body<'a>,
}

/// What an input packet holds.
pub enum Body<'a> {
    /// An InfiniBand packet, LRH to VCRC.
    Ib(&'a [u8]),
    /// A hex line that could not be read, and why.
    Unreadable(&'a str),
    /// A packet of a link type other than InfiniBand (a pcapng interface), of this many bytes.
    OtherLink(u32, usize),
}

/// A hex line longer than this is an error of its own (no IB packet comes near: 4 KiB of payload
/// is 8 KiB of digits).
const MAX_LINE: usize = 1 << 20;

type Input = io::Chain<io::Cursor<Vec<u8>>, Box<dyn Read>>;

/// The packets of one input.
pub enum Source {
    Capture(CaptureReader<Input>),
    Hex(HexLines<BufReader<Input>>),
}

impl Source {
    /// Reads the first bytes of `input` and picks the reader: a capture by its magic number, or,
    /// when `hex_allowed` (standard input), hex lines. Errors say why the input is not readable;
    /// an empty input is one, file or standard input alike: no capture (even one of no packets
    /// has a header) and no hex lines, most likely the wrong file or a pipe whose writer failed.
    pub fn open(mut input: Box<dyn Read>, hex_allowed: bool) -> Result<Source, String> {
        let mut head = Vec::with_capacity(4);
        (&mut input)
            .take(4)
            .read_to_end(&mut head)
            .map_err(|e| e.to_string())?;
        if head.is_empty() {
            return Err(if hex_allowed {
                "empty: no capture and no hex packets".into()
            } else {
                "empty: not a capture (even one of no packets has a header)".into()
            });
        }
        let capture = pcap::is_capture(&head);
        // A control character other than blank space ([`is_blank`], vertical tab included)
        // starts no hex text: binary input that is no capture (a gzipped one, /dev/zero) is
        // refused as from a file, not read as thousands of "not hex" lines.
        let binary = head
            .iter()
            .find(|&&b| b.is_ascii_control() && !is_blank(b))
            .copied();
        let input = io::Cursor::new(head).chain(input);
        if capture || !hex_allowed || binary.is_some() {
            let r = CaptureReader::new(input).map_err(|e| match binary {
                Some(b) if hex_allowed => format!(
                    "not a capture this tool reads ({e}), nor hex packets (byte 0x{b:02x} is no \
                     text)"
                ),
                _ => format!("not a capture this tool reads: {e}"),
            })?;
            Ok(Source::Capture(r))
        } else {
            Ok(Source::Hex(HexLines::new(BufReader::with_capacity(
                1 << 16,
                input,
            ))))
        }
    }

    /// The next packet; `Some(Err)` when the input cannot be read further.
    pub fn next_item(&mut self) -> Option<Result<Item<'_>, String>> {
        match self {
            Source::Capture(r) => Some(match r.next_packet()? {
                Ok(p) => {
                    let body = match p.link_type {
                        LinkType::Erf | LinkType::Infiniband => Body::Ib(p.data),
                        other => Body::OtherLink(other.into(), p.data.len()),
                    };
                    Ok(Item {
                        ts_ns: p.ts_ns,
                        link_type: Some(p.link_type),
                        body,
                    })
                }
                Err(e) => Err(e.to_string()),
            }),
            Source::Hex(h) => h.next_item(),
        }
    }
}

/// Hex packets, one per line: pairs of hex digits, with blank space, colons and dashes ignored;
/// `#` starts a comment; blank lines are skipped.
pub struct HexLines<R> {
    input: R,
    line: Vec<u8>,
    number: u64,
    bytes: Vec<u8>,
    error: String,
}

impl<R: BufRead> HexLines<R> {
    pub fn new(input: R) -> Self {
        HexLines {
            input,
            line: Vec::new(),
            number: 0,
            bytes: Vec::new(),
            error: String::new(),
        }
    }

    fn next_item(&mut self) -> Option<Result<Item<'_>, String>> {
        let item = |body| Item {
            ts_ns: None,
            link_type: None,
            body,
        };
        loop {
            self.line.clear();
            let read = (&mut self.input)
                .take(MAX_LINE as u64 + 1)
                .read_until(b'\n', &mut self.line);
            match read {
                Ok(0) => return None,
                Ok(_) => {}
                Err(e) => return Some(Err(format!("reading standard input: {e}"))),
            }
            self.number += 1;
            if self.line.len() > MAX_LINE {
                if let Err(e) = self.skip_line() {
                    return Some(Err(format!("reading standard input: {e}")));
                }
                self.error = format!("line {}: longer than {MAX_LINE} bytes", self.number);
                return Some(Ok(item(Body::Unreadable(&self.error))));
            }
            let text = self.line.split(|&c| c == b'#').next().unwrap_or(&[]);
            if text.iter().all(|&b| is_blank(b)) {
                continue;
            }
            return Some(Ok(match parse_hex(text, &mut self.bytes) {
                Ok(()) => item(Body::Ib(&self.bytes)),
                Err(e) => {
                    self.error = format!("line {}: {e}", self.number);
                    item(Body::Unreadable(&self.error))
                }
            }));
        }
    }

    /// Reads past the end of an overlong line, a bounded piece at a time.
    fn skip_line(&mut self) -> io::Result<()> {
        while !self.line.ends_with(b"\n") {
            self.line.clear();
            let n = (&mut self.input)
                .take(MAX_LINE as u64)
                .read_until(b'\n', &mut self.line)?;
            if n == 0 {
                break;
            }
        }
        Ok(())
    }
}

/// Blank space in a hex line: C's `isspace` set (space, tab, line feed, vertical tab, form feed,
/// carriage return), which a hex dump or a text file may hold. Rust's `is_ascii_whitespace`
/// leaves out the vertical tab (0x0b).
fn is_blank(b: u8) -> bool {
    b.is_ascii_whitespace() || b == 0x0b
}

/// Parses one line of hex into `out`: pairs of hex digits, with blank space ([`is_blank`]),
/// colons and dashes ignored.
pub fn parse_hex(line: &[u8], out: &mut Vec<u8>) -> Result<(), String> {
    out.clear();
    let mut digits = line
        .iter()
        .copied()
        .filter(|&c| !(is_blank(c) || matches!(c, b':' | b'-')));
    let mut count = 0;
    while let Some(hi) = digits.next() {
        count += 1;
        let Some(lo) = digits.next() else {
            return Err(format!("odd number of hex digits ({count})"));
        };
        count += 1;
        match ((hi as char).to_digit(16), (lo as char).to_digit(16)) {
            (Some(h), Some(l)) => out.push((h * 16 + l) as u8),
            _ => return Err(format!("not hex: {:?}", String::from_utf8_lossy(&[hi, lo]))),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Result<Vec<u8>, String> {
        let mut v = vec![0xee];
        parse_hex(s.as_bytes(), &mut v).map(|()| v)
    }

    #[test]
    fn hex_lines() {
        assert_eq!(
            hex("f0 02:00-1a\r\n").unwrap(),
            vec![0xf0, 0x02, 0x00, 0x1a]
        );
        assert!(hex("f0 0")
            .unwrap_err()
            .contains("odd number of hex digits (3)"));
        assert!(hex("zz").unwrap_err().contains("not hex"));
        assert!(hex("f0\x01f").unwrap_err().contains("not hex"));
    }

    // Every blank a text file may hold (vertical tab and form feed too) is blank space, at the
    // start of standard input as within a line: hex, not binary.
    #[test]
    fn vertical_tab_and_form_feed_are_blank() {
        assert_eq!(hex("\x0bf0\x0c02\x0b").unwrap(), vec![0xf0, 0x02]);
        let input: Box<dyn Read> = Box::new(&b"\x0b\x0c0a 0b\n\x0b\x0c\n"[..]);
        let mut src = match Source::open(input, true) {
            Ok(s @ Source::Hex(_)) => s,
            Ok(Source::Capture(_)) => panic!("read as a capture"),
            Err(e) => panic!("refused: {e}"),
        };
        match src.next_item() {
            Some(Ok(Item {
                body: Body::Ib(b), ..
            })) => assert_eq!(b, [0x0a, 0x0b]),
            _ => panic!("no packet"),
        }
        assert!(src.next_item().is_none(), "the blank line is skipped");
        let binary: Box<dyn Read> = Box::new(&b"\x0b\x000a0b\n"[..]);
        let e = Source::open(binary, true).err().expect("binary refused");
        assert!(e.contains("byte 0x00 is no text"), "{e}");
    }

    #[test]
    fn overlong_lines_are_their_own_error() {
        let mut input = format!("{}\n", "ab".repeat(MAX_LINE)).into_bytes();
        input.extend_from_slice(b"# a comment\n\n0a0b\n");
        let mut h = HexLines::new(&input[..]);
        match h.next_item() {
            Some(Ok(Item {
                body: Body::Unreadable(e),
                ..
            })) => assert!(e.starts_with("line 1: longer than"), "{e}"),
            _ => panic!("no error for the long line"),
        }
        match h.next_item() {
            Some(Ok(Item {
                body: Body::Ib(b), ..
            })) => assert_eq!(b, [0x0a, 0x0b]),
            _ => panic!("the line after the long one is lost"),
        }
        assert!(h.next_item().is_none());
    }
}

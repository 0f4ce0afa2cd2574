//! Field-by-field description of a parsed format, for people (`ipoib decode`) and machines
//! (`ipoib decode --json`). A representation lists its fields in wire order through a [`Describer`];
//! renderers decide how they look. No allocation is needed to describe.

use crate::types::{Gid, Guid};
use std::net::{Ipv4Addr, Ipv6Addr};

/// One field's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Value<'a> {
    /// An unsigned number, shown in decimal.
    Uint(u64),
    /// An unsigned number shown in hexadecimal with at least `digits` digits (identifiers, keys, masks).
    Hex(u64, u8),
    /// A flag.
    Bool(bool),
    /// A code point and its name (`Named(0x81, "GetResp")`); unknown codes carry a name like "Unknown".
    Named(u64, &'a str),
    /// Free text.
    Str(&'a str),
    /// Raw bytes (private data, padding, payload the decoder does not interpret).
    Bytes(&'a [u8]),
    /// A GID.
    Gid(Gid),
    /// A GUID.
    Guid(Guid),
    /// An IPv4 address.
    Ipv4(Ipv4Addr),
    /// An IPv6 address.
    Ipv6(Ipv6Addr),
}

/// Receives the fields of a format in wire order. `enter`/`leave` bracket a nested group (a header
/// inside a packet, a record inside a MAD, a private-data block inside a CM message).
pub trait Describer {
    /// One field. `name` is snake_case and stable: JSON keys are made from it.
    fn field(&mut self, name: &str, value: Value<'_>);
    /// Opens a nested group called `name`.
    fn enter(&mut self, name: &str);
    /// Closes the group opened last.
    fn leave(&mut self);
}

/// A format that can list its fields.
pub trait Describe {
    /// Lists every field by name, in wire order, into `d`.
    fn describe(&self, d: &mut dyn Describer);

    /// Lists the fields inside a group called `name`.
    fn describe_as(&self, name: &str, d: &mut dyn Describer) {
        d.enter(name);
        self.describe(d);
        d.leave();
    }
}

/// A describer that collects `path.name = value` lines; handy in tests.
#[derive(Debug, Default)]
pub struct Collect {
    path: Vec<String>,
    /// The collected `(dotted.path.name, rendered value)` pairs.
    pub fields: Vec<(String, String)>,
}

impl Collect {
    /// The rendered value of the first field whose dotted path ends with `suffix`.
    pub fn get(&self, suffix: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(k, _)| k == suffix || k.ends_with(&format!(".{suffix}")))
            .map(|(_, v)| v.as_str())
    }
}

/// Renders a value the way `ipoib decode` shows it to a person.
pub fn render(v: &Value<'_>) -> String {
    let mut s = String::new();
    render_into(&mut s, v);
    s
}

/// Appends `v` to `out` exactly as [`render`] shows it, without allocating anything but `out`'s
/// growth: decimal for `Uint`, `0x` and at least the given number of lower-case hex digits for
/// `Hex`, `name (0x..)` for `Named`, two lower-case hex digits per byte for `Bytes`, GIDs and IPv6
/// addresses as RFC 5952 text (as `std` prints an `Ipv6Addr`), GUIDs as `0x` and 16 digits.
pub fn render_into(out: &mut String, v: &Value<'_>) {
    match *v {
        Value::Uint(n) => push_uint(out, n),
        Value::Hex(n, d) => push_hex(out, n, d.into()),
        Value::Bool(b) => out.push_str(if b { "true" } else { "false" }),
        Value::Named(n, s) => {
            out.push_str(s);
            out.push_str(" (");
            push_hex(out, n, 1);
            out.push(')');
        }
        Value::Str(s) => out.push_str(s),
        Value::Bytes(b) => push_hex_bytes(out, b),
        Value::Gid(g) => push_ipv6(out, g.to_ipv6()),
        Value::Guid(g) => push_hex(out, g.0, 16),
        Value::Ipv4(a) => push_ipv4(out, a),
        Value::Ipv6(a) => push_ipv6(out, a),
    }
}

/// Lower-case hexadecimal digits.
const HEX_DIGITS: &[u8; 16] = b"0123456789abcdef";

/// "00" to "ff": two digits sliced out by value, a `&str` without any UTF-8 check.
const HEX_PAIRS: &str = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f\
202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f\
404142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f\
606162636465666768696a6b6c6d6e6f707172737475767778797a7b7c7d7e7f\
808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f\
a0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3b4b5b6b7b8b9babbbcbdbebf\
c0c1c2c3c4c5c6c7c8c9cacbcccdcecfd0d1d2d3d4d5d6d7d8d9dadbdcdddedf\
e0e1e2e3e4e5e6e7e8e9eaebecedeeeff0f1f2f3f4f5f6f7f8f9fafbfcfdfeff";

/// "00" to "99", likewise.
const DEC_PAIRS: &str = "00010203040506070809101112131415161718192021222324252627282930313233\
3435363738394041424344454647484950515253545556575859606162636465666768697071727374757677787980\
81828384858687888990919293949596979899";

/// Appends ASCII bytes (digits, punctuation) built on the stack.
fn push_ascii(out: &mut String, ascii: &[u8]) {
    // Only ever called with digits this module wrote, so the check never fails.
    out.push_str(std::str::from_utf8(ascii).unwrap_or_default());
}

/// Appends `n` in decimal (as `n.to_string()`).
pub fn push_uint(out: &mut String, n: u64) {
    if n < 10 {
        out.push(char::from(b'0' + n as u8));
        return;
    }
    if n < 100 {
        let i = 2 * n as usize;
        out.push_str(&DEC_PAIRS[i..i + 2]);
        return;
    }
    let mut n = n;
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    while n >= 100 {
        let pair = 2 * (n % 100) as usize;
        n /= 100;
        i -= 2;
        buf[i..i + 2].copy_from_slice(&DEC_PAIRS.as_bytes()[pair..pair + 2]);
    }
    if n >= 10 {
        let pair = 2 * n as usize;
        i -= 2;
        buf[i..i + 2].copy_from_slice(&DEC_PAIRS.as_bytes()[pair..pair + 2]);
    } else {
        i -= 1;
        buf[i] = b'0' + n as u8;
    }
    push_ascii(out, &buf[i..]);
}

/// Appends `0x` and `n` in lower-case hex with at least `min_digits` digits (as
/// `format!("{:#0w$x}", n, w = min_digits + 2)`; one digit at least).
pub fn push_hex(out: &mut String, n: u64, min_digits: usize) {
    let digits = (64 - n.leading_zeros() as usize).div_ceil(4).max(1);
    out.push_str("0x");
    for _ in digits..min_digits {
        out.push('0');
    }
    // An odd digit first, then pairs.
    let mut left = digits;
    if left % 2 == 1 {
        left -= 1;
        out.push(char::from(HEX_DIGITS[((n >> (4 * left)) & 0xf) as usize]));
    }
    while left > 0 {
        left -= 2;
        let i = 2 * ((n >> (4 * left)) & 0xff) as usize;
        out.push_str(&HEX_PAIRS[i..i + 2]);
    }
}

/// Appends two lower-case hex digits per byte, no separators.
pub fn push_hex_bytes(out: &mut String, bytes: &[u8]) {
    out.reserve(2 * bytes.len());
    let mut buf = [0u8; 128];
    for chunk in bytes.chunks(64) {
        for (pair, &b) in buf.chunks_exact_mut(2).zip(chunk) {
            pair[0] = HEX_DIGITS[usize::from(b >> 4)];
            pair[1] = HEX_DIGITS[usize::from(b & 0xf)];
        }
        push_ascii(out, &buf[..2 * chunk.len()]);
    }
}

/// Appends a dotted-quad IPv4 address.
pub fn push_ipv4(out: &mut String, a: Ipv4Addr) {
    for (i, o) in a.octets().into_iter().enumerate() {
        if i > 0 {
            out.push('.');
        }
        push_uint(out, o.into());
    }
}

/// Appends an IPv6 address as `std`'s `Display` writes it: RFC 5952 (lower case, no leading
/// zeros, the first longest run of two or more zero groups as `::`), and `::ffff:a.b.c.d` for an
/// IPv4-mapped address.
pub fn push_ipv6(out: &mut String, a: Ipv6Addr) {
    if let Some(v4) = a.to_ipv4_mapped() {
        out.push_str("::ffff:");
        push_ipv4(out, v4);
        return;
    }
    let seg = a.segments();
    // The first longest run of zero groups.
    let (mut best_at, mut best_len, mut run_at, mut run_len) = (0, 0, 0, 0);
    for (i, &g) in seg.iter().enumerate() {
        if g == 0 {
            if run_len == 0 {
                run_at = i;
            }
            run_len += 1;
            if run_len > best_len {
                (best_at, best_len) = (run_at, run_len);
            }
        } else {
            run_len = 0;
        }
    }
    let group = |out: &mut String, g: u16| {
        let digits = (16 - g.leading_zeros() as usize).div_ceil(4).max(1);
        let mut buf = [0u8; 4];
        for (i, b) in buf[..digits].iter_mut().enumerate() {
            *b = HEX_DIGITS[usize::from((g >> (4 * (digits - 1 - i))) & 0xf)];
        }
        push_ascii(out, &buf[..digits]);
    };
    let groups = |out: &mut String, gs: &[u16]| {
        for (i, &g) in gs.iter().enumerate() {
            if i > 0 {
                out.push(':');
            }
            group(out, g);
        }
    };
    if best_len > 1 {
        groups(out, &seg[..best_at]);
        out.push_str("::");
        groups(out, &seg[best_at + best_len..]);
    } else {
        groups(out, &seg);
    }
}

impl Describer for Collect {
    fn field(&mut self, name: &str, value: Value<'_>) {
        let mut k = self.path.join(".");
        if !k.is_empty() {
            k.push('.');
        }
        k.push_str(name);
        self.fields.push((k, render(&value)));
    }
    fn enter(&mut self, name: &str) {
        self.path.push(name.to_string());
    }
    fn leave(&mut self) {
        self.path.pop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// What `render` printed before `render_into`: `format!` and `Display` throughout.
    fn render_fmt(v: &Value<'_>) -> String {
        match *v {
            Value::Uint(n) => n.to_string(),
            Value::Hex(n, d) => format!("0x{:0width$x}", n, width = d as usize),
            Value::Bool(b) => b.to_string(),
            Value::Named(n, s) => format!("{s} ({n:#x})"),
            Value::Str(s) => s.to_string(),
            Value::Bytes(b) => b.iter().map(|x| format!("{x:02x}")).collect(),
            Value::Gid(g) => g.to_string(),
            Value::Guid(g) => g.to_string(),
            Value::Ipv4(a) => a.to_string(),
            Value::Ipv6(a) => a.to_string(),
        }
    }

    #[test]
    fn render_edge_cases_match_format() {
        let mut addrs: Vec<[u16; 8]> = vec![
            [0; 8],
            [0, 0, 0, 0, 0, 0, 0, 1],
            [1, 0, 0, 0, 0, 0, 0, 0],
            [0, 0, 0, 0, 0, 0, 0x0102, 0x0304],
            [0, 0, 0, 0, 0, 0xffff, 0x0a00, 0x0001],
            [0, 0, 0, 0, 0xffff, 0, 0x0a00, 0x0001],
            [0xfe80, 0, 0, 0, 0x0002, 0xc903, 0, 0x1234],
            [0xff12, 0x401b, 0xffff, 0, 0, 0, 0xffff, 0xffff],
            [1, 0, 1, 0, 1, 0, 1, 0],
            [1, 0, 0, 1, 0, 0, 1, 1],
            [0, 0, 1, 0, 0, 1, 0, 0],
            [0xabcd; 8],
        ];
        addrs.push([0x10, 0x100, 0x1000, 0xf, 0, 0xf0, 0xf00, 0xf000]);
        for a in addrs {
            let v = Ipv6Addr::from(a);
            assert_eq!(render(&Value::Ipv6(v)), v.to_string());
            let g = Gid(v.octets());
            assert_eq!(render(&Value::Gid(g)), render_fmt(&Value::Gid(g)));
        }
        for v in [
            Value::Uint(0),
            Value::Uint(u64::MAX),
            Value::Hex(0, 0),
            Value::Hex(0, 1),
            Value::Hex(0x12, 4),
            Value::Hex(u64::MAX, 4),
            Value::Hex(0xabc, 20),
            Value::Named(0, "x"),
            Value::Named(0x81, "GetResp"),
            Value::Bytes(&[]),
            Value::Bytes(&[0, 0x0f, 0xf0, 0xff]),
            Value::Guid(Guid(0x0002_c903_0000_1234)),
            Value::Guid(Guid(0)),
            Value::Ipv4(Ipv4Addr::new(0, 10, 255, 100)),
            Value::Str("a \"b\"\n"),
            Value::Bool(false),
        ] {
            assert_eq!(render(&v), render_fmt(&v), "{v:?}");
        }
    }

    #[test]
    fn digit_tables_cover_every_value() {
        assert_eq!((HEX_PAIRS.len(), DEC_PAIRS.len()), (512, 200));
        for n in (0..100_000).chain([u64::MAX, u64::MAX / 7, 1 << 63]) {
            assert_eq!(render(&Value::Uint(n)), n.to_string());
            assert_eq!(render(&Value::Hex(n, 2)), format!("0x{n:02x}"));
        }
    }

    proptest! {
        #[test]
        fn render_matches_format(
            n in any::<u64>(),
            d in 0u8..24,
            bytes in proptest::collection::vec(any::<u8>(), 0..200),
            groups in proptest::collection::vec(prop_oneof![Just(0u16), Just(0xffff), any::<u16>()], 8),
        ) {
            let shift = n % 64;
            for v in [
                Value::Uint(n),
                Value::Uint(n >> shift),
                Value::Hex(n >> shift, d),
                Value::Named(n >> shift, "name"),
                Value::Bytes(&bytes),
                Value::Guid(Guid(n >> shift)),
                Value::Ipv4(Ipv4Addr::from((n >> 32) as u32)),
            ] {
                prop_assert_eq!(render(&v), render_fmt(&v));
            }
            let mut seg = [0u16; 8];
            seg.copy_from_slice(&groups);
            let a = Ipv6Addr::from(seg);
            prop_assert_eq!(render(&Value::Ipv6(a)), a.to_string());
        }
    }
}

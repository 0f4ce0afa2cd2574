//! Renderers for `ipoib decode`: an indented tree for people and one JSON object per line for machines.
//! Both receive the fields of a packet through the wire crate's [`Describer`].

use crate::describe::{push_uint, render_into, Describer, Value};

// Both renderers write straight into their `out` string with `describe::render_into` and the
// `push_*` helpers: no `String` per field, no `format!`. Reuse one renderer across packets
// (`Text::clear`, `Json::open`/`Json::close`) so that `out` keeps its allocation.

/// Renders fields as an indented tree, one field per line, groups as headings (like `tshark -V`).
#[derive(Debug, Default)]
pub struct Text {
    depth: usize,
    /// The rendered text.
    pub out: String,
}

impl Text {
    fn indent(&mut self) {
        for _ in 0..self.depth {
            self.out.push_str("    ");
        }
    }

    /// Empties `out` (keeping its allocation) and goes back to the top level.
    pub fn clear(&mut self) {
        self.out.clear();
        self.depth = 0;
    }
}

/// Byte strings longer than this are shown as a length line and then rows of this many bytes, so
/// that private data and payloads do not become one line hundreds of characters long.
const BYTES_PER_ROW: usize = 32;

impl Describer for Text {
    fn field(&mut self, name: &str, value: Value<'_>) {
        self.indent();
        self.out.push_str(name);
        self.out.push_str(": ");
        match value {
            Value::Bytes(b) if b.len() > BYTES_PER_ROW => {
                push_uint(&mut self.out, b.len() as u64);
                self.out.push_str(" bytes\n");
                self.depth += 1;
                for row in b.chunks(BYTES_PER_ROW) {
                    self.indent();
                    render_into(&mut self.out, &Value::Bytes(row));
                    self.out.push('\n');
                }
                self.depth -= 1;
            }
            _ => {
                render_into(&mut self.out, &value);
                self.out.push('\n');
            }
        }
    }
    fn enter(&mut self, name: &str) {
        self.indent();
        self.out.push_str(name);
        self.out.push('\n');
        self.depth += 1;
    }
    fn leave(&mut self) {
        self.depth = self.depth.saturating_sub(1);
    }
}

/// Renders fields as one JSON object; groups become nested objects. Numbers stay numbers; identifiers
/// shown in hex become `"0x…"` strings (64-bit values do not fit a JSON double); a named code point
/// becomes the number plus a sibling `<name>_name` string.
///
/// `Json::default()` has one object open; [`Json::lines`] starts with none, for writing one object
/// after another into the same `out` with [`Json::open`] and [`Json::close`].
#[derive(Debug)]
pub struct Json {
    /// The rendered object(s); call [`Json::close`] or [`Json::finish`] before reading it.
    pub out: String,
    /// One entry per open object: whether it has no member yet.
    first: Vec<bool>,
}

impl Default for Json {
    fn default() -> Self {
        let mut j = Json::lines();
        j.open();
        j
    }
}

impl Json {
    /// A renderer with nothing open and an empty `out`.
    pub fn lines() -> Json {
        Json {
            out: String::new(),
            first: Vec::new(),
        }
    }

    /// Starts a new top-level object at the end of `out` (after [`Json::close`] of the last one).
    pub fn open(&mut self) {
        self.out.push('{');
        self.first.clear();
        self.first.push(true);
    }

    /// Closes every open object.
    pub fn close(&mut self) {
        while self.first.pop().is_some() {
            self.out.push('}');
        }
    }

    /// Writes the separator and the quoted key `name` followed by `suffix`.
    fn key_with(&mut self, name: &str, suffix: &str) {
        if self.first.is_empty() {
            // A field described before `open`: start the object rather than write invalid JSON.
            self.open();
        }
        if let Some(first) = self.first.last_mut() {
            if !*first {
                self.out.push(',');
            }
            *first = false;
        }
        escape_open(&mut self.out, name);
        self.out.push_str(suffix);
        self.out.push_str("\":");
    }

    /// Closes every open object and returns the JSON text.
    pub fn finish(mut self) -> String {
        self.close();
        self.out
    }
}

/// Appends `s` as a JSON string literal.
pub fn escape(out: &mut String, s: &str) {
    escape_open(out, s);
    out.push('"');
}

/// Appends the opening quote and the escaped `s`, without the closing quote. Runs of characters
/// that need no escape (all but `"`, `\` and the controls below 0x20) are copied whole.
fn escape_open(out: &mut String, s: &str) {
    out.push('"');
    if !needs_escape(s.as_bytes()) {
        out.push_str(s);
        return;
    }
    let mut start = 0;
    for (i, &b) in s.as_bytes().iter().enumerate() {
        if b >= 0x20 && b != b'"' && b != b'\\' {
            continue;
        }
        // `b` is ASCII, so `i` is a character boundary.
        out.push_str(&s[start..i]);
        match b {
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            _ => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                out.push_str("\\u00");
                out.push(char::from(HEX[usize::from(b >> 4)]));
                out.push(char::from(HEX[usize::from(b & 0xf)]));
            }
        }
        start = i + 1;
    }
    out.push_str(&s[start..]);
}

/// Whether any byte of `s` must be escaped in a JSON string (`"`, `\\`, below 0x20), eight bytes
/// at a time: keys and names almost never need it.
fn needs_escape(s: &[u8]) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    // Some byte of `v` is below `n` (n <= 0x80); exact as a yes/no answer.
    let has_less = |v: u64, n: u64| v.wrapping_sub(ONES * n) & !v & HIGH != 0;
    let has_byte = |v: u64, b: u8| has_less(v ^ (ONES * u64::from(b)), 1);
    let mut words = s.chunks_exact(8);
    for w in &mut words {
        let v = u64::from_le_bytes([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]]);
        if has_less(v, 0x20) | has_byte(v, b'"') | has_byte(v, b'\\') {
            return true;
        }
    }
    words
        .remainder()
        .iter()
        .any(|&b| b < 0x20 || b == b'"' || b == b'\\')
}

impl Describer for Json {
    fn field(&mut self, name: &str, value: Value<'_>) {
        self.key_with(name, "");
        match value {
            Value::Uint(n) => push_uint(&mut self.out, n),
            Value::Bool(b) => self.out.push_str(if b { "true" } else { "false" }),
            Value::Named(n, s) => {
                push_uint(&mut self.out, n);
                self.key_with(name, "_name");
                escape(&mut self.out, s);
            }
            Value::Str(s) => escape(&mut self.out, s),
            // Hex numbers, bytes, GIDs, GUIDs and addresses render as hex digits, `x`, `:` and
            // `.` only: nothing to escape.
            other => {
                self.out.push('"');
                render_into(&mut self.out, &other);
                self.out.push('"');
            }
        }
    }
    fn enter(&mut self, name: &str) {
        self.key_with(name, "");
        self.out.push('{');
        self.first.push(true);
    }
    fn leave(&mut self) {
        if self.first.len() > 1 {
            self.first.pop();
            self.out.push('}');
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_nests_and_escapes() {
        let mut j = Json::default();
        j.field("index", Value::Uint(1));
        j.enter("lrh");
        j.field("dlid", Value::Hex(0x12, 4));
        j.field("lnh", Value::Named(2, "IBA local"));
        j.leave();
        j.field("note", Value::Str("a \"quoted\"\nline"));
        j.field("ok", Value::Bool(true));
        assert_eq!(
            j.finish(),
            r#"{"index":1,"lrh":{"dlid":"0x0012","lnh":2,"lnh_name":"IBA local"},"note":"a \"quoted\"\nline","ok":true}"#
        );
    }

    /// The fast escape against the character-by-character one it replaced.
    #[test]
    fn escape_matches_char_by_char() {
        fn slow(s: &str) -> String {
            let mut out = String::from("\"");
            for c in s.chars() {
                match c {
                    '"' => out.push_str("\\\""),
                    '\\' => out.push_str("\\\\"),
                    '\n' => out.push_str("\\n"),
                    '\r' => out.push_str("\\r"),
                    '\t' => out.push_str("\\t"),
                    c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
                    c => out.push(c),
                }
            }
            out.push('"');
            out
        }
        let mut all = String::new();
        for c in (0u32..0x80).chain([0xe9, 0x2028, 0x1f600]) {
            all.push(char::from_u32(c).unwrap());
        }
        for s in [
            "",
            "plain",
            "\"",
            "a\\b",
            "\u{1}x\u{1f}",
            "é\"ü\n",
            "\u{7f}",
            // Specials in the 8-byte words and in the tail of the fast check.
            "0123456789abcdef\\",
            "0123456\u{1}89abcdef",
            "01234567\"9abcdefgh",
            "0123456789abcdefg",
            "\u{7f}\u{80}\u{ff}!#[]~ 012345",
            all.as_str(),
        ] {
            let mut out = String::new();
            escape(&mut out, s);
            assert_eq!(out, slow(s), "{s:?}");
        }
    }

    /// One renderer reused for several objects writes them back to back.
    #[test]
    fn json_lines_reuse() {
        let mut j = Json::lines();
        for i in 0..2 {
            j.open();
            j.field("packet", Value::Uint(i));
            j.enter("g");
            j.field("b", Value::Bytes(&[0xab, 1]));
            j.close();
            j.out.push('\n');
        }
        assert_eq!(
            j.out,
            "{\"packet\":0,\"g\":{\"b\":\"ab01\"}}\n{\"packet\":1,\"g\":{\"b\":\"ab01\"}}\n"
        );
    }

    #[test]
    fn text_wraps_long_bytes() {
        let mut t = Text::default();
        t.field("short", Value::Bytes(&[0xab; 32]));
        t.enter("cm");
        t.field("private_data", Value::Bytes(&[0x01; 40]));
        t.leave();
        let row = "ab".repeat(32);
        assert_eq!(
            t.out,
            format!(
                "short: {row}\ncm\n    private_data: 40 bytes\n        {}\n        {}\n",
                "01".repeat(32),
                "01".repeat(8)
            )
        );
    }

    #[test]
    fn text_indents_groups() {
        let mut t = Text::default();
        t.enter("bth");
        t.field("opcode", Value::Named(0x64, "UD SEND_ONLY"));
        t.leave();
        t.field("icrc_ok", Value::Bool(false));
        assert_eq!(
            t.out,
            "bth\n    opcode: UD SEND_ONLY (0x64)\nicrc_ok: false\n"
        );
    }
}

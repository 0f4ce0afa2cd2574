//! Renderers for `ipoib decode`: an indented tree for people and one JSON object per line for machines.
//! Both receive the fields of a packet through the wire crate's [`Describer`].

use ipoib_wire::describe::{render, Describer, Value};
use std::fmt::Write as _;

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
}

/// Byte strings longer than this are shown as a length line and then rows of this many bytes, so
/// that private data and payloads do not become one line hundreds of characters long.
const BYTES_PER_ROW: usize = 32;

impl Describer for Text {
    fn field(&mut self, name: &str, value: Value<'_>) {
        self.indent();
        match value {
            Value::Bytes(b) if b.len() > BYTES_PER_ROW => {
                let _ = writeln!(self.out, "{name}: {} bytes", b.len());
                self.depth += 1;
                for row in b.chunks(BYTES_PER_ROW) {
                    self.indent();
                    let _ = writeln!(self.out, "{}", render(&Value::Bytes(row)));
                }
                self.depth -= 1;
            }
            _ => {
                let _ = writeln!(self.out, "{name}: {}", render(&value));
            }
        }
    }
    fn enter(&mut self, name: &str) {
        self.indent();
        let _ = writeln!(self.out, "{name}");
        self.depth += 1;
    }
    fn leave(&mut self) {
        self.depth = self.depth.saturating_sub(1);
    }
}

/// Renders fields as one JSON object; groups become nested objects. Numbers stay numbers; identifiers
/// shown in hex become `"0x…"` strings (64-bit values do not fit a JSON double); a named code point
/// becomes the number plus a sibling `<name>_name` string.
#[derive(Debug)]
pub struct Json {
    /// The rendered object; call [`Json::finish`] before reading it.
    pub out: String,
    first: Vec<bool>,
}

impl Default for Json {
    fn default() -> Self {
        Json {
            out: String::from("{"),
            first: vec![true],
        }
    }
}

impl Json {
    fn key(&mut self, name: &str) {
        let first = self
            .first
            .last_mut()
            .expect("the root object is never left");
        if !*first {
            self.out.push(',');
        }
        *first = false;
        escape(&mut self.out, name);
        self.out.push(':');
    }

    /// Closes every open object and returns the JSON text.
    pub fn finish(mut self) -> String {
        while !self.first.is_empty() {
            self.out.push('}');
            self.first.pop();
        }
        self.out
    }
}

/// Appends `s` as a JSON string literal.
pub fn escape(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

impl Describer for Json {
    fn field(&mut self, name: &str, value: Value<'_>) {
        self.key(name);
        match value {
            Value::Uint(n) => {
                let _ = write!(self.out, "{n}");
            }
            Value::Bool(b) => {
                let _ = write!(self.out, "{b}");
            }
            Value::Named(n, s) => {
                let _ = write!(self.out, "{n}");
                let mut k = String::with_capacity(name.len() + 5);
                k.push_str(name);
                k.push_str("_name");
                self.key(&k);
                escape(&mut self.out, s);
            }
            Value::Str(s) => escape(&mut self.out, s),
            other => {
                let s = render(&other);
                escape(&mut self.out, &s);
            }
        }
    }
    fn enter(&mut self, name: &str) {
        self.key(name);
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

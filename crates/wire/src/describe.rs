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

//! Helpers shared by the fuzz targets: a describer that checks what `ipoib decode` relies on, and
//! checksum fix-ups so that the fuzzer gets past checksum checks into the formats behind them.
#![allow(dead_code)]

use ipoib_wire::describe::{render, Describe, Describer, Value};
use std::collections::BTreeSet;
use std::net::Ipv6Addr;

/// A describer that asserts the invariants the renderers of `ipoib decode` depend on: every name is
/// snake_case, `enter`/`leave` balance, and no object gets the same JSON key twice (a `Named` value
/// also takes the key `<name>_name`, as the JSON renderer writes it). Every value is rendered too.
#[derive(Debug)]
pub struct Checker {
    stack: Vec<(String, BTreeSet<String>)>,
    /// Fields seen so far.
    pub fields: usize,
    /// Top-level fields seen, in order (for checks on `summary`, `error`, ...).
    pub top: Vec<String>,
}

impl Default for Checker {
    fn default() -> Self {
        Checker {
            stack: vec![(String::new(), BTreeSet::new())],
            fields: 0,
            top: Vec::new(),
        }
    }
}

impl Checker {
    /// A checker whose root already holds the keys the CLI adds itself (`packet`, `ts_ns`, `len`).
    pub fn for_cli() -> Checker {
        let mut c = Checker::default();
        for k in ["packet", "ts_ns", "len"] {
            c.key(k);
        }
        c.top.clear();
        c
    }

    fn path(&self) -> String {
        let v: Vec<&str> = self.stack.iter().skip(1).map(|(n, _)| n.as_str()).collect();
        v.join(".")
    }

    fn key(&mut self, name: &str) {
        assert!(
            !name.is_empty()
                && name.as_bytes()[0].is_ascii_lowercase()
                && name
                    .bytes()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'_'),
            "field name {name:?} at {:?} is not snake_case",
            self.path()
        );
        let path = self.path();
        let (_, keys) = self.stack.last_mut().expect("root is never left");
        assert!(
            keys.insert(name.to_string()),
            "duplicate key {name:?} in object {path:?}"
        );
        if self.stack.len() == 1 {
            self.top.push(name.to_string());
        }
    }

    /// Asserts that every group was closed.
    pub fn finish(&self) {
        assert_eq!(
            self.stack.len(),
            1,
            "unbalanced enter/leave: still inside {:?}",
            self.path()
        );
    }

    /// True if the top level has a field called `name`.
    pub fn has_top(&self, name: &str) -> bool {
        self.top.iter().any(|k| k == name)
    }
}

impl Describer for Checker {
    fn field(&mut self, name: &str, value: Value<'_>) {
        self.key(name);
        if let Value::Named(_, s) = value {
            self.key(&format!("{name}_name"));
            assert!(!s.is_empty(), "empty name for code point {name:?}");
        }
        let _ = render(&value);
        self.fields += 1;
    }
    fn enter(&mut self, name: &str) {
        self.key(name);
        self.stack.push((name.to_string(), BTreeSet::new()));
    }
    fn leave(&mut self) {
        assert!(
            self.stack.len() > 1,
            "leave() without enter() after {} fields",
            self.fields
        );
        self.stack.pop();
    }
}

/// Describes `x` into a fresh [`Checker`] and checks it.
pub fn check_describe(x: &dyn Describe) {
    let mut c = Checker::default();
    x.describe(&mut c);
    c.finish();
}

/// Writes a correct Internet checksum at `at` of `data` (RFC 1071), summing `acc` first.
pub fn fix_checksum(data: &mut [u8], at: usize, acc: u32) {
    use ipoib_wire::ipoib::checksum::{finish, sum};
    if data.len() < at + 2 {
        return;
    }
    data[at] = 0;
    data[at + 1] = 0;
    let c = finish(sum(acc, data));
    data[at..at + 2].copy_from_slice(&c.to_be_bytes());
}

/// Writes the ICMPv6 checksum of `msg` for `src` → `dst` (RFC 4443 §2.3).
pub fn fix_icmpv6(src: Ipv6Addr, dst: Ipv6Addr, msg: &mut [u8]) {
    if msg.len() < 4 {
        return;
    }
    msg[2] = 0;
    msg[3] = 0;
    let c = ipoib_wire::ipoib::checksum::icmpv6(src, dst, msg);
    msg[2..4].copy_from_slice(&c.to_be_bytes());
}

/// Fixes the checksums of the IP datagram `d` (IPv4 header and ICMP, or ICMPv6) in place, so that
/// mutations reach the parsers behind them. Anything that does not look like IP is left alone.
pub fn fix_ip_checksums(d: &mut [u8]) {
    match d.first().map(|b| b >> 4) {
        Some(4) if d.len() >= 20 => {
            let hl = usize::from(d[0] & 0x0f) * 4;
            let tl = usize::from(u16::from_be_bytes([d[2], d[3]]));
            if hl < 20 || hl > d.len() {
                return;
            }
            fix_checksum(&mut d[..hl], 10, 0);
            if d[9] == 1 && tl >= hl && tl <= d.len() {
                fix_checksum(&mut d[hl..tl], 2, 0);
                // The ICMP checksum is not covered by the header checksum: no second pass needed.
            }
        }
        Some(6) if d.len() >= 40 => {
            let pl = usize::from(u16::from_be_bytes([d[4], d[5]]));
            if d[6] != 58 || 40 + pl > d.len() {
                return;
            }
            let src = addr16(&d[8..24]);
            let dst = addr16(&d[24..40]);
            fix_icmpv6(src, dst, &mut d[40..40 + pl]);
        }
        _ => {}
    }
}

/// An IPv6 address from 16 bytes.
pub fn addr16(b: &[u8]) -> Ipv6Addr {
    let mut a = [0u8; 16];
    a.copy_from_slice(&b[..16]);
    Ipv6Addr::from(a)
}

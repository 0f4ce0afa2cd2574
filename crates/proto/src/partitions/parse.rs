//! The `partitions.conf` parser. Grammar and leniency follow OpenSM's own parser
//! (`osm_prtn_config.c`) rather than only its manual:
//!
//! - a definition is `Header : Body ;`; the header (`[Name][=PKey][,flag[=value]]...`) must be on
//!   one line and end with `:`; the body is a list of port specifiers and `mgid=` lines separated
//!   by `,` or line ends, and ends with `;`. `#` starts a comment to the end of the line.
//! - flag, keyword and membership names match by prefix, in OpenSM's order (`mtu`, `rate`,
//!   `scope`, `Q_Key`, `TClass`, `sl`, `FlowLabel`, then `ipoib`, `defmember`, `indx0`; `NONE`,
//!   `ALL`, `ALL_CAS`, `ALL_SWITCHES`, `ALL_ROUTERS`, `SELF`; `full`, `both`, `limited`), so `limi`
//!   means limited as in the manual's example.
//! - what OpenSM skips with a `PARSE WARN` (unknown flags, flag values it rejects, IP groups whose
//!   P_Key, rate or MTU disagree with the partition) becomes a [`Warning`], and so do a P_Key
//!   repeated under another name (merged) and a name repeated with another P_Key (two
//!   partitions), which OpenSM passes over; an `mtu=`/`rate=` value that is no MTU or rate code is
//!   an error (OpenSM takes it, then makes no group or the largest one); what it rejects with a
//!   `PARSE ERROR` (no `:` in a definition, a bad P_Key, a bad PortGUID, a bad MGID) is a
//!   [`ParseError`] with line and column. A missing `;` at the end of the file is a warning.
//!   (OpenSM 3.3.23 itself logs a PARSE ERROR and falls back to its default configuration; we
//!   refuse the file instead, so that a typo is not silently replaced by another partitioning.)
//!   An empty header flag (a trailing comma), which OpenSM skips with a `PARSE WARN`, is a
//!   warning; so is an mgid line right after a header's `:`, which OpenSM 3.3.23 fails on
//!   (docs/OPENSM-PARTITIONS.md).
//! - a file without any definition (empty, or comments only) gives OpenSM's default
//!   configuration ([`PartitionConfig::default_config`]) with a warning, as OpenSM 3.3.23 does
//!   ("Partition configuration in error; retrying with default config").
//! - without QoS (OpenSM's default), a partition-level `sl=` is overridden to 0 (OpenSM
//!   `partition_create`); `mgid=` lines keep their own `sl=`.
//! - numbers are C `strtoul(.., 0)` style: `0x` hex, leading `0` octal, else decimal.

use super::{GroupFlags, McGroupSpec, MemberSpec, Membership, Partition, PartitionConfig};
use ipoib_wire::ipoib::mcast::{broadcast_mgid, mgid_pkey, Scope};
use ipoib_wire::QKey;
use ipoib_wire::{Gid, Guid, Mtu, PKey, Rate};
use std::fmt;
use std::net::Ipv6Addr;

/// A fatal error, with the 1-based line and column (in characters) where it was found.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}, column {column}: {message}")]
pub struct ParseError {
    /// Line, from 1.
    pub line: usize,
    /// Column, from 1.
    pub column: usize,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            return f.write_str(&self.message);
        }
        write!(
            f,
            "line {}, column {}: {}",
            self.line, self.column, self.message
        )
    }
}

/// Something OpenSM would skip with a `PARSE WARN`, or another departure from what the file
/// seems to ask for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Warning {
    /// Line, from 1; 0 when the warning is about the file as a whole.
    pub line: usize,
    /// Column, from 1.
    pub column: usize,
    /// What was skipped.
    pub message: String,
}

/// Parser options.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ParseOptions {
    /// OpenSM's `qos` option: when false (OpenSM's default) partition-level `sl=` is forced to 0.
    pub qos: bool,
}

/// Parses a `partitions.conf` text with OpenSM's default options.
pub fn parse(text: &str) -> Result<PartitionConfig, ParseError> {
    parse_with(text, ParseOptions::default())
}

/// A piece of one line: the text and the byte offset where it starts in the line.
#[derive(Clone, Copy)]
struct Piece<'a> {
    text: &'a str,
    off: usize,
}

impl<'a> Piece<'a> {
    fn trim(self) -> Piece<'a> {
        let lead = self.text.len() - self.text.trim_start().len();
        Piece {
            text: self.text.trim(),
            off: self.off + lead,
        }
    }
    /// Splits at the first `c` (an ASCII character, so the split is on a char boundary).
    fn split_once(self, c: char) -> Option<(Piece<'a>, Piece<'a>)> {
        let i = self.text.find(c)?;
        Some((
            Piece {
                text: &self.text[..i],
                off: self.off,
            },
            Piece {
                text: &self.text[i + 1..],
                off: self.off + i + 1,
            },
        ))
    }
    fn split_all(self, c: char) -> Vec<Piece<'a>> {
        let mut out = Vec::new();
        let mut rest = self;
        while let Some((a, b)) = rest.split_once(c) {
            out.push(a);
            rest = b;
        }
        out.push(rest);
        out
    }
    /// `name[=value]`, both trimmed.
    fn name_value(self) -> (Piece<'a>, Option<Piece<'a>>) {
        match self.split_once('=') {
            Some((n, v)) => (n.trim(), Some(v.trim())),
            None => (self.trim(), None),
        }
    }
}

struct Parser<'a> {
    lines: Vec<&'a str>,
    opts: ParseOptions,
    out: Vec<Partition>,
    warnings: Vec<Warning>,
    current: Option<Partition>,
    /// Line of the current definition's header.
    current_line: usize,
    /// Byte offset of the current header's name in its line.
    current_off: usize,
    /// Line (from 1) of the first definition of each partition in `out`.
    out_lines: Vec<usize>,
    next_auto_pkey: u16,
}

/// Parses with explicit options.
pub fn parse_with(text: &str, opts: ParseOptions) -> Result<PartitionConfig, ParseError> {
    let mut p = Parser {
        lines: text
            .split('\n')
            .map(|l| l.split('#').next().unwrap_or(""))
            .collect(),
        opts,
        out: Vec::new(),
        warnings: Vec::new(),
        current: None,
        current_line: 0,
        current_off: 0,
        out_lines: Vec::new(),
        next_auto_pkey: 1,
    };
    for ln in 0..p.lines.len() {
        p.line(ln)?;
    }
    if let Some(part) = p.current.take() {
        let line = p.current_line;
        p.warn(
            line,
            0,
            "definition not terminated by ';' at end of file".into(),
        );
        p.finish(part);
    }
    if p.out.is_empty() {
        // OpenSM 3.3.23 `osm_prtn_config_parse_file` fails on a file without a definition (empty
        // or comments only); `osm_prtn_make_partitions` then logs "Partition configuration in
        // error; retrying with default config" and uses the configuration of no file at all
        // (docs/OPENSM-NOTES.md "partitions.conf").
        let mut c = PartitionConfig::default_config();
        c.warnings.push(Warning {
            line: 0,
            column: 0,
            message: "no partition definition in the file; as OpenSM does, using the default \
                      configuration instead (Default=0x7fff, ipoib : ALL=full ;)"
                .into(),
        });
        return Ok(c);
    }
    // OpenSM makes the default partition before it reads the file, every port a limited
    // member and its own port a full one (`osm_prtn.c` `osm_prtn_make_default`:
    // `osm_prtn_add_all(..., no_config)` with `no_config` false when a file exists), so a file's
    // Default rule adds to `ALL=limited` rather than replacing it: `Default=0x7fff : SELF=full ;`
    // leaves every other port a limited member (measured on OpenSM 3.3.23,
    // docs/OPENSM-PARTITIONS.md). opensm(8) states it for a file without a Default rule only:
    // "Default=0x7fff : ALL=limited, SELF=full ;".
    match p
        .out
        .iter_mut()
        .find(|x| x.pkey.same_partition(PKey::DEFAULT))
    {
        Some(d) => d.members.insert(0, (MemberSpec::All, Membership::Limited)),
        None => {
            let mut d = Partition::new("Default", PKey::DEFAULT.limited());
            d.members.push((MemberSpec::All, Membership::Limited));
            p.out.insert(0, d);
        }
    }
    if let Some(d) = p
        .out
        .iter_mut()
        .find(|x| x.pkey.same_partition(PKey::DEFAULT))
    {
        // opensm(8): "OpenSM's port will always have full membership in default partition."
        // (OpenSM 3.3.23 itself adds its port first, so that a later `ALL=limited` makes it
        // limited; our SM keeps its port full, docs/OPENSM-PARTITIONS.md.)
        d.members.push((MemberSpec::SelfPort, Membership::Full));
    }
    Ok(PartitionConfig {
        partitions: p.out,
        warnings: p.warnings,
    })
}

/// C `strtoul(s, &end, 0)` requiring the whole string to be consumed.
fn parse_num(s: &str) -> Option<u64> {
    let s = s.trim();
    let s = s.strip_prefix('+').unwrap_or(s);
    if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        return u64::from_str_radix(h, 16).ok();
    }
    if s.len() > 1 && s.starts_with('0') {
        return u64::from_str_radix(&s[1..], 8).ok();
    }
    s.parse::<u64>().ok()
}

/// True if `name` is a non-empty prefix of `keyword` (OpenSM's `strncmp(name, kw, strlen(name))`).
fn prefix_of(name: &str, keyword: &str) -> bool {
    !name.is_empty() && keyword.starts_with(name)
}

impl<'a> Parser<'a> {
    fn col(&self, line: usize, off: usize) -> usize {
        let l = self.lines.get(line).copied().unwrap_or("");
        l.get(..off.min(l.len())).map_or(off, |s| s.chars().count()) + 1
    }
    fn err(&self, line: usize, off: usize, message: String) -> ParseError {
        ParseError {
            line: line + 1,
            column: self.col(line, off),
            message,
        }
    }
    fn warn(&mut self, line: usize, off: usize, message: String) {
        let column = self.col(line, off);
        self.warnings.push(Warning {
            line: line + 1,
            column,
            message,
        });
    }

    fn line(&mut self, ln: usize) -> Result<(), ParseError> {
        let mut rest = Piece {
            text: self.lines[ln],
            off: 0,
        };
        loop {
            rest = rest.trim();
            if rest.text.is_empty() {
                return Ok(());
            }
            let (segment, after, terminated) = match rest.split_once(';') {
                Some((s, a)) => (s, Some(a), true),
                None => (rest, None, false),
            };
            let body = if self.current.is_none() {
                let Some((header, body)) = segment.split_once(':') else {
                    return Err(self.err(
                        ln,
                        segment.off,
                        "no partition definition found (expected 'Name[=PKey][,flags] :')".into(),
                    ));
                };
                let part = self.header(ln, header)?;
                let first = body.split_once(',').map_or(body, |(a, _)| a).name_value().0;
                if first.text == "mgid" {
                    // OpenSM 3.3.23 (`osm_prtn_config.c` `parse_part_conf`) miscounts the line
                    // when an mgid line follows the header's ':' directly and fails the file
                    // with a PARSE ERROR on the next line, falling back to its default
                    // configuration (measured, docs/OPENSM-PARTITIONS.md).
                    self.warn(
                        ln,
                        first.off,
                        "an mgid line right after the header's ':' makes OpenSM 3.3.23 fail the                          file (PARSE ERROR, default configuration); start it on a line of its                          own or after a port specifier"
                            .into(),
                    );
                }
                self.current = Some(part);
                self.current_line = ln;
                self.current_off = header.trim().off;
                body
            } else {
                segment
            };
            self.body(ln, body)?;
            if terminated {
                if let Some(part) = self.current.take() {
                    self.finish(part);
                }
            }
            match after {
                Some(a) => rest = a,
                None => return Ok(()),
            }
        }
    }

    fn header(&mut self, ln: usize, header: Piece<'a>) -> Result<Partition, ParseError> {
        let tokens = header.split_all(',');
        let (name, mut id) = tokens[0].name_value();
        let mut name_text = name.text;
        if id.is_none() && name.text.starts_with(|c: char| c.is_ascii_digit()) {
            id = Some(name);
            name_text = "";
        }
        let pkey = match id {
            Some(idp) => {
                let v = parse_num(idp.text)
                    .filter(|v| *v <= 0xffff)
                    .ok_or_else(|| self.err(ln, idp.off, format!("bad P_Key '{}'", idp.text)))?;
                let v = PKey(v as u16).limited();
                if !v.is_valid() {
                    return Err(self.err(ln, idp.off, "P_Key 0 is invalid".into()));
                }
                v
            }
            // OpenSM `osm_prtn_make_new`: a definition without a P_Key adds to the partition of
            // that name (the default partition is named "Default"), else gets a new P_Key.
            None => match self.out.iter().find(|p| p.name == name_text) {
                Some(p) if !name_text.is_empty() => p.pkey,
                _ if name_text == "Default" => PKey::DEFAULT.limited(),
                _ => self.auto_pkey(),
            },
        };
        let mut part = Partition::new(name_text, pkey);
        part.flags.sl = 0;
        let mut sl_set = None;
        for tok in &tokens[1..] {
            let (flag, val) = tok.name_value();
            if flag.text.is_empty() {
                // An empty flag (`A=1, ipoib, : ...`, a trailing comma): OpenSM's
                // `parse_name_token` gives it an empty name, which `parse_group_flag` takes as a
                // prefix of `mtu`; with no value it logs "flag 'mtu' requires valid value -
                // skipped" and reads on (measured on OpenSM 3.3.23, docs/OPENSM-PARTITIONS.md).
                // With a value it would set the MTU: that stays an error.
                if let Some(v) = val {
                    return Err(self.err(
                        ln,
                        v.off,
                        format!(
                            "bad partition flags (value '{}' without a flag name)",
                            v.text
                        ),
                    ));
                }
                self.warn(ln, tok.off, "empty partition flag - skipped".into());
                continue;
            }
            if let Some(handled) = self.group_flag(ln, &mut part.flags, flag, val)? {
                if handled == "sl" {
                    sl_set = Some(flag.off);
                }
                continue;
            }
            if prefix_of(flag.text, "ipoib") {
                part.ipoib = true;
            } else if prefix_of(flag.text, "defmember") {
                match val.map(|v| v.text) {
                    Some(v) if prefix_of(v, "limited") => part.default_member = Membership::Limited,
                    Some(v) if prefix_of(v, "both") => part.default_member = Membership::Both,
                    Some(v) if prefix_of(v, "full") => part.default_member = Membership::Full,
                    _ => self.warn(
                        ln,
                        flag.off,
                        "flag 'defmember' requires valid value (limited or full or both) - skipped"
                            .into(),
                    ),
                }
            } else if flag.text == "indx0" {
                part.index0 = true;
            } else {
                self.warn(
                    ln,
                    flag.off,
                    format!("unrecognized partition flag '{}' - ignored", flag.text),
                );
            }
        }
        if let Some(off) = sl_set {
            if !self.opts.qos && part.flags.sl != 0 {
                self.warn(
                    ln,
                    off,
                    format!(
                        "partition SL {} overridden to 0 as QoS is not enabled",
                        part.flags.sl
                    ),
                );
                part.flags.sl = 0;
            }
        }
        Ok(part)
    }

    /// OpenSM `parse_group_flag`: returns the flag's name if it is a group flag (handled, perhaps
    /// with a warning), `None` otherwise.
    ///
    /// An `mtu=` or `rate=` value that is not an MTU code (1..=5) or a rate code (2..=22) is an
    /// error: OpenSM 3.3.23 takes any number here without a word, then fails to create the
    /// partition's groups ("Calculated MTU 6 is out of range", ERR 1B26, "Failed to create MC
    /// group"), or for values of 64 and more silently gets the largest MTU or rate the ports allow
    /// (the high bits land in the record's selector); docs/OPENSM-NOTES.md. The other values
    /// OpenSM rejects with a `PARSE WARN` (and skips) are warnings here too.
    fn group_flag(
        &mut self,
        ln: usize,
        f: &mut GroupFlags,
        flag: Piece<'a>,
        val: Option<Piece<'a>>,
    ) -> Result<Option<&'static str>, ParseError> {
        let names = ["mtu", "rate", "scope", "Q_Key", "TClass", "sl", "FlowLabel"];
        let Some(name) = names.iter().copied().find(|n| prefix_of(flag.text, n)) else {
            return Ok(None);
        };
        let num = val.and_then(|v| parse_num(v.text));
        if let (Some(v), "mtu" | "rate") = (val.filter(|v| !v.text.is_empty()), name) {
            let (range, what) = if name == "mtu" {
                (
                    1..=5,
                    "an MTU code: 1=256, 2=512, 3=1024, 4=2048, 5=4096 bytes",
                )
            } else {
                (
                    2..=22,
                    "a rate code (IBA 1 PathRecord Rate): 2=2.5 ... 22=600 Gb/s",
                )
            };
            if !num.is_some_and(|n| range.contains(&n)) {
                return Err(self.err(
                    ln,
                    v.off,
                    format!(
                        "{name}={}: not {what}; OpenSM would create no group (or, from 64 on, \
                         take the largest the ports allow)",
                        v.text
                    ),
                ));
            }
        }
        let ok = match (name, num) {
            ("mtu", Some(v @ 1..=5)) => {
                f.mtu = Mtu::from(v as u8);
                true
            }
            ("rate", Some(v @ 2..=22)) => {
                f.rate = Rate::from(v as u8);
                true
            }
            ("scope", Some(v @ 1..=15)) => {
                if !f.scopes.contains(&(v as u8)) {
                    f.scopes.push(v as u8);
                }
                true
            }
            ("Q_Key", Some(v @ 0..=0xffff_ffff)) => {
                f.qkey = QKey(v as u32);
                true
            }
            ("TClass", Some(v @ 0..=0xff)) => {
                f.tclass = v as u8;
                true
            }
            ("sl", Some(v @ 0..=15)) => {
                f.sl = v as u8;
                true
            }
            ("FlowLabel", Some(v @ 0..=0xf_ffff)) => {
                f.flow_label = v as u32;
                true
            }
            _ => false,
        };
        if !ok {
            self.warn(
                ln,
                val.map_or(flag.off, |v| v.off),
                format!("flag '{name}' requires valid value - skipped"),
            );
        }
        Ok(Some(name))
    }

    fn body(&mut self, ln: usize, body: Piece<'a>) -> Result<(), ParseError> {
        let mut rest = body;
        loop {
            let (item, next) = match rest.split_once(',') {
                Some((a, b)) => (a, Some(b)),
                None => (rest, None),
            };
            let (name, val) = item.name_value();
            if name.text == "mgid" {
                // An mgid line consumes the rest of the segment: `mgid=GID[,flag=val]...`.
                let tail = Piece {
                    text: &rest.text[item.text.len() - item.text.trim_start().len()..],
                    off: rest.off + (item.text.len() - item.text.trim_start().len()),
                };
                return self.mgid_line(ln, tail);
            }
            self.port(ln, name, val)?;
            match next {
                Some(n) => rest = n,
                None => return Ok(()),
            }
        }
    }

    fn port(
        &mut self,
        ln: usize,
        name: Piece<'a>,
        flag: Option<Piece<'a>>,
    ) -> Result<(), ParseError> {
        let Some(part) = self.current.as_ref() else {
            return Ok(());
        };
        if name.text.is_empty() || prefix_of(name.text, "NONE") {
            return Ok(());
        }
        let membership = match flag {
            None => part.default_member,
            Some(f) if f.text.is_empty() || prefix_of(f.text, "full") => Membership::Full,
            Some(f) if prefix_of(f.text, "both") => Membership::Both,
            Some(f) if prefix_of(f.text, "limited") => Membership::Limited,
            Some(f) => {
                self.warn(
                    ln,
                    f.off,
                    format!("unrecognized port flag '{}'. Assume 'limited'", f.text),
                );
                Membership::Limited
            }
        };
        let spec = if prefix_of(name.text, "ALL") {
            MemberSpec::All
        } else if prefix_of(name.text, "ALL_CAS") {
            MemberSpec::AllCas
        } else if prefix_of(name.text, "ALL_SWITCHES") {
            MemberSpec::AllSwitches
        } else if prefix_of(name.text, "ALL_ROUTERS") {
            MemberSpec::AllRouters
        } else if prefix_of(name.text, "SELF") {
            MemberSpec::SelfPort
        } else {
            match parse_num(name.text) {
                Some(g) if g != 0 => MemberSpec::Guid(Guid(g)),
                _ => return Err(self.err(ln, name.off, format!("bad PortGUID '{}'", name.text))),
            }
        };
        if let Some(part) = self.current.as_mut() {
            part.members.push((spec, membership));
        }
        Ok(())
    }

    fn mgid_line(&mut self, ln: usize, tail: Piece<'a>) -> Result<(), ParseError> {
        let Some(part) = self.current.as_ref() else {
            return Ok(());
        };
        let mut flags = part.flags.clone();
        let (part_pkey, part_rate, part_mtu) = (part.pkey, part.flags.rate, part.flags.mtu);
        let items = tail.split_all(',');
        let (_, gid_text) = items[0].name_value();
        let gid_text = gid_text.unwrap_or(items[0]);
        let mgid = match gid_text.text.parse::<Ipv6Addr>() {
            Ok(a) if a.octets()[0] == 0xff => Gid(a.octets()),
            _ => {
                return Err(self.err(
                    ln,
                    gid_text.off,
                    format!("mgid \"{}\": gid is not multicast", gid_text.text),
                ))
            }
        };
        for it in &items[1..] {
            let (flag, val) = it.name_value();
            if flag.text.is_empty() {
                continue;
            }
            if self.group_flag(ln, &mut flags, flag, val)?.is_none() {
                self.warn(
                    ln,
                    flag.off,
                    format!("unrecognized mgroup flag '{}' - ignored", flag.text),
                );
            }
        }
        // OpenSM `mgroup_create`: IP groups must carry the partition's P_Key (or 0) and the
        // partition's rate and MTU.
        if let Some(PKey(mpkey)) = mgid_pkey(&mgid) {
            let bcast = broadcast_mgid(PKey::DEFAULT, Scope::LinkLocal) == mgid;
            let problem = if !(bcast || mpkey == 0 || PKey(mpkey).same_partition(part_pkey)) {
                Some(format!(
                    "IP MC group {} specified with invalid pkey 0x{mpkey:04x} for partition pkey 0x{part_pkey:04x}",
                    gid_text.text
                ))
            } else if flags.rate != part_rate {
                Some(format!(
                    "IP MC group {} specified with invalid rate ({}) [partition broadcast group rate = {}]",
                    gid_text.text, u8::from(flags.rate), u8::from(part_rate)
                ))
            } else if flags.mtu != part_mtu {
                Some(format!(
                    "IP MC group {} specified with invalid mtu ({}) [partition broadcast group mtu = {}]",
                    gid_text.text, u8::from(flags.mtu), u8::from(part_mtu)
                ))
            } else {
                None
            };
            if let Some(m) = problem {
                self.warn(ln, gid_text.off, format!("{m} - group skipped"));
                return Ok(());
            }
        }
        if let Some(part) = self.current.as_mut() {
            part.groups.push(McGroupSpec {
                mgid,
                flags,
                line: ln + 1,
            });
        }
        Ok(())
    }

    /// OpenSM generates a P_Key for a definition without one; here the smallest unused one from 1.
    fn auto_pkey(&mut self) -> PKey {
        loop {
            let k = PKey(self.next_auto_pkey);
            self.next_auto_pkey = self.next_auto_pkey.wrapping_add(1).max(1) & PKey::BASE_MASK;
            let used = self.out.iter().any(|p| p.pkey == k)
                || self.current.as_ref().is_some_and(|p| p.pkey == k);
            if !used && !k.same_partition(PKey::DEFAULT) && k.is_valid() {
                return k;
            }
        }
    }

    /// Adds a finished definition, merging it into an earlier one with the same P_Key (opensm(8):
    /// "If PKey is repeated then those partition configurations will be merged and first
    /// PartitionName will be used"). A repeated P_Key under another name, and a name repeated
    /// with another P_Key, are warnings: OpenSM merges the first (logging "Duplicated partition
    /// definition" at its verbose level only) and keeps two partitions of one name for the
    /// second, without a word (docs/OPENSM-NOTES.md).
    fn finish(&mut self, part: Partition) {
        let (ln, off) = (self.current_line, self.current_off);
        if let Some(i) = self.out.iter().position(|p| p.pkey == part.pkey) {
            let first_line = self.out_lines.get(i).copied().unwrap_or(0);
            let old_name = self.out[i].name.clone();
            if !part.name.is_empty() && part.name != old_name {
                self.warn(
                    ln,
                    off,
                    format!(
                        "P_Key {:#06x} of '{}' is already partition '{old_name}' (line \
                         {first_line}): merged into it under the first name, as OpenSM does",
                        part.pkey, part.name
                    ),
                );
            }
            let old = &mut self.out[i];
            if part.ipoib && !old.ipoib {
                old.flags = part.flags.clone();
            }
            old.ipoib |= part.ipoib;
            old.index0 |= part.index0;
            old.members.extend(part.members);
            old.groups.extend(part.groups);
        } else {
            let same_name = self
                .out
                .iter()
                .position(|p| !part.name.is_empty() && p.name == part.name);
            if let Some(i) = same_name {
                let first_line = self.out_lines.get(i).copied().unwrap_or(0);
                let old_pkey = self.out[i].pkey;
                self.warn(
                    ln,
                    off,
                    format!(
                        "partition name '{}' is already P_Key {old_pkey:#06x} (line {first_line}); \
                         this is another partition, P_Key {:#06x}, of the same name (OpenSM \
                         keeps both)",
                        part.name, part.pkey
                    ),
                );
            }
            self.out.push(part);
            self.out_lines.push(ln + 1);
        }
    }
}

//! What `ipoib decode` counts while it prints, for its closing line on standard error and its exit
//! status: packets (per link type), malformed ones, and CRC verdicts.

use ipoib_wire::describe::{Describer, Value};
use ipoib_wire::pcap::LinkType;
use std::collections::BTreeMap;
use std::fmt;

/// The counts of one run.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Totals {
    pub packets: u64,
    /// Packets that did not parse as InfiniBand (or hex lines that did not parse at all).
    pub malformed: u64,
    pub bad_icrc: u64,
    pub bad_vcrc: u64,
    /// Packets of a link type other than InfiniBand (pcapng interfaces), not decoded.
    pub not_ib: u64,
    /// Packets per capture link type.
    pub per_link: BTreeMap<u32, u64>,
    /// Packets given as hex lines.
    pub hex: u64,
}

impl Totals {
    /// Counts one packet: its link type (`None` for hex), whether it decoded, and the verdicts its
    /// decoding gave (`None` when it did not get that far).
    pub fn add(&mut self, link: Option<LinkType>, v: Verdicts) {
        self.packets += 1;
        match link {
            Some(l) => *self.per_link.entry(l.into()).or_default() += 1,
            None => self.hex += 1,
        }
        match v.outcome {
            Outcome::Decoded => {}
            Outcome::Malformed => self.malformed += 1,
            Outcome::NotInfiniband => self.not_ib += 1,
        }
        self.bad_icrc += u64::from(v.icrc_ok == Some(false));
        self.bad_vcrc += u64::from(v.vcrc_ok == Some(false));
    }

    /// True when every packet decoded and passed both CRCs: exit status 0.
    pub fn all_good(&self) -> bool {
        self.malformed == 0 && self.bad_icrc == 0 && self.bad_vcrc == 0 && self.not_ib == 0
    }
}

fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// `6 packets (197 ERF: 6): 1 malformed packet, 1 bad ICRC, 0 bad VCRC`, with the packets of other
/// link types at the end when there are some.
impl fmt::Display for Totals {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", plural(self.packets, "packet", "packets"))?;
        let mut kinds: Vec<String> = self
            .per_link
            .iter()
            .map(|(&l, n)| match LinkType::from(l) {
                LinkType::Unknown(l) => format!("link type {l}: {n}"),
                known => format!("{l} {}: {n}", known.name()),
            })
            .collect();
        if self.hex > 0 {
            kinds.push(format!("hex lines: {}", self.hex));
        }
        if !kinds.is_empty() {
            write!(f, " ({})", kinds.join(", "))?;
        }
        write!(
            f,
            ": {}, {} bad ICRC, {} bad VCRC",
            plural(self.malformed, "malformed packet", "malformed packets"),
            self.bad_icrc,
            self.bad_vcrc
        )?;
        if self.not_ib > 0 {
            write!(f, ", {} not InfiniBand (not decoded)", self.not_ib)?;
        }
        Ok(())
    }
}

/// How one packet's decoding went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Outcome {
    #[default]
    Decoded,
    Malformed,
    NotInfiniband,
}

/// One packet's outcome and its top-level `icrc_ok` and `vcrc_ok` fields, as the decoder gave them
/// (`ipoib_wire::decode`: every packet whose LRH and lengths could be read has both).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Verdicts {
    pub outcome: Outcome,
    pub icrc_ok: Option<bool>,
    pub vcrc_ok: Option<bool>,
}

/// Passes every field through to `inner` and notes the top-level CRC verdicts on the way.
pub struct Watch<'a> {
    pub inner: &'a mut dyn Describer,
    pub verdicts: Verdicts,
    depth: u32,
}

impl<'a> Watch<'a> {
    pub fn new(inner: &'a mut dyn Describer) -> Self {
        Watch {
            inner,
            verdicts: Verdicts::default(),
            depth: 0,
        }
    }
}

impl Describer for Watch<'_> {
    fn field(&mut self, name: &str, value: Value<'_>) {
        if self.depth == 0 {
            match (name, &value) {
                ("icrc_ok", Value::Bool(ok)) => self.verdicts.icrc_ok = Some(*ok),
                ("vcrc_ok", Value::Bool(ok)) => self.verdicts.vcrc_ok = Some(*ok),
                _ => {}
            }
        }
        self.inner.field(name, value)
    }
    fn enter(&mut self, name: &str) {
        self.depth += 1;
        self.inner.enter(name)
    }
    fn leave(&mut self) {
        self.depth = self.depth.saturating_sub(1);
        self.inner.leave()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ipoib_wire::describe::Collect;

    #[test]
    fn summary_line() {
        let mut t = Totals::default();
        assert_eq!(
            t.to_string(),
            "0 packets: 0 malformed packets, 0 bad ICRC, 0 bad VCRC"
        );
        assert!(t.all_good());
        let good = Verdicts {
            outcome: Outcome::Decoded,
            icrc_ok: Some(true),
            vcrc_ok: Some(true),
        };
        t.add(Some(LinkType::Erf), good);
        assert!(t.all_good());
        t.add(
            Some(LinkType::Infiniband),
            Verdicts {
                icrc_ok: Some(false),
                ..good
            },
        );
        assert!(!t.all_good());
        t.add(
            Some(LinkType::Erf),
            Verdicts {
                outcome: Outcome::Malformed,
                icrc_ok: None,
                vcrc_ok: None,
            },
        );
        t.add(
            Some(LinkType::Unknown(1)),
            Verdicts {
                outcome: Outcome::NotInfiniband,
                ..Verdicts::default()
            },
        );
        t.add(
            None,
            Verdicts {
                vcrc_ok: Some(false),
                ..good
            },
        );
        assert_eq!(
            t.to_string(),
            "5 packets (link type 1: 1, 197 ERF: 2, 247 INFINIBAND: 1, hex lines: 1): \
             1 malformed packet, 1 bad ICRC, 1 bad VCRC, 1 not InfiniBand (not decoded)"
        );
    }

    // Only the packet's own verdicts count, not a field of the same name inside a layer.
    #[test]
    fn watch_takes_top_level_verdicts() {
        let mut c = Collect::default();
        let mut w = Watch::new(&mut c);
        w.enter("payload");
        w.field("icrc_ok", Value::Bool(false));
        w.leave();
        w.field("icrc_ok", Value::Bool(true));
        w.field("vcrc_ok", Value::Bool(false));
        assert_eq!(w.verdicts.icrc_ok, Some(true));
        assert_eq!(w.verdicts.vcrc_ok, Some(false));
        assert_eq!(c.get("icrc_ok"), Some("false"));
    }
}

//! The MCMemberRecord request sequence of the differential test, a runner that feeds it to any SA
//! ([`Sa`]: OpenSM through ibsim, or our `proto::sa` server), and the comparison of two runs.
//!
//! Every request is built with `ipoib_wire::sa::SaMadRepr`. A step's MGID may be the one the SA
//! assigned in an earlier step (an all-zero MGID create), so each SA resolves it from its own run.
//! MLIDs and SA-assigned MGIDs are compared loosely (valid multicast values, the same group always
//! mapped to the same value on each side); every other field and every status exactly.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use ipoib_wire::mad::{MadHeaderRepr, MadStatus, Method, SaStatus};
use ipoib_wire::sa::{McMemberRecordRepr, SaAttribute, SaMadRepr, Selector};
use ipoib_wire::Gid;

/// An SA under test. Requesters are numbered 0.. (the test maps them to HCAs).
pub trait Sa {
    /// The port GID of requester `who` (subnet prefix + port GUID).
    fn port_gid(&self, who: usize) -> Gid;
    /// A GID of no port on the subnet.
    fn unknown_gid(&self) -> Gid;
    /// Sends a 256-byte SA request from `who`'s port to the SA and returns the response MAD.
    fn request(&mut self, who: usize, mad: &[u8; 256]) -> Result<Vec<u8>, String>;
}

/// Which MGID a step names.
#[derive(Debug, Clone, Copy)]
pub enum MgidRef {
    /// This MGID.
    Fixed(Gid),
    /// The MGID in the response to step `n` (an SA-assigned one).
    FromStep(usize),
}

/// Which PortGID a step puts in its record.
#[derive(Debug, Clone, Copy)]
pub enum PortRef {
    /// The requester's own port.
    Own,
    /// Requester `n`'s port (not the one the request comes from).
    Of(usize),
    /// A GID no port has: the requester's node GUID (ibsim's NodeInfo.PortGUID) instead of its
    /// port GUID (docs/IBSIM.md).
    Unknown,
}

/// SubnAdmSet, SubnAdmDelete or SubnAdmGet of an MCMemberRecord.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// Join (or create).
    Set,
    /// Leave.
    Delete,
    /// Query.
    Get,
}

/// One request of the sequence.
#[derive(Debug, Clone)]
pub struct Step {
    /// What it tests.
    pub name: &'static str,
    /// Method.
    pub op: Op,
    /// Requester.
    pub who: usize,
    /// MGID.
    pub mgid: MgidRef,
    /// PortGID.
    pub port: PortRef,
    /// The other fields (MGID and PortGID are filled in from `mgid` and `port`).
    pub rec: McMemberRecordRepr,
    /// ComponentMask.
    pub mask: u64,
}

/// What an SA answered to one step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// Response method.
    pub method: Method,
    /// MAD status.
    pub status: MadStatus,
    /// The record in a successful response.
    pub rec: Option<McMemberRecordRepr>,
}

/// Runs `steps` against `sa` and returns one outcome per step. A transport failure is an `Err`
/// naming the step.
pub fn run(sa: &mut dyn Sa, steps: &[Step]) -> Result<Vec<Outcome>, String> {
    let mut out: Vec<Outcome> = Vec::with_capacity(steps.len());
    for (i, s) in steps.iter().enumerate() {
        let mgid = match s.mgid {
            MgidRef::Fixed(g) => g,
            MgidRef::FromStep(n) => out
                .get(n)
                .and_then(|o| o.rec)
                .map(|r| r.mgid)
                .unwrap_or(Gid::ZERO),
        };
        let port_gid = match s.port {
            PortRef::Own => sa.port_gid(s.who),
            PortRef::Of(n) => sa.port_gid(n),
            PortRef::Unknown => sa.unknown_gid(),
        };
        let rec = McMemberRecordRepr {
            mgid,
            port_gid,
            ..s.rec
        };
        let tid = 0x1000 + i as u64;
        let req = match s.op {
            Op::Set => SaMadRepr::mcmember_join(tid, rec, s.mask),
            Op::Delete => SaMadRepr::mcmember_leave(tid, rec, s.mask),
            Op::Get => {
                SaMadRepr::request(Method::Get, tid, s.mask, SaAttribute::McMemberRecord(rec))
            }
        };
        let resp = sa
            .request(s.who, &req.to_bytes())
            .map_err(|e| format!("step {i} ({}): {e}", s.name))?;
        let hdr = MadHeaderRepr::parse_bytes(&resp)
            .map_err(|e| format!("step {i} ({}): bad response header: {e:?}", s.name))?;
        let rec = if hdr.status.is_success() {
            match SaMadRepr::parse(&resp) {
                Ok(SaMadRepr {
                    attribute: SaAttribute::McMemberRecord(r),
                    ..
                }) => Some(r),
                other => {
                    return Err(format!(
                        "step {i} ({}): unexpected response {other:?}",
                        s.name
                    ))
                }
            }
        } else {
            None
        };
        out.push(Outcome {
            method: hdr.method,
            status: hdr.status,
            rec,
        });
    }
    Ok(out)
}

/// A status as text: the SA code's name when it is one.
pub fn status_name(s: MadStatus) -> String {
    if s.is_success() {
        return "SUCCESS".into();
    }
    let code = (s.0 >> 8) as u8;
    if code != 0 && s.0 & 0xff == 0 {
        format!("{:?}", SaStatus::from(code))
    } else {
        format!("{:#06x}", s.0)
    }
}

/// The outcomes as a table (one row per step).
pub fn table(steps: &[Step], outs: &[Outcome]) -> String {
    let mut t = String::new();
    let _ = writeln!(
        t,
        "{:>2} {:<40} {:<11} {:<26} {:<26} {:>8} {:>6} {:>8} {:>4} {:>4} {:>2} {:>6} {:>4} {:>7} {:>3} {:>2} {:>2}",
        "#", "step", "method", "status", "mgid", "port", "mlid", "qkey", "mtu", "rate", "sl", "pkey", "tc", "flow", "hop", "sc", "js"
    );
    for (i, (s, o)) in steps.iter().zip(outs).enumerate() {
        let method = format!("{:?}", o.method);
        let _ = write!(
            t,
            "{i:>2} {:<40} {method:<11} {:<26} ",
            s.name,
            status_name(o.status)
        );
        match &o.rec {
            Some(r) => {
                let _ = writeln!(
                    t,
                    "{:<26} {:>#8x} {:>#6x} {:>#8x} {:>4} {:>4} {:>2} {:>#6x} {:>#4x} {:>#7x} {:>3} {:>2} {:>2}",
                    fmt_gid(&r.mgid),
                    r.port_gid.interface_id(),
                    r.mlid,
                    r.qkey,
                    format!("{}{}", sel(r.mtu_selector), u8::from(r.mtu)),
                    format!("{}{}", sel(r.rate_selector), u8::from(r.rate)),
                    r.sl,
                    r.pkey,
                    r.tclass,
                    r.flow_label,
                    r.hop_limit,
                    r.scope,
                    r.join_state.0
                );
            }
            None => {
                let _ = writeln!(t, "-");
            }
        }
    }
    t
}

fn sel(s: Selector) -> &'static str {
    match s {
        Selector::GreaterThan => ">",
        Selector::LessThan => "<",
        Selector::Exactly => "=",
        Selector::LargestAvailable => "^",
    }
}

/// A GID in the usual colon form.
pub fn fmt_gid(g: &Gid) -> String {
    g.to_ipv6().to_string()
}

/// Differences between two runs of the same steps (empty when they agree). MLIDs: equal, or both
/// in the multicast range 0xC000..=0xFFFE, and a group's MLID changes on both sides or neither. MGIDs the SA assigned (zero in the
/// request): both multicast and one-to-one. Both SAs must know the requesters by the same GUIDs.
pub fn compare(steps: &[Step], a: &[Outcome], b: &[Outcome]) -> Vec<String> {
    let mut diffs = Vec::new();
    let mut mlids: BTreeMap<[u8; 16], (u16, u16)> = BTreeMap::new();
    let mut mgids: BTreeMap<[u8; 16], [u8; 16]> = BTreeMap::new();
    for (i, ((s, x), y)) in steps.iter().zip(a).zip(b).enumerate() {
        let d = |what: String| format!("step {i} ({}): {what}", s.name);
        if x.method != y.method || x.status != y.status {
            diffs.push(d(format!(
                "{:?} {} vs {:?} {}",
                x.method,
                status_name(x.status),
                y.method,
                status_name(y.status)
            )));
            continue;
        }
        let (Some(rx), Some(ry)) = (&x.rec, &y.rec) else {
            continue;
        };
        let assigned = matches!(s.mgid, MgidRef::Fixed(g) if g == Gid::ZERO);
        if assigned {
            // OpenSM osm_sa_mcmember_record.c: ff1S:a01b:<subnet prefix>:<counter>; compare the
            // form (first 4 bytes), not the counter.
            if rx.mgid.0[..4] != ry.mgid.0[..4] || !rx.mgid.is_multicast() {
                diffs.push(d(format!(
                    "assigned MGID {} vs {}",
                    fmt_gid(&rx.mgid),
                    fmt_gid(&ry.mgid)
                )));
            }
            if let Some(prev) = mgids.insert(rx.mgid.0, ry.mgid.0) {
                if prev != ry.mgid.0 {
                    diffs.push(d("assigned MGID maps to two MGIDs".into()));
                }
            }
        } else if rx.mgid != ry.mgid && mgids.get(&rx.mgid.0) != Some(&ry.mgid.0) {
            diffs.push(d(format!(
                "MGID {} vs {}",
                fmt_gid(&rx.mgid),
                fmt_gid(&ry.mgid)
            )));
        }
        // OpenSM reuses a freed MLID for the next new group and answers a Delete with MLID 0, so
        // the mapping is per group (MGID), not per MLID value, and equal values always agree.
        let mc = |l: u16| (0xc000..=0xfffe).contains(&l);
        if rx.mlid != ry.mlid && (!mc(rx.mlid) || !mc(ry.mlid)) {
            diffs.push(d(format!(
                "MLID {:#x} vs {:#x}, not both multicast",
                rx.mlid, ry.mlid
            )));
        }
        if mc(rx.mlid) {
            if let Some((pa, pb)) = mlids.insert(rx.mgid.0, (rx.mlid, ry.mlid)) {
                if (pa, pb) != (rx.mlid, ry.mlid) && (pa == rx.mlid) != (pb == ry.mlid) {
                    diffs.push(d(format!(
                        "group's MLID changed on one side only: {pa:#x}->{:#x} vs {pb:#x}->{:#x}",
                        rx.mlid, ry.mlid
                    )));
                }
            }
        }
        let norm = |r: &McMemberRecordRepr| McMemberRecordRepr {
            mgid: Gid::ZERO,
            mlid: 0,
            ..*r
        };
        if norm(rx) != norm(ry) {
            diffs.push(d(format!(
                "record differs:\n  {:?}\n  {:?}",
                norm(rx),
                norm(ry)
            )));
        }
    }
    if a.len() != b.len() {
        diffs.push(format!("{} outcomes vs {}", a.len(), b.len()));
    }
    diffs
}

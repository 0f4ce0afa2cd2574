//! Text and JSON forms of the views (the field names are listed in the parent module's docs).
//!
//! Text: one table per view with a header line, columns padded to their widest cell and
//! separated by two spaces, the way `ss` and `ip -br` align theirs; the counters view is one block
//! per section. Numbers a person compares with Linux's tools are written the way those write them:
//! QPNs as `0x%06x` (Linux ipoib), MLIDs as `0x%04x` (saquery), the service ID as 16 hex digits.

use super::{Answer, ConnEntry, CounterSection, McastEntry, NeighEntry, PathEntry, SlotEntry};
use crate::control::View;
use ipoib_proto::ipoib::ConnState;
use ipoib_wire::sa::JoinState;
use serde_json::{json, Map, Value};
use std::fmt::Write as _;

/// The columns of each table view.
const NEIGH_HEAD: [&str; 4] = ["HOST", "DST", "LLADDR", "STATE"];
const PATHS_HEAD: [&str; 7] = ["HOST", "DGID", "DLID", "SL", "MTU", "RATE", "AGE"];
const MCAST_HEAD: [&str; 6] = ["HOST", "MGID", "GROUP", "JOIN", "MLID", "ATTACHED"];
const CONNS_HEAD: [&str; 11] = [
    "HOST",
    "PEER",
    "QPN",
    "PEER_QPN",
    "SERVICE_ID",
    "MTU",
    "STATE",
    "MODE",
    "DIR",
    "TX",
    "RX",
];

const HOSTS_HEAD: [&str; 8] = [
    "HOST",
    "NODE_GUID",
    "LID",
    "PEER",
    "STATE",
    "FROM_HOST",
    "TO_HOST",
    "DROPPED",
];

/// `head` and `rows` as aligned columns, one line each.
fn table(head: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = head.iter().map(|h| h.len()).collect();
    for r in rows {
        for (w, c) in widths.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    let mut out = String::new();
    let head: Vec<String> = head.iter().map(|h| h.to_string()).collect();
    for r in std::iter::once(&head).chain(rows) {
        let mut line = String::new();
        for (i, (c, w)) in r.iter().zip(&widths).enumerate() {
            if i > 0 {
                line.push_str("  ");
            }
            let _ = write!(line, "{c:<w$}");
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

fn qpn(q: Option<u32>) -> String {
    q.map_or_else(|| "-".to_string(), |q| format!("{q:#08x}"))
}

/// The names of the JoinState bits (IBA 1 §15.2.5.17 table 219; bit 3 is IBA 1.3's
/// SendOnlyFullMember); an unknown high bit by its value.
pub(super) fn join_names(j: JoinState) -> Vec<String> {
    let mut v = Vec::new();
    for (bit, name) in [
        (JoinState::FULL_MEMBER, "full"),
        (JoinState::NON_MEMBER, "non"),
        (JoinState::SEND_ONLY_NON_MEMBER, "send-only"),
        (JoinState::SEND_ONLY_FULL_MEMBER, "send-only-full"),
    ] {
        if j.contains(bit) {
            v.push(name.to_string());
        }
    }
    let rest = j.0 & 0xf0;
    if rest != 0 {
        v.push(format!("{rest:#04x}"));
    }
    v
}

fn conn_state(s: ConnState) -> &'static str {
    match s {
        ConnState::Connecting => "connecting",
        ConnState::Up => "up",
        ConnState::Closing => "closing",
    }
}

fn age(a: Option<std::time::Duration>) -> String {
    a.map_or_else(|| "-".to_string(), |d| format!("{}s", d.as_secs()))
}

fn neigh_row(host: &str, n: &NeighEntry) -> Vec<String> {
    vec![
        host.to_string(),
        n.dst.to_string(),
        n.lladdr.map_or_else(|| "-".to_string(), |h| h.to_string()),
        n.state.name().to_string(),
    ]
}

fn path_row(host: &str, p: &PathEntry) -> Vec<String> {
    vec![
        host.to_string(),
        p.dgid.to_string(),
        p.dlid.to_string(),
        p.sl.to_string(),
        p.mtu.map_or_else(|| "-".to_string(), |m| m.to_string()),
        p.rate.name().to_string(),
        age(p.age),
    ]
}

fn mcast_row(host: &str, m: &McastEntry) -> Vec<String> {
    let join = join_names(m.join);
    vec![
        host.to_string(),
        m.mgid.to_string(),
        m.group.map_or_else(|| "-".to_string(), |g| g.to_string()),
        if join.is_empty() {
            "-".to_string()
        } else {
            join.join("+")
        },
        format!("{:#06x}", m.mlid),
        if m.attached { "yes" } else { "no" }.to_string(),
    ]
}

fn conn_row(host: &str, c: &ConnEntry) -> Vec<String> {
    vec![
        host.to_string(),
        c.peer.gid.to_string(),
        qpn(c.qpn),
        qpn(c.peer_qpn),
        format!("{:#018x}", c.service_id),
        c.mtu.to_string(),
        conn_state(c.state).to_string(),
        c.mode.name().to_string(),
        if c.active { "active" } else { "passive" }.to_string(),
        c.tx_packets.to_string(),
        c.rx_packets.to_string(),
    ]
}

fn slot_state(s: &SlotEntry) -> &'static str {
    if s.peer.is_some() {
        "attached"
    } else {
        "free"
    }
}

fn slot_row(host: &str, s: &SlotEntry) -> Vec<String> {
    vec![
        host.to_string(),
        format!("{:#018x}", s.node_guid.0),
        s.lid.to_string(),
        s.peer.clone().unwrap_or_else(|| "-".to_string()),
        slot_state(s).to_string(),
        s.from_host.to_string(),
        s.to_host.to_string(),
        s.dropped.to_string(),
    ]
}

fn section_text(out: &mut String, host: Option<&str>, s: &CounterSection) {
    match host {
        Some(h) => {
            let _ = writeln!(out, "{h} {}:", s.name);
        }
        None => {
            let _ = writeln!(out, "{}:", s.name);
        }
    }
    let w = s.counters.iter().map(|(n, _)| n.len()).max().unwrap_or(0);
    for (n, v) in &s.counters {
        let _ = writeln!(out, "    {n:<w$}  {v}");
    }
}

/// The text form.
pub(super) fn text(a: &Answer, view: View) -> String {
    fn rows<T>(
        a: &Answer,
        f: impl Fn(&super::HostShow) -> &[T],
        row: impl Fn(&str, &T) -> Vec<String>,
    ) -> Vec<Vec<String>> {
        a.hosts
            .iter()
            .flat_map(|h| f(h).iter().map(|x| row(&h.host, x)).collect::<Vec<_>>())
            .collect()
    }
    match view {
        View::Neigh => table(&NEIGH_HEAD, &rows(a, |h| &h.neigh, neigh_row)),
        View::Paths => table(&PATHS_HEAD, &rows(a, |h| &h.paths, path_row)),
        View::Mcast => table(&MCAST_HEAD, &rows(a, |h| &h.mcast, mcast_row)),
        View::Conns => table(&CONNS_HEAD, &rows(a, |h| &h.conns, conn_row)),
        View::Hosts => table(&HOSTS_HEAD, &rows(a, |h| h.slot.as_slice(), slot_row)),
        View::Counters => {
            let mut out = String::new();
            for h in &a.hosts {
                for s in &h.counters {
                    section_text(&mut out, Some(&h.host), s);
                }
            }
            for s in &a.sections {
                section_text(&mut out, None, s);
            }
            out
        }
    }
}

fn opt<T: Into<Value>>(v: Option<T>) -> Value {
    v.map_or(Value::Null, Into::into)
}

fn section_json(host: Option<&str>, s: &CounterSection) -> Value {
    let counters: Map<String, Value> = s
        .counters
        .iter()
        .map(|(n, v)| (n.clone(), Value::from(*v)))
        .collect();
    json!({ "host": host, "section": s.name, "counters": counters })
}

/// The JSON form: an array of rows, pretty-printed, with a final newline.
pub(super) fn json(a: &Answer, view: View) -> String {
    let mut rows = Vec::new();
    for h in &a.hosts {
        let host = h.host.as_str();
        match view {
            View::Neigh => rows.extend(h.neigh.iter().map(|n| {
                json!({
                    "host": host,
                    "dst": n.dst.to_string(),
                    "lladdr": opt(n.lladdr.map(|l| l.to_string())),
                    "state": n.state.name(),
                })
            })),
            View::Paths => rows.extend(h.paths.iter().map(|p| {
                json!({
                    "host": host,
                    "dgid": p.dgid.to_string(),
                    "dlid": p.dlid,
                    "sl": p.sl,
                    "mtu": opt(p.mtu),
                    "rate": p.rate.name(),
                    "rate_mbps": opt(p.rate.mbps()),
                    "age_ms": opt(p.age.map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))),
                })
            })),
            View::Mcast => rows.extend(h.mcast.iter().map(|m| {
                json!({
                    "host": host,
                    "mgid": m.mgid.to_string(),
                    "group": opt(m.group.map(|g| g.to_string())),
                    "join": join_names(m.join),
                    "mlid": m.mlid,
                    "attached": m.attached,
                })
            })),
            View::Conns => rows.extend(h.conns.iter().map(|c| {
                json!({
                    "host": host,
                    "peer": c.peer.to_string(),
                    "peer_gid": c.peer.gid.to_string(),
                    "qpn": opt(c.qpn),
                    "peer_qpn": opt(c.peer_qpn),
                    "service_id": format!("{:#018x}", c.service_id),
                    "mtu": c.mtu,
                    "state": conn_state(c.state),
                    "mode": c.mode.name(),
                    "active": c.active,
                    "sends": c.sends,
                    "tx_packets": c.tx_packets,
                    "rx_packets": c.rx_packets,
                })
            })),
            View::Counters => rows.extend(h.counters.iter().map(|s| section_json(Some(host), s))),
            View::Hosts => rows.extend(h.slot.iter().map(|s| {
                json!({
                    "host": host,
                    "node_guid": format!("{:#018x}", s.node_guid.0),
                    "port_guid": format!("{:#018x}", s.port_guid.0),
                    "lid": s.lid,
                    "peer": s.peer,
                    "state": slot_state(s),
                    "from_host": s.from_host,
                    "to_host": s.to_host,
                    "dropped": s.dropped,
                })
            })),
        }
    }
    if view == View::Counters {
        rows.extend(a.sections.iter().map(|s| section_json(None, s)));
    }
    let mut s = serde_json::to_string_pretty(&Value::Array(rows)).unwrap_or_default();
    s.push('\n');
    s
}

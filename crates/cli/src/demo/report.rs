//! What `ipoib demo` found, and its two renderings: aligned text for people, one JSON document
//! for machines (`report/json.rs`). Nothing here runs the simulation.

use super::bulk::BulkReport;
use super::connected::{CmTally, ConnLine};
use super::drive::Interrupted;
use super::{Args, BROADCAST_BUDGET, GROUP_PORT};
use ipoib_fabric::node::ipoib::{FrameStats, ResolutionKind};
use ipoib_proto::ipoib::Mode;
use ipoib_wire::ipoib::HwAddr;
use ipoib_wire::sa::{JoinState, McMemberRecordRepr};
use ipoib_wire::{PKey, QKey};
use std::fmt::Write as _;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::time::Duration;

mod connected;
mod json;

/// Lines of a long list shown in text before "... N more".
const SHOW: usize = 24;

/// One port of a host's HCA as the SM left it.
pub struct PortLine {
    pub num: u8,
    pub lid: u16,
    pub gid: String,
    /// `Down`, `Init`, `Armed` or `Active`.
    pub state: String,
    /// A cable is plugged in.
    pub cabled: bool,
}

pub struct HostLine {
    /// The HCA port IPoIB runs on (the first one the SM reaches).
    pub port: u8,
    /// Every port of the HCA, in port order.
    pub ports: Vec<PortLine>,
    pub lid: u16,
    pub qpn: u32,
    pub gid: String,
    pub hw: String,
    pub ipv4: Option<(Ipv4Addr, u8)>,
    pub ipv6: Option<Ipv6Addr>,
    pub carrier: bool,
}

pub struct ResLine {
    pub at: Duration,
    pub host: usize,
    pub kind: ResolutionKind,
    pub ip: IpAddr,
    pub hw: HwAddr,
}

/// The round-trip time of one ping.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rtt {
    Reply(Duration),
    NoReply,
    /// The run was interrupted before this ping was sent.
    NotRun,
}

impl Rtt {
    fn get(self) -> Option<Duration> {
        match self {
            Rtt::Reply(d) => Some(d),
            _ => None,
        }
    }
}

pub struct PingLine {
    pub from: usize,
    pub to: usize,
    pub addrs: Option<(IpAddr, IpAddr)>,
    /// First ping of the pair: includes ARP/ND and the PathRecord query.
    pub first: Rtt,
    /// Second ping: everything cached.
    pub then: Rtt,
}

impl PingLine {
    /// Both pings of the pair were answered.
    pub fn answered(&self) -> bool {
        self.first.get().is_some() && self.then.get().is_some()
    }
}

#[derive(Clone)]
pub struct McastReport {
    pub group: Ipv4Addr,
    pub mgid: String,
    pub mlid: u16,
    pub sender: usize,
    pub members: Vec<usize>,
    pub joined: bool,
    pub sent: bool,
    /// (host, datagrams received).
    pub received: Vec<(usize, usize)>,
    pub sender_state: Option<JoinState>,
    pub payload: String,
}

impl McastReport {
    /// Every member got exactly one copy and nobody else got any.
    pub fn ok(&self) -> bool {
        self.sent
            && self.received.len() == self.members.len()
            && self
                .received
                .iter()
                .all(|(h, c)| *c == 1 && self.members.contains(h))
    }
}

pub struct GroupLine {
    pub mgid: String,
    pub ip: String,
    pub mlid: u16,
    pub pkey: PKey,
    pub qkey: QKey,
    pub mtu: u32,
    pub full: usize,
    pub send_only: usize,
    pub members: usize,
    pub well_known: bool,
}

/// A host's switch from connected back to datagram mode.
#[derive(Debug, Clone)]
pub struct SwitchReport {
    pub host: usize,
    /// The interface took the new mode.
    pub switched: bool,
    /// Connections it sent on, released.
    pub released: usize,
    /// Every peer holds them closing or gone.
    pub settled: bool,
    pub mtu_before: u32,
    pub mtu_after: u32,
}

/// What connected mode (RFC 4755) adds to the report.
pub struct ConnectedReport {
    pub conns: Vec<ConnLine>,
    /// The IP MTU in connected mode, and over UD.
    pub mtu: u32,
    pub ud_mtu: u32,
    pub switch: Option<SwitchReport>,
    /// The CM messages in the capture, once it is written (or why it could not be read).
    pub tally: Option<Result<CmTally, String>>,
}

/// "connected" or "datagram".
pub fn mode_name(m: Mode) -> &'static str {
    match m {
        Mode::Connected => "connected",
        Mode::Datagram => "datagram",
    }
}

pub struct Report {
    pub names: Vec<String>,
    pub hosts: Vec<HostLine>,
    pub carrier: usize,
    pub carrier_at: Option<Duration>,
    /// The hosts sent a gratuitous ARP at carrier up.
    pub announced: bool,
    pub bcast: Option<(McMemberRecordRepr, u32)>,
    pub sm_lid: u16,
    pub resolutions: Vec<ResLine>,
    pub totals: FrameStats,
    pub paths: usize,
    pub pairs_total: usize,
    pub sampled: bool,
    /// `None`: not run (interrupted before).
    pub v4: Option<Vec<PingLine>>,
    pub v6: Option<Vec<PingLine>>,
    pub mcast: Option<McastReport>,
    pub groups: Vec<GroupLine>,
    /// Connected mode, when the demo ran in it.
    pub connected: Option<ConnectedReport>,
    /// The bulk transfers that ran, connected mode first.
    pub bulk: Vec<BulkReport>,
    pub failures: Vec<String>,
    /// A signal stopped the run: what is shown is what was known then.
    pub stopped: Option<Interrupted>,
    pub packets: u64,
    pub packets_skipped: u64,
    /// The capture could not be written (a full disk): what the write said.
    pub capture_error: Option<String>,
    pub sim_end: Duration,
    pub wall: Duration,
    /// Peak resident memory of the process.
    pub peak_kib: Option<u64>,
}

/// A duration for people: µs below a millisecond, ms below a second, else s.
pub fn human(d: Duration) -> String {
    let ns = d.as_nanos();
    if ns >= 1_000_000_000 {
        format!("{:.3} s", d.as_secs_f64())
    } else if ns >= 1_000_000 {
        format!("{:.3} ms", ns as f64 / 1e6)
    } else {
        format!("{:.3} µs", ns as f64 / 1e3)
    }
}

fn rtt_text(r: Rtt) -> String {
    match r {
        Rtt::Reply(d) => human(d),
        Rtt::NoReply => "no reply".into(),
        Rtt::NotRun => "-".into(),
    }
}

/// Names of hosts, abbreviated after 8.
fn host_list(names: &[String], hosts: &[usize]) -> String {
    let mut v: Vec<&str> = hosts.iter().map(|&h| names[h].as_str()).collect();
    if v.len() > 8 {
        let last = v[v.len() - 1];
        v.truncate(6);
        v.push("...");
        v.push(last);
        return format!("{} ({} hosts)", v.join(", "), hosts.len());
    }
    if v.is_empty() {
        return "nobody".into();
    }
    v.join(", ")
}

/// Left-aligned columns: every row has the same number of cells; two spaces between columns.
fn table(o: &mut String, indent: &str, rows: &[Vec<String>]) {
    let cols = rows.first().map_or(0, Vec::len);
    let widths: Vec<usize> = (0..cols)
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    for r in rows {
        let mut line = String::from(indent);
        for (c, cell) in r.iter().enumerate() {
            line.push_str(cell);
            if c + 1 < cols {
                let pad = widths[c] - cell.chars().count() + 2;
                line.push_str(&" ".repeat(pad));
            }
        }
        let _ = writeln!(o, "{}", line.trim_end());
    }
}

fn stats(list: &[PingLine], f: fn(&PingLine) -> Rtt) -> Option<(Duration, Duration, Duration)> {
    let v: Vec<Duration> = list.iter().filter_map(|p| f(p).get()).collect();
    let min = *v.iter().min()?;
    let max = *v.iter().max()?;
    let avg = v.iter().sum::<Duration>() / v.len() as u32;
    Some((min, avg, max))
}

impl Report {
    fn answered(list: &[PingLine]) -> usize {
        list.iter().filter(|p| p.answered()).count()
    }

    pub fn text(&self, args: &Args) -> String {
        let mut o = String::new();
        let n = self.hosts.len();
        let _ = writeln!(
            o,
            "ipoib demo: {n} host{} ({}), seed {}{}\n",
            if n == 1 { "" } else { "s" },
            args.topology,
            args.seed,
            if self.connected.is_some() {
                ", connected mode (RFC 4755)"
            } else {
                ""
            }
        );
        self.text_subnet(&mut o);
        self.text_hosts(&mut o);
        self.text_resolution(&mut o);
        self.text_pings(&mut o, "IPv4", self.v4.as_deref());
        self.text_pings(&mut o, "IPv6", self.v6.as_deref());
        self.text_mcast(&mut o);
        self.text_connected(&mut o);
        self.text_bulk(&mut o);
        self.text_groups(&mut o);
        if let Some(e) = &self.capture_error {
            let _ = writeln!(o, "Capture: NOT written: --pcap {e}");
        } else {
            let _ = writeln!(
                o,
                "Capture: {} packets written to {}. Open it with\n  wireshark {}\n  tshark -r {} -V",
                self.packets, args.pcap, args.pcap, args.pcap
            );
        }
        if !self.bulk.is_empty() {
            let _ = writeln!(
                o,
                "  (the bulk transfers ran with the capture off: their {} packets are not in it)",
                self.bulk.iter().map(|b| b.wire_packets).sum::<u64>()
            );
        }
        if self.packets_skipped > 0 {
            let _ = writeln!(
                o,
                "  (only the first {} packets: {} later ones were not kept)",
                self.packets, self.packets_skipped
            );
        }
        o.push('\n');
        if let Some(s) = self.stopped {
            let _ = writeln!(
                o,
                "Result: INTERRUPTED by {} during {}: a partial report, of what was known then",
                s.signal.name(),
                s.phase.describe()
            );
            for f in &self.failures {
                let _ = writeln!(o, "  - {f}");
            }
        } else if self.failures.is_empty() {
            let (v4, v6) = (self.v4.as_deref(), self.v6.as_deref());
            let m = self.mcast.as_ref().map_or(String::new(), |m| {
                format!(
                    "; multicast reached {}/{} members and nobody else",
                    m.received.len(),
                    m.members.len()
                )
            });
            let b: String = self
                .bulk
                .iter()
                .map(|b| {
                    format!(
                        "; {} bulk {}/{} datagrams",
                        mode_name(b.mode),
                        b.delivered,
                        b.datagrams
                    )
                })
                .collect();
            let _ = writeln!(
                o,
                "Result: OK ({}/{n} hosts up; {}/{} IPv4 and {}/{} IPv6 ping pairs answered{m}{b})",
                self.carrier,
                v4.map_or(0, Self::answered),
                v4.map_or(0, <[_]>::len),
                v6.map_or(0, Self::answered),
                v6.map_or(0, <[_]>::len),
            );
        } else {
            let _ = writeln!(o, "Result: FAILED");
            for f in &self.failures {
                let _ = writeln!(o, "  - {f}");
            }
        }
        let _ = writeln!(
            o,
            "Time: {} simulated, {} wall; peak memory {}",
            human(self.sim_end),
            human(self.wall),
            self.peak_kib
                .map_or("n/a".into(), |k| format!("{:.1} MiB", k as f64 / 1024.0))
        );
        o
    }

    fn text_subnet(&self, o: &mut String) {
        let n = self.hosts.len();
        let _ = writeln!(o, "Subnet");
        let _ = writeln!(
            o,
            "  The subnet manager and the SA run on {} (LID {}); SA traffic is real MADs on QP1.",
            self.names.first().map_or("-", String::as_str),
            self.sm_lid
        );
        if let Some((r, mtu)) = &self.bcast {
            let _ = writeln!(
                o,
                "  Broadcast group {}: MLID {:#06x}, Q_Key {:#06x}, MTU {}, so the IPoIB MTU is {} (§5, §7).",
                r.mgid,
                r.mlid,
                r.qkey,
                r.mtu.bytes().unwrap_or(0),
                mtu
            );
        }
        if let Some(c) = &self.connected {
            let _ = writeln!(
                o,
                "  Connected mode (RFC 4755): every interface offers RC (flag 0x80 of its link-layer address, §3.1)\n  \
                 and listens for CM REQs on service ID 0x10000000_00 + its UD QPN (§3.5); IP MTU {} on\n  \
                 connections (§5.1), {} over UD (multicast, and peers without a connection).",
                c.mtu, c.ud_mtu
            );
        }
        let _ = writeln!(
            o,
            "  Carrier on {}/{n} hosts after their broadcast join, the last at {} simulated.\n",
            self.carrier,
            self.carrier_at.map_or("-".into(), human)
        );
    }

    /// True when some host's HCA has more than one cabled port, or runs on another port than 1:
    /// then the hosts table names the port IPoIB runs on and a table of every port follows. (HCAs
    /// that cable port 1 only look as single-port ones do.)
    fn multi_port(&self) -> bool {
        self.hosts
            .iter()
            .any(|h| h.port != 1 || h.ports.iter().filter(|p| p.cabled).count() > 1)
    }

    fn text_hosts(&self, o: &mut String) {
        let _ = writeln!(o, "Hosts");
        let multi = self.multi_port();
        let mut rows = vec![vec![
            "host".to_string(),
            "port".into(),
            "LID".into(),
            "QPN".into(),
            "IPv4".into(),
            "IPv6 link-local".into(),
            "GID".into(),
            "carrier".into(),
        ]];
        let mut hw = Vec::new();
        for (i, h) in self.hosts.iter().enumerate().take(SHOW) {
            rows.push(vec![
                self.names[i].clone(),
                h.port.to_string(),
                h.lid.to_string(),
                format!("{:#08x}", h.qpn),
                h.ipv4.map_or("-".into(), |(a, p)| format!("{a}/{p}")),
                h.ipv6.map_or("-".into(), |a| a.to_string()),
                h.gid.clone(),
                if h.carrier { "up" } else { "DOWN" }.into(),
            ]);
            hw.push(vec![self.names[i].clone(), h.hw.clone()]);
        }
        if !multi {
            // Single-port HCAs: the port is 1 everywhere, not worth a column.
            for r in &mut rows {
                r.remove(1);
            }
        }
        table(o, "  ", &rows);
        let _ = writeln!(
            o,
            "  Link-layer addresses (20 bytes: flags, UD QPN, GID; §9.1.1), as `ip link` shows them:"
        );
        table(o, "  ", &hw);
        if self.hosts.len() > SHOW {
            let _ = writeln!(o, "  ... and {} more hosts", self.hosts.len() - SHOW);
        }
        o.push('\n');
        if multi {
            self.text_ports(o);
        }
    }

    /// Every port of the hosts' HCAs: each cabled port is its own end node with its own LID and
    /// GID (IBA 1 §4.1.1); IPoIB runs on the host's first port the SM reaches only.
    fn text_ports(&self, o: &mut String) {
        let _ = writeln!(
            o,
            "HCA ports (each port the SM reaches has its own LID and GID; IPoIB runs on the first one)"
        );
        let mut rows = vec![vec![
            "host".to_string(),
            "port".into(),
            "LID".into(),
            "GID".into(),
            "state".into(),
            "IPoIB".into(),
        ]];
        let mut shown = 0;
        for (i, h) in self.hosts.iter().enumerate() {
            for p in &h.ports {
                if shown == SHOW {
                    break;
                }
                shown += 1;
                rows.push(vec![
                    self.names[i].clone(),
                    p.num.to_string(),
                    if p.lid == 0 {
                        "-".into()
                    } else {
                        p.lid.to_string()
                    },
                    p.gid.clone(),
                    if p.cabled {
                        p.state.clone()
                    } else {
                        format!("{} (no cable)", p.state)
                    },
                    if p.num == h.port { "yes" } else { "-" }.into(),
                ]);
            }
        }
        table(o, "  ", &rows);
        let total: usize = self.hosts.iter().map(|h| h.ports.len()).sum();
        if total > shown {
            let _ = writeln!(o, "  ... and {} more ports", total - shown);
        }
        o.push('\n');
    }

    fn text_resolution(&self, o: &mut String) {
        let _ = writeln!(
            o,
            "Address resolution (ARP §9.2, ND §9.3), as the first pings caused it"
        );
        let mut rows = vec![vec![
            "time".to_string(),
            "host".into(),
            "learned".into(),
            "is at QPN".into(),
            "GID".into(),
            "from".into(),
        ]];
        for r in self.resolutions.iter().take(SHOW) {
            rows.push(vec![
                format!("{:.6} s", r.at.as_secs_f64()),
                self.names[r.host].clone(),
                r.ip.to_string(),
                format!("{:#08x}", r.hw.qpn),
                r.hw.gid.to_string(),
                match r.kind {
                    ResolutionKind::Arp => "ARP reply",
                    ResolutionKind::Nd => "neighbor advert",
                }
                .into(),
            ]);
        }
        table(o, "  ", &rows);
        if self.resolutions.len() > SHOW {
            let _ = writeln!(o, "  ... and {} more", self.resolutions.len() - SHOW);
        }
        let t = &self.totals;
        let gratuitous = if self.announced {
            "one gratuitous per host at carrier up".to_string()
        } else {
            format!(
                "no gratuitous ARP at carrier up: on more than {} hosts these announcements, \
                 each to every host, would cost the square of the hosts",
                (BROADCAST_BUDGET as f64).sqrt() as usize
            )
        };
        let _ = writeln!(
            o,
            "  Sent: {} ARP requests ({gratuitous}) and {} replies; \
             {} neighbor solicitations (DAD included) and {} advertisements; {} PathRecords cached.\n",
            t.arp_requests, t.arp_replies, t.nd_solicits, t.nd_adverts, self.paths
        );
    }

    fn text_pings(&self, o: &mut String, fam: &str, list: Option<&[PingLine]>) {
        let Some(list) = list else {
            let _ = writeln!(o, "{fam} ping: not run (interrupted before it)\n");
            return;
        };
        let what = if self.sampled {
            format!(
                "{} of {} pairs (a sample: hosts spread evenly, each to the next host and to the one half-way round)",
                list.len(),
                self.pairs_total
            )
        } else {
            format!("all {} pairs", list.len())
        };
        let _ = writeln!(o, "{fam} ping, {what}: {} answered", Self::answered(list));
        let mut rows = vec![vec![
            "from".to_string(),
            "to".into(),
            "source".into(),
            "destination".into(),
            "first RTT (with resolution)".into(),
            "then".into(),
        ]];
        for p in list.iter().take(SHOW) {
            let (s, d) = p.addrs.map_or(("-".into(), "-".into()), |(s, d)| {
                (s.to_string(), d.to_string())
            });
            rows.push(vec![
                self.names[p.from].clone(),
                self.names[p.to].clone(),
                s,
                d,
                rtt_text(p.first),
                rtt_text(p.then),
            ]);
        }
        table(o, "  ", &rows);
        if list.len() > SHOW {
            let _ = writeln!(o, "  ... and {} more pairs", list.len() - SHOW);
        }
        if let (Some(f), Some(t)) = (stats(list, |p| p.first), stats(list, |p| p.then)) {
            let _ = writeln!(
                o,
                "  RTT min/avg/max: first {} / {} / {}, then {} / {} / {} (virtual time)",
                human(f.0),
                human(f.1),
                human(f.2),
                human(t.0),
                human(t.1),
                human(t.2)
            );
        }
        o.push('\n');
    }

    fn text_mcast(&self, o: &mut String) {
        let Some(m) = &self.mcast else {
            let why = if self.stopped.is_some() {
                "not run (interrupted before it)"
            } else {
                "skipped (one host)"
            };
            let _ = writeln!(o, "Multicast: {why}\n");
            return;
        };
        let _ = writeln!(
            o,
            "Multicast {} (MGID {}, MLID {:#06x}; §4, §11)",
            m.group, m.mgid, m.mlid
        );
        let _ = writeln!(
            o,
            "  FullMember joins: {}{}",
            host_list(&self.names, &m.members),
            if m.joined { "" } else { " (not all answered)" }
        );
        let state = match m.sender_state {
            Some(s) if s == JoinState::SEND_ONLY_NON_MEMBER => "joined SendOnlyNonMember, then",
            Some(_) => "(a member)",
            None => "(no membership)",
        };
        let _ = writeln!(
            o,
            "  {} is no member: it {state} sent \"{}\" to UDP port {GROUP_PORT}",
            self.names[m.sender], m.payload
        );
        let who: Vec<usize> = m.received.iter().map(|r| r.0).collect();
        let verdict = if m.ok() {
            "each member once, nobody else".to_string()
        } else {
            let missing: Vec<usize> = m
                .members
                .iter()
                .copied()
                .filter(|h| !who.contains(h))
                .collect();
            format!("MISSING at {}", host_list(&self.names, &missing))
        };
        let _ = writeln!(
            o,
            "  Received by: {} ({verdict})\n",
            host_list(&self.names, &who)
        );
    }

    fn text_groups(&self, o: &mut String) {
        let _ = writeln!(o, "SA multicast groups (what `saquery -m` lists)");
        let mut rows = vec![vec![
            "MGID".to_string(),
            "IP group".into(),
            "MLID".into(),
            "P_Key".into(),
            "Q_Key".into(),
            "MTU".into(),
            "members".into(),
        ]];
        for g in self.groups.iter().take(SHOW) {
            let mut members = format!("{} ({} full", g.members, g.full);
            if g.send_only > 0 {
                let _ = write!(members, ", {} send-only", g.send_only);
            }
            members.push(')');
            if g.well_known {
                members.push_str(", default partition");
            }
            rows.push(vec![
                g.mgid.clone(),
                g.ip.clone(),
                format!("{:#06x}", g.mlid),
                format!("{:#06x}", g.pkey),
                format!("{:#06x}", g.qkey),
                g.mtu.to_string(),
                members,
            ]);
        }
        table(o, "  ", &rows);
        if self.groups.len() > SHOW {
            let _ = writeln!(o, "  ... and {} more groups", self.groups.len() - SHOW);
        }
        if self.groups.iter().any(|g| g.well_known) {
            // The demo gives its SM no partitions file: the group it makes at its start is the
            // default partition's, as OpenSM makes it without a partitions.conf (opensm(8)).
            let _ = writeln!(
                o,
                "  (default partition: the broadcast group the SM makes at its start for P_Key \
                 0xffff, with IPoIB's default parameters, as OpenSM does without a partitions file)"
            );
        }
        o.push('\n');
    }
}

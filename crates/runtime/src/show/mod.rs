//! The views of `ipoib show`: what an IPoIB interface holds (neighbours, paths, multicast groups,
//! connections, counters), as plain data an owner fills and [`Answer::render`] prints as aligned
//! text or JSON.
//!
//! The data comes from the sans-IO interface ([`ipoib_proto::ipoib::Interface`]) and its fabric
//! adapter ([`ipoib_fabric::node::ipoib::IpoibApp`]): [`HostShow::collect`] reads one host,
//! [`from_subnet`] every host of a simulated subnet (a lab names them `h1`..`hN`,
//! [`lab_host_name`]). An owner adds what only it knows, above all counters: a lab or a UDP
//! fabric pushes its own [`CounterSection`]s (garbage datagrams, spoofed identities, floods
//! dropped) into [`HostShow::counters`] or, when they are not per host, [`Answer::sections`].
//!
//! The JSON form is an array of flat objects, one per row, each with its `host`; the field names
//! are stable (README "ipoib show" lists them):
//!
//! - `neigh`: `host`, `dst`, `lladdr` (20-byte IPoIB address, or null while INCOMPLETE), `state`
//!   (`INCOMPLETE`, `REACHABLE`, `STALE`, `PROBE`);
//! - `paths`: `host`, `dgid`, `dlid`, `sl`, `mtu` (bytes, or null for an undefined code), `rate`
//!   (e.g. `"10 Gb/s"`), `rate_mbps` (or null), `age_ms` (or null when not known);
//! - `mcast`: `host`, `mgid`, `group` (the IP group, or null), `join` (names of the JoinState bits:
//!   `full`, `non`, `send-only`, `send-only-full`; empty while joining), `mlid`, `attached`;
//! - `conns`: `host`, `peer` (its link-layer address), `peer_gid`, `qpn`, `peer_qpn` (null until
//!   known), `service_id` (hex string: 64 bits do not fit a JSON number exactly), `mtu`, `state`
//!   (`connecting`, `up`, `closing`), `mode` (`RC`, `UC`), `active`, `sends`, `tx_packets`,
//!   `rx_packets`;
//! - `counters`: `host` (null for a section of the whole process), `section`, `counters` (an
//!   object of name → value); a host with a TUN device (a lab's, an attach process's) has a
//!   section `tun` ([`tun_section`]); a process that runs our SM and SA (a lab, a fabric) has
//!   the sections `sm` and `sa` ([`sm_section`], [`sa_section`]), the master's when a lab has
//!   several SMs of ours, the others' as `sm_<host>` and `sa_<host>` ([`from_subnet`]);
//! - `hosts` (a fabric process's slots): `host` (`ca<N>`, N the CA's topology node), `node_guid`,
//!   `port_guid`, `lid`, `peer` (the UDP address of the attached host, or null), `state`
//!   (`attached`, `free`), `from_host`, `to_host`, `dropped` (packets from the host dropped by
//!   the identity checks, docs/UDP-FABRIC.md).

mod render;

use crate::control::{AnswerError, Request, View};
use crate::tun::TunCounters;
use ipoib_fabric::node::ipoib::IpoibApp;
use ipoib_fabric::node::sm::SmpSm;
use ipoib_fabric::node::subnet::{SmMode, SmStats, Subnet};
use ipoib_proto::ipoib::{ConnState, DropReason, Interface, NeighbourState};
use ipoib_proto::sa::SaStats;
use ipoib_wire::cm::TransportServiceType;
use ipoib_wire::ipoib::{HwAddr, IpVersion, IpoibMgid};
use ipoib_wire::sa::{JoinState, Rate};
use ipoib_wire::smp::SmState;
use ipoib_wire::{Gid, Guid};
use std::net::{IpAddr, Ipv6Addr};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

/// Reachability of a neighbour, as `ip neigh` names it (RFC 4861 §7.3.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum NeighState {
    /// Resolving.
    Incomplete,
    /// Confirmed recently.
    Reachable,
    /// Known, not confirmed recently.
    Stale,
    /// Being confirmed by unicast probes.
    Probe,
}

impl NeighState {
    /// The name `ip neigh` prints.
    pub fn name(self) -> &'static str {
        match self {
            NeighState::Incomplete => "INCOMPLETE",
            NeighState::Reachable => "REACHABLE",
            NeighState::Stale => "STALE",
            NeighState::Probe => "PROBE",
        }
    }
}

impl From<&NeighbourState> for NeighState {
    fn from(s: &NeighbourState) -> NeighState {
        match s {
            NeighbourState::Incomplete { .. } => NeighState::Incomplete,
            NeighbourState::Reachable { .. } => NeighState::Reachable,
            NeighbourState::Stale { .. } => NeighState::Stale,
            NeighbourState::Probe { .. } => NeighState::Probe,
        }
    }
}

/// One neighbour (draft-ietf-ipoib-ip-over-infiniband-06 §9.1.1: IP address → IPoIB link-layer
/// address).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NeighEntry {
    /// The IP address.
    pub dst: IpAddr,
    /// Its link-layer address, once resolved.
    pub lladdr: Option<HwAddr>,
    /// Its state.
    pub state: NeighState,
}

/// One cached path (a PathRecord, IBA 1 §15.2.5.16).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathEntry {
    /// Destination GID.
    pub dgid: Gid,
    /// Destination LID.
    pub dlid: u16,
    /// Service level.
    pub sl: u8,
    /// Path MTU in bytes (`None` for a code without a size).
    pub mtu: Option<u32>,
    /// Static rate.
    pub rate: Rate,
    /// Time since the record was fetched, when the owner knows it (the interface does not keep
    /// it).
    pub age: Option<Duration>,
}

/// One multicast group (draft-ietf-ipoib-ip-over-infiniband-06 §4, §11).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McastEntry {
    /// MGID.
    pub mgid: Gid,
    /// The IP group it stands for, when the MGID is an IPoIB one (see [`ip_group`]).
    pub group: Option<IpAddr>,
    /// JoinState granted by the SA (empty while joining).
    pub join: JoinState,
    /// MLID (0 until joined).
    pub mlid: u16,
    /// The UD QP is attached.
    pub attached: bool,
}

/// One connected-mode connection (RFC 4755).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnEntry {
    /// The peer's link-layer address.
    pub peer: HwAddr,
    /// Our QP's number, once known.
    pub qpn: Option<u32>,
    /// The peer's QP's number, once known.
    pub peer_qpn: Option<u32>,
    /// The service ID of the REQ (RFC 4755 §3.2).
    pub service_id: u64,
    /// The connection's IP MTU (0 until known; RFC 4755 §5.1).
    pub mtu: u32,
    /// State.
    pub state: ConnState,
    /// RC or UC (RFC 4755 §3).
    pub mode: TransportServiceType,
    /// We sent the REQ.
    pub active: bool,
    /// We send on it.
    pub sends: bool,
    /// Packets sent on it.
    pub tx_packets: u64,
    /// Packets received on it.
    pub rx_packets: u64,
}

/// One slot of a fabric process (docs/UDP-FABRIC.md): a CA of the topology a host can attach to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlotEntry {
    /// Node GUID.
    pub node_guid: Guid,
    /// GUID of the port the host uses.
    pub port_guid: Guid,
    /// That port's LID (0 before the SM configured it).
    pub lid: u16,
    /// The attached host's address.
    pub peer: Option<String>,
    /// Packets from the host put on the port.
    pub from_host: u64,
    /// Packets queued for the host.
    pub to_host: u64,
    /// Packets from the host dropped (malformed, VL15, port not Active, unconfigured, spoofed LID or
    /// GID, P_Key).
    pub dropped: u64,
}

/// Named counters, in the order they are shown.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CounterSection {
    /// The section's name (`interface`, `adapter`, `tx`, `rx`, `connected`, `tun`, `control`,
    /// or an owner's).
    pub name: String,
    /// (name, value) pairs.
    pub counters: Vec<(String, u64)>,
}

impl CounterSection {
    /// An empty section.
    pub fn new(name: impl Into<String>) -> CounterSection {
        CounterSection {
            name: name.into(),
            counters: Vec::new(),
        }
    }

    /// Adds one counter.
    pub fn push(&mut self, name: impl Into<String>, value: u64) -> &mut CounterSection {
        self.counters.push((name.into(), value));
        self
    }
}

/// What one host shows; an answer fills only the requested view's field.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HostShow {
    /// The host's name (`h1`.. in a lab, the device in an attach process).
    pub host: String,
    /// Neighbours.
    pub neigh: Vec<NeighEntry>,
    /// Paths.
    pub paths: Vec<PathEntry>,
    /// Multicast groups.
    pub mcast: Vec<McastEntry>,
    /// Connections.
    pub conns: Vec<ConnEntry>,
    /// Counter sections.
    pub counters: Vec<CounterSection>,
    /// The slot, for a fabric process's host.
    pub slot: Option<SlotEntry>,
}

/// The answer to a request: hosts, and counter sections of the whole process.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Answer {
    /// The hosts, in the order shown.
    pub hosts: Vec<HostShow>,
    /// Counter sections that belong to no host (a fabric's, the control socket's), shown after
    /// the hosts' in the counters view.
    pub sections: Vec<CounterSection>,
}

impl Answer {
    /// The answer as `ipoib show` prints it.
    pub fn render(&self, view: View, json: bool) -> String {
        if json {
            render::json(self, view)
        } else {
            render::text(self, view)
        }
    }
}

/// The IP group an IPoIB MGID stands for (draft-ietf-ipoib-ip-over-infiniband-06 §4). IPv4 is
/// exact (every class D address starts with `1110`; the broadcast GID is 255.255.255.255). An
/// IPv6 MGID holds only the low 80 bits of the group: the top 48 are taken as `ff0S:0:0` with S
/// the MGID's scope, which is right for the groups IPoIB itself joins (all-nodes, all-routers,
/// solicited-node) and any group of flags 0 and zero bits 16-47. `None` for other MGIDs.
pub fn ip_group(mgid: &Gid) -> Option<IpAddr> {
    let m = IpoibMgid::parse(mgid).ok()?;
    match m.version {
        IpVersion::V4 => m.ipv4_group().map(IpAddr::V4),
        IpVersion::V6 => {
            let low = m.ipv6_group_low80()?;
            let top = (0xff00 | u128::from(u8::from(m.scope))) << 112;
            Some(IpAddr::V6(Ipv6Addr::from(top | low)))
        }
    }
}

/// The counter name of a drop reason (`drop_<reason>` in the `interface` section).
pub fn drop_name(r: DropReason) -> &'static str {
    match r {
        DropReason::NotUp => "drop_not_up",
        DropReason::PkeyMismatch => "drop_pkey_mismatch",
        DropReason::QkeyMismatch => "drop_qkey_mismatch",
        DropReason::Loopback => "drop_loopback",
        DropReason::Malformed => "drop_malformed",
        DropReason::Unsupported => "drop_unsupported",
        DropReason::TooBig => "drop_too_big",
        DropReason::NoRoute => "drop_no_route",
        DropReason::NeighbourQueueFull => "drop_neighbour_queue_full",
        DropReason::NeighbourTableFull => "drop_neighbour_table_full",
        DropReason::ResolutionFailed => "drop_resolution_failed",
        DropReason::PathQueueFull => "drop_path_queue_full",
        DropReason::PathTableFull => "drop_path_table_full",
        DropReason::PathFailed => "drop_path_failed",
        DropReason::McastQueueFull => "drop_mcast_queue_full",
        DropReason::McastTableFull => "drop_mcast_table_full",
        DropReason::NoMcastGroup => "drop_no_mcast_group",
        DropReason::Flushed => "drop_flushed",
        DropReason::TooBigForPath => "drop_too_big_for_path",
        DropReason::ConnQueueFull => "drop_conn_queue_full",
    }
}

impl HostShow {
    /// A host with nothing to show yet.
    pub fn new(host: impl Into<String>) -> HostShow {
        HostShow {
            host: host.into(),
            ..HostShow::default()
        }
    }

    /// `view` of one interface and, when there is one, its adapter (the adapter has the QPs of
    /// the connections and its own counters).
    pub fn collect(
        host: impl Into<String>,
        view: View,
        iface: &Interface,
        app: Option<&IpoibApp>,
    ) -> HostShow {
        let mut h = HostShow::new(host);
        match view {
            View::Neigh => h.neigh = neigh(iface),
            View::Paths => h.paths = paths(iface),
            View::Mcast => h.mcast = mcast(iface),
            View::Conns => h.conns = conns(iface, app),
            View::Counters => h.counters = counters(iface, app),
            // An interface is not a fabric's slot.
            View::Hosts => {}
        }
        h
    }
}

fn neigh(iface: &Interface) -> Vec<NeighEntry> {
    iface
        .neighbours()
        .iter()
        .map(|n| NeighEntry {
            dst: n.ip,
            lladdr: n.hw,
            state: NeighState::from(&n.state),
        })
        .collect()
}

fn paths(iface: &Interface) -> Vec<PathEntry> {
    iface
        .paths()
        .into_iter()
        .map(|(dgid, p)| PathEntry {
            dgid,
            dlid: p.dlid,
            sl: p.sl,
            mtu: p.mtu.bytes(),
            rate: p.rate,
            age: None,
        })
        .collect()
}

fn mcast(iface: &Interface) -> Vec<McastEntry> {
    iface
        .groups()
        .into_iter()
        .map(|g| McastEntry {
            group: ip_group(&g.mgid),
            mgid: g.mgid,
            join: g.join_state,
            mlid: g.mlid,
            attached: g.attached,
        })
        .collect()
}

fn conns(iface: &Interface, app: Option<&IpoibApp>) -> Vec<ConnEntry> {
    let qps = app.map(|a| a.conn_qps()).unwrap_or_default();
    iface
        .connections()
        .into_iter()
        .map(|c| {
            // Our QPN is the adapter's before the connection is established.
            let qpn = c.qpns.map(|q| q.0).or_else(|| {
                qps.iter()
                    .find(|(id, _, _)| *id == c.conn)
                    .map(|(_, q, _)| *q)
            });
            ConnEntry {
                peer: c.peer,
                qpn,
                peer_qpn: c.qpns.map(|q| q.1),
                service_id: c.service_id,
                mtu: c.mtu,
                state: c.state,
                mode: c.transport,
                active: c.active,
                sends: c.sends,
                tx_packets: c.tx_packets,
                rx_packets: c.rx_packets,
            }
        })
        .collect()
}

fn counters(iface: &Interface, app: Option<&IpoibApp>) -> Vec<CounterSection> {
    let mut out = Vec::new();
    let c = iface.counters();
    let mut s = CounterSection::new("interface");
    s.push("carrier", u64::from(iface.carrier()))
        .push("mtu", u64::from(iface.mtu()))
        .push("tx_frames", c.tx_frames)
        .push("rx_frames", c.rx_frames)
        .push("delivered", c.delivered);
    for (r, n) in &c.drops {
        s.push(drop_name(*r), *n);
    }
    out.push(s);
    let Some(app) = app else {
        return out;
    };
    let a = app.counters();
    let mut s = CounterSection::new("adapter");
    s.push("tx_not_ready", a.tx_not_ready)
        .push("send_errors", a.send_errors)
        .push("recv_errors", a.recv_errors)
        .push("verbs_errors", a.verbs_errors)
        .push("no_interface", a.no_interface);
    out.push(s);
    for (name, f) in [("tx", app.tx_stats()), ("rx", app.rx_stats())] {
        let mut s = CounterSection::new(name);
        s.push("frames", f.frames)
            .push("multicast", f.multicast)
            .push("arp_requests", f.arp_requests)
            .push("arp_replies", f.arp_replies)
            .push("nd_solicits", f.nd_solicits)
            .push("nd_adverts", f.nd_adverts)
            .push("ipv4", f.ipv4)
            .push("ipv6", f.ipv6);
        out.push(s);
    }
    if let Some(k) = app.conn_counters() {
        let mut s = CounterSection::new("connected");
        s.push("qp_errors", k.qp_errors)
            .push("cm_errors", k.cm_errors)
            .push("send_errors", k.send_errors)
            .push("sends_flushed", k.sends_flushed)
            .push("recv_errors", k.recv_errors);
        out.push(s);
    }
    out
}

/// The name of a lab's host `i` (0-based): `h1`, `h2`, ...
pub fn lab_host_name(i: usize) -> String {
    format!("h{}", i + 1)
}

/// The index of the lab host named `name` among `count` hosts (the reverse of
/// [`lab_host_name`]).
pub fn lab_host_index(name: &str, count: usize) -> Option<usize> {
    let n: usize = name.strip_prefix('h')?.parse().ok()?;
    // `h01` is not `h1`: names are printed one way only.
    (n >= 1 && n <= count && lab_host_name(n - 1) == name).then(|| n - 1)
}

/// The answer to `req` from a simulated subnet: every host that runs IPoIB (named by
/// [`lab_host_name`]), or the one `req.host` names; in the counters view of the whole subnet,
/// the sections of our SMs (one each with one SM, the master's first with several).
pub fn from_subnet(net: &Subnet, req: &Request) -> Result<Answer, AnswerError> {
    let n = net.host_count();
    let hosts: Vec<usize> = match &req.host {
        Some(name) => {
            let i = lab_host_index(name, n)
                .filter(|&i| net.interface(i).is_some())
                .ok_or_else(|| {
                    let names: Vec<String> = (0..n)
                        .filter(|&i| net.interface(i).is_some())
                        .map(lab_host_name)
                        .collect();
                    AnswerError::no_such_host(name, &names)
                })?;
            vec![i]
        }
        None => (0..n).filter(|&i| net.interface(i).is_some()).collect(),
    };
    let hosts = hosts
        .into_iter()
        .filter_map(|i| {
            let iface = net.interface(i)?;
            Some(HostShow::collect(
                lab_host_name(i),
                req.view,
                iface,
                net.ipoib_app(i),
            ))
        })
        .collect();
    let mut sections = Vec::new();
    if req.view == View::Counters && req.host.is_none() && net.sm_mode() == SmMode::Ours {
        sections.extend(sm_sections(net));
    }
    Ok(Answer { hosts, sections })
}

/// The sections of our SMs ([`Subnet::sms`]). One SM: its `sm` and `sa`. Several (a standby
/// SM, IBA 1 §14.4): the master's (host 0's while none is) as `sm` and `sa`, then every other
/// one's as `sm_<host>` and `sa_<host>` (`sm_h2`); each `sm` section starts with `host` (the
/// `N` of host `hN`) and `master` (1 for the master). The names are unique as a host runs at
/// most one SM ([`Subnet::add_sm`] refuses a second).
fn sm_sections(net: &Subnet) -> Vec<CounterSection> {
    let mut sms = net.sms();
    if let [one] = sms.as_slice() {
        return vec![
            sm_section(one.smp, &one.app.stats()),
            sa_section(one.sa.stats()),
        ];
    }
    let master = net.master_sm().map_or(0, |m| m.host);
    // The shown master first, the others in host order.
    sms.sort_by_key(|s| (s.host != master, s.host));
    let mut out = Vec::new();
    for s in sms {
        let is_master = s.smp.election().state() == SmState::Master;
        let suffix = if s.host == master {
            String::new()
        } else {
            format!("_{}", lab_host_name(s.host))
        };
        let mut sm = CounterSection::new(format!("sm{suffix}"));
        sm.push("host", s.host as u64 + 1)
            .push("master", u64::from(is_master));
        sm.counters
            .extend(sm_section(s.smp, &s.app.stats()).counters);
        let mut sa = sa_section(s.sa.stats());
        sa.name = format!("sa{suffix}");
        out.extend([sm, sa]);
    }
    out
}

/// Our subnet manager's counters as the process's section `sm`: its sweeps by SMPs (`sweeps`,
/// `incomplete_sweeps`, `nodes` discovered, `discovery_failures`, `traps` received, the
/// bring-up's `sets` and `set_failures`, `mft_sets`, `resubmitted` SMPs), its SMP transport
/// (`smps_sent`, `smps_resent`, `smps_answered`, `smps_failed`, `smps_unmatched`: late or
/// duplicate responses) and its multicast work (`sa_events`, `trees`, `mft_writes`,
/// `unknown_members`).
pub fn sm_section(smp: &SmpSm, app: &SmStats) -> CounterSection {
    let (s, t) = (smp.stats(), smp.smp_counters());
    let mut c = CounterSection::new("sm");
    c.push("sweeps", s.sweeps)
        .push("incomplete_sweeps", s.incomplete_sweeps)
        .push("nodes", s.nodes)
        .push("discovery_failures", s.discovery_failures)
        .push("traps", s.traps)
        .push("sets", s.sets)
        .push("set_failures", s.set_failures)
        .push("mft_sets", s.mft_sets)
        .push("resubmitted", s.resubmitted)
        .push("smps_sent", t.sent)
        .push("smps_resent", t.resent)
        .push("smps_answered", t.answered)
        .push("smps_failed", t.failed)
        .push("smps_unmatched", t.unmatched)
        .push("sa_events", app.sa_events)
        .push("trees", app.trees)
        .push("mft_writes", app.mft_writes)
        .push("unknown_members", app.unknown_members);
    c
}

/// Our SA's counters as the process's section `sa`: `requests`, the MADs it dropped by reason
/// (`dropped_<reason>`, the SA's reason in snake case ([`counter_name`]), e.g.
/// `dropped_method_unsupported`, `dropped_sm_key_neither_0_nor_the_sas`,
/// `dropped_requester_lid_unknown`), `reports_sent`, `reports_lost` and `reports_refused`
/// (InformInfo notices; refused: to a subscriber that may not reach the trap's source), its
/// RMPP transfers (`rmpp_started`, `rmpp_done`, `rmpp_failed`, `rmpp_refused`: GetTables past its
/// bound of open transfers), `no_mlid` (groups refused for want of an MLID), `informs_refused` and
/// `services_refused` (new InformInfo subscriptions and ServiceRecords past their bounds).
pub fn sa_section(s: &SaStats) -> CounterSection {
    let mut c = CounterSection::new("sa");
    c.push("requests", s.requests);
    // The SA's reasons are sentences ("SM_Key neither 0 nor the SA's"); a counter's name is one
    // word of the `name  value` lines. Two reasons of one name are summed.
    let mut dropped = std::collections::BTreeMap::<String, u64>::new();
    for (reason, n) in &s.dropped {
        *dropped
            .entry(format!("dropped_{}", counter_name(reason)))
            .or_default() += *n;
    }
    for (name, n) in dropped {
        c.push(name, n);
    }
    c.push("reports_sent", s.reports_sent)
        .push("reports_lost", s.reports_lost)
        .push("reports_refused", s.reports_refused)
        .push("rmpp_started", s.rmpp_started)
        .push("rmpp_done", s.rmpp_done)
        .push("rmpp_failed", s.rmpp_failed)
        .push("rmpp_refused", s.rmpp_refused)
        .push("no_mlid", s.no_mlid)
        .push("informs_refused", s.informs_refused)
        .push("services_refused", s.services_refused);
    c
}

/// `text` as a counter's name: ASCII letters lower-cased and digits kept, apostrophes dropped,
/// every other run of characters one `_`, none at either end ("SM_Key neither 0 nor the SA's"
/// -> `sm_key_neither_0_nor_the_sas`).
pub fn counter_name(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for ch in text.chars().filter(|&ch| ch != '\'') {
        if ch.is_ascii_alphanumeric() {
            out.push(ch.to_ascii_lowercase());
        } else if !out.is_empty() && !out.ends_with('_') {
            out.push('_');
        }
    }
    while out.ends_with('_') {
        out.pop();
    }
    out
}

/// The counters of a host's TUN device ([`crate::tun::TunEndpoint`]) as its section `tun`, the
/// way `ip -s link` shows a NIC's: `from_os`, `from_os_bytes` (packets the OS sent, a
/// super-packet counted as the packets it was cut into), `from_os_gso` (super-packets cut),
/// `offload_errors` (packets from the OS dropped: malformed offload header, super-packet
/// refused), `to_os`, `to_os_bytes` (packets written to the OS), `to_os_gso` (writes that
/// carried a run of TCP segments as one), `write_errors` (packets for the OS the device
/// refused: dropped).
pub fn tun_section(c: &TunCounters) -> CounterSection {
    let mut s = CounterSection::new("tun");
    for (name, v) in [
        ("from_os", &c.from_os),
        ("from_os_bytes", &c.from_os_bytes),
        ("from_os_gso", &c.from_os_gso),
        ("offload_errors", &c.offload_errors),
        ("to_os", &c.to_os),
        ("to_os_bytes", &c.to_os_bytes),
        ("to_os_gso", &c.to_os_gso),
        ("write_errors", &c.write_errors),
    ] {
        s.push(name, v.load(Ordering::Relaxed));
    }
    s
}

/// [`from_subnet`] for a lab whose host `i` has the TUN device of counters `tuns[i]`: in the
/// counters view each host also has its section `tun` ([`tun_section`]).
pub fn from_lab(
    net: &Subnet,
    req: &Request,
    tuns: &[Arc<TunCounters>],
) -> Result<Answer, AnswerError> {
    let mut a = from_subnet(net, req)?;
    if req.view == View::Counters {
        let n = net.host_count();
        for h in &mut a.hosts {
            if let Some(c) = lab_host_index(&h.host, n).and_then(|i| tuns.get(i)) {
                h.counters.push(tun_section(c));
            }
        }
    }
    Ok(a)
}

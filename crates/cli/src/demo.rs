//! `ipoib demo`: the README's main command. It builds a small InfiniBand subnet in one process
//! ([`ipoib_fabric::node::subnet::Subnet`] with IPoIB on every host), brings IPoIB up on every host
//! (draft-ietf-ipoib-ip-over-infiniband-06 §5: the broadcast join, carrier after it), and shows
//! what a person wants to see: every host's LID, GID, link-layer address and IP addresses; the ARP
//! and ND resolutions the first pings cause; IPv4 and IPv6 ping between all pairs (a bounded,
//! evenly spread sample on big subnets) with virtual-time round-trip times; a multicast join and
//! delivery (§11); the SA's group table. The whole conversation goes to a pcap that Wireshark and
//! tshark read.
//!
//! Exit status: 0 when everything worked, 1 when something failed (a host without carrier, a ping
//! unanswered, a multicast datagram missing or delivered to a non-member), 2 for bad arguments
//! or an unwritable pcap.
//!
//! The run is deterministic: the same seed gives the same output (bar the wall time) and the same
//! pcap, byte for byte.

mod report;

use ipoib_fabric::hw::capture::Capture;
use ipoib_fabric::hw::topology::Topology;
use ipoib_fabric::node::ipoib::Resolution;
use ipoib_fabric::node::subnet::{Subnet, SubnetOptions};
use ipoib_fabric::Instant;
use ipoib_wire::ipoib::mcast::{ipv4_mgid, IpVersion, IpoibMgid};
use ipoib_wire::sa::JoinState;
use report::{GroupLine, HostLine, McastReport, PingLine, PortLine, Report, ResLine};
use std::net::{IpAddr, Ipv4Addr};
use std::process::ExitCode;
use std::time::{Duration, Instant as Wall};

/// Pairs pinged at most per address family; bigger subnets ping an evenly spread sample.
pub const MAX_PAIRS: usize = 256;
/// The multicast group of the demo.
pub const GROUP: Ipv4Addr = Ipv4Addr::new(239, 1, 1, 1);
/// UDP port the multicast datagram goes to.
pub const GROUP_PORT: u16 = 5001;
/// Packets kept in the pcap at most (about 300 MB): a subnet of a thousand hosts puts some 16
/// million packets on its links (mostly the SA's Reports of new groups to every subscriber).
pub const MAX_CAPTURE_PACKETS: u64 = 1_000_000;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Number of hosts (default 4; with a net file, if given, it must match the file's hosts: its
    /// channel adapters with a cabled port).
    #[arg(long)]
    hosts: Option<usize>,
    /// `single-switch` (up to 254 hosts), `fat-tree` (two-level, up to 32,258 hosts), or an
    /// ibnetdiscover / ibsim net file. Multi-port HCAs: every cabled port gets its own LID and
    /// GID; IPoIB runs on a host's first cabled port (one interface per host), and the report
    /// lists every port.
    #[arg(long, default_value = "single-switch")]
    topology: String,
    /// Seed of every random choice (same seed, same packets).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Where to write the whole conversation (ERF records, link type 197: Wireshark, tshark and
    /// `ipoib decode` read it).
    #[arg(long, default_value = "ipoib-demo.pcap")]
    pcap: String,
    /// One JSON document instead of text.
    #[arg(long)]
    json: bool,
}

fn fail(msg: impl std::fmt::Display) -> ExitCode {
    eprintln!("ipoib demo: {msg}");
    ExitCode::from(2)
}

fn load_topology(args: &Args) -> Result<Topology, String> {
    crate::topology_arg::load(&args.topology, args.hosts, Some(4))
}

pub fn run(args: &Args) -> ExitCode {
    let start = Wall::now();
    let topo = match load_topology(args) {
        Ok(t) => t,
        Err(e) => return fail(e),
    };
    let mut opts = SubnetOptions::new(topo, args.seed);
    opts.ipoib = Some(Default::default());
    let mut net = match Subnet::build(opts) {
        Ok(n) => n,
        Err(e) => return fail(e),
    };
    net.sim_mut()
        .set_capture(Capture::new().with_packet_limit(MAX_CAPTURE_PACKETS));
    let mut r = scenario(&mut net, args);
    if let Some(c) = net.sim_mut().take_capture() {
        r.packets = c.packets();
        r.packets_skipped = c.skipped();
        if let Err(e) = std::fs::write(&args.pcap, c.into_bytes()) {
            return fail(format!("{}: {e}", args.pcap));
        }
    }
    r.sim_end = net.sim().now() - Instant::ZERO;
    r.wall = start.elapsed();
    if args.json {
        println!("{}", r.json(args));
    } else {
        print!("{}", r.text(args));
    }
    if r.failures.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

fn name(net: &Subnet, i: usize) -> String {
    net.topology().nodes()[net.host(i).topo_node].name.clone()
}

/// The pairs to ping: all ordered pairs when there are at most [`MAX_PAIRS`], else up to
/// `MAX_PAIRS / 2` sources spread evenly over the hosts, each pinging the next host and the host
/// half-way round (so the sample crosses the fabric). Also says whether it is a sample.
pub fn ping_pairs(n: usize) -> (Vec<(usize, usize)>, bool) {
    if n * n.saturating_sub(1) <= MAX_PAIRS {
        let all = (0..n)
            .flat_map(|a| (0..n).filter(move |&b| b != a).map(move |b| (a, b)))
            .collect();
        return (all, false);
    }
    let sources = (MAX_PAIRS / 2).min(n);
    let mut v = Vec::new();
    for j in 0..sources {
        let a = j * n / sources;
        for d in [1, n / 2] {
            let b = (a + d) % n;
            if b != a && !v.contains(&(a, b)) {
                v.push((a, b));
            }
        }
    }
    (v, true)
}

/// Runs the whole demonstration on `net` and gathers what it shows.
fn scenario(net: &mut Subnet, args: &Args) -> Report {
    let n = net.host_count();
    let mut failures = Vec::new();
    // 1. Bring-up: the SM configures the fabric, every interface joins the broadcast group (§5).
    let up = net.run_until_joined(Instant::ZERO + Duration::from_secs(30));
    let carrier = net.carrier_count();
    if !up {
        failures.push(format!("only {carrier} of {n} hosts got carrier"));
        let down: Vec<usize> = (0..n)
            .filter(|&i| !net.ipoib_app(i).is_some_and(|a| a.carrier()))
            .collect();
        failures.extend(crate::why::host_lines(net, &down));
        failures.extend(crate::why::unreached(net));
    }
    let carrier_at = (0..n)
        .filter_map(|i| net.ipoib_app(i).and_then(|a| a.carrier_up_at()))
        .max()
        .map(|t| t - Instant::ZERO);
    // 2. IPv4: ARP (§9.2) and PathRecords triggered by the first ping of each pair.
    let (pairs, sampled) = ping_pairs(n);
    let v4_first = ping_round(net, &pairs, false);
    let v4_then = ping_round(net, &pairs, false);
    // 3. IPv6: link-local addresses after DAD (§8), ND (§9.3).
    let deadline = net.sim().now() + Duration::from_secs(5);
    if !net.run_until_ipv6_ready(deadline) {
        failures.push("some IPv6 link-local address never became usable".into());
    }
    let v6_first = ping_round(net, &pairs, true);
    let v6_then = ping_round(net, &pairs, true);
    let lines = |first: Vec<Option<(IpAddr, IpAddr, Option<Duration>)>>,
                 then: Vec<Option<(IpAddr, IpAddr, Option<Duration>)>>| {
        pairs
            .iter()
            .zip(first.into_iter().zip(then))
            .map(|(&(a, b), (f, t))| PingLine {
                from: a,
                to: b,
                addrs: f.map(|x| (x.0, x.1)),
                first: f.and_then(|x| x.2),
                then: t.and_then(|x| x.2),
            })
            .collect::<Vec<_>>()
    };
    let v4 = lines(v4_first, v4_then);
    let v6 = lines(v6_first, v6_then);
    for (fam, list) in [("IPv4", &v4), ("IPv6", &v6)] {
        let lost = list
            .iter()
            .filter(|p| p.first.is_none() || p.then.is_none())
            .count();
        if lost > 0 {
            failures.push(format!(
                "{lost} of {} {fam} ping pairs unanswered",
                list.len()
            ));
        }
    }
    // 4. Multicast (§11): odd hosts join 239.1.1.1, host 0 sends without being a member.
    let mcast = (n >= 2).then(|| multicast(net));
    if let Some(m) = &mcast {
        if !m.ok() {
            failures.push("the multicast datagram did not reach exactly the members".into());
        }
    }
    let hosts = (0..n).map(|i| host_line(net, i)).collect();
    let mut resolutions: Vec<ResLine> = (0..n)
        .flat_map(|i| {
            net.ipoib_app(i)
                .map(|a| a.resolutions().to_vec())
                .unwrap_or_default()
                .into_iter()
                .map(move |r: Resolution| ResLine {
                    at: r.at - Instant::ZERO,
                    host: i,
                    kind: r.kind,
                    ip: r.ip,
                    hw: r.hw,
                })
        })
        .collect();
    resolutions.sort_by_key(|r| (r.at, r.host));
    // The first time each host learned each address; later confirmations (a unicast probe of an
    // entry learned from a request, RFC 4861 §7.3.3 as Linux applies it to ARP) are counted in
    // the totals only.
    let mut seen = std::collections::BTreeSet::new();
    resolutions.retain(|r| seen.insert((r.host, r.ip)));
    let mut totals = ipoib_fabric::node::ipoib::FrameStats::default();
    let mut paths = 0;
    for i in 0..n {
        if let Some(a) = net.ipoib_app(i) {
            let t = a.tx_stats();
            totals.arp_requests += t.arp_requests;
            totals.arp_replies += t.arp_replies;
            totals.nd_solicits += t.nd_solicits;
            totals.nd_adverts += t.nd_adverts;
            totals.frames += t.frames;
        }
        paths += net.interface(i).map_or(0, |x| x.paths().len());
    }
    let bcast = net
        .interface(0)
        .and_then(|i| i.link_params())
        .map(|p| (p.record, p.mtu));
    let _ = args;
    Report {
        names: (0..n).map(|i| name(net, i)).collect(),
        hosts,
        carrier,
        carrier_at,
        bcast,
        sm_lid: net.lid(0),
        resolutions,
        totals,
        paths,
        pairs_total: n * n.saturating_sub(1),
        sampled,
        v4,
        v6,
        mcast,
        groups: groups(net),
        failures,
        packets: 0,
        packets_skipped: 0,
        sim_end: Duration::ZERO,
        wall: Duration::ZERO,
    }
}

/// One ping per pair, all sent at the same virtual instant; runs until every one is answered or
/// 5 s passed (ARP and ND give up after three solicitations a second apart). Per pair: source,
/// destination and round-trip time, or `None` when no source address existed.
fn ping_round(
    net: &mut Subnet,
    pairs: &[(usize, usize)],
    v6: bool,
) -> Vec<Option<(IpAddr, IpAddr, Option<Duration>)>> {
    let addr = |net: &Subnet, i: usize| -> Option<IpAddr> {
        let ip = net.ipoib_app(i)?.ip();
        if v6 {
            ip.ipv6().first().map(|a| IpAddr::V6(*a))
        } else {
            ip.ipv4().map(IpAddr::V4)
        }
    };
    let mut sent = Vec::new();
    for &(a, b) in pairs {
        let k = addr(net, b).and_then(|dst| {
            net.with_ipoib(a, |app, now| app.ping(now, dst))
                .and_then(Result::ok)
        });
        sent.push(k);
    }
    let deadline = net.sim().now() + Duration::from_secs(5);
    let s = sent.clone();
    let p = pairs.to_vec();
    net.run_until_with(deadline, |net| {
        s.iter().zip(&p).all(|(k, &(a, _))| match k {
            Some(k) => net
                .ipoib_app(a)
                .is_some_and(|x| x.ip().pings()[*k].reply_at.is_some()),
            None => true,
        })
    });
    sent.iter()
        .zip(pairs)
        .map(|(k, &(a, _))| {
            let p = net.ipoib_app(a)?.ip().pings().get((*k)?)?;
            Some((p.src, p.dst, p.rtt()))
        })
        .collect()
}

/// Odd hosts join [`GROUP`]; host 0 (not a member) sends one UDP datagram to it; who got it.
fn multicast(net: &mut Subnet) -> McastReport {
    let n = net.host_count();
    let members: Vec<usize> = (1..n).step_by(2).collect();
    let g = IpAddr::V4(GROUP);
    for &m in &members {
        net.with_ipoib(m, |a, _| a.join_group(g));
    }
    let mgid = net
        .interface(0)
        .map(|i| ipv4_mgid(GROUP, i.config().pkey, i.scope()))
        .unwrap_or_default();
    let deadline = net.sim().now() + Duration::from_secs(5);
    let members_c = members.clone();
    let joined = net.run_until_with(deadline, |net| {
        net.is_settled()
            && members_c.iter().all(|&m| {
                net.ipoib_app(m)
                    .is_some_and(|a| a.attached().iter().any(|(x, _)| *x == mgid))
            })
    });
    let sender = 0;
    let payload = format!("hello from {}", name(net, sender));
    let sent = net
        .with_ipoib(sender, |a, _| {
            a.ip_mut()
                .send_udp(GROUP_PORT, g, GROUP_PORT, payload.as_bytes())
        })
        .is_some_and(|r| r.is_ok());
    let deadline = net.sim().now() + Duration::from_millis(100);
    let members_c = members.clone();
    net.run_until_with(deadline, |net| {
        members_c.iter().all(|&m| {
            net.ipoib_app(m)
                .is_some_and(|a| !a.ip().udp_received().is_empty())
        })
    });
    // A little longer, so that a copy to a non-member or a duplicate would show.
    net.sim_mut().run_for(Duration::from_millis(1));
    let received: Vec<(usize, usize)> = (0..n)
        .filter_map(|i| {
            let c = net.ipoib_app(i)?.ip().udp_received().len();
            (c > 0).then_some((i, c))
        })
        .collect();
    let sender_state = net.sa().groups().into_iter().find_map(|x| {
        (x.record.mgid == mgid).then(|| {
            x.members
                .iter()
                .find(|(gid, _)| *gid == net.gid(sender))
                .map(|m| m.1)
        })?
    });
    let mlid = net
        .sa()
        .groups()
        .into_iter()
        .find(|x| x.record.mgid == mgid)
        .map_or(0, |x| x.record.mlid);
    McastReport {
        group: GROUP,
        mgid: mgid.to_string(),
        mlid,
        sender,
        members,
        joined,
        sent,
        received,
        sender_state,
        payload,
    }
}

fn host_line(net: &Subnet, i: usize) -> HostLine {
    let iface = net.interface(i);
    let app = net.ipoib_app(i);
    let v4 = iface.and_then(|x| x.config().ipv4);
    let h = net.host(i);
    let hca = net.host_device(i).hca();
    let ports = (1..=hca.port_count())
        .filter_map(|p| hca.port(p))
        .map(|p| PortLine {
            num: p.num,
            lid: p.lid,
            gid: p.port_gid().to_string(),
            state: format!("{:?}", p.state),
            cabled: net.topology().peer(h.topo_node, p.num).is_some(),
        })
        .collect();
    HostLine {
        port: h.port,
        ports,
        lid: net.lid(i),
        qpn: app.map_or(0, |a| a.qpn()),
        gid: net.gid(i).to_string(),
        hw: iface.map(|x| x.hw_addr().to_string()).unwrap_or_default(),
        ipv4: v4.map(|c| (c.addr, c.prefix_len)),
        ipv6: app.and_then(|a| a.ip().ipv6().first().copied()),
        carrier: app.is_some_and(|a| a.carrier()),
    }
}

/// The IP group an IPoIB MGID stands for (§4), for people.
fn ip_group(mgid: &ipoib_wire::Gid) -> String {
    let Ok(m) = IpoibMgid::parse(mgid) else {
        return "-".into();
    };
    if m.is_broadcast() {
        return "broadcast".into();
    }
    match m.version {
        IpVersion::V4 => m.ipv4_group().map_or("-".into(), |a| a.to_string()),
        IpVersion::V6 => {
            let scope = u128::from(mgid.as_bytes()[1] & 0x0f);
            let low = m.ipv6_group_low80().unwrap_or(0);
            std::net::Ipv6Addr::from((0xff00 | scope) << 112 | low).to_string()
        }
    }
}

fn groups(net: &Subnet) -> Vec<GroupLine> {
    net.sa()
        .groups()
        .into_iter()
        .map(|g| {
            let count = |s: JoinState| g.members.iter().filter(|m| m.1.contains(s)).count();
            GroupLine {
                mgid: g.record.mgid.to_string(),
                ip: ip_group(&g.record.mgid),
                mlid: g.record.mlid,
                pkey: g.record.p_key,
                qkey: g.record.q_key,
                mtu: g.record.mtu.bytes().unwrap_or(0),
                full: count(JoinState::FULL_MEMBER),
                send_only: count(JoinState::SEND_ONLY_NON_MEMBER),
                members: g.members.len(),
                well_known: g.well_known,
            }
        })
        .collect()
}

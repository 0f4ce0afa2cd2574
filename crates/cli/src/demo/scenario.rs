//! The demonstration itself, phase by phase ([`Phase`]): bring-up, IPv4 pings, IPv6 pings,
//! multicast; then, when asked for, the bulk transfers (in connected mode, the switch of the
//! sender back to datagram mode between them). What each phase finds goes into [`Found`] as soon
//! as it is known, so that a run stopped by a signal still reports everything up to the moment it
//! stopped.

use super::bulk::{self, BulkReport};
use super::connected::{self, ConnLine};
use super::drive::{Driver, Interrupted, Meter, Phase};
use super::report::{
    ConnectedReport, GroupLine, HostLine, McastReport, PingLine, PortLine, Report, ResLine, Rtt,
    SwitchReport,
};
use super::{ping_pairs, Plan, GROUP, GROUP_PORT};
use ipoib_fabric::node::ipoib::{FrameStats, Resolution};
use ipoib_fabric::node::subnet::Subnet;
use ipoib_fabric::Instant;
use ipoib_proto::ipoib::{ConnState, Mode};
use ipoib_wire::ib::lid::{LID_MULTICAST_FIRST, LID_MULTICAST_LAST};
use ipoib_wire::ipoib::mcast::{ipv4_mgid, IpVersion, IpoibMgid};
use ipoib_wire::sa::JoinState;
use ipoib_wire::Gid;
use std::collections::BTreeMap;
use std::net::IpAddr;
use std::time::Duration;

/// One ping of a round: source and destination address and the round-trip time (`None`: no
/// reply); `None` for the whole ping when the source had no address to send from.
type Sample = Option<(IpAddr, IpAddr, Option<Duration>)>;

/// What the phases found so far.
#[derive(Default)]
pub struct Found {
    /// Every host got carrier (and the SM wrote the trees) before the bring-up deadline.
    up: Option<bool>,
    /// At the end of the bring-up: hosts with carrier, and when the last one got it.
    carrier: Option<(usize, Option<Duration>)>,
    pairs: Vec<(usize, usize)>,
    sampled: bool,
    v4_first: Option<Vec<Sample>>,
    v4_then: Option<Vec<Sample>>,
    v6_ready: Option<bool>,
    v6_first: Option<Vec<Sample>>,
    v6_then: Option<Vec<Sample>>,
    mcast: Option<McastReport>,
    /// Connected mode: every host's connections after the connected-mode bulk transfer (or after
    /// the multicast test, without one).
    conns: Option<Vec<ConnLine>>,
    bulk_connected: Option<BulkReport>,
    switch: Option<SwitchReport>,
    bulk_datagram: Option<BulkReport>,
}

/// Runs the demonstration, filling `found` as it goes; stops at the first interruption.
pub fn run(
    net: &mut Subnet,
    drv: &mut Driver,
    plan: &Plan,
    found: &mut Found,
) -> Result<(), Interrupted> {
    let n = net.host_count();
    // 1. Bring-up: the SM configures the fabric, every interface joins the broadcast group (§5).
    drv.phase(Phase::BringUp);
    found.up = Some(drv.run_until_joined(net, Instant::ZERO + Duration::from_secs(30))?);
    found.carrier = Some(carrier(net));
    // 2. IPv4: ARP (§9.2) and PathRecords triggered by the first ping of each pair.
    (found.pairs, found.sampled) = ping_pairs(n);
    let pairs = found.pairs.clone();
    drv.phase(Phase::Ipv4First);
    ping_round(net, drv, &pairs, false, &mut found.v4_first)?;
    drv.phase(Phase::Ipv4Then);
    ping_round(net, drv, &pairs, false, &mut found.v4_then)?;
    // 3. IPv6: link-local addresses after DAD (§8), ND (§9.3).
    drv.phase(Phase::Ipv6Dad);
    let deadline = net.sim().now() + Duration::from_secs(5);
    let ready =
        |net: &Subnet, i: usize| net.ipoib_app(i).is_some_and(|a| !a.ip().ipv6().is_empty());
    let meter: Meter<'_> = &|net| {
        let k = (0..n).filter(|&i| ready(net, i)).count();
        (k, n, "IPv6 link-local addresses usable")
    };
    let done = |net: &Subnet| (0..n).all(|i| ready(net, i));
    found.v6_ready = Some(drv.run_until_with(net, deadline, done, meter)?);
    drv.phase(Phase::Ipv6First);
    ping_round(net, drv, &pairs, true, &mut found.v6_first)?;
    drv.phase(Phase::Ipv6Then);
    ping_round(net, drv, &pairs, true, &mut found.v6_then)?;
    // 4. Multicast (§11): odd hosts join 239.1.1.1, host 0 sends without being a member.
    if n >= 2 {
        drv.phase(Phase::Multicast);
        found.mcast = Some(multicast(net, drv)?);
    }
    // 5. Bulk transfers from host 0 to host 1, with the capture off (tens of thousands of
    // packets of 2 KiB each would swell the pcap): in connected mode over RC (RFC 4755), then,
    // host 0 switched back to datagram mode (its connections released, §3.4), over UD.
    let bulk = plan.bulk_bytes().filter(|&b| b > 0 && n >= 2);
    if let (true, Some(bytes)) = (plan.connected, bulk) {
        drv.pause_capture(net);
        drv.phase(Phase::BulkConnected);
        bulk::run(net, drv, (0, 1), bytes, &mut found.bulk_connected)?;
    }
    if plan.connected {
        found.conns = Some(connected::connections(net));
    }
    if let Some(bytes) = bulk {
        if plan.connected {
            drv.resume_capture(net);
            drv.phase(Phase::ModeSwitch);
            mode_switch(net, drv, 0, &mut found.switch)?;
        }
        drv.pause_capture(net);
        drv.phase(Phase::BulkDatagram);
        bulk::run(net, drv, (0, 1), bytes, &mut found.bulk_datagram)?;
        drv.resume_capture(net);
    }
    Ok(())
}

/// Host `a` goes back to datagram mode (Linux: `echo datagram > /sys/class/net/ib0/mode`): the
/// connections it sends on are released with DREQ and DREP (RFC 4755 §3.4; IBA 1 §12.9.8); the
/// capture is on, so they show in it. Runs until every peer holds each of them closing or gone.
fn mode_switch(
    net: &mut Subnet,
    drv: &mut Driver,
    a: usize,
    out: &mut Option<SwitchReport>,
) -> Result<(), Interrupted> {
    let mtu = |net: &Subnet| net.interface(a).map_or(0, |i| i.mtu());
    let before = mtu(net);
    let n = net.host_count();
    let by_gid: BTreeMap<Gid, usize> = (0..n).map(|i| (net.gid(i), i)).collect();
    let gid_a = net.gid(a);
    // The peer host and our QPNs of each connection `a` sends on.
    let ours: Vec<(Option<usize>, (u32, u32))> = net
        .interface(a)
        .map(|i| i.connections())
        .unwrap_or_default()
        .into_iter()
        .filter(|c| c.active && c.state != ConnState::Closing)
        .filter_map(|c| Some((by_gid.get(&c.peer.gid).copied(), c.qpns?)))
        .collect();
    let switched = net
        .with_interface(a, |i, now| i.set_mode(now, Mode::Datagram))
        .is_some_and(|r| r.is_ok());
    // The peer's end of a released connection: to `a`, with the QPNs the other way round (QPNs
    // alone repeat from host to host).
    let closed = |net: &Subnet, peer: Option<usize>, (q, p): (u32, u32)| {
        let Some(theirs) = peer.and_then(|i| net.interface(i)) else {
            return true;
        };
        !theirs
            .connections()
            .iter()
            .any(|c| c.peer.gid == gid_a && c.qpns == Some((p, q)) && c.state != ConnState::Closing)
    };
    let total = ours.len();
    let meter: Meter<'_> = &|net| {
        let k = ours.iter().filter(|&&(i, q)| closed(net, i, q)).count();
        (k, total, "released connections closed at the peer")
    };
    let deadline = net.sim().now() + Duration::from_millis(100);
    let done = |net: &Subnet| ours.iter().all(|&(i, q)| closed(net, i, q));
    let settled = drv.run_until_with(net, deadline, done, meter)?;
    // A little longer, so that the DREPs land.
    let until = net.sim().now() + Duration::from_micros(100);
    drv.run_until(net, until, meter)?;
    *out = Some(SwitchReport {
        host: a,
        switched,
        released: total,
        settled,
        mtu_before: before,
        mtu_after: mtu(net),
    });
    Ok(())
}

/// One ping per pair, all sent at the same virtual instant; runs until every one is answered or
/// 5 s passed (ARP and ND give up after three solicitations a second apart). What the senders
/// have so far goes into `out`, also when the run is interrupted.
fn ping_round(
    net: &mut Subnet,
    drv: &mut Driver,
    pairs: &[(usize, usize)],
    v6: bool,
    out: &mut Option<Vec<Sample>>,
) -> Result<(), Interrupted> {
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
    let answered = |net: &Subnet, k: &Option<usize>, a: usize| match k {
        Some(k) => net
            .ipoib_app(a)
            .is_some_and(|x| x.ip().pings()[*k].reply_at.is_some()),
        None => true,
    };
    let done = |net: &Subnet| {
        sent.iter()
            .zip(pairs)
            .all(|(k, &(a, _))| answered(net, k, a))
    };
    let meter: Meter<'_> = &|net| {
        let k = sent
            .iter()
            .zip(pairs)
            .filter(|(k, &(a, _))| answered(net, k, a))
            .count();
        (k, pairs.len(), "pings answered")
    };
    let r = drv.run_until_with(net, deadline, done, meter);
    *out = Some(
        sent.iter()
            .zip(pairs)
            .map(|(k, &(a, _))| {
                let p = net.ipoib_app(a)?.ip().pings().get((*k)?)?;
                Some((p.src, p.dst, p.rtt()))
            })
            .collect(),
    );
    r.map(|_| ())
}

/// Odd hosts join [`GROUP`]; host 0 (not a member) sends one UDP datagram to it; who got it.
fn multicast(net: &mut Subnet, drv: &mut Driver) -> Result<McastReport, Interrupted> {
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
    let attached = |net: &Subnet, m: usize| {
        net.ipoib_app(m)
            .is_some_and(|a| a.attached().iter().any(|(x, _)| *x == mgid))
    };
    let meter: Meter<'_> = &|net| {
        let k = members.iter().filter(|&&m| attached(net, m)).count();
        (k, members.len(), "members joined")
    };
    let done = |net: &Subnet| net.is_settled() && members.iter().all(|&m| attached(net, m));
    let joined = drv.run_until_with(net, deadline, done, meter)?;
    let sender = 0;
    let payload = format!("hello from {}", name(net, sender));
    let sent = net
        .with_ipoib(sender, |a, _| {
            a.ip_mut()
                .send_udp(GROUP_PORT, g, GROUP_PORT, payload.as_bytes())
        })
        .is_some_and(|r| r.is_ok());
    let deadline = net.sim().now() + Duration::from_millis(100);
    let got = |net: &Subnet, m: usize| {
        net.ipoib_app(m)
            .is_some_and(|a| !a.ip().udp_received().is_empty())
    };
    let meter: Meter<'_> = &|net| {
        let k = members.iter().filter(|&&m| got(net, m)).count();
        (k, members.len(), "members reached")
    };
    let done = |net: &Subnet| members.iter().all(|&m| got(net, m));
    drv.run_until_with(net, deadline, done, meter)?;
    // A little longer, so that a copy to a non-member or a duplicate would show.
    let until = net.sim().now() + Duration::from_millis(1);
    drv.run_until(net, until, meter)?;
    let received: Vec<(usize, usize)> = (0..n)
        .filter_map(|i| {
            let c = net.ipoib_app(i)?.ip().udp_received().len();
            (c > 0).then_some((i, c))
        })
        .collect();
    let group = net
        .sa()
        .groups()
        .into_iter()
        .find(|x| x.record.mgid == mgid);
    let sender_gid = net.gid(sender);
    let sender_state = group
        .as_ref()
        .and_then(|x| x.members.iter().find(|(gid, _)| *gid == sender_gid))
        .map(|m| m.1);
    Ok(McastReport {
        group: GROUP,
        mgid: mgid.to_string(),
        mlid: group.map_or(0, |x| x.record.mlid),
        sender,
        members,
        joined,
        sent,
        received,
        sender_state,
        payload,
    })
}

/// Hosts with carrier, and when the last of them got it.
fn carrier(net: &Subnet) -> (usize, Option<Duration>) {
    let at = (0..net.host_count())
        .filter_map(|i| net.ipoib_app(i).and_then(|a| a.carrier_up_at()))
        .max()
        .map(|t| t - Instant::ZERO);
    (net.carrier_count(), at)
}

fn name(net: &Subnet, i: usize) -> String {
    net.topology().nodes()[net.host(i).topo_node].name.clone()
}

fn ping_lines(
    pairs: &[(usize, usize)],
    first: Option<&Vec<Sample>>,
    then: Option<&Vec<Sample>>,
) -> Option<Vec<PingLine>> {
    let first = first?;
    let rtt = |s: Option<&Sample>| match s {
        None => Rtt::NotRun,
        Some(s) => s.and_then(|x| x.2).map_or(Rtt::NoReply, Rtt::Reply),
    };
    Some(
        pairs
            .iter()
            .enumerate()
            .map(|(i, &(a, b))| PingLine {
                from: a,
                to: b,
                addrs: first[i].map(|x| (x.0, x.1)),
                first: rtt(first.get(i)),
                then: rtt(then.and_then(|t| t.get(i))),
            })
            .collect(),
    )
}

/// The report of what `found` holds; `stopped` when a signal cut the run short.
pub fn report(net: &Subnet, plan: &Plan, found: &Found, stopped: Option<Interrupted>) -> Report {
    let n = net.host_count();
    // A phase's verdict counts only once the phase is over.
    let over = |p: Phase| match stopped {
        Some(s) => s.phase > p,
        None => true,
    };
    let mut failures = Vec::new();
    let (carrier, carrier_at) = found.carrier.unwrap_or_else(|| carrier(net));
    if found.up == Some(false) {
        failures.push(format!("only {carrier} of {n} hosts got carrier"));
        let down: Vec<usize> = (0..n)
            .filter(|&i| !net.ipoib_app(i).is_some_and(|a| a.carrier()))
            .collect();
        failures.extend(crate::why::host_lines(net, &down));
        failures.extend(crate::why::unreached(net));
        failures.extend(crate::why::behind_ca(net));
    }
    if found.v6_ready == Some(false) {
        failures.push("some IPv6 link-local address never became usable".into());
    }
    let v4 = ping_lines(
        &found.pairs,
        found.v4_first.as_ref(),
        found.v4_then.as_ref(),
    );
    let v6 = ping_lines(
        &found.pairs,
        found.v6_first.as_ref(),
        found.v6_then.as_ref(),
    );
    for (fam, list, last) in [
        ("IPv4", &v4, Phase::Ipv4Then),
        ("IPv6", &v6, Phase::Ipv6Then),
    ] {
        let Some(list) = list.as_ref().filter(|_| over(last)) else {
            continue;
        };
        let lost = list.iter().filter(|p| !p.answered()).count();
        if lost > 0 {
            failures.push(format!(
                "{lost} of {} {fam} ping pairs unanswered",
                list.len()
            ));
        }
    }
    if let Some(m) = &found.mcast {
        if !m.ok() {
            failures.push("the multicast datagram did not reach exactly the members".into());
        }
    }
    let no_mlid = net.sa().stats().no_mlid;
    if no_mlid > 0 {
        failures.push(format!(
            "the SA refused {no_mlid} group joins for lack of a multicast LID: all {} \
             (0x{LID_MULTICAST_FIRST:04x}-0x{LID_MULTICAST_LAST:04x}) are in use, and every IPv6 \
             host makes a group of its own, its solicited-node group (RFC 4291 §2.7.1)",
            LID_MULTICAST_LAST - LID_MULTICAST_FIRST + 1
        ));
    }
    let bulk: Vec<BulkReport> = [&found.bulk_connected, &found.bulk_datagram]
        .into_iter()
        .flatten()
        .cloned()
        .collect();
    for b in &bulk {
        let phase = match b.mode {
            Mode::Connected => Phase::BulkConnected,
            Mode::Datagram => Phase::BulkDatagram,
        };
        if over(phase) && !b.ok() {
            failures.push(format!(
                "the {} bulk transfer {} -> {} delivered {} of {} datagrams ({} of {} bytes)",
                super::report::mode_name(b.mode),
                name(net, b.from),
                name(net, b.to),
                b.delivered,
                b.datagrams,
                b.bytes_delivered,
                b.bytes
            ));
        }
    }
    let connected = plan.connected.then(|| {
        let conns = found
            .conns
            .clone()
            .unwrap_or_else(|| connected::connections(net));
        if let Some(b) = found.bulk_connected.as_ref().filter(|b| b.ok()) {
            // RFC 4755: unicast goes over the connection; every bulk datagram must have.
            let carried = conns
                .iter()
                .filter(|c| c.host == b.from && c.peer == Some(b.to) && c.sends)
                .map(|c| c.tx_packets)
                .sum::<u64>();
            if carried < b.datagrams {
                failures.push(format!(
                    "the connected-mode bulk transfer went over UD: its connection carried {carried} of {} datagrams",
                    b.datagrams
                ));
            }
        }
        if let Some(s) = found.switch.as_ref().filter(|_| over(Phase::ModeSwitch)) {
            if !s.switched || !s.settled {
                failures.push(format!(
                    "{} did not release its connections on going to datagram mode",
                    name(net, s.host)
                ));
            }
        }
        ConnectedReport {
            conns,
            mtu: (0..n)
                .filter_map(|i| net.interface(i))
                .find(|i| i.mode() == Mode::Connected)
                .map_or(0, |i| i.mtu()),
            ud_mtu: net.interface(0).map_or(0, |i| i.ud_mtu()),
            switch: found.switch.clone(),
            tally: None,
        }
    });
    let mut totals = FrameStats::default();
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
    Report {
        names: (0..n).map(|i| name(net, i)).collect(),
        hosts: (0..n).map(|i| host_line(net, i)).collect(),
        carrier,
        carrier_at,
        announced: net
            .interface(0)
            .is_some_and(|i| i.config().arp_notify && i.config().ipv4.is_some()),
        bcast: net
            .interface(0)
            .and_then(|i| i.link_params())
            .map(|p| (p.record, p.mtu)),
        sm_lid: net.lid(0),
        resolutions: resolutions(net),
        totals,
        paths,
        pairs_total: n * n.saturating_sub(1),
        sampled: found.sampled,
        v4,
        v6,
        mcast: found.mcast.clone(),
        groups: groups(net),
        connected,
        bulk,
        failures,
        stopped,
        packets: 0,
        packets_skipped: 0,
        capture_error: None,
        sim_end: net.sim().now() - Instant::ZERO,
        wall: Duration::ZERO,
        peak_kib: None,
    }
}

/// The first time each host learned each address, in time order; later confirmations (a
/// unicast probe of an entry learned from a request, RFC 4861 §7.3.3 as Linux applies it to
/// ARP) are counted in the totals only.
fn resolutions(net: &Subnet) -> Vec<ResLine> {
    let mut v: Vec<ResLine> = (0..net.host_count())
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
    v.sort_by_key(|r| (r.at, r.host));
    let mut seen = std::collections::BTreeSet::new();
    v.retain(|r| seen.insert((r.host, r.ip)));
    v
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

/// The IP group an IPoIB MGID stands for (§4; a legacy FF1y:3333:: MGID,
/// draft-kashyap-ipoib-ipv6-01 §4.1, gives its group with the 16 bits the mapping drops as zero),
/// for people.
fn ip_group(mgid: &ipoib_wire::Gid) -> String {
    let Ok(m) = IpoibMgid::parse(mgid) else {
        return ipoib_wire::ipoib::legacy::legacy_ipv6_group(mgid)
            .map_or("-".into(), |g| g.to_string());
    };
    if m.is_broadcast() {
        return "broadcast".into();
    }
    match m.version {
        IpVersion::V4 => m.ipv4_group().map_or("-".into(), |a| a.to_string()),
        IpVersion::V6 => {
            let scope = u128::from(u8::from(m.scope));
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
                pkey: g.record.pkey,
                qkey: g.record.qkey,
                mtu: g.record.mtu.bytes().unwrap_or(0),
                full: count(JoinState::FULL_MEMBER),
                send_only: count(JoinState::SEND_ONLY_NON_MEMBER),
                members: g.members.len(),
                well_known: g.well_known,
            }
        })
        .collect()
}

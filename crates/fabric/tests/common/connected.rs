//! IPoIB connected mode (RFC 4755) scenarios: subnets of hosts with connected-mode settings, UDP
//! datagrams between them (tagged ones for counting copies), the connections each host holds,
//! the frames its UD QP carried, and faults: lossy links, a dead QP, a cut link.

use ipoib_fabric::hw::hca::ModifyQp;
use ipoib_fabric::hw::link::{Fault, LinkId};
use ipoib_fabric::hw::sim::PortRef;
use ipoib_fabric::hw::topology::Topology;
use ipoib_fabric::node::host::Host;
use ipoib_fabric::node::ipoib::IpoibApp;
use ipoib_fabric::node::subnet::Subnet;
use ipoib_fabric::testing::*;
use ipoib_proto::ipoib::{
    ConnState, ConnectedConfig, ConnectionInfo, DropReason, InterfaceConfig, Mode,
};
use ipoib_wire::ipoib::{HwAddr, HwAddrFlags};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

/// Every host in connected mode with [`ConnectedConfig::rc`].
pub fn connected(_i: usize, c: &mut InterfaceConfig) {
    c.connected = Some(ConnectedConfig::rc());
}

/// `n` hosts on one switch, configured by `configure`, up (carrier on every host).
pub fn net(n: usize, seed: u64, configure: fn(usize, &mut InterfaceConfig)) -> Subnet {
    let mut o = options(Topology::single_switch(n).unwrap(), seed);
    if let Some(i) = o.ipoib.as_mut() {
        i.configure = Some(configure);
    }
    up(o, false)
}

/// Host `a` sends `len` bytes of UDP payload (bytes 0, 1, 2, ...) to host `b`.
pub fn udp(net: &mut Subnet, a: usize, b: usize, len: usize) {
    let dst = v4(net, b);
    let payload: Vec<u8> = (0..len).map(|i| i as u8).collect();
    net.with_ipoib(a, |app, _| app.ip_mut().send_udp(4000, dst, 5000, &payload))
        .expect("host")
        .expect("sent");
}

/// Runs the subnet for `d` of virtual time.
pub fn run(net: &mut Subnet, d: Duration) {
    let deadline = net.sim().now() + d;
    net.run_until_with(deadline, |_| false);
}

/// Datagram mode at first; every host pings every other over UD (neighbours and paths
/// resolved), then connected mode is switched on wherever it is configured (a datagram-only
/// host stays as it is).
pub fn resolved_then_connected(
    n: usize,
    seed: u64,
    configure: fn(usize, &mut InterfaceConfig),
) -> Subnet {
    let mut net = net(n, seed, configure);
    for i in 0..n {
        net.with_interface(i, |f, now| f.set_mode(now, Mode::Datagram).unwrap());
    }
    let sent = ping_pairs(&mut net, &all_pairs(n), v4, Duration::from_secs(2));
    assert!(
        sent.iter().all(|&s| rtt(&net, s).is_some()),
        "pings over UD"
    );
    for i in 0..n {
        assert!(net.interface(i).unwrap().connections().is_empty());
        if net.interface(i).unwrap().config().connected.is_some() {
            net.with_interface(i, |f, now| f.set_mode(now, Mode::Connected).unwrap());
        }
    }
    net
}

/// The established connections of host `i`: (active, sends).
pub fn up_conns(net: &Subnet, i: usize) -> Vec<(bool, bool)> {
    net.interface(i)
        .unwrap()
        .connections()
        .iter()
        .filter(|c| c.state == ConnState::Up)
        .map(|c| (c.active, c.sends))
        .collect()
}

/// UDP payload bytes of an IPv4 packet of `ip_len` bytes (20-byte header, 8-byte UDP header).
pub fn payload_for(ip_len: usize) -> usize {
    ip_len - 28
}

/// Host `i`'s interface drops for `r`.
pub fn drops(net: &Subnet, i: usize, r: DropReason) -> u64 {
    net.interface(i).unwrap().counters().dropped(r)
}

/// Host `i`'s connections to host `peer`.
pub fn conns_to(net: &Subnet, i: usize, peer: usize) -> Vec<ConnectionInfo> {
    let gid = net.gid(peer);
    net.interface(i)
        .unwrap()
        .connections()
        .into_iter()
        .filter(|c| c.peer.gid == gid)
        .collect()
}

/// The connection host `i` sends to host `peer` on, if one is up: its own (active) before the
/// one the crossing rule made it accept, as the interface picks them.
pub fn sending_to(net: &Subnet, i: usize, peer: usize) -> Option<ConnectionInfo> {
    let mut up: Vec<ConnectionInfo> = conns_to(net, i, peer)
        .into_iter()
        .filter(|c| c.sends && c.state == ConnState::Up)
        .collect();
    up.sort_by_key(|c| !c.active);
    up.into_iter().next()
}

/// IPv4 frames host `i`'s UD QP received.
pub fn ud_rx_v4(net: &Subnet, i: usize) -> u64 {
    app(net, i).rx_stats().ipv4
}

/// IPv4 frames host `i`'s UD QP sent.
pub fn ud_tx_v4(net: &Subnet, i: usize) -> u64 {
    app(net, i).tx_stats().ipv4
}

/// UDP datagrams host `i` received.
pub fn udp_count(net: &Subnet, i: usize) -> usize {
    app(net, i).ip().udp_received().len()
}

/// Connected mode with a one-hour idle timeout (no connection goes idle in a test).
pub fn long_idle(_i: usize, c: &mut InterfaceConfig) {
    let mut cc = ConnectedConfig::rc();
    cc.idle_timeout = Duration::from_secs(3600);
    c.connected = Some(cc);
}

/// Moves host `i`'s QP `qpn` to Error through its HCA, as a crash of the peer's driver would:
/// no DREQ, the peer's CM still holds the connection.
pub fn kill_qp(net: &mut Subnet, i: usize, qpn: u32) {
    let node = net.host(i).node;
    net.sim_mut()
        .with_node::<Host, _>(node, |h, _, _| h.hca_mut().modify_qp(qpn, ModifyQp::Error))
        .expect("a host")
        .expect("QP moved to Error");
}

/// Host `i`'s link (to its switch port).
pub fn link_of(net: &Subnet, i: usize) -> LinkId {
    let node = net.host(i).node;
    let port = net.host(i).port;
    net.sim().link_of(PortRef { node, port }).unwrap()
}

/// The host of `0..2` with the numerically smaller link-layer address, flags zeroed (RFC 4755
/// §3.3 note).
pub fn smaller_of_two(net: &Subnet) -> usize {
    (0..2)
        .min_by_key(|&i| {
            let h = net.interface(i).unwrap().hw_addr();
            HwAddr::new(HwAddrFlags::NONE, h.qpn, h.gid).to_bytes()
        })
        .unwrap()
}

/// A tagged datagram from `a` to `b`: 3,000 bytes of UDP payload (more than the UD MTU, so it can
/// only ever travel on a connection), starting with the tag, `a` and `b`.
pub fn tagged(net: &mut Subnet, a: usize, b: usize, tag: u32) {
    let dst = v4(net, b);
    let mut payload = vec![0u8; 3000];
    payload[..4].copy_from_slice(&tag.to_be_bytes());
    payload[4] = a as u8;
    payload[5] = b as u8;
    net.with_ipoib(a, |app, _| app.ip_mut().send_udp(4000, dst, 5000, &payload))
        .expect("host")
        .expect("sent");
}

/// Tagged datagrams host `i` received: tag → (copies, from, to).
pub fn tags_received(app: &IpoibApp) -> BTreeMap<u32, (usize, u8, u8)> {
    let mut out: BTreeMap<u32, (usize, u8, u8)> = BTreeMap::new();
    for d in app.ip().udp_received() {
        let Some(t) = d.payload.get(..4) else {
            continue;
        };
        let tag = u32::from_be_bytes([t[0], t[1], t[2], t[3]]);
        out.entry(tag).or_insert((0, d.payload[4], d.payload[5])).0 += 1;
    }
    out
}

/// Pairs `(a, b)` of `0..n` where `a` has no Up connection to send to `b` on.
pub fn unconnected(net: &Subnet, n: usize) -> Vec<(usize, usize)> {
    all_pairs(n)
        .into_iter()
        .filter(|&(a, b)| sending_to(net, a, b).is_none())
        .collect()
}

/// Rounds of 3 s: every pair sends a tagged datagram in the first `all_rounds`, then only the
/// pairs not connected, until every pair is connected at once or 40 rounds passed. Every 100 ms
/// the pairs with a connection up are added to `seen` (a connection that fails lasts at least a
/// local ACK timeout, about 2 s, so none is missed). Returns the rounds.
pub fn send_until_connected(
    net: &mut Subnet,
    n: usize,
    tag: &mut u32,
    all_rounds: usize,
    seen: &mut BTreeSet<(usize, usize)>,
) -> usize {
    let mut rounds = 0;
    loop {
        let m = unconnected(net, n);
        if m.is_empty() || rounds == 40 {
            return rounds;
        }
        for (a, b) in all_pairs(n) {
            if rounds < all_rounds || m.contains(&(a, b)) {
                *tag += 1;
                tagged(net, a, b, *tag);
            }
        }
        for _ in 0..30 {
            run(net, Duration::from_millis(100));
            let m = unconnected(net, n);
            seen.extend(all_pairs(n).into_iter().filter(|p| !m.contains(p)));
        }
        rounds += 1;
    }
}

/// Puts `faults` on both directions of every link.
pub fn set_faults(net: &mut Subnet, faults: &[Fault]) {
    for l in net.built().links.clone() {
        net.sim_mut().set_faults(l, None, faults.to_vec());
    }
}

/// Connection sends refused or completed in error, over hosts `0..n`.
pub fn send_errors(net: &Subnet, n: usize) -> u64 {
    (0..n)
        .map(|i| app(net, i).conn_counters().unwrap().send_errors)
        .sum()
}

/// Takes the events host `i`'s CM agent still holds once its users have taken theirs: events no
/// user claims stay there for good.
pub fn unclaimed_cm_events(net: &mut Subnet, i: usize) -> Vec<ipoib_proto::cm::CmEvent> {
    let node = net.host(i).node;
    net.sim_mut()
        .with_node::<Host, _>(node, |h, _, _| {
            let id = h.class_server(ipoib_wire::mad::MgmtClass::ComMgt)?;
            let cm = h.agent_mut::<ipoib_proto::cm::Cm>(id)?;
            Some(std::iter::from_fn(|| cm.poll_event()).collect())
        })
        .flatten()
        .unwrap_or_default()
}

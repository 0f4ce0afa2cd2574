//! A subnet whose hosts run IPoIB, brought up; pings between pairs of hosts, run until answered.

use crate::hw::topology::Topology;
use crate::node::ipoib::IpoibApp;
use crate::node::subnet::{IpoibOptions, Subnet, SubnetOptions};
use ipoib_wire::ipoib::{IpPayload, IpProtocol, Ipv4Datagram, Ipv4Repr, UdpRepr};
use std::net::{IpAddr, Ipv4Addr};
use std::time::Duration;

/// Options for `topo` with IPoIB on every host (10.0.0.0/8, IPv6 on), capture on.
pub fn options(topo: Topology, seed: u64) -> SubnetOptions {
    let mut o = SubnetOptions::new(topo, seed);
    o.ipoib = Some(IpoibOptions::default());
    o.capture = true;
    o
}

/// Builds the subnet and runs until every interface has carrier (and, with `v6`, every
/// link-local address passed DAD).
pub fn up(opts: SubnetOptions, v6: bool) -> Subnet {
    let mut net = Subnet::build(opts).unwrap();
    let deadline = net.sim().now() + Duration::from_secs(10);
    assert!(net.run_until_joined(deadline), "carrier on every host");
    if v6 {
        let deadline = net.sim().now() + Duration::from_secs(5);
        assert!(net.run_until_ipv6_ready(deadline), "IPv6 link-local ready");
    }
    net
}

/// Runs the subnet `d` on from now.
pub fn run_for(net: &mut Subnet, d: Duration) {
    let deadline = net.sim().now() + d;
    net.run_until_with(deadline, |_| false);
}

/// Hands the IP packet `p` from host `i`'s operating system to its interface.
pub fn from_os(net: &mut Subnet, i: usize, p: &[u8]) {
    net.with_ipoib(i, |a, now| a.from_os(now, p)).expect("host");
}

/// The IP packets host `i`'s interface has for its operating system, taken.
pub fn to_os(net: &mut Subnet, i: usize) -> Vec<Vec<u8>> {
    net.with_ipoib(i, |a, _| std::iter::from_fn(|| a.to_os()).collect())
        .expect("host")
}

/// Host `i`'s adapter.
pub fn app(net: &Subnet, i: usize) -> &IpoibApp {
    net.ipoib_app(i).expect("IPoIB host")
}

/// Host `i`'s IPv4 address.
pub fn v4(net: &Subnet, i: usize) -> IpAddr {
    IpAddr::V4(app(net, i).ip().ipv4().expect("IPv4"))
}

/// Host `i`'s IPv6 link-local address.
pub fn v6(net: &Subnet, i: usize) -> IpAddr {
    IpAddr::V6(*app(net, i).ip().ipv6().first().expect("IPv6 ready"))
}

/// One ping sent by [`ping_pairs`]: (from, to, index in the sender's pings).
pub type Sent = (usize, usize, usize);

/// Host `a` pings `addr(b)` for each pair, all at the current time; then runs until every ping
/// is answered or `within` passed. Returns the pings, answered or not.
pub fn ping_pairs(
    net: &mut Subnet,
    pairs: &[(usize, usize)],
    addr: fn(&Subnet, usize) -> IpAddr,
    within: Duration,
) -> Vec<Sent> {
    let mut sent = Vec::new();
    for &(a, b) in pairs {
        let dst = addr(net, b);
        let k = net
            .with_ipoib(a, |app, now| app.ping(now, dst))
            .expect("host")
            .expect("ping sent");
        sent.push((a, b, k));
    }
    let deadline = net.sim().now() + within;
    let s = sent.clone();
    net.run_until_with(deadline, |n| {
        s.iter()
            .all(|&(a, _, k)| app(n, a).ip().pings()[k].reply_at.is_some())
    });
    sent
}

/// The round-trip time of a ping sent by [`ping_pairs`].
pub fn rtt(net: &Subnet, s: Sent) -> Option<Duration> {
    app(net, s.0).ip().pings()[s.2].rtt()
}

/// Every ordered pair of distinct hosts among `0..n`.
pub fn all_pairs(n: usize) -> Vec<(usize, usize)> {
    (0..n)
        .flat_map(|a| (0..n).filter(move |&b| b != a).map(move |b| (a, b)))
        .collect()
}

/// Runs until every host of `hosts` is attached to `mgid` and the SM's trees are in the switches.
pub fn run_until_attached(net: &mut Subnet, hosts: &[usize], mgid: ipoib_wire::Gid) -> bool {
    let deadline = net.sim().now() + Duration::from_secs(5);
    net.run_until_with(deadline, |n| {
        n.is_settled()
            && hosts
                .iter()
                .all(|&h| app(n, h).attached().iter().any(|(g, _)| *g == mgid))
    })
}

/// An IPv4 UDP packet (port 40000 to 5001) as a stack sends it (DF set, checksum).
pub fn udp4(src: Ipv4Addr, dst: Ipv4Addr, ttl: u8, payload: &[u8]) -> Vec<u8> {
    let d = Ipv4Datagram {
        header: Ipv4Repr {
            tos: 0,
            ident: 0x1234,
            dont_frag: true,
            more_frags: false,
            frag_offset: 0,
            ttl,
            protocol: IpProtocol::Udp,
            src_addr: src,
            dst_addr: dst,
            payload_len: 0,
        },
        options: &[],
        payload: IpPayload::Udp(UdpRepr::new(40000, 5001, payload)),
    };
    let mut b = vec![0u8; d.buffer_len()];
    d.emit(&mut b).unwrap();
    b
}

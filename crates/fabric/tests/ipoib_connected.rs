//! IPoIB connected mode (RFC 4755) on the emulated subnet: hosts connect through their CMs, send
//! unicast over RC (or UC) with the connection MTU, and fall back to UD where a connection cannot
//! be had.

use ipoib_fabric::hw::topology::Topology;
use ipoib_fabric::node::subnet::Subnet;
use ipoib_fabric::testing::*;
use ipoib_proto::ipoib::{ConnState, ConnectedConfig, DropReason, InterfaceConfig, Mode};
use std::time::Duration;

fn connected(_i: usize, c: &mut InterfaceConfig) {
    c.connected = Some(ConnectedConfig::rc());
}

fn net(n: usize, seed: u64, configure: fn(usize, &mut InterfaceConfig)) -> Subnet {
    let mut o = options(Topology::single_switch(n).unwrap(), seed);
    if let Some(i) = o.ipoib.as_mut() {
        i.configure = Some(configure);
    }
    up(o, false)
}

fn udp(net: &mut Subnet, a: usize, b: usize, len: usize) {
    let dst = v4(net, b);
    let payload: Vec<u8> = (0..len).map(|i| i as u8).collect();
    net.with_ipoib(a, |app, _| app.ip_mut().send_udp(4000, dst, 5000, &payload))
        .expect("host")
        .expect("sent");
}

fn run(net: &mut Subnet, d: Duration) {
    let deadline = net.sim().now() + d;
    net.run_until_with(deadline, |_| false);
}

// RFC 4755 §3.1 (flags), §3.2 (REQ/REP with private data), §3.5 (service ID), §5.1 (MTU).
#[test]
fn two_hosts_ping_and_carry_60000_bytes_over_rc() {
    let seed = seed(41);
    let _g = SeedGuard(seed);
    let mut net = net(2, seed, connected);
    for i in 0..2 {
        let iface = net.interface(i).unwrap();
        assert!(iface.hw_addr().flags.rc(), "RC flag advertised");
        assert_eq!(iface.mtu(), 65520);
        assert_eq!(iface.ud_mtu(), 2044);
    }
    let sent = ping_pairs(&mut net, &[(0, 1)], v4, Duration::from_secs(2));
    assert!(rtt(&net, sent[0]).is_some(), "ping answered");
    udp(&mut net, 0, 1, 60_000);
    run(&mut net, Duration::from_millis(100));
    let got = app(&net, 1).ip().udp_received();
    assert_eq!(got.len(), 1, "one 60,000-byte datagram, unfragmented");
    assert_eq!(got[0].payload.len(), 60_000);
    let conns = net.interface(0).unwrap().connections();
    let ours: Vec<_> = conns.iter().filter(|c| c.active).collect();
    assert_eq!(ours.len(), 1, "{conns:?}");
    assert_eq!(ours[0].state, ConnState::Up);
    assert_eq!(ours[0].mtu, 65520);
    assert_eq!(ours[0].service_id >> 56, 0x10);
    assert!(ours[0].tx_packets >= 2);
    assert_eq!(app(&net, 0).conn_counters().unwrap(), Default::default());
}

// A 60,000-byte datagram on a datagram-mode interface is too big; connected mode's ICMP
// answer comes back to the sender.
#[test]
fn datagram_mode_answers_too_big() {
    let seed = seed(42);
    let _g = SeedGuard(seed);
    let mut net = net(2, seed, |_, c| {
        let mut cc = ConnectedConfig::rc();
        cc.mode = Mode::Datagram;
        c.connected = Some(cc);
    });
    assert_eq!(net.interface(0).unwrap().mtu(), 2044);
    let sent = ping_pairs(&mut net, &[(0, 1)], v4, Duration::from_secs(2));
    assert!(rtt(&net, sent[0]).is_some(), "ping answered over UD");
    net.with_interface(0, |i, now| i.set_mode(now, Mode::Connected).unwrap());
    assert_eq!(net.interface(0).unwrap().mtu(), 65520);
    net.with_interface(1, |i, now| i.set_mode(now, Mode::Connected).unwrap());
    udp(&mut net, 0, 1, 60_000);
    run(&mut net, Duration::from_millis(100));
    assert_eq!(app(&net, 1).ip().udp_received().len(), 1);
    net.with_interface(0, |i, now| i.set_mode(now, Mode::Datagram).unwrap());
    run(&mut net, Duration::from_millis(100));
    udp(&mut net, 0, 1, 3000);
    run(&mut net, Duration::from_millis(100));
    let c = net.interface(0).unwrap().counters().clone();
    assert!(
        c.dropped(DropReason::TooBig) + c.dropped(DropReason::TooBigForPath) >= 1,
        "{c:?}"
    );
    assert_eq!(app(&net, 1).ip().udp_received().len(), 1);
}

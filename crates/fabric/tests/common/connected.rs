//! IPoIB connected mode (RFC 4755) scenarios: subnets of hosts with connected-mode settings, UDP
//! datagrams between them, and the connections each host holds.

use ipoib_fabric::hw::topology::Topology;
use ipoib_fabric::node::subnet::Subnet;
use ipoib_fabric::testing::*;
use ipoib_proto::ipoib::{ConnState, ConnectedConfig, InterfaceConfig, Mode};
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

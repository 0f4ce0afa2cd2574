//! The host processor model (`IpoibApp::set_stack_cost`): every IP packet of the built-in
//! endpoint costs its host time, sent or received, one packet after another. Round trips grow by
//! the four packet times of a ping; a host that costs time per packet moves more bytes in
//! connected mode (one 65,520-byte packet) than in datagram mode (32 of 2,044 bytes), as RFC 4755
//! §1 gives as the reason for connected mode; and a receiver that cannot keep up drops beyond its
//! backlog and counts every drop.

mod common;

use common::connected::*;
use ipoib_fabric::node::ipoib::{StackCost, RX_BACKLOG};
use ipoib_fabric::node::subnet::Subnet;
use ipoib_fabric::testing::*;
use ipoib_proto::ipoib::{ConnState, InterfaceConfig, Mode};
use std::time::Duration;

fn datagram(_i: usize, _c: &mut InterfaceConfig) {}

fn set_cost(net: &mut Subnet, i: usize, cost: StackCost) {
    net.with_ipoib(i, |a, _| a.set_stack_cost(cost)).unwrap();
}

/// Round trip of a ping from host 0 to host 1 after a first one resolved the neighbour.
fn second_ping_rtt(net: &mut Subnet) -> Duration {
    let first = ping_pairs(net, &[(0, 1)], v4, Duration::from_secs(2));
    assert!(rtt(net, first[0]).is_some(), "first ping answered");
    let second = ping_pairs(net, &[(0, 1)], v4, Duration::from_secs(2));
    rtt(net, second[0]).expect("second ping answered")
}

#[test]
fn each_packet_of_a_ping_costs_its_host() {
    let seed = seed(71);
    let _g = SeedGuard(seed);
    let free = second_ping_rtt(&mut net(2, seed, datagram));
    let mut costly = net(2, seed, datagram);
    let c = Duration::from_micros(3);
    for i in 0..2 {
        set_cost(&mut costly, i, StackCost::per_packet(c));
    }
    let paid = second_ping_rtt(&mut costly);
    // Request sent by 0, received by 1, reply sent by 1, received by 0.
    assert_eq!(paid, free + 4 * c, "free {free:?}, paid {paid:?}");
    let counters = app(&costly, 0).cpu_counters();
    assert!(
        counters.tx_packets >= 2 && counters.rx_packets >= 2,
        "{counters:?}"
    );
    assert_eq!(counters.rx_backlog_drops, 0);
}

/// Simulated time for host 0 to send `n` datagrams of the interface's MTU to host 1, all
/// delivered; (bytes delivered, time from the sends to the last delivery).
fn bulk(net: &mut Subnet, n: usize) -> (u64, Duration) {
    let mtu = net.interface(0).unwrap().mtu() as usize;
    let payload = vec![0x5a; mtu - 28];
    let dst = v4(net, 1);
    net.with_ipoib(1, |a, _| a.ip_mut().take_udp_received());
    let t0 = net.sim().now();
    net.with_ipoib(0, |a, _| {
        for _ in 0..n {
            a.ip_mut().send_udp(9, dst, 9, &payload).unwrap();
        }
    });
    let deadline = t0 + Duration::from_secs(5);
    net.run_until_with(deadline, |net| app(net, 1).ip().udp_received().len() >= n);
    let got = app(net, 1).ip().udp_received();
    assert_eq!(got.len(), n, "every datagram delivered");
    let t = got[n - 1].at.saturating_duration_since(t0);
    ((n * payload.len()) as u64, t)
}

#[test]
fn connected_mode_outpaces_datagram_mode_when_packets_cost_time() {
    let seed = seed(72);
    let _g = SeedGuard(seed);
    let cost = StackCost::per_packet(Duration::from_micros(3));
    let mut net = net(2, seed, connected);
    // Resolve the neighbour over UD, then let connected mode set up its connection.
    let sent = ping_pairs(&mut net, &[(0, 1)], v4, Duration::from_secs(2));
    assert!(rtt(&net, sent[0]).is_some());
    for i in 0..2 {
        set_cost(&mut net, i, cost);
    }
    let mut rates = Vec::new();
    for mode in [Mode::Datagram, Mode::Connected] {
        for i in 0..2 {
            net.with_interface(i, |f, now| f.set_mode(now, mode).unwrap());
        }
        bulk(&mut net, 4); // warm-up: the connection in connected mode
        let (bytes, t) = bulk(&mut net, 256);
        eprintln!(
            "{mode:?} {bytes} {t:?} {:?} {:?}",
            app(&net, 0).cpu_counters(),
            app(&net, 1).cpu_counters()
        );
        rates.push(bytes as f64 / t.as_secs_f64());
    }
    let conns = net.interface(0).unwrap().connections();
    assert!(conns
        .iter()
        .any(|c| c.active && c.state == ConnState::Up && c.mtu == 65520));
    // Datagram mode: the sender's processor limits it to one 2,044-byte packet per 3 µs.
    let per_packet = 2016.0 / 3e-6;
    assert!(
        rates[0] <= per_packet * 1.01 && rates[0] >= per_packet * 0.9,
        "datagram {:.3e} B/s against {per_packet:.3e}",
        rates[0]
    );
    assert!(
        rates[1] >= 4.0 * rates[0],
        "connected {:.3e} B/s, datagram {:.3e} B/s",
        rates[1],
        rates[0]
    );
}

#[test]
fn a_receiver_that_cannot_keep_up_drops_beyond_its_backlog_and_counts() {
    let seed = seed(73);
    let _g = SeedGuard(seed);
    let mut net = net(2, seed, datagram);
    let sent = ping_pairs(&mut net, &[(0, 1)], v4, Duration::from_secs(2));
    assert!(rtt(&net, sent[0]).is_some());
    set_cost(
        &mut net,
        1,
        StackCost::per_packet(Duration::from_micros(100)),
    );
    let before = app(&net, 1).ip().counters().udp_received;
    let n = RX_BACKLOG + 500;
    let dst = v4(&net, 1);
    for _ in 0..n / 50 {
        net.with_ipoib(0, |a, _| {
            for _ in 0..50 {
                a.ip_mut().send_udp(9, dst, 9, &[1; 1000]).unwrap();
            }
        });
        run(&mut net, Duration::from_micros(20));
    }
    run(&mut net, Duration::from_secs(1));
    let received = app(&net, 1).ip().counters().udp_received - before;
    let drops = app(&net, 1).cpu_counters().rx_backlog_drops;
    assert!(drops > 0, "a 100 µs receiver fed every 0.4 µs drops");
    assert!(received >= RX_BACKLOG as u64, "{received}");
    assert_eq!(
        received + drops,
        n as u64,
        "every datagram delivered or counted"
    );
}

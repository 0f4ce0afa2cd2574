//! Connected-mode measurements for docs/benchmarks/connected.md (scripts/bench-connected.sh runs it):
//!
//! 1. bulk: host 0 sends N UDP datagrams of the largest IPv4 packet each mode allows (65,520
//!    bytes connected, 2,044 datagram) to host 1 across one switch, capture off, in batches;
//!    wall time and simulated time from the first send to the last delivery, beside a plain
//!    memcpy of the same bytes (the anchor);
//! 2. setup: H hosts on a fat tree resolve each other over UD, switch to connected mode, and each
//!    sends one datagram to every other: wall time until all H × (H − 1) connections are up.
//!
//!   cargo run --release -p ipoib-runtime --example connected -- [BULK_BYTES] [HOSTS]
//!
//! Defaults: 128 MiB of payload, 100 hosts. Prints one `key value` line per figure.

use ipoib_fabric::hw::topology::Topology;
use ipoib_fabric::node::ipoib::StackCost;
use ipoib_fabric::node::subnet::{Subnet, SubnetOptions};
use ipoib_fabric::testing::*;
use ipoib_proto::ipoib::{ConnState, ConnectedConfig, InterfaceConfig, Mode};
use std::hint::black_box;
use std::time::{Duration, Instant};

/// Datagrams sent before waiting for them to arrive.
const BATCH: usize = 32;

/// Host processor costs per IP packet, in microseconds, of the cost sweep.
const COSTS_US: [f64; 5] = [0.5, 1.0, 2.0, 3.0, 5.0];

fn connected(_i: usize, c: &mut InterfaceConfig) {
    c.connected = Some(ConnectedConfig::rc());
}

fn subnet(topo: Topology, seed: u64) -> Subnet {
    let mut o: SubnetOptions = options(topo, seed);
    o.capture = false;
    if let Some(i) = o.ipoib.as_mut() {
        i.configure = Some(connected);
        i.ipv6 = false;
    }
    up(o, false)
}

struct Bulk {
    bytes: u64,
    wall: Duration,
    sim: Duration,
}

/// Host 0 → host 1, `total` payload bytes in datagrams of the largest packet `mode` allows.
fn bulk(mode: Mode, total: u64, seed: u64, cost: StackCost) -> Bulk {
    let mut net = subnet(Topology::single_switch(2).unwrap(), seed);
    for i in 0..2 {
        net.with_interface(i, |f, now| f.set_mode(now, mode).unwrap());
    }
    let mtu = net.interface(0).unwrap().mtu() as usize;
    let payload = vec![0x5au8; mtu - 28];
    let dst = v4(&net, 1);
    // Warm up: resolution and (connected) the connection, outside the measurement.
    let sent = ping_pairs(&mut net, &[(0, 1)], v4, Duration::from_secs(2));
    assert!(rtt(&net, sent[0]).is_some(), "ping");
    net.with_ipoib(0, |a, _| a.ip_mut().send_udp(9, dst, 9, &payload));
    let deadline = net.sim().now() + Duration::from_secs(1);
    net.run_until_with(deadline, |n| app(n, 1).ip().udp_received().len() == 1);
    net.with_ipoib(1, |a, _| a.ip_mut().take_udp_received());
    for i in 0..2 {
        net.with_ipoib(i, |a, _| a.set_stack_cost(cost));
    }
    let mut last = net.sim().now();
    let n = (total / payload.len() as u64).max(1) as usize;
    let (wall0, sim0) = (Instant::now(), net.sim().now());
    let mut queued = 1;
    while queued < n + 1 {
        let k = BATCH.min(n + 1 - queued);
        net.with_ipoib(0, |a, _| {
            for _ in 0..k {
                a.ip_mut().send_udp(9, dst, 9, &payload).unwrap();
            }
        });
        queued += k;
        // Keep one batch in flight while the next is queued, so the link never idles.
        let target = if queued == n + 1 {
            queued
        } else {
            queued.saturating_sub(BATCH)
        };
        let deadline = net.sim().now() + Duration::from_secs(5);
        let got = |net: &Subnet| app(net, 1).ip().counters().udp_received as usize;
        net.run_until_with(deadline, |net| got(net) >= target);
        assert!(got(&net) >= target, "{mode:?}: every datagram delivered");
        // What arrived is counted, not kept: a long transfer holds no payloads.
        let got = net.with_ipoib(1, |a, _| a.ip_mut().take_udp_received());
        if let Some(r) = got.and_then(|g| g.last().map(|r| r.at)) {
            last = r;
        }
    }
    assert_eq!(app(&net, 1).ip().counters().udp_received as usize, n + 1);
    let wall = wall0.elapsed();
    // To the last delivery: the run loop's slices go past it.
    let sim = last.saturating_duration_since(sim0);
    if mode == Mode::Connected {
        let c = net.interface(0).unwrap().connections();
        assert!(c
            .iter()
            .any(|c| c.active && c.state == ConnState::Up && c.mtu == 65520));
    }
    Bulk {
        bytes: (n * payload.len()) as u64,
        wall,
        sim,
    }
}

fn memcpy(bytes: u64, chunk: usize) -> Duration {
    let src = vec![0xa5u8; chunk];
    let mut dst = vec![0u8; chunk];
    let n = (bytes / chunk as u64).max(1);
    let t = Instant::now();
    for _ in 0..n {
        dst.copy_from_slice(black_box(&src));
        black_box(&mut dst);
    }
    t.elapsed()
}

fn setup(hosts: usize, seed: u64) -> (Duration, usize) {
    let mut net = subnet(Topology::fat_tree(hosts).unwrap(), seed);
    for i in 0..hosts {
        net.with_interface(i, |f, now| f.set_mode(now, Mode::Datagram).unwrap());
    }
    let sent = ping_pairs(&mut net, &all_pairs(hosts), v4, Duration::from_secs(10));
    assert!(sent.iter().all(|&s| rtt(&net, s).is_some()), "UD pings");
    for i in 0..hosts {
        net.with_interface(i, |f, now| f.set_mode(now, Mode::Connected).unwrap());
    }
    eprintln!("setup: connecting");
    // Two waves, so that no two REQs cross (RFC 4755 §3.3 would leave one connection for a
    // crossing pair): first every host to the hosts after it, then to those before it. Each
    // ordered pair then has its own connection, as between Linux hosts: H × (H − 1) in all.
    let t = Instant::now();
    for wave in [true, false] {
        for a in 0..hosts {
            let dsts: Vec<_> = (0..hosts)
                .filter(|&b| if wave { b > a } else { b < a })
                .map(|b| v4(&net, b))
                .collect();
            net.with_ipoib(a, |app, _| {
                for d in dsts {
                    app.ip_mut().send_udp(7, d, 7, b"hello").unwrap();
                }
            });
        }
        let deadline = net.sim().now() + Duration::from_secs(30);
        net.run_until_with(deadline, |n| {
            (0..hosts).all(|i| {
                let want = if wave { i } else { hosts - 1 };
                app(n, i).ip().udp_received().len() == want
            })
        });
    }
    let want = hosts * (hosts - 1);
    let up = |net: &Subnet| -> usize {
        (0..hosts)
            .map(|i| {
                net.interface(i)
                    .unwrap()
                    .connections()
                    .iter()
                    .filter(|c| c.active && c.state == ConnState::Up)
                    .count()
            })
            .sum()
    };
    let wall = t.elapsed();
    let delivered: usize = (0..hosts)
        .map(|i| app(&net, i).ip().udp_received().len())
        .sum();
    assert_eq!(delivered, want, "every datagram of both waves delivered");
    (wall, up(&net))
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let total: u64 = args
        .first()
        .and_then(|s| s.parse().ok())
        .unwrap_or(128 << 20);
    let hosts: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(100);
    let seed = 1;
    let c = bulk(Mode::Connected, total, seed, StackCost::FREE);
    let m = memcpy(c.bytes, 65_520);
    let d = bulk(Mode::Datagram, total.min(16 << 20), seed, StackCost::FREE);
    let gbs = |b: u64, t: Duration| b as f64 / t.as_secs_f64() / 1e9;
    println!("connected_bytes {}", c.bytes);
    println!("connected_wall_s {:.4}", c.wall.as_secs_f64());
    println!("connected_wall_GBps {:.3}", gbs(c.bytes, c.wall));
    println!("memcpy_wall_GBps {:.3}", gbs(c.bytes, m));
    println!("connected_sim_GBps {:.3}", gbs(c.bytes, c.sim));
    println!("datagram_bytes {}", d.bytes);
    println!("datagram_wall_GBps {:.3}", gbs(d.bytes, d.wall));
    println!("datagram_sim_GBps {:.3}", gbs(d.bytes, d.sim));
    println!(
        "connected_over_datagram_sim {:.2}",
        gbs(c.bytes, c.sim) / gbs(d.bytes, d.sim)
    );
    // The same with hosts that spend time on every IP packet (the processor model of
    // `IpoibApp::set_stack_cost`), from a cost below a link packet's time up to several of them.
    for us in COSTS_US {
        let cost = StackCost::per_packet(Duration::from_nanos((us * 1000.0) as u64));
        let c = bulk(Mode::Connected, total.min(32 << 20), seed, cost);
        let d = bulk(Mode::Datagram, total.min(4 << 20), seed, cost);
        println!("cost_{us}us_connected_sim_GBps {:.3}", gbs(c.bytes, c.sim));
        println!("cost_{us}us_datagram_sim_GBps {:.3}", gbs(d.bytes, d.sim));
        println!(
            "cost_{us}us_connected_over_datagram_sim {:.2}",
            gbs(c.bytes, c.sim) / gbs(d.bytes, d.sim)
        );
    }
    let (wall, up) = setup(hosts, seed);
    println!("setup_hosts {hosts}");
    println!("setup_connections {up}");
    println!("setup_wall_s {:.3}", wall.as_secs_f64());
}

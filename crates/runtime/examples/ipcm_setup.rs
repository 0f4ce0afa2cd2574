//! Connection setup by IP address through the RDMA IP CM service (Annex A11), for
//! docs/benchmarks/connected.md (scripts/bench-rping.sh runs it): H hosts on one switch run IPoIB and the
//! service; every host listens on a TCP port; N connections between random pairs of hosts are
//! started at once, each resolving the address (ARP), the path (SA PathRecord, once per pair)
//! and going through REQ, REP and RTU with an RC QP at both ends. Wall time and simulated time
//! from the first connect to the last connection up; then every connection is released.
//!
//!   cargo run --release -p ipoib-runtime --example ipcm_setup -- [CONNECTIONS] [HOSTS]
//!
//! Defaults: 1,000 connections, 10 hosts. Prints one `key value` line per figure.

use ipoib_fabric::hw::topology::Topology;
use ipoib_fabric::node::ipcm::AcceptPolicy;
use ipoib_fabric::testing::ipcm::ipcm_net;
use ipoib_fabric::testing::v4;
use ipoib_proto::ipcm::IpCmEvent;
use ipoib_proto::rng::Rng;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant};

const TCP: u8 = 6;
const PORT: u16 = 7174;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let conns: usize = args.first().and_then(|s| s.parse().ok()).unwrap_or(1000);
    let hosts: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(10);
    let mut n = ipcm_net(Topology::single_switch(hosts).unwrap(), 1, false, |_, c| {
        c.accept = AcceptPolicy::Auto(Vec::new());
        c.recv_depth = 1;
        c.log_keep = 1 << 20;
    });
    for i in 0..hosts {
        n.with_app(i, |a, _| {
            a.listen(TCP, IpAddr::V4(Ipv4Addr::UNSPECIFIED), PORT)
        })
        .unwrap();
    }
    let dsts: Vec<SocketAddr> = (0..hosts)
        .map(|i| SocketAddr::new(v4(&n.net, i), PORT))
        .collect();
    let mut rng = Rng::new(7);
    let pairs: Vec<(usize, usize)> = (0..conns)
        .map(|_| {
            let c = rng.below(hosts as u64) as usize;
            let s = (c + 1 + rng.below(hosts as u64 - 1) as usize) % hosts;
            (c, s)
        })
        .collect();
    let (wall0, sim0) = (Instant::now(), n.net.sim().now());
    for &(c, s) in &pairs {
        n.with_app(c, |a, now| a.connect(now, TCP, dsts[s], None, b""))
            .unwrap();
    }
    // Each connection is up on both sides: 2 × N Established events in all.
    let up = |v: ipoib_fabric::testing::ipcm::View<'_>| -> usize {
        (0..hosts)
            .map(|i| {
                v.app(i)
                    .events()
                    .filter(|(_, e)| matches!(e, IpCmEvent::Established { .. }))
                    .count()
            })
            .sum()
    };
    let all = n.run_until(Duration::from_secs(30), |v| up(v) == 2 * conns);
    let wall = wall0.elapsed();
    let sim = n.net.sim().now().saturating_duration_since(sim0);
    assert!(all, "every connection up");
    let failed: usize = (0..hosts)
        .map(|i| {
            n.app(i)
                .events()
                .filter(|(_, e)| {
                    !matches!(
                        e,
                        IpCmEvent::Established { .. } | IpCmEvent::ConnectRequest { .. }
                    )
                })
                .count()
        })
        .sum();
    let qps: usize = (0..hosts).map(|i| n.rc_qps(i)).sum();
    println!("setup_hosts {hosts}");
    println!("setup_connections {conns}");
    println!("setup_failed_events {failed}");
    println!("setup_rc_qps {qps}");
    println!("setup_wall_s {:.3}", wall.as_secs_f64());
    println!("setup_sim_ms {:.3}", sim.as_secs_f64() * 1e3);
    println!(
        "setup_per_connection_us {:.1}",
        wall.as_secs_f64() * 1e6 / conns as f64
    );
}

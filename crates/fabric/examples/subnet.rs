//! Whole-subnet bring-up with real SA traffic: builds a fat tree (or a single switch, or a net file)
//! of N hosts with [`ipoib_fabric::node::subnet::Subnet`], runs until every host has a LID and joined
//! the IPoIB broadcast group, and prints the wall time, simulated time and counters.
//!
//! `cargo run --release -p ipoib-fabric --example subnet -- [HOSTS] [fat-tree|single-switch|NETFILE] [SEED]`

use ipoib_fabric::hw::topology::Topology;
use ipoib_fabric::node::subnet::{Subnet, SubnetOptions};
use ipoib_fabric::Instant;
use std::time::{Duration, Instant as Wall};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let hosts: usize = args.next().map_or(Ok(1000), |a| a.parse())?;
    let kind = args.next().unwrap_or_else(|| "fat-tree".into());
    let seed: u64 = args.next().map_or(Ok(1), |a| a.parse())?;
    let t0 = Wall::now();
    let topo = match kind.as_str() {
        "fat-tree" => Topology::fat_tree(hosts)?,
        "single-switch" => Topology::single_switch(hosts)?,
        file => Topology::load_net(file)?,
    };
    let mut net = Subnet::build(SubnetOptions::new(topo, seed))?;
    let t_build = t0.elapsed();
    let ok = net.run_until_joined(Instant::ZERO + Duration::from_secs(60));
    let wall = t0.elapsed();
    let last = (0..net.host_count()).filter_map(|i| net.joined_at(i)).max();
    let s = net.sim().stats();
    println!(
        "{kind} {hosts}: joined {}/{} ok={ok}; build {t_build:?}, total wall {wall:?}; last join at {:?} simulated; {} events, {} packets, {} bytes; SM {:?}",
        net.joined_count(),
        net.host_count(),
        last,
        s.events,
        s.packets,
        s.bytes,
        net.sm().stats()
    );
    Ok(())
}

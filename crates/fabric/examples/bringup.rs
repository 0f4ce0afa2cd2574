//! Bring-up computations timed: builds a fat tree (or a single switch) of N hosts and times the
//! subnet manager's brain on it (LIDs and LFTs, the values its SubnSets would carry, the broadcast
//! group's multicast tree, the SA's subnet model). No device is configured: our SM configures a
//! subnet by SMPs (`ipoib sim` times that whole bring-up, docs/benchmarks/subnet.md).
//!
//! `cargo run --release -p ipoib-fabric --example bringup -- [HOSTS] [fat-tree|single-switch|NETFILE]`
//! (default 10000 hosts on a fat tree).

use ipoib_fabric::hw::topology::Topology;
use ipoib_fabric::node::sm::{SmOptions, SubnetManager};
use ipoib_fabric::NodeId;
use std::time::Instant as Wall;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (mut hosts, mut kind) = (10_000usize, "fat-tree".to_string());
    for a in std::env::args().skip(1) {
        match a.parse() {
            Ok(n) => hosts = n,
            Err(_) => kind = a,
        }
    }
    let t0 = Wall::now();
    let topo = match kind.as_str() {
        "fat-tree" => Topology::fat_tree(hosts)?,
        "single-switch" => Topology::single_switch(hosts)?,
        file => Topology::load_net(file)?,
    };
    let t_topo = t0.elapsed();
    let sm_port = topo.first_ca_port().ok_or("no CA port")?;
    let n_nodes = topo.nodes().len();
    let n_links = topo.links().len();
    // The brain's node handles are the topology's indices, as the SM by SMPs gives them.
    let handles = (0..n_nodes).map(NodeId).collect();
    let sm = SubnetManager::new(topo, handles, sm_port, SmOptions::default())?;
    let t_sm = t0.elapsed();
    let n_values = sm.bring_up().len();
    let t_plan = t0.elapsed();
    let lids: Vec<u16> = sm.ca_ports().map(|(l, _)| l).collect();
    let tree = sm.multicast_tree(0xc000, &lids);
    let t_mc = t0.elapsed();
    let model = sm.subnet_model();
    let t_model = t0.elapsed();
    println!(
        "{kind}: {} CAs, {n_nodes} nodes, {n_links} links, {} LIDs, {} CA ports with a LID",
        sm.topology().cas().count(),
        sm.max_lid(),
        lids.len()
    );
    println!(
        "topology {:?}, SM {:?}, plan {n_values} values {:?}, broadcast tree {} switches {:?}, SubnetModel {:?}; total {:?}",
        t_topo,
        t_sm - t_topo,
        t_plan - t_sm,
        tree.len(),
        t_mc - t_plan,
        t_model - t_mc,
        t_model
    );
    if let (Some(a), Some(b)) = (lids.first(), lids.last()) {
        println!("path {a} -> {b}: {:?}", model.path(*a, *b));
    }
    Ok(())
}

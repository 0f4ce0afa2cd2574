//! Bring-up timing: builds a fat tree (or a single switch) of N hosts with stand-in channel
//! adapters, runs the subnet manager's computations, delivers the configuration through the
//! simulator, computes the broadcast group's multicast tree, and prints how long each step took.
//!
//! `cargo run --release -p ipoib-fabric --example bringup -- [HOSTS] [fat-tree|single-switch|NETFILE]`
//! (default 10000 hosts on a fat tree).

use ipoib_fabric::hw::link::LinkParams;
use ipoib_fabric::hw::topology::{build, Topology};
use ipoib_fabric::node::sm::{SmOptions, SubnetManager};
use ipoib_fabric::{Config, Device, Instant, Simulator, Tx};
use std::any::Any;
use std::time::Instant as Wall;

/// A channel adapter that only takes its configuration.
#[derive(Default)]
struct Ca {
    lid: u16,
}

impl Device for Ca {
    fn receive(&mut self, _: Instant, _: u8, _: Vec<u8>, _: &mut Tx) {}
    fn handle_timeout(&mut self, _: Instant, _: &mut Tx) {}
    fn poll_timeout(&self) -> Option<Instant> {
        None
    }
    fn configure(&mut self, _: Instant, c: Config, _: &mut Tx) {
        if let Config::Port(p) = c {
            self.lid = p.lid;
        }
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

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
    let mut sim = Simulator::new(1);
    let built = build(&topo, &mut sim, LinkParams::default(), |_, _, _| {
        Box::new(Ca::default())
    });
    let t_build = t0.elapsed();
    let sm_port = topo.first_ca_port().ok_or("no CA port")?;
    let n_nodes = topo.nodes().len();
    let n_links = topo.links().len();
    let sm = SubnetManager::new(topo, built.nodes.clone(), sm_port, SmOptions::default())?;
    let t_sm = t0.elapsed();
    let writes = sm.bring_up();
    let n_writes = writes.len();
    sim.with_node::<Ca, _>(built.nodes[sm_port.node], |_, _, tx| {
        for (id, c) in writes {
            tx.configure(id, c);
        }
    });
    sim.run_until_idle(u64::MAX);
    let t_cfg = t0.elapsed();
    let lids: Vec<u16> = sm.ca_ports().map(|(l, _)| l).collect();
    let tree = sm.multicast_tree(0xc000, &lids);
    let t_mc = t0.elapsed();
    let model = sm.subnet_model();
    let t_model = t0.elapsed();
    let configured = sm
        .ca_ports()
        .filter(|&(l, e)| {
            sim.node::<Ca>(built.nodes[e.node])
                .is_some_and(|c| c.lid == l)
        })
        .count();
    println!(
        "{kind}: {} CAs, {n_nodes} nodes, {n_links} links, {} LIDs, {configured} CA ports configured",
        sm.topology().cas().count(),
        sm.max_lid()
    );
    println!(
        "topology {:?}, build {:?}, SM {:?}, bring-up {n_writes} writes {:?}, broadcast tree {} switches {:?}, SubnetModel {:?}; total {:?}",
        t_topo,
        t_build - t_topo,
        t_sm - t_build,
        t_cfg - t_sm,
        tree.len(),
        t_mc - t_cfg,
        t_model - t_mc,
        t_model
    );
    if let (Some(a), Some(b)) = (lids.first(), lids.last()) {
        println!("path {a} -> {b}: {:?}", model.path(*a, *b));
    }
    Ok(())
}

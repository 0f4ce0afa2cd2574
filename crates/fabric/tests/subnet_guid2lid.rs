//! Our SM given a guid2lid table at its start (OpenSM's `/var/cache/opensm/guid2lid`,
//! `osm_lid_mgr.c`; `SmpSm::with_guid2lid`, `SubnetOptions::guid2lid`): every port in the table
//! gets its LID whatever the walk's order; the others the lowest LIDs the table leaves free. A
//! fabric process restarted with the table its SM had gives its hosts their LIDs back, whatever
//! order they attach again in.

mod common;
#[path = "common/remote.rs"]
mod remote;

use common::topos::chain;
use ipoib_fabric::node::subnet::Subnet;
use ipoib_fabric::testing::*;
use ipoib_wire::Guid;
use remote::Net;
use std::collections::BTreeMap;
use std::time::Duration;

const SEC: Duration = Duration::from_secs(1);

// The chain (h0 the SM's CA, sw0 - sw1 - sw2, h1 on sw2, h2 on sw1) with LIDs from a table: not
// those the walk would give (1 for the SM's port, then 2, 3, ... in walk order). Host 2 is not in
// the table: it gets the lowest LID the table leaves free, 1.
#[test]
fn an_sm_given_a_table_assigns_its_lids() {
    let topo = chain();
    let port = |n: usize| topo.nodes()[n].port_guid(1);
    // Hosts h0, h1, h2 are topology nodes 0-2, switches sw0-sw2 nodes 3-5 (keyed by node GUID).
    let mut table: BTreeMap<Guid, u16> = BTreeMap::new();
    table.insert(port(0), 0x10);
    table.insert(port(1), 0x21);
    for (k, n) in (3..6).enumerate() {
        table.insert(topo.nodes()[n].guid, 0x30 + k as u16);
    }
    let mut o = options(topo, seed(5));
    o.guid2lid = table.clone();
    let mut net = Subnet::build(o).unwrap();
    assert!(net.run_until_joined(at(5)), "every host has carrier");
    assert_eq!(
        (net.lid(0), net.lid(1), net.lid(2)),
        (0x10, 0x21, 1),
        "the table's LIDs; host 2 the lowest free"
    );
    let switch_lids: Vec<u16> = net.switches().map(|(_, s)| s.lid()).collect();
    assert_eq!(switch_lids, [0x30, 0x31, 0x32]);
    // The SM's table now has every port, host 2's too.
    let now = net.smp_sm().unwrap().guid2lid().clone();
    assert_eq!(now.len(), table.len() + 1);
    assert!(table.iter().all(|(g, l)| now.get(g) == Some(l)));
    for s in ping_pairs(&mut net, &all_pairs(3), v4, 2 * SEC) {
        assert!(rtt(&net, s).is_some(), "{} -> {}", s.0, s.1);
    }
}

/// The LIDs of slots 0 and 1 once both are attached.
fn slot_lids(net: &Net) -> (u16, u16) {
    let lid = |i| net.fabric.slot(i).unwrap().lid();
    (lid(0), lid(1))
}

/// Restarts the fabric (with `table` as its SM's guid2lid) and lets host 1 attach and get its
/// LID before host 0 is let go: the opposite order of the first start. The slot LIDs then.
fn restart_host_1_first(net: &mut Net, table: BTreeMap<Guid, u16>) -> (u16, u16) {
    net.opts.subnet.guid2lid = table;
    net.peers[0].alive = false;
    net.restart_fabric();
    let attached = |n: &Net| n.fabric.slot(1).unwrap().lid() != 0;
    assert!(net.run_until(3 * SEC, attached), "host 1 has a LID");
    net.peers[0].alive = true;
    let both = |n: &Net| (0..2).all(|i| n.fabric.slot(i).unwrap().lid() != 0 && n.carrier(i));
    assert!(net.run_until(5 * SEC, both), "both hosts back");
    slot_lids(net)
}

// docs/UDP-FABRIC.md: a fabric process restarted with its SM's guid2lid gives the hosts' ports
// their LIDs back; without it, the LIDs follow the order the hosts attach again in.
#[test]
fn a_restarted_fabric_given_its_table_keeps_the_lids() {
    let mut net = Net::new(2, 21);
    assert!(net.run_until(2 * SEC, |n| (0..2).all(|i| n.carrier(i))));
    let first = slot_lids(&net);
    let table = net.fabric.smp_sm().unwrap().guid2lid().clone();
    assert!(table.len() >= 4, "SM port, switch, two hosts: {table:x?}");
    let without = restart_host_1_first(&mut net, BTreeMap::new());
    assert_ne!(without, first, "the LIDs follow the attach order");
    let with = restart_host_1_first(&mut net, table);
    assert_eq!(with, first, "the table's LIDs");
    assert!(net.ping_and_wait(0, remote::addr(1), 2 * SEC));
    assert!(net.ping_and_wait(1, remote::addr(0), 2 * SEC));
}

// The table's LIDs may be anywhere in the unicast range (IBA 1 §4.1.3): a host given the highest,
// 0xbfff, gets it, the switches' LFTs reach it (every LFT block up to it set) and pings work.
#[test]
fn the_highest_unicast_lid_from_a_table_works() {
    let topo = chain();
    let mut table: BTreeMap<Guid, u16> = BTreeMap::new();
    table.insert(topo.nodes()[1].port_guid(1), 0xbfff);
    let mut o = options(topo, seed(7));
    o.guid2lid = table;
    let mut net = Subnet::build(o).unwrap();
    assert!(net.run_until_joined(at(5)), "every host has carrier");
    assert_eq!(net.lid(1), 0xbfff);
    for s in ping_pairs(&mut net, &all_pairs(3), v4, 2 * SEC) {
        assert!(rtt(&net, s).is_some(), "{} -> {}", s.0, s.1);
    }
}

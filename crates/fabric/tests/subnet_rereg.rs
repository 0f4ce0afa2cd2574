//! A host whose port was away while the SM and SA changed (IBA 1 §14.4.11; OpenSM
//! `osm_lid_mgr.c`: ClientReregister in a new master's first sweep and to a port new since the
//! last sweep, `is_new`, docs/OPENSM-LIMITS.md): the new master asks it to register again when it
//! comes back, and its IPoIB interface (a multicast router, draft-ietf-ipoib-ip-over-infiniband-06
//! §12 C) subscribes to traps 66/67 at the new SA, hearing of a group created afterwards.

mod common;

use common::topos::chain;
use ipoib_fabric::node::sm::ElectionSettings;
use ipoib_fabric::node::subnet::Subnet;
use ipoib_fabric::testing::*;
use ipoib_wire::ipoib::ipv4_mgid;
use ipoib_wire::ipoib::mcast::Scope;
use ipoib_wire::smp::SmState;
use ipoib_wire::PKey;
use std::net::{IpAddr, Ipv4Addr};
use std::time::Duration;

fn run(net: &mut Subnet, d: Duration) {
    let t = net.sim().now() + d;
    net.sim_mut().run_until(t);
}

// Cables of `chain()`: 0 h0-sw0, 1 sw0-sw1, 2 sw1-sw2, 3 sw2-h1, 4 sw1-h2. Our SM on host 0
// masters, another on host 1 stands by; host 2 is a router.
#[test]
fn a_port_back_after_a_takeover_registers_again_and_hears_trap_66() {
    let mut o = options(chain(), seed(11));
    o.ipoib.as_mut().unwrap().configure = Some(|i, c| c.router = i == 2);
    let mut net = Subnet::build(o).unwrap();
    let app = net
        .add_sm(1, ElectionSettings::default())
        .expect("second SM");
    assert!(net.run_until_joined(at(5)), "every host has carrier");
    assert!(
        net.interface(2).unwrap().traps_subscribed(),
        "at host 0's SA"
    );
    let rereg = |net: &Subnet| net.host_port(2).unwrap().client_reregisters;
    assert_eq!(rereg(&net), 1, "the first master's first sweep");

    // Host 2's link goes down; then host 0 (its SM and SA) goes away and host 1's SM takes over
    // with an SA that holds no subscription.
    assert!(net.set_cable(4, false).unwrap());
    run(&mut net, Duration::from_secs(1));
    assert!(net.set_cable(0, false).unwrap());
    let s = ElectionSettings::default();
    run(&mut net, s.polling_timeout * (s.polling_retries + 2));
    assert_eq!(
        net.smp_sm_on(1, app).unwrap().election().state(),
        SmState::Master
    );
    // Host 2 comes back: new to the new master, which asks it to register again.
    assert!(net.set_cable(4, true).unwrap());
    run(&mut net, Duration::from_secs(5));
    assert!(net.ipoib_app(2).unwrap().carrier());
    assert_eq!(
        rereg(&net),
        2,
        "ClientReregister to a port new to the master"
    );
    assert!(
        net.interface(2).unwrap().traps_subscribed(),
        "at the new SA"
    );

    // A group created at the new SA: trap 66 reaches the router, which joins it (§12 C).
    let g = Ipv4Addr::new(239, 6, 6, 6);
    net.with_ipoib(1, |a, _| a.join_group(IpAddr::V4(g)));
    run(&mut net, Duration::from_secs(2));
    let mgid = ipv4_mgid(g, PKey(0xffff), Scope::LinkLocal);
    let h2 = {
        let h = net.host(2);
        net.topology().nodes()[h.topo_node].port_guid(h.port).0
    };
    let members: Vec<u64> = net
        .sa_on(1, app)
        .unwrap()
        .groups()
        .into_iter()
        .find(|g| g.record.mgid == mgid)
        .map(|g| g.members.iter().map(|m| m.0.interface_id()).collect())
        .unwrap_or_default();
    assert!(members.contains(&h2), "the router joined: {members:x?}");
}

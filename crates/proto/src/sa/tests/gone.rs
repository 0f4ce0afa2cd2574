//! A port that leaves the subnet loses its memberships (`SaServer::drop_port`; OpenSM's drop
//! manager, `osm_drop_mgr.c` -> `osm_mgrp_delete_port`).

use super::*;
use ipoib_wire::mad::{InformInfoRepr, Method};
use ipoib_wire::sa::SaAttribute;

/// Ports `lids` join the broadcast group as full members.
fn join_broadcast(net: &mut Net, lids: &[u16]) {
    for &lid in lids {
        let r = join_rec(bcast(), gid_of(lid), JoinState::FULL_MEMBER);
        assert!(net.ask(lid, join(r, mcr_mask::JOIN)).is_ok());
    }
}

#[test]
fn a_dropped_port_leaves_every_group_and_a_group_without_full_members_goes() {
    let mut net = Net::default(4);
    let full = JoinState::FULL_MEMBER;
    let other = mgid("ff12:401b:ffff::1234");
    join_broadcast(&mut net, &[2, 3]);
    // Port 3 alone makes a group of its own.
    let mut r = join_rec(other, gid_of(3), full);
    r.qkey = ipoib_wire::QKey(0x0b1b);
    r.pkey = ipoib_wire::PKey(0xffff);
    r.tclass = 0;
    r.flow_label = 0;
    assert!(net.ask(3, join(r, mcr_mask::CREATE)).is_ok(), "create");
    let sub = net.ask(
        4,
        SaMadRepr::request(
            Method::Set,
            0,
            0,
            SaAttribute::InformInfo(InformInfoRepr::generic(true, 67, 1)),
        ),
    );
    assert!(sub.is_ok());
    net.sa_events.clear();
    let now = net.now;
    assert_eq!(net.sa.drop_port(now, &gid_of(3)), 2);
    net.run_for(Duration::from_secs(1));
    // The broadcast group (well known) keeps port 2; port 3's own group goes, trap 67 told.
    assert_eq!(net.sa.member_join_state(&bcast(), &gid_of(3)), None);
    assert_eq!(net.sa.member_join_state(&bcast(), &gid_of(2)), Some(full));
    assert!(net.sa.group_mgids().all(|m| *m != other));
    assert_eq!(net.reports(4), vec![(67, other)]);
    while let Some(e) = net.sa.poll_event() {
        net.sa_events.push(e);
    }
    assert!(net
        .sa_events
        .iter()
        .any(|e| matches!(e, SaEvent::GroupDeleted { mgid, .. } if *mgid == other)));
    assert!(net.sa_events.iter().any(|e| matches!(
        e,
        SaEvent::McastGroup { mgid, members, .. } if *mgid == bcast() && members.len() == 1
    )));
    // Nothing left to drop.
    assert_eq!(net.sa.drop_port(now, &gid_of(3)), 0);
}

/// A sweep that no longer finds a port ([`SaServer::set_subnet`] without it) makes it leave its
/// groups when the SM asks ([`SaServer::drop_ports_gone`]), as OpenSM's drop manager does after
/// each sweep; the ports still there keep theirs. Before, only the UDP fabric dropped a port (on
/// a host's detach): a host whose cable was pulled stayed a member of every group.
#[test]
fn ports_a_sweep_no_longer_finds_leave_their_groups() {
    let mut net = Net::default(4);
    let full = JoinState::FULL_MEMBER;
    join_broadcast(&mut net, &[2, 3]);
    let now = net.now;
    assert_eq!(
        net.sa.drop_ports_gone(now),
        0,
        "every member is in the model"
    );
    let mut model = default_model(4);
    model.ports.retain(|p| p.lid != 3);
    net.sa.set_subnet(model);
    assert_eq!(net.sa.drop_ports_gone(now), 1);
    assert_eq!(net.sa.member_join_state(&bcast(), &gid_of(3)), None);
    assert_eq!(net.sa.member_join_state(&bcast(), &gid_of(2)), Some(full));
}

//! IPoIB over UD on the emulated subnet: IP multicast (draft-ietf-ipoib-ip-over-infiniband-06
//! §11). Members FullMember-join the group's MGID (the first join creates it with the broadcast
//! group's parameters); a sender that is not a member joins SendOnlyNonMember, then sends to the
//! MLID; the SM's multicast tree (real MFTs in the leaves and spines of a fat tree) delivers exactly
//! one copy to each member and none to anybody else.

use ipoib_fabric::hw::hca::HcaDropReason;
use ipoib_fabric::hw::topology::Topology;
use ipoib_fabric::testing::*;
use ipoib_wire::ipoib::mcast::{ipv4_mgid, Scope};
use ipoib_wire::sa::JoinState;
use ipoib_wire::PKey;
use std::net::{IpAddr, Ipv4Addr};
use std::time::Duration;

const GROUP: Ipv4Addr = Ipv4Addr::new(239, 1, 1, 1);

// draft-ietf-ipoib-ip-over-infiniband-06 §11 (A: FullMember join creates the group, look up the
// MLID and send; B: a non-member sender joins SendOnlyNonMember first; the group copies the
// broadcast group's Q_Key, MTU, SL, P_Key), §4 (IPv4 group → MGID FF12:401B:FFFF::<group>).
#[test]
fn delivered_to_exactly_the_members_through_the_mfts() {
    let seed = seed(11);
    let _g = SeedGuard(seed);
    // Two leaves (hosts 0-17 and 18-23) under 18 spines: the tree spans switches.
    let n = 24;
    let mut net = up(options(Topology::fat_tree(n).unwrap(), seed), false);
    let members = [1usize, 4, 9, 19, 22];
    let sender = 20;
    let bystanders: Vec<usize> = (0..n)
        .filter(|i| !members.contains(i) && *i != sender)
        .collect();
    for &m in &members {
        net.with_ipoib(m, |a, _| a.join_group(IpAddr::V4(GROUP)));
    }
    let mgid = ipv4_mgid(GROUP, PKey(0xffff), Scope::LinkLocal);
    assert!(
        run_until_attached(&mut net, &members, mgid),
        "joins answered and the tree written"
    );
    let bcast = net.interface(0).unwrap().link_params().unwrap().record;
    let g = net
        .sa()
        .groups()
        .into_iter()
        .find(|g| g.record.mgid == mgid)
        .expect("§11 A: the join created the group");
    assert_eq!(g.members.len(), members.len());
    assert_eq!(
        (g.record.qkey, g.record.mtu, g.record.sl),
        (bcast.qkey, bcast.mtu, bcast.sl)
    );
    let mlid = g.record.mlid;
    let not_attached = |net: &ipoib_fabric::node::subnet::Subnet, i: usize| {
        net.host_device(i)
            .hca()
            .counters()
            .drops(HcaDropReason::McastNotAttached)
    };
    let before: Vec<u64> = (0..n).map(|i| not_attached(&net, i)).collect();
    net.with_ipoib(sender, |a, _| {
        a.ip_mut()
            .send_udp(4000, IpAddr::V4(GROUP), 5000, b"to the group")
    })
    .unwrap()
    .unwrap();
    let deadline = net.sim().now() + Duration::from_millis(50);
    net.run_until_with(deadline, |n| {
        members
            .iter()
            .all(|&m| !app(n, m).ip().udp_received().is_empty())
    });
    net.sim_mut().run_for(Duration::from_millis(1));
    for &m in &members {
        let got = app(&net, m).ip().udp_received();
        assert_eq!(got.len(), 1, "member {m}: exactly one copy");
        assert_eq!(got[0].payload, b"to the group");
        assert_eq!(got[0].src.0, v4(&net, sender));
    }
    for &b in bystanders.iter().chain([&sender]) {
        assert!(
            app(&net, b).ip().udp_received().is_empty(),
            "host {b} is no member"
        );
        assert_eq!(
            not_attached(&net, b),
            before[b],
            "host {b}: the MFTs never sent it a copy"
        );
    }
    // §11 B: the sender holds a SendOnlyNonMember membership, and the tree includes it.
    let g = net
        .sa()
        .groups()
        .into_iter()
        .find(|g| g.record.mgid == mgid)
        .unwrap();
    let s = g
        .members
        .iter()
        .find(|(gid, _)| *gid == net.gid(sender))
        .expect("sender registered");
    assert_eq!(s.1, JoinState::SEND_ONLY_NON_MEMBER);
    let info = net.interface(sender).unwrap().groups();
    let gi = info.iter().find(|x| x.mgid == mgid).unwrap();
    assert_eq!(
        (gi.mlid, gi.join_state, gi.attached),
        (mlid, JoinState::SEND_ONLY_NON_MEMBER, false)
    );
    // Members are attached (IBA 1 §10.5.2), bystanders not.
    for &m in &members {
        assert!(app(&net, m).attached().contains(&(mgid, mlid)));
    }
    for &b in &bystanders {
        assert!(!app(&net, b).attached().iter().any(|(g, _)| *g == mgid));
    }
}

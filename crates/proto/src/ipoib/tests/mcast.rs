//! IP multicast over IPoIB: the MGID mapping (draft-ietf-ipoib-ip-over-infiniband-06 §4), joins
//! and leaves and the send rules of §11, traps, router promiscuous mode (§12).

use super::*;
use crate::sa::McastGroupInfo;
use ipoib_wire::ipoib::{ipv4_mgid, ipv6_mgid};
use ipoib_wire::mad::Method;
use ipoib_wire::sa::{JoinState, SaAttribute, SaMadRepr};
use ipoib_wire::PKey;

fn mgid4(a: &str) -> Gid {
    ipv4_mgid(a.parse().unwrap(), PKey(0xffff), Scope::LinkLocal)
}

/// MCMemberRecord requests host `lid` sent for `mgid`: (method, JoinState).
fn mc_requests(net: &Net, lid: u16, mgid: Gid) -> Vec<(Method, JoinState)> {
    net.mads_from(lid)
        .iter()
        .filter_map(|m| {
            let r = SaMadRepr::parse(&m.mad).ok()?;
            match r.attribute {
                SaAttribute::McMemberRecord(rec) if rec.mgid == mgid => {
                    Some((r.header.method, rec.join_state))
                }
                _ => None,
            }
        })
        .collect()
}

fn sa_group(net: &Net, mgid: Gid) -> Option<McastGroupInfo> {
    net.sa.groups().into_iter().find(|g| g.record.mgid == mgid)
}

fn got(net: &mut Net, lid: u16, dst: Ipv4Addr, tag: &[u8]) -> usize {
    net.host(lid)
        .delivered
        .iter()
        .filter(|p| {
            Ipv4Packet::new_checked(&p[..]).is_ok_and(|ip| ip.dst_addr() == dst) && p.ends_with(tag)
        })
        .count()
}

// draft-ietf-ipoib-ip-over-infiniband-06 §11: an IP join is a FullMember join of the MGID (§4),
// creating the group with the broadcast group's P_Key, Q_Key, SL, MTU and HopLimit (MUST) and
// the rest (SHOULD); a sender that is not a member joins SendOnlyNonMember first (§11 B), once
// (the membership and MLID are cached); a member sends directly.
#[test]
fn ip_join_creates_group_and_send_only_sender_delivers() {
    let mut net = Net::new(3);
    net.up();
    let g: Ipv4Addr = "224.1.2.3".parse().unwrap();
    let m = mgid4("224.1.2.3");
    assert_eq!(m.to_ipv6().to_string(), "ff12:401b:ffff::1:203");
    net.join(3, IpAddr::V4(g)).unwrap();
    net.run_for(Duration::from_secs(1));
    let grp = sa_group(&net, m).expect("group created");
    let b = net.iface(3).link_params().unwrap().record;
    let r = grp.record;
    assert_eq!(
        (
            r.qkey,
            r.pkey,
            r.sl,
            r.mtu,
            r.hop_limit,
            r.tclass,
            r.flow_label,
            r.rate
        ),
        (
            b.qkey,
            b.pkey,
            b.sl,
            b.mtu,
            b.hop_limit,
            b.tclass,
            b.flow_label,
            b.rate
        )
    );
    let gid3 = net.iface(3).gid();
    assert_eq!(grp.members, vec![(gid3, JoinState::FULL_MEMBER)]);
    assert!(net.host(3).attached.contains(&m));
    assert_eq!(
        mc_requests(&net, 3, m),
        vec![(Method::Set, JoinState::FULL_MEMBER)]
    );

    net.send(2, &udp4(v4(2), g, b"one"));
    net.run_for(Duration::from_secs(1));
    net.send(2, &udp4(v4(2), g, b"two"));
    net.run_for(Duration::from_secs(1));
    assert_eq!(got(&mut net, 3, g, b"one"), 1);
    assert_eq!(got(&mut net, 3, g, b"two"), 1);
    assert_eq!(got(&mut net, 4, g, b"one"), 0);
    assert_eq!(
        mc_requests(&net, 2, m),
        vec![(Method::Set, JoinState::SEND_ONLY_NON_MEMBER)]
    );
    assert!(
        !net.host(2).attached.contains(&m),
        "send-only is not attached"
    );
    let sent: Vec<&Sent> = net
        .sent_by(2)
        .into_iter()
        .filter(|s| s.t.grh.is_some_and(|g| g.gid == m))
        .collect();
    assert_eq!(sent.len(), 2);
    assert!(sent
        .iter()
        .all(|s| s.t.dlid == r.mlid && s.t.remote_qpn == 0xff_ffff));

    // A member sends without another join; its own copy looped back is dropped.
    let loops = net.iface(3).counters().dropped(DropReason::Loopback);
    net.send(3, &udp4(v4(3), g, b"three"));
    net.run_for(Duration::from_secs(1));
    assert_eq!(mc_requests(&net, 3, m).len(), 1);
    assert_eq!(got(&mut net, 3, g, b"three"), 0);
    assert_eq!(
        net.iface(3).counters().dropped(DropReason::Loopback),
        loops + 1
    );
}

// draft-ietf-ipoib-ip-over-infiniband-06 §11 A: no such group and link-local scope: drop; the
// group's absence is cached (no SA call per packet).
#[test]
fn absent_link_local_group_is_dropped_and_cached() {
    let mut net = Net::new(2);
    net.up();
    let g: Ipv4Addr = "224.0.0.99".parse().unwrap();
    net.send(2, &udp4(v4(2), g, b"x"));
    net.run_for(Duration::from_secs(1));
    net.send(2, &udp4(v4(2), g, b"y"));
    net.run_for(Duration::from_secs(1));
    assert_eq!(net.iface(2).counters().dropped(DropReason::NoMcastGroup), 2);
    assert_eq!(mc_requests(&net, 2, mgid4("224.0.0.99")).len(), 1);
    // §13: the failed join was logged.
    assert!(net
        .host(2)
        .logs()
        .iter()
        .any(|l| l.contains("ff12:401b:ffff::63") && l.contains("failed")));
}

// draft-ietf-ipoib-ip-over-infiniband-06 §11 A: no such group, scope wider than link-local, no
// all-routers group: no router on the link, drop.
#[test]
fn wide_scope_without_routers_is_dropped() {
    let mut net = Net::new(2);
    net.up();
    net.send(2, &udp4(v4(2), "239.9.9.9".parse().unwrap(), b"x"));
    net.run_for(Duration::from_secs(1));
    assert_eq!(net.iface(2).counters().dropped(DropReason::NoMcastGroup), 1);
    assert_eq!(mc_requests(&net, 2, mgid4("224.0.0.2")).len(), 1);
}

// draft-ietf-ipoib-ip-over-infiniband-06 §11 A: no such group and a wider scope: the packet goes to
// the all-routers group; §11 B: senders subscribe to traps 66/67 and send to the right group once
// a listener appears.
#[test]
fn wide_scope_goes_to_all_routers_then_trap_reroutes() {
    let mut net = Net::new(3);
    net.up();
    net.join(4, IpAddr::V4("224.0.0.2".parse().unwrap()))
        .unwrap();
    net.run_for(Duration::from_secs(1));
    let g: Ipv4Addr = "239.1.1.1".parse().unwrap();
    net.send(2, &udp4(v4(2), g, b"early"));
    net.run_for(Duration::from_secs(1));
    assert_eq!(got(&mut net, 4, g, b"early"), 1, "the router got it");
    assert_eq!(got(&mut net, 3, g, b"early"), 0);
    let ar = net
        .sent_by(2)
        .into_iter()
        .filter(|s| s.t.grh.is_some_and(|x| x.gid == mgid4("224.0.0.2")))
        .count();
    assert_eq!(ar, 1);

    // A listener appears: trap 66 reaches host 2, which drops its "absent" belief.
    net.join(3, IpAddr::V4(g)).unwrap();
    net.run_for(Duration::from_secs(1));
    net.send(2, &udp4(v4(2), g, b"late"));
    net.run_for(Duration::from_secs(1));
    assert_eq!(
        got(&mut net, 3, g, b"late"),
        1,
        "re-routed to the new group"
    );
    assert_eq!(got(&mut net, 4, g, b"late"), 0);
    assert_eq!(
        mc_requests(&net, 2, mgid4("239.1.1.1")),
        vec![
            (Method::Set, JoinState::SEND_ONLY_NON_MEMBER),
            (Method::Set, JoinState::SEND_ONLY_NON_MEMBER)
        ]
    );
    // Both trap subscriptions were made once, when the group was found missing (`ipoib::traps`).
    let informs = net
        .mads_from(2)
        .iter()
        .filter(|m| {
            SaMadRepr::parse(&m.mad)
                .is_ok_and(|r| matches!(r.attribute, SaAttribute::InformInfo(i) if i.subscribe))
        })
        .count();
    assert_eq!(informs, 2);

    // The listener leaves: trap 67; the sender's send-only membership is gone with the group and the
    // next packet goes to all routers again.
    net.leave(3, IpAddr::V4(g)).unwrap();
    net.run_for(Duration::from_secs(1));
    assert!(sa_group(&net, mgid4("239.1.1.1")).is_none());
    net.send(2, &udp4(v4(2), g, b"after"));
    net.run_for(Duration::from_secs(1));
    assert_eq!(got(&mut net, 4, g, b"after"), 1);
}

// draft-ietf-ipoib-ip-over-infiniband-06 §11: leaving SHOULD be a FullMember leave to the SA; the
// last member's leave deletes the group; IP joins of one MGID are counted.
#[test]
fn leave_deletes_group_and_detaches() {
    let mut net = Net::new(2);
    net.up();
    let g = IpAddr::V4("224.5.5.5".parse().unwrap());
    let m = mgid4("224.5.5.5");
    net.join(3, g).unwrap();
    net.join(3, g).unwrap();
    net.run_for(Duration::from_secs(1));
    net.leave(3, g).unwrap();
    net.run_for(Duration::from_secs(1));
    assert!(sa_group(&net, m).is_some(), "one user left");
    net.leave(3, g).unwrap();
    net.run_for(Duration::from_secs(1));
    assert!(sa_group(&net, m).is_none());
    assert!(!net.host(3).attached.contains(&m));
    assert!(net
        .host(3)
        .events
        .iter()
        .any(|e| matches!(e, InterfaceEvent::Detach { mgid, .. } if *mgid == m)));
    assert_eq!(
        mc_requests(&net, 3, m),
        vec![
            (Method::Set, JoinState::FULL_MEMBER),
            (Method::Delete, JoinState::FULL_MEMBER)
        ]
    );
    assert_eq!(
        net.join(3, IpAddr::V4(v4(9))),
        Err(InterfaceError::NotMulticast)
    );
}

// draft-ietf-ipoib-ip-over-infiniband-06 §4: an IPv6 group maps its low 80 bits under the link's
// scope (every MGID uses the broadcast GID's scope bits) and signature 0x601B.
#[test]
fn ipv6_group_mapping_and_delivery() {
    let mut net = Net::new(2);
    net.up();
    let g: Ipv6Addr = "ff15::1234".parse().unwrap();
    let m = ipv6_mgid(g, PKey(0xffff), Scope::LinkLocal);
    assert_eq!(m.to_ipv6().to_string(), "ff12:601b:ffff::1234");
    net.join(3, IpAddr::V6(g)).unwrap();
    net.run_for(Duration::from_secs(1));
    assert!(net.host(3).attached.contains(&m));
    let src = ipoib_wire::ipoib::addr::link_local_from_guid(guid(2));
    net.send(2, &ip6(src, g, IpProtocol::Udp, 8, b"v6 group"));
    net.run_for(Duration::from_secs(1));
    assert!(net
        .host(3)
        .delivered
        .iter()
        .any(|p| p.ends_with(b"v6 group")));
}

// draft-ietf-ipoib-ip-over-infiniband-06 §12: a router lists the groups and NonMember-joins every
// IPoIB group of its partition (A, B), and joins groups created later through a wildcard
// subscription (C); NonMember does not count for creation or deletion.
#[test]
fn router_promiscuous_mode() {
    let mut net = Net::with(3, |lid, c| c.router = lid == 4);
    let g1: Ipv4Addr = "239.2.2.1".parse().unwrap();
    let g2: Ipv4Addr = "239.2.2.2".parse().unwrap();
    net.port(2, |_| {});
    net.port(3, |_| {});
    net.run_for(Duration::from_secs(3));
    net.join(3, IpAddr::V4(g1)).unwrap();
    net.run_for(Duration::from_secs(1));
    net.port(4, |_| {});
    net.run_for(Duration::from_secs(3));
    let gid4 = net.iface(4).gid();
    let has_non = |net: &Net, m: Gid| {
        sa_group(net, m).is_some_and(|g| g.members.contains(&(gid4, JoinState::NON_MEMBER)))
    };
    assert!(has_non(&net, mgid4("239.2.2.1")));
    assert!(net.host(4).attached.contains(&mgid4("239.2.2.1")));
    // IPv6 groups of the link too (host 3's solicited-node group), not the broadcast group.
    let sn3 = ipv6_mgid(
        "ff02::1:ff00:3".parse().unwrap(),
        PKey(0xffff),
        Scope::LinkLocal,
    );
    assert!(has_non(&net, sn3));
    assert!(!has_non(&net, BCAST));

    net.join(3, IpAddr::V4(g2)).unwrap();
    net.run_for(Duration::from_secs(1));
    assert!(has_non(&net, mgid4("239.2.2.2")), "joined after trap 66");
    net.send(2, &udp4(v4(2), g2, b"to g2"));
    net.run_for(Duration::from_secs(1));
    assert_eq!(got(&mut net, 3, g2, b"to g2"), 1);
    assert_eq!(got(&mut net, 4, g2, b"to g2"), 1);

    // The last FullMember leaves: the group goes although the router is still a NonMember.
    net.leave(3, IpAddr::V4(g2)).unwrap();
    net.run_for(Duration::from_secs(1));
    assert!(sa_group(&net, mgid4("239.2.2.2")).is_none());
    assert!(!net.host(4).attached.contains(&mgid4("239.2.2.2")));
}

// draft-ietf-ipoib-ip-over-infiniband-06 §4: the limited broadcast address SHALL map to the
// broadcast GID; §5: the broadcast group also carries subnet-directed broadcasts.
#[test]
fn broadcasts_use_the_broadcast_group() {
    let mut net = Net::new(3);
    net.up();
    net.send(2, &udp4(v4(2), Ipv4Addr::BROADCAST, b"all"));
    net.send(2, &udp4(v4(2), "10.0.0.255".parse().unwrap(), b"subnet"));
    net.run_for(Duration::from_secs(1));
    for lid in [3, 4] {
        assert_eq!(got(&mut net, lid, Ipv4Addr::BROADCAST, b"all"), 1);
        assert_eq!(
            got(&mut net, lid, "10.0.0.255".parse().unwrap(), b"subnet"),
            1
        );
    }
    let ip: Vec<&Sent> = net
        .sent_by(2)
        .into_iter()
        .filter(|s| ethertype(&s.t) == 0x0800)
        .collect();
    assert_eq!(ip.len(), 2);
    assert!(ip
        .iter()
        .all(|s| s.t.grh.is_some_and(|g| g.gid == BCAST) && s.t.dlid == 0xc000));
}

// draft-ietf-ipoib-ip-over-infiniband-06 §11 B: a sender joins SendOnlyNonMember to send; Linux
// leaves that membership once it has been unused for two neighbour GC periods (60 s,
// `__ipoib_reap_neigh` → `ipoib_check_and_add_mcast_sendonly`, docs/DEPLOYED.md "Linux IPoIB"),
// so a host that sent once to many groups (ND to many solicited-node groups) neither holds them
// at the SA forever nor fills its table (`max_mcast_groups`) and refuses every new group.
#[test]
fn idle_send_only_membership_is_left() {
    let mut net = Net::with(2, |_, c| c.max_mcast_groups = 1);
    net.up();
    let (a, b): (Ipv4Addr, Ipv4Addr) = ("224.1.1.1".parse().unwrap(), "224.2.2.2".parse().unwrap());
    let (ma, mb) = (mgid4("224.1.1.1"), mgid4("224.2.2.2"));
    net.join(3, IpAddr::V4(a)).unwrap();
    net.join(3, IpAddr::V4(b)).unwrap();
    net.run_for(Duration::from_secs(1));
    let gid2 = net.iface(2).gid();
    let held = |net: &Net, m: Gid| {
        sa_group(net, m).is_some_and(|g| g.members.iter().any(|(p, _)| *p == gid2))
    };

    net.send(2, &udp4(v4(2), a, b"a1"));
    net.run_for(Duration::from_secs(40));
    assert!(held(&net, ma));
    // Still in use 40 s later: the idle time starts again.
    net.send(2, &udp4(v4(2), a, b"a2"));
    net.run_for(Duration::from_secs(50));
    assert!(held(&net, ma), "used 50 s ago");
    assert_eq!(got(&mut net, 3, a, b"a2"), 1);
    net.run_for(Duration::from_secs(15));
    assert!(!held(&net, ma), "idle 65 s: left at the SA");
    assert!(net.iface(2).groups().iter().all(|g| g.mgid != ma));
    assert_eq!(
        mc_requests(&net, 2, ma),
        vec![
            (Method::Set, JoinState::SEND_ONLY_NON_MEMBER),
            (Method::Delete, JoinState::SEND_ONLY_NON_MEMBER)
        ]
    );

    // The table has room again: a send to another group joins and is delivered.
    net.send(2, &udp4(v4(2), b, b"b1"));
    net.run_for(Duration::from_secs(1));
    assert_eq!(got(&mut net, 3, b, b"b1"), 1);
    assert_eq!(
        net.iface(2).counters().dropped(DropReason::McastTableFull),
        0
    );
    assert!(held(&net, mb));
}

// A LID change (normal flush) forgets the groups held only for sending; the port still reaches
// the SA, so their SendOnlyNonMember memberships are left there, as Linux's flush leaves every
// group (docs/DEPLOYED.md flush levels; `ipoib_mcast_dev_flush`), and the next packet joins again.
// A port down leaves nothing (no SA to tell). Fails on the old code: the SA kept host 2 as a
// SendOnlyNonMember after the flush, with no leave sent.
#[test]
fn flush_leaves_send_only_memberships() {
    let mut net = Net::new(2);
    net.up();
    let g: Ipv4Addr = "224.1.2.3".parse().unwrap();
    let m = mgid4("224.1.2.3");
    net.join(3, IpAddr::V4(g)).unwrap();
    net.run_for(Duration::from_secs(1));
    net.send(2, &udp4(v4(2), g, b"one"));
    net.run_for(Duration::from_secs(1));
    assert_eq!(got(&mut net, 3, g, b"one"), 1);
    let gid2 = net.iface(2).gid();
    assert_eq!(
        net.sa.member_join_state(&m, &gid2),
        Some(JoinState::SEND_ONLY_NON_MEMBER)
    );

    // Host 2's MADs are logged under its LID, 12 after the change.
    let reqs = |net: &Net| [mc_requests(net, 2, m), mc_requests(net, 12, m)].concat();
    net.relid(2, 12);
    net.run_for(Duration::from_secs(2));
    assert!(net.iface(2).carrier());
    assert_eq!(net.sa.member_join_state(&m, &gid2), None, "left at the SA");
    assert_eq!(
        reqs(&net),
        vec![
            (Method::Set, JoinState::SEND_ONLY_NON_MEMBER),
            (Method::Delete, JoinState::SEND_ONLY_NON_MEMBER)
        ]
    );
    assert_eq!(
        net.iface(3).groups().iter().filter(|i| i.mgid == m).count(),
        1
    );

    net.send(2, &udp4(v4(2), g, b"two"));
    net.run_for(Duration::from_secs(1));
    assert_eq!(
        got(&mut net, 3, g, b"two"),
        1,
        "joined again by the next packet"
    );
    assert_eq!(
        net.sa.member_join_state(&m, &gid2),
        Some(JoinState::SEND_ONLY_NON_MEMBER)
    );

    // Port down: the SA cannot be told; nothing is sent.
    let before = reqs(&net).len();
    net.port(2, |p| p.active = false);
    net.run_for(Duration::from_secs(1));
    assert_eq!(reqs(&net).len(), before);
}

/// Drops the first `n` SubnAdmDelete(MCMemberRecord) of `mgid` host `lid` sends; the count of
/// those dropped so far.
fn lose_leaves(net: &mut Net, lid: u16, mgid: Gid, n: u32) -> std::rc::Rc<std::cell::Cell<u32>> {
    let lost = std::rc::Rc::new(std::cell::Cell::new(0));
    let seen = lost.clone();
    net.filter = Box::new(move |from, m| {
        let leave = from == lid
            && SaMadRepr::parse(&m.mad).is_ok_and(|r| {
                r.header.method == Method::Delete
                    && matches!(r.attribute, SaAttribute::McMemberRecord(rec) if rec.mgid == mgid)
            });
        let drop = leave && seen.get() < n;
        if drop {
            seen.set(seen.get() + 1);
        }
        drop
    });
    lost
}

// Linux `core/multicast.c` `leave_handler`: a leave answered with an error (a timeout here) is sent
// again, up to 3 times; then the interface gives up (it has logged each failure, §13).
#[test]
fn a_failed_leave_is_sent_again_up_to_three_times() {
    let g: Ipv4Addr = "224.1.2.3".parse().unwrap();
    let m = mgid4("224.1.2.3");
    // The SA client sends a request 4 times (1 s doubling to 8 s) before it fails.
    let tries = 4;
    for (lost_tries, left) in [(1, true), (4, false)] {
        let mut net = Net::new(2);
        net.up();
        net.join(2, IpAddr::V4(g)).unwrap();
        net.run_for(Duration::from_secs(1));
        let gid2 = net.iface(2).gid();
        assert_eq!(
            net.sa.member_join_state(&m, &gid2),
            Some(JoinState::FULL_MEMBER)
        );
        let lost = lose_leaves(&mut net, 2, m, lost_tries * tries);
        net.leave(2, IpAddr::V4(g)).unwrap();
        net.run_for(Duration::from_secs(200));
        assert_eq!(lost.get(), lost_tries * tries, "{lost_tries} leaves lost");
        let sent = mc_requests(&net, 2, m);
        let deletes = sent.iter().filter(|r| r.0 == Method::Delete).count();
        if left {
            assert_eq!(
                net.sa.member_join_state(&m, &gid2),
                None,
                "left at the second try"
            );
            assert_eq!(deletes, 1);
        } else {
            assert_eq!(
                net.sa.member_join_state(&m, &gid2),
                Some(JoinState::FULL_MEMBER)
            );
            assert_eq!(deletes, 0, "nothing after the fourth leave failed");
        }
        let failed = net
            .host(2)
            .logs()
            .iter()
            .filter(|l| l.contains("leave"))
            .count();
        assert_eq!(failed, lost_tries as usize, "each failed leave logged");
    }
}

// While a sender's send-only join is pending its frames wait in the group, as many as Linux's
// `IPOIB_MAX_MCAST_QUEUE` (64, docs/IPOIB-JOINS.md), and go out once it is joined; the rest are
// dropped and counted, and all groups together hold at most `max_mcast_queued` frames.
#[test]
fn frames_wait_for_a_pending_send_only_join_up_to_64_per_group() {
    let mut net = Net::with(3, |_, c| c.max_mcast_queued = 100);
    net.up();
    let (a, b): (Ipv4Addr, Ipv4Addr) = ("224.1.1.1".parse().unwrap(), "224.2.2.2".parse().unwrap());
    net.join(3, IpAddr::V4(a)).unwrap();
    net.join(3, IpAddr::V4(b)).unwrap();
    net.run_for(Duration::from_secs(1));
    for i in 0..70u32 {
        net.send(2, &udp4(v4(2), a, format!("a{i:03}").as_bytes()));
    }
    let full = |net: &mut Net| net.iface(2).counters().dropped(DropReason::McastQueueFull);
    assert_eq!(full(&mut net), 6);
    for i in 0..64u32 {
        net.send(2, &udp4(v4(2), b, format!("b{i:03}").as_bytes()));
    }
    assert_eq!(full(&mut net), 6 + 28, "100 frames in all groups");
    // A new group's first frame meets the same bound: dropped, no join started.
    let c: Ipv4Addr = "224.3.3.3".parse().unwrap();
    net.send(2, &udp4(v4(2), c, b"c000"));
    assert_eq!(full(&mut net), 35);
    assert!(mc_requests(&net, 2, mgid4("224.3.3.3")).is_empty());
    net.run_for(Duration::from_secs(1));
    let arrived = |net: &mut Net, g: Ipv4Addr, tag: &str, n: u32| {
        (0..n)
            .filter(|i| got(net, 3, g, format!("{tag}{i:03}").as_bytes()) == 1)
            .count()
    };
    let order: Vec<Vec<u8>> = net
        .host(3)
        .delivered
        .iter()
        .filter(|p| Ipv4Packet::new_checked(&p[..]).is_ok_and(|ip| ip.dst_addr() == a))
        .map(|p| p[p.len() - 4..].to_vec())
        .collect();
    let first: Vec<Vec<u8>> = (0..64u32)
        .map(|i| format!("a{i:03}").into_bytes())
        .collect();
    assert_eq!(order, first, "the first 64, in order");
    assert_eq!(arrived(&mut net, b, "b", 64), 36);
    // Joined: the next frames go at once.
    net.send(2, &udp4(v4(2), a, b"late"));
    net.run_for(Duration::from_millis(10));
    assert_eq!(got(&mut net, 3, a, b"late"), 1);
    assert_eq!(full(&mut net), 35);
}

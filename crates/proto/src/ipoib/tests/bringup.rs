//! Bring-up and port events (draft-ietf-ipoib-ip-over-infiniband-06 §4.1, §5, §7, §9.1.2 b;
//! docs/DEPLOYED.md "Linux IPoIB").

use super::*;
use ipoib_wire::mad::{MadStatus, Method};
use ipoib_wire::sa::{JoinState, SaAttribute, SaMadRepr};
use ipoib_wire::Mtu;
use ipoib_wire::QKey;

fn joins(net: &Net, lid: u16) -> Vec<(Instant, McMemberRecordRepr)> {
    net.log
        .iter()
        .filter(|(_, f, _)| *f == lid)
        .filter_map(|(t, _, m)| {
            let r = SaMadRepr::parse(&m.mad).ok()?;
            match (r.header.method, r.attribute) {
                (Method::Set, SaAttribute::McMemberRecord(rec)) => Some((*t, rec)),
                _ => None,
            }
        })
        .collect()
}

// draft-ietf-ipoib-ip-over-infiniband-06 §5: every interface MUST FullMember-join the broadcast
// group (§4 fig. 2, §4.1 item 1: full-member P_Key, link-local scope); the join returns Q_Key and MTU
// which the interface takes (§9.1.2 b); carrier only after the join; link MTU = 2048 - 4 (§7).
#[test]
fn bring_up_joins_broadcast_then_carrier() {
    let mut net = Net::new(2);
    net.port(2, |_| {});
    assert!(!net.iface(2).carrier());
    // Before the SA answers: a join is on its way and nothing else happened.
    let first = net.iface(2).poll_mad(Instant::ZERO).expect("a join");
    let m = SaMadRepr::parse(&first.mad).expect("SA MAD");
    assert_eq!(m.header.method, Method::Set);
    let SaAttribute::McMemberRecord(rec) = m.attribute else {
        panic!("{:?}", m.attribute)
    };
    assert_eq!(rec.mgid, BCAST);
    assert_eq!(rec.mgid.to_ipv6().to_string(), "ff12:401b:ffff::ffff:ffff");
    assert_eq!(rec.join_state, JoinState::FULL_MEMBER);
    // docs/IPOIB-JOINS.md (Linux `ipoib_mcast_join`): the broadcast group must pre-exist; the
    // join carries MGID, PortGID, JoinState and the interface's full P_Key (§4.1 item 1), no
    // creation components, so the interface never creates it (§5 leaves creation to the
    // administrator).
    use ipoib_wire::sa::mcr_mask;
    assert_eq!(m.sa.component_mask, mcr_mask::JOIN | mcr_mask::P_KEY);
    assert_eq!(rec.pkey, ipoib_wire::PKey(0xffff));
    assert_eq!(
        rec.port_gid,
        Gid::new(Gid::DEFAULT_SUBNET_PREFIX, guid(2).0)
    );
    assert_eq!(first.to.lid, SM_LID);
    assert!(net.host(2).events.is_empty());
    let mut net = Net::new(2);
    net.up();
    let h = net.host(2);
    let order: Vec<&InterfaceEvent> = h
        .events
        .iter()
        .filter(|e| !matches!(e, InterfaceEvent::Log(..)))
        .take(3)
        .collect();
    assert_eq!(
        order,
        vec![
            &InterfaceEvent::SetQkey(QKey(0x0b1b)),
            &InterfaceEvent::Attach {
                mgid: BCAST,
                mlid: 0xc000
            },
            &InterfaceEvent::CarrierUp
        ]
    );
    assert!(h.iface.carrier());
    assert_eq!(h.iface.mtu(), 2044);
    let p = h.iface.link_params().expect("params");
    assert_eq!(p.record.qkey, QKey(0x0b1b));
    assert_eq!(p.record.mlid, 0xc000);
    // §9.1.1: the link-layer address is flags 0, the UD QPN, subnet prefix + port GUID.
    assert_eq!(
        h.iface.hw_addr().to_string(),
        "00:00:00:4a:fe:80:00:00:00:00:00:00:00:02:c9:03:00:00:00:02"
    );
    // §9.1.2 b: every datagram carries the broadcast group's Q_Key.
    assert!(net.wire.iter().all(|s| s.t.qkey == QKey(0x0b1b)));
}

// draft-ietf-ipoib-ip-over-infiniband-06 §5, §7: the link MTU is the broadcast group's. An answer
// whose MTU code is undefined gives none: it is refused where it enters (no parameters, no carrier,
// the failure logged per §13), not turned into a guessed MTU. The same answer with MTU 2048 is taken.
#[test]
fn broadcast_answer_with_undefined_mtu_is_refused() {
    for (mtu, taken) in [
        (Mtu::Unknown(0), false),
        (Mtu::Unknown(6), false),
        (Mtu::Mtu2048, true),
    ] {
        let mut net = Net::new(2);
        net.port(2, |_| {});
        let join = net.iface(2).poll_mad(Instant::ZERO).expect("a join");
        let req = SaMadRepr::parse(&join.mad).expect("SA MAD");
        let SaAttribute::McMemberRecord(mut rec) = req.attribute else {
            panic!("{:?}", req.attribute)
        };
        (rec.mlid, rec.qkey, rec.mtu) = (0xc000, QKey(0x0b1b), mtu);
        let answer = req.response(MadStatus::SUCCESS, SaAttribute::McMemberRecord(rec));
        let from = join.to;
        let mad = answer.to_bytes().to_vec();
        net.iface(2).handle_mad(Instant::ZERO, MadIn { from, mad });
        let iface = net.iface(2);
        assert_eq!(iface.carrier(), taken, "{mtu:?}");
        assert_eq!(iface.link_params().is_some(), taken, "{mtu:?}");
        let mut logs = Vec::new();
        while let Some(e) = iface.poll_event() {
            if let InterfaceEvent::Log(_, m) = e {
                logs.push(m);
            }
        }
        let failed = logs
            .iter()
            .any(|l| l.contains("multicast join ff12:401b:ffff::ffff:ffff"));
        assert_eq!(failed, !taken, "{mtu:?}: {logs:?}");
    }
}

// draft-ietf-ipoib-ip-over-infiniband-06 §7: link MTU = broadcast group MTU - 4, also for a group
// of 1024; a configured smaller MTU wins.
#[test]
fn link_mtu_follows_group_mtu() {
    let parts =
        crate::partitions::parse("Default=0x7fff, ipoib, mtu=3 : ALL=full ;").expect("partitions");
    let mut c = InterfaceConfig::new(guid(2), qpn(2));
    c.ipv6 = false;
    let mut c3 = InterfaceConfig::new(guid(3), qpn(3));
    c3.mtu = Some(1000);
    let mut net = Net::custom(vec![(2, c), (3, c3)], parts, &[]);
    net.up();
    assert_eq!(net.iface(2).mtu(), 1020);
    assert_eq!(net.iface(3).mtu(), 1000);
}

// docs/IPOIB-JOINS.md (Linux `__ipoib_mcast_schedule_join_thread`): joins retried with backoff
// 2 s doubling to 16 s; carrier only once the broadcast join succeeds.
#[test]
fn broadcast_join_retried_with_backoff() {
    let mut net = Net::with(1, |_, c| {
        c.sa.retries = 0;
        c.sa.timeout = Duration::from_secs(1);
    });
    net.filter = Box::new(|from, _| from != SM_LID);
    net.port(2, |_| {});
    net.run_for(Duration::from_secs(60));
    assert!(!net.iface(2).carrier());
    // Every send was dropped, so none is in the log: count the timeouts through the log events.
    let fails = net
        .host(2)
        .logs()
        .iter()
        .filter(|l| l.contains("multicast join ff12:401b:ffff::ffff:ffff"))
        .count();
    // Tries at 0, 3, 8, 17, 34, 51 (each times out after 1 s, then waits 2, 4, 8, 16, 16).
    assert_eq!(fails, 6);
    net.filter = Box::new(|_, _| false);
    net.run_for(Duration::from_secs(17));
    assert!(net.iface(2).carrier());
    let starts: Vec<u64> = joins(&net, 2)
        .iter()
        .map(|(t, _)| t.as_nanos() / 1_000_000_000)
        .collect();
    // The try after 52's failure.
    assert_eq!(starts.first(), Some(&68), "{starts:?}");
}

// InterfaceConfig::log_level: at Warn the interface still logs what §13 asks for (a failed
// multicast join) but no informational message (carrier up); at the default, Info, both.
#[test]
fn log_level_warn_keeps_only_warnings() {
    let mut net = Net::with(2, |lid, c| {
        c.sa.retries = 0;
        c.sa.timeout = Duration::from_secs(1);
        if lid == 2 {
            c.log_level = LogLevel::Warn;
        }
    });
    net.filter = Box::new(|from, _| from != SM_LID);
    net.port(2, |_| {});
    net.port(3, |_| {});
    net.run_for(Duration::from_millis(1500));
    net.filter = Box::new(|_, _| false);
    net.run_for(Duration::from_secs(5));
    let messages = |net: &mut Net, lid: u16| -> Vec<(LogLevel, String)> {
        net.host(lid)
            .events
            .iter()
            .filter_map(|e| match e {
                InterfaceEvent::Log(l, m) => Some((*l, m.clone())),
                _ => None,
            })
            .collect()
    };
    for lid in [2, 3] {
        assert!(net.iface(lid).carrier(), "host {lid}");
        let m = messages(&mut net, lid);
        assert!(
            m.iter().any(|(l, s)| *l == LogLevel::Warn
                && s.starts_with("multicast join ff12:401b:ffff::ffff:ffff")),
            "host {lid}: {m:?}"
        );
        let info = m
            .iter()
            .any(|(l, s)| *l == LogLevel::Info && s.starts_with("carrier up"));
        assert_eq!(info, lid == 3, "host {lid}: {m:?}");
    }
}

// draft-ietf-ipoib-ip-over-infiniband-06 §5: the P_Key must be the port's before the link forms; no
// join is attempted without it.
#[test]
fn no_pkey_no_link() {
    let mut net = Net::new(1);
    net.host(2).port.pkey_index = None;
    net.up();
    assert!(!net.iface(2).carrier());
    assert!(net.mads_from(2).is_empty());
    // The SM adds the P_Key: the link forms.
    net.port(2, |p| p.pkey_index = Some(0));
    net.run_for(Duration::from_secs(5));
    assert!(net.iface(2).carrier());
    // And removes it again: carrier down (docs/DEPLOYED.md: P_Key change is a heavy flush).
    net.port(2, |p| p.pkey_index = None);
    net.settle();
    assert!(!net.iface(2).carrier());
    assert!(net.host(2).events.contains(&InterfaceEvent::CarrierDown));
    assert!(net.host(2).attached.is_empty());
}

// docs/DEPLOYED.md "Linux IPoIB" port events: LID change flushes paths and neighbours and rejoins
// with a
// carrier bounce; SM change marks paths invalid and rejoins without one; traffic flows afterwards.
#[test]
fn port_events_refresh_and_flush() {
    let mut net = Net::new(2);
    net.up();
    net.send(2, &ping4(v4(2), v4(3), true, 1));
    net.run_for(Duration::from_secs(1));
    assert!(net.host(2).delivered.iter().any(|p| is_echo(p, false, 1)));
    assert_eq!(net.iface(2).neighbours().len(), 1);
    assert_eq!(net.iface(2).paths().len(), 1);

    // SM change: light flush; the carrier stays up, paths are asked again on next use.
    let before = net.host(2).events.len();
    net.port(2, |p| p.sm_sl = 1);
    net.run_for(Duration::from_secs(2));
    let ev = net.host(2).events[before..].to_vec();
    assert!(!ev.contains(&InterfaceEvent::CarrierDown));
    assert!(ev.contains(&InterfaceEvent::Attach {
        mgid: BCAST,
        mlid: 0xc000
    }));
    assert_eq!(net.iface(2).neighbours().len(), 1);
    let queries = |net: &Net| net.path_queries(2);
    let q0 = queries(&net);
    net.send(2, &ping4(v4(2), v4(3), true, 2));
    net.run_for(Duration::from_secs(1));
    assert_eq!(queries(&net), q0 + 1, "an invalidated path is asked again");
    assert!(net.host(2).delivered.iter().any(|p| is_echo(p, false, 2)));

    // LID change: normal flush: carrier down, detach, neighbours and paths gone, then up again.
    let before = net.host(2).events.len();
    net.port(2, |p| p.mtu = ipoib_wire::Mtu::Mtu2048);
    assert_eq!(
        net.host(2).events.len(),
        before,
        "no event without a change"
    );
    net.relid(2, 12);
    net.settle();
    assert!(net.iface(2).neighbours().is_empty());
    assert!(net.iface(2).paths().is_empty());
    net.run_for(Duration::from_secs(2));
    let st = net.sa.stats().clone();
    assert!(
        net.iface(2).carrier(),
        "{:?} {:?}",
        &net.host(2).events[before..],
        st
    );
    let ev = net.host(2).events[before..].to_vec();
    let down = ev.iter().position(|e| *e == InterfaceEvent::CarrierDown);
    let up = ev.iter().position(|e| *e == InterfaceEvent::CarrierUp);
    assert!(down.is_some() && up > down, "{ev:?}");
    net.send(2, &ping4(v4(2), v4(3), true, 3));
    net.run_for(Duration::from_secs(1));
    assert!(net.host(2).delivered.iter().any(|p| is_echo(p, false, 3)));
    // Host 3 learned the new LID through a new path query (its old path was to LID 2).
    assert!(net.iface(3).paths().iter().any(|(_, p)| p.dlid == 12));

    // Port down: carrier down and nothing sent until it is back.
    net.port(2, |p| p.active = false);
    net.settle();
    assert!(!net.iface(2).carrier());
    let sent = net.sent_by(12).len();
    net.send(2, &ping4(v4(2), v4(3), true, 4));
    net.settle();
    assert_eq!(net.sent_by(12).len(), sent);
    assert_eq!(net.iface(2).counters().dropped(DropReason::NotUp), 1);
}

// IBA 1 §14.4.11 (Linux IB_EVENT_CLIENT_REREGISTER, docs/DEPLOYED.md "Linux IPoIB"): a
// ClientReregister with nothing else changed is a light flush: every group is joined again at
// the SA, the carrier stays up, and traffic flows afterwards.
#[test]
fn client_reregister_joins_again() {
    let mut net = Net::new(2);
    let joins = |net: &Net| {
        net.mads_from(2)
            .iter()
            .filter(|m| {
                SaMadRepr::parse(&m.mad).is_ok_and(|r| {
                    r.header.method == Method::Set
                        && matches!(r.attribute, SaAttribute::McMemberRecord(_))
                })
            })
            .count()
    };
    net.up();
    let (j0, before) = (joins(&net), net.host(2).events.len());
    assert!(j0 >= 1);
    net.client_reregister(2);
    net.run_for(Duration::from_secs(2));
    assert!(joins(&net) > j0, "joined again");
    let ev = net.host(2).events[before..].to_vec();
    assert!(!ev.contains(&InterfaceEvent::CarrierDown));
    assert!(ev.contains(&InterfaceEvent::Attach {
        mgid: BCAST,
        mlid: 0xc000
    }));
    net.send(2, &ping4(v4(2), v4(3), true, 1));
    net.run_for(Duration::from_secs(1));
    assert!(net.host(2).delivered.iter().any(|p| is_echo(p, false, 1)));
}

// draft-ietf-ipoib-ip-over-infiniband-06 §4.1 item 4: a node may search for a broadcast GID of ever
// greater scope starting with link-local; §4: every MGID then uses the scope found. Off by default:
// without the search the link does not form.
#[test]
fn broadcast_scope_search() {
    let parts = crate::partitions::parse("Default=0x7fff, ipoib, scope=5 : ALL=full ;")
        .expect("partitions");
    let mk = |lid: u16, search: bool| {
        let mut c = InterfaceConfig::new(guid(lid), qpn(lid));
        c.scope_search = search;
        (lid, c)
    };
    let mut net = Net::custom(vec![mk(2, true), mk(3, false)], parts, &[]);
    net.up();
    assert!(net.iface(2).carrier());
    assert_eq!(net.iface(2).scope(), Scope::SiteLocal);
    let b = net.iface(2).link_params().unwrap().record.mgid;
    assert_eq!(b.to_ipv6().to_string(), "ff15:401b:ffff::ffff:ffff");
    assert!(net
        .host(2)
        .attached
        .iter()
        .any(|m| m.to_ipv6().to_string() == "ff15:601b:ffff::1"));
    assert!(!net.iface(3).carrier());
}

// draft-ietf-ipoib-ip-over-infiniband-06 §11: every group uses the broadcast group's Q_Key, MTU
// and the rest. After a light flush (ClientReregister at a new SA, IBA 1 §14.4.11) the other
// groups are joined only once the broadcast group answered again, so a group the new SA creates
// copies the new broadcast group's parameters, not the ones of the SA before, which the new SA
// refuses (Linux defers every other join until the broadcast group is attached,
// `ipoib_mcast_join_task`).
#[test]
fn after_client_reregister_groups_wait_for_the_broadcast_answer() {
    let mut net = Net::new(2);
    net.up();
    let g = IpAddr::V4("224.1.2.3".parse().unwrap());
    net.join(2, g).unwrap();
    net.run_for(Duration::from_secs(1));
    // A new SM and SA whose broadcast group has another Q_Key, holding no membership.
    let parts =
        crate::partitions::parse("Default=0x7fff, ipoib, Q_Key=0x1234 : ALL=full ;").unwrap();
    let lids: Vec<(u16, u16, Vec<u16>)> = vec![(2, 2, vec![0xffff]), (3, 3, vec![0xffff])];
    net.sa = SaServer::new(SaServerConfig::default(), model(&lids), parts, Rng::new(43));
    let start = net.now;
    net.client_reregister(2);
    net.run_for(Duration::from_secs(2));
    let after: Vec<(Instant, McMemberRecordRepr)> = joins(&net, 2)
        .into_iter()
        .filter(|(t, _)| *t >= start)
        .collect();
    let first = after.first().expect("joined again").1;
    assert_eq!(first.mgid, BCAST, "the broadcast group first");
    assert_eq!(
        net.iface(2).link_params().unwrap().record.qkey,
        QKey(0x1234)
    );
    let m =
        ipoib_wire::ipoib::ipv4_mgid("224.1.2.3".parse().unwrap(), PKey(0xffff), Scope::LinkLocal);
    let rec = net
        .sa
        .groups()
        .into_iter()
        .find(|x| x.record.mgid == m)
        .expect("group created again")
        .record;
    assert_eq!(rec.qkey, QKey(0x1234), "the new broadcast group's Q_Key");
    // §13: no join was refused (a join with the old Q_Key is, and waits a backoff to be retried).
    assert_eq!(after.iter().filter(|(_, r)| r.mgid == m).count(), 1);
    let logs = net.host(2).logs();
    assert!(!logs.iter().any(|l| l.contains("failed")), "{logs:?}");
}

// §7: after a ClientReregister at a new SA whose broadcast group has another MTU, the link MTU
// is the new group's less 4 while the carrier stays up (a light flush): the runtime reads it and
// sets the TUN device's as Linux IPoIB does at every broadcast join (docs/LINUX-DEVICE.md).
#[test]
fn after_client_reregister_the_link_mtu_is_the_new_groups() {
    let mut net = Net::new(2);
    net.up();
    assert_eq!(net.iface(2).mtu(), 2044);
    let parts = crate::partitions::parse("Default=0x7fff, ipoib, mtu=3 : ALL=full ;").unwrap();
    let lids: Vec<(u16, u16, Vec<u16>)> = vec![(2, 2, vec![0xffff]), (3, 3, vec![0xffff])];
    net.sa = SaServer::new(SaServerConfig::default(), model(&lids), parts, Rng::new(43));
    let seen = net.host(2).events.len();
    net.client_reregister(2);
    net.run_for(Duration::from_secs(2));
    let carrier_lost = net.host(2).events[seen..]
        .iter()
        .any(|e| matches!(e, InterfaceEvent::CarrierDown));
    assert!(net.iface(2).carrier() && !carrier_lost);
    assert_eq!(net.iface(2).mtu(), 1020);
}

// A failed PathRecord query is remembered `PATH_FAILED_HOLD` (1 s) before the next packet asks
// again (Linux clears `path->query` and the next packet starts a new one about a second later),
// for an invalidated path too: after a light flush, an SA that no longer knows the peer is asked
// once per hold, not once per packet, while the old path keeps carrying the traffic (Linux
// `ipoib_mark_paths_invalid`).
#[test]
fn failed_refresh_of_an_invalidated_path_waits_the_hold() {
    let mut net = Net::new(2);
    net.up();
    net.send(2, &ping4(v4(2), v4(3), true, 1));
    net.run_for(Duration::from_secs(1));
    assert!(net.host(2).delivered.iter().any(|p| is_echo(p, false, 1)));
    // The SA no longer knows host 3; the SM asks host 2 to register again (paths invalidated).
    net.sa.set_subnet(model(&[(2, 2, vec![0xffff])]));
    net.client_reregister(2);
    net.run_for(Duration::from_secs(2));
    let queries = |net: &Net| net.path_queries(2);
    let to3 = |net: &Net| net.sent_by(2).iter().filter(|s| s.t.dlid == 3).count();
    let (q0, s0) = (queries(&net), to3(&net));
    for i in 0..5u8 {
        net.send(2, &udp4(v4(2), v4(3), &[i]));
        net.run_for(Duration::from_millis(100));
    }
    assert_eq!(queries(&net), q0 + 1, "one query per hold, not per packet");
    assert_eq!(to3(&net), s0 + 5, "the old path still carries the packets");
    assert!(net.host(2).logs().iter().any(|l| l.contains("path record")));
    net.run_for(Duration::from_secs(1));
    net.send(2, &udp4(v4(2), v4(3), b"later"));
    net.run_for(Duration::from_millis(100));
    assert_eq!(queries(&net), q0 + 2, "asked again after the hold");
}

// draft-ietf-ipoib-ip-over-infiniband-06 §4: all MGIDs MUST use the broadcast GID's scope bits.
// An IP group joined before the scope search settled (§4.1 item 4: the broadcast group exists at
// scope 5 only) is joined at scope 5 too, and leaving it leaves that group. Fails on the old code,
// which joined it at the scope of the moment it was asked (ff12:…) and never moved it.
#[test]
fn groups_follow_the_scope_search() {
    let parts = crate::partitions::parse("Default=0x7fff, ipoib, scope=5 : ALL=full ;")
        .expect("partitions");
    let mut c = InterfaceConfig::new(guid(2), qpn(2));
    c.scope_search = true;
    c.ipv4 = Some(Ipv4Config {
        addr: v4(2),
        prefix_len: 24,
        gateway: None,
    });
    let mut net = Net::custom(vec![(2, c)], parts, &[]);
    let g = IpAddr::V4("224.1.2.3".parse().unwrap());
    net.join(2, g).unwrap();
    net.up();
    assert!(net.iface(2).carrier());
    assert_eq!(net.iface(2).scope(), Scope::SiteLocal);
    let scopes = mgids(&mut net, 2);
    assert!(
        scopes.iter().all(|m| m.starts_with("ff15:")),
        "every MGID at the broadcast group's scope: {scopes:?}"
    );
    let m =
        ipoib_wire::ipoib::ipv4_mgid("224.1.2.3".parse().unwrap(), PKey(0xffff), Scope::SiteLocal);
    let gid2 = net.iface(2).gid();
    assert_eq!(
        net.sa.member_join_state(&m, &gid2),
        Some(JoinState::FULL_MEMBER)
    );
    assert!(net.host(2).attached.contains(&m));
    net.leave(2, g).unwrap();
    net.run_for(Duration::from_secs(1));
    assert_eq!(net.sa.member_join_state(&m, &gid2), None);
    assert!(!net.host(2).attached.contains(&m));
    assert!(net.iface(2).groups().iter().all(|i| i.mgid != m));
}

// §4 and §4.1 item 4 after a light flush: a new SA has the broadcast group at scope 5 only; the
// interface, up all along, moves its own groups to scope 5 and sends the broadcast that waited for
// the rejoin on the new broadcast group. Fails on the old code: the all-nodes and solicited-node
// groups stayed at ff12 and the waiting frame was lost without a count.
#[test]
fn light_flush_scope_change_moves_groups_and_waiting_frames() {
    let mut c = InterfaceConfig::new(guid(2), qpn(2));
    c.scope_search = true;
    c.ipv4 = Some(Ipv4Config {
        addr: v4(2),
        prefix_len: 24,
        gateway: None,
    });
    let mut net = Net::custom(vec![(2, c)], PartitionConfig::default_config(), &[]);
    net.up();
    assert_eq!(net.iface(2).scope(), Scope::LinkLocal);
    let parts = crate::partitions::parse("Default=0x7fff, ipoib, scope=5 : ALL=full ;").unwrap();
    let lids: Vec<(u16, u16, Vec<u16>)> = vec![(2, 2, vec![0xffff])];
    net.sa = SaServer::new(SaServerConfig::default(), model(&lids), parts, Rng::new(43));
    net.client_reregister(2);
    let sent0 = net.wire.len();
    net.send(2, &udp4(v4(2), Ipv4Addr::new(10, 0, 0, 255), b"waited"));
    net.run_for(Duration::from_secs(5));
    assert!(net.iface(2).carrier());
    assert_eq!(net.iface(2).scope(), Scope::SiteLocal);
    let groups = mgids(&mut net, 2);
    assert!(groups.iter().all(|m| m.starts_with("ff15:")), "{groups:?}");
    let b5 = "ff15:401b:ffff::ffff:ffff";
    assert!(
        net.wire[sent0..].iter().any(|s| s.from == 2
            && s.t.grh.is_some_and(|g| g.gid.to_ipv6().to_string() == b5)
            && s.t.data.ends_with(b"waited")),
        "the waiting broadcast goes to the new broadcast group"
    );
}

/// The MGIDs of host `h`'s groups, as text.
fn mgids(net: &mut Net, h: u16) -> Vec<String> {
    net.iface(h)
        .groups()
        .iter()
        .map(|i| i.mgid.to_ipv6().to_string())
        .collect()
}

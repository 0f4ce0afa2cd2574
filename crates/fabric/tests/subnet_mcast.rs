//! Joins and leaves with correct membership, MLIDs and traps. On a 40-host
//! fat tree (3 leaves, 18 spines): subscribers of traps 66/67 (InformInfo, IBA 1 §13.4.8.3) get
//! Report(Notice 66) with the MGID when a new group gets its first full member and Notice 67 when
//! it loses its last (IBA 1 o14-12.1.11/12; OpenSM `mgrp_send_notice`); the SA's membership and
//! MLIDs follow the joins and leaves; and the SM's multicast trees really are in the switches: a
//! UD datagram a member sends to the MLID reaches exactly the other members, and after a leave no
//! longer reaches the leaver even though its QP is still attached (IBA 1 §18.2.4.3).

use ipoib_fabric::hw::hca::HcaDropReason;
use ipoib_fabric::hw::topology::Topology;
use ipoib_fabric::node::subnet::{Subnet, SubnetOptions};
use ipoib_fabric::testing::{at, received, seed, send_ud, ud_qp, SeedGuard};
use ipoib_proto::sa::SaClientEvent;
use ipoib_wire::ib::BthRepr;
use ipoib_wire::mad::{InformInfoRepr, Method, NoticeRepr};
use ipoib_wire::sa::{mcr_mask, JoinState, McMemberRecordRepr, SaAttribute, SaMadRepr};
use ipoib_wire::{Gid, Mtu};
use ipoib_wire::{PKey, QKey};
use std::collections::BTreeSet;
use std::time::Duration;

const QKEY: QKey = QKey(0x0001_2345);

fn reports(net: &mut Subnet, i: usize) -> Vec<NoticeRepr> {
    net.take_sa_events(i)
        .into_iter()
        .filter_map(|e| match e {
            SaClientEvent::Report { notice, .. } => Some(notice),
            _ => None,
        })
        .collect()
}

fn join(net: &mut Subnet, i: usize, mgid: Gid, create: bool) -> McMemberRecordRepr {
    let mut rec = McMemberRecordRepr {
        mgid,
        port_gid: net.gid(i),
        join_state: JoinState::FULL_MEMBER,
        ..McMemberRecordRepr::default()
    };
    let mut mask = mcr_mask::JOIN;
    if create {
        rec.qkey = QKEY;
        rec.pkey = PKey(0xffff);
        mask |= mcr_mask::CREATE;
    }
    let m = SaMadRepr::mcmember_join(0, rec, mask);
    match net.sa_call(i, m, Duration::from_secs(5)) {
        Ok(r) => match r.attribute {
            Some(SaAttribute::McMemberRecord(r)) => r,
            a => panic!("host {i}: join answered {a:?}"),
        },
        Err(e) => panic!("host {i}: join failed: {e}"),
    }
}

fn leave(net: &mut Subnet, i: usize, mgid: Gid) {
    let rec = McMemberRecordRepr {
        mgid,
        port_gid: net.gid(i),
        join_state: JoinState::FULL_MEMBER,
        ..McMemberRecordRepr::default()
    };
    let m = SaMadRepr::mcmember_leave(0, rec, mcr_mask::JOIN);
    let r = net.sa_call(i, m, Duration::from_secs(5));
    assert!(r.is_ok(), "host {i}: leave failed: {r:?}");
}

fn members(net: &Subnet, mgid: Gid) -> Option<BTreeSet<Gid>> {
    net.sa()
        .groups()
        .into_iter()
        .find(|g| g.record.mgid == mgid)
        .map(|g| g.members.into_iter().map(|(gid, _)| gid).collect())
}

/// Sends one datagram from `from` to the group and returns the hosts whose QP received it.
fn multicast_once(
    net: &mut Subnet,
    from: usize,
    qps: &[(u32, ipoib_fabric::hw::hca::CqId)],
    mlid: u16,
    mgid: Gid,
    tag: u8,
) -> BTreeSet<usize> {
    send_ud(
        net,
        from,
        qps[from].0,
        mlid,
        BthRepr::MULTICAST_QPN,
        QKEY,
        Some(mgid),
        &[tag; 64],
    );
    net.sim_mut().run_for(Duration::from_millis(1));
    let mut got = BTreeSet::new();
    for (i, &(_, cq)) in qps.iter().enumerate() {
        let c = received(net, i, cq);
        assert!(c.len() <= 1, "host {i} got {} copies", c.len());
        if let Some(c) = c.first() {
            assert_eq!(c.data, [tag; 64], "host {i}: payload");
            assert_eq!(
                c.grh.map(|g| g.dgid),
                Some(mgid),
                "host {i}: GRH to the MGID"
            );
            got.insert(i);
        }
    }
    got
}

// IBA 1 §13.4.8.3, o14-12.1.11, o14-12.1.12, §15.2.5.17, §18.2.4.3; OpenSM osm_sa_mcmember_record.c.
#[test]
fn joins_leaves_traps_and_multicast_forwarding() {
    let seed = seed(11);
    let _g = SeedGuard(seed);
    let n = 40;
    let mut net = Subnet::build(SubnetOptions::new(Topology::fat_tree(n).unwrap(), seed)).unwrap();
    assert!(net.run_until_joined(at(10)));
    // Every host joined the default partition's broadcast group, with one MLID and Q_Key 0x0b1b.
    let bcast = net.broadcast_joins(0)[0];
    let Some(b) = bcast.record else {
        panic!("host 0 not joined")
    };
    for i in 0..n {
        let j = net.broadcast_joins(i);
        assert_eq!(j.len(), 1);
        assert_eq!(j[0].mgid, bcast.mgid);
        let Some(r) = j[0].record else {
            panic!("host {i} not joined")
        };
        assert_eq!(
            (r.mlid, r.qkey, r.mtu),
            (b.mlid, QKey(0x0b1b), Mtu::Mtu2048),
            "host {i}"
        );
    }
    assert_eq!(members(&net, bcast.mgid).map(|m| m.len()), Some(n));

    // Subscribers to traps 66 and 67, on two leaves.
    let subscribers = [1usize, 2, 25];
    for &s in &subscribers {
        for trap in [66, 67] {
            let info = InformInfoRepr::generic(true, trap, 1);
            let m = SaMadRepr::request(Method::Set, 0, 0, SaAttribute::InformInfo(info));
            assert!(net.sa_call(s, m, Duration::from_secs(5)).is_ok());
        }
    }
    // Host 5 creates a group (MGID assigned by the SA); 6 (same leaf), 21 and 30 (other leaves) join.
    let created = join(&mut net, 5, Gid::ZERO, true);
    let mgid = created.mgid;
    assert_ne!(mgid, Gid::ZERO, "SA assigned an MGID");
    assert_ne!(created.mlid, b.mlid, "a new MLID");
    assert!((0xc000..=0xfffe).contains(&created.mlid));
    let group = [5usize, 6, 21, 30];
    for &i in &group[1..] {
        let r = join(&mut net, i, mgid, false);
        assert_eq!((r.mlid, r.qkey), (created.mlid, QKEY), "host {i}");
    }
    let want: BTreeSet<Gid> = group.iter().map(|&i| net.gid(i)).collect();
    assert_eq!(members(&net, mgid), Some(want));
    net.sim_mut().run_for(Duration::from_millis(2));
    for &s in &subscribers {
        let r = reports(&mut net, s);
        assert_eq!(r.len(), 1, "host {s}: one Report");
        assert_eq!(
            r[0].trap_number(),
            Some(NoticeRepr::TRAP_MCAST_GROUP_CREATED)
        );
        assert_eq!(
            r[0].trap_gid(),
            Some(mgid),
            "host {s}: Notice 66 names the group"
        );
    }
    assert!(
        reports(&mut net, 3).is_empty(),
        "no subscription, no Report"
    );
    assert_eq!(
        net.sa().stats().reports_lost,
        0,
        "every Report acknowledged"
    );

    // Forwarding: every host has a QP; members attach theirs.
    let qps: Vec<_> = (0..n).map(|i| ud_qp(&mut net, i, QKEY, 0)).collect();
    for &i in &group {
        let node = net.host(i).node;
        net.sim_mut()
            .with_node::<ipoib_fabric::node::host::Host, _>(node, |h, _, _| {
                h.hca_mut().attach_mcast(qps[i].0, mgid, created.mlid)
            })
            .unwrap()
            .unwrap();
    }
    let got = multicast_once(&mut net, 5, &qps, created.mlid, mgid, 1);
    assert_eq!(
        got,
        BTreeSet::from([6, 21, 30]),
        "exactly the other members"
    );
    for i in (0..n).filter(|i| !group.contains(i)) {
        let c = net.host_device(i).hca().counters();
        assert_eq!(
            c.drops(HcaDropReason::McastNotAttached),
            0,
            "host {i}: the switches sent it nothing"
        );
    }

    // Host 30 leaves; it keeps its QP attached, so only the MFTs can keep the packet away.
    leave(&mut net, 30, mgid);
    let want: BTreeSet<Gid> = [5, 6, 21].iter().map(|&i| net.gid(i)).collect();
    assert_eq!(members(&net, mgid), Some(want));
    net.sim_mut().run_for(Duration::from_millis(1));
    let got = multicast_once(&mut net, 5, &qps, created.mlid, mgid, 2);
    assert_eq!(got, BTreeSet::from([6, 21]), "the leaver no longer gets it");
    for &s in &subscribers {
        assert!(
            reports(&mut net, s).is_empty(),
            "no trap 67 while full members remain"
        );
    }

    // The rest leave: the last full member's leave deletes the group and sends trap 67.
    for i in [6, 21, 5] {
        leave(&mut net, i, mgid);
    }
    net.sim_mut().run_for(Duration::from_millis(2));
    assert_eq!(members(&net, mgid), None, "group deleted");
    for &s in &subscribers {
        let r = reports(&mut net, s);
        assert_eq!(r.len(), 1, "host {s}: one Report");
        assert_eq!(
            r[0].trap_number(),
            Some(NoticeRepr::TRAP_MCAST_GROUP_DELETED)
        );
        assert_eq!(
            r[0].trap_gid(),
            Some(mgid),
            "host {s}: Notice 67 names the group"
        );
    }
    for (n, sw) in net.switches() {
        assert_eq!(sw.mft(created.mlid), None, "switch {n}: MFT entry cleared");
    }
    assert!(net.sm().tree(created.mlid).is_none());
    assert!(
        net.sm().tree(b.mlid).is_some(),
        "broadcast group's tree stays"
    );
}

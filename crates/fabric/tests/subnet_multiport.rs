//! Multi-port HCAs on the emulated subnet: each cabled CA port is its own end node (IBA 1 §4.1.1:
//! its own LID and port GUID, hence GID; the node GUID shared), configured by the SM, answered
//! for by the SA's PathRecords (IBA 1 §15.2.5.16) and routed to by the switches; a host's
//! software (SA client, IPoIB) runs on its first port the SM reaches, whichever number that is.

use ipoib_fabric::hw::hca::{CqId, ModifyQp, QpInit};
use ipoib_fabric::hw::mgmt::PortState;
use ipoib_fabric::hw::switch::Switch;
use ipoib_fabric::hw::topology::{End, NodeKind, Topology};
use ipoib_fabric::hw::verbs::{QpType, Qpn, RecvWr};
use ipoib_fabric::node::host::Host;
use ipoib_fabric::node::subnet::Subnet;
use ipoib_fabric::testing::nets::{DUAL_HOMED, NET};
use ipoib_fabric::testing::{
    all_pairs, options, ping_pairs, received, rtt, seed, send_ud, up, v4, SeedGuard,
};
use ipoib_proto::sa::SaClientEvent;
use ipoib_wire::mad::Method;
use ipoib_wire::sa::{pr_mask, PathRecordRepr, SaAttribute, SaMadRepr};
use ipoib_wire::QKey;
use ipoib_wire::{Gid, Guid};
use std::collections::BTreeSet;
use std::time::Duration;

/// Host `i`'s HCA port `port`.
fn port(net: &Subnet, i: usize, port: u8) -> ipoib_fabric::hw::hca::Port {
    net.host_device(i).hca().port(port).expect("port").clone()
}

/// Links crossed from `from` to the CA port answering `dlid`, through the switches' LFTs; and
/// that port.
fn walk(net: &Subnet, from: End, dlid: u16) -> Option<(usize, End)> {
    let topo = net.topology();
    let mut at = from;
    for hops in 1..16 {
        let (peer, _) = topo.peer(at.node, at.port)?;
        if topo.nodes()[peer.node].kind == NodeKind::Ca {
            return Some((hops, peer));
        }
        let sw = net.sim().node::<Switch>(net.built().nodes[peer.node])?;
        let out = *sw.lft().get(usize::from(dlid))?;
        at = End {
            node: peer.node,
            port: out,
        };
    }
    None
}

/// A UD QP in RTS on host `i`'s port `num` with Q_Key `qkey`, receives posted.
fn ud_qp_on(net: &mut Subnet, i: usize, num: u8, qkey: u32) -> (Qpn, CqId) {
    let node = net.host(i).node;
    net.sim_mut()
        .with_node::<Host, _>(node, |h, _, _| {
            let hca = h.hca_mut();
            let cq = hca.create_cq();
            let qpn = hca
                .create_qp(QpInit {
                    qp_type: QpType::Ud,
                    port: num,
                    send_cq: cq,
                    recv_cq: cq,
                    privileged: false,
                    sq_sig_all: false,
                })
                .expect("create UD QP");
            for m in [
                ModifyQp::Init {
                    port: num,
                    pkey_index: 0,
                    qkey: QKey(qkey),
                },
                ModifyQp::Rtr(None),
                ModifyQp::Rts(None),
            ] {
                hca.modify_qp(qpn, m).expect("modify UD QP");
            }
            for w in 0..4 {
                let wr = RecvWr {
                    wr_id: w,
                    capacity: 4096 + 40,
                };
                hca.post_recv(qpn, wr).expect("post recv");
            }
            (qpn, cq)
        })
        .expect("host")
}

/// Every path host `i`'s SA client gets for SGID = its GID (IBA 1 §15.2.5.16 GetTable).
fn paths_from(net: &mut Subnet, i: usize) -> Vec<PathRecordRepr> {
    let rec = PathRecordRepr {
        sgid: net.gid(i),
        ..PathRecordRepr::default()
    };
    let m = SaMadRepr::request(
        Method::GetTable,
        0,
        pr_mask::SGID,
        SaAttribute::PathRecord(rec),
    );
    let id = net.sa_request(i, m);
    net.sim_mut().run_for(Duration::from_millis(20));
    net.take_sa_events(i)
        .into_iter()
        .find_map(|e| match e {
            SaClientEvent::Response { id: r, result } if r == id => Some(result),
            _ => None,
        })
        .expect("a PathRecord answer")
        .expect("PathRecords")
        .records
        .into_iter()
        .filter_map(|r| match r {
            SaAttribute::PathRecord(p) => Some(p),
            _ => None,
        })
        .collect()
}

// ibsim's own example: a CA cabled on port 2 only is a host, on port 2 (it used to be dropped).
#[test]
fn ca_cabled_on_port_2_only_is_a_host_on_port_2() {
    let seed = seed(5);
    let _g = SeedGuard(seed);
    let topo = Topology::parse_net(NET).unwrap();
    let mut net = up(options(topo, seed), false);
    assert_eq!(net.host_count(), 2, "Hca1 and Hca2");
    assert_eq!((net.host(0).port, net.host(1).port), (1, 2));
    let p = port(&net, 1, 2);
    assert_eq!(p.state, PortState::Active);
    assert_eq!((p.lid, p.guid), (net.lid(1), Guid(0x10_0005)));
    assert_eq!(port(&net, 1, 1).state, PortState::Down, "port 1: no cable");
    assert_eq!(net.ipoib_app(1).map(|a| a.port()), Some(2));
    assert_eq!(net.gid(1), Gid::new(Gid::DEFAULT_SUBNET_PREFIX, 0x10_0005));
    let sent = ping_pairs(&mut net, &all_pairs(2), v4, Duration::from_secs(2));
    for s in sent {
        assert!(rtt(&net, s).is_some(), "{} -> {} unanswered", s.0, s.1);
    }
}

// IBA 1 §4.1.1: every cabled CA port its own LID and port GUID, the node GUID shared; the SA
// answers a PathRecord to each (IBA 1 §15.2.5.16); the LFTs deliver to each.
#[test]
fn dual_homed_host_has_two_end_nodes_and_is_reachable() {
    let seed = seed(11);
    let _g = SeedGuard(seed);
    let topo = Topology::parse_net(DUAL_HOMED).unwrap();
    let mut net = up(options(topo, seed), false);
    assert_eq!(net.host_count(), 3);
    let dual = 1;
    assert_eq!(
        net.topology().nodes()[net.host(dual).topo_node].name,
        "Dual"
    );
    let (p1, p2) = (port(&net, dual, 1), port(&net, dual, 2));
    for p in [&p1, &p2] {
        assert_eq!(p.state, PortState::Active, "port {}", p.num);
        assert_ne!(p.lid, 0, "port {}", p.num);
    }
    let node_guid = net.host_device(dual).hca().node_guid();
    assert_eq!((p1.guid.0, p2.guid.0), (node_guid.0 + 1, node_guid.0 + 2));
    let lids: BTreeSet<u16> = net.cabled_ca_ports().iter().map(|p| p.2).collect();
    assert_eq!(lids.len(), 4, "four cabled CA ports, four LIDs");
    assert!(!lids.contains(&0));

    // C asks the SA for its paths: one to each of the four CA ports, each to the port's LID,
    // and one to each switch's management port 0, an end port too (as OpenSM answers).
    let c = 2;
    let paths = paths_from(&mut net, c);
    assert_eq!(paths.len(), 4 + 2, "{paths:?}");
    let to_cas = paths.iter().filter(|p| lids.contains(&p.dlid)).count();
    assert_eq!(to_cas, 4, "{paths:?}");
    for (gid, lid) in [(p1.port_gid(), p1.lid), (p2.port_gid(), p2.lid)] {
        let p = paths
            .iter()
            .find(|p| p.dgid == gid)
            .expect("path to the port");
        assert_eq!((p.slid, p.dlid), (net.lid(c), lid));
    }
    // The LFTs take C's traffic to each port of Dual: port 2 on C's own switch (2 links), port 1
    // across the switches (3 links).
    let from_c = End {
        node: net.host(c).topo_node,
        port: 1,
    };
    let dual_node = net.host(dual).topo_node;
    assert_eq!(
        walk(&net, from_c, p2.lid),
        Some((
            2,
            End {
                node: dual_node,
                port: 2
            }
        ))
    );
    assert_eq!(
        walk(&net, from_c, p1.lid),
        Some((
            3,
            End {
                node: dual_node,
                port: 1
            }
        ))
    );

    // A datagram from C to the LID of Dual's port 2 arrives on a QP of port 2.
    let qkey = 0x1234;
    let (qp2, cq2) = ud_qp_on(&mut net, dual, 2, qkey);
    let (qpc, _) = ud_qp_on(&mut net, c, 1, qkey);
    send_ud(
        &mut net,
        c,
        qpc,
        p2.lid,
        qp2,
        QKey(qkey),
        None,
        b"to port 2",
    );
    net.sim_mut().run_for(Duration::from_millis(1));
    let got = received(&mut net, dual, cq2);
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(
        (got[0].slid, got[0].data.as_slice()),
        (net.lid(c), &b"to port 2"[..])
    );

    // IPoIB runs on Dual's first cabled port, and every host pings every other.
    assert_eq!(net.ipoib_app(dual).map(|a| a.port()), Some(1));
    let sent = ping_pairs(&mut net, &all_pairs(3), v4, Duration::from_secs(2));
    for s in sent {
        assert!(rtt(&net, s).is_some(), "{} -> {} unanswered", s.0, s.1);
    }
}

//! A host in another partition receives nothing. partitions.conf (OpenSM
//! syntax) puts hosts 1-2 in partition A (0x8001) and hosts 3-4 in partition B (0x8002), both with
//! the `ipoib` flag, the default partition limited for everyone but the SM. Each host joins only its
//! own partition's broadcast group; the other partition's group is invisible to it in the SA
//! (OpenSM `mcmr_query_mgrp` filters by the requester's P_Keys) and joining it is refused; a
//! datagram sent to a host of the other partition is dropped by the receiver's P_Key check (IBA 1
//! §10.9.3), or by the switch when partition enforcement is on (IBA 1 §10.9), while the same
//! datagram to a host of the same partition arrives.

mod common;

use ipoib_fabric::hw::hca::HcaDropReason;
use ipoib_fabric::hw::switch::{self, Switch};
use ipoib_fabric::hw::topology::Topology;
use ipoib_fabric::node::subnet::{JoinProblem, Subnet, SubnetOptions};
use ipoib_fabric::testing::{at, received, seed, send_ud, ud_qp, SeedGuard};
use ipoib_proto::partitions;
use ipoib_proto::sa::SaClientError;
use ipoib_wire::ib::BthRepr;
use ipoib_wire::mad::{MadStatus, Method, SaStatus};
use ipoib_wire::sa::{mcr_mask, JoinState, McMemberRecordRepr, SaAttribute, SaMadRepr};
use ipoib_wire::Gid;
use ipoib_wire::PKey;
use ipoib_wire::QKey;
use std::time::Duration;

/// Host i of a generated topology has node GUID 0x100000 + 2i and port GUID one more.
const CONF: &str = "\
Default=0x7fff : ALL=limited, SELF=full ;
PartA=0x8001, ipoib : 0x100003=full, 0x100005=full ;
PartB=0x8002, ipoib : 0x100007=full, 0x100009=full ;
";
const QKEY: QKey = QKey(0x0b1b);

fn bcast(pkey: u16) -> Gid {
    ipoib_wire::ipoib::mcast::broadcast_mgid(PKey(pkey), ipoib_wire::ipoib::mcast::Scope::LinkLocal)
}

fn pkey_index(net: &Subnet, i: usize, pkey: u16) -> u16 {
    net.host_device(i)
        .hca()
        .port(1)
        .and_then(|p| p.find_pkey_index(PKey(pkey)))
        .unwrap_or_else(|| panic!("host {i} lacks P_Key {pkey:#x}"))
}

// IBA 1 §10.9, §10.9.3; opensm(8) PARTITION CONFIGURATION; OpenSM osm_sa_mcmember_record.c.
#[test]
fn other_partition_receives_nothing() {
    let seed = seed(21);
    let _g = SeedGuard(seed);
    let mut opts = SubnetOptions::new(Topology::single_switch(6).unwrap(), seed);
    opts.partitions = Some(partitions::parse(CONF).unwrap());
    let mut net = Subnet::build(opts).unwrap();
    assert!(net.run_until_joined(at(10)));
    let (a, b) = (bcast(0x8001), bcast(0x8002));
    let joined = |net: &Subnet, i: usize| -> Vec<(Gid, u16)> {
        net.broadcast_joins(i)
            .iter()
            .map(|j| match j.record {
                Some(r) => (j.mgid, r.mlid),
                None => panic!("host {i}: {j:?}"),
            })
            .collect()
    };
    let (ga, gb) = (joined(&net, 1), joined(&net, 3));
    assert_eq!(ga.iter().map(|x| x.0).collect::<Vec<_>>(), vec![a]);
    assert_eq!(
        joined(&net, 2).iter().map(|x| x.0).collect::<Vec<_>>(),
        vec![a]
    );
    assert_eq!(gb.iter().map(|x| x.0).collect::<Vec<_>>(), vec![b]);
    assert_ne!(ga[0].1, gb[0].1, "two groups, two MLIDs");
    assert!(
        net.broadcast_joins(5).is_empty(),
        "host 5 belongs to no IPoIB partition"
    );
    assert_eq!(
        net.host_device(0).hca().port(1).unwrap().pkeys,
        vec![PKey(0xffff), PKey(0x8001), PKey(0x8002)],
        "the SM port is a full member of everything"
    );
    assert_eq!(
        net.host_device(1).hca().port(1).unwrap().pkeys,
        vec![PKey(0x7fff), PKey(0x8001)]
    );

    // The other partition's broadcast group is invisible and cannot be joined.
    let query = SaMadRepr::request(
        Method::GetTable,
        0,
        0,
        SaAttribute::McMemberRecord(McMemberRecordRepr::default()),
    );
    let r = net.sa_call(1, query, Duration::from_secs(5)).unwrap();
    let seen: Vec<Gid> = r
        .records
        .iter()
        .filter_map(|x| match x {
            SaAttribute::McMemberRecord(m) => Some(m.mgid),
            _ => None,
        })
        .collect();
    assert_eq!(seen, vec![a], "host 1 sees its own partition's group only");
    let rec = McMemberRecordRepr {
        mgid: b,
        port_gid: net.gid(1),
        join_state: JoinState::FULL_MEMBER,
        ..McMemberRecordRepr::default()
    };
    let r = net.sa_call(
        1,
        SaMadRepr::mcmember_join(0, rec, mcr_mask::JOIN),
        Duration::from_secs(5),
    );
    assert_eq!(
        r.err(),
        Some(SaClientError::Status(MadStatus::sa(SaStatus::ReqInvalid))),
        "joining the other partition's group is refused"
    );

    // Unicast: host 1 (partition A) to host 2 (A) arrives, to host 3 (B) is dropped at host 3.
    let qa = (1..=4)
        .map(|i| {
            let k = if i <= 2 { 0x8001 } else { 0x8002 };
            let idx = pkey_index(&net, i, k);
            ud_qp(&mut net, i, QKEY, idx)
        })
        .collect::<Vec<_>>();
    let (lid2, lid3) = (net.lid(2), net.lid(3));
    let before = net
        .host_device(3)
        .hca()
        .counters()
        .drops(HcaDropReason::PkeyMismatch);
    send_ud(
        &mut net,
        1,
        qa[0].0,
        lid2,
        qa[1].0,
        QKEY,
        None,
        b"same partition",
    );
    send_ud(
        &mut net,
        1,
        qa[0].0,
        lid3,
        qa[2].0,
        QKEY,
        None,
        b"other partition",
    );
    net.sim_mut().run_for(Duration::from_millis(1));
    assert_eq!(
        received(&mut net, 2, qa[1].1).len(),
        1,
        "same partition delivered"
    );
    assert!(
        received(&mut net, 3, qa[2].1).is_empty(),
        "other partition: nothing"
    );
    let after = net
        .host_device(3)
        .hca()
        .counters()
        .drops(HcaDropReason::PkeyMismatch);
    assert_eq!(after - before, 1, "dropped by host 3's P_Key check");

    // Multicast to partition A's broadcast group reaches A's members only.
    for (i, (mgid, mlid)) in [(1, ga[0]), (2, ga[0]), (3, gb[0]), (4, gb[0])] {
        let node = net.host(i).node;
        let q = qa[i - 1].0;
        net.sim_mut()
            .with_node::<ipoib_fabric::node::host::Host, _>(node, |h, _, _| {
                h.hca_mut().attach_mcast(q, mgid, mlid)
            })
            .unwrap()
            .unwrap();
    }
    net.sim_mut().run_for(Duration::from_millis(1));
    send_ud(
        &mut net,
        1,
        qa[0].0,
        ga[0].1,
        BthRepr::MULTICAST_QPN,
        QKEY,
        Some(a),
        b"to A",
    );
    net.sim_mut().run_for(Duration::from_millis(1));
    assert_eq!(received(&mut net, 2, qa[1].1).len(), 1, "A's member got it");
    assert!(received(&mut net, 3, qa[2].1).is_empty());
    assert!(received(&mut net, 4, qa[3].1).is_empty());

    // With switch partition enforcement, the switch drops it before it reaches host 3.
    let sw = net.built().nodes[6];
    net.sim_mut()
        .node_mut::<Switch>(sw)
        .unwrap()
        .set_partition_enforcement(true);
    let host3_before = net.host_device(3).hca().counters().rx_packets;
    send_ud(
        &mut net,
        1,
        qa[0].0,
        lid3,
        qa[2].0,
        QKEY,
        None,
        b"other partition",
    );
    send_ud(
        &mut net,
        1,
        qa[0].0,
        lid2,
        qa[1].0,
        QKEY,
        None,
        b"same partition",
    );
    net.sim_mut().run_for(Duration::from_millis(1));
    let s = net.sim().node::<Switch>(sw).unwrap().stats();
    assert_eq!(
        s.dropped(switch::SwitchDropReason::Partition),
        1,
        "dropped at the switch"
    );
    assert_eq!(net.host_device(3).hca().counters().rx_packets, host3_before);
    assert_eq!(
        received(&mut net, 2, qa[1].1).len(),
        1,
        "same partition still delivered"
    );
    assert!(received(&mut net, 3, qa[2].1).is_empty());
}

// draft-ietf-ipoib-ip-over-infiniband-06 §5: an interface is up once it joined its partition's
// broadcast group, which the SA records. Host 5 belongs to no IPoIB partition: it has nothing to
// join, which its own view cannot tell from success; the SA's member records can.
#[test]
fn joins_are_checked_against_the_sa_member_records() {
    let seed = seed(22);
    let _g = SeedGuard(seed);
    let mut opts = SubnetOptions::new(Topology::single_switch(6).unwrap(), seed);
    opts.partitions = Some(partitions::parse(CONF).unwrap());
    let mut net = Subnet::build(opts).unwrap();
    net.run_until_joined(at(10));
    assert_eq!(
        net.sa_broadcast_groups(),
        vec![bcast(0x8001), bcast(0x8002)]
    );
    assert_eq!(net.sa_joined(), vec![true, true, true, true, true, false]);
    for i in 0..5 {
        assert_eq!(net.join_problems(i), vec![], "host {i}");
    }
    assert!(net.is_joined(5), "the host's own view");
    assert_eq!(
        net.join_problems(5),
        vec![JoinProblem::NoBroadcastGroup {
            pkeys: vec![PKey(0x7fff)]
        }]
    );
    assert!(net.join_problems(5)[0].to_string().contains("`ipoib` flag"));
}

// opensm(8) PARTITION CONFIGURATION: `ALL` and `ALL_SWITCHES` name the switches' management
// ports 0 too, and so does a switch's GUID. Our SM gave port 0 the default P_Key alone whatever
// the file said; OpenSM gives it those partitions (measured on a fat tree: `0xffff 0x8010 0x8020
// 0x8030`, docs/OPENSM-NOTES.md "Diags on a fat tree"). The SA's model has the same table, so a
// PathRecord in such a partition reaches the switch (IBA 1 §15.2.5.11, §15.2.5.16).
#[test]
fn all_and_all_switches_make_switch_port_0_a_member() {
    const CONF2: &str = "\
Default=0x7fff, ipoib : ALL=full ;
Storage=0x0010, ipoib : ALL=full ;
Mgmt=0x0020 : ALL_SWITCHES=full, ALL_CAS=limited ;
Hosts=0x0040 : ALL_CAS=full ;
";
    let seed = seed(23);
    let _g = SeedGuard(seed);
    let mut opts = SubnetOptions::new(Topology::single_switch(3).unwrap(), seed);
    opts.partitions = Some(partitions::parse(CONF2).unwrap());
    let mut net = Subnet::build(opts).unwrap();
    assert!(net.run_until_joined(at(10)));
    let sw_id = *net.built().nodes.last().expect("the switch");
    let sw = net.sim().node::<Switch>(sw_id).expect("a switch");
    let want = [PKey(0xffff), PKey(0x8010), PKey(0x8020)];
    assert_eq!(sw.port_pkeys(0), Some(&want[..]));
    let model = net.sm().manager().expect("configured").subnet_model();
    let msw = model
        .switches
        .iter()
        .find(|s| s.guid == sw.guid())
        .expect("the switch in the model");
    assert_eq!(model.switch_port_pkeys(msw, 0), want);
    // A host (not the SM's) is a limited member of Mgmt, so it shares it with the switch only.
    let host = net.host_device(1).hca().port(1).unwrap();
    assert!(host.find_pkey_index(PKey(0x0020)).is_some());
}

// IBA 1 §14.2.5.4, §14.2.5.7: a switch's external ports hold PartitionEnforcementCap P_Keys (our
// switches 32, one block; a P_KeyTable Set of another block is refused). With more partitions
// than that, what the SA's model says a switch port holds (P_KeyTableRecords, IBA 1 §15.2.5.11)
// must still be what the switch holds: ports facing a CA and ports cabled to another switch.
#[test]
fn switch_port_pkey_tables_in_the_model_are_what_the_switches_hold_past_their_cap() {
    let mut conf = String::from("Default=0x7fff, ipoib : ALL=full ;\n");
    for k in 1..=40u16 {
        conf.push_str(&format!("P{k}=0x{k:04x} : ALL=full ;\n"));
    }
    let seed = seed(24);
    let _g = SeedGuard(seed);
    let mut opts = SubnetOptions::new(common::topos::chain(), seed);
    opts.partitions = Some(partitions::parse(&conf).unwrap());
    let mut net = Subnet::build(opts).unwrap();
    assert!(net.run_until_joined(at(10)));
    let model = net.sm().manager().expect("configured").subnet_model();
    let cap = usize::from(switch::PARTITION_ENFORCEMENT_CAP);
    let (mut to_switch, mut to_ca) = (0, 0);
    for &id in &net.built().nodes {
        let Some(sw) = net.sim().node::<Switch>(id) else {
            continue;
        };
        let msw = model
            .switches
            .iter()
            .find(|s| s.guid == sw.guid())
            .expect("the switch in the model");
        // Port 0 and the cabled ports (the SM writes no table on a port without a cable).
        for p in 0..=sw.nports() {
            match msw.ports.get(usize::from(p)).map(|x| x.peer) {
                Some(ipoib_proto::subnet::Peer::Switch(..)) => to_switch += 1,
                Some(ipoib_proto::subnet::Peer::Ca(..)) => to_ca += 1,
                _ if p == 0 => {}
                _ => continue,
            }
            let holds = sw.port_pkeys(p).unwrap_or_default();
            assert!(holds.len() <= cap);
            let said = model.switch_port_pkeys(msw, p);
            assert_eq!(said, holds, "switch {} port {p}", msw.name);
        }
    }
    assert!(to_switch > 0 && to_ca > 0, "both kinds of port checked");
}

// OpenSM osm_prtn.c osm_prtn_add_port ("Will overwrite"): the last specifier naming a port
// decides its membership; measured on OpenSM 3.3.23 with the same kind of file
// (docs/OPENSM-PARTITIONS.md). Our SM gave a port named full anywhere a full member.
#[test]
fn the_last_specifier_naming_a_port_decides_its_pkey() {
    const CONF3: &str = "\
Default=0x7fff, ipoib : ALL=full ;
P1=0x10 : ALL=full, 0x100005=limited ;
P2=0x20 : 0x100005=limited, ALL=full ;
P3=0x30 : 0x100005=full, ALL_CAS=limited ;
";
    let seed = seed(29);
    let _g = SeedGuard(seed);
    let mut opts = SubnetOptions::new(Topology::single_switch(3).unwrap(), seed);
    opts.partitions = Some(partitions::parse(CONF3).unwrap());
    let mut net = Subnet::build(opts).unwrap();
    assert!(net.run_until_joined(at(10)));
    let model = net.sm().manager().expect("configured").subnet_model();
    let pkeys = |guid: u64| {
        model
            .ports
            .iter()
            .find(|p| p.port_guid == ipoib_wire::Guid(guid))
            .map(|p| p.pkeys.clone())
            .expect("the host's port")
    };
    assert_eq!(
        pkeys(0x100005),
        [0xffff, 0x0010, 0x8020, 0x0030].map(PKey).to_vec()
    );
    assert_eq!(
        pkeys(0x100003),
        [0xffff, 0x8010, 0x8020, 0x0030].map(PKey).to_vec()
    );
    // The host's port holds the table as the model says.
    let host = net.host_device(2).hca().port(1).unwrap();
    let held: Vec<PKey> = (0..4).filter_map(|i| host.pkey(i)).collect();
    assert_eq!(held, [0xffff, 0x0010, 0x8020, 0x0030].map(PKey).to_vec());
}

// OpenSM osm_prtn.c osm_prtn_make_default: every port is a limited member of the default
// partition before the file is read, so a Default rule naming the SM's port alone leaves the
// hosts limited members (measured on OpenSM 3.3.23: 0x7fff 0x8010 on each host,
// docs/OPENSM-PARTITIONS.md). Our SM left them out of the default partition.
#[test]
fn a_default_rule_naming_some_ports_leaves_the_others_limited_members() {
    const CONF4: &str = "\
Default=0x7fff, ipoib : SELF=full ;
P1=0x10, ipoib : ALL=full ;
";
    let seed = seed(31);
    let _g = SeedGuard(seed);
    let mut opts = SubnetOptions::new(Topology::single_switch(3).unwrap(), seed);
    opts.partitions = Some(partitions::parse(CONF4).unwrap());
    let mut net = Subnet::build(opts).unwrap();
    let joined = net.run_until_joined(at(10));
    for (i, want) in [
        (0, [0xffff, 0x8010]),
        (1, [0x7fff, 0x8010]),
        (2, [0x7fff, 0x8010]),
    ] {
        let port = net.host_device(i).hca().port(1).unwrap();
        let held: Vec<PKey> = (0..3).filter_map(|k| port.pkey(k)).collect();
        assert_eq!(held, want.map(PKey).to_vec(), "host {i}");
    }
    assert!(joined, "every host joins a broadcast group");
}

//! NodeRecord, PortInfoRecord, LinkRecord and P_KeyTableRecord against OpenSM's rules
//! (osm_sa_node_record.c, osm_sa_portinfo_record.c, osm_sa_link_record.c, osm_sa_pkey_record.c):
//! component masks, P_Key visibility, trust, and multi-MAD GetTable answers.

use super::*;
use ipoib_wire::mad::Method;
use ipoib_wire::sa::{
    lr_mask, node_description, nr_mask, pir_mask, pkr_mask, LinkRecordRepr, NodeRecordRepr,
    PKeyTableRecordRepr, PortInfoRecordRepr, SaAttribute, PIR_ENHANCED_COMP_MASK,
};
use ipoib_wire::smp::{NodeInfoRepr, NodeType, PortInfoRepr, PortState};

fn node_q() -> NodeRecordRepr {
    NodeRecordRepr {
        lid: 0,
        node_info: NodeInfoRepr {
            base_version: 0,
            class_version: 0,
            node_type: NodeType::Unknown(0),
            num_ports: 0,
            system_image_guid: Guid(0),
            node_guid: Guid(0),
            port_guid: Guid(0),
            partition_cap: 0,
            device_id: 0,
            revision: 0,
            local_port_num: 0,
            vendor_id: 0,
        },
        node_description: [0; 64],
    }
}

fn req(method: Method, mask: u64, a: SaAttribute) -> SaMadRepr {
    SaMadRepr::request(method, 0, mask, a)
}

fn records(r: Result<SaResponse, SaClientError>) -> Vec<SaAttribute> {
    let r = r.expect("success");
    match r.attribute {
        Some(a) if r.records.is_empty() => vec![a],
        _ => r.records,
    }
}

fn nodes(r: Result<SaResponse, SaClientError>) -> Vec<NodeRecordRepr> {
    records(r)
        .into_iter()
        .map(|a| match a {
            SaAttribute::NodeRecord(n) => n,
            other => panic!("{other:?}"),
        })
        .collect()
}

fn ask_nodes(net: &mut Net, from: u16, method: Method, mask: u64, q: NodeRecordRepr) -> Vec<u16> {
    nodes(net.ask(from, req(method, mask, SaAttribute::NodeRecord(q))))
        .iter()
        .map(|n| n.lid)
        .collect()
}

// IBA 1 §15.2.5.2; OpenSM osm_nr_rcv_process: every node in GUID order, one record per CA port,
// one for a switch (port 0), over RMPP when they do not fit one MAD.
#[test]
fn node_records_of_the_whole_subnet() {
    let mut net = Net::default(3);
    let all = nodes(net.ask(
        2,
        req(Method::GetTable, 0, SaAttribute::NodeRecord(node_q())),
    ));
    let lids: Vec<u16> = all.iter().map(|n| n.lid).collect();
    assert_eq!(lids, [1, 2, 3, 4, testing::SWITCH_LID], "node GUID order");
    assert_eq!(
        net.sa.stats().rmpp_done,
        1,
        "five 112-byte records need RMPP"
    );
    let h = &all[1];
    assert_eq!(h.node_info.node_type, NodeType::ChannelAdapter);
    assert_eq!(
        (h.node_info.node_guid, h.node_info.port_guid),
        (Guid(0x1002), Guid(0x1002))
    );
    assert_eq!(
        (h.node_info.base_version, h.node_info.class_version),
        (1, 1)
    );
    assert_eq!(
        (
            h.node_info.num_ports,
            h.node_info.local_port_num,
            h.node_info.partition_cap
        ),
        (1, 1, 128)
    );
    assert_eq!(h.description(), "h2");
    let sw = &all[4];
    assert_eq!(sw.node_info.node_type, NodeType::Switch);
    assert_eq!(
        (sw.node_info.num_ports, sw.node_info.local_port_num),
        (4, 0)
    );
    assert_eq!(sw.node_info.port_guid, Guid(0xaaaa));
    assert_eq!(sw.description(), "sw");
}

// IBA 1 §15.2.5.2: each component-mask bit selects on its field.
#[test]
fn node_records_by_component_mask() {
    let mut net = Net::default(3);
    let q = |f: &dyn Fn(&mut NodeRecordRepr)| {
        let mut r = node_q();
        f(&mut r);
        r
    };
    let cases: Vec<(u64, NodeRecordRepr, Vec<u16>)> = vec![
        (nr_mask::LID, q(&|r| r.lid = 3), vec![3]),
        (nr_mask::LID, q(&|r| r.lid = 9), vec![]),
        (
            nr_mask::NODE_GUID,
            q(&|r| r.node_info.node_guid = Guid(0x1004)),
            vec![4],
        ),
        (
            nr_mask::PORT_GUID,
            q(&|r| r.node_info.port_guid = Guid(0x1001)),
            vec![1],
        ),
        (
            nr_mask::NODE_TYPE,
            q(&|r| r.node_info.node_type = NodeType::Switch),
            vec![testing::SWITCH_LID],
        ),
        (
            nr_mask::NODE_DESCRIPTION,
            q(&|r| r.node_description = node_description("h3")),
            vec![3],
        ),
        (
            nr_mask::NUM_PORTS,
            q(&|r| r.node_info.num_ports = 4),
            vec![testing::SWITCH_LID],
        ),
        (
            nr_mask::LOCAL_PORT_NUM,
            q(&|r| r.node_info.local_port_num = 0),
            vec![testing::SWITCH_LID],
        ),
        (
            nr_mask::SYSTEM_IMAGE_GUID | nr_mask::PARTITION_CAP,
            q(&|r| {
                r.node_info.system_image_guid = Guid(0x1002);
                r.node_info.partition_cap = 128;
            }),
            vec![2],
        ),
        (
            nr_mask::VENDOR_ID | nr_mask::DEVICE_ID | nr_mask::REVISION,
            q(&|r| r.node_info.vendor_id = 1),
            vec![],
        ),
        (
            nr_mask::BASE_VERSION | nr_mask::CLASS_VERSION | nr_mask::LID,
            q(&|r| {
                r.node_info.base_version = 1;
                r.node_info.class_version = 1;
                r.lid = testing::SWITCH_LID;
            }),
            vec![testing::SWITCH_LID],
        ),
    ];
    for (mask, rec, want) in cases {
        assert_eq!(
            ask_nodes(&mut net, 2, Method::GetTable, mask, rec),
            want,
            "mask {mask:#x}"
        );
    }
    // Get: one record, or an error.
    let one = node_q();
    assert_eq!(
        ask_nodes(
            &mut net,
            2,
            Method::Get,
            nr_mask::LID,
            NodeRecordRepr { lid: 4, ..one }
        ),
        [4]
    );
    let no = net.ask(
        2,
        req(
            Method::Get,
            nr_mask::LID,
            SaAttribute::NodeRecord(NodeRecordRepr { lid: 99, ..one }),
        ),
    );
    assert_eq!(no.err(), status(SaStatus::NoRecords).err());
    let many = net.ask(2, req(Method::Get, 0, SaAttribute::NodeRecord(one)));
    assert_eq!(many.err(), status(SaStatus::TooManyRecords).err());
    // Set is no method of NodeRecord: dropped unanswered, as OpenSM 3.3.23 does.
    let set = net.ask(2, req(Method::Set, 0, SaAttribute::NodeRecord(one)));
    assert_eq!(set.err(), Some(SaClientError::Timeout));
    assert!(net.sa.stats().dropped["Set or Delete of a read-only record"] >= 1);
}

// OpenSM osm_physp_share_pkey: a port sharing no P_Key with the requester is not shown; the
// requester always sees itself.
#[test]
fn records_follow_pkey_visibility() {
    let mut m = default_model(3);
    m.ports[2].pkeys = vec![PKey(0x8002)]; // LID 3
    let mut net = Net::new(
        m,
        PartitionConfig::default_config(),
        SaServerConfig::default(),
        1,
    );
    assert_eq!(
        ask_nodes(&mut net, 3, Method::GetTable, 0, node_q()),
        [3],
        "LID 3 shares no P_Key with the others (switch port 0 has 0xffff)"
    );
    assert_eq!(
        ask_nodes(&mut net, 2, Method::GetTable, 0, node_q()),
        [1, 2, 4, testing::SWITCH_LID]
    );
}

fn port_infos(r: Result<SaResponse, SaClientError>) -> Vec<PortInfoRecordRepr> {
    records(r)
        .into_iter()
        .map(|a| match a {
            SaAttribute::PortInfoRecord(p) => p,
            other => panic!("{other:?}"),
        })
        .collect()
}

fn pir(lid: u16, port_num: u8, pi: PortInfoRepr) -> SaAttribute {
    SaAttribute::PortInfoRecord(PortInfoRecordRepr {
        lid,
        port_num,
        options: 0,
        port_info: pi,
    })
}

// IBA 1 §15.2.5.3; OpenSM osm_pir_rcv_process.
#[test]
fn port_info_records() {
    let mut net = Net::default(3);
    // One CA port by its LID: the PortInfo the SM configured.
    let r = port_infos(net.ask(
        2,
        req(
            Method::Get,
            pir_mask::LID,
            pir(3, 0, PortInfoRepr::default()),
        ),
    ));
    assert_eq!(r.len(), 1);
    let p = r[0];
    assert_eq!((p.lid, p.port_num), (3, 1));
    assert_eq!(
        (
            p.port_info.lid,
            p.port_info.master_sm_lid,
            p.port_info.local_port_num
        ),
        (3, SA_LID, 1)
    );
    assert_eq!(p.port_info.gid_prefix, Gid::DEFAULT_SUBNET_PREFIX);
    assert_eq!(p.port_info.port_state, PortState::Active);
    assert_eq!(u8::from(p.port_info.neighbor_mtu), 4);
    // 40 Gb/s: 4X QDR.
    assert_eq!(
        (p.port_info.link_width_active, p.port_info.link_speed_active),
        (2, 4)
    );
    // A switch's LID names every port of the switch, all with port 0's LID.
    let r = port_infos(net.ask(
        2,
        req(
            Method::GetTable,
            pir_mask::LID,
            pir(testing::SWITCH_LID, 0, PortInfoRepr::default()),
        ),
    ));
    let ports: Vec<(u16, u8)> = r.iter().map(|p| (p.lid, p.port_num)).collect();
    assert_eq!(
        ports,
        (0..=4)
            .map(|n| (testing::SWITCH_LID, n))
            .collect::<Vec<_>>()
    );
    assert_eq!(r[0].port_info.lid, testing::SWITCH_LID);
    assert_eq!(r[1].port_info.lid, 0, "external switch ports have no LID");
    // ... or one of them with PortNum.
    let r = port_infos(net.ask(
        2,
        req(
            Method::Get,
            pir_mask::LID | pir_mask::PORT_NUM,
            pir(testing::SWITCH_LID, 2, PortInfoRepr::default()),
        ),
    ));
    assert_eq!(r.iter().map(|p| p.port_num).collect::<Vec<_>>(), [2]);
    // An unknown LID: no record.
    let no = net.ask(
        2,
        req(
            Method::Get,
            pir_mask::LID,
            pir(77, 0, PortInfoRepr::default()),
        ),
    );
    assert_eq!(no.err(), status(SaStatus::NoRecords).err());
    // saquery -s: CapabilityMask IsSM, enhanced (bit 31 of the AttributeModifier): the SM's port.
    let mut m = req(
        Method::GetTable,
        pir_mask::CAPABILITY_MASK,
        pir(
            0,
            0,
            PortInfoRepr {
                capability_mask: crate::subnet::CAP_IS_SM,
                ..PortInfoRepr::default()
            },
        ),
    );
    m.header.attribute_modifier = PIR_ENHANCED_COMP_MASK;
    let r = port_infos(net.ask(2, m));
    assert_eq!(r.iter().map(|p| p.lid).collect::<Vec<_>>(), [SA_LID]);
    // Without bit 31, CapabilityMask must be equal: IsSM alone matches no port... but the SM's.
    m.header.attribute_modifier = 0;
    let r = port_infos(net.ask(2, m));
    assert_eq!(r.iter().map(|p| p.lid).collect::<Vec<_>>(), [SA_LID]);
    // PortInfo.LID and PortState select too; all ports: 4 CA ports, 5 switch ports.
    let r = port_infos(net.ask(
        2,
        req(
            Method::GetTable,
            pir_mask::PORT_STATE,
            pir(
                0,
                0,
                PortInfoRepr {
                    port_state: PortState::Active,
                    ..PortInfoRepr::default()
                },
            ),
        ),
    ));
    assert_eq!(r.len(), 9);
    assert_eq!(
        port_infos(net.ask(
            2,
            req(Method::GetTable, 0, pir(0, 0, PortInfoRepr::default()))
        ))
        .len(),
        9
    );

    // NeighborMTU (bit 23) and VLCap (bit 25) select too: the CA ports have MTU 2048, the
    // switch's ports 4096 (port 0 the default); every port has one data VL.
    let mut by = |mask: u64, pi: PortInfoRepr| {
        port_infos(net.ask(2, req(Method::GetTable, mask, pir(0, 0, pi))))
            .iter()
            .map(|p| p.lid)
            .collect::<Vec<_>>()
    };
    let mtu2048 = PortInfoRepr {
        neighbor_mtu: Mtu::Mtu2048,
        ..PortInfoRepr::default()
    };
    assert_eq!(by(pir_mask::NEIGHBOR_MTU, mtu2048), [1, 2, 3, 4]);
    let vl = |n: u8| PortInfoRepr {
        vl_cap: n,
        ..PortInfoRepr::default()
    };
    assert_eq!(by(pir_mask::VL_CAP, vl(1)).len(), 9);
    assert!(by(pir_mask::VL_CAP, vl(2)).is_empty());
}

fn links(r: Result<SaResponse, SaClientError>) -> Vec<(u16, u8, u8, u16)> {
    records(r)
        .into_iter()
        .map(|a| match a {
            SaAttribute::LinkRecord(l) => (l.from_lid, l.from_port, l.to_port, l.to_lid),
            other => panic!("{other:?}"),
        })
        .collect()
}

// IBA 1 §15.2.5.13; OpenSM osm_lr_rcv_process: both directions of every cable.
#[test]
fn link_records() {
    let mut net = Net::default(3);
    let sw = testing::SWITCH_LID;
    let all = links(net.ask(
        2,
        req(
            Method::GetTable,
            0,
            SaAttribute::LinkRecord(LinkRecordRepr::default()),
        ),
    ));
    assert_eq!(
        all,
        [
            (1, 1, 1, sw),
            (2, 1, 2, sw),
            (3, 1, 3, sw),
            (4, 1, 4, sw),
            (sw, 1, 1, 1),
            (sw, 2, 1, 2),
            (sw, 3, 1, 3),
            (sw, 4, 1, 4),
        ]
    );
    let q = LinkRecordRepr {
        from_lid: sw,
        to_lid: 3,
        ..LinkRecordRepr::default()
    };
    assert_eq!(
        links(net.ask(
            2,
            req(
                Method::Get,
                lr_mask::FROM_LID | lr_mask::TO_LID,
                SaAttribute::LinkRecord(q)
            )
        )),
        [(sw, 3, 1, 3)]
    );
    let q = LinkRecordRepr {
        from_port: 1,
        to_port: 4,
        ..LinkRecordRepr::default()
    };
    assert_eq!(
        links(net.ask(
            2,
            req(
                Method::GetTable,
                lr_mask::FROM_PORT | lr_mask::TO_PORT,
                SaAttribute::LinkRecord(q)
            )
        )),
        [(4, 1, 4, sw)]
    );
}

fn pkey_q(lid: u16, block: u16, port_num: u8) -> SaAttribute {
    SaAttribute::PKeyTableRecord(PKeyTableRecordRepr {
        lid,
        block,
        port_num,
        pkeys: [PKey(0); 32],
    })
}

fn pkey_recs(r: Result<SaResponse, SaClientError>) -> Vec<PKeyTableRecordRepr> {
    records(r)
        .into_iter()
        .map(|a| match a {
            SaAttribute::PKeyTableRecord(p) => p,
            other => panic!("{other:?}"),
        })
        .collect()
}

// IBA 1 §15.2.5.11 (trusted requests only); OpenSM osm_pkey_rec_rcv_process.
#[test]
fn pkey_table_records() {
    let mut m = default_model(2);
    m.ports[1].pkeys = vec![PKey(0xffff), PKey(0x8123)];
    let mut net = Net::new(
        m,
        PartitionConfig::default_config(),
        SaServerConfig::default(),
        1,
    );
    let untrusted = req(Method::GetTable, pkr_mask::LID, pkey_q(2, 0, 0));
    assert_eq!(
        net.ask(2, untrusted).err(),
        status(SaStatus::ReqInvalid).err()
    );
    let trusted = |mut m: SaMadRepr| {
        m.sa.sm_key = 1;
        m
    };
    // PartitionCap 128: four blocks, the entries in the first.
    let r = pkey_recs(net.ask(
        2,
        trusted(req(Method::GetTable, pkr_mask::LID, pkey_q(2, 0, 0))),
    ));
    assert_eq!(r.iter().map(|p| p.block).collect::<Vec<_>>(), [0, 1, 2, 3]);
    assert_eq!(r[0].pkeys[..3], [PKey(0xffff), PKey(0x8123), PKey(0)]);
    assert_eq!((r[0].lid, r[0].port_num), (2, 1));
    let r = pkey_recs(net.ask(
        2,
        trusted(req(
            Method::Get,
            pkr_mask::LID | pkr_mask::BLOCK,
            pkey_q(2, 0, 0),
        )),
    ));
    assert_eq!(r.len(), 1);
    // A switch: every port, or the one named; port 0 holds the default P_Key.
    let r = pkey_recs(net.ask(
        2,
        trusted(req(
            Method::Get,
            pkr_mask::LID | pkr_mask::PORT_NUM,
            pkey_q(testing::SWITCH_LID, 0, 0),
        )),
    ));
    assert_eq!(r.len(), 1);
    assert_eq!(
        (r[0].lid, r[0].port_num, r[0].pkeys[0]),
        (testing::SWITCH_LID, 0, PKey(0xffff))
    );
    let r = pkey_recs(net.ask(
        2,
        trusted(req(
            Method::GetTable,
            pkr_mask::LID,
            pkey_q(testing::SWITCH_LID, 0, 0),
        )),
    ));
    assert_eq!(
        r.iter().map(|p| p.port_num).collect::<Vec<_>>(),
        [0, 1, 2, 3]
    );
    assert_eq!(r[2].pkeys[1], PKey(0x8123), "port 2 holds its CA's table");
    // An unknown LID: none.
    assert_eq!(
        net.ask(
            2,
            trusted(req(Method::Get, pkr_mask::LID, pkey_q(55, 0, 0)))
        )
        .err(),
        status(SaStatus::NoRecords).err()
    );
}

// IBA 1 §15.2.5.6; OpenSM osm_lftr_rcv_process: the blocks in use of every switch's LFT.
#[test]
fn lft_records() {
    use ipoib_wire::sa::{lftr_mask, LftRecordRepr};
    let mut m = default_model(3);
    // The star's LFT has 256 entries; route LID 70 too, so that two blocks are in use.
    m.switches[0].lft[70] = 2;
    let mut net = Net::new(
        m,
        PartitionConfig::default_config(),
        SaServerConfig::default(),
        1,
    );
    let q = |lid: u16, block: u16| {
        SaAttribute::LftRecord(LftRecordRepr {
            lid,
            block,
            ports: [0; 64],
        })
    };
    let lfts = |r: Result<SaResponse, SaClientError>| -> Vec<LftRecordRepr> {
        records(r)
            .into_iter()
            .map(|a| match a {
                SaAttribute::LftRecord(l) => l,
                other => panic!("{other:?}"),
            })
            .collect()
    };
    let all = lfts(net.ask(2, req(Method::GetTable, 0, q(0, 0))));
    assert_eq!(all.iter().map(|l| l.block).collect::<Vec<_>>(), [0, 1]);
    assert!(all.iter().all(|l| l.lid == testing::SWITCH_LID));
    assert_eq!(&all[0].ports[..5], &[255, 1, 2, 3, 4], "LID n on port n");
    assert_eq!(
        (all[1].ports[6], all[1].ports[7]),
        (2, 255),
        "LID 70 on port 2"
    );
    let one = lfts(net.ask(
        2,
        req(
            Method::Get,
            lftr_mask::LID | lftr_mask::BLOCK,
            q(testing::SWITCH_LID, 1),
        ),
    ));
    assert_eq!(one.len(), 1);
    // A block past the ones in use, or a LID of no switch: none.
    for (mask, rec) in [(lftr_mask::BLOCK, q(0, 2)), (lftr_mask::LID, q(2, 0))] {
        assert_eq!(
            net.ask(2, req(Method::Get, mask, rec)).err(),
            status(SaStatus::NoRecords).err()
        );
    }
}

// IBA 1 §15.2.5.18; OpenSM osm_gir_rcv_process: block 0 of every CA port and switch port 0, the
// port GUID first.
#[test]
fn guid_info_records() {
    use ipoib_wire::sa::{gir_mask, GuidInfoRecordRepr};
    let mut net = Net::default(3);
    let q = |lid: u16, block: u8, guid0: u64| {
        let mut guids = [Guid(0); 8];
        guids[0] = Guid(guid0);
        SaAttribute::GuidInfoRecord(GuidInfoRecordRepr { lid, block, guids })
    };
    let girs = |r: Result<SaResponse, SaClientError>| -> Vec<(u16, u8, Guid)> {
        records(r)
            .into_iter()
            .map(|a| match a {
                SaAttribute::GuidInfoRecord(g) => {
                    assert!(g.guids[1..].iter().all(|x| x.0 == 0));
                    (g.lid, g.block, g.guids[0])
                }
                other => panic!("{other:?}"),
            })
            .collect()
    };
    let all = girs(net.ask(2, req(Method::GetTable, 0, q(0, 0, 0))));
    assert_eq!(
        all,
        [
            (1, 0, Guid(0x1001)),
            (2, 0, Guid(0x1002)),
            (3, 0, Guid(0x1003)),
            (4, 0, Guid(0x1004)),
            (testing::SWITCH_LID, 0, Guid(0xaaaa)),
        ]
    );
    assert_eq!(
        girs(net.ask(2, req(Method::Get, gir_mask::LID, q(3, 0, 0)))),
        [(3, 0, Guid(0x1003))]
    );
    assert_eq!(
        girs(net.ask(2, req(Method::Get, gir_mask::GUID0, q(0, 0, 0x1004)))),
        [(4, 0, Guid(0x1004))]
    );
    for (mask, rec) in [
        (gir_mask::LID | gir_mask::BLOCK, q(3, 1, 0)),
        (gir_mask::LID | gir_mask::GUID0, q(3, 0, 0x1004)),
    ] {
        assert_eq!(
            net.ask(2, req(Method::Get, mask, rec)).err(),
            status(SaStatus::NoRecords).err()
        );
    }
    // A Set needs LID and BlockNum (alias GUIDs: tests/alias_guids.rs).
    assert_eq!(
        net.ask(2, req(Method::Set, gir_mask::LID, q(2, 0, 0)))
            .err(),
        status(SaStatus::ReqInsufficientComponents).err()
    );
}

proptest::proptest! {
    // Bad input never panics (docs/ARCHITECTURE.md "Rules"), and every Get or GetTable of these
    // records from a known port gets exactly one answer (a single MAD or an RMPP transfer's first
    // segment), whatever the record and component mask hold.
    #[test]
    fn any_query_gets_one_answer(
        data in proptest::collection::vec(proptest::prelude::any::<u8>(), 200),
        which in 0usize..6,
        mask in proptest::prelude::any::<u64>(),
        modifier in proptest::prelude::any::<u32>(),
        table in proptest::prelude::any::<bool>(),
        trusted in proptest::prelude::any::<bool>(),
    ) {
        use ipoib_wire::mad::attr::sa as attr;
        let ids = [
            attr::NODE_RECORD,
            attr::PORT_INFO_RECORD,
            attr::LINK_RECORD,
            attr::P_KEY_TABLE_RECORD,
            attr::LINEAR_FORWARDING_TABLE_RECORD,
            attr::GUID_INFO_RECORD,
        ];
        let mut net = Net::default(3);
        let method = if table { Method::GetTable } else { Method::Get };
        let mut m = SaMadRepr::request(method, 7, mask, SaAttribute::Raw(ipoib_wire::sa::SaRawData::new(&data)));
        m.header.attribute_id = ids[which];
        m.header.attribute_modifier = modifier;
        m.sa.sm_key = u64::from(trusted);
        let bytes = m.to_bytes().to_vec();
        net.sa.handle_mad(net.now, MadIn { from: MadAddr::gsi(2), mad: bytes });
        let mut answers = 0;
        while let Some(out) = net.sa.poll_transmit(net.now) {
            proptest::prop_assert_eq!(out.to.lid, 2);
            // RMPP flags (IBA 1 §13.6.2): Active 1, First 2; a later segment is active, not first.
            let rmpp_later = out.mad[26] & 1 != 0 && out.mad[26] & 2 == 0;
            if !rmpp_later {
                answers += 1;
            }
        }
        proptest::prop_assert_eq!(answers, 1);
    }
}

//! SLtoVLMappingTableRecord and VLArbitrationTableRecord against OpenSM's rules
//! (osm_sa_slvl_record.c, osm_sa_vlarb_record.c): the records given and their order, component
//! masks, the tables the SM wrote, P_Key visibility, methods.

use super::*;
use ipoib_wire::mad::Method;
use ipoib_wire::sa::{slvlr_mask, vlar_mask, SaAttribute, SlToVlRecordRepr, VlArbRecordRepr};
use ipoib_wire::smp::{SlToVlTableRepr, VlArbEntry, VlArbTableRepr};

const SW: u16 = testing::SWITCH_LID;

fn slvl_q(lid: u16, in_port: u8, out_port: u8) -> SaAttribute {
    SaAttribute::SlToVlRecord(SlToVlRecordRepr {
        lid,
        in_port,
        out_port,
        table: SlToVlTableRepr::default(),
    })
}

fn vlar_q(lid: u16, port: u8, block: u8) -> SaAttribute {
    SaAttribute::VlArbRecord(VlArbRecordRepr {
        lid,
        port,
        block,
        table: VlArbTableRepr::default(),
    })
}

fn ask(net: &mut Net, from: u16, m: Method, mask: u64, q: SaAttribute) -> Vec<SaAttribute> {
    ask_records(net, from, m, mask, q)
}

fn slvls(v: Vec<SaAttribute>) -> Vec<SlToVlRecordRepr> {
    v.into_iter()
        .map(|a| match a {
            SaAttribute::SlToVlRecord(r) => r,
            other => panic!("{other:?}"),
        })
        .collect()
}

fn vlars(v: Vec<SaAttribute>) -> Vec<VlArbRecordRepr> {
    v.into_iter()
        .map(|a| match a {
            SaAttribute::VlArbRecord(r) => r,
            other => panic!("{other:?}"),
        })
        .collect()
}

fn net(model: SubnetModel) -> Net {
    Net::new(
        model,
        PartitionConfig::default_config(),
        SaServerConfig::default(),
        3,
    )
}

// IBA 1 §15.2.5.4; OpenSM osm_slvl_rec_rcv_process: one record per CA port (InputPortNum and
// OutputPortNum 0), one per (output, input) pair of a switch's ports 0..=N, by output then input
// port; LID the CA port's or switch port 0's; the table the SM wrote, zero where it wrote none.
#[test]
fn sl_to_vl_records_list_ca_ports_and_every_switch_port_pair() {
    let mut m = default_model(2); // CAs LID 1, 2, 3 (GUIDs 0x1001..) then the switch (0xaaaa)
    let mut t = SlToVlTableRepr::default();
    t.vls[0] = 1;
    t.vls[15] = 7;
    m.sl2vl.insert((Guid(0xaaaa), 2, 1), t);
    m.sl2vl.insert((Guid(0x1002), 1, 0), t);
    let mut net = net(m);
    let all = slvls(ask(&mut net, 2, Method::GetTable, 0, slvl_q(0, 0, 0)));
    assert_eq!(all.len(), 3 + 4 * 4);
    let heads: Vec<(u16, u8, u8)> = all.iter().map(|r| (r.lid, r.in_port, r.out_port)).collect();
    assert_eq!(
        &heads[..5],
        &[(1, 0, 0), (2, 0, 0), (3, 0, 0), (SW, 0, 0), (SW, 1, 0)]
    );
    assert_eq!(heads[18], (SW, 3, 3));
    assert_eq!(all[1].table, t, "CA LID 2's table as the SM wrote it");
    assert_eq!(all[0].table, SlToVlTableRepr::default());
    let sw21: Vec<_> = all.iter().filter(|r| r.table == t && r.lid == SW).collect();
    assert_eq!(sw21.len(), 1);
    assert_eq!((sw21[0].in_port, sw21[0].out_port), (1, 2));
    // LID, OutputPortNum and InputPortNum narrow a switch's records.
    let by = |net: &mut Net, mask, q| slvls(ask(net, 2, Method::GetTable, mask, q)).len();
    assert_eq!(by(&mut net, slvlr_mask::LID, slvl_q(SW, 0, 0)), 16);
    let out = slvlr_mask::LID | slvlr_mask::OUT_PORT;
    assert_eq!(by(&mut net, out, slvl_q(SW, 0, 2)), 4);
    assert_eq!(by(&mut net, out | slvlr_mask::IN_PORT, slvl_q(SW, 1, 2)), 1);
    assert_eq!(by(&mut net, out, slvl_q(SW, 0, 9)), 0, "no port 9");
    // On a CA they are ignored (OpenSM reads them for switches only).
    assert_eq!(by(&mut net, out | slvlr_mask::IN_PORT, slvl_q(3, 5, 6)), 1);
    assert_eq!(
        by(&mut net, slvlr_mask::LID, slvl_q(77, 0, 0)),
        0,
        "no LID 77"
    );
    // Get: the one record, or ERR_NO_RECORDS / ERR_TOO_MANY_RECORDS.
    let one = slvls(ask(
        &mut net,
        2,
        Method::Get,
        slvlr_mask::LID,
        slvl_q(2, 0, 0),
    ));
    assert_eq!(one, [all[1]]);
    let q = slvl_q(77, 0, 0);
    let r = net.ask(2, SaMadRepr::request(Method::Get, 0, slvlr_mask::LID, q));
    assert_eq!(r, status(SaStatus::NoRecords));
    let q = slvl_q(SW, 0, 0);
    let r = net.ask(2, SaMadRepr::request(Method::Get, 0, slvlr_mask::LID, q));
    assert_eq!(r, status(SaStatus::TooManyRecords));
}

// IBA 1 §15.2.5.9; OpenSM osm_vlarb_rec_rcv_process: blocks 1-4 of every port (a switch's
// ports 0..=N), by port then block; a CA's own port whatever OutputPortNum says; a port number
// past a switch's ports gives none.
#[test]
fn vl_arb_records_list_four_blocks_per_port() {
    let mut m = default_model(2);
    let mut t = VlArbTableRepr::default();
    t.entries[0] = VlArbEntry { vl: 1, weight: 32 };
    m.vlarb.insert((Guid(0xaaaa), 3, 2), t);
    let mut net = net(m);
    let all = vlars(ask(&mut net, 2, Method::GetTable, 0, vlar_q(0, 0, 0)));
    assert_eq!(all.len(), 3 * 4 + 4 * 4);
    let heads: Vec<(u16, u8, u8)> = all.iter().map(|r| (r.lid, r.port, r.block)).collect();
    assert_eq!(
        &heads[..5],
        &[(1, 1, 1), (1, 1, 2), (1, 1, 3), (1, 1, 4), (2, 1, 1)]
    );
    assert_eq!(&heads[12..14], &[(SW, 0, 1), (SW, 0, 2)]);
    let written: Vec<_> = all.iter().filter(|r| r.table == t).collect();
    assert_eq!(written.len(), 1);
    assert_eq!(
        (written[0].lid, written[0].port, written[0].block),
        (SW, 3, 2)
    );
    let by = |net: &mut Net, mask, q| vlars(ask(net, 2, Method::GetTable, mask, q));
    let lid = vlar_mask::LID;
    assert_eq!(by(&mut net, lid, vlar_q(SW, 0, 0)).len(), 16);
    assert_eq!(
        by(&mut net, lid | vlar_mask::OUT_PORT, vlar_q(SW, 3, 0)).len(),
        4
    );
    let one = by(
        &mut net,
        lid | vlar_mask::OUT_PORT | vlar_mask::BLOCK,
        vlar_q(SW, 3, 2),
    );
    assert_eq!(one, [*written[0]]);
    assert!(by(&mut net, lid | vlar_mask::OUT_PORT, vlar_q(SW, 4, 0)).is_empty());
    // A CA's port: its own, OutputPortNum ignored; BlockNum selects.
    let ca = by(&mut net, lid | vlar_mask::OUT_PORT, vlar_q(3, 2, 0));
    assert_eq!(
        ca.iter().map(|r| (r.port, r.block)).collect::<Vec<_>>(),
        [(1, 1), (1, 2), (1, 3), (1, 4)]
    );
    assert_eq!(by(&mut net, vlar_mask::BLOCK, vlar_q(0, 0, 3)).len(), 3 + 4);
    assert!(by(&mut net, vlar_mask::BLOCK, vlar_q(0, 0, 5)).is_empty());
    let q = vlar_q(SW, 0, 0);
    let r = net.ask(2, SaMadRepr::request(Method::Get, 0, lid, q));
    assert_eq!(r, status(SaStatus::TooManyRecords));
}

// OpenSM osm_physp_share_pkey: a port whose P_Keys the requester shares none of is not listed
// (its own port always is).
#[test]
fn qos_records_only_of_ports_sharing_a_pkey() {
    let mut m = default_model(2);
    m.ports[2].pkeys = vec![PKey(0x8002)]; // LID 3
    let mut net = net(m);
    let lid = slvlr_mask::LID;
    assert!(slvls(ask(&mut net, 3, Method::GetTable, lid, slvl_q(2, 0, 0))).is_empty());
    assert_eq!(
        slvls(ask(&mut net, 3, Method::GetTable, lid, slvl_q(3, 0, 0))).len(),
        1
    );
    assert!(vlars(ask(
        &mut net,
        3,
        Method::GetTable,
        vlar_mask::LID,
        vlar_q(1, 0, 0)
    ))
    .is_empty());
    assert_eq!(
        vlars(ask(
            &mut net,
            2,
            Method::GetTable,
            vlar_mask::LID,
            vlar_q(1, 0, 0)
        ))
        .len(),
        4
    );
}

// Read-only, as OpenSM: Set and Delete are dropped unanswered (OpenSM's dispatcher has no
// handler for them); GetMulti reaches the handler, which refuses it
// with METHOD_ATTR_UNSUPPORTED (runtime test `opensm_sa_edges`).
#[test]
fn qos_records_are_read_only() {
    let mut net = net(default_model(1));
    for q in [slvl_q(2, 0, 0), vlar_q(2, 1, 1)] {
        for m in [Method::Set, Method::Delete] {
            let r = net.ask(2, SaMadRepr::request(m, 0, 0, q));
            assert_eq!(r.err(), Some(SaClientError::Timeout));
        }
        let r = net.ask(2, SaMadRepr::request(Method::GetMulti, 0, 0, q));
        assert_eq!(
            r.err(),
            Some(SaClientError::Status(MadStatus::METHOD_ATTR_UNSUPPORTED))
        );
    }
}

// Input and output port numbers past a switch's ports name no port: no records (OpenSM 3.3.23
// reads past its port table there: records of an InPort 9 on an 8-port switch, a crash for an
// OutPort 9; docs/IBSIM.md "OpenSM's QoS table records on ibsim"). Mask bits of no component
// (3 and up) select nothing; BlockNum 0 or 5 names no block (a Get: ERR_NO_RECORDS).
#[test]
fn qos_records_of_ports_past_a_switch_and_unknown_mask_bits() {
    let mut net = net(default_model(2)); // the switch's ports 0..=3
    let slvl = |net: &mut Net, mask, q| slvls(ask(net, 2, Method::GetTable, mask, q)).len();
    let lid_in = slvlr_mask::LID | slvlr_mask::IN_PORT;
    assert_eq!(slvl(&mut net, lid_in, slvl_q(SW, 3, 0)), 4);
    assert_eq!(
        slvl(&mut net, lid_in, slvl_q(SW, 4, 0)),
        0,
        "no input port 4"
    );
    assert_eq!(slvl(&mut net, lid_in, slvl_q(SW, 255, 0)), 0);
    let out = slvlr_mask::LID | slvlr_mask::OUT_PORT;
    assert_eq!(
        slvl(&mut net, out, slvl_q(SW, 0, 255)),
        0,
        "no output port 255"
    );
    let unknown = !0u64 << 3;
    assert_eq!(slvl(&mut net, unknown, slvl_q(0, 0, 0)), 3 + 4 * 4);
    assert_eq!(
        slvl(&mut net, unknown | slvlr_mask::LID, slvl_q(SW, 0, 0)),
        16
    );
    let vlar = |net: &mut Net, mask, q| vlars(ask(net, 2, Method::GetTable, mask, q)).len();
    assert_eq!(vlar(&mut net, unknown, vlar_q(0, 0, 0)), (3 + 4) * 4);
    let lid_port = vlar_mask::LID | vlar_mask::OUT_PORT;
    assert_eq!(vlar(&mut net, lid_port, vlar_q(SW, 255, 0)), 0);
    for block in [0, 5, 255] {
        let all = vlar_mask::LID | vlar_mask::OUT_PORT | vlar_mask::BLOCK;
        assert_eq!(
            vlar(&mut net, all, vlar_q(SW, 1, block)),
            0,
            "block {block}"
        );
        let r = net.ask(
            2,
            SaMadRepr::request(Method::Get, 0, all, vlar_q(SW, 1, block)),
        );
        assert_eq!(r, status(SaStatus::NoRecords), "block {block}");
    }
    let q = slvl_q(SW, 4, 1);
    let r = net.ask(2, SaMadRepr::request(Method::Get, 0, lid_in | out, q));
    assert_eq!(r, status(SaStatus::NoRecords));
}

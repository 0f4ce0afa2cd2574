//! SwitchInfoRecord against OpenSM's rules (osm_sa_sw_info_record.c): the switches listed and
//! their order, the component mask's LID, the SwitchInfo the SM holds, P_Key visibility, methods.

use super::*;
use ipoib_wire::mad::Method;
use ipoib_wire::sa::{swir_mask, SaAttribute, SwitchInfoRecordRepr};
use ipoib_wire::smp::SwitchInfoRepr;

const SW: u16 = testing::SWITCH_LID;
/// A second switch, of a smaller GUID than the first (0xaaaa): listed first.
const SW2: u16 = 150;

fn q(lid: u16) -> SaAttribute {
    SaAttribute::SwitchInfoRecord(SwitchInfoRecordRepr {
        lid,
        switch_info: SwitchInfoRepr::default(),
    })
}

fn info(top: u16) -> SwitchInfoRepr {
    SwitchInfoRepr {
        linear_fdb_cap: 0xc000,
        linear_fdb_top: top,
        life_time_value: 18,
        lids_per_port: 1,
        multicast_fdb_top: 0xc001,
        ..SwitchInfoRepr::default()
    }
}

/// CAs LID 1..=3 on switch 0xaaaa (LID 200, top 200), a second switch 0x0bbb (LID 150, top 150)
/// with no port cabled, and a third (0xcccc) whose SwitchInfo the SM does not hold.
fn net_of(m: impl FnOnce(&mut SubnetModel)) -> Net {
    let mut model = default_model(2);
    let mut sw2 = model.switches[0].clone();
    sw2.guid = Guid(0x0bbb);
    sw2.lid = SW2;
    for p in &mut sw2.ports {
        p.peer = Peer::None;
    }
    let mut sw3 = sw2.clone();
    sw3.guid = Guid(0xcccc);
    sw3.lid = 160;
    model.switches.extend([sw2, sw3]);
    model.switch_infos.insert(Guid(0xaaaa), info(SW));
    model.switch_infos.insert(Guid(0x0bbb), info(SW2));
    m(&mut model);
    Net::new(
        model,
        PartitionConfig::default_config(),
        SaServerConfig::default(),
        3,
    )
}

fn ask(net: &mut Net, m: Method, mask: u64, q: SaAttribute) -> Vec<SwitchInfoRecordRepr> {
    ask_records(net, 2, m, mask, q)
        .into_iter()
        .map(|a| match a {
            SaAttribute::SwitchInfoRecord(r) => r,
            other => panic!("{other:?}"),
        })
        .collect()
}

// IBA 1 §15.2.5.5; OpenSM osm_sir_rcv_process: one record per switch of its switch table (those
// it read a SwitchInfo of), by GUID, LID its port 0's, the SwitchInfo as held; the mask's LID
// names one switch (LID 0 or a LID of no switch: none); Get gives one or ERR_NO_RECORDS /
// ERR_TOO_MANY_RECORDS.
#[test]
fn switch_info_records_list_the_switches_the_sm_read() {
    let mut net = net_of(|_| {});
    let all = ask(&mut net, Method::GetTable, 0, q(0));
    assert_eq!(
        all,
        [
            SwitchInfoRecordRepr {
                lid: SW2,
                switch_info: info(SW2)
            },
            SwitchInfoRecordRepr {
                lid: SW,
                switch_info: info(SW)
            },
        ]
    );
    let by_lid = |net: &mut Net, lid| ask(net, Method::GetTable, swir_mask::LID, q(lid));
    assert_eq!(by_lid(&mut net, SW), [all[1]]);
    assert!(by_lid(&mut net, 0).is_empty(), "LID 0 names no switch");
    assert!(by_lid(&mut net, 2).is_empty(), "a CA's LID");
    assert!(by_lid(&mut net, 160).is_empty(), "no SwitchInfo held");
    // The other bits select nothing: the reserved one, and fields OpenSM does not compare.
    assert_eq!(
        ask(&mut net, Method::GetTable, swir_mask::RESERVED, q(9)),
        all
    );
    assert_eq!(ask(&mut net, Method::Get, swir_mask::LID, q(SW2)), [all[0]]);
    let r = net.ask(2, SaMadRepr::request(Method::Get, 0, swir_mask::LID, q(7)));
    assert_eq!(r, status(SaStatus::NoRecords));
    let r = net.ask(2, SaMadRepr::request(Method::Get, 0, 0, q(0)));
    assert_eq!(r, status(SaStatus::TooManyRecords));
}

// OpenSM osm_physp_share_pkey on the switch's port 0: a requester sharing no P_Key with it does
// not see the switch.
#[test]
fn switch_info_records_only_of_switches_sharing_a_pkey() {
    let mut net = net_of(|m| {
        m.switch_port0_pkeys
            .insert(Guid(0x0bbb), vec![PKey(0x8002)]);
    });
    let all = ask(&mut net, Method::GetTable, 0, q(0));
    assert_eq!(all.iter().map(|r| r.lid).collect::<Vec<_>>(), [SW]);
}

// Read-only, as OpenSM: Set and Delete are dropped unanswered; GetMulti reaches the handler,
// which refuses it with METHOD_ATTR_UNSUPPORTED (runtime test `opensm_sa_edges`).
#[test]
fn switch_info_records_are_read_only() {
    let mut net = net_of(|_| {});
    for m in [Method::Set, Method::Delete] {
        let r = net.ask(2, SaMadRepr::request(m, 0, 0, q(SW)));
        assert_eq!(r.err(), Some(SaClientError::Timeout));
    }
    let r = net.ask(2, SaMadRepr::request(Method::GetMulti, 0, 0, q(SW)));
    assert_eq!(
        r.err(),
        Some(SaClientError::Status(MadStatus::METHOD_ATTR_UNSUPPORTED))
    );
}

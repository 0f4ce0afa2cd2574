//! MulticastForwardingTableRecord against OpenSM's rules (osm_sa_mft_record.c): the switches
//! listed and their order, the blocks and positions of each, the component mask's LID, BlockNum
//! and Position, P_Key visibility, methods.

use super::*;
use ipoib_wire::mad::Method;
use ipoib_wire::sa::{mftr_mask, MftRecordRepr, SaAttribute};
use ipoib_wire::smp::{MftBlockRepr, SwitchInfoRepr};

const SW: u16 = testing::SWITCH_LID;
/// A second switch, of a smaller GUID than the first (0xaaaa): listed first; 20 ports, so two
/// positions (ports 0-15 and 16-20).
const SW2: u16 = 150;

fn q(lid: u16, position: u8, block: u16) -> SaAttribute {
    SaAttribute::MftRecord(MftRecordRepr {
        lid,
        position,
        block,
        table: block_of(0),
    })
}

fn block_of(first: u16) -> MftBlockRepr {
    let mut port_masks = [0u16; 32];
    port_masks[0] = first;
    MftBlockRepr { port_masks }
}

fn info() -> SwitchInfoRepr {
    SwitchInfoRepr {
        multicast_fdb_cap: 0x400,
        ..SwitchInfoRepr::default()
    }
}

/// CAs LID 1..=3 on switch 0xaaaa (LID 200) with MFT block 0 (MLID 0xC000 to ports 1-3)
/// written; switch 0x0bbb (LID 150, 20 ports) with block 2 position 1 written (blocks 0-1 and
/// position 0 not); switch 0xcccc (LID 160) with a block but MulticastFDBCap 0; switch 0xdddd
/// (LID 170) with a MulticastFDBCap but no block written.
fn net_of(m: impl FnOnce(&mut SubnetModel)) -> Net {
    let mut model = default_model(2);
    let mut sw2 = model.switches[0].clone();
    sw2.guid = Guid(0x0bbb);
    sw2.lid = SW2;
    sw2.ports = vec![SwitchPort::default(); 21];
    let mut sw3 = sw2.clone();
    sw3.guid = Guid(0xcccc);
    sw3.lid = 160;
    let mut sw4 = sw2.clone();
    sw4.guid = Guid(0xdddd);
    sw4.lid = 170;
    model.switches.extend([sw2, sw3, sw4]);
    for g in [0xaaaa, 0x0bbb, 0xdddd] {
        model.switch_infos.insert(Guid(g), info());
    }
    model
        .switch_infos
        .insert(Guid(0xcccc), SwitchInfoRepr::default());
    model.mfts.insert((Guid(0xaaaa), 0, 0), block_of(0x000e));
    model.mfts.insert((Guid(0x0bbb), 2, 1), block_of(0x0010));
    model.mfts.insert((Guid(0xcccc), 0, 0), block_of(0x0002));
    m(&mut model);
    Net::new(
        model,
        PartitionConfig::default_config(),
        SaServerConfig::default(),
        3,
    )
}

fn ask(net: &mut Net, m: Method, mask: u64, q: SaAttribute) -> Vec<MftRecordRepr> {
    ask_records(net, 2, m, mask, q)
        .into_iter()
        .map(|a| match a {
            SaAttribute::MftRecord(r) => r,
            other => panic!("{other:?}"),
        })
        .collect()
}

fn rec(lid: u16, block: u16, position: u8, first: u16) -> MftRecordRepr {
    MftRecordRepr {
        lid,
        position,
        block,
        table: block_of(first),
    }
}

// IBA 1 §15.2.5.8; OpenSM mftr_rcv_by_comp_mask: switches by GUID, only those supporting
// multicast with a block in use; of each, blocks 0 to the highest in use (unwritten ones zero),
// block-major, every position 0..=max_position ((NumPorts + 1) / 16 rounded up, less one).
#[test]
fn mft_records_list_every_block_up_to_the_highest_written() {
    let mut net = net_of(|_| {});
    let all = ask(&mut net, Method::GetTable, 0, q(0, 0, 0));
    assert_eq!(
        all,
        [
            rec(SW2, 0, 0, 0),
            rec(SW2, 0, 1, 0),
            rec(SW2, 1, 0, 0),
            rec(SW2, 1, 1, 0),
            rec(SW2, 2, 0, 0),
            rec(SW2, 2, 1, 0x0010),
            rec(SW, 0, 0, 0x000e),
        ]
    );
}

// OpenSM: the mask's LID names a switch by its port 0's LID range (LID 0, a CA's or one of no
// listed switch: none); BlockNum names one block, none past the highest in use; Position one
// position, none past max_position; the reserved bits select nothing. Get gives one record or
// ERR_NO_RECORDS / ERR_TOO_MANY_RECORDS.
#[test]
fn mft_records_by_lid_block_and_position() {
    let mut net = net_of(|_| {});
    let all = ask(&mut net, Method::GetTable, 0, q(0, 0, 0));
    let mut table = |mask, q| ask(&mut net, Method::GetTable, mask, q);
    assert_eq!(table(mftr_mask::LID, q(SW, 9, 9)), [all[6]]);
    assert_eq!(table(mftr_mask::LID, q(SW2, 0, 0)), all[..6]);
    for lid in [0, 2, 160, 170] {
        assert!(table(mftr_mask::LID, q(lid, 0, 0)).is_empty(), "LID {lid}");
    }
    assert_eq!(table(mftr_mask::BLOCK, q(0, 9, 2)), all[4..6]);
    assert_eq!(
        table(mftr_mask::BLOCK, q(0, 0, 0)),
        [all[0], all[1], all[6]]
    );
    assert!(table(mftr_mask::BLOCK, q(0, 0, 3)).is_empty());
    assert_eq!(
        table(mftr_mask::POSITION, q(0, 1, 9)),
        [all[1], all[3], all[5]]
    );
    assert!(table(mftr_mask::POSITION, q(0, 2, 0)).is_empty());
    let both = mftr_mask::LID | mftr_mask::POSITION | mftr_mask::BLOCK;
    assert_eq!(table(both, q(SW2, 1, 2)), [all[5]]);
    assert_eq!(
        table(mftr_mask::RESERVED1 | mftr_mask::RESERVED2, q(7, 7, 7)),
        all
    );
    assert_eq!(ask(&mut net, Method::Get, both, q(SW, 0, 0)), [all[6]]);
    let r = net.ask(2, SaMadRepr::request(Method::Get, 0, both, q(SW, 1, 0)));
    assert_eq!(r, status(SaStatus::NoRecords));
    let r = net.ask(2, SaMadRepr::request(Method::Get, 0, 0, q(0, 0, 0)));
    assert_eq!(r, status(SaStatus::TooManyRecords));
}

// OpenSM osm_physp_share_pkey on the switch's port 0: a requester sharing no P_Key with it does
// not see the switch's blocks.
#[test]
fn mft_records_only_of_switches_sharing_a_pkey() {
    let mut net = net_of(|m| {
        m.switch_port0_pkeys
            .insert(Guid(0x0bbb), vec![PKey(0x8002)]);
    });
    let all = ask(&mut net, Method::GetTable, 0, q(0, 0, 0));
    assert_eq!(all, [rec(SW, 0, 0, 0x000e)]);
}

// Read-only, as OpenSM: Set and Delete are dropped unanswered; GetMulti reaches the handler,
// which refuses it with METHOD_ATTR_UNSUPPORTED (runtime test `opensm_sa_edges`).
#[test]
fn mft_records_are_read_only() {
    let mut net = net_of(|_| {});
    for m in [Method::Set, Method::Delete] {
        let r = net.ask(2, SaMadRepr::request(m, 0, 0, q(SW, 0, 0)));
        assert_eq!(r.err(), Some(SaClientError::Timeout));
    }
    let r = net.ask(2, SaMadRepr::request(Method::GetMulti, 0, 0, q(SW, 0, 0)));
    assert_eq!(
        r.err(),
        Some(SaClientError::Status(MadStatus::METHOD_ATTR_UNSUPPORTED))
    );
}

//! PathRecord against OpenSM's rules (osm_sa_path_record.c), including multi-MAD GetTable.

use super::*;
use ipoib_wire::mad::Method;
use ipoib_wire::sa::{pr_mask, PathRecordRepr, SaAttribute};
use ipoib_wire::PKey;

fn pr(method: Method, mask: u64, p: PathRecordRepr) -> SaMadRepr {
    SaMadRepr::request(method, 0, mask, SaAttribute::PathRecord(p))
}

fn paths(r: Result<SaResponse, SaClientError>) -> Vec<PathRecordRepr> {
    let r = r.expect("success");
    let mut v: Vec<PathRecordRepr> = r
        .records
        .iter()
        .chain(r.attribute.iter())
        .filter_map(|a| match a {
            SaAttribute::PathRecord(p) => Some(*p),
            _ => None,
        })
        .collect();
    v.dedup();
    v
}

/// SM (LID 1) + hosts 2, 3, 4; host 4 sits behind a switch port with MTU 3 and rate 3; host 3 is
/// in partition 0x0002 only.
fn model() -> SubnetModel {
    let mut m = default_model(3);
    m.ports[2].pkeys = vec![PKey(0x8002)];
    m.switches[0].ports[4].mtu = Mtu::Mtu1024;
    m.switches[0].ports[4].rate = Rate::Gbps10;
    m
}

// IBA 1 §15.2.5.16; OpenSM pr_rcv_get_path_parms / pr_rcv_build_pr.
#[test]
fn path_between_two_hosts() {
    let mut net = Net::new(
        model(),
        PartitionConfig::default_config(),
        SaServerConfig::default(),
        1,
    );
    let q = PathRecordRepr {
        sgid: gid_of(2),
        dgid: gid_of(4),
        numb_path: 1,
        reversible: true,
        ..Default::default()
    };
    let mask = pr_mask::SGID | pr_mask::DGID | pr_mask::NUMB_PATH | pr_mask::REVERSIBLE;
    let p = paths(net.ask(2, pr(Method::Get, mask, q)));
    assert_eq!(p.len(), 1);
    let p = p[0];
    assert_eq!(
        (p.slid, p.dlid, p.sgid, p.dgid),
        (2, 4, gid_of(2), gid_of(4))
    );
    assert_eq!(
        (u8::from(p.mtu), u8::from(p.rate)),
        (3, 3),
        "narrowest link"
    );
    assert_eq!(
        (p.pkey, p.sl, p.hop_limit, p.packet_life_time),
        (PKey(0xffff), 0, 0, 18)
    );
    assert!(p.reversible);
    assert_eq!(p.mtu_selector, Selector::Exactly);
    // By LIDs, and to itself (PacketLifeTime 0 on loopback).
    let by_lid = PathRecordRepr {
        slid: 2,
        dlid: 2,
        ..Default::default()
    };
    let p = paths(net.ask(2, pr(Method::Get, pr_mask::SLID | pr_mask::DLID, by_lid)));
    assert_eq!((p[0].packet_life_time, u8::from(p[0].mtu)), (0, 4));
    // Host 3 shares no P_Key with host 2: no path.
    let q3 = PathRecordRepr {
        sgid: gid_of(2),
        dgid: gid_of(3),
        ..Default::default()
    };
    assert_eq!(
        net.ask(2, pr(Method::Get, pr_mask::SGID | pr_mask::DGID, q3)),
        status(SaStatus::NoRecords)
    );
    // An unknown DGID: no records (OpenSM answers endpoint failures with an empty list).
    let qx = PathRecordRepr {
        dgid: gid_of(77),
        ..Default::default()
    };
    assert_eq!(
        net.ask(2, pr(Method::Get, pr_mask::DGID, qx)),
        status(SaStatus::NoRecords)
    );
    assert!(paths(net.ask(2, pr(Method::GetTable, pr_mask::DGID, qx))).is_empty());
    // SGID and SLID naming different ports: ERR_REQ_INVALID.
    let bad = PathRecordRepr {
        sgid: gid_of(2),
        slid: 4,
        ..Default::default()
    };
    assert_eq!(
        net.ask(2, pr(Method::Get, pr_mask::SGID | pr_mask::SLID, bad)),
        status(SaStatus::ReqInvalid)
    );
    // Half a ServiceID: insufficient components.
    assert_eq!(
        net.ask(2, pr(Method::Get, 1, q)),
        status(SaStatus::ReqInsufficientComponents)
    );
}

// OpenSM pr_rcv_get_path_parms: MTU/rate selectors; P_Key must be shared.
#[test]
fn path_selectors_and_pkey() {
    let mut net = Net::new(
        model(),
        PartitionConfig::default_config(),
        SaServerConfig::default(),
        1,
    );
    let base = PathRecordRepr {
        sgid: gid_of(2),
        dgid: gid_of(4),
        ..Default::default()
    };
    let m = pr_mask::SGID | pr_mask::DGID | pr_mask::MTU | pr_mask::MTU_SELECTOR;
    let with = |sel, mtu| PathRecordRepr {
        mtu_selector: sel,
        mtu: Mtu::from(mtu),
        ..base
    };
    assert_eq!(
        net.ask(2, pr(Method::Get, m, with(Selector::Exactly, 4))),
        status(SaStatus::NoRecords)
    );
    assert_eq!(
        u8::from(paths(net.ask(2, pr(Method::Get, m, with(Selector::Exactly, 2))))[0].mtu),
        2
    );
    assert_eq!(
        u8::from(paths(net.ask(2, pr(Method::Get, m, with(Selector::LessThan, 3))))[0].mtu),
        2
    );
    assert_eq!(
        net.ask(2, pr(Method::Get, m, with(Selector::GreaterThan, 3))),
        status(SaStatus::NoRecords)
    );
    assert_eq!(
        u8::from(paths(net.ask(2, pr(Method::Get, m, with(Selector::LargestAvailable, 1))))[0].mtu),
        3
    );
    assert_eq!(
        net.ask(2, pr(Method::Get, m, with(Selector::Exactly, 9))),
        status(SaStatus::ReqInvalid)
    );
    let r = |sel, rate| PathRecordRepr {
        rate_selector: sel,
        rate: Rate::from(rate),
        ..base
    };
    let rm = pr_mask::SGID | pr_mask::DGID | pr_mask::RATE | pr_mask::RATE_SELECTOR;
    assert_eq!(
        u8::from(paths(net.ask(2, pr(Method::Get, rm, r(Selector::LessThan, 3))))[0].rate),
        5,
        "5 Gb/s is just below 10"
    );
    assert_eq!(
        net.ask(2, pr(Method::Get, rm, r(Selector::GreaterThan, 3))),
        status(SaStatus::NoRecords)
    );
    let k = PathRecordRepr {
        pkey: PKey(0x8002),
        ..base
    };
    assert_eq!(
        net.ask(
            2,
            pr(
                Method::Get,
                pr_mask::SGID | pr_mask::DGID | pr_mask::P_KEY,
                k
            )
        ),
        status(SaStatus::NoRecords)
    );
}

// IBA 1 §13.6 RMPP; OpenSM pr_rcv_process_world; Linux mad_rmpp.c conventions (sa/mod.rs docs).
#[test]
fn gettable_over_several_mads_with_rmpp() {
    let mut net = Net::default(6);
    // Every path between the 8 end ports (7 CA ports and the switch's port 0): 64 records × 64
    // bytes = 4096 bytes = 21 segments.
    let all = paths(net.ask(2, pr(Method::GetTable, 0, PathRecordRepr::default())));
    assert_eq!(all.len(), 64);
    let data_segs: Vec<&MadOut> = net
        .log
        .iter()
        .filter(|(_, from, m)| *from == SA_LID && m.mad[3] == 0x92 && m.mad[25] == 1)
        .map(|(_, _, m)| m)
        .collect();
    assert_eq!(data_segs.len(), 21);
    // First segment: PayloadLength = data + 20 per segment; last: 20 + its bytes (Linux).
    let paylen = |m: &MadOut| u32::from_be_bytes([m.mad[32], m.mad[33], m.mad[34], m.mad[35]]);
    assert_eq!(paylen(data_segs[0]), 4096 + 21 * 20);
    assert_eq!(paylen(data_segs[20]), 20 + 96);
    assert_eq!(data_segs[0].mad[26] & 0x07, 0x03);
    assert_eq!(data_segs[20].mad[26] & 0x07, 0x05);
    assert_eq!(net.sa.stats().rmpp_done, 1);
    // NumbPath limits a half query (from host 2 to every port).
    let q = PathRecordRepr {
        sgid: gid_of(2),
        numb_path: 1,
        ..Default::default()
    };
    assert_eq!(
        paths(net.ask(
            2,
            pr(Method::GetTable, pr_mask::SGID | pr_mask::NUMB_PATH, q)
        ))
        .len(),
        8
    );
}

// IBA 1 §13.6.3: lost DATA segments and lost ACKs are recovered by the sender's timer.
#[test]
fn rmpp_survives_lost_segments_and_acks() {
    let mut net = Net::default(6);
    let mut seen = 0u32;
    net.filter = Box::new(move |from, m| {
        let rmpp_type = m.mad[25];
        let is_data = from == SA_LID && m.mad[3] == 0x92 && rmpp_type == 1;
        let is_ack = from != SA_LID && rmpp_type == 2;
        if is_data || is_ack {
            seen += 1;
            // Drop the 3rd DATA segment sent and the 6th RMPP MAD overall (an ACK or DATA).
            return seen == 3 || seen == 6 || seen == 20;
        }
        false
    });
    let all = paths(net.ask(2, pr(Method::GetTable, 0, PathRecordRepr::default())));
    assert_eq!(all.len(), 64);
    assert_eq!(net.sa.stats().rmpp_failed, 0);
    assert!(net.now > Instant::ZERO, "recovery took a timeout");
}

// IBA 1 §15.2.5.16: PathRecords are between end ports, and a switch's management port 0 is one
// (its LID and GID). OpenSM answers `saquery PR --slid <CA> --dlid <switch>`, the other way and
// a switch to itself; we answered no record (docs/OPENSM-NOTES.md "Diags on a fat tree").
#[test]
fn paths_to_and_from_a_switch_management_port() {
    let mut m = model();
    m.switches[0].ports[0].mtu = Mtu::Mtu4096;
    m.switches[0].ports[0].rate = Rate::Gbps40;
    let sw_gid = Gid::new(Gid::DEFAULT_SUBNET_PREFIX, m.switches[0].guid.0);
    let mut net = Net::new(
        m,
        PartitionConfig::default_config(),
        SaServerConfig::default(),
        1,
    );
    let sw = testing::SWITCH_LID;
    let by_lid = |slid, dlid| PathRecordRepr {
        slid,
        dlid,
        ..Default::default()
    };
    let mask = pr_mask::SLID | pr_mask::DLID;
    // Host 4 to the switch: its link's MTU and rate (1024, 10 Gb/s), one hop.
    let p = paths(net.ask(2, pr(Method::Get, mask, by_lid(4, sw))));
    assert_eq!(p.len(), 1, "{p:?}");
    assert_eq!((p[0].slid, p[0].dlid, p[0].dgid), (4, sw, sw_gid));
    assert_eq!((u8::from(p[0].mtu), u8::from(p[0].rate)), (3, 3));
    assert_eq!((p[0].pkey, p[0].packet_life_time), (PKey(0xffff), 18));
    assert!(p[0].reversible);
    // The switch to host 2, and to itself (port 0's MTU and rate, PacketLifeTime 0).
    let p = paths(net.ask(2, pr(Method::Get, mask, by_lid(sw, 2))));
    assert_eq!((p[0].sgid, p[0].dgid, p[0].dlid), (sw_gid, gid_of(2), 2));
    let p = paths(net.ask(2, pr(Method::Get, mask, by_lid(sw, sw))));
    assert_eq!(
        (
            u8::from(p[0].mtu),
            u8::from(p[0].rate),
            p[0].packet_life_time
        ),
        (5, 7, 0)
    );
    // By GID too.
    let q = PathRecordRepr {
        sgid: gid_of(2),
        dgid: sw_gid,
        ..Default::default()
    };
    let p = paths(net.ask(2, pr(Method::Get, pr_mask::SGID | pr_mask::DGID, q)));
    assert_eq!((p[0].slid, p[0].dlid), (2, sw));
    // Host 3 (partition 0x0002 only) shares no P_Key with port 0 (the default one): none.
    assert_eq!(
        net.ask(3, pr(Method::Get, mask, by_lid(3, sw))),
        status(SaStatus::NoRecords)
    );
}

//! GUIDInfoRecord Set and Delete: alias GUIDs (IBA 1 §15.2.5.18), as OpenSM 3.3.23 answers them
//! (`sa/server/alias_guids.rs`; the same requests against OpenSM: runtime test
//! `opensm_sa_edges::alias_guids_answered_like_opensm`), and MultiPathRecord (IBA 1
//! §15.2.5.20, `sa/server/multipath.rs`).

use super::*;
use ipoib_wire::mad::attr::sa as attr;
use ipoib_wire::mad::Method;
use ipoib_wire::sa::{gir_mask, GuidInfoRecordRepr, PathRecordRepr, SaAttribute};

/// Ports with 20 GUIDs each (three blocks), as ibsim's HCAs.
fn net() -> Net {
    net_of(model(20))
}

/// The three-host model with `guid_cap` GUIDs on every port.
fn model(guid_cap: u8) -> SubnetModel {
    let mut m = default_model(3);
    for p in &mut m.ports {
        p.node.guid_cap = guid_cap;
    }
    m
}

/// The SA of `m` with the default partitions.
fn net_of(m: SubnetModel) -> Net {
    Net::new(
        m,
        PartitionConfig::default_config(),
        SaServerConfig::default(),
        7,
    )
}

/// The SA's single answer to `mad` from the port with LID `from`.
fn ask(net: &mut Net, from: u16, mad: &[u8; 256]) -> Option<SaMadRepr> {
    net.sa.handle_mad(
        net.now,
        MadIn {
            from: MadAddr::gsi(from),
            mad: mad.to_vec(),
        },
    );
    let mut answers = Vec::new();
    while let Some(out) = net.sa.poll_transmit(net.now) {
        answers.push(SaMadRepr::parse(&out.mad).expect("an SA MAD"));
    }
    assert!(answers.len() <= 1, "{answers:?}");
    answers.pop()
}

fn gir(
    net: &mut Net,
    method: Method,
    mask: u64,
    lid: u16,
    block: u8,
    g: &[(usize, u64)],
) -> (u16, [u64; 8]) {
    let mut guids = [Guid(0); 8];
    for &(i, v) in g {
        guids[i] = Guid(v);
    }
    let rec = GuidInfoRecordRepr { lid, block, guids };
    let m = SaMadRepr::request(method, 9, mask, SaAttribute::GuidInfoRecord(rec)).to_bytes();
    let a = ask(net, 2, &m).expect("an answer");
    let out = match a.attribute {
        SaAttribute::GuidInfoRecord(r) if a.header.status.0 == 0 => r.guids.map(|g| g.0),
        _ => [0; 8],
    };
    (a.header.status.0, out)
}

// OpenSM 3.3.23 `osm_gir_rcv_process`, `set_guidinfo`, `del_guidinfo`, the answers measured on
// ibsim (opensm_sa_edges): the mask needs LID and BlockNum; GUID 0 of block 0 is read-only;
// a zero GUID gets an SA-assigned one (OpenIB's OUI, counter from 1), kept for its index after
// a Delete; a GUID some table holds is left out; Get shows the table.
#[test]
fn alias_guids_set_and_delete_as_opensm() {
    let mut net = net();
    let key = gir_mask::LID | gir_mask::BLOCK;
    let g = |n: usize| gir_mask::GUID0 << n;
    const ALIAS: u64 = 0x0002_c903_00ab_cd01;
    const FIRST: u64 = 0x0014_0500_0000_0001;
    let port = 0x1003;
    let e = |s: SaStatus| MadStatus::sa(s).0;
    // Refused before anything changes.
    assert_eq!(
        gir(&mut net, Method::Set, 0, 3, 0, &[]).0,
        e(SaStatus::ReqInsufficientComponents)
    );
    assert_eq!(
        gir(&mut net, Method::Delete, gir_mask::BLOCK, 3, 0, &[]).0,
        e(SaStatus::ReqInsufficientComponents)
    );
    assert_eq!(
        gir(&mut net, Method::Set, key | g(1), 0x99, 0, &[]).0,
        e(SaStatus::NoRecords)
    );
    assert_eq!(
        gir(&mut net, Method::Set, key | g(0), 3, 0, &[(0, ALIAS)]).0,
        e(SaStatus::ReqInvalid)
    );
    assert_eq!(
        gir(&mut net, Method::Set, key | g(1), 3, 3, &[]).0,
        e(SaStatus::NoRecords)
    );
    // A Delete of nothing answers the block as it is.
    assert_eq!(
        gir(&mut net, Method::Delete, key | g(1), 3, 0, &[(1, 5)]),
        (0, [port, 0, 0, 0, 0, 0, 0, 0])
    );
    // Assigned, given, duplicate at another index, zero keeps, no GUID in the mask changes nothing.
    assert_eq!(
        gir(&mut net, Method::Set, key | g(1), 3, 0, &[]).1,
        [port, FIRST, 0, 0, 0, 0, 0, 0]
    );
    assert_eq!(
        gir(&mut net, Method::Set, key | g(2), 3, 0, &[(2, ALIAS)]).1,
        [port, FIRST, ALIAS, 0, 0, 0, 0, 0]
    );
    let now = [port, FIRST, ALIAS, 0, 0, 0, 0, 0];
    assert_eq!(
        gir(&mut net, Method::Set, key | g(3), 3, 0, &[(3, ALIAS)]).1,
        now
    );
    assert_eq!(gir(&mut net, Method::Set, key | g(1), 3, 0, &[]).1, now);
    assert_eq!(gir(&mut net, Method::Set, key, 3, 0, &[(4, 7)]).1, now);
    assert_eq!(gir(&mut net, Method::Get, key, 3, 0, &[]), (0, now));
    // Another port: a GUID this one holds, or another port's own GUID, is left out.
    assert_eq!(
        gir(
            &mut net,
            Method::Set,
            key | g(1) | g(2),
            2,
            0,
            &[(1, ALIAS), (2, 0x1004)]
        )
        .1,
        [0x1002, 0, 0, 0, 0, 0, 0, 0]
    );
    // Block 1's first GUID is no port GUID: settable.
    assert_eq!(
        gir(&mut net, Method::Set, key | g(0), 3, 1, &[(0, ALIAS + 2)]).1,
        [ALIAS + 2, 0, 0, 0, 0, 0, 0, 0]
    );
    // Delete: never GUID 0 of block 0; the others cleared, the SA-assigned one given back to
    // its index by the next zero Set.
    assert_eq!(
        gir(&mut net, Method::Delete, key | g(0), 3, 0, &[]).0,
        e(SaStatus::ReqInvalid)
    );
    assert_eq!(
        gir(
            &mut net,
            Method::Delete,
            key | g(1) | g(2) | g(5),
            3,
            0,
            &[]
        )
        .1,
        [port, 0, 0, 0, 0, 0, 0, 0]
    );
    assert_eq!(
        gir(&mut net, Method::Set, key | g(1), 3, 0, &[]).1,
        [port, FIRST, 0, 0, 0, 0, 0, 0]
    );
    // The deleted GUID is free again for another port.
    assert_eq!(
        gir(&mut net, Method::Set, key | g(3), 2, 0, &[(3, ALIAS)]).1,
        [0x1002, 0, 0, ALIAS, 0, 0, 0, 0]
    );
    // The answer to a Set is a GetResp with the record's AttributeOffset; a Delete's a DeleteResp.
    let m = SaMadRepr::request(
        Method::Delete,
        9,
        key,
        SaAttribute::GuidInfoRecord(GuidInfoRecordRepr {
            lid: 3,
            block: 0,
            guids: [Guid(0); 8],
        }),
    )
    .to_bytes();
    let a = ask(&mut net, 2, &m).unwrap();
    assert_eq!(
        (a.header.method, a.sa.attribute_offset),
        (Method::DeleteResp, 9)
    );
}

/// A MultiPathRecord request from `sgids` to `dgids`, `rmpp` its RMPP Active flag.
fn mpr(method: Method, rmpp: bool, mask: u64, sgids: &[Gid], dgids: &[Gid], numb: u8) -> [u8; 256] {
    let mut m = SaMadRepr::class_port_info_get(5);
    m.header.method = method;
    m.header.attribute_id = attr::MULTI_PATH_RECORD;
    let mut b = m.to_bytes();
    if rmpp {
        b[24] = 1;
        b[25] = 1;
        b[26] = 0x07;
    }
    b[48..56].copy_from_slice(&mask.to_be_bytes());
    b[56 + 5] = numb;
    b[56 + 15] = sgids.len() as u8;
    b[56 + 16] = dgids.len() as u8;
    for (i, g) in sgids.iter().chain(dgids).enumerate() {
        b[56 + 24 + 16 * i..56 + 40 + 16 * i].copy_from_slice(&g.0);
    }
    b
}

// OpenSM 3.3.23 `osm_mpr_rcv_process` (statuses measured on ibsim, opensm_sa_edges): RMPP
// Active first, then GetMulti, then SGIDCount and DGIDCount, then the GIDs; a valid request is
// a GetMultiResp of PathRecords (o15-0.2.7), as many as NumbPath asks of all pairs.
#[test]
fn multipath_records_as_opensm() {
    let mut net = net();
    const COUNTS: u64 = (1 << 19) | (1 << 20);
    let (s, d) = (gid_of(2), gid_of(3));
    let unknown = Gid::new(Gid::DEFAULT_SUBNET_PREFIX, 0xbad);
    let status =
        |net: &mut Net, m: [u8; 256]| ask(net, 2, &m).map(|a| (a.header.method, a.header.status.0));
    let e = |s: SaStatus| MadStatus::sa(s).0;
    assert_eq!(
        status(&mut net, mpr(Method::Get, false, COUNTS, &[s], &[d], 0)),
        Some((Method::GetResp, e(SaStatus::ReqInvalid)))
    );
    assert_eq!(
        status(
            &mut net,
            mpr(Method::GetMulti, false, COUNTS, &[s], &[d], 0)
        ),
        Some((Method::GetMultiResp, e(SaStatus::ReqInvalid)))
    );
    assert_eq!(
        status(&mut net, mpr(Method::GetTable, true, COUNTS, &[s], &[d], 0)),
        Some((Method::GetTableResp, MadStatus::METHOD_ATTR_UNSUPPORTED.0))
    );
    assert_eq!(
        status(&mut net, mpr(Method::Set, true, COUNTS, &[s], &[d], 0)),
        None
    );
    assert_eq!(
        status(
            &mut net,
            mpr(Method::GetMulti, true, 1 << 19, &[s], &[d], 0)
        ),
        Some((Method::GetMultiResp, e(SaStatus::ReqInsufficientComponents)))
    );
    assert_eq!(
        status(
            &mut net,
            mpr(Method::GetMulti, true, COUNTS | (1 << 16), &[s], &[d], 0)
        ),
        Some((Method::GetMultiResp, e(SaStatus::ReqInsufficientComponents)))
    );
    assert_eq!(
        status(&mut net, mpr(Method::GetMulti, true, COUNTS, &[s], &[], 0)),
        Some((Method::GetMultiResp, e(SaStatus::ReqInvalid)))
    );
    assert_eq!(
        status(
            &mut net,
            mpr(Method::GetMulti, true, COUNTS, &[unknown], &[d], 0)
        ),
        Some((Method::GetMultiResp, e(SaStatus::ReqInvalidGid)))
    );
    // Paths: from 2 to 3 and 4, the PathRecord AttributeID; NumbPath 1 stops after the first.
    let paths = |net: &mut Net, dgids: &[Gid], mask: u64, numb: u8| -> Vec<(u16, u16)> {
        let a = ask(
            net,
            2,
            &mpr(Method::GetMulti, true, mask, &[s], dgids, numb),
        )
        .expect("an answer");
        assert_eq!(
            (a.header.method, a.header.status.0, a.header.attribute_id),
            (Method::GetMultiResp, 0, attr::PATH_RECORD)
        );
        a.records()
            .map(|r| match r {
                Ok(SaAttribute::PathRecord(PathRecordRepr { slid, dlid, .. })) => (slid, dlid),
                other => panic!("{other:?}"),
            })
            .collect()
    };
    let e4 = gid_of(4);
    assert_eq!(paths(&mut net, &[d, e4], COUNTS, 0), [(2, 3), (2, 4)]);
    assert_eq!(paths(&mut net, &[d, e4], COUNTS | (1 << 6), 1), [(2, 3)]);
}

proptest::proptest! {
    // Bad input never panics (docs/ARCHITECTURE.md "Rules"): any GUIDInfoRecord Get, Set or
    // Delete gets exactly one answer, any MultiPathRecord request at most one, in sequences that
    // change the tables. The MADs are whole (256 bytes: a shorter one is dropped before any
    // handler, "short MAD"), an RMPP one a DATA segment (another RMPPType is an RMPP control
    // MAD), and some MultiPathRecord GIDs name ports, so that paths are answered.
    #[test]
    fn any_alias_or_multipath_request_gets_at_most_one_answer(
        reqs in proptest::collection::vec(
            (0usize..4, proptest::prelude::any::<u64>(), proptest::prelude::any::<bool>(),
             proptest::collection::vec(proptest::prelude::any::<u8>(), 0..=200),
             proptest::collection::vec(1u16..6, 0..=11)),
            1..12),
    ) {
        let mut net = net();
        for (tid, (which, mask, rmpp, data, lids)) in (1u64..).zip(reqs) {
            let (method, id) = [
                (Method::Set, attr::GUID_INFO_RECORD),
                (Method::Delete, attr::GUID_INFO_RECORD),
                (Method::GetMulti, attr::MULTI_PATH_RECORD),
                (Method::Get, attr::GUID_INFO_RECORD),
            ][which];
            let mut m = SaMadRepr::class_port_info_get(tid).to_bytes();
            m[3] = method.into();
            m[16..18].copy_from_slice(&id.to_be_bytes());
            if rmpp {
                m[24..27].copy_from_slice(&[1, 1, 0x07]);
            }
            m[56..56 + data.len()].copy_from_slice(&data);
            let mut mask = mask;
            if !lids.is_empty() {
                // SGIDCount and DGIDCount given, the GIDs split between them.
                mask |= (1 << 19) | (1 << 20);
                m[56 + 15] = (lids.len() / 2) as u8;
                m[56 + 16] = (lids.len() - lids.len() / 2) as u8;
            }
            m[48..56].copy_from_slice(&mask.to_be_bytes());
            for (i, &lid) in lids.iter().enumerate() {
                m[80 + 16 * i..96 + 16 * i].copy_from_slice(&gid_of(lid).0);
            }
            net.sa.handle_mad(net.now, MadIn { from: MadAddr::gsi(2), mad: m.to_vec() });
            let mut firsts = 0;
            while let Some(out) = net.sa.poll_transmit(net.now) {
                // A later RMPP segment is active, not first (IBA 1 §13.6.2).
                if !(out.mad[26] & 1 != 0 && out.mad[26] & 2 == 0) {
                    firsts += 1;
                }
            }
            if id == attr::GUID_INFO_RECORD {
                proptest::prop_assert_eq!(firsts, 1);
            } else {
                proptest::prop_assert!(firsts <= 1);
            }
        }
    }
}

// A sweep may find a port's GUIDCap grown (another HCA behind the same port GUID): its table
// grows with it, the aliases it held kept.
#[test]
fn a_grown_guid_cap_grows_the_table() {
    let mut m = model(8);
    let mut net = net_of(m.clone());
    let key = gir_mask::LID | gir_mask::BLOCK;
    let g1 = gir_mask::GUID0 << 1;
    assert_eq!(
        gir(&mut net, Method::Set, key | g1, 3, 0, &[(1, 0x77)]).1[1],
        0x77
    );
    assert_eq!(
        gir(&mut net, Method::Set, key | g1, 3, 1, &[]).0,
        MadStatus::sa(SaStatus::NoRecords).0
    );
    for p in &mut m.ports {
        p.node.guid_cap = 20;
    }
    net.sa.set_subnet(m);
    assert_eq!(
        gir(&mut net, Method::Set, key | g1, 3, 1, &[(1, 0x78)]),
        (0, [0, 0x78, 0, 0, 0, 0, 0, 0])
    );
    assert_eq!(
        gir(&mut net, Method::Delete, key | g1, 3, 2, &[]),
        (0, [0; 8])
    );
    assert_eq!(
        gir(&mut net, Method::Get, key, 3, 0, &[]).1[..2],
        [0x1003, 0x77]
    );
}

// OpenSM's alias table holds the port GUIDs too (`alias_port_guid_tbl`), so `set_guidinfo` skips
// an SA-assigned GUID that is some port's GUID and takes the next one. Ours took it, found it a
// port GUID, left the index empty, and kept it as the index's assigned GUID: every later zero
// Set of that index gave nothing.
#[test]
fn an_assigned_guid_that_is_a_port_guid_is_skipped() {
    const FIRST: u64 = 0x0014_0500_0000_0001;
    let mut m = model(8);
    m.ports[3].port_guid = Guid(FIRST);
    let mut net = net_of(m);
    let key = gir_mask::LID | gir_mask::BLOCK;
    let g = |n: usize| gir_mask::GUID0 << n;
    for _ in 0..2 {
        assert_eq!(
            gir(&mut net, Method::Set, key | g(1), 3, 0, &[]),
            (0, [0x1003, FIRST + 1, 0, 0, 0, 0, 0, 0])
        );
    }
}

// OpenSM's drop manager (`osm_drop_mgr.c` `drop_mgr_remove_port`) deletes the alias GUIDs of a
// port that leaves the subnet, and its GUID table goes with the port: another port may take
// them, and the port, back, has none (what the SA assigned its indices it gets again). Ours kept
// the table of a dropped port: its aliases stayed taken for good, and a host attached later in
// the same UDP fabric slot (the same port GUID) found the aliases of the one before.
#[test]
fn a_dropped_port_loses_its_alias_guids() {
    const ALIAS: u64 = 0x0002_c903_00ab_cd01;
    const FIRST: u64 = 0x0014_0500_0000_0001;
    let mut net = net();
    let key = gir_mask::LID | gir_mask::BLOCK;
    let g = |n: usize| gir_mask::GUID0 << n;
    assert_eq!(
        gir(
            &mut net,
            Method::Set,
            key | g(1) | g(2),
            3,
            0,
            &[(2, ALIAS)]
        )
        .1,
        [0x1003, FIRST, ALIAS, 0, 0, 0, 0, 0]
    );
    assert_eq!(
        gir(&mut net, Method::Set, key | g(1), 2, 0, &[(1, ALIAS)]).1,
        [0x1002, 0, 0, 0, 0, 0, 0, 0],
        "held by port 3"
    );
    let now = net.now;
    net.sa.drop_port(now, &gid_of(3));
    assert_eq!(
        gir(&mut net, Method::Get, key, 3, 0, &[]),
        (0, [0x1003, 0, 0, 0, 0, 0, 0, 0]),
        "no table left"
    );
    assert_eq!(
        gir(&mut net, Method::Set, key | g(1), 2, 0, &[(1, ALIAS)]).1,
        [0x1002, ALIAS, 0, 0, 0, 0, 0, 0],
        "free for another port"
    );
    assert_eq!(
        gir(&mut net, Method::Set, key | g(1), 3, 0, &[]).1,
        [0x1003, FIRST, 0, 0, 0, 0, 0, 0],
        "its assigned GUID kept"
    );
}

// The same for a port the SM's sweep no longer finds (the model without it, `set_subnet`), as
// OpenSM drops a port its sweep does not reach.
#[test]
fn a_port_a_sweep_no_longer_finds_loses_its_alias_guids() {
    const ALIAS: u64 = 0x0002_c903_00ab_cd01;
    let m = model(8);
    let mut net = net_of(m.clone());
    let key = gir_mask::LID | gir_mask::BLOCK;
    let g1 = gir_mask::GUID0 << 1;
    assert_eq!(
        gir(&mut net, Method::Set, key | g1, 3, 0, &[(1, ALIAS)]).1[1],
        ALIAS
    );
    // A sweep that still finds it changes nothing.
    net.sa.set_subnet(m.clone());
    assert_eq!(
        gir(&mut net, Method::Get, key, 3, 0, &[]).1[1],
        ALIAS,
        "kept while the port is there"
    );
    let mut without = m.clone();
    without.ports.retain(|p| p.lid != 3);
    net.sa.set_subnet(without);
    assert_eq!(
        gir(&mut net, Method::Set, key | g1, 2, 0, &[(1, ALIAS)]).1[1],
        ALIAS,
        "free for another port"
    );
    net.sa.set_subnet(m);
    assert_eq!(
        gir(&mut net, Method::Get, key, 3, 0, &[]),
        (0, [0x1003, 0, 0, 0, 0, 0, 0, 0]),
        "back with no aliases"
    );
}

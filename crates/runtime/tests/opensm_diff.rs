//! Differential test of the subnet administrator against the real OpenSM (the
//! same sequence of MCMemberRecord requests, valid and invalid, gives the same statuses and group
//! parameters from our SA and from OpenSM). OpenSM runs on ibsim (Debian packages opensm,
//! ibsim-utils); the test skips, saying so, only when those are not installed.

mod ibsim_harness;

use std::time::Duration;

use ibsim_harness::mcr::{self, Sa};
use ibsim_harness::ours::OurSa;
use ibsim_harness::records::{record_diff, record_outcome, RecordStep};
use ibsim_harness::sequence;
use ibsim_harness::{Fabric, Setup, NET_ONE_SWITCH};
use ipoib_runtime::ibsim::IbsimClient;
use ipoib_wire::{Gid, Mtu, PKey, QKey, Rate};

/// The requesters: two HCAs that do not run the SM (OpenSM is on Hca1).
const REQUESTERS: [&str; 2] = ["Hca2", "Hca3"];
/// Every HCA of [`NET_ONE_SWITCH`].
const HCAS: [&str; 3] = ["Hca1", "Hca2", "Hca3"];
/// How long OpenSM may take to answer one SA request (every request of these tests is answered;
/// long enough for a loaded machine, and only a failing test waits this long).
const SA_TIMEOUT: Duration = Duration::from_secs(30);

fn start() -> Option<Box<Fabric>> {
    match Fabric::start(NET_ONE_SWITCH, None, "Hca1", REQUESTERS[0]) {
        Ok(Setup::Ready(f)) => Some(f),
        Ok(Setup::Skip(why)) => {
            eprintln!("SKIP: OpenSM differential test: {why}");
            None
        }
        Err(e) => panic!("ibsim/OpenSM failed to start:\n{e}"),
    }
}

/// OpenSM's SA reached through one ibsim client per requester.
struct OpenSm {
    clients: Vec<IbsimClient>,
    gids: Vec<Gid>,
    unknown: Gid,
    sm_lid: u16,
}

impl OpenSm {
    fn new(f: &Fabric) -> OpenSm {
        let mut clients = Vec::new();
        let mut gids = Vec::new();
        let mut unknown = Gid::ZERO;
        for node in REQUESTERS {
            let facts = f
                .facts(node)
                .unwrap_or_else(|e| panic!("{node}: {e}\n{}", f.logs()));
            gids.push(Gid::new(facts.port.gid_prefix, facts.port_guid));
            unknown = Gid::new(facts.port.gid_prefix, facts.node.node_guid.0);
            clients.push(
                f.client(node)
                    .unwrap_or_else(|e| panic!("{node}: {e}\n{}", f.logs())),
            );
        }
        OpenSm {
            clients,
            gids,
            unknown,
            sm_lid: f.sm_lid,
        }
    }
}

impl Sa for OpenSm {
    fn port_gid(&self, who: usize) -> Gid {
        self.gids[who]
    }

    fn unknown_gid(&self) -> Gid {
        self.unknown
    }

    fn request(&mut self, who: usize, mad: &[u8; 256]) -> Result<Vec<u8>, String> {
        self.clients[who]
            .request(self.sm_lid, 1, mad, SA_TIMEOUT)
            .map_err(|e| e.to_string())
    }
}

/// The sequence against OpenSM alone: prints OpenSM's answers and checks the statuses
/// docs/DEPLOYED.md states (join needs MGID+PortGID+JoinState, create also Q_Key/TClass/P_Key/
/// FlowLabel/SL; only a full member creates; a join for another port is ERR_REQ_INVALID).
#[test]
fn opensm_answers_mcmember_sequence() {
    let Some(mut fabric) = start() else { return };
    let mut sa = OpenSm::new(&fabric);
    let steps = sequence::sequence();
    let outs = mcr::run(&mut sa, &steps).unwrap_or_else(|e| panic!("{e}\n{}", fabric.logs()));
    eprintln!("OpenSM answers:\n{}", mcr::table(&steps, &outs));
    fabric.check_alive().unwrap();
    let got: Vec<String> = outs.iter().map(|o| mcr::status_name(o.status)).collect();
    let mismatches: Vec<String> = steps
        .iter()
        .zip(got.iter().zip(OPENSM_STATUSES))
        .enumerate()
        .filter(|(_, (_, (g, e)))| g != e)
        .map(|(i, (s, (g, e)))| format!("step {i} ({}): OpenSM said {g}, expected {e}", s.name))
        .collect();
    assert_eq!(
        got.len(),
        OPENSM_STATUSES.len(),
        "sequence and expectations differ in length"
    );
    assert!(mismatches.is_empty(), "{mismatches:#?}");
    // Group parameters OpenSM gives the default partition's broadcast group (docs/DEPLOYED.md:
    // Q_Key 0x0b1b, MTU 2048, rate 10 Gb/s, SL 0, scope 2, P_Key 0xffff).
    let bc = outs[0].rec.expect("broadcast group record");
    assert_eq!(bc.mgid, sequence::broadcast());
    assert_eq!(
        (bc.qkey, bc.pkey, bc.sl, bc.scope),
        (QKey(0x0b1b), PKey(0xffff), 0, 2)
    );
    assert_eq!((u8::from(bc.mtu), u8::from(bc.rate)), (4, 3));
    assert!((0xc000..=0xfffe).contains(&bc.mlid));
    // A join answers with the requester's PortGID and its accumulated JoinState.
    let j = outs[1].rec.expect("join record");
    assert_eq!((j.port_gid, j.join_state.0), (sa.gids[0], 1));
    assert_eq!(outs[4].rec.expect("non-member join").join_state.0, 3);
    // The SA-assigned MGID has OpenSM's form ff12:a01b:<subnet prefix>::.
    let assigned = outs[32].rec.expect("assigned MGID").mgid;
    assert_eq!(&assigned.0[..4], &[0xff, 0x12, 0xa0, 0x1b]);
    // The counter (from 0) is written over bytes 10..14 in x86 (little-endian) order: the first
    // MGID is ff12:a01b:fe80::, the second ff12:a01b:fe80:0:0:100:0:0.
    assert_eq!(mcr::fmt_gid(&assigned), "ff12:a01b:fe80::");
    let second = outs[82].rec.expect("second assigned MGID").mgid;
    assert_eq!(mcr::fmt_gid(&second), "ff12:a01b:fe80::100:0:0");

    // Scope in responses is the group's: the partition's 2 for the broadcast group whatever the
    // request says, the creator's Scope field (0 when absent) for created groups.
    let scope = |i: usize| outs[i].rec.map(|r| r.scope);
    assert_eq!([scope(1), scope(70), scope(71)], [Some(2); 3]);
    assert_eq!(
        [scope(20), scope(72), scope(74), scope(75)],
        [Some(0), Some(8), Some(8), Some(8)]
    );
    // A leave that takes a group's last full member away removes the port: JoinState 0, not the
    // SendOnlyNonMember bit it kept.
    assert_eq!(outs[41].rec.map(|r| r.join_state.0), Some(0));
    // SendOnlyFullMember creates a group, which goes when that member leaves.
    assert_eq!(outs[77].rec.map(|r| r.join_state.0), Some(8));

    // The comparison the differential test uses: a run agrees with itself, MLIDs renumbered
    // consistently still agree, and a changed status or field is reported.
    assert_eq!(mcr::compare(&steps, &outs, &outs), Vec::<String>::new());
    let mut renumbered = outs.clone();
    for o in &mut renumbered {
        if let Some(r) = &mut o.rec {
            if r.mlid >= 0xc000 {
                r.mlid += 0x100;
            }
        }
    }
    assert_eq!(
        mcr::compare(&steps, &outs, &renumbered),
        Vec::<String>::new()
    );
    let mut changed = outs.clone();
    changed[5].status = ipoib_wire::mad::MadStatus(0);
    if let Some(r) = &mut changed[20].rec {
        r.qkey = QKey(r.qkey.0 ^ 1);
    }
    if let Some(r) = &mut changed[1].rec {
        r.mlid = 0xc0ff;
    }
    let diffs = mcr::compare(&steps, &outs, &changed);
    // The MLID change shows at step 1 and again at step 2, where the group has its old MLID back.
    let at: Vec<&str> = diffs
        .iter()
        .map(|d| d.split(' ').nth(1).unwrap_or(""))
        .collect();
    assert_eq!(at, ["1", "2", "5", "20"], "{diffs:#?}");
}

/// OpenSM 3.3.23's status for each step of [`mcr::sequence`] (observed on Debian 12 and
/// explained by its log lines in the report of this test's commit).
const OPENSM_STATUSES: [&str; 90] = [
    // 0
    "SUCCESS",
    "SUCCESS",
    "SUCCESS",
    "SUCCESS",
    "SUCCESS",
    "ReqInvalid",
    "ReqInsufficientComponents",
    "ReqInvalid",
    "SUCCESS",
    "SUCCESS",
    // 10
    "ReqInvalid",
    "SUCCESS",
    "ReqInvalid",
    "SUCCESS",
    "ReqInvalid",
    "ReqInvalid",
    "SUCCESS",
    "SUCCESS",
    "ReqInvalid",
    "ReqInvalid",
    // 20
    "SUCCESS",
    "ReqInsufficientComponents",
    "ReqInsufficientComponents",
    "ReqInsufficientComponents",
    "SUCCESS",
    "ReqInvalid",
    "ReqInvalid",
    "ReqInvalid",
    "ReqInvalid",
    "ReqInvalid",
    // 30
    "SUCCESS",
    "SUCCESS",
    "SUCCESS",
    "ReqInvalid",
    "SUCCESS",
    "SUCCESS",
    "NoRecords",
    "SUCCESS",
    "SUCCESS",
    "ReqInvalid",
    // 40
    "ReqInvalid",
    "SUCCESS",
    "NoRecords",
    "ReqInvalid",
    "NoRecords",
    "SUCCESS",
    "NoRecords",
    "ReqInvalid",
    "SUCCESS",
    "SUCCESS",
    // 50
    "SUCCESS",
    "SUCCESS",
    "SUCCESS",
    "ReqInvalid",
    "ReqInvalid",
    "ReqInvalid",
    "ReqInvalid",
    "ReqInvalid",
    "ReqInvalid",
    "ReqInvalid",
    // 60
    "ReqInvalid",
    "ReqInvalid",
    "ReqInvalid",
    "ReqInsufficientComponents",
    "ReqInsufficientComponents",
    "SUCCESS",
    "SUCCESS",
    "ReqInvalid",
    "SUCCESS",
    "SUCCESS",
    // 70
    "SUCCESS",
    "SUCCESS",
    "SUCCESS",
    "SUCCESS",
    "SUCCESS",
    "SUCCESS",
    "SUCCESS",
    "SUCCESS",
    "SUCCESS",
    "SUCCESS",
    // 80
    "SUCCESS",
    "NoRecords",
    "SUCCESS",
    "SUCCESS",
    "ReqInvalid",
    "SUCCESS",
    "SUCCESS",
    "ReqInvalid",
    "SUCCESS",
    // 89
    "SUCCESS",
];

/// The ibsim client against a live ibsim: NodeInfo/PortInfo as docs/IBSIM.md describes them, the
/// 10-client limit (OpenSM holds one slot), Drop freeing a slot, and ibsim's TransactionID
/// rewrite (top 16 bits = client id) on the way to OpenSM and back.
#[test]
fn ibsim_client_facts_and_slots() {
    let Some(fabric) = start() else { return };
    let f = fabric.facts("Hca2").unwrap();
    assert_eq!(u8::from(f.node.node_type), 1);
    assert_eq!(
        f.node.port_guid, f.node.node_guid,
        "ibsim's NodeInfo.PortGUID is the node GUID"
    );
    assert_ne!(f.port.lid, 0);
    assert!(f.port.is_up());
    assert_eq!(f.port.master_sm_lid, fabric.sm_lid);
    assert_eq!(f.port.gid_prefix, Gid::DEFAULT_SUBNET_PREFIX);

    let mut held = Vec::new();
    let refused = loop {
        match fabric.client("Hca3") {
            Ok(c) => held.push(c),
            Err(e) => break e,
        }
        assert!(held.len() <= 10, "ibsim took more than 10 clients");
    };
    assert_eq!(refused.kind(), std::io::ErrorKind::ConnectionRefused);
    assert_eq!(held.len(), 9, "OpenSM holds one of ibsim's 10 slots");
    let freed = held.pop().unwrap().client_id();
    let again = fabric
        .client("Hca3")
        .expect("a dropped client frees its slot");
    assert_eq!(again.client_id(), freed);
    drop(held);

    let get = ipoib_wire::sa::SaMadRepr::class_port_info_get(0x0000_1234_5678_9abc).to_bytes();
    let resp = again.request(fabric.sm_lid, 1, &get, SA_TIMEOUT).unwrap();
    assert_eq!(resp[3], 0x81, "GetResp");
    assert_eq!(&resp[10..16], &get[10..16]);
    assert_eq!(
        u16::from_be_bytes([resp[8], resp[9]]) as u32,
        again.client_id()
    );
}

/// ClassPortInfo (IBA 1 §13.4.8.1) from OpenSM and from our SA: the capability bits requesters
/// act on (Linux `ib_sa_sendonly_fullmem_support` reads CapabilityMask2 bit 12) and RespTimeValue.
#[test]
fn our_class_port_info_matches_opensm() {
    let Some(fabric) = start() else { return };
    let mut opensm = OpenSm::new(&fabric);
    let mut ours = OurSa::new(&fabric, &HCAS, &REQUESTERS, 1)
        .unwrap_or_else(|e| panic!("model of the fabric: {e}\n{}", fabric.logs()));
    let get = ipoib_wire::sa::SaMadRepr::class_port_info_get(0x4242).to_bytes();
    let cpi = |sa: &mut dyn Sa| {
        let resp = sa.request(0, &get).expect("ClassPortInfo response");
        match ipoib_wire::sa::SaMadRepr::parse(&resp) {
            Ok(ipoib_wire::sa::SaMadRepr {
                attribute: ipoib_wire::sa::SaAttribute::ClassPortInfo(c),
                ..
            }) => c,
            other => panic!("{other:?}"),
        }
    };
    let (a, b) = (cpi(&mut opensm), cpi(&mut ours));
    eprintln!("OpenSM: {a:?}\nours:   {b:?}");
    // We claim no capability OpenSM does not, and agree on the bits for what our SA implements
    // (CapabilityMask: 0 IsTrapSupported, 1 IsNoticeSupported, 9 IsUDMulticastSupported,
    // 10 IsMultiPathSupported, 13 IsPortInfoCapMaskMatchSupported; CapabilityMask2: 12
    // IsSendOnlyFullMemberSupported). OpenSM's other bits name what our SA does not serve
    // (docs/OPENSM-NOTES.md).
    const MASK: u16 = (1 << 0) | (1 << 1) | (1 << 9) | (1 << 10) | (1 << 13);
    const MASK2: u32 = 1 << 12;
    assert_eq!(b.capability_mask & !a.capability_mask, 0);
    assert_eq!(b.capability_mask2 & !a.capability_mask2, 0);
    assert_eq!(a.capability_mask & MASK, b.capability_mask & MASK);
    assert_eq!(a.capability_mask2 & MASK2, b.capability_mask2 & MASK2);
    let rest = |c: &ipoib_wire::mad::ClassPortInfoRepr| ipoib_wire::mad::ClassPortInfoRepr {
        capability_mask: 0,
        capability_mask2: 0,
        ..*c
    };
    assert_eq!(rest(&a), rest(&b));
}

/// Our SA against OpenSM, request for request: statuses, methods and every record field
/// ([`mcr::compare`]). Our SA serves a model of the same fabric read back from it
/// ([`ours::OurSa`]: OpenSM's LIDs and LFT, ibsim's GUIDs, MTUs and rates).
#[test]
fn our_sa_matches_opensm() {
    let Some(fabric) = start() else { return };
    let mut opensm = OpenSm::new(&fabric);
    let steps = sequence::sequence();
    let theirs = mcr::run(&mut opensm, &steps).unwrap_or_else(|e| panic!("{e}\n{}", fabric.logs()));
    let mut ours = OurSa::new(&fabric, &HCAS, &REQUESTERS, 1)
        .unwrap_or_else(|e| panic!("model of the fabric: {e}\n{}", fabric.logs()));
    // The model is the fabric OpenSM configured: the requesters' GIDs agree, the SM's LID is the
    // SA's, and the LFT routes every HCA's LID to it.
    for who in 0..REQUESTERS.len() {
        assert_eq!(ours.port_gid(who), opensm.port_gid(who));
    }
    assert_eq!(ours.unknown_gid(), opensm.unknown_gid());
    let model = ours.model();
    assert_eq!(model.sm_lid, fabric.sm_lid);
    for p in &model.ports {
        assert_eq!(
            (p.mtu, p.rate),
            (Mtu::Mtu2048, Rate::Gbps10),
            "{}: ibsim's ports are 2048, 4x SDR",
            p.name
        );
        for q in &model.ports {
            assert!(
                model.path(p.lid, q.lid).is_some(),
                "{} -> {}",
                p.name,
                q.name
            );
        }
    }
    let mine = mcr::run(&mut ours, &steps).unwrap_or_else(|e| panic!("{e}"));
    // `compare` checks only the form of SA-assigned MGIDs; both SAs start their counter at 0 here,
    // so they must be equal byte for byte.
    for (i, s) in steps.iter().enumerate() {
        if matches!(s.mgid, mcr::MgidRef::Fixed(g) if g == Gid::ZERO) {
            let m = |o: &[mcr::Outcome]| o[i].rec.map(|r| mcr::fmt_gid(&r.mgid));
            assert_eq!(m(&theirs), m(&mine), "step {i} ({}): assigned MGID", s.name);
        }
    }
    let diffs = mcr::compare(&steps, &theirs, &mine);
    assert!(
        diffs.is_empty(),
        "{} differences:\n{}\nOpenSM:\n{}\nours:\n{}",
        diffs.len(),
        diffs.join("\n"),
        mcr::table(&steps, &theirs),
        mcr::table(&steps, &mine)
    );
}

/// NodeRecord, PortInfoRecord, LinkRecord and P_KeyTableRecord requests (IBA 1 §15.2.5.2, .3,
/// .13, .11) from OpenSM and from our SA serving the model of the same fabric: the same status,
/// method, records and record count. The model is read back from the fabric ([`ours::OurSa`]:
/// NodeInfo as ibsim reports it, NodeDescription the ibsim node name). PortInfo is compared on
/// the fields the SM's configuration decides (LID, LMC, MasterSMLID, GidPrefix, PortState,
/// LocalPortNum, NeighborMTU, LinkWidthActive, LinkSpeedActive): the rest (CapabilityMask bits,
/// VLCap, VL arbitration, thresholds, error counters) is the hardware's, ibsim's for OpenSM and
/// our HCAs' for us (docs/OPENSM-NOTES.md "Subnet records").
#[test]
fn our_subnet_records_match_opensm() {
    use ipoib_wire::mad::Method;
    use ipoib_wire::sa::{
        lr_mask, nr_mask, pir_mask, pkr_mask, LinkRecordRepr, NodeRecordRepr, PKeyTableRecordRepr,
        PortInfoRecordRepr, SaAttribute, SaMadRepr,
    };
    use ipoib_wire::smp::PortInfoRepr;
    let Some(fabric) = start() else { return };
    let mut opensm = OpenSm::new(&fabric);
    let mut ours = OurSa::new(&fabric, &HCAS, &REQUESTERS, 1)
        .unwrap_or_else(|e| panic!("model of the fabric: {e}\n{}", fabric.logs()));
    let model = ours.model().clone();
    let sw = &model.switches[0];
    let empty_node = NodeRecordRepr::parse(&[0u8; 108]).unwrap();
    let node = |lid: u16| NodeRecordRepr { lid, ..empty_node };
    let pir = |lid: u16, port_num: u8| PortInfoRecordRepr {
        lid,
        port_num,
        options: 0,
        port_info: PortInfoRepr::default(),
    };
    let step = |name: String, method, mask, attribute| RecordStep {
        name,
        method,
        mask,
        modifier: 0,
        sm_key: 0,
        attribute,
    };
    let mut steps = vec![step(
        "NodeRecord GetTable all".into(),
        Method::GetTable,
        0,
        SaAttribute::NodeRecord(empty_node),
    )];
    for p in &model.ports {
        steps.push(step(
            format!("NodeRecord Get LID {} ({})", p.lid, p.name),
            Method::Get,
            nr_mask::LID,
            SaAttribute::NodeRecord(node(p.lid)),
        ));
        let mut by_guid = empty_node;
        by_guid.node_info.port_guid = p.port_guid;
        steps.push(step(
            format!("NodeRecord Get PortGUID of {}", p.name),
            Method::Get,
            nr_mask::PORT_GUID,
            SaAttribute::NodeRecord(by_guid),
        ));
        steps.push(step(
            format!("PortInfoRecord Get LID {} ({})", p.lid, p.name),
            Method::Get,
            pir_mask::LID,
            SaAttribute::PortInfoRecord(pir(p.lid, 0)),
        ));
    }
    steps.push(step(
        format!("NodeRecord Get LID {} (switch)", sw.lid),
        Method::Get,
        nr_mask::LID,
        SaAttribute::NodeRecord(node(sw.lid)),
    ));
    let mut by_type = empty_node;
    by_type.node_info.node_type = ipoib_wire::smp::NodeType::Switch;
    steps.push(step(
        "NodeRecord Get NodeType switch".into(),
        Method::Get,
        nr_mask::NODE_TYPE,
        SaAttribute::NodeRecord(by_type),
    ));
    let mut by_desc = empty_node;
    by_desc.node_description = ipoib_wire::sa::node_description("Hca3");
    steps.push(step(
        "NodeRecord Get NodeDescription Hca3".into(),
        Method::Get,
        nr_mask::NODE_DESCRIPTION,
        SaAttribute::NodeRecord(by_desc),
    ));
    steps.push(step(
        "NodeRecord Get LID 999 (none)".into(),
        Method::Get,
        nr_mask::LID,
        SaAttribute::NodeRecord(node(999)),
    ));
    steps.push(step(
        "NodeRecord Get all (too many)".into(),
        Method::Get,
        0,
        SaAttribute::NodeRecord(empty_node),
    ));
    steps.push(step(
        "NodeRecord Set (dropped)".into(),
        Method::Set,
        0,
        SaAttribute::NodeRecord(empty_node),
    ));
    steps.push(step(
        "PortInfoRecord Delete (dropped)".into(),
        Method::Delete,
        0,
        SaAttribute::PortInfoRecord(pir(0, 0)),
    ));
    for port in [0u8, 1, 3] {
        steps.push(step(
            format!("PortInfoRecord Get switch port {port}"),
            Method::Get,
            pir_mask::LID | pir_mask::PORT_NUM,
            SaAttribute::PortInfoRecord(pir(sw.lid, port)),
        ));
    }
    // Component-mask bits placed as OpenSM places them: LMC is bit 20, NeighborMTU bit 23 (a
    // wrong bit would select on another field and find the port).
    let hca = model.ports[1].lid;
    let mut lmc1 = pir(hca, 0);
    lmc1.port_info.lmc = 1;
    steps.push(step(
        format!("PortInfoRecord Get LID {hca} LMC 1 (none)"),
        Method::Get,
        pir_mask::LID | pir_mask::LMC,
        SaAttribute::PortInfoRecord(lmc1),
    ));
    let mut mtu256 = pir(hca, 0);
    mtu256.port_info.neighbor_mtu = ipoib_wire::Mtu::Mtu256;
    steps.push(step(
        format!("PortInfoRecord Get LID {hca} NeighborMTU 256 (none)"),
        Method::Get,
        pir_mask::LID | pir_mask::NEIGHBOR_MTU,
        SaAttribute::PortInfoRecord(mtu256),
    ));
    let mut mtu2048 = pir(hca, 0);
    mtu2048.port_info.neighbor_mtu = ipoib_wire::Mtu::Mtu2048;
    steps.push(step(
        format!("PortInfoRecord Get LID {hca} NeighborMTU 2048"),
        Method::Get,
        pir_mask::LID | pir_mask::NEIGHBOR_MTU,
        SaAttribute::PortInfoRecord(mtu2048),
    ));
    steps.push(step(
        "PortInfoRecord Get LID 999 (none)".into(),
        Method::Get,
        pir_mask::LID,
        SaAttribute::PortInfoRecord(pir(999, 0)),
    ));
    let mut is_sm = pir(0, 0);
    is_sm.port_info.capability_mask = ipoib_proto::subnet::CAP_IS_SM;
    steps.push(RecordStep {
        modifier: ipoib_wire::sa::PIR_ENHANCED_COMP_MASK,
        ..step(
            "PortInfoRecord GetTable IsSM (saquery -s)".into(),
            Method::GetTable,
            pir_mask::CAPABILITY_MASK,
            SaAttribute::PortInfoRecord(is_sm),
        )
    });
    steps.push(step(
        "LinkRecord GetTable all".into(),
        Method::GetTable,
        0,
        SaAttribute::LinkRecord(LinkRecordRepr::default()),
    ));
    for p in &model.ports {
        let from = LinkRecordRepr {
            from_lid: p.lid,
            ..LinkRecordRepr::default()
        };
        steps.push(step(
            format!("LinkRecord Get FromLID {}", p.lid),
            Method::Get,
            lr_mask::FROM_LID,
            SaAttribute::LinkRecord(from),
        ));
    }
    let lftr = |lid: u16, block: u16| ipoib_wire::sa::LftRecordRepr {
        lid,
        block,
        ports: [0; 64],
    };
    steps.push(step(
        "LinearForwardingTableRecord GetTable all".into(),
        Method::GetTable,
        0,
        SaAttribute::LftRecord(lftr(0, 0)),
    ));
    steps.push(step(
        format!("LinearForwardingTableRecord Get LID {} block 0", sw.lid),
        Method::Get,
        ipoib_wire::sa::lftr_mask::LID | ipoib_wire::sa::lftr_mask::BLOCK,
        SaAttribute::LftRecord(lftr(sw.lid, 0)),
    ));
    steps.push(step(
        "LinearForwardingTableRecord Get block 1 (none)".into(),
        Method::Get,
        ipoib_wire::sa::lftr_mask::BLOCK,
        SaAttribute::LftRecord(lftr(0, 1)),
    ));
    let gir = |lid: u16, block: u8, guid0: u64| {
        let mut guids = [ipoib_wire::Guid(0); 8];
        guids[0] = ipoib_wire::Guid(guid0);
        SaAttribute::GuidInfoRecord(ipoib_wire::sa::GuidInfoRecordRepr { lid, block, guids })
    };
    use ipoib_wire::sa::gir_mask;
    steps.push(step(
        "GUIDInfoRecord GetTable all".into(),
        Method::GetTable,
        0,
        gir(0, 0, 0),
    ));
    for p in &model.ports {
        steps.push(step(
            format!("GUIDInfoRecord Get LID {}", p.lid),
            Method::Get,
            gir_mask::LID,
            gir(p.lid, 0, 0),
        ));
    }
    steps.push(step(
        format!("GUIDInfoRecord Get LID {} (switch)", sw.lid),
        Method::Get,
        gir_mask::LID,
        gir(sw.lid, 0, 0),
    ));
    for block in [0u8, 1, 2, 31] {
        steps.push(step(
            format!(
                "GUIDInfoRecord Get LID {} block {block}",
                model.ports[1].lid
            ),
            Method::Get,
            gir_mask::LID | gir_mask::BLOCK,
            gir(model.ports[1].lid, block, 0),
        ));
    }
    steps.push(step(
        "GUIDInfoRecord Get GUID0 of another port".into(),
        Method::Get,
        gir_mask::LID | gir_mask::GUID0,
        gir(model.ports[1].lid, 0, model.ports[2].port_guid.0),
    ));
    let pkr = |lid: u16| PKeyTableRecordRepr {
        lid,
        block: 0,
        port_num: 0,
        pkeys: [ipoib_wire::PKey(0); 32],
    };
    steps.push(step(
        "P_KeyTableRecord untrusted".into(),
        Method::GetTable,
        pkr_mask::LID,
        SaAttribute::PKeyTableRecord(pkr(model.ports[1].lid)),
    ));
    steps.push(RecordStep {
        sm_key: 1,
        ..step(
            format!(
                "P_KeyTableRecord trusted GetTable LID {}",
                model.ports[1].lid
            ),
            Method::GetTable,
            pkr_mask::LID,
            SaAttribute::PKeyTableRecord(pkr(model.ports[1].lid)),
        )
    });
    for p in &model.ports {
        steps.push(RecordStep {
            sm_key: 1,
            ..step(
                format!("P_KeyTableRecord trusted Get LID {} block 0", p.lid),
                Method::Get,
                pkr_mask::LID | pkr_mask::BLOCK,
                SaAttribute::PKeyTableRecord(pkr(p.lid)),
            )
        });
    }

    let mut diffs = Vec::new();
    let mut table = String::new();
    for (i, s) in steps.iter().enumerate() {
        let mut m = SaMadRepr::request(s.method, 0x5a00 + i as u64, s.mask, s.attribute);
        m.header.attribute_modifier = s.modifier;
        m.sa.sm_key = s.sm_key;
        let mad = m.to_bytes();
        let theirs = opensm.request(0, &mad).map(|r| record_outcome(&r));
        let mine = ours.request(0, &mad).map(|r| record_outcome(&r));
        let line = match (&theirs, &mine) {
            // Neither answers: both drop the request.
            (Err(_), Err(_)) => "  both: no answer".to_string(),
            (Ok(t), Ok(o)) => match record_diff(t, o) {
                None => format!("  both: {} ({} records)", o.head, o.records.len()),
                Some(d) => {
                    diffs.push(format!("step {i} ({}):\n{d}", s.name));
                    d
                }
            },
            _ => {
                let d = format!(
                    "  OpenSM: {}\n  ours:   {}",
                    theirs
                        .as_ref()
                        .map_or_else(|e| e.clone(), |o| o.head.clone()),
                    mine.as_ref().map_or_else(|e| e.clone(), |o| o.head.clone())
                );
                diffs.push(format!("step {i} ({}):\n{d}", s.name));
                d
            }
        };
        table += &format!("{i:2} {}\n{line}\n", s.name);
    }
    eprintln!("{table}");
    assert!(
        diffs.is_empty(),
        "{} differences:\n{}",
        diffs.len(),
        diffs.join("\n")
    );
}

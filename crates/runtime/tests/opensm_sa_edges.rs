//! Requests the SA does not serve, measured against the real OpenSM 3.3.23 on ibsim and asked of
//! our SA serving the model of the same fabric (the same answer, or none from either): a method
//! the SA does not take (Send, GetTraceTable), an attribute it does not serve (TraceRecord,
//! Notice, an ID no class defines), and GetMulti, Set, Delete and GetTable of every attribute it
//! serves. OpenSM drops the first two kinds (osm_sa_mad_ctrl.c "ERR 1A05: Unsupported method",
//! "ERR 1A01: Unsupported attribute") and a Set or Delete with no handler ("ERR 1A02"); its
//! handlers refuse GetMulti (docs/OPENSM-LIMITS.md). Also MultiPathRecord (GetMulti over RMPP)
//! and GUIDInfoRecord Set and Delete (alias GUIDs), which both SAs serve. The test skips, saying
//! so, only when ibsim or OpenSM is not installed.

mod ibsim_harness;

use std::time::{Duration, Instant};

use ibsim_harness::mcr::Sa;
use ibsim_harness::ours::OurSa;
use ibsim_harness::records::{record_diff, record_outcome};
use ibsim_harness::{Fabric, Setup, NET_ONE_SWITCH};
use ipoib_runtime::ibsim::IbsimClient;
use ipoib_wire::mad::Method;
use ipoib_wire::sa::{gir_mask, GuidInfoRecordRepr, SaAttribute, SaMadRepr};
use ipoib_wire::Guid;

/// How long OpenSM may take to answer the ClassPortInfo Get sent after the requests (it comes
/// far sooner; only a failing test waits this long).
const SA_TIMEOUT: Duration = Duration::from_secs(30);
/// How long answers are still collected after that Get's answer. What OpenSM drops it drops in
/// its receiving thread, which takes one client's MADs in order (osm_sa_mad_ctrl.c), so before
/// the later Get is answered; but its handlers run on dispatcher threads (Set and Delete on a
/// dispatcher of their own), so their answers may come after that Get's.
const GRACE: Duration = Duration::from_secs(2);

/// Sends every MAD of `mads` (distinct TIDs), then a ClassPortInfo Get, and returns the answers
/// to each (by index) that came until [`GRACE`] after the Get's answer.
fn opensm_answers(
    c: &IbsimClient,
    sm_lid: u16,
    mads: &[[u8; 256]],
) -> Result<Vec<Vec<Vec<u8>>>, String> {
    let probe = SaMadRepr::class_port_info_get(0x00c0_ffee).to_bytes();
    for m in mads.iter().chain([&probe]) {
        c.send_mad(sm_lid, 1, m).map_err(|e| e.to_string())?;
    }
    let mut got = vec![Vec::new(); mads.len()];
    let mut deadline = Instant::now() + SA_TIMEOUT;
    let mut probed = false;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let Some((_, _, m)) = c.recv_mad(left).map_err(|e| e.to_string())? else {
            if probed {
                return Ok(got);
            }
            return Err("OpenSM did not answer the ClassPortInfo Get".into());
        };
        // ibsim rewrites the top 16 bits of a request's TID (docs/IBSIM.md): match the low 48.
        if m[10..16] == probe[10..16] && !probed {
            probed = true;
            deadline = Instant::now() + GRACE;
        }
        if let Some(i) = mads.iter().position(|q| q[10..16] == m[10..16]) {
            got[i].push(m);
        }
    }
}

#[test]
fn unsupported_methods_and_attributes_answered_like_opensm() {
    let fabric = match Fabric::start(NET_ONE_SWITCH, None, "Hca1", "Hca2") {
        Ok(Setup::Ready(f)) => f,
        Ok(Setup::Skip(why)) => {
            eprintln!("SKIP: OpenSM differential test: {why}");
            return;
        }
        Err(e) => panic!("ibsim/OpenSM failed to start:\n{e}"),
    };
    let client = fabric
        .client("Hca2")
        .unwrap_or_else(|e| panic!("Hca2: {e}\n{}", fabric.logs()));
    let mut ours = OurSa::new(&fabric, &["Hca1", "Hca2", "Hca3"], &["Hca2"], 1)
        .unwrap_or_else(|e| panic!("model of the fabric: {e}\n{}", fabric.logs()));
    let cpi = |tid: u64| SaMadRepr::class_port_info_get(tid);
    let cases: Vec<(&str, SaMadRepr)> = vec![
        ("Send(ClassPortInfo)", {
            let mut m = cpi(0x6e01);
            m.header.method = Method::Send;
            m
        }),
        ("GetTraceTable(ClassPortInfo)", {
            let mut m = cpi(0x6e02);
            m.header.method = Method::GetTraceTable;
            m
        }),
        ("GetMulti(ClassPortInfo)", {
            let mut m = cpi(0x6e03);
            m.header.method = Method::GetMulti;
            m
        }),
        ("Get(TraceRecord 0x0039)", {
            let mut m = cpi(0x6e04);
            m.header.attribute_id = 0x0039;
            m
        }),
        ("Get(Notice 0x0002)", {
            let mut m = cpi(0x6e05);
            m.header.attribute_id = 0x0002;
            m
        }),
        ("GetTable(0x00ff)", {
            let mut m = cpi(0x6e06);
            m.header.method = Method::GetTable;
            m.header.attribute_id = 0x00ff;
            m
        }),
    ];
    let mut cases = cases;
    for (i, (name, id)) in [
        ("ClassPortInfo", 0x0001u16),
        ("NodeRecord", 0x0011),
        ("PortInfoRecord", 0x0012),
        ("SL2VLRecord", 0x0013),
        ("SwitchInfoRecord", 0x0014),
        ("LFTRecord", 0x0015),
        ("MFTRecord", 0x0017),
        ("SMInfoRecord", 0x0018),
        ("LinkRecord", 0x0020),
        ("GUIDInfoRecord", 0x0030),
        ("ServiceRecord", 0x0031),
        ("PKeyTableRecord", 0x0033),
        ("PathRecord", 0x0035),
        ("VLArbRecord", 0x0036),
        ("MCMemberRecord", 0x0038),
        ("InformInfoRecord", 0x00f3),
        ("InformInfo", 0x0003),
    ]
    .into_iter()
    .enumerate()
    {
        for (j, method) in [
            Method::GetMulti,
            Method::Set,
            Method::Delete,
            Method::GetTable,
        ]
        .into_iter()
        .enumerate()
        {
            let mut m = cpi(0x6f00 + (i * 4 + j) as u64);
            m.header.method = method;
            m.header.attribute_id = id;
            cases.push((Box::leak(format!("{method:?}({name})").into_boxed_str()), m));
        }
    }
    let mut table = String::new();
    let mut diffs = Vec::new();
    let mut cases: Vec<(&str, [u8; 256])> = cases.iter().map(|(n, m)| (*n, m.to_bytes())).collect();
    cases.extend(multipath_cases(&fabric));
    let mads: Vec<[u8; 256]> = cases.iter().map(|(_, m)| *m).collect();
    let answers = opensm_answers(&client, fabric.sm_lid, &mads)
        .unwrap_or_else(|e| panic!("{e}\n{}", fabric.logs()));
    for (((name, _), mad), theirs) in cases.iter().zip(&mads).zip(answers) {
        let mine = ours.request(0, mad);
        let show = |answers: &[Vec<u8>]| match answers.first() {
            None => "no answer".to_string(),
            Some(a) => format!(
                "method {:#04x} status {:#06x}",
                a[3],
                u16::from_be_bytes([a[4], a[5]])
            ),
        };
        let (t, o) = (
            show(&theirs),
            mine.as_ref()
                .map_or("no answer".to_string(), |a| show(std::slice::from_ref(a))),
        );
        table += &format!("{name}: OpenSM {t}, ours {o}\n");
        if t != o {
            diffs.push(name.to_string());
        }
        // A GetMultiResp's PathRecords (MultiPathRecord, o15-0.2.7): AttributeID, AttributeOffset
        // and the first record, byte for byte.
        if let (Some(a), Ok(b)) = (theirs.first(), &mine) {
            if a[3] == 0x94 && a[4..6] == [0, 0] {
                let part = |m: &[u8]| (m[16..18].to_vec(), m[44..46].to_vec(), m[56..120].to_vec());
                if part(a) != part(b) {
                    table += &format!("  OpenSM {:02x?}\n  ours   {:02x?}\n", part(a), part(b));
                    diffs.push(format!("{name} record"));
                }
            }
        }
    }
    eprintln!("{table}");
    let log = std::fs::read_to_string(fabric.dir().join("opensm.log")).unwrap_or_default();
    eprintln!(
        "opensm.log: {} x ERR 1A05, {} x ERR 1A01",
        log.matches("ERR 1A05").count(),
        log.matches("ERR 1A01").count()
    );
    assert!(diffs.is_empty(), "{diffs:?}:\n{table}");
}

/// MultiPathRecord requests (IBA 1 §15.2.5.20; OpenSM `osm_sa_multipath_record.c`
/// `osm_mpr_rcv_process`): without the RMPP Active flag, with it but not GetMulti, and GetMulti
/// with and without SGIDCount and DGIDCount, known and unknown GIDs. The record is built by hand:
/// SGIDCount at byte 15, DGIDCount 16, the GIDs from byte 24; component mask bits 19 and 20
/// (`ib_types.h` `IB_MPR_COMPMASK_SGIDCOUNT`, `_DGIDCOUNT`).
fn multipath_cases(fabric: &Fabric) -> Vec<(&'static str, [u8; 256])> {
    use ipoib_wire::mad::attr::sa as attr;
    use ipoib_wire::Gid;
    let gid = |node: &str| {
        let f = fabric
            .facts(node)
            .unwrap_or_else(|e| panic!("{node}: {e}\n{}", fabric.logs()));
        Gid::new(f.port.gid_prefix, f.port_guid)
    };
    let (src, dst) = (gid("Hca2"), gid("Hca1"));
    let unknown = Gid::new(0xfe80_0000_0000_0000, 0x0bad_0000_0000_0001);
    const COUNTS: u64 = (1 << 19) | (1 << 20);
    let mpr = |tid: u64, method: Method, rmpp: bool, mask: u64, sgids: &[Gid], dgids: &[Gid]| {
        let mut m = SaMadRepr::class_port_info_get(tid);
        m.header.method = method;
        m.header.attribute_id = attr::MULTI_PATH_RECORD;
        let mut b = m.to_bytes();
        if rmpp {
            // RMPPVersion 1, DATA, Active|First|Last, segment 1, PayloadLength the SA header
            // and the record (IBA 1 §13.6.2.1).
            b[24] = 1;
            b[25] = 1;
            b[26] = 0x07;
            b[28..32].copy_from_slice(&1u32.to_be_bytes());
            let len = 20 + 24 + 16 * (sgids.len() + dgids.len()) as u32;
            b[32..36].copy_from_slice(&len.to_be_bytes());
        }
        // The SA header's ComponentMask (IBA 1 §15.2.1.1: SM_Key 36..44, then
        // AttributeOffset, reserved, ComponentMask 48..56).
        b[48..56].copy_from_slice(&mask.to_be_bytes());
        b[56 + 15] = sgids.len() as u8;
        b[56 + 16] = dgids.len() as u8;
        for (i, g) in sgids.iter().chain(dgids).enumerate() {
            b[56 + 24 + 16 * i..56 + 40 + 16 * i].copy_from_slice(&g.0);
        }
        b
    };
    let (s, d) = (&[src][..], &[dst][..]);
    vec![
        (
            "Get(MultiPathRecord)",
            mpr(0x7a01, Method::Get, false, COUNTS, s, d),
        ),
        (
            "GetTable(MultiPathRecord)",
            mpr(0x7a02, Method::GetTable, false, COUNTS, s, d),
        ),
        (
            "GetMulti(MultiPathRecord) no RMPP",
            mpr(0x7a03, Method::GetMulti, false, COUNTS, s, d),
        ),
        (
            "Set(MultiPathRecord) RMPP",
            mpr(0x7a04, Method::Set, true, COUNTS, s, d),
        ),
        (
            "Delete(MultiPathRecord) RMPP",
            mpr(0x7a05, Method::Delete, true, COUNTS, s, d),
        ),
        (
            "Get(MultiPathRecord) RMPP",
            mpr(0x7a06, Method::Get, true, COUNTS, s, d),
        ),
        (
            "GetTable(MultiPathRecord) RMPP",
            mpr(0x7a07, Method::GetTable, true, COUNTS, s, d),
        ),
        (
            "GetMulti(MultiPathRecord) RMPP no counts",
            mpr(0x7a08, Method::GetMulti, true, 0, s, d),
        ),
        (
            "GetMulti(MultiPathRecord) RMPP SGIDCount only",
            mpr(0x7a09, Method::GetMulti, true, 1 << 19, s, d),
        ),
        (
            "GetMulti(MultiPathRecord) RMPP no DGID",
            mpr(0x7a0a, Method::GetMulti, true, COUNTS, s, &[]),
        ),
        (
            "GetMulti(MultiPathRecord) RMPP unknown SGID",
            mpr(0x7a0b, Method::GetMulti, true, COUNTS, &[unknown], d),
        ),
        (
            "GetMulti(MultiPathRecord) RMPP unknown DGID",
            mpr(0x7a0c, Method::GetMulti, true, COUNTS, s, &[unknown]),
        ),
        (
            "GetMulti(MultiPathRecord) RMPP half ServiceID",
            mpr(0x7a0d, Method::GetMulti, true, COUNTS | (1 << 16), s, d),
        ),
        (
            "GetMulti(MultiPathRecord) RMPP SGID DGID",
            mpr(0x7a0e, Method::GetMulti, true, COUNTS, s, d),
        ),
    ]
}

/// One GUIDInfoRecord request of [`alias_guids_answered_like_opensm`].
struct GirStep {
    name: &'static str,
    method: Method,
    mask: u64,
    rec: GuidInfoRecordRepr,
}

// GUIDInfoRecord Set and Delete (alias GUIDs, IBA 1 §15.2.5.18) against OpenSM 3.3.23
// (`osm_sa_guidinfo_record.c` `osm_gir_rcv_process`, `set_guidinfo`, `del_guidinfo`), one request
// at a time in order (each may change what the next sees), from Hca2: the mask must hold LID and
// BlockNum; GUID 0 of block 0 is the port's and read-only; a zero GUID asks the SA to assign one;
// a GUID another port or index holds is refused in place; the answer is the block as it then is;
// Get and GetTable show the alias GUIDs. Compared: status, method, AttributeOffset, records.
#[test]
fn alias_guids_answered_like_opensm() {
    let mut fabric = match Fabric::start(NET_ONE_SWITCH, None, "Hca1", "Hca2") {
        Ok(Setup::Ready(f)) => f,
        Ok(Setup::Skip(why)) => {
            eprintln!("SKIP: OpenSM differential test: {why}");
            return;
        }
        Err(e) => panic!("ibsim/OpenSM failed to start:\n{e}"),
    };
    let client = fabric
        .client("Hca2")
        .unwrap_or_else(|e| panic!("Hca2: {e}\n{}", fabric.logs()));
    let mut ours = OurSa::new(&fabric, &["Hca1", "Hca2", "Hca3"], &["Hca2"], 1)
        .unwrap_or_else(|e| panic!("model of the fabric: {e}\n{}", fabric.logs()));
    let lid = |node: &str| {
        fabric
            .facts(node)
            .unwrap_or_else(|e| panic!("{node}: {e}\n{}", fabric.logs()))
            .port
            .lid
    };
    let (me, other) = (lid("Hca2"), lid("Hca1"));
    let rec = |lid: u16, block: u8, guids: &[(usize, u64)]| {
        let mut r = GuidInfoRecordRepr {
            lid,
            block,
            guids: [Guid(0); 8],
        };
        for &(i, g) in guids {
            r.guids[i] = Guid(g);
        }
        r
    };
    let gid = |n: usize| gir_mask::GUID0 << n;
    let key = gir_mask::LID | gir_mask::BLOCK;
    const ALIAS: u64 = 0x0002_c903_00ab_cd01;
    let steps = [
        GirStep {
            name: "Set mask 0",
            method: Method::Set,
            mask: 0,
            rec: rec(me, 0, &[]),
        },
        GirStep {
            name: "Set LID only",
            method: Method::Set,
            mask: gir_mask::LID,
            rec: rec(me, 0, &[]),
        },
        GirStep {
            name: "Delete BlockNum only",
            method: Method::Delete,
            mask: gir_mask::BLOCK,
            rec: rec(me, 0, &[]),
        },
        GirStep {
            name: "Set LID no port",
            method: Method::Set,
            mask: key | gid(1),
            rec: rec(0x0999, 0, &[]),
        },
        GirStep {
            name: "Set GUID 0",
            method: Method::Set,
            mask: key | gid(0),
            rec: rec(me, 0, &[(0, ALIAS)]),
        },
        GirStep {
            name: "Set block past GUIDCap",
            method: Method::Set,
            mask: key | gid(1),
            rec: rec(me, 7, &[]),
        },
        GirStep {
            name: "Delete before any Set",
            method: Method::Delete,
            mask: key | gid(1),
            rec: rec(me, 0, &[(1, 5)]),
        },
        GirStep {
            name: "Set GUID 1 zero (SA assigns)",
            method: Method::Set,
            mask: key | gid(1),
            rec: rec(me, 0, &[]),
        },
        GirStep {
            name: "Set GUID 2 given",
            method: Method::Set,
            mask: key | gid(2),
            rec: rec(me, 0, &[(2, ALIAS)]),
        },
        GirStep {
            name: "Set GUID 3 = GUID 2's",
            method: Method::Set,
            mask: key | gid(3),
            rec: rec(me, 0, &[(3, ALIAS)]),
        },
        GirStep {
            name: "Set GUID 1 zero again",
            method: Method::Set,
            mask: key | gid(1),
            rec: rec(me, 0, &[]),
        },
        GirStep {
            name: "Set no GUID in mask",
            method: Method::Set,
            mask: key,
            rec: rec(me, 0, &[(4, 7)]),
        },
        GirStep {
            name: "Get block 0",
            method: Method::Get,
            mask: key,
            rec: rec(me, 0, &[]),
        },
        GirStep {
            name: "Set other port GUID 1 = mine",
            method: Method::Set,
            mask: key | gid(1),
            rec: rec(other, 0, &[(1, ALIAS)]),
        },
        GirStep {
            name: "Set other port GUID 1 new",
            method: Method::Set,
            mask: key | gid(1),
            rec: rec(other, 0, &[(1, ALIAS + 1)]),
        },
        GirStep {
            name: "Set block 1 GUID 0",
            method: Method::Set,
            mask: key | gid(0),
            rec: rec(me, 1, &[(0, ALIAS + 2)]),
        },
        GirStep {
            name: "GetTable LID",
            method: Method::GetTable,
            mask: gir_mask::LID | gir_mask::BLOCK,
            rec: rec(me, 1, &[]),
        },
        GirStep {
            name: "Delete GUID 0",
            method: Method::Delete,
            mask: key | gid(0),
            rec: rec(me, 0, &[]),
        },
        GirStep {
            name: "Delete GUID 1",
            method: Method::Delete,
            mask: key | gid(1),
            rec: rec(me, 0, &[]),
        },
        GirStep {
            name: "Delete GUID 2 and 5",
            method: Method::Delete,
            mask: key | gid(2) | gid(5),
            rec: rec(me, 0, &[]),
        },
        GirStep {
            name: "Set GUID 1 zero after Delete",
            method: Method::Set,
            mask: key | gid(1),
            rec: rec(me, 0, &[]),
        },
        GirStep {
            name: "Get block 0 after",
            method: Method::Get,
            mask: key,
            rec: rec(me, 0, &[]),
        },
        GirStep {
            name: "Get block 0 GUID 1 zero",
            method: Method::Get,
            mask: key | gid(1),
            rec: rec(me, 0, &[]),
        },
    ];
    let mut table = String::new();
    let mut diffs = Vec::new();
    for (i, s) in steps.iter().enumerate() {
        let m = SaMadRepr::request(
            s.method,
            0x7b00 + i as u64,
            s.mask,
            SaAttribute::GuidInfoRecord(s.rec),
        );
        let mad = m.to_bytes();
        let theirs = client
            .request(fabric.sm_lid, 1, &mad, SA_TIMEOUT)
            .map(|r| record_outcome(&r))
            .map_err(|e| e.to_string());
        let mine = ours.request(0, &mad).map(|r| record_outcome(&r));
        let line = match (&theirs, &mine) {
            (Err(_), Err(_)) => "  both: no answer".to_string(),
            // OpenSM compares a GUID n > 0 of the mask with 0, not with the record's (its
            // `sa_gir_by_comp_mask_cb`); we with the record's, as IBA 1 §15.2.4 asks: a known
            // difference (docs/OPENSM-LIMITS.md "Alias GUIDs").
            (Ok(_), Ok(o)) if s.name == "Get block 0 GUID 1 zero" => {
                assert_eq!(
                    o.head, "status 0x0300 GetResp aoff 0",
                    "ours: ERR_NO_RECORDS"
                );
                format!("  ours: {} (known difference)", o.head)
            }
            (Ok(t), Ok(o)) => match record_diff(t, o) {
                None => format!("  both: {} {:?}", o.head, o.records),
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
                        .map_or_else(|e| e.clone(), |o| format!("{} {:?}", o.head, o.records)),
                    mine.as_ref()
                        .map_or_else(|e| e.clone(), |o| format!("{} {:?}", o.head, o.records))
                );
                diffs.push(format!("step {i} ({}):\n{d}", s.name));
                d
            }
        };
        table += &format!("{i:2} {}\n{line}\n", s.name);
    }
    eprintln!("{table}");
    fabric.check_alive().unwrap();
    assert!(
        diffs.is_empty(),
        "{} differences:\n{}",
        diffs.len(),
        diffs.join("\n")
    );
}

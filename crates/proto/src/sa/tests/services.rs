//! ServiceRecord against OpenSM's rules (osm_sa_service_record.c, osm_service.c): Set, Get,
//! GetTable and Delete through the SA client, the component mask, the P_Key checks, the RID,
//! ServiceKey hiding, leases run out by the SA's time, and the bad input OpenSM accepts.

use super::*;
use ipoib_wire::mad::Method;
use ipoib_wire::sa::{
    service_name, sr_mask, SaAttribute, ServiceRecordRepr, SERVICE_LEASE_INFINITE,
};

const REG: u64 = sr_mask::SERVICE_ID
    | sr_mask::SERVICE_GID
    | sr_mask::SERVICE_P_KEY
    | sr_mask::SERVICE_LEASE
    | sr_mask::SERVICE_KEY
    | sr_mask::SERVICE_NAME;

/// Service `id` of the port with `lid`, P_Key 0xffff, lease `lease` s, key 0x5a.., name `name`.
fn svc(id: u64, lid: u16, lease: u32, name: &str) -> ServiceRecordRepr {
    let mut r = ServiceRecordRepr {
        service_id: id,
        service_gid: gid_of(lid),
        service_p_key: 0xffff,
        service_lease: lease,
        service_key: [0x5a; 16],
        service_name: service_name(name),
        ..ServiceRecordRepr::default()
    };
    r.data8[3] = id as u8;
    r.data64[1] = id << 8;
    r
}

fn mad(m: Method, mask: u64, sm_key: u64, r: ServiceRecordRepr) -> SaMadRepr {
    let mut mad = SaMadRepr::request(m, 0, mask, SaAttribute::ServiceRecord(r));
    mad.sa.sm_key = sm_key;
    mad
}

fn recs(r: SaResponse) -> Vec<ServiceRecordRepr> {
    r.attribute
        .into_iter()
        .chain(r.records)
        .map(|a| match a {
            SaAttribute::ServiceRecord(r) => r,
            other => panic!("{other:?}"),
        })
        .collect()
}

fn ask(
    net: &mut Net,
    lid: u16,
    m: Method,
    mask: u64,
    r: ServiceRecordRepr,
) -> Vec<ServiceRecordRepr> {
    recs(net.ask(lid, mad(m, mask, 0, r)).expect("success"))
}

fn table(net: &mut Net, lid: u16) -> Vec<u64> {
    let all = ask(net, lid, Method::GetTable, 0, ServiceRecordRepr::default());
    all.iter().map(|r| r.service_id).collect()
}

fn status_of(net: &mut Net, lid: u16, m: SaMadRepr) -> Result<SaResponse, SaClientError> {
    net.ask(lid, m)
}

// IBA 1 §15.2.5.14; OpenSM sr_rcv_process_{set,get,delete}_method: a Set answers the record
// (ServiceKey zeroed for an untrusted requester), Get/GetTable find it by any masked field, Delete
// answers it and removes it; a second Delete and a Get then find nothing.
#[test]
fn register_find_and_delete_a_service() {
    let mut net = Net::default(3);
    let a = svc(0x10, 2, SERVICE_LEASE_INFINITE, "alpha");
    let got = ask(&mut net, 2, Method::Set, REG, a);
    assert_eq!(
        got,
        [ServiceRecordRepr {
            service_key: [0; 16],
            ..a
        }]
    );
    ask(&mut net, 3, Method::Set, REG, svc(0x20, 3, 60, "beta"));
    // Newest first (osm_svcr_insert_to_db inserts at the head).
    assert_eq!(table(&mut net, 4), [0x20, 0x10]);
    let by = |net: &mut Net, mask, q| -> Vec<u64> {
        let r = ask(net, 4, Method::GetTable, mask, q);
        r.iter().map(|r| r.service_id).collect()
    };
    let q = ServiceRecordRepr::default();
    let named = ServiceRecordRepr {
        service_name: service_name("alpha"),
        ..q
    };
    assert_eq!(by(&mut net, sr_mask::SERVICE_NAME, named), [0x10]);
    assert_eq!(
        by(
            &mut net,
            sr_mask::SERVICE_ID,
            ServiceRecordRepr {
                service_id: 0x20,
                ..q
            }
        ),
        [0x20]
    );
    assert_eq!(
        by(
            &mut net,
            sr_mask::SERVICE_GID,
            ServiceRecordRepr {
                service_gid: gid_of(2),
                ..q
            }
        ),
        [0x10]
    );
    let mut d = q;
    d.data8[3] = 0x20;
    assert_eq!(by(&mut net, sr_mask::data8(3), d), [0x20]);
    assert_eq!(by(&mut net, sr_mask::data8(2), d), [0x20, 0x10]);
    d.data64[1] = 0x1000;
    assert_eq!(by(&mut net, sr_mask::data64(1), d), [0x10]);
    // The lease selects nothing; the key does.
    let leased = ServiceRecordRepr {
        service_lease: 7,
        ..q
    };
    assert_eq!(by(&mut net, sr_mask::SERVICE_LEASE, leased), [0x20, 0x10]);
    let keyed = ServiceRecordRepr {
        service_key: [0x5a; 16],
        ..q
    };
    assert_eq!(by(&mut net, sr_mask::SERVICE_KEY, keyed), [0x20, 0x10]);
    assert!(by(&mut net, sr_mask::SERVICE_KEY, q).is_empty());

    // Get: one, or ERR_NO_RECORDS / ERR_TOO_MANY_RECORDS.
    let one = ask(&mut net, 4, Method::Get, sr_mask::SERVICE_NAME, named);
    assert_eq!(one[0].service_lease, SERVICE_LEASE_INFINITE);
    assert_eq!(one[0].service_key, [0; 16]);
    assert_eq!(
        status_of(&mut net, 4, mad(Method::Get, 0, 0, q)),
        status(SaStatus::TooManyRecords)
    );
    let nobody = ServiceRecordRepr {
        service_id: 0x99,
        ..q
    };
    assert_eq!(
        status_of(
            &mut net,
            4,
            mad(Method::Get, sr_mask::SERVICE_ID, 0, nobody)
        ),
        status(SaStatus::NoRecords)
    );
    // A trusted request (the SM_Key) sees ServiceKey.
    let r = recs(
        net.ask(4, mad(Method::Get, sr_mask::SERVICE_NAME, 1, named))
            .unwrap(),
    );
    assert_eq!(r[0].service_key, [0x5a; 16]);

    // Delete by RID, whatever else the request holds.
    let rid_only = ServiceRecordRepr {
        service_name: service_name("other"),
        ..svc(0x10, 2, 0, "")
    };
    let gone = ask(&mut net, 3, Method::Delete, sr_mask::SERVICE_ID, rid_only);
    assert_eq!(gone[0].name(), "alpha");
    assert_eq!(
        status_of(&mut net, 3, mad(Method::Delete, REG, 0, a)),
        status(SaStatus::NoRecords)
    );
    assert_eq!(
        status_of(
            &mut net,
            4,
            mad(Method::Get, sr_mask::SERVICE_NAME, 0, named)
        ),
        status(SaStatus::NoRecords)
    );
    assert_eq!(table(&mut net, 4), [0x20]);
}

// OpenSM sr_rcv_process_set_method: ServiceID and ServiceGID are required; without ServiceLease
// the lease is infinite; without ServiceP_Key the answer says 0xFFFF but the record keeps the
// P_Key as sent (the RID is the bytes sent); a Set of the same RID replaces the record in place.
#[test]
fn set_rules() {
    let mut net = Net::default(2);
    let a = svc(1, 2, 30, "a");
    for mask in [REG & !sr_mask::SERVICE_ID, REG & !sr_mask::SERVICE_GID, 0] {
        assert_eq!(
            status_of(&mut net, 2, mad(Method::Set, mask, 0, a)),
            status(SaStatus::ReqInvalid),
            "{mask:#x}"
        );
    }
    let bare = ServiceRecordRepr {
        service_p_key: 0,
        ..svc(2, 2, 30, "b")
    };
    let mask = sr_mask::SERVICE_ID | sr_mask::SERVICE_GID;
    let got = ask(&mut net, 2, Method::Set, mask, bare);
    assert_eq!(
        (got[0].service_p_key, got[0].service_lease),
        (0xffff, SERVICE_LEASE_INFINITE)
    );
    let kept = ask(
        &mut net,
        3,
        Method::GetTable,
        0,
        ServiceRecordRepr::default(),
    );
    assert_eq!(
        (kept[0].service_p_key, kept[0].service_lease),
        (0, SERVICE_LEASE_INFINITE)
    );
    assert_eq!(kept[0].name(), "b");
    // Same RID again: replaced, not added; its new name found.
    ask(&mut net, 2, Method::Set, REG, a);
    let renamed = ServiceRecordRepr {
        service_name: service_name("a2"),
        ..a
    };
    ask(&mut net, 2, Method::Set, REG, renamed);
    assert_eq!(table(&mut net, 3), [1, 2]);
    let r = ask(&mut net, 3, Method::Get, sr_mask::SERVICE_ID, a);
    assert_eq!(r[0].name(), "a2");
    // Another P_Key is another RID.
    ask(
        &mut net,
        2,
        Method::Set,
        REG,
        ServiceRecordRepr {
            service_p_key: 0x7fff,
            ..a
        },
    );
    assert_eq!(table(&mut net, 3), [1, 1, 2]);
}

/// The SA's port, h2 holding P_Key 0x8001 besides the default, h3 only the default.
fn net_with_partition() -> Net {
    let ports = vec![
        ca(SA_LID, &[0xffff], 4, 7, 1),
        ca(2, &[0xffff, 0x8001], 4, 7, 2),
        ca(3, &[0xffff], 4, 7, 3),
    ];
    Net::new(
        star(ports),
        PartitionConfig::default_config(),
        SaServerConfig::default(),
        5,
    )
}

// OpenSM validate_sr / match_service_pkey_with_ports_pkey: with ServiceP_Key in the mask the
// requester, and with ServiceGID the GID's port, must hold the P_Key (an invalid P_Key passes);
// otherwise ERR_REQ_INVALID, for Delete too. Nothing checks that the GID is the requester's.
// get_matching_sr lists a record only to a requester holding its (valid) P_Key.
#[test]
fn pkeys_decide_who_registers_and_who_sees() {
    let mut net = net_with_partition();
    let p = ServiceRecordRepr {
        service_p_key: 0x8001,
        ..svc(1, 2, 0xffff_ffff, "p")
    };
    let invalid = status(SaStatus::ReqInvalid);
    // h3 lacks 0x8001; h2 may not register it for h3's GID, nor for an unknown GUID.
    assert_eq!(status_of(&mut net, 3, mad(Method::Set, REG, 0, p)), invalid);
    let for_h3 = ServiceRecordRepr {
        service_gid: gid_of(3),
        ..p
    };
    assert_eq!(
        status_of(&mut net, 2, mad(Method::Set, REG, 0, for_h3)),
        invalid
    );
    let unknown = ServiceRecordRepr {
        service_gid: gid_of(77),
        ..p
    };
    assert_eq!(
        status_of(&mut net, 2, mad(Method::Set, REG, 0, unknown)),
        invalid
    );
    // Without the P_Key bit nothing is checked: h3 registers for a GID nobody has.
    let loose = ServiceRecordRepr {
        service_p_key: 0xffff,
        ..unknown
    };
    ask(
        &mut net,
        3,
        Method::Set,
        REG & !sr_mask::SERVICE_P_KEY,
        loose,
    );
    // P_Key 0x8000 (base 0) is invalid, which passes, for a GID of another port.
    let zero = ServiceRecordRepr {
        service_p_key: 0x8000,
        service_id: 3,
        ..for_h3
    };
    ask(&mut net, 2, Method::Set, REG, zero);
    ask(&mut net, 2, Method::Set, REG, p);
    // h3 cannot see the 0x8001 service; h2 can.
    assert_eq!(table(&mut net, 2), [1, 3, 1]);
    assert_eq!(table(&mut net, 3), [3, 1]);
    // h3 may not delete it either (it lacks the P_Key); h2 may.
    assert_eq!(
        status_of(&mut net, 3, mad(Method::Delete, REG, 0, p)),
        invalid
    );
    ask(&mut net, 2, Method::Delete, REG, p);
    assert_eq!(table(&mut net, 2), [3, 1]);
}

// OpenSM osm_sr_rcv_lease_cb: a finite lease runs out after its seconds (at least one), counted
// from the last Set of the RID; an infinite one never; an absurd one is kept as sent. The SA's
// clock is the harness's virtual time.
#[test]
fn leases_run_out_by_the_sa_clock() {
    let mut net = Net::default(2);
    let t0 = net.now;
    ask(&mut net, 2, Method::Set, REG, svc(1, 2, 10, "ten"));
    ask(&mut net, 2, Method::Set, REG, svc(2, 2, 0, "zero"));
    ask(
        &mut net,
        2,
        Method::Set,
        REG,
        svc(3, 2, SERVICE_LEASE_INFINITE, "forever"),
    );
    ask(
        &mut net,
        2,
        Method::Set,
        REG,
        svc(4, 2, 0xffff_fffe, "absurd"),
    );
    ask(
        &mut net,
        2,
        Method::Set,
        REG & !sr_mask::SERVICE_LEASE,
        svc(5, 2, 1, "unleased"),
    );
    assert_eq!(net.now, t0, "the Sets took no virtual time");
    net.now = t0 + Duration::from_millis(900);
    assert_eq!(table(&mut net, 3), [5, 4, 3, 2, 1]);
    net.now = t0 + Duration::from_secs(1);
    assert_eq!(table(&mut net, 3), [5, 4, 3, 1]);
    // Renewed at 5 s: runs to 15 s.
    net.now = t0 + Duration::from_secs(5);
    ask(&mut net, 2, Method::Set, REG, svc(1, 2, 10, "ten"));
    net.now = t0 + Duration::from_secs(14);
    assert_eq!(table(&mut net, 3), [5, 4, 3, 1]);
    net.now = t0 + Duration::from_secs(15);
    assert_eq!(table(&mut net, 3), [5, 4, 3]);
    net.now = t0 + Duration::from_secs(100_000_000);
    let left = ask(
        &mut net,
        3,
        Method::GetTable,
        0,
        ServiceRecordRepr::default(),
    );
    let leases: Vec<u32> = left.iter().map(|r| r.service_lease).collect();
    assert_eq!(
        leases,
        [SERVICE_LEASE_INFINITE, 0xffff_fffe, SERVICE_LEASE_INFINITE]
    );
}

// OpenSM neither checks ServiceName for a NUL nor the ServiceData: a 64-byte name without one is
// kept and found byte for byte; three records (528 bytes) come back over RMPP.
#[test]
fn a_name_without_nul_is_kept_and_tables_span_mads() {
    let mut net = Net::default(2);
    let odd = ServiceRecordRepr {
        service_name: [0xff; 64],
        ..svc(1, 2, 99, "")
    };
    ask(&mut net, 2, Method::Set, REG, odd);
    ask(&mut net, 2, Method::Set, REG, svc(2, 2, 99, "b"));
    ask(&mut net, 2, Method::Set, REG, svc(3, 2, 99, "c"));
    let q = ServiceRecordRepr {
        service_name: [0xff; 64],
        ..ServiceRecordRepr::default()
    };
    let r = ask(&mut net, 3, Method::Get, sr_mask::SERVICE_NAME, q);
    assert_eq!(r[0].service_name, [0xff; 64]);
    assert_eq!(table(&mut net, 3), [3, 2, 1]);
    assert!(net.sa.stats().rmpp_done >= 1, "{:?}", net.sa.stats());
}

proptest::proptest! {
    // Bad input never panics (docs/ARCHITECTURE.md "Rules"): every ServiceRecord request from a
    // known port, whatever its record, component mask, method, SM_Key and time, gets exactly one
    // answer (a single MAD or an RMPP transfer's first segment); a successful one shows
    // ServiceKey only to a trusted requester.
    #[test]
    fn any_request_gets_one_answer(
        reqs in proptest::collection::vec(
            (
                proptest::collection::vec(proptest::prelude::any::<u8>(), 176),
                proptest::prelude::any::<u64>(),
                0usize..5,
                proptest::prelude::any::<bool>(),
                0u64..5_000,
            ),
            1..8,
        ),
    ) {
        let mut net = Net::default(3);
        for (data, mask, which, trusted, ms) in reqs {
            let mut r = ServiceRecordRepr::parse(&data).unwrap();
            if which == 0 {
                r.service_gid = gid_of(3);
            }
            let method = [Method::Set, Method::Get, Method::GetTable, Method::Delete, Method::Set][which];
            let m = mad(method, mask, u64::from(trusted), r);
            net.now += Duration::from_millis(ms);
            net.sa.handle_mad(net.now, MadIn { from: MadAddr::gsi(2), mad: m.to_bytes().to_vec() });
            let mut answers = 0;
            while let Some(out) = net.sa.poll_transmit(net.now) {
                proptest::prop_assert_eq!(out.to.lid, 2);
                // RMPP flags (IBA 1 §13.6.2): Active 1, First 2; a later segment is active, not
                // first.
                let rmpp_later = out.mad[26] & 1 != 0 && out.mad[26] & 2 == 0;
                if !rmpp_later {
                    answers += 1;
                }
                // An error answer is the request sent back (osm_sa_send_error), key and all.
                if let Ok(resp) = SaMadRepr::parse(&out.mad) {
                    if let (SaAttribute::ServiceRecord(got), MadStatus::SUCCESS) =
                        (resp.attribute, resp.header.status)
                    {
                        proptest::prop_assert!(trusted || got.service_key == [0; 16]);
                    }
                }
            }
            proptest::prop_assert_eq!(answers, 1);
        }
    }
}

// docs/OPENSM-SERVICES.md "How many": past MAX_SERVICES records a Set of a new RID is
// ERR_NO_RESOURCES (OpenSM's answer when it cannot allocate one); a known RID is still replaced,
// and a Delete makes room again.
#[test]
fn a_full_table_refuses_new_services_only() {
    let mut net = Net::default(2);
    for id in 0..MAX_SERVICES as u64 {
        let m = mad(Method::Set, REG, 0, svc(id, 2, SERVICE_LEASE_INFINITE, "s"));
        net.sa.handle_mad(
            net.now,
            MadIn {
                from: MadAddr::gsi(2),
                mad: m.to_bytes().to_vec(),
            },
        );
        while net.sa.poll_transmit(net.now).is_some() {}
    }
    let next = svc(MAX_SERVICES as u64, 2, 60, "one too many");
    assert_eq!(
        status_of(&mut net, 2, mad(Method::Set, REG, 0, next)),
        status(SaStatus::NoResources)
    );
    assert_eq!(net.sa.stats().services_refused, 1);
    let renamed = svc(7, 2, 60, "renamed");
    assert_eq!(
        ask(&mut net, 2, Method::Set, REG, renamed)[0].name(),
        "renamed"
    );
    ask(&mut net, 2, Method::Delete, REG, svc(0, 2, 0, ""));
    assert_eq!(
        ask(&mut net, 2, Method::Set, REG, next)[0].name(),
        "one too many"
    );
}

// OpenSM 3.3.23 osm_sa_mad_ctrl.c (C15-0.1.5): a request whose SM_Key is neither 0 nor the SA's
// is discarded before dispatch ("ERR 1A04 ... SA MAD ignored"), so it gets no answer at all, not
// ERR_REQ_INVALID (cli test services_vs_opensm "get id 1 wrong SM_Key" measures it).
#[test]
fn a_wrong_sm_key_gets_no_answer() {
    let mut net = Net::default(2);
    let a = svc(1, 2, SERVICE_LEASE_INFINITE, "a");
    ask(&mut net, 2, Method::Set, REG, a);
    let before = net.sa.stats().requests;
    assert_eq!(
        status_of(&mut net, 2, mad(Method::Get, sr_mask::SERVICE_ID, 2, a)),
        Err(SaClientError::Timeout)
    );
    assert_eq!(
        status_of(&mut net, 2, mad(Method::Delete, REG, 7, a)),
        Err(SaClientError::Timeout)
    );
    // Each of the client's tries reached the SA and was dropped.
    let tries = net.sa.stats().requests - before;
    assert!(tries >= 2);
    assert_eq!(
        net.sa.stats().dropped.get("SM_Key neither 0 nor the SA's"),
        Some(&tries)
    );
    // Nothing was deleted; the right key is trusted.
    let r = recs(
        net.ask(2, mad(Method::Get, sr_mask::SERVICE_ID, 1, a))
            .unwrap(),
    );
    assert_eq!(r[0].service_key, [0x5a; 16]);
}

// OpenSM validate_sr / match_service_pkey_with_ports_pkey looks the requester up first, whatever
// the mask: a ServiceRecord Set or Delete from a LID it cannot find ("ERR 2404") is answered
// ERR_REQ_INVALID, while a Get (sr_rcv_process_get_method, "ERR 2409") and every other
// attribute's request go unanswered.
#[test]
fn a_set_or_delete_from_an_unknown_lid_is_invalid() {
    let mut net = Net::default(2);
    let answer_from = |net: &mut Net, lid: u16, m: Method, mask: u64, sm_key: u64| {
        let r = svc(1, 2, 60, "a");
        let raw = mad(m, mask, sm_key, r).to_bytes().to_vec();
        let from = MadAddr::gsi(lid);
        net.sa.handle_mad(net.now, MadIn { from, mad: raw });
        let out = net.sa.poll_transmit(net.now);
        assert!(net.sa.poll_transmit(net.now).is_none());
        out.map(|o| {
            assert_eq!(o.to.lid, lid);
            SaMadRepr::parse(&o.mad).unwrap().header.status
        })
    };
    let answer = |net: &mut Net, m, mask, sm_key| answer_from(net, 77, m, mask, sm_key);
    let invalid = Some(MadStatus::sa(SaStatus::ReqInvalid));
    assert_eq!(answer(&mut net, Method::Set, REG, 0), invalid);
    let loose = sr_mask::SERVICE_ID | sr_mask::SERVICE_GID;
    assert_eq!(answer(&mut net, Method::Set, loose, 0), invalid);
    assert_eq!(answer(&mut net, Method::Delete, 0, 1), invalid);
    assert_eq!(answer(&mut net, Method::Get, 0, 0), None);
    assert_eq!(answer(&mut net, Method::GetTable, 0, 0), None);
    // The SM_Key is checked before (osm_sa_mad_ctrl.c): a wrong one is dropped.
    assert_eq!(answer(&mut net, Method::Set, REG, 9), None);
    // The switch's LID is an end port's: its requests stay dropped, as every other from a
    // switch (this SA serves CA ports only).
    let sw = crate::testing::SWITCH_LID;
    assert_eq!(answer_from(&mut net, sw, Method::Set, REG, 0), None);
    // Nothing was registered.
    assert!(table(&mut net, 2).is_empty());
}

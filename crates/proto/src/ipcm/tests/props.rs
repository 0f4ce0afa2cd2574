//! Random REQ private data to a server: it never panics and always answers, with a REP (its
//! consumer accepts everything it is offered) or a well-formed REJ 28 carrying the Annex A11
//! ARI the wire crate's checks give for those bytes; and nothing is left once the timers ran.

use super::*;
use ipoib_wire::private_data::verify_req_private_data;
use proptest::prelude::*;

/// Private data: raw bytes, or bytes with a good version, or a good header of either family to
/// one of B's addresses (so that every answer, REP included, comes up often).
fn private_data() -> impl Strategy<Value = Vec<u8>> {
    (proptest::collection::vec(any::<u8>(), 0..=92), 0u8..4).prop_map(|(mut d, how)| {
        if how > 0 {
            d.resize(d.len().max(36), 0);
            d[0] = 0;
        }
        match how {
            2 => {
                d[1] = 0x40;
                d[4..16].fill(0);
                d[20..32].fill(0);
                d[32..36].copy_from_slice(&B_V4.octets());
            }
            3 => {
                d[1] = 0x60;
                d[20..36].copy_from_slice(&B_V6.octets());
            }
            _ => {}
        }
        d
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn random_req_private_data_gets_accept_or_well_formed_rej(data in private_data(), seed in any::<u64>()) {
        let mut w = World::new(seed);
        let any: IpAddr = Ipv6Addr::UNSPECIFIED.into();
        w.listen_b(TCP, any, PORT);
        let sent = data.clone();
        w.a.mangle = Some(Box::new(move |pd| *pd = sent.clone()));
        let ca = w.connect_a(TCP, SocketAddr::new(b_ip(false), PORT), b"");
        w.drive(Duration::from_secs(5));

        let mut field = [0u8; 92];
        field[..data.len()].copy_from_slice(&data);
        let expected = verify_req_private_data(&field, &w.b.ipcm.cfg.policy, &w.b.ipcm.cfg.local_addrs)
            .map(|r| r.source_port);
        let reps = w.sent(attr::REP).iter().filter(|(f, _)| *f == B_LID).count();
        let rejs = w.rejs();
        prop_assert_eq!(reps + rejs.len(), 1, "one answer");
        match expected {
            Ok(sport) => {
                prop_assert_eq!(reps, 1);
                let got = find(&w.b.events, |e| match e {
                    IpCmEvent::ConnectRequest { src, .. } => Some(src.port()),
                    _ => None,
                });
                prop_assert_eq!(got, Some(sport));
                let up = matches!(w.a.events[..], [IpCmEvent::Established { .. }]);
                prop_assert!(up, "A established: {:?}", w.a.events);
                w.a.ipcm.disconnect(ca).unwrap();
            }
            Err(refusal) => {
                let (from, r) = &rejs[0];
                prop_assert_eq!(*from, B_LID);
                prop_assert_eq!(r.reason, RejReason::ConsumerDefined);
                let ari = IpCmReject::parse(r.ari()).expect("a Table 4 ARI");
                prop_assert_eq!(ari, refusal);
                prop_assert_eq!(usize::from(r.reject_info_length), ari.buffer_len());
                prop_assert!(u8::from(ari.code) <= 6);
                prop_assert!(w.b.events.is_empty());
                prop_assert_eq!(
                    rejected(&w.a.events).1,
                    RejectAri::IpCm { code: refusal.code, suggested: refusal.suggested }
                );
            }
        }
        w.finish();
    }
}

proptest! {
    // A client reads any ARI a REJ may carry (up to the field's 72 bytes) without panicking; a
    // Table 4 ARI of layer 0x00 with reason 28 is the service's, and only its codes 0x01-0x06
    // show the service (Annex A11 §A11.6).
    #[test]
    fn any_rej_ari_decodes(reason in any::<u16>(), ari in proptest::collection::vec(any::<u8>(), 0..=72)) {
        let reason = RejReason::from(reason);
        let d = RejectAri::decode(reason, &ari);
        let service = reason == RejReason::ConsumerDefined && ari.first() == Some(&0);
        match (&d, IpCmReject::parse(&ari)) {
            (RejectAri::IpCm { code, suggested }, Ok(r)) => {
                prop_assert!(service);
                prop_assert_eq!((*code, *suggested), (r.code, r.suggested));
                prop_assert_eq!(d.shows_service(), (1..=6).contains(&u8::from(*code)));
            }
            (RejectAri::IpCm { .. }, Err(_)) => prop_assert!(false, "decoded what does not parse"),
            (_, Ok(_)) => prop_assert!(!service),
            (_, Err(_)) => prop_assert!(!d.shows_service()),
        }
    }
}

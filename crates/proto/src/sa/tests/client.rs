//! SaClient: TIDs, retries with backoff, timeouts, determinism.

use super::*;

// Linux ib_mad retries resend the same TID after the timeout.
#[test]
fn client_retries_when_the_first_request_is_dropped() {
    let mut net = Net::default(2);
    let mut dropped = 0;
    net.filter = Box::new(move |from, _| {
        if from == 2 && dropped == 0 {
            dropped += 1;
            return true;
        }
        false
    });
    let r = net.ask(2, SaMadRepr::class_port_info_get(0));
    assert!(r.is_ok(), "{r:?}");
    assert_eq!(
        net.now,
        Instant::from_nanos(1_000_000_000),
        "answered after one timeout"
    );
    let sent: Vec<u64> = net
        .log
        .iter()
        .filter(|(_, from, _)| *from == 2)
        .map(|(_, _, m)| u64::from_be_bytes(m.mad[8..16].try_into().unwrap()))
        .collect();
    assert_eq!(sent.len(), 1, "only the retry got through");
    let resp = net.log.iter().find(|(_, from, _)| *from == SA_LID).unwrap();
    assert_eq!(
        u64::from_be_bytes(resp.2.mad[8..16].try_into().unwrap()),
        sent[0]
    );
}

// SaClientConfig defaults: 1 s, doubling, 3 retries -> Timeout at 1 + 2 + 4 + 8 = 15 s.
#[test]
fn client_times_out_with_backoff() {
    let mut net = Net::default(2);
    net.filter = Box::new(|from, _| from == 2);
    let r = net.ask(2, SaMadRepr::class_port_info_get(0));
    assert_eq!(r, Err(SaClientError::Timeout));
    assert_eq!(net.now, Instant::from_nanos(15_000_000_000));
    assert_eq!(net.client(2).pending(), 0);
}

#[test]
fn tids_are_unique_seeded_and_responses_match_by_tid() {
    let mut a = SaClient::new(SaClientConfig::default(), Rng::new(5));
    let mut b = SaClient::new(SaClientConfig::default(), Rng::new(5));
    let mut c = SaClient::new(SaClientConfig::default(), Rng::new(6));
    let now = Instant::ZERO;
    let mut tids = Vec::new();
    for _ in 0..50 {
        let ia = a.request(now, SaMadRepr::class_port_info_get(0), MadAddr::gsi(1));
        let ib = b.request(now, SaMadRepr::class_port_info_get(0), MadAddr::gsi(1));
        let ic = c.request(now, SaMadRepr::class_port_info_get(0), MadAddr::gsi(1));
        assert_eq!(a.transaction_id(ia), b.transaction_id(ib));
        assert_ne!(a.transaction_id(ia), c.transaction_id(ic));
        tids.push(a.transaction_id(ia).unwrap());
    }
    let mut u = tids.clone();
    u.sort_unstable();
    u.dedup();
    assert_eq!(u.len(), 50);
    // A response with an unknown TID is dropped; the right one completes the request.
    let req = a.poll_transmit(now).unwrap();
    let mut m = SaMadRepr::parse(&req.mad).unwrap();
    let resp = m.response(MadStatus::SUCCESS, m.attribute);
    m.header.transaction_id ^= 1 << 40;
    let wrong = m.response(MadStatus::SUCCESS, m.attribute);
    a.handle_mad(
        now,
        MadIn {
            from: MadAddr::gsi(1),
            mad: wrong.to_bytes().to_vec(),
        },
    );
    assert!(a.poll_event().is_none());
    a.handle_mad(
        now,
        MadIn {
            from: MadAddr::gsi(1),
            mad: resp.to_bytes().to_vec(),
        },
    );
    assert!(matches!(
        a.poll_event(),
        Some(SaClientEvent::Response {
            id: RequestId(1),
            result: Ok(_)
        })
    ));
    assert_eq!(a.dropped.get("response for no request"), Some(&1));
}

// The client's events are its inbox: one answer is taken out by its RequestId while the others
// (earlier and later answers, Reports) stay queued in their order.
#[test]
fn take_response_leaves_the_other_events_queued() {
    let mut c = SaClient::new(SaClientConfig::default(), Rng::new(9));
    let now = Instant::ZERO;
    let ids: Vec<RequestId> = (0..3)
        .map(|_| c.request(now, SaMadRepr::class_port_info_get(0), MadAddr::gsi(1)))
        .collect();
    while let Some(req) = c.poll_transmit(now) {
        let m = SaMadRepr::parse(&req.mad).unwrap();
        let resp = m.response(MadStatus::SUCCESS, m.attribute);
        c.handle_mad(
            now,
            MadIn {
                from: MadAddr::gsi(1),
                mad: resp.to_bytes().to_vec(),
            },
        );
    }
    assert!(ids.iter().all(|&id| c.has_response(id)));
    assert!(matches!(c.take_response(ids[1]), Some(Ok(_))));
    assert!(!c.has_response(ids[1]));
    assert_eq!(c.take_response(ids[1]), None, "taken once");
    let rest: Vec<RequestId> = std::iter::from_fn(|| c.poll_event())
        .map(|e| match e {
            SaClientEvent::Response { id, .. } => id,
            e => panic!("{e:?}"),
        })
        .collect();
    assert_eq!(rest, [ids[0], ids[2]]);
}

// Same seed, same packets (docs/ARCHITECTURE.md "Rules").
#[test]
fn same_seed_same_mads() {
    let run = || {
        let mut net = Net::default(4);
        for lid in 2..=5u16 {
            let rec = join_rec(
                mgid("ff12:601b:ffff::7"),
                gid_of(lid),
                JoinState::FULL_MEMBER,
            );
            let _ = net.ask(lid, join(rec, CREATE));
        }
        net.log
            .iter()
            .map(|(t, f, m)| (*t, *f, m.mad.clone()))
            .collect::<Vec<_>>()
    };
    assert_eq!(run(), run());
}

/// `SaServerConfig::processing_delay`: a response leaves `poll_transmit` only once the delay since
/// its request has passed, `poll_timeout` names that time, requests are pipelined and the order is
/// kept (docs/benchmarks/subnet.md: OpenSM answers about one join per 10 µs when pipelined).
#[test]
fn sa_processing_delay_holds_responses_in_order() {
    let delay = Duration::from_micros(5);
    let cfg = SaServerConfig {
        processing_delay: delay,
        ..SaServerConfig::default()
    };
    let mut sa = SaServer::new(
        cfg,
        default_model(2),
        PartitionConfig::default_config(),
        Rng::new(1),
    );
    let t0 = Instant::from_nanos(1_000);
    let t1 = t0 + Duration::from_micros(1);
    for (i, (t, lid)) in [(t0, 2u16), (t1, 3u16)].into_iter().enumerate() {
        let mut m = SaMadRepr::class_port_info_get(0);
        m.header.transaction_id = i as u64 + 10;
        sa.handle_mad(
            t,
            MadIn {
                from: MadAddr::gsi(lid),
                mad: m.to_bytes().to_vec(),
            },
        );
    }
    assert!(sa.poll_transmit(t1).is_none());
    assert_eq!(sa.poll_timeout(), Some(t0 + delay));
    assert!(sa
        .poll_transmit(t0 + (delay - Duration::from_nanos(1)))
        .is_none());
    let a = sa.poll_transmit(t0 + delay).expect("first response");
    assert_eq!(a.to.lid, 2);
    assert!(sa.poll_transmit(t0 + delay).is_none());
    assert_eq!(sa.poll_timeout(), Some(t1 + delay));
    let b = sa.poll_transmit(t1 + delay).expect("second response");
    assert_eq!(b.to.lid, 3);
    assert_eq!(sa.poll_timeout(), None);
    // With the default (zero) the response is there at once.
    let mut sa = SaServer::new(
        SaServerConfig::default(),
        default_model(2),
        PartitionConfig::default_config(),
        Rng::new(1),
    );
    sa.handle_mad(
        t0,
        MadIn {
            from: MadAddr::gsi(2),
            mad: SaMadRepr::class_port_info_get(0).to_bytes().to_vec(),
        },
    );
    assert!(sa.poll_transmit(t0).is_some());
}

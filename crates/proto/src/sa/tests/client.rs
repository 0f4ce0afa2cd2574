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

/// A client with one GetTable request out, and the three DATA segments of an answer to it.
fn table_transfer() -> (SaClient, RequestId, Vec<[u8; ipoib_wire::mad::MAD_LEN]>) {
    use crate::sa::rmpp::segment_table;
    let mut c = SaClient::new(SaClientConfig::default(), Rng::new(3));
    let mut req = SaMadRepr::class_port_info_get(0);
    req.header.method = ipoib_wire::mad::Method::GetTable;
    let id = c.request(Instant::ZERO, req, MadAddr::gsi(1));
    let sent = SaMadRepr::parse(&c.poll_transmit(Instant::ZERO).unwrap().mad).unwrap();
    let mut h = sent.header;
    h.method = ipoib_wire::mad::Method::GetTableResp;
    let segs = segment_table(h, sent.sa, &[7u8; 500]);
    assert_eq!(segs.len(), 3);
    (c, id, segs)
}

/// Hands `mad` to the client; the RMPP type and status of what it sends back, in order.
fn give(c: &mut SaClient, mad: &[u8]) -> Vec<(u8, u8)> {
    c.handle_mad(
        Instant::ZERO,
        MadIn {
            from: MadAddr::gsi(1),
            mad: mad.to_vec(),
        },
    );
    std::iter::from_fn(|| c.poll_transmit(Instant::ZERO))
        .map(|o| (o.mad[25], o.mad[27]))
        .collect()
}

const ACK: u8 = 2;
const STOP: u8 = 3;
const ABORT: u8 = 4;

// IBA 1 §13.6.3.3, as Linux's receiver (`mad_rmpp.c` `process_rmpp_data`, `nack_recv`): a DATA
// segment whose First flag disagrees with its SegmentNumber, or with an RMPPStatus, ends the
// transfer with an ABORT to the sender (status 120, 124), and the request fails. Before, the
// client gave up without a word (and took a later segment marked First).
#[test]
fn a_bad_data_segment_is_answered_with_an_abort() {
    let (mut c, id, segs) = table_transfer();
    assert_eq!(give(&mut c, &segs[0]), [(ACK, 0)]);
    let mut second = segs[1];
    second[26] |= 0x02; // First on segment 2
    assert_eq!(give(&mut c, &second), [(ABORT, 120)]);
    assert_eq!(c.take_response(id), Some(Err(SaClientError::Rmpp)));

    let (mut c, id, segs) = table_transfer();
    let mut first = segs[0];
    first[27] = 5;
    assert_eq!(give(&mut c, &first), [(ABORT, 124)]);
    assert_eq!(c.take_response(id), Some(Err(SaClientError::Rmpp)));
}

// IBA 1 §13.6.3.3 (Linux `ib_process_rmpp_recv_wc`): an unknown RMPPType is aborted with
// BadRMPPType (121), another RMPPVersion with UnsupportedVersion (125).
#[test]
fn an_unknown_rmpp_type_or_version_is_aborted() {
    for (byte, value, status) in [(25, 7, 121), (24, 2, 125)] {
        let (mut c, id, segs) = table_transfer();
        let mut first = segs[0];
        first[byte] = value;
        assert_eq!(give(&mut c, &first), [(ABORT, status)], "byte {byte}");
        assert_eq!(c.take_response(id), Some(Err(SaClientError::Rmpp)));
    }
}

// A STOP (ResourcesExhausted) or ABORT (118-127) from the sender ends the request without a
// reply; one with a status it may not carry is answered with ABORT IllegalStatus (124), as
// Linux's `process_rmpp_stop` / `process_rmpp_abort`. An ACK is a sender's business: dropped,
// the request still waits for its data.
#[test]
fn the_senders_stop_or_abort_ends_the_request() {
    for (t, status, reply) in [
        (STOP, 1, vec![]),
        (ABORT, 118, vec![]),
        (STOP, 0, vec![(ABORT, 124)]),
        (ABORT, 3, vec![(ABORT, 124)]),
    ] {
        let (mut c, id, segs) = table_transfer();
        assert_eq!(give(&mut c, &segs[0]), [(ACK, 0)]);
        let mut end = segs[1];
        end[25] = t;
        end[26] = (end[26] & !0x07) | 0x01; // Active only
        end[27] = status;
        assert_eq!(give(&mut c, &end), reply, "type {t} status {status}");
        assert_eq!(c.take_response(id), Some(Err(SaClientError::Rmpp)));
    }
    let (mut c, id, segs) = table_transfer();
    let mut ack = segs[0];
    ack[25] = ACK;
    assert_eq!(give(&mut c, &ack), []);
    assert_eq!(c.pending(), 1);
    for s in &segs {
        give(&mut c, s);
    }
    assert!(matches!(c.take_response(id), Some(Ok(_))));
}

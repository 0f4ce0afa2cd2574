//! Unreliable Connection (IBA 1 §9.8) through the Communication Manager on the emulated subnet:
//! a REQ with Transport Service Type UC (IBA 1 §12.6 Table 106) makes both hosts' CM applications
//! create UC QPs and program them from the CM's `QpProgram`; SENDs cross both ways; a lost packet
//! loses its message and nothing is resent (no ACKs on UC, IBA 1 §9.8.3); DREQ/DREP release the
//! connection and the QPs are destroyed after TimeWait (IBA 1 §12.9.8).

use ipoib_fabric::hw::verbs::{QpState, QpType};
use ipoib_fabric::node::cm::{self, CmApp, LinkState};
use ipoib_fabric::testing::cm::{cm_app as app, cm_mads, drop_first, pair, run_until, sendings};
use ipoib_fabric::testing::cm::{with_host, Pair, A, B};
use ipoib_fabric::testing::{seed, SeedGuard};
use ipoib_proto::cm::{Cm, ConnectParams};
use ipoib_wire::cm::{attr, CmMessage, TransportServiceType};
use ipoib_wire::ib::{Operation, Transport};
use ipoib_wire::packet::Packet;
use ipoib_wire::pcap::CaptureReader;
use std::time::Duration;

const SID: u64 = 0x1000_0000_0000_0055;

/// The UC data packets in a capture (every link crossing), as (SLID, operation, PSN).
fn uc_packets(pcap: &[u8]) -> Vec<(u16, Operation, u32)> {
    CaptureReader::read_all(pcap)
        .unwrap()
        .iter()
        .filter_map(|p| {
            let pkt = Packet::parse(&p.data).ok()?;
            let bth = pkt.bth?;
            (bth.opcode.transport() == Transport::Uc).then(|| {
                let op = bth.opcode.operation();
                (pkt.lrh.slid, op, bth.psn)
            })
        })
        .collect()
}

// IBA 1 §12.6 Table 106 (Transport Service Type 1, UC) and §9.8: A connects to B over UC; both
// QPs are UC and in RTS, SENDs cross both ways (one larger than the path MTU); the middle packet
// of a three-packet message is lost on the first link: that message is lost whole, the messages
// before and after it arrive, every send completed at A, no completion is in error and nothing is
// resent or acknowledged. DREQ/DREP then release the connection (IBA 1 §12.9), the QPs go to
// Error and, after TimeWait (IBA 1 §12.9.8), are destroyed.
#[test]
fn uc_connection_delivers_loses_without_retry_and_releases() {
    let s = seed(41);
    let _g = SeedGuard(s);
    let Pair {
        mut net,
        a,
        b,
        path,
    } = pair(s, |_, _, _| {});
    with_host(&mut net, B, |h, _| cm::listen(h, b, SID, u64::MAX).unwrap());
    let params = ConnectParams {
        transport: TransportServiceType::Uc,
        responder_resources: 0,
        ..ConnectParams::over_path(&path, 0, SID, 0, 0x00_0777)
    };
    let mtu = params.mtu.bytes().unwrap() as usize;
    let conn_a = with_host(&mut net, A, |h, now| cm::connect(h, now, a, params)).unwrap();
    let up = run_until(&mut net, (a, b), Duration::from_secs(1), |x, y| {
        let y_up = y.connections().any(|(_, c)| c.state == LinkState::Up);
        y_up && x
            .connection(conn_a)
            .is_some_and(|c| c.state == LinkState::Up)
    });
    assert!(up, "both sides Established");
    let conn_b = app(&net, B, b).connections().next().unwrap().0;
    let la = app(&net, A, a).connection(conn_a).unwrap().clone();
    let lb = app(&net, B, b).connection(conn_b).unwrap().clone();
    for (i, l) in [(A, &la), (B, &lb)] {
        let info = net.host_device(i).hca().qp_info(l.qpn).unwrap();
        assert_eq!(
            (info.qp_type, info.state),
            (QpType::Uc, QpState::Rts),
            "host {i}"
        );
        assert_eq!(l.qp.unwrap().transport, TransportServiceType::Uc);
    }
    assert_eq!(la.qp.unwrap().remote_qpn, lb.qpn);
    assert_eq!(lb.qp.unwrap().remote_qpn, la.qpn);

    // Both ways, nothing lost.
    let big: Vec<u8> = (0..(5 * mtu / 2) as u32).map(|i| i as u8).collect();
    with_host(&mut net, A, |h, _| {
        cm::send(h, a, conn_a, b"uc hello B".to_vec()).unwrap();
        cm::send(h, a, conn_a, big.clone()).unwrap();
    });
    with_host(&mut net, B, |h, _| {
        cm::send(h, b, conn_b, b"uc hello A".to_vec()).unwrap()
    });
    net.sim_mut().run_for(Duration::from_millis(5));
    let (la, lb) = (
        app(&net, A, a).connection(conn_a).unwrap().clone(),
        app(&net, B, b).connection(conn_b).unwrap().clone(),
    );
    assert_eq!(lb.received, [b"uc hello B".to_vec(), big.clone()]);
    assert_eq!(la.received, [b"uc hello A".to_vec()]);
    assert_eq!((la.sent, lb.sent), (2, 1));

    // The middle packet of A's next large message is lost on its first link.
    let lid_a = net.lid(A);
    net.sim_mut()
        .set_drop_filter(Some(drop_first(move |p: &Packet<'_>| {
            p.lrh.slid == lid_a
                && p.bth.is_some_and(|b| {
                    b.opcode.transport() == Transport::Uc
                        && b.opcode.operation() == Operation::SendMiddle
                })
        })));
    let msgs: Vec<Vec<u8>> = vec![
        b"before".to_vec(),
        vec![0xab; 5 * mtu / 2],
        b"after".to_vec(),
    ];
    with_host(&mut net, A, |h, _| {
        for m in &msgs {
            cm::send(h, a, conn_a, m.clone()).unwrap();
        }
    });
    net.sim_mut().run_for(Duration::from_millis(50));
    let (la, lb) = (
        app(&net, A, a).connection(conn_a).unwrap().clone(),
        app(&net, B, b).connection(conn_b).unwrap().clone(),
    );
    assert_eq!(
        lb.received[2..],
        [msgs[0].clone(), msgs[2].clone()],
        "the message with a lost packet is lost whole; the next one arrives"
    );
    assert_eq!(la.sent, 5, "UC sends complete once sent (IBA 1 §9.8.3)");
    assert!(
        la.errors.is_empty() && lb.errors.is_empty(),
        "no error: {:?} {:?}",
        la.errors,
        lb.errors
    );

    // B releases: DREQ, DREP; both QPs to Error; after TimeWait they are destroyed.
    with_host(&mut net, B, |h, now| cm::disconnect(h, now, b, conn_b)).unwrap();
    let closed = run_until(&mut net, (a, b), Duration::from_secs(30), |x, y| {
        let closed = |app: &CmApp, c| {
            app.connection(c)
                .is_some_and(|l| l.state == LinkState::Closed)
        };
        closed(x, conn_a) && closed(y, conn_b)
    });
    assert!(closed, "released and out of TimeWait on both sides");
    for (i, h, l) in [(A, a, &la), (B, b, &lb)] {
        assert_eq!(net.host_device(i).hca().qp_info(l.qpn), None, "host {i}");
        assert_eq!(
            net.host_device(i).agent::<Cm>(h.cm).unwrap().connections(),
            0
        );
        let f = app(&net, i, h).failures();
        assert!(f.is_empty(), "host {i}: {f:?}");
    }

    // The capture: the CM exchange once each, the REQ asking for UC; A's UC packets each crossed
    // both links but the lost one, which was never sent again; B sent no acknowledgement.
    let pcap = net.sim_mut().take_capture().unwrap().into_bytes();
    let once = sendings(&cm_mads(&pcap));
    let names: Vec<u16> = once.iter().map(|m| m.attr).collect();
    assert_eq!(
        names,
        [attr::REQ, attr::REP, attr::RTU, attr::DREQ, attr::DREP]
    );
    let CmMessage::Req(req) = once[0].msg else {
        panic!("{:?}", once[0]);
    };
    assert_eq!(req.transport_service_type, TransportServiceType::Uc);
    let uc = uc_packets(&pcap);
    let from_a: Vec<_> = uc.iter().filter(|p| p.0 == lid_a).collect();
    // A's messages: 1 + 3 packets, then 1 + 3 + 1; two links each, but one copy lost.
    assert_eq!(from_a.len(), 2 * (4 + 5) - 1, "{from_a:?}");
    // Each PSN crossed both links once, but the lost packet's, seen on the first link only.
    let mut crossings = std::collections::BTreeMap::new();
    for p in &from_a {
        *crossings.entry(p.2).or_insert(0) += 1;
    }
    let start = la.qp.unwrap().sq_psn;
    let want: std::collections::BTreeMap<u32, i32> = (0..9)
        .map(|i| ((start + i) & 0xff_ffff, if i == 6 { 1 } else { 2 }))
        .collect();
    assert_eq!(crossings, want, "one PSN per packet, none sent twice");
    let from_b = uc.len() - from_a.len();
    assert_eq!(from_b, 2, "B's one message, no acknowledgements");
    assert!(uc.iter().all(|p| p.1 != Operation::Acknowledge));
}

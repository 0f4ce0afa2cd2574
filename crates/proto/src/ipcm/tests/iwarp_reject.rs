//! iWarp emulation through the IP CM service, refused (iWarp mapping §II, "IB Service ID's
//! used"): what the server and the client do with a Hello or HelloReply that breaks the mapping's
//! rules, requests that reach the other service, and the calls' own refusals. Tests are named
//! after the iWarp mapping statements (docs/CONFORMANCE.md IW-n) they show; the helpers are in
//! `iwarp.rs`.

use super::iwarp::{any, connect_cfg, established, hello_exchange, request, stream_cfg};
use super::*;
use crate::iwarp::{HandshakeError, StreamConfig};
use ipoib_wire::cm::TransportServiceType;
use ipoib_wire::private_data::{FlowControl, HelloRepr, IpPair, SuggestedValue};

/// A connects to B's iWarp listener with a REQ whose Hello `mangle` changes; the world settled.
fn mangled_hello(v6: bool, fc: FlowControl, mangle: impl FnMut(&mut Vec<u8>) + 'static) -> World {
    let mut w = World::new(62);
    w.listen_b_iwarp(any(v6), PORT, IwarpServiceId::Iwarp);
    w.a.mangle = Some(Box::new(mangle));
    w.connect_a_iwarp(SocketAddr::new(b_ip(v6), PORT), &connect_cfg(fc), b"");
    w.drive(Duration::from_secs(10));
    w
}

/// A heard REJ 28 with an A11-form ARI of `code` suggesting `suggested` and a REJ text starting
/// with `text`; B's consumer heard nothing and B counted `counter`.
fn refused(mut w: World, code: IpCmAriCode, suggested: &[u8], text: &str, counter: &str) {
    let (reason, ari, pd) = rejected(&w.a.events);
    assert_eq!(reason, RejReason::ConsumerDefined, "REJ 28");
    assert_eq!(ari.code(), Some(code), "{ari:?}");
    let RejectAri::IpCm { suggested: s, .. } = &ari else {
        panic!("{ari:?}")
    };
    assert_eq!(s.as_bytes(), suggested);
    let said = String::from_utf8_lossy(&pd);
    assert!(said.starts_with(text), "REJ text {said:?}, wanted {text:?}");
    assert!(
        request(&w.b.events).is_none(),
        "B's consumer never hears of it"
    );
    assert!(w.b.events.is_empty());
    assert_eq!(
        w.b.ipcm.counters.get(counter),
        Some(&1),
        "{:?}",
        w.b.ipcm.counters
    );
    w.finish();
}

// iWarp mapping §II, Figure 1 and "as defined in SDP" (IW-1, IW-6): the server checks the Hello
// before its consumer hears of it, versions first; a bad one is REJ 28 whose ARI names the field
// (Annex A11 Table 4 form) and whose private data says why.
#[test]
fn iw1_iw6_bad_hello_rejected_with_rej_28_and_reason() {
    use IpCmAriCode::*;
    for v6 in [false, true] {
        let fc = FlowControl::Transport;
        let w = mangled_hello(v6, fc, |pd| pd[16] = 0x20);
        refused(
            w,
            MajorVersion,
            &[1],
            "iWarp Hello refused: major version 2, we speak 1",
            "iwarp: major version",
        );
        let w = mangled_hello(v6, fc, |pd| pd[17] = (pd[17] & 0xf0) | 5);
        refused(
            w,
            Unspecified,
            &[],
            "iWarp Hello refused: FlowC 5 is reserved",
            "iwarp Hello: FlowC reserved",
        );
        let w = mangled_hello(v6, fc, |pd| {
            pd[24..28].copy_from_slice(&16u32.to_be_bytes())
        });
        refused(
            w,
            Unspecified,
            &[],
            "iWarp Hello refused: receive size 16 cannot carry a byte",
            "iwarp Hello: receive size",
        );
        let w = mangled_hello(v6, fc, |pd| pd[17] = 0x50 | (pd[17] & 0x0f));
        refused(
            w,
            Ipv,
            &[4],
            "iWarp Hello refused: IP version 5",
            "iwarp: IP version",
        );
        let w = mangled_hello(v6, fc, |pd| pd[0] = 2);
        refused(
            w,
            Unspecified,
            &[],
            "iWarp Hello refused: no Hello",
            "iwarp: not a Hello",
        );
        // The destination is checked against B's addresses, as Annex A11 code 0x06.
        let w = mangled_hello(v6, fc, |pd| pd[63] ^= 0x08);
        refused(
            w,
            UnknownIpAddress,
            &[],
            "iWarp Hello refused: no listener for",
            "iwarp: unknown destination",
        );
    }
    let w = mangled_hello(false, FlowControl::Ulp, |pd| pd[32] = 1);
    refused(
        w,
        SourceIpAddress,
        &[],
        "iWarp Hello refused: IPv4 source",
        "iwarp: source address",
    );
    // A source no interface has (as Annex A11's server, Linux `validate_ipv4_net_dev`): code 0x00.
    let w = mangled_hello(false, FlowControl::Ulp, |pd| pd[44] = 224);
    refused(
        w,
        Unspecified,
        &[],
        "iWarp Hello refused: source 224.0.0.1 is not a unicast address",
        "iwarp: source not unicast",
    );
    let w = mangled_hello(true, FlowControl::Ulp, |pd| pd[32..48].fill(0));
    refused(
        w,
        Unspecified,
        &[],
        "iWarp Hello refused: source :: is not a unicast address",
        "iwarp: source not unicast",
    );
    // iWarp emulation runs on RC (§II): our client asks for RC whatever the service's default,
    // and a UC REQ (built here from the RC one and handed to B's service) is refused.
    let mut w = World::new(63);
    w.a.ipcm = IpCm::new(
        IpCmConfig {
            transport: TransportServiceType::Uc,
            ..IpCmConfig::new(vec![A_V4.into(), A_V6.into()])
        },
        Rng::new(64),
    );
    w.listen_b_iwarp(any(false), PORT, IwarpServiceId::Iwarp);
    let ca = w.connect_a_iwarp(
        SocketAddr::new(b_ip(false), PORT),
        &connect_cfg(FlowControl::Ulp),
        b"",
    );
    w.drive(Duration::from_secs(5));
    let mut req = w.reqs()[0];
    assert_eq!(req.transport_service_type, TransportServiceType::Rc);
    assert!(established(&w.a.events).is_some());
    req.transport_service_type = TransportServiceType::Uc;
    let listen = w.b.ipcm.services.values().find_map(|s| s.cm);
    let e = CmEvent::ConnectRequest {
        conn: ConnId(999),
        listen: listen.expect("B's CM listener"),
        req,
        from: MadAddr::gsi(A_LID),
    };
    assert!(w.b.ipcm.owns(&e));
    w.b.ipcm.handle_cm_event(w.now, &e);
    let Some(IpCmCommand::CmReject {
        conn,
        reason,
        private_data,
        ..
    }) = w.b.ipcm.poll_command()
    else {
        panic!("a REJ")
    };
    assert_eq!((conn, reason), (ConnId(999), RejReason::ConsumerDefined));
    assert!(private_data.starts_with(b"iWarp Hello refused: transport UC"));
    assert_eq!(w.b.ipcm.counters.get("iwarp: not RC"), Some(&1));
    w.a.ipcm.disconnect(ca).unwrap();
    w.finish();
}

// iWarp mapping §II (IW-2): the server's own buffers decide too: a listener with 2 receive
// buffers cannot run FlowC 0 (SDP's credits need more) and refuses it, and takes FlowC 1.
#[test]
fn iw2_listener_settings_refuse_flowc_0_take_flowc_1() {
    for (fc, ok) in [(FlowControl::Transport, false), (FlowControl::Ulp, true)] {
        let mut w = World::new(65);
        let cfg = StreamConfig {
            recv_depth: 2,
            ..stream_cfg()
        };
        w.b.ipcm
            .listen_iwarp(any(true), PORT, cfg, IwarpServiceId::Iwarp)
            .unwrap();
        let dst = SocketAddr::new(b_ip(true), PORT);
        let ca = w.connect_a_iwarp(dst, &connect_cfg(fc), b"");
        w.drive(Duration::from_secs(5));
        if ok {
            assert!(established(&w.a.events).is_some());
            assert_eq!(
                w.a.ipcm.iwarp_stream(ca).map(|s| s.peer_initial_bufs()),
                Some(2)
            );
            w.a.ipcm.disconnect(ca).unwrap();
            w.finish();
        } else {
            refused(
                w,
                IpCmAriCode::Unspecified,
                &[],
                "iWarp Hello refused: receive depth 2 below the minimum",
                "iwarp Hello: our settings",
            );
        }
    }
}

// iWarp mapping "CM Reply" figure and "as defined in SDP" (IW-1, IW-6): the client checks the
// HelloReply; a bad one (another major version, an ActRcvSz that cannot carry a byte, no
// HelloReply at all) releases the connection and its consumer hears ConnectError.
#[test]
fn iw1_iw6_bad_hello_reply_releases_the_connection() {
    type Case = (fn(&mut Vec<u8>), &'static str);
    let cases: [Case; 3] = [
        (|pd| pd[16] = 0x20, "iwarp HelloReply: major version"),
        (
            |pd| pd[20..24].copy_from_slice(&[0, 0, 0, 4]),
            "iwarp HelloReply: ActRcvSz",
        ),
        (|pd| pd[0] = 0, "iwarp: REP without a HelloReply"),
    ];
    for (mangle, counter) in cases {
        let mut w = World::new(66);
        w.listen_b_iwarp(any(false), PORT, IwarpServiceId::Iwarp);
        w.b.mangle_rep = Some(Box::new(mangle));
        let dst = SocketAddr::new(b_ip(false), PORT);
        let ca = w.connect_a_iwarp(dst, &connect_cfg(FlowControl::Transport), b"");
        w.drive(Duration::from_secs(5));
        assert_eq!(w.a.events, [IpCmEvent::ConnectError { conn: ca }]);
        assert_eq!(w.a.ipcm.counters.get(counter), Some(&1), "{counter}");
        assert!(w.a.ipcm.iwarp_stream(ca).is_none(), "the stream is gone");
        assert!(w.a.ipcm.take_iwarp_stream(ca).is_none());
        // B saw the connection come up with the RTU and go with A's DREQ.
        assert!(established(&w.b.events).is_some());
        assert!(w
            .b
            .events
            .iter()
            .any(|e| matches!(e, IpCmEvent::Disconnected { by_peer: true, .. })));
        w.finish();
    }
}

// iWarp mapping "IB Service ID's used" (IW-10) with Annex A11 CA11-6 to CA11-8: the two services
// have their own service IDs and port spaces. An A11 REQ for a port with only an iWarp listener,
// and an iWarp REQ for a port with only an A11 listener, find no CM listener: REJ 8. An A11-shaped
// header on the iWarp service ID is Linux rdma_cm's IPOIB port space, which we do not run: REJ 8
// too. A Hello on an A11 service ID is read as Table 1 (CA11-7) and refused by the A11 checks.
// Both listeners on one port work side by side.
#[test]
fn iw10_a11_and_iwarp_requests_do_not_cross() {
    let invalid_sid = |w: &World| {
        let (reason, ari, _) = rejected(&w.a.events);
        assert_eq!(
            (reason, ari),
            (RejReason::InvalidServiceId, RejectAri::Empty)
        );
        assert!(w.b.events.is_empty(), "{:?}", w.b.events);
    };
    for v6 in [false, true] {
        let dst = SocketAddr::new(b_ip(v6), PORT);
        // A11 REQ, iWarp listener only.
        let mut w = World::new(67);
        w.listen_b_iwarp(any(v6), PORT, IwarpServiceId::Iwarp);
        w.connect_a(TCP, dst, b"");
        w.drive(Duration::from_secs(5));
        invalid_sid(&w);
        w.finish();
        // iWarp REQ, A11 listener only.
        let mut w = World::new(68);
        w.listen_b(TCP, any(v6), PORT);
        w.connect_a_iwarp(dst, &connect_cfg(FlowControl::Transport), b"");
        w.drive(Duration::from_secs(5));
        invalid_sid(&w);
        w.finish();
        // The A11 header on the iWarp service ID.
        let mut w = World::new(69);
        w.listen_b_iwarp(any(v6), PORT, IwarpServiceId::Iwarp);
        let a = a_ip(v6);
        w.a.mangle = Some(Box::new(move |pd: &mut Vec<u8>| {
            *pd = req_private_data(SocketAddr::new(a, 40000), dst.ip(), b"").unwrap();
        }));
        w.connect_a_iwarp(dst, &connect_cfg(FlowControl::Transport), b"");
        w.drive(Duration::from_secs(5));
        invalid_sid(&w);
        assert_eq!(
            w.b.ipcm.counters.get("iwarp: another service's REQ"),
            Some(&1)
        );
        w.finish();
        // A Hello on the A11 service ID: byte 1 (Rsvd in the Hello) is read as IPV 0.
        let w = mangled(70, v6, move |pd| {
            let hello = HelloRepr {
                bufs: 8,
                len: 64,
                major_version: 1,
                minor_version: 0,
                flow_control: FlowControl::Transport,
                des_rem_rcv_sz: 4096,
                local_rcv_sz: 4096,
                local_port: 40000,
                addrs: IpPair::V4 {
                    src: A_V4,
                    dst: B_V4,
                },
            };
            pd.resize(64, 0);
            hello.emit(pd).unwrap();
        });
        let (reason, ari, _) = rejected(&w.a.events);
        assert_eq!(reason, RejReason::ConsumerDefined);
        assert_eq!(
            ari,
            RejectAri::IpCm {
                code: IpCmAriCode::Ipv,
                suggested: SuggestedValue::byte(4)
            }
        );
    }
    // Both services on TCP port 3260 at once.
    let mut w = World::new(71);
    let l11 = w.listen_b(TCP, any(true), PORT);
    let liw = w.listen_b_iwarp(any(true), PORT, IwarpServiceId::Iwarp);
    let dst = SocketAddr::new(b_ip(true), PORT);
    let c11 = w.connect_a(TCP, dst, b"");
    let ciw = w.connect_a_iwarp(dst, &connect_cfg(FlowControl::Ulp), b"");
    w.drive(Duration::from_secs(5));
    let listens: Vec<IpListenId> =
        w.b.events
            .iter()
            .filter_map(|e| match e {
                IpCmEvent::ConnectRequest { listen, .. } => Some(*listen),
                _ => None,
            })
            .collect();
    assert_eq!(listens, [l11, liw]);
    assert!(w.a.ipcm.iwarp_stream(c11).is_none(), "A11 has no stream");
    assert!(w.a.ipcm.take_iwarp_stream(ciw).is_some());
    let up =
        w.a.events
            .iter()
            .filter(|e| matches!(e, IpCmEvent::Established { .. }))
            .count();
    assert_eq!(up, 2);
    w.a.ipcm.disconnect(c11).unwrap();
    w.a.ipcm.disconnect(ciw).unwrap();
    w.finish();
}

// The calls' own refusals, and the stream's hand-over.
#[test]
fn iwarp_calls_refuse_what_cannot_work() {
    let mut w = World::new(76);
    let now = w.now;
    let bad = StreamConfig {
        recv_size: 0,
        ..stream_cfg()
    };
    assert_eq!(
        w.b.ipcm
            .listen_iwarp(any(false), PORT, bad, IwarpServiceId::Iwarp),
        Err(IpCmError::Iwarp(HandshakeError::RecvSize(0)))
    );
    let dst = SocketAddr::new(b_ip(false), PORT);
    let cfg = connect_cfg(FlowControl::Transport);
    assert_eq!(
        w.a.ipcm.connect_iwarp(now, dst, None, &cfg, &[0; 29]),
        Err(IpCmError::PrivateDataTooLong(29))
    );
    let shallow = IwarpConnect {
        stream: StreamConfig {
            recv_depth: 2,
            ..stream_cfg()
        },
        ..cfg
    };
    assert_eq!(
        w.a.ipcm.connect_iwarp(now, dst, None, &shallow, b""),
        Err(IpCmError::Iwarp(HandshakeError::RecvDepth(2)))
    );
    assert_eq!(w.a.ipcm.connections(), 0, "nothing started");
    assert!(w.a.commands.is_empty() && w.a.ipcm.poll_command().is_none());

    // The consumer's REP bytes follow the 24-byte HelloReply: 172 at most.
    w.b.answer = Answer::Hold;
    w.listen_b_iwarp(any(false), PORT, IwarpServiceId::Iwarp);
    let ca = w.connect_a_iwarp(dst, &cfg, &[7; 28]);
    assert!(
        w.a.ipcm.take_iwarp_stream(ca).is_none(),
        "not before Established"
    );
    assert!(w.a.ipcm.iwarp_stream(ca).is_some());
    w.drive(Duration::from_secs(1));
    let cb = find(&w.b.events, |e| match e {
        IpCmEvent::ConnectRequest {
            conn, private_data, ..
        } => {
            assert_eq!(private_data, &[7; 28], "the REQ's bytes after the Hello");
            Some(*conn)
        }
        _ => None,
    })
    .expect("request");
    assert!(
        w.b.ipcm.take_iwarp_stream(cb).is_none(),
        "not before Established"
    );
    assert_eq!(
        w.b.ipcm.accept(cb, &[0; 173]),
        Err(IpCmError::PrivateDataTooLong(173))
    );
    w.b.ipcm.accept(cb, &[9; 172]).unwrap();
    w.drive(Duration::from_secs(5));
    let (_, pd) = established(&w.a.events).expect("A established");
    assert_eq!(pd, [9; 172]);
    w.a.ipcm.disconnect(ca).unwrap();
    w.finish();
}

// iWarp mapping "MID" (IW-7): MID 0 is the Hello (in the REQ), 1 the Reply (in the REP); a REQ
// whose MID is 1 or reserved is no Hello, and a REP whose MID is 0 is no HelloReply.
#[test]
fn iw7_mid_only_0_and_1() {
    for v6 in [false, true] {
        for mid in [1u8, 0xff] {
            let (w, _, _) =
                hello_exchange(v6, FlowControl::Transport, move |pd| pd[0] = mid, |_| {});
            let (reason, _, pd) = rejected(&w.a.events);
            assert_eq!(reason, RejReason::ConsumerDefined, "MID {mid}");
            assert!(String::from_utf8_lossy(&pd).starts_with("iWarp Hello refused: no Hello"));
        }
        let (w, _, _) = hello_exchange(v6, FlowControl::Transport, |_| {}, |pd| pd[0] = 0);
        assert!(matches!(w.a.events[..], [IpCmEvent::ConnectError { .. }]));
    }
}

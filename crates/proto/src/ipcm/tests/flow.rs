//! The service as rdma_cm's consumers use it: establishment and release both ways, the
//! failures before and after the REQ (address, route, unreachable, the host's own), ports and
//! listeners.

use super::*;

fn established(events: &[IpCmEvent]) -> Option<(IpConnId, Vec<u8>)> {
    find(events, |e| match e {
        IpCmEvent::Established { conn, private_data } => Some((*conn, private_data.clone())),
        _ => None,
    })
}

fn disconnected(events: &[IpCmEvent]) -> Option<(IpConnId, bool)> {
    find(events, |e| match e {
        IpCmEvent::Disconnected { conn, by_peer, .. } => Some((*conn, *by_peer)),
        _ => None,
    })
}

// A connection comes up over IPv4 and IPv6 and either side releases it; both sides hear
// Disconnected, and once TimeWait is over nothing is left.
#[test]
fn establish_and_release_both_ways() {
    for v6 in [false, true] {
        for a_releases in [true, false] {
            let mut w = World::new(40);
            w.listen_b(TCP, b_ip(v6), PORT);
            let ca = w.connect_a(TCP, SocketAddr::new(b_ip(v6), PORT), b"hi");
            w.drive(Duration::from_secs(5));
            let (c, rep) = established(&w.a.events).expect("A established");
            assert_eq!(c, ca);
            assert!(rep.starts_with(b"welcome"), "the REP's private data");
            let (cb, _) = established(&w.b.events).expect("B established");
            let (bl, br) = w.b.ipcm.addrs(cb).unwrap();
            let (al, ar) = w.a.ipcm.addrs(ca).unwrap();
            assert_eq!((bl, br), (ar, al), "each side's view mirrors the other's");
            assert!(w.a.ipcm.cm_conn(ca).is_some());
            if a_releases {
                w.a.ipcm.disconnect(ca).unwrap();
            } else {
                w.b.ipcm.disconnect(cb).unwrap();
            }
            w.settle_now();
            assert_eq!(disconnected(&w.a.events), Some((ca, !a_releases)));
            assert_eq!(disconnected(&w.b.events), Some((cb, a_releases)));
            assert_eq!(
                w.a.ipcm.disconnect(ca),
                Err(IpCmError::WrongState("already closing"))
            );
            w.finish();
            assert_eq!(w.a.ipcm.disconnect(ca), Err(IpCmError::Unknown));
        }
    }
}

// rdma_cm's RDMA_CM_EVENT_ADDR_ERROR: the host has no GID for the address, or never answers.
#[test]
fn address_error_when_the_address_does_not_resolve() {
    for v6 in [false, true] {
        let mut w = World::new(41);
        w.a.neighbours.clear();
        let c = w.connect_a(TCP, SocketAddr::new(b_ip(v6), PORT), b"");
        w.settle_now();
        assert_eq!(w.a.events, [IpCmEvent::AddressError { conn: c }]);
        assert_eq!(w.a.ipcm.connections(), 0);
        // Unanswered: two connections to one address ask once and both fail at their deadline.
        let mut w = World::new(42);
        w.a.answer_resolve = false;
        let c1 = w.connect_a(TCP, SocketAddr::new(b_ip(v6), PORT), b"");
        let c2 = w.connect_a(TCP, SocketAddr::new(b_ip(v6), PORT + 1), b"");
        w.drive(Duration::from_secs(10));
        let asked =
            w.a.commands
                .iter()
                .filter(|c| matches!(c, IpCmCommand::Resolve { .. }))
                .count();
        assert_eq!(asked, 1);
        assert_eq!(
            w.a.events,
            [
                IpCmEvent::AddressError { conn: c1 },
                IpCmEvent::AddressError { conn: c2 }
            ]
        );
        assert_eq!(w.now, Instant::ZERO + Duration::from_secs(2));
        assert!(w.log.is_empty(), "no REQ");
        w.finish();
    }
}

// Connections to one address share its question (Resolve, then PathQuery for its GID). When the
// connection that asked gives up (its deadline, or its consumer's disconnect), the question is
// asked again for those still waiting: their deadlines are later, and a host may stop asking at
// the first one's (fabric `node/ipcm/` does). Here the host answers only questions asked after
// the first connection is gone; the second connection still comes up.
#[test]
fn a_shared_question_is_asked_again_when_its_asker_gives_up() {
    for (seed, route, by_disconnect) in [(46, false, false), (47, true, false), (48, false, true)] {
        let mut w = World::new(seed);
        w.listen_b(TCP, b_ip(false), PORT);
        w.a.answer_resolve = route;
        w.a.answer_path = !route;
        if route {
            w.a.paths.clear();
        }
        let dst = SocketAddr::new(b_ip(false), PORT);
        let c1 = w.connect_a(TCP, dst, b"");
        w.settle_now();
        w.now += Duration::from_secs(1);
        let c2 = w.connect_a(TCP, dst, b"");
        w.settle_now();
        let asked = |w: &World| {
            w.a.commands
                .iter()
                .filter(|c| match c {
                    IpCmCommand::Resolve { .. } => !route,
                    IpCmCommand::PathQuery { .. } => route,
                    _ => false,
                })
                .count()
        };
        assert_eq!(asked(&w), 1, "one question for both");
        // From now on the host answers what it is asked.
        w.a.answer_resolve = true;
        w.a.answer_path = true;
        w.a.paths.insert(gid(B_LID), path(A_LID, B_LID));
        if by_disconnect {
            w.a.ipcm.disconnect(c1).unwrap();
            w.settle_now();
        } else {
            w.drive(Duration::from_millis(1500));
            let failed = if route {
                IpCmEvent::RouteError { conn: c1 }
            } else {
                IpCmEvent::AddressError { conn: c1 }
            };
            assert_eq!(w.a.events.first(), Some(&failed));
        }
        assert_eq!(asked(&w), 2, "asked again for c2");
        assert_eq!(established(&w.a.events).map(|(c, _)| c), Some(c2));
        w.a.ipcm.disconnect(c2).unwrap();
        w.finish();
    }
}

// rdma_cm's RDMA_CM_EVENT_ROUTE_ERROR: no PathRecord, or none in time.
#[test]
fn route_error_when_no_path() {
    for answer in [true, false] {
        let mut w = World::new(43);
        w.a.paths.clear();
        w.a.answer_path = answer;
        let c = w.connect_a(TCP, SocketAddr::new(b_ip(false), PORT), b"");
        w.drive(Duration::from_secs(10));
        assert_eq!(w.a.events, [IpCmEvent::RouteError { conn: c }]);
        assert!(w
            .a
            .commands
            .contains(&IpCmCommand::PathQuery { dgid: gid(B_LID) }));
        w.finish();
    }
}

// rdma_cm's RDMA_CM_EVENT_UNREACHABLE: the REQ is never answered.
#[test]
fn unreachable_when_the_req_is_lost() {
    let mut w = World::new(44);
    w.listen_b(TCP, b_ip(true), PORT);
    w.cut = true;
    let c = w.connect_a(TCP, SocketAddr::new(b_ip(true), PORT), b"");
    w.drive(Duration::from_secs(600));
    assert_eq!(w.a.events, [IpCmEvent::Unreachable { conn: c }]);
    w.finish();
}

// RDMA_CM_EVENT_CONNECT_ERROR: the host's CM refuses the REQ (a path with no valid P_Key), or
// the server's host has no QP for an accepted request (it rejects with reason 1).
#[test]
fn connect_error_when_the_host_cannot() {
    let mut w = World::new(45);
    w.a.paths.get_mut(&gid(B_LID)).unwrap().pkey = PKey(0);
    let c = w.connect_a(TCP, SocketAddr::new(b_ip(false), PORT), b"");
    w.settle_now();
    assert_eq!(w.a.events, [IpCmEvent::ConnectError { conn: c }]);
    assert_eq!(w.a.ipcm.connections(), 0);

    let mut w = World::new(46);
    w.b.have_qps = false;
    w.listen_b(TCP, b_ip(false), PORT);
    w.connect_a(TCP, SocketAddr::new(b_ip(false), PORT), b"");
    w.drive(Duration::from_secs(5));
    assert!(matches!(
        w.b.events[..],
        [
            IpCmEvent::ConnectRequest { .. },
            IpCmEvent::ConnectError { .. }
        ]
    ));
    assert_eq!(rejected(&w.a.events).0, RejReason::NoQp);
    w.finish();
}

// Withdrawing a connection at each stage before it is up.
#[test]
fn disconnect_before_established() {
    // While the address is being resolved: forgotten, nothing sent.
    let mut w = World::new(47);
    w.a.answer_resolve = false;
    let c = w.connect_a(TCP, SocketAddr::new(b_ip(false), PORT), b"");
    w.settle_now();
    w.a.ipcm.disconnect(c).unwrap();
    assert_eq!(w.a.ipcm.connections(), 0);
    w.finish();
    assert!(w.a.events.is_empty() && w.log.is_empty());
    // After the REQ, before the REP (B's consumer holds the request): the REQ is withdrawn and
    // B's consumer hears Rejected.
    let mut w = World::new(48);
    w.b.answer = Answer::Hold;
    w.listen_b(TCP, b_ip(false), PORT);
    let c = w.connect_a(TCP, SocketAddr::new(b_ip(false), PORT), b"");
    w.settle_now();
    w.a.ipcm.disconnect(c).unwrap();
    w.settle_now();
    let cb = w.b.events[0].conn().unwrap();
    assert!(matches!(
        w.b.events[1],
        IpCmEvent::Rejected { conn, reason: RejReason::Timeout, .. } if conn == cb
    ));
    assert_eq!(
        w.b.ipcm.accept(cb, b""),
        Err(IpCmError::WrongState("not a request waiting for an answer"))
    );
    w.finish();
    // A request the server's consumer gives up instead of answering is rejected as the ULP's.
    let mut w = World::new(49);
    w.b.answer = Answer::Hold;
    w.listen_b(TCP, b_ip(true), PORT);
    w.connect_a(TCP, SocketAddr::new(b_ip(true), PORT), b"");
    w.settle_now();
    let cb = w.b.events[0].conn().unwrap();
    w.b.ipcm.disconnect(cb).unwrap();
    w.settle_now();
    assert_eq!(rejected(&w.a.events).1, RejectAri::Ulp(Vec::new()));
    w.finish();
}

// Ports: an ephemeral source port comes from Linux's default ip_local_port_range, is not
// handed out twice while in use, nor twice in a row; an explicit one may not be in use for the
// same protocol (another protocol is another port space); a full range is an error.
#[test]
fn source_ports() {
    let mut w = World::new(50);
    w.a.answer_resolve = false;
    let dst = SocketAddr::new(b_ip(false), PORT);
    let mut seen = std::collections::BTreeSet::new();
    for _ in 0..200 {
        let c = w.a.ipcm.connect(w.now, TCP, dst, None, b"").unwrap();
        let p = w.a.ipcm.addrs(c).unwrap().0.port();
        assert!((32768..=60999).contains(&p), "{p}");
        assert!(seen.insert(p), "port {p} handed out twice");
    }
    let taken = *seen.iter().next().unwrap();
    assert_eq!(
        w.a.ipcm.connect(w.now, TCP, dst, Some(taken), b""),
        Err(IpCmError::AddressInUse)
    );
    assert!(w.a.ipcm.connect(w.now, SCTP, dst, Some(taken), b"").is_ok());
    let c = w.a.ipcm.connect(w.now, TCP, dst, Some(5000), b"").unwrap();
    assert_eq!(
        w.a.ipcm.addrs(c).unwrap().0,
        SocketAddr::new(A_V4.into(), 5000)
    );

    let mut w = World::new(51);
    w.a.answer_resolve = false;
    w.a.ipcm.cfg.ephemeral_ports = (40000, 40002);
    let mut got = Vec::new();
    for _ in 0..3 {
        let c = w.a.ipcm.connect(w.now, TCP, dst, Some(0), b"").unwrap();
        got.push(w.a.ipcm.addrs(c).unwrap().0.port());
    }
    got.sort_unstable();
    assert_eq!(got, [40000, 40001, 40002]);
    assert_eq!(
        w.a.ipcm.connect(w.now, TCP, dst, None, b""),
        Err(IpCmError::NoFreePort)
    );
}

// What connect refuses.
#[test]
fn connect_refusals() {
    let mut w = World::new(52);
    let dst = SocketAddr::new(b_ip(false), PORT);
    assert_eq!(
        w.a.ipcm.connect(w.now, TCP, dst, None, &[0; 57]),
        Err(IpCmError::PrivateDataTooLong(57))
    );
    assert!(w.a.ipcm.connect(w.now, TCP, dst, None, &[0; 56]).is_ok());
    let zero = SocketAddr::new(b_ip(false), 0);
    assert!(matches!(
        w.a.ipcm.connect(w.now, TCP, zero, None, b""),
        Err(IpCmError::Invalid(_))
    ));
    let mc = SocketAddr::new(Ipv4Addr::new(224, 0, 0, 1).into(), PORT);
    assert!(matches!(
        w.a.ipcm.connect(w.now, TCP, mc, None, b""),
        Err(IpCmError::Invalid(_))
    ));
    w.a.ipcm.set_local_addrs(vec![A_V4.into()]);
    assert_eq!(
        w.a.ipcm
            .connect(w.now, TCP, SocketAddr::new(b_ip(true), PORT), None, b""),
        Err(IpCmError::AddressNotAvailable)
    );
}

// The source address: ours of the destination's family, link-local for a link-local peer.
#[test]
fn source_address_follows_family_and_scope() {
    let mut w = World::new(53);
    let ll_a: IpAddr = Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 1).into();
    let ll_b: IpAddr = Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 2).into();
    w.a.ipcm
        .set_local_addrs(vec![ll_a, A_V6.into(), A_V4.into()]);
    w.a.answer_resolve = false;
    let src = |w: &mut World, dst: IpAddr| {
        let c =
            w.a.ipcm
                .connect(w.now, TCP, SocketAddr::new(dst, PORT), None, b"")
                .unwrap();
        w.a.ipcm.addrs(c).unwrap().0.ip()
    };
    assert_eq!(src(&mut w, b_ip(false)), a_ip(false));
    assert_eq!(src(&mut w, b_ip(true)), a_ip(true));
    assert_eq!(src(&mut w, ll_b), ll_a);
}

// Listeners: which ones may share a port, which REQs each takes, one CM listener per
// (protocol, port), and REJ 8 once the last is gone.
#[test]
fn listeners_share_ports_by_address() {
    let mut w = World::new(54);
    let any4: IpAddr = Ipv4Addr::UNSPECIFIED.into();
    let any6: IpAddr = Ipv6Addr::UNSPECIFIED.into();
    let l4 = w.b.ipcm.listen(TCP, b_ip(false), PORT).unwrap();
    let l6 = w.b.ipcm.listen(TCP, b_ip(true), PORT).unwrap();
    assert_eq!(
        w.b.ipcm.listen(TCP, any4, PORT),
        Err(IpCmError::AddressInUse)
    );
    assert_eq!(
        w.b.ipcm.listen(TCP, any6, PORT),
        Err(IpCmError::AddressInUse)
    );
    assert_eq!(
        w.b.ipcm.listen(TCP, a_ip(false), PORT),
        Err(IpCmError::AddressNotAvailable)
    );
    let ls = w.b.ipcm.listen(SCTP, any4, PORT).unwrap();
    w.settle_now();
    let listens =
        w.b.commands
            .iter()
            .filter(|c| matches!(c, IpCmCommand::CmListen { .. }))
            .count();
    assert_eq!(listens, 2, "one per (protocol, port)");
    // Each address's REQ reaches its own listener.
    for (v6, l) in [(false, l4), (true, l6)] {
        w.connect_a(TCP, SocketAddr::new(b_ip(v6), PORT), b"");
        w.drive(Duration::from_secs(5));
        let got = w.b.events.iter().rev().find_map(|e| match e {
            IpCmEvent::ConnectRequest { listen, .. } => Some(*listen),
            _ => None,
        });
        assert_eq!(got, Some(l));
    }
    // 0.0.0.0 takes IPv4 only: an IPv6 REQ to its port finds no listener for its address.
    w.connect_a(SCTP, SocketAddr::new(b_ip(true), PORT), b"");
    w.drive(Duration::from_secs(5));
    assert_eq!(
        rejected(&w.a.events).1.code(),
        Some(IpCmAriCode::UnknownIpAddress)
    );
    assert_eq!(w.b.ipcm.listen_addr(ls), Some(SocketAddr::new(any4, PORT)));
    // The last listener of a port stops the CM's; then REQs get REJ 8.
    w.b.ipcm.unlisten(l4).unwrap();
    w.settle_now();
    assert!(!w
        .b
        .commands
        .iter()
        .any(|c| matches!(c, IpCmCommand::CmUnlisten { .. })));
    w.b.ipcm.unlisten(l6).unwrap();
    w.settle_now();
    assert!(w
        .b
        .commands
        .iter()
        .any(|c| matches!(c, IpCmCommand::CmUnlisten { .. })));
    assert_eq!(w.b.ipcm.unlisten(l6), Err(IpCmError::Unknown));
    let before = w.rejs().len();
    w.connect_a(TCP, SocketAddr::new(b_ip(false), PORT), b"");
    w.drive(Duration::from_secs(5));
    let rejs = w.rejs();
    assert_eq!(rejs.len(), before + 1);
    assert_eq!(rejs[before].1.reason, RejReason::InvalidServiceId);
    // `::` takes both families.
    let l = w.b.ipcm.listen(TCP, any6, PORT).unwrap();
    w.settle_now();
    w.connect_a(TCP, SocketAddr::new(b_ip(false), PORT), b"");
    w.drive(Duration::from_secs(5));
    let got = w.b.events.iter().rev().find_map(|e| match e {
        IpCmEvent::ConnectRequest { listen, dst, .. } => Some((*listen, *dst)),
        _ => None,
    });
    assert_eq!(got, Some((l, SocketAddr::new(b_ip(false), PORT))));
    // A listener on port 0 gets an ephemeral port.
    let e = w.b.ipcm.listen(TCP, any6, 0).unwrap();
    let p = w.b.ipcm.listen_addr(e).unwrap().port();
    assert!((32768..=60999).contains(&p));
}

// The host's CM refuses a service ID another of its users holds: the listener goes with
// ListenError.
#[test]
fn listen_error_when_the_cm_refuses() {
    let mut w = World::new(55);
    w.b.cm
        .listen(
            ipoib_wire::private_data::service_id::ip_cm_service_id(TCP, PORT),
            u64::MAX,
        )
        .unwrap();
    let l = w.listen_b(TCP, b_ip(false), PORT);
    assert_eq!(w.b.events, [IpCmEvent::ListenError { listen: l }]);
    assert_eq!(w.b.ipcm.listeners(), 0);
}

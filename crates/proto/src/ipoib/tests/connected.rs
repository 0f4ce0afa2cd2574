//! Connected mode (RFC 4755) decisions the host's CM only carries out, with the CM's events
//! played by hand: which flags received make us connect (§3.1), which of two crossing REQs is
//! accepted (§3.3), which receive MTUs we take (§5, §5.1); and against arbitrary input: CM
//! events, connection messages, send failures and mode switches in any order, with any
//! contents, never panic, keep the tables bounded, and leave nothing behind once every
//! connection's TimeWait has ended.

use super::*;
use crate::cm::{CmEvent, ConnId, ListenId, QpProgram};
use crate::ipoib::connected::crossing_accepts;
use crate::ipoib::{CmCommand, ConnState, ConnectedConfig, Mode};
use crate::mad_agent::MadAddr;
use ipoib_wire::cm::{CmPath, RejReason, ReqMsg, ReqRepr, TransportServiceType};
use ipoib_wire::ipoib::{ArpOperation, ArpPacket, ArpRepr, HwAddr, HwAddrFlags};
use ipoib_wire::private_data::ipoib_cm::IpoibCmPrivateDataRepr;
use ipoib_wire::private_data::service_id::{ipoib_cm_service_id, ipoib_cm_service_id_rfc};
use proptest::prelude::*;
use std::collections::BTreeMap;

fn req(service_id: u64, gid: Gid, private: &[u8], transport: u8) -> ReqRepr {
    let bytes = [0u8; 232];
    let mut r = ReqRepr::parse(&ReqMsg::new_unchecked(&bytes[..])).expect("a zero REQ parses");
    r.service_id = service_id;
    r.transport_service_type = TransportServiceType::from(transport & 3);
    r.primary_path = CmPath {
        local_port_gid: gid,
        ..CmPath::default()
    };
    let n = private.len().min(r.private_data.len());
    r.private_data[..n].copy_from_slice(&private[..n]);
    r
}

fn program(local: u32, remote: u32) -> QpProgram {
    QpProgram {
        transport: TransportServiceType::Rc,
        local_qpn: local,
        remote_qpn: remote,
        path: CmPath::default(),
        pkey: PKey(0xffff),
        mtu: Mtu::Mtu2048,
        rq_psn: 0,
        sq_psn: 0,
        retry_count: 0,
        rnr_retry_count: 0,
        max_rd_atomic: 0,
        max_dest_rd_atomic: 0,
    }
}

/// IPoIB-CM private data: a UD QPN and a receive MTU (RFC 4755 §6).
fn pd(ud_qpn: u32, receive_mtu: u32) -> Vec<u8> {
    let r = IpoibCmPrivateDataRepr {
        ud_qpn,
        receive_mtu,
    };
    let mut v = vec![0u8; r.buffer_len()];
    r.emit(&mut v).expect("room");
    v
}

/// Host `to` receives, on its UD QP, an ARP request from host `from` for its address whose
/// sender link-layer address carries `flags`.
fn arp_with_flags(net: &mut Net, from: u16, to: u16, flags: u8) {
    let a = ArpRepr {
        operation: ArpOperation::Request,
        sender_hw: HwAddr::new(HwAddrFlags(flags), qpn(from), net.iface(from).gid()),
        sender_ip: v4(from),
        target_hw: HwAddr::default(),
        target_ip: v4(to),
    };
    let mut data = vec![0x08, 0x06, 0, 0];
    data.resize(4 + a.buffer_len(), 0);
    a.emit(&mut ArpPacket::new_unchecked(&mut data[4..]));
    let (now, qkey) = (net.now, net.host(to).qkey);
    net.iface(to).handle_datagram(
        now,
        UdReceived {
            src_qpn: qpn(from),
            slid: from,
            sl: 0,
            grh: None,
            pkey: PKey(0xffff),
            qkey,
            data,
        },
    );
    net.settle();
}

/// Host `lid`'s CM commands so far.
fn commands(net: &mut Net, lid: u16) -> Vec<CmCommand> {
    std::iter::from_fn(|| net.iface(lid).poll_cm_command()).collect()
}

/// `lid` sends a datagram to `peer`, resolves it and, in connected mode with a flag both share,
/// asks for a REQ: answered as the host would, with connection 1. Returns the REQ's parameters.
fn connecting(net: &mut Net, lid: u16, peer: u16) -> crate::cm::ConnectParams {
    net.send(lid, &udp4(v4(lid), v4(peer), &[1; 100]));
    net.run_for(Duration::from_secs(1));
    let Some(CmCommand::Connect { peer: hw, params }) = commands(net, lid).pop() else {
        panic!("no REQ from {lid}");
    };
    let now = net.now;
    net.iface(lid).cm_connect_started(now, hw, Some(ConnId(1)));
    params
}

/// `conn` requested by host `from` (RC, its private data with `receive_mtu`), to host `to`.
fn request_from(net: &mut Net, from: u16, to: u16, conn: u32, receive_mtu: u32) {
    let r = req(
        ipoib_cm_service_id(qpn(to)),
        net.iface(from).gid(),
        &pd(qpn(from), receive_mtu),
        0, // RC (IBA 1 §12.6 Table 106: Transport Service Type 0)
    );
    let now = net.now;
    net.iface(to).handle_cm_event(
        now,
        &CmEvent::ConnectRequest {
            conn: ConnId(conn),
            listen: ListenId(1),
            req: r,
            from: MadAddr::gsi(from),
        },
    );
}

// RFC 4755 §3.1: reserved flag bits received are ignored (RC plus reserved bits is RC, reserved
// bits alone are nothing); an implementation without connected mode ignores the flags; §3.1
// (NOT REQUIRED to connect): we connect only in connected mode and with a flag both sides have.
#[test]
fn received_flags_decide_whether_we_connect() {
    let rc = |c: &mut InterfaceConfig| c.connected = Some(ConnectedConfig::rc());
    let uc = |c: &mut InterfaceConfig| {
        let mut cc = ConnectedConfig::rc();
        (cc.rc, cc.uc) = (false, true);
        c.connected = Some(cc);
    };
    let datagram = |c: &mut InterfaceConfig| {
        let mut cc = ConnectedConfig::rc();
        cc.mode = Mode::Datagram;
        c.connected = Some(cc);
    };
    let none = |c: &mut InterfaceConfig| c.connected = None;
    type Configure = fn(&mut InterfaceConfig);
    let cases: [(&str, Configure, u8, u8, Option<TransportServiceType>); 6] = [
        (
            "RC and reserved bits",
            rc,
            0xbf,
            0x80,
            Some(TransportServiceType::Rc),
        ),
        ("reserved bits only", rc, 0x3f, 0x00, None),
        ("UC to an RC-only host", rc, 0x40, 0x40, None),
        ("datagram mode", datagram, 0x80, 0x80, None),
        ("no connected mode", none, 0xc1, 0xc0, None),
        (
            "UC and reserved bits",
            uc,
            0xc1,
            0xc0,
            Some(TransportServiceType::Uc),
        ),
    ];
    for (name, configure, sent, kept, connects) in cases {
        // Host 2 under test; host 3, datagram-only, the peer whose ARP claims `sent`.
        let mut net = Net::with(2, |lid, c| {
            if lid == 2 {
                configure(c);
            }
        });
        net.up();
        arp_with_flags(&mut net, 3, 2, sent);
        let n = net.iface(2).neighbours();
        let hw = n
            .iter()
            .find(|e| e.ip == IpAddr::V4(v4(3)))
            .and_then(|e| e.hw);
        assert_eq!(hw.map(|h| h.flags), Some(HwAddrFlags(kept)), "{name}");
        let datagram = udp4(v4(2), v4(3), &[7; 100]);
        net.send(2, &datagram);
        net.run_for(Duration::from_secs(1));
        let transport = commands(&mut net, 2).into_iter().find_map(|c| match c {
            CmCommand::Connect { params, .. } => Some(params.transport),
            _ => None,
        });
        assert_eq!(transport, connects, "{name}");
        let over_ud = net.host(3).delivered.contains(&datagram);
        assert_eq!(over_ud, connects.is_none(), "{name}: sent over UD");
    }
}

// RFC 4755 §3.3 note: the link-layer addresses are compared with the flags zeroed, from the
// most significant octet (flags, QPN, GID) to the least.
#[test]
fn crossing_compares_addresses_without_flags() {
    let gid = |low: u64| Gid::new(Gid::DEFAULT_SUBNET_PREFIX, low);
    let a = |flags: u8, qpn: u32, low: u64| HwAddr::new(HwAddrFlags(flags), qpn, gid(low));
    // Only the flags would make the local address the larger one.
    assert!(crossing_accepts(&a(0xc0, 0x100, 9), &a(0x40, 0x200, 9)));
    assert!(!crossing_accepts(&a(0x40, 0x200, 9), &a(0xc0, 0x100, 9)));
    // Differing only in flags: equal, so neither side accepts (a side cannot cross itself).
    assert!(!crossing_accepts(&a(0x80, 0x100, 9), &a(0x40, 0x100, 9)));
    assert!(!crossing_accepts(&a(0x40, 0x100, 9), &a(0x80, 0x100, 9)));
    // The QPN's octets come before the GID's.
    assert!(crossing_accepts(
        &a(0, 0x01_0000, 0xff),
        &a(0, 0x02_0000, 0x00)
    ));
    // The GID decides between equal QPNs, most significant octet first.
    assert!(crossing_accepts(&a(0, 0x100, 0x00ff), &a(0, 0x100, 0x0100)));
    assert!(!crossing_accepts(
        &a(0, 0x100, 0x0100),
        &a(0, 0x100, 0x00ff)
    ));
}

// RFC 4755 §3.3 on the interface: REQs cross between host 2 (RC and UC: flags 0xC0, QPN 0x4A)
// and host 3 (RC: 0x80, QPN 0x4B). With the flags zeroed host 2 is the smaller and accepts;
// with them, it would be the larger. Host 3 rejects with Consumer Reject (28) and its UD QPN
// and receive MTU in the REJ (§3.2).
#[test]
fn crossing_reqs_the_smaller_address_without_flags_accepts() {
    let mut net = Net::with(2, |lid, c| {
        let mut cc = ConnectedConfig::rc();
        cc.uc = lid == 2;
        c.connected = Some(cc);
    });
    net.up();
    assert_eq!(net.iface(2).hw_addr().flags.0, 0xc0);
    assert_eq!(net.iface(3).hw_addr().flags.0, 0x80);
    for (me, peer) in [(2, 3), (3, 2)] {
        connecting(&mut net, me, peer);
        request_from(&mut net, peer, me, 7, 65524);
    }
    assert_eq!(
        commands(&mut net, 2),
        vec![CmCommand::Accept {
            conn: ConnId(7),
            private_data: pd(qpn(2), 65524)
        }]
    );
    assert_eq!(
        commands(&mut net, 3),
        vec![CmCommand::Reject {
            conn: ConnId(7),
            reason: RejReason::ConsumerDefined,
            private_data: pd(qpn(3), 65524)
        }]
    );
}

// RFC 4755 §5: the link MTU must carry the protocols' minimum, IPv6's 1280 octets. Our own
// receive MTU is at least 2048 (link MTU 2044); a peer's below 1284 (1280 and the 4-octet
// header) is refused, the REQ rejected with our private data, the REP's connection released and
// its queue sent over UD. §5.1: smaller receive MTUs down to
// that are taken.
#[test]
fn receive_mtus_below_the_ipv6_minimum_are_refused() {
    let mut net = Net::with(2, |_, c| {
        let mut cc = ConnectedConfig::rc();
        cc.receive_mtu = 100;
        c.connected = Some(cc);
    });
    net.up();
    let cfg = net.iface(2).config().connected.expect("connected");
    assert_eq!(cfg.receive_mtu, ConnectedConfig::MIN_RECEIVE_MTU);
    assert_eq!(net.iface(2).mtu(), 2044);
    assert_eq!(net.iface(2).cm_private_data(), pd(qpn(2), 2048));
    // Passive: a REQ offering 1283 is rejected, one offering 1284 accepted.
    request_from(&mut net, 3, 2, 7, 1283);
    request_from(&mut net, 3, 2, 8, 1284);
    assert_eq!(
        commands(&mut net, 2),
        vec![
            CmCommand::Reject {
                conn: ConnId(7),
                reason: RejReason::ConsumerDefined,
                private_data: pd(qpn(2), 2048)
            },
            CmCommand::Accept {
                conn: ConnId(8),
                private_data: pd(qpn(2), 2048)
            },
        ]
    );
    let conns = net.iface(2).connections();
    assert_eq!(conns.len(), 1);
    assert_eq!((conns[0].conn, conns[0].mtu), (ConnId(8), 1280));
    // Active: the REP offers 1000, or no private data at all. The connection is released and
    // the datagram that waited for it goes over UD.
    for (k, rep) in [(1u8, pd(qpn(3), 1000)), (2, Vec::new())] {
        let mut net = Net::with(2, |_, c| c.connected = Some(ConnectedConfig::rc()));
        net.up();
        connecting(&mut net, 2, 3);
        let now = net.now;
        let qp = program(qpn(2) + 100, qpn(3) + 100);
        net.iface(2).handle_cm_event(
            now,
            &CmEvent::Established {
                conn: ConnId(1),
                qp,
                private_data: rep,
            },
        );
        assert_eq!(
            commands(&mut net, 2),
            vec![CmCommand::Disconnect { conn: ConnId(1) }],
            "REP {k}"
        );
        assert_eq!(net.iface(2).poll_conn_transmit(), None, "REP {k}");
        net.settle();
        let datagram = udp4(v4(2), v4(3), &[1; 100]);
        assert!(
            net.host(3).delivered.contains(&datagram),
            "REP {k}: over UD"
        );
    }
}

// `ConnectedConfig::max_peers` bounds the peers with connection state; a peer whose attempt
// failed is kept for its `retry_after` only. Kept for good (until we sent to it again), such
// peers filled the table, and every new peer was then reached over UD for good.
#[test]
fn failed_peers_do_not_fill_the_peer_table() {
    let mut net = Net::with(3, |_, c| {
        let mut cc = ConnectedConfig::rc();
        cc.max_peers = 1;
        c.connected = Some(cc);
    });
    net.up();
    connecting(&mut net, 2, 3);
    let now = net.now;
    let events = [
        CmEvent::Rejected {
            conn: ConnId(1),
            reason: RejReason::ConsumerDefined,
            ari: Vec::new(),
            private_data: Vec::new(),
        },
        CmEvent::TimeWaitExit {
            conn: ConnId(1),
            qpn: 0,
        },
    ];
    for e in &events {
        net.iface(2).handle_cm_event(now, e);
    }
    net.settle();
    assert!(
        net.host(3)
            .delivered
            .contains(&udp4(v4(2), v4(3), &[1; 100])),
        "the queued datagram went over UD"
    );
    // Within host 3's retry_after a new peer still finds the table full: UD.
    net.send(2, &udp4(v4(2), v4(4), &[2; 100]));
    net.run_for(Duration::from_millis(500));
    assert!(commands(&mut net, 2).is_empty());
    // Past it, host 3's entry makes room.
    net.run_for(Duration::from_secs(1));
    net.send(2, &udp4(v4(2), v4(4), &[3; 100]));
    net.run_for(Duration::from_millis(100));
    let cmds = commands(&mut net, 2);
    assert!(
        matches!(cmds.as_slice(), [CmCommand::Connect { peer, .. }] if peer.gid == net.iface(4).gid()),
        "{cmds:?}"
    );
}

// RFC 4755 §3.2: the receiver MAY refuse another connection from a peer. REQs from one
// address, each with its own communication ID (and QP), are accepted up to
// `MAX_ACCEPTED_PER_PEER` at once and rejected with "no resources" beyond, with our private data;
// one released makes room again. (Every such REQ used to be accepted: a QP each, without bound.)
#[test]
fn reqs_from_one_peer_are_accepted_up_to_a_bound() {
    let mut net = Net::with(2, |_, c| c.connected = Some(ConnectedConfig::rc()));
    net.up();
    let max = ConnectedConfig::MAX_ACCEPTED_PER_PEER as u32;
    for conn in 1..=max + 2 {
        request_from(&mut net, 3, 2, conn, 65524);
    }
    let cmds = commands(&mut net, 2);
    let accepted = |c: &[CmCommand]| -> Vec<u32> {
        c.iter()
            .filter_map(|c| match c {
                CmCommand::Accept { conn, .. } => Some(conn.0),
                _ => None,
            })
            .collect()
    };
    assert_eq!(accepted(&cmds), (1..=max).collect::<Vec<_>>());
    let rejected: Vec<(u32, RejReason, Vec<u8>)> = cmds
        .iter()
        .filter_map(|c| match c {
            CmCommand::Reject {
                conn,
                reason,
                private_data,
            } => Some((conn.0, *reason, private_data.clone())),
            _ => None,
        })
        .collect();
    let nores = |c: u32| (c, RejReason::NoResources, pd(qpn(2), 65524));
    assert_eq!(rejected, vec![nores(max + 1), nores(max + 2)]);
    assert_eq!(net.iface(2).connections().len(), max as usize);
    // One of them fails: the next REQ is taken.
    let now = net.now;
    net.iface(2).handle_cm_event(
        now,
        &CmEvent::TimedOut {
            conn: ConnId(1),
            unanswered: crate::cm::Unanswered::Rep,
        },
    );
    request_from(&mut net, 3, 2, max + 3, 65524);
    assert_eq!(accepted(&commands(&mut net, 2)), vec![max + 3]);
}

// RFC 4755 §3.3 and §7: we won a crossing and wait for the connection we accepted; the peer
// releases it with a DREQ before it is established (the CM reports Disconnected, not a
// failure). The datagram that waited for it goes over UD instead of staying queued until the
// next one to that peer.
#[test]
fn accepted_crossing_connection_released_before_it_is_up_sends_the_queue_over_ud() {
    let mut net = Net::with(2, |_, c| c.connected = Some(ConnectedConfig::rc()));
    net.up();
    assert!(crossing_accepts(
        &net.iface(2).hw_addr(),
        &net.iface(3).hw_addr()
    ));
    connecting(&mut net, 2, 3);
    request_from(&mut net, 3, 2, 7, 65524);
    assert!(matches!(
        commands(&mut net, 2).as_slice(),
        [CmCommand::Accept {
            conn: ConnId(7),
            ..
        }]
    ));
    let now = net.now;
    let events = [
        CmEvent::Rejected {
            conn: ConnId(1),
            reason: RejReason::ConsumerDefined,
            ari: Vec::new(),
            private_data: Vec::new(),
        },
        CmEvent::Disconnected {
            conn: ConnId(7),
            by_peer: true,
            private_data: Vec::new(),
        },
    ];
    for e in &events {
        net.iface(2).handle_cm_event(now, e);
    }
    net.settle();
    assert!(
        net.host(3)
            .delivered
            .contains(&udp4(v4(2), v4(3), &[1; 100])),
        "the queued datagram went over UD"
    );
}

#[derive(Debug, Clone)]
enum Op {
    Request {
        conn: u8,
        sid: u8,
        peer: u8,
        private: Vec<u8>,
        transport: u8,
    },
    Established {
        conn: u8,
        private: Vec<u8>,
    },
    Rejected {
        conn: u8,
        reason: u8,
    },
    TimedOut {
        conn: u8,
    },
    Disconnected {
        conn: u8,
    },
    TimeWaitExit {
        conn: u8,
    },
    Received {
        conn: u8,
        data: Vec<u8>,
    },
    SendFailed {
        conn: u8,
    },
    Send {
        len: u16,
    },
    Mode(bool),
    Wait(u16),
}

fn op() -> impl Strategy<Value = Op> {
    let conn = 0u8..8;
    let bytes = proptest::collection::vec(any::<u8>(), 0..16);
    // Mostly well-formed IPoIB-CM private data from two UD QPNs, so that REQs from one peer
    // repeat; otherwise any bytes.
    let private = prop_oneof![
        (0u32..2, 1000u32..70_000).prop_map(|(q, mtu)| pd(0x50 + q, mtu)),
        bytes.clone(),
    ];
    prop_oneof![
        (conn.clone(), 0u8..4, 0u8..3, private, any::<u8>()).prop_map(
            |(conn, sid, peer, private, transport)| Op::Request {
                conn,
                sid,
                peer,
                private,
                transport
            }
        ),
        (conn.clone(), bytes.clone()).prop_map(|(conn, private)| Op::Established { conn, private }),
        (conn.clone(), any::<u8>()).prop_map(|(conn, reason)| Op::Rejected { conn, reason }),
        conn.clone().prop_map(|conn| Op::TimedOut { conn }),
        conn.clone().prop_map(|conn| Op::Disconnected { conn }),
        conn.clone().prop_map(|conn| Op::TimeWaitExit { conn }),
        (conn.clone(), proptest::collection::vec(any::<u8>(), 0..64))
            .prop_map(|(conn, data)| Op::Received { conn, data }),
        conn.prop_map(|conn| Op::SendFailed { conn }),
        (0u16..4000).prop_map(|len| Op::Send { len }),
        any::<bool>().prop_map(Op::Mode),
        (0u16..3000).prop_map(Op::Wait),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    // RFC 4755 §3.2, §3.3, §6 against input no peer should send.
    #[test]
    fn arbitrary_cm_input_never_panics_or_leaks(ops in proptest::collection::vec(op(), 1..40)) {
        let mut net = Net::with(3, |_, c| {
            let mut cc = ConnectedConfig::rc();
            cc.idle_timeout = Duration::from_secs(5);
            cc.max_peers = 4;
            c.connected = Some(cc);
        });
        net.up();
        let me = net.hosts[0].lid;
        let my_qpn = qpn(me);
        let peer_gid = |p: u8| Gid::new(Gid::DEFAULT_SUBNET_PREFIX, 0x1000 + u64::from(p));
        // Connections the interface started (by the host's answer) get IDs 100 + n.
        let mut started = 0u32;
        let mut known: BTreeSet<ConnId> = BTreeSet::new();
        for op in ops {
            let now = net.now;
            let i = net.iface(me);
            let id = |c: u8| ConnId(u32::from(c));
            match op {
                Op::Request { conn, sid, peer, private, transport } => {
                    let sid = match sid {
                        0 => ipoib_cm_service_id(my_qpn),
                        1 => ipoib_cm_service_id_rfc(my_qpn),
                        2 => ipoib_cm_service_id(my_qpn + 1),
                        _ => 0x1234,
                    };
                    let r = req(sid, peer_gid(peer), &private, transport);
                    known.insert(id(conn));
                    i.handle_cm_event(now, &CmEvent::ConnectRequest {
                        conn: id(conn), listen: crate::cm::ListenId(1), req: r,
                        from: crate::mad_agent::MadAddr::gsi(9),
                    });
                }
                Op::Established { conn, private } => i.handle_cm_event(now, &CmEvent::Established {
                    conn: id(conn), qp: program(1, 2), private_data: private,
                }),
                Op::Rejected { conn, reason } => i.handle_cm_event(now, &CmEvent::Rejected {
                    conn: id(conn), reason: RejReason::from(u16::from(reason)), ari: Vec::new(),
                    private_data: Vec::new(),
                }),
                Op::TimedOut { conn } => i.handle_cm_event(now, &CmEvent::TimedOut {
                    conn: id(conn), unanswered: crate::cm::Unanswered::Req,
                }),
                Op::Disconnected { conn } => i.handle_cm_event(now, &CmEvent::Disconnected {
                    conn: id(conn), by_peer: true, private_data: Vec::new(),
                }),
                Op::TimeWaitExit { conn } => {
                    i.handle_cm_event(now, &CmEvent::TimeWaitExit { conn: id(conn), qpn: 0 })
                }
                Op::Received { conn, data } => i.handle_conn_received(now, id(conn), data.clone()),
                Op::SendFailed { conn } => i.conn_send_failed(now, id(conn)),
                Op::Send { len } => {
                    let dst = v4(net.hosts[1].lid);
                    let p = udp4(v4(me), dst, &vec![0u8; usize::from(len)]);
                    net.send(me, &p);
                }
                Op::Mode(c) => {
                    let m = if c { Mode::Connected } else { Mode::Datagram };
                    i.set_mode(now, m).unwrap();
                }
                Op::Wait(ms) => net.run_for(Duration::from_millis(u64::from(ms))),
            }
            // The host's side: every command answered the way a host would.
            let now = net.now;
            let i = net.iface(me);
            while let Some(c) = i.poll_cm_command() {
                if let CmCommand::Connect { peer, .. } = c {
                    started += 1;
                    let conn = ConnId(100 + started);
                    known.insert(conn);
                    i.cm_connect_started(now, peer, Some(conn));
                }
            }
            while i.poll_conn_transmit().is_some() {}
            // The bounds: peers (max_peers 4) and connections accepted from each peer.
            prop_assert!(i.cm_peer_count() <= 4, "{} peers", i.cm_peer_count());
            let mut accepted: BTreeMap<(u32, Gid), usize> = BTreeMap::new();
            for c in i.connections() {
                if !c.active && c.state != ConnState::Closing {
                    *accepted.entry((c.peer.qpn & 0xff_ffff, c.peer.gid)).or_default() += 1;
                }
            }
            prop_assert!(
                accepted.values().all(|&n| n <= ConnectedConfig::MAX_ACCEPTED_PER_PEER),
                "{accepted:?}"
            );
        }
        // Every connection ends: released, then out of TimeWait.
        let now = net.now;
        let i = net.iface(me);
        for c in &known {
            i.handle_cm_event(now, &CmEvent::Disconnected {
                conn: *c, by_peer: true, private_data: Vec::new(),
            });
            i.handle_cm_event(now, &CmEvent::TimeWaitExit { conn: *c, qpn: 0 });
        }
        while i.poll_cm_command().is_some() {}
        prop_assert!(i.connections().is_empty(), "{:?}", i.connections());
    }
}

// Bounded state against a hostile peer: one GID naming ever new UD QPNs in its REQs' private data
// holds at most MAX_PEERS_PER_GID peers; the rest are refused with REJ 3 (no resources), which
// RFC 4755 §3.2 lets a receiver answer, and carry our UD QPN (§3.2).
#[test]
fn one_gid_cannot_fill_the_peer_table() {
    let mut net = Net::with(2, |_, c| c.connected = Some(ConnectedConfig::rc()));
    net.up();
    let max = ConnectedConfig::MAX_PEERS_PER_GID as u32;
    let gid = net.iface(3).gid();
    for k in 0..max + 3 {
        let r = req(ipoib_cm_service_id(qpn(2)), gid, &pd(0x1000 + k, 65524), 0);
        let now = net.now;
        net.iface(2).handle_cm_event(
            now,
            &CmEvent::ConnectRequest {
                conn: ConnId(100 + k),
                listen: ListenId(1),
                req: r,
                from: MadAddr::gsi(3),
            },
        );
    }
    let cmds = commands(&mut net, 2);
    let accepts = cmds
        .iter()
        .filter(|c| matches!(c, CmCommand::Accept { .. }))
        .count();
    let rejects: Vec<_> = cmds
        .iter()
        .filter_map(|c| match c {
            CmCommand::Reject {
                reason,
                private_data,
                ..
            } => Some((*reason, private_data.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(accepts, max as usize);
    assert_eq!(rejects.len(), 3);
    assert!(rejects
        .iter()
        .all(|(r, d)| *r == RejReason::NoResources && *d == pd(qpn(2), 65524)));
}

//! Connected mode (RFC 4755) against arbitrary input: CM events, connection messages, send
//! failures and mode switches in any order, with any contents, never panic, keep the tables
//! bounded, and leave nothing behind once every connection's TimeWait has ended.

use super::*;
use crate::cm::{CmEvent, ConnId, QpProgram};
use crate::ipoib::{CmCommand, ConnectedConfig, Mode};
use ipoib_wire::cm::{CmPath, RejReason, ReqMsg, ReqRepr, TransportServiceType};
use ipoib_wire::private_data::service_id::{ipoib_cm_service_id, ipoib_cm_service_id_rfc};
use proptest::prelude::*;

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
    prop_oneof![
        (conn.clone(), 0u8..4, 0u8..3, bytes.clone(), any::<u8>()).prop_map(
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
                Op::Received { conn, data } => i.handle_conn_received(now, id(conn), &data),
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
            prop_assert!(i.connections().len() <= known.len());
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

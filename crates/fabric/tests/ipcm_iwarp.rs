//! iWarp-emulated streams end to end on the emulated subnet ("Mapping of iWarp/TCP connections to
//! InfiniBand", v0.30, cited as "iWarp mapping"): two hosts running IPoIB and the IP CM service
//! ([`ipoib_fabric::node::ipcm`]) connect on the iWarp service ID over IPv4 and IPv6 with FlowC 0
//! (SDP's BSDH and credits) and FlowC 1 (the ULP's messages), carry 1 MiB each way through the
//! streams with the bytes checked in order, also with 10% loss, duplication and reordering on
//! every link (RC retransmits them, IBA 1 §9.7.5, with the service's retry count 7), and release
//! the connection with every QP destroyed after TimeWait.

use ipoib_fabric::hw::link::Fault;
use ipoib_fabric::hw::topology::Topology;
use ipoib_fabric::hw::verbs::WcStatus;
use ipoib_fabric::node::ipcm::{AcceptPolicy, IpCmAppError, IwarpFailure};
use ipoib_fabric::testing::ipcm::{ipcm_net, IpCmNet};
use ipoib_fabric::testing::{seed, v4, v6, SeedGuard};
use ipoib_proto::ipcm::{IpCmEvent, IpConnId, IwarpConnect, IwarpServiceId};
use ipoib_proto::iwarp::{SendError, StreamConfig};
use ipoib_wire::private_data::FlowControl;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

const PORT: u16 = 5201;
const SERVER: usize = 1;
const CLIENT: usize = 2;
/// Bytes each way.
const LEN: usize = 1 << 20;

fn lossy(n: &mut IpCmNet) {
    let faults = vec![
        Fault::Drop(0.10),
        Fault::Duplicate(0.10),
        Fault::Reorder {
            p: 0.10,
            delay: Duration::from_micros(3),
        },
    ];
    for l in n.net.built().links.clone() {
        n.net.sim_mut().set_faults(l, None, faults.clone());
    }
}

/// When the links turn lossy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Faults {
    None,
    /// Once the connection is up: the stream's traffic only.
    AfterUp,
    /// Before the connect: address resolution and the CM exchange too, which may fail.
    FromStart,
}

/// A pattern that tells positions and directions apart.
fn pattern(salt: u64) -> Vec<u8> {
    (0..LEN as u64)
        .map(|i| (i.wrapping_mul(0x9e37_79b9).wrapping_add(salt) >> 7) as u8)
        .collect()
}

/// One side of the transfer: what it still has to send and what it received.
struct Side {
    host: usize,
    conn: IpConnId,
    out: Vec<u8>,
    sent: usize,
    got: Vec<u8>,
    /// FlowC 1 messages received, none longer than the receiver's buffers.
    messages: usize,
}

impl Side {
    fn push(&mut self, n: &mut IpCmNet, fc: FlowControl) {
        let (conn, out) = (self.conn, &self.out);
        let mut sent = self.sent;
        n.with_app(self.host, |a, _| loop {
            if sent == out.len() {
                break;
            }
            let max = match fc {
                FlowControl::Transport => out.len(),
                _ => a.stream(conn).expect("a stream").peer_recv_size() as usize,
            };
            let end = (sent + max).min(out.len());
            match a.stream_send(conn, &out[sent..end]) {
                Ok(k) => sent += k,
                Err(IpCmAppError::Send(SendError::Full)) => break,
                Err(e) => panic!("host {}: send: {e}", self.host),
            }
        });
        self.sent = sent;
    }

    fn pull(&mut self, n: &mut IpCmNet, fc: FlowControl) {
        let conn = self.conn;
        let (got, messages) = (&mut self.got, &mut self.messages);
        n.with_app(self.host, |a, _| {
            let size = a.stream(conn).expect("a stream").recv_size() as usize;
            match fc {
                FlowControl::Transport => {
                    let mut buf = vec![0; 50_000];
                    loop {
                        let k = a.stream_recv(conn, &mut buf);
                        if k == 0 {
                            break;
                        }
                        got.extend_from_slice(&buf[..k]);
                    }
                }
                _ => {
                    while let Some(m) = a.stream_recv_message(conn) {
                        assert!(m.len() <= size, "a message fits the receive buffer");
                        *messages += 1;
                        got.extend_from_slice(&m);
                    }
                }
            }
        });
    }
}

/// iWarp mapping §II and FlowC: a client connects to the server's iWarp listener, both streams
/// come up with the mode asked for, 1 MiB crosses each way in order through the streams (with
/// `faults`, through RC's retransmissions), and a disconnect leaves no QP on either host.
fn transfer(v6_family: bool, fc: FlowControl, faults: Faults, s: u64) {
    let _g = SeedGuard(s);
    let mut n = ipcm_net(Topology::single_switch(3).unwrap(), s, false, |_, c| {
        c.accept = AcceptPolicy::Auto(Vec::new());
    });
    let (addr, any): (fn(&_, usize) -> IpAddr, IpAddr) = if v6_family {
        (v6, IpAddr::V6(Ipv6Addr::UNSPECIFIED))
    } else {
        (v4, IpAddr::V4(Ipv4Addr::UNSPECIFIED))
    };
    let dst = SocketAddr::new(addr(&n.net, SERVER), PORT);
    let client_ip = addr(&n.net, CLIENT);
    n.with_app(SERVER, |a, _| {
        a.iwarp_listen(any, PORT, StreamConfig::new(), IwarpServiceId::Iwarp)
    })
    .unwrap();
    if faults == Faults::FromStart {
        lossy(&mut n);
    }
    let conn = n
        .with_app(CLIENT, |a, now| {
            a.iwarp_connect(now, dst, None, &IwarpConnect::new(fc), b"iw")
        })
        .unwrap();
    let up = n.run_until(Duration::from_secs(10), |v| {
        let up = |i: usize| {
            v.app(i)
                .events()
                .any(|(_, e)| matches!(e, IpCmEvent::Established { .. }))
        };
        up(SERVER) && up(CLIENT)
    });
    if !up && faults == Faults::FromStart {
        // The attempt ends in a clear event, and leaves nothing behind.
        let ev = n.events_of(CLIENT, conn);
        assert!(
            ev.iter().any(|e| matches!(
                e,
                IpCmEvent::AddressError { .. }
                    | IpCmEvent::RouteError { .. }
                    | IpCmEvent::Rejected { .. }
                    | IpCmEvent::Unreachable { .. }
                    | IpCmEvent::ConnectError { .. }
            )),
            "a clear event: {ev:?}"
        );
        n.run_for(Duration::from_secs(30));
        for i in [SERVER, CLIENT] {
            assert_eq!(n.rc_qps(i), 0, "host {i}: no RC QP left on the HCA");
        }
        return;
    }
    assert!(
        up,
        "both sides up: {:?} {:?}",
        n.app(CLIENT).events().collect::<Vec<_>>(),
        n.app(SERVER).events().collect::<Vec<_>>()
    );
    let sconn = n
        .app(SERVER)
        .events()
        .find_map(|(_, e)| match e {
            IpCmEvent::ConnectRequest {
                conn,
                src,
                protocol,
                ..
            } => {
                assert_eq!((src.ip(), *protocol), (client_ip, 6));
                Some(*conn)
            }
            _ => None,
        })
        .expect("the server heard the request");
    for (i, c) in [(CLIENT, conn), (SERVER, sconn)] {
        let st = n.app(i).stream(c).expect("a stream");
        assert!(st.is_established(), "host {i}");
        assert_eq!(st.flow_control(), fc, "host {i}");
    }

    if faults == Faults::AfterUp {
        lossy(&mut n);
    }
    let mut sides = [
        Side {
            host: CLIENT,
            conn,
            out: pattern(1),
            sent: 0,
            got: Vec::new(),
            messages: 0,
        },
        Side {
            host: SERVER,
            conn: sconn,
            out: pattern(2),
            sent: 0,
            got: Vec::new(),
            messages: 0,
        },
    ];
    let deadline = n.net.sim().now() + Duration::from_secs(120);
    while sides.iter().any(|x| x.got.len() < LEN) && n.net.sim().now() < deadline {
        for x in sides.iter_mut() {
            x.push(&mut n, fc);
        }
        n.run_for(Duration::from_micros(200));
        for x in sides.iter_mut() {
            x.pull(&mut n, fc);
            let f = n.app(x.host).stream_failure(x.conn);
            assert!(f.is_none(), "host {}: the stream failed: {f:?}", x.host);
        }
    }
    // Each side received what the other sent, in order, nothing more.
    assert!(
        sides[1].got == sides[0].out,
        "client to server: {} bytes",
        sides[1].got.len()
    );
    assert!(
        sides[0].got == sides[1].out,
        "server to client: {} bytes",
        sides[0].got.len()
    );
    if fc == FlowControl::Ulp {
        // 32 KiB messages: the message boundaries survive.
        for x in &sides {
            assert_eq!(x.messages, LEN / (32 * 1024), "host {}", x.host);
        }
    }

    n.with_app(CLIENT, |a, _| a.disconnect(conn)).unwrap();
    // Lost DREQs and DREPs are resent after the CM's answer wait (IBA 1 §12.7).
    let down = n.run_until(Duration::from_secs(120), |v| {
        let gone = |i: usize, c: IpConnId| {
            v.app(i)
                .events()
                .any(|(_, e)| matches!(e, IpCmEvent::Disconnected { conn: x, .. } if *x == c))
        };
        gone(CLIENT, conn) && gone(SERVER, sconn)
    });
    assert!(
        down,
        "both sides disconnected: {:?} {:?}",
        n.events_of(CLIENT, conn),
        n.events_of(SERVER, sconn)
    );
    n.run_for(Duration::from_secs(30));
    for i in [SERVER, CLIENT] {
        let c = n.app(i).counters();
        assert_eq!(n.app(i).qp_count(), 0, "host {i}: {c:?}");
        assert_eq!(c.qps_created, 1, "host {i}");
        assert_eq!(c.qps_destroyed, 1, "host {i}");
        assert_eq!(
            (c.qp_errors, c.cm_errors, c.recv_errors),
            (0, 0, 0),
            "host {i}"
        );
        assert_eq!(c.iwarp_failures, 0, "host {i}");
        assert_eq!(n.rc_qps(i), 0, "host {i}: no RC QP left on the HCA");
        assert_eq!(n.app(i).service().connections(), 0, "host {i}");
    }
    // The streams are gone with their QPs (everything was read).
    assert!(n.app(CLIENT).stream(conn).is_none());
    assert!(n.app(SERVER).stream(sconn).is_none());
}

#[test]
fn ipv4_flowc0_1mib_each_way() {
    transfer(false, FlowControl::Transport, Faults::None, seed(41));
}

#[test]
fn ipv6_flowc0_1mib_each_way() {
    transfer(true, FlowControl::Transport, Faults::None, seed(42));
}

#[test]
fn ipv4_flowc1_1mib_each_way() {
    transfer(false, FlowControl::Ulp, Faults::None, seed(43));
}

#[test]
fn ipv6_flowc1_1mib_each_way() {
    transfer(true, FlowControl::Ulp, Faults::None, seed(44));
}

#[test]
fn ipv4_flowc0_lossy_links() {
    transfer(false, FlowControl::Transport, Faults::AfterUp, seed(45));
}

#[test]
fn ipv6_flowc0_lossy_links() {
    transfer(true, FlowControl::Transport, Faults::AfterUp, seed(46));
}

#[test]
fn ipv4_flowc1_lossy_links() {
    transfer(false, FlowControl::Ulp, Faults::AfterUp, seed(47));
}

#[test]
fn ipv6_flowc1_lossy_links() {
    transfer(true, FlowControl::Ulp, Faults::AfterUp, seed(48));
}

/// Loss from before the connect: either the stream carries everything, or the attempt ends in a
/// clear event (address resolution or the CM gave up) with no QP left.
#[test]
fn lossy_from_the_start_delivers_or_fails_clearly() {
    for (i, v6_family) in [false, true].into_iter().enumerate() {
        let fc = [FlowControl::Transport, FlowControl::Ulp][i];
        transfer(v6_family, fc, Faults::FromStart, seed(49 + i as u64));
    }
}

/// A link that loses everything once the stream is up: the client's SEND exhausts RC's retries
/// (IBA 1 §9.7.5.1.2, retry count 7), the stream reports the completion error, and the client
/// releases the connection (heard as Disconnected) and destroys its QP after TimeWait.
#[test]
fn dead_link_fails_the_stream_clearly() {
    let s = seed(51);
    let _g = SeedGuard(s);
    let mut n = ipcm_net(Topology::single_switch(3).unwrap(), s, false, |_, c| {
        c.accept = AcceptPolicy::Auto(Vec::new());
    });
    let dst = SocketAddr::new(v4(&n.net, SERVER), PORT);
    n.with_app(SERVER, |a, _| {
        let any = IpAddr::V4(Ipv4Addr::UNSPECIFIED);
        a.iwarp_listen(any, PORT, StreamConfig::new(), IwarpServiceId::Iwarp)
    })
    .unwrap();
    let cfg = IwarpConnect::new(FlowControl::Transport);
    let conn = n
        .with_app(CLIENT, |a, now| a.iwarp_connect(now, dst, None, &cfg, b""))
        .unwrap();
    let up = n.run_until(Duration::from_secs(10), |v| {
        v.app(SERVER)
            .events()
            .any(|(_, e)| matches!(e, IpCmEvent::Established { .. }))
            && v.app(CLIENT)
                .events()
                .any(|(_, e)| matches!(e, IpCmEvent::Established { .. }))
    });
    assert!(up);
    for l in n.net.built().links.clone() {
        n.net.sim_mut().set_faults(l, None, vec![Fault::Drop(1.0)]);
    }
    let k = n
        .with_app(CLIENT, |a, _| a.stream_send(conn, &[7; 100_000]))
        .unwrap();
    assert!(k > 0);
    // The DREQ is lost too: the CM gives up after its retries (IBA 1 §12.7) and reports
    // Disconnected all the same.
    let failed = n.run_until(Duration::from_secs(600), |v| {
        v.app(CLIENT)
            .events()
            .any(|(_, e)| matches!(e, IpCmEvent::Disconnected { conn: c, .. } if *c == conn))
    });
    assert!(
        failed,
        "{:?} {:?} {:?} {:?}",
        n.events_of(CLIENT, conn),
        n.app(CLIENT).stream_failure(conn),
        n.app(CLIENT).counters(),
        n.net.sim().now()
    );
    assert_eq!(
        n.app(CLIENT).stream_failure(conn),
        Some(IwarpFailure::Completion(WcStatus::RetryExcErr))
    );
    assert_eq!(n.app(CLIENT).counters().iwarp_failures, 1);
    let late = n.with_app(CLIENT, |a, _| a.stream_send(conn, b"x"));
    assert!(matches!(late, Err(IpCmAppError::Iwarp(_))), "{late:?}");
    n.run_for(Duration::from_secs(60));
    assert_eq!(n.rc_qps(CLIENT), 0, "no RC QP left on the client");
    assert_eq!(n.app(CLIENT).qp_count(), 0);
}

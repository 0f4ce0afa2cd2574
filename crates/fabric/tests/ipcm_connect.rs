//! The RDMA IP CM service end to end on the emulated subnet (IBTA Annex A11): hosts running IPoIB
//! and the service ([`ipoib_fabric::node::ipcm`]) connect by IP address and port over IPv4 and
//! IPv6, the server's consumer hears who connects, messages and RDMA cross the RC connection,
//! and a disconnect releases it with every QP destroyed after TimeWait. A port nobody listens on
//! gives REJ 8 (CA11-8); an address nobody has gives an address error.

use ipoib_fabric::hw::link::Fault;
use ipoib_fabric::hw::topology::Topology;
use ipoib_fabric::hw::verbs::{Access, Completion, WcOpcode, WcStatus};
use ipoib_fabric::node::ipcm::{self, AcceptPolicy};
use ipoib_fabric::testing::ipcm::{ipcm_net, IpCmNet};
use ipoib_fabric::testing::{seed, v4, v6, SeedGuard};
use ipoib_proto::ipcm::{IpCmEvent, IpConnId, RejectAri};
use ipoib_wire::cm::RejReason;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

/// IANA: TCP.
const TCP: u8 = 6;
/// rping's default port.
const PORT: u16 = 7174;
const SERVER: usize = 1;
const CLIENT: usize = 2;

fn net(s: u64) -> IpCmNet {
    ipcm_net(Topology::single_switch(3).unwrap(), s, true, |i, c| {
        c.accept = AcceptPolicy::Auto(format!("welcome from {i}").into_bytes());
    })
}

fn established(n: &IpCmNet, i: usize, conn: IpConnId) -> bool {
    n.events_of(i, conn)
        .iter()
        .any(|e| matches!(e, IpCmEvent::Established { .. }))
}

/// The completions host `i` saw for `conn` with `opcode`.
fn completions(n: &IpCmNet, i: usize, conn: IpConnId, opcode: WcOpcode) -> Vec<Completion> {
    n.app(i)
        .completions()
        .filter(|(_, c, wc)| *c == Some(conn) && wc.opcode == opcode)
        .map(|(_, _, wc)| wc.clone())
        .collect()
}

/// The server's connection of the request it was handed.
fn request(n: &IpCmNet) -> Option<(IpConnId, SocketAddr, SocketAddr, Vec<u8>)> {
    n.app(SERVER).events().find_map(|(_, e)| match e {
        IpCmEvent::ConnectRequest {
            conn,
            src,
            dst,
            private_data,
            protocol: TCP,
            ..
        } => Some((*conn, *src, *dst, private_data.clone())),
        _ => None,
    })
}

/// Annex A11 §A11.4, CA11-6: a client connects to the server's address and TCP port; the
/// server's consumer hears the client's address and ephemeral port and the consumer data; both
/// sides come up; SEND, RDMA WRITE and RDMA READ cross; a disconnect is heard on both sides, and
/// every RC QP is destroyed once TimeWait is over.
fn connect_exchange_disconnect(v6_family: bool, s: u64) {
    let _g = SeedGuard(s);
    let mut n = net(s);
    let addr = if v6_family { v6 } else { v4 };
    let (server_ip, client_ip) = (addr(&n.net, SERVER), addr(&n.net, CLIENT));
    let any: IpAddr = if v6_family {
        IpAddr::V6(std::net::Ipv6Addr::UNSPECIFIED)
    } else {
        IpAddr::V4(Ipv4Addr::UNSPECIFIED)
    };
    n.with_app(SERVER, |a, _| a.listen(TCP, any, PORT)).unwrap();
    let dst = SocketAddr::new(server_ip, PORT);
    let conn = n
        .with_app(CLIENT, |a, now| a.connect(now, TCP, dst, None, b"hello"))
        .unwrap();
    let up = n.run_until(Duration::from_secs(5), |v| {
        let srv = v
            .app(SERVER)
            .events()
            .any(|(_, e)| matches!(e, IpCmEvent::Established { .. }));
        let cli = v
            .app(CLIENT)
            .events()
            .any(|(_, e)| matches!(e, IpCmEvent::Established { conn: c, .. } if *c == conn));
        srv && cli
    });
    assert!(
        up,
        "both sides up: {:?} {:?}",
        n.app(CLIENT).events().collect::<Vec<_>>(),
        n.app(SERVER).events().collect::<Vec<_>>()
    );
    let (sconn, src, sdst, pd) = request(&n).expect("the server heard the request");
    assert_eq!(src.ip(), client_ip);
    assert!((32768..=60999).contains(&src.port()), "ephemeral {src}");
    assert_eq!(sdst, dst);
    assert_eq!(&pd[..5], b"hello");
    let rep = n.events_of(CLIENT, conn).into_iter().find_map(|e| match e {
        IpCmEvent::Established { private_data, .. } => Some(private_data),
        _ => None,
    });
    assert!(rep.unwrap().starts_with(b"welcome from 1"));
    let (local, remote) = n.app(CLIENT).service().addrs(conn).unwrap();
    assert_eq!((local, remote), (src, dst));
    assert!(established(&n, SERVER, sconn));

    // SEND each way.
    n.with_host(CLIENT, |h, hd| ipcm::send(h, hd, conn, 1, b"ping".to_vec()))
        .unwrap();
    n.run_until(Duration::from_secs(1), |v| {
        v.app(SERVER)
            .completions()
            .any(|(_, _, c)| c.opcode == WcOpcode::Recv)
    });
    let got = completions(&n, SERVER, sconn, WcOpcode::Recv);
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].data, b"ping");
    n.with_host(SERVER, |h, hd| {
        ipcm::send(h, hd, sconn, 2, b"pong".to_vec())
    })
    .unwrap();
    n.run_until(Duration::from_secs(1), |v| {
        v.app(CLIENT)
            .completions()
            .any(|(_, _, c)| c.opcode == WcOpcode::Recv)
    });
    let got = completions(&n, CLIENT, conn, WcOpcode::Recv);
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].data, b"pong");
    let sent = completions(&n, CLIENT, conn, WcOpcode::Send);
    assert_eq!(sent.len(), 1);
    assert_eq!((sent[0].wr_id, sent[0].status), (1, WcStatus::Success));

    // RDMA WRITE into the server's region and READ back into a second local one.
    const LEN: usize = 100_000;
    let pattern: Vec<u8> = (0..LEN).map(|i| (i * 7 + 3) as u8).collect();
    let rw = Access::LOCAL_WRITE | Access::REMOTE_WRITE | Access::REMOTE_READ;
    let remote = n.with_host(SERVER, |h, _| h.hca_mut().reg_mr(LEN, rw).unwrap());
    let (src_mr, dst_mr) = n.with_host(CLIENT, |h, _| {
        let s = h.hca_mut().reg_mr(LEN, Access::NONE).unwrap();
        h.hca_mut().mr_write(s.lkey, 0, &pattern).unwrap();
        let d = h.hca_mut().reg_mr(LEN, Access::LOCAL_WRITE).unwrap();
        (s, d)
    });
    n.with_host(CLIENT, |h, hd| {
        ipcm::rdma_write(h, hd, conn, 3, &src_mr, 0, LEN, remote.addr, remote.rkey)
    })
    .unwrap();
    n.run_until(Duration::from_secs(1), |v| {
        v.app(CLIENT)
            .completions()
            .any(|(_, _, c)| c.opcode == WcOpcode::RdmaWrite)
    });
    let w = completions(&n, CLIENT, conn, WcOpcode::RdmaWrite);
    assert_eq!((w[0].wr_id, w[0].status), (3, WcStatus::Success));
    let landed = n
        .net
        .host_device(SERVER)
        .hca()
        .mr_read(remote.lkey, 0, LEN)
        .unwrap()
        .to_vec();
    assert!(landed == pattern, "the WRITE landed in the server's region");
    n.with_host(CLIENT, |h, hd| {
        ipcm::rdma_read(
            h,
            hd,
            conn,
            4,
            &dst_mr,
            0,
            LEN as u32,
            remote.addr,
            remote.rkey,
        )
    })
    .unwrap();
    n.run_until(Duration::from_secs(1), |v| {
        v.app(CLIENT)
            .completions()
            .any(|(_, _, c)| c.opcode == WcOpcode::RdmaRead)
    });
    let r = completions(&n, CLIENT, conn, WcOpcode::RdmaRead);
    assert_eq!((r[0].wr_id, r[0].status), (4, WcStatus::Success));
    let back = n
        .net
        .host_device(CLIENT)
        .hca()
        .mr_read(dst_mr.lkey, 0, LEN)
        .unwrap()
        .to_vec();
    assert!(back == pattern, "the READ brought the bytes back");

    // Release: the client disconnects, both sides hear it.
    n.with_app(CLIENT, |a, _| a.disconnect(conn)).unwrap();
    let down = n.run_until(Duration::from_secs(5), |v| {
        let gone = |i: usize, c: IpConnId| {
            v.app(i)
                .events()
                .any(|(_, e)| matches!(e, IpCmEvent::Disconnected { conn: x, .. } if *x == c))
        };
        gone(CLIENT, conn) && gone(SERVER, sconn)
    });
    assert!(down, "both sides disconnected");
    let by_peer = |i: usize, c: IpConnId| {
        n.events_of(i, c).into_iter().find_map(|e| match e {
            IpCmEvent::Disconnected { by_peer, .. } => Some(by_peer),
            _ => None,
        })
    };
    assert_eq!(by_peer(CLIENT, conn), Some(false));
    assert_eq!(by_peer(SERVER, sconn), Some(true));
    let late = n.with_host(CLIENT, |h, hd| ipcm::send(h, hd, conn, 9, Vec::new()));
    assert!(late.is_err(), "no SEND on a released connection");
    n.run_for(Duration::from_secs(30));
    for i in [SERVER, CLIENT] {
        let c = n.app(i).counters();
        assert_eq!(n.app(i).qp_count(), 0, "host {i}: {c:?}");
        assert_eq!(c.qps_created, 1, "host {i}");
        assert_eq!(c.qps_destroyed, 1, "host {i}");
        assert_eq!((c.qp_errors, c.cm_errors), (0, 0), "host {i}");
        assert_eq!(n.rc_qps(i), 0, "host {i}: no RC QP left on the HCA");
        assert_eq!(n.app(i).service().connections(), 0, "host {i}");
    }
}

#[test]
fn ipv4_connect_exchange_disconnect() {
    connect_exchange_disconnect(false, seed(1));
}

#[test]
fn ipv6_connect_exchange_disconnect() {
    connect_exchange_disconnect(true, seed(2));
}

/// Annex A11 CA11-8: with no listener on the service ID (the server stopped listening) the CM
/// answers REJ 8 "Invalid Service ID", and the client reports Rejected with reason 8; no QP is
/// left on either side.
#[test]
fn listener_gone_gives_rej_8() {
    let s = seed(3);
    let _g = SeedGuard(s);
    let mut n = net(s);
    let l = n
        .with_app(SERVER, |a, _| {
            a.listen(TCP, IpAddr::V4(Ipv4Addr::UNSPECIFIED), PORT)
        })
        .unwrap();
    n.run_for(Duration::from_millis(1));
    n.with_app(SERVER, |a, _| a.unlisten(l)).unwrap();
    let dst = SocketAddr::new(v4(&n.net, SERVER), PORT);
    let conn = n
        .with_app(CLIENT, |a, now| a.connect(now, TCP, dst, None, b""))
        .unwrap();
    let over = n.run_until(Duration::from_secs(5), |v| {
        v.app(CLIENT).events().any(|(_, e)| e.conn() == Some(conn))
    });
    assert!(over);
    let ev = n.events_of(CLIENT, conn);
    match &ev[..] {
        [IpCmEvent::Rejected { reason, ari, .. }] => {
            assert_eq!(*reason, RejReason::InvalidServiceId);
            assert_eq!(u16::from(*reason), 8);
            assert!(!ari.shows_service(), "{ari:?}");
            assert!(matches!(ari, RejectAri::Empty | RejectAri::Other(_)));
        }
        other => panic!("{other:?}"),
    }
    assert!(request(&n).is_none(), "the server's consumer heard nothing");
    n.run_for(Duration::from_secs(30));
    for i in [SERVER, CLIENT] {
        assert_eq!(n.rc_qps(i), 0, "host {i}");
        assert_eq!(n.app(i).service().connections(), 0, "host {i}");
    }
    assert_eq!(n.app(CLIENT).counters().qps_destroyed, 1);
}

/// Annex A11 §A11.3: an address no host has cannot be resolved to a GID; the service gives up
/// after its resolve timeout with an address error, and no QP or CM connection was ever made.
#[test]
fn unknown_address_gives_address_error() {
    let s = seed(4);
    let _g = SeedGuard(s);
    let mut n = net(s);
    let dst = SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 0, 0, 200)), PORT);
    let (conn, t0) = n.with_app(CLIENT, |a, now| (a.connect(now, TCP, dst, None, b""), now));
    let conn = conn.unwrap();
    let over = n.run_until(Duration::from_secs(5), |v| {
        v.app(CLIENT).events().any(|(_, e)| e.conn() == Some(conn))
    });
    assert!(over);
    let (at, e) = n.app(CLIENT).events().last().cloned().unwrap();
    assert_eq!(e, IpCmEvent::AddressError { conn });
    let timeout = n.app(CLIENT).service().config().resolve_timeout;
    assert!(
        at.saturating_duration_since(t0) >= timeout,
        "gave up at the timeout"
    );
    assert_eq!(n.app(CLIENT).counters().qps_created, 0);
    assert_eq!(n.app(CLIENT).service().connections(), 0);
    // The ARP requests went out (the interface tried).
    let arp = n.net.interface(CLIENT).unwrap().neighbours();
    assert!(
        arp.iter().all(|nb| nb.ip != dst.ip() || nb.hw.is_none()),
        "{arp:?}"
    );
}

/// A fresh connection from CLIENT to SERVER's listener on `port`: (client's, server's).
fn connection(n: &mut IpCmNet, port: u16) -> (IpConnId, IpConnId) {
    let dst = SocketAddr::new(v4(&n.net, SERVER), port);
    let conn = n
        .with_app(CLIENT, |a, now| a.connect(now, TCP, dst, None, b""))
        .unwrap();
    let up = n.run_until(Duration::from_secs(5), |v| {
        v.app(CLIENT)
            .events()
            .any(|(_, e)| matches!(e, IpCmEvent::Established { conn: c, .. } if *c == conn))
    });
    assert!(up, "connection up");
    n.run_for(Duration::from_millis(1));
    let sconn = n
        .app(SERVER)
        .events()
        .filter_map(|(_, e)| match e {
            IpCmEvent::Established { conn, .. } => Some(*conn),
            _ => None,
        })
        .last()
        .expect("the server is up");
    (conn, sconn)
}

/// The status of the one completion of `wr_id` on `conn` at CLIENT, once it comes.
fn status_of(n: &mut IpCmNet, conn: IpConnId, wr_id: u64) -> WcStatus {
    let done = n.run_until(Duration::from_secs(30), |v| {
        v.app(CLIENT)
            .completions()
            .any(|(_, c, wc)| *c == Some(conn) && wc.wr_id == wr_id)
    });
    assert!(done, "work request {wr_id} completed");
    n.app(CLIENT)
        .completions()
        .find(|(_, c, wc)| *c == Some(conn) && wc.wr_id == wr_id)
        .map(|(_, _, wc)| wc.status)
        .unwrap()
}

/// IBA 1 §9.7.5.2.5, §10.6.3.1, §9.7.5.2.8, §9.7.6.1.3 over a connection the RDMA IP CM
/// service made: the server's HCA checks every RDMA WRITE and READ against its memory
/// registration table (the R_Key names a region, the range lies inside it, the region grants the
/// remote right), so a wrong key, a range past the end or a missing right completes at the
/// client with a remote access error and leaves the region untouched; a SEND to a peer with no
/// receive posted exhausts the RNR retries; a peer that vanished exhausts the transport retries.
#[test]
fn rdma_and_sends_fail_with_verbs_statuses() {
    const LEN: usize = 4096;
    let s = seed(5);
    let _g = SeedGuard(s);
    let mut n = ipcm_net(Topology::single_switch(3).unwrap(), s, false, |_, c| {
        c.accept = AcceptPolicy::Auto(Vec::new());
        // No receive buffers on the server's QPs, so a SEND meets RNR NAKs (§9.7.5.2.8).
        c.recv_depth = 0;
        c.service.rnr_retry_count = 1;
        c.service.retry_count = 1;
    });
    n.with_app(SERVER, |a, _| {
        a.listen(TCP, IpAddr::V4(Ipv4Addr::UNSPECIFIED), PORT)
    })
    .unwrap();
    let all = Access::LOCAL_WRITE | Access::REMOTE_WRITE | Access::REMOTE_READ;
    let rw = n.with_host(SERVER, |h, _| h.hca_mut().reg_mr(LEN, all).unwrap());
    let ro = n.with_host(SERVER, |h, _| {
        h.hca_mut().reg_mr(LEN, Access::REMOTE_READ).unwrap()
    });
    let wo = n.with_host(SERVER, |h, _| {
        h.hca_mut()
            .reg_mr(LEN, Access::LOCAL_WRITE | Access::REMOTE_WRITE)
            .unwrap()
    });
    let (src, dst) = n.with_host(CLIENT, |h, _| {
        let s = h.hca_mut().reg_mr(LEN, Access::NONE).unwrap();
        h.hca_mut().mr_write(s.lkey, 0, &[0xa5; LEN]).unwrap();
        (s, h.hca_mut().reg_mr(LEN, Access::LOCAL_WRITE).unwrap())
    });
    // (what, WRITE or READ, remote address, R_Key, length)
    let cases: [(&str, bool, u64, u32, usize); 7] = [
        ("WRITE with the L_Key", true, rw.addr, rw.lkey, 16),
        (
            "WRITE with a key of no region",
            true,
            rw.addr,
            0xdead_beef,
            16,
        ),
        (
            "WRITE past the end",
            true,
            rw.addr + LEN as u64 - 8,
            rw.rkey,
            16,
        ),
        ("WRITE before the start", true, rw.addr - 1, rw.rkey, 16),
        ("WRITE without remote write", true, ro.addr, ro.rkey, 16),
        ("READ past the end", false, rw.addr + 1, rw.rkey, LEN),
        ("READ without remote read", false, wo.addr, wo.rkey, 16),
    ];
    for (k, (what, write, addr, rkey, len)) in cases.into_iter().enumerate() {
        // A remote access error takes the QP to the error state: a connection each.
        let (conn, _) = connection(&mut n, PORT);
        let wr_id = 100 + k as u64;
        n.with_host(CLIENT, |h, hd| {
            if write {
                ipcm::rdma_write(h, hd, conn, wr_id, &src, 0, len, addr, rkey)
            } else {
                ipcm::rdma_read(h, hd, conn, wr_id, &dst, 0, len as u32, addr, rkey)
            }
        })
        .unwrap();
        assert_eq!(
            status_of(&mut n, conn, wr_id),
            WcStatus::RemAccessErr,
            "{what}"
        );
    }
    for r in [rw, ro, wo] {
        let bytes = n
            .net
            .host_device(SERVER)
            .hca()
            .mr_read(r.lkey, 0, LEN)
            .unwrap();
        assert!(bytes.iter().all(|&b| b == 0), "no refused WRITE landed");
    }
    let read_back = n
        .net
        .host_device(CLIENT)
        .hca()
        .mr_read(dst.lkey, 0, LEN)
        .unwrap();
    assert!(read_back.iter().all(|&b| b == 0), "no refused READ landed");
    // The good requests still work on a fresh connection.
    let (conn, _) = connection(&mut n, PORT);
    n.with_host(CLIENT, |h, hd| {
        ipcm::rdma_write(h, hd, conn, 1, &src, 0, LEN, rw.addr, rw.rkey)
    })
    .unwrap();
    assert_eq!(status_of(&mut n, conn, 1), WcStatus::Success);
    n.with_host(CLIENT, |h, hd| {
        ipcm::rdma_read(h, hd, conn, 2, &dst, 0, LEN as u32, rw.addr, rw.rkey)
    })
    .unwrap();
    assert_eq!(status_of(&mut n, conn, 2), WcStatus::Success);
    let read_back = n
        .net
        .host_device(CLIENT)
        .hca()
        .mr_read(dst.lkey, 0, LEN)
        .unwrap();
    assert!(
        read_back.iter().all(|&b| b == 0xa5),
        "the READ brought the WRITE back"
    );
    // No receive posted at the server: RNR NAKs until rnr_retry_count runs out.
    n.with_host(CLIENT, |h, hd| ipcm::send(h, hd, conn, 3, b"ping".to_vec()))
        .unwrap();
    assert_eq!(status_of(&mut n, conn, 3), WcStatus::RnrRetryExcErr);
    // The links drop everything: the transport retries run out.
    let (conn, _) = connection(&mut n, PORT);
    for l in n.net.built().links.clone() {
        n.net.sim_mut().set_faults(l, None, vec![Fault::Drop(1.0)]);
    }
    n.with_host(CLIENT, |h, hd| {
        ipcm::rdma_write(h, hd, conn, 4, &src, 0, 16, rw.addr, rw.rkey)
    })
    .unwrap();
    assert_eq!(status_of(&mut n, conn, 4), WcStatus::RetryExcErr);
}

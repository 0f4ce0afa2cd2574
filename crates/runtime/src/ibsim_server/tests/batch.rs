//! Several datagrams of one client read in one turn (`IbsimServer::on_mads`, one recvmmsg(2)):
//! each request leaves as it would alone and in the order sent, and a datagram that is not a
//! `sim_request` drops the client after the requests before it went to the fabric, the ones
//! after it counted as strays.

use super::*;

/// Four SA requests sent while the server is parked are read together: four GetResps, in the
/// order sent, each with its request's TID whose top 16 bits are the client id (ibsim
/// `sim_mad.c` `update_trid`, docs/IBSIM.md).
#[test]
fn requests_read_together_are_answered_in_order() {
    let srv = Running::start();
    let c = Raw::connect(&srv.base, "h1").unwrap();
    let tids = [0x11u64, 0x12, 0x13, 0x14];
    let paused = srv.pause();
    for &t in &tids {
        c.data.send(&cpi_request(t).to_bytes()).unwrap();
    }
    drop(paused);
    for &t in &tids {
        let mut b = [0u8; SIM_REQUEST_LEN];
        let len = c.data.recv(&mut b).unwrap();
        let r = SimRequest::parse(&b[..len]).unwrap();
        let h = MadHeaderRepr::parse_bytes(&r.mad).unwrap();
        assert_eq!(h.method, Method::GetResp);
        assert_eq!(h.transaction_id, u64::from(c.id) << 48 | t);
        assert_eq!((r.head.status, r.head.slid), (0, 1));
    }
    let (counters, _) = srv.stop();
    assert_eq!(
        (counters.mads_in, counters.mads_out),
        (4, 4),
        "{counters:?}"
    );
}

/// Two requests, a datagram that is not a `sim_request`, a request, read together: the first
/// two go to the fabric, the client is dropped, the last is a stray.
#[test]
fn garbage_read_with_requests_drops_the_client_after_the_ones_before() {
    let srv = Running::start();
    let c = Raw::connect(&srv.base, "h1").unwrap();
    let paused = srv.pause();
    c.data.send(&cpi_request(1).to_bytes()).unwrap();
    c.data.send(&cpi_request(2).to_bytes()).unwrap();
    c.data.send(&[1, 2, 3]).unwrap();
    c.data.send(&cpi_request(3).to_bytes()).unwrap();
    drop(paused);
    let dropped = eventually(|| c.ctl(CtlType::GetNodeInfo, &[0; 64]).ctl_type == CtlType::Error);
    assert!(dropped);
    let (counters, _) = srv.stop();
    assert_eq!(counters.mads_in, 2, "{counters:?}");
    assert_eq!(counters.garbage_dropped, 1, "{counters:?}");
    assert_eq!(counters.stray, 1, "{counters:?}");
    assert_eq!(
        counters.mads_out, 0,
        "no answer for a dropped client: {counters:?}"
    );
}

/// `Sock::send_many` of 2, 8 and 9 messages (the small array's sizes and one beyond it; a Unix
/// socket's queue takes 10 here, /proc/sys/net/unix/max_dgram_qlen): every one sent, each its
/// own datagram, in order.
#[test]
fn send_many_of_a_few_sends_them_all_in_order() {
    let name = unique_base();
    let peer =
        UnixDatagram::bind_addr(&sock::abstract_addr(&format!("{name}:in1")).unwrap()).unwrap();
    peer.set_nonblocking(true).unwrap();
    let listen = Listen::Unix { basename: name };
    let s = sock::Sock::bind_slot(&listen, 0).unwrap();
    let stranger = Peer::Udp("127.0.0.1:1".parse().unwrap());
    s.connect_client(&listen, 1, &stranger).unwrap();
    let mut h = sock::Headers::new();
    let mut b = [0u8; 16];
    for count in [2u8, 8, 9] {
        let msgs: Vec<Vec<u8>> = (0..count)
            .map(|i| vec![count ^ i; 1 + usize::from(i)])
            .collect();
        assert_eq!(s.send_many(&msgs, &mut h).unwrap(), msgs.len());
        for m in &msgs {
            let got = peer.recv(&mut b).unwrap();
            assert_eq!(&b[..got], &m[..]);
        }
        assert_eq!(peer.recv(&mut b).unwrap_err().kind(), ErrorKind::WouldBlock);
    }
}

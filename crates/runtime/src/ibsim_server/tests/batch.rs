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
    let (peer, s, mut h) = slot_with_reader();
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

/// The test subnet (as [`Running`]'s) and a server polled by hand in this thread, with what
/// `connect` returns: it runs in a thread of its own (CONNECT waits for its answer) while this
/// one polls the server, at most [`LONG`].
fn by_hand<T: Send + 'static>(
    cfg: ServerConfig,
    connect: impl FnOnce() -> T + Send + 'static,
) -> (Subnet, IbsimServer, T) {
    let topo = Topology::single_switch(3).unwrap();
    let mut net = Subnet::build(SubnetOptions::new(topo, 7)).unwrap();
    assert!(net.run_until_joined(Instant::ZERO + Duration::from_secs(60)));
    let mut server = IbsimServer::bind(cfg).unwrap();
    let t = std::thread::spawn(connect);
    let end = std::time::Instant::now() + LONG;
    while !t.is_finished() && std::time::Instant::now() < end {
        server.poll(&mut net).unwrap();
        std::thread::sleep(Duration::from_millis(1));
    }
    assert!(t.is_finished(), "the clients connect");
    (net, server, t.join().unwrap())
}

/// One turn of `serve` by hand: what waits is read, the subnet runs 10 ms of simulated time
/// (the SA on h0 answers in microseconds), what it delivered is written.
fn turn(net: &mut Subnet, server: &mut IbsimServer) {
    server.poll(net).unwrap();
    let to = net.sim().now() + Duration::from_millis(10);
    net.sim_mut().run_until(to);
    server.flush(net);
}

/// The TransactionIDs of the answers waiting on `data`, in order, until it has no more.
fn answered(data: &UnixDatagram) -> Vec<u64> {
    data.set_nonblocking(true).unwrap();
    let mut out = Vec::new();
    let mut b = [0u8; SIM_REQUEST_LEN + 1];
    loop {
        match data.recv(&mut b) {
            Ok(len) => {
                let r = SimRequest::parse(&b[..len]).unwrap();
                assert_eq!(r.head.status, 0);
                out.push(MadHeaderRepr::parse_bytes(&r.mad).unwrap().transaction_id);
            }
            Err(e) => {
                assert_eq!(e.kind(), ErrorKind::WouldBlock);
                return out;
            }
        }
    }
}

/// A client that does not read, sent 6 answers in one turn and 8 (the small array's most) in
/// the next: all 14 wait for it, in order, none dropped, though its socket's queue holds
/// `max_dgram_qlen` (10 here) datagrams. Its data socket is connected to the server's
/// (umad2sim's is), and Linux counts a Unix datagram socket's queue against its sender only
/// when the receiver is not connected back to it (net/unix/af_unix.c `unix_dgram_sendmsg`,
/// `unix_peer(other) != sk && unix_recvq_full_lockless(other)`): the sender's buffer is the
/// limit instead.
#[test]
fn answers_to_a_client_that_does_not_read_wait_in_order() {
    let base = unique_base();
    let b = base.clone();
    let (mut net, mut server, c) = by_hand(ServerConfig::unix(&base), move || {
        Raw::connect(&b, "h1").unwrap()
    });
    let tids: Vec<u64> = (0x100..0x106).chain(0x200..0x208).collect();
    for &t in &tids[..6] {
        c.data.send(&cpi_request(t).to_bytes()).unwrap();
    }
    turn(&mut net, &mut server);
    assert_eq!(server.counters().mads_out, 6);
    for &t in &tids[6..] {
        c.data.send(&cpi_request(t).to_bytes()).unwrap();
    }
    turn(&mut net, &mut server);
    let k = server.counters();
    assert_eq!((k.mads_in, k.mads_out, k.out_dropped), (14, 14, 0), "{k:?}");
    let want: Vec<u64> = tids.iter().map(|&t| u64::from(c.id) << 48 | t).collect();
    assert_eq!(answered(&c.data), want);
}

/// `Sock::send_many` on the small array (at most 8) to a peer whose queue has room for fewer
/// (one more than `max_dgram_qlen`, 10 here: net/unix/af_unix.c `unix_recvq_full` is a queue
/// longer than it; the peer is not connected back, so the limit holds): the count
/// of the first ones that fitted, then `WouldBlock`; the ones sent arrive in order, once.
#[test]
fn send_many_of_a_few_into_a_nearly_full_queue_sends_what_fits() {
    let qlen: usize = std::fs::read_to_string("/proc/sys/net/unix/max_dgram_qlen")
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let (peer, s, mut h) = slot_with_reader();
    // Fill the queue to 4 short of full, 8 (or fewer) at a time.
    let room = qlen + 1;
    let fill = room.saturating_sub(4);
    let mut queued = 0;
    while queued < fill {
        let k = (fill - queued).min(8);
        let msgs: Vec<[u8; 1]> = (0..k).map(|_| [0xee]).collect();
        assert_eq!(s.send_many(&msgs, &mut h).unwrap(), k);
        queued += k;
    }
    let msgs: Vec<[u8; 2]> = (0..8u8).map(|i| [i, 0x5a]).collect();
    let n = s.send_many(&msgs, &mut h).unwrap();
    assert_eq!(n, 8.min(room - fill), "qlen {qlen}");
    assert_eq!(
        s.send_many(&msgs[n..], &mut h).unwrap_err().kind(),
        ErrorKind::WouldBlock
    );
    let mut b = [0u8; 4];
    for _ in 0..fill {
        assert_eq!(peer.recv(&mut b).unwrap(), 1);
    }
    for m in &msgs[..n] {
        let got = peer.recv(&mut b).unwrap();
        assert_eq!(&b[..got], &m[..]);
    }
    assert_eq!(peer.recv(&mut b).unwrap_err().kind(), ErrorKind::WouldBlock);
}

/// Two clients' datagrams read in one poll, one of them sending garbage between its
/// requests: that client's requests before it are handed to the fabric, the one after it is a
/// stray and no answer reaches it; the other client's requests are all answered, in order,
/// with its own id in their TIDs.
#[test]
fn garbage_from_one_client_leaves_the_others_batch_alone() {
    let base = unique_base();
    let b = base.clone();
    let (mut net, mut server, (bad, good)) = by_hand(ServerConfig::unix(&base), move || {
        (
            Raw::connect(&b, "h1").unwrap(),
            Raw::connect(&b, "h2").unwrap(),
        )
    });
    bad.data.send(&cpi_request(0x31).to_bytes()).unwrap();
    good.data.send(&cpi_request(0x41).to_bytes()).unwrap();
    bad.data.send(&cpi_request(0x32).to_bytes()).unwrap();
    good.data.send(&cpi_request(0x42).to_bytes()).unwrap();
    bad.data.send(&[0u8; SIM_REQUEST_LEN - 1]).unwrap();
    good.data.send(&cpi_request(0x43).to_bytes()).unwrap();
    bad.data.send(&cpi_request(0x33).to_bytes()).unwrap();
    good.data.send(&cpi_request(0x44).to_bytes()).unwrap();
    turn(&mut net, &mut server);
    let k = *server.counters();
    assert_eq!(
        (k.mads_in, k.garbage_dropped, k.stray, k.mads_out),
        (6, 1, 1, 4),
        "{k:?}"
    );
    let slots: Vec<u32> = server.clients().map(|(s, _)| s).collect();
    assert_eq!(slots, [good.id]);
    let want: Vec<u64> = (0x41..=0x44)
        .map(|t| u64::from(good.id) << 48 | t)
        .collect();
    assert_eq!(answered(&good.data), want);
    assert_eq!(answered(&bad.data), Vec::<u64>::new());
}

/// A UDP client's 40 requests, read in one poll (recvmmsg(2) takes 16 at a time; a UDP socket
/// is read until it says "would block"): 40 answers in the order sent, written in one flush
/// (sendmmsg(2) takes 64).
#[test]
fn more_than_sixteen_requests_in_one_poll_are_answered_in_order() {
    let addr = free_udp_pair();
    let mut cfg = ServerConfig::unix("unused");
    cfg.listen = Listen::Udp { addr };
    let (mut net, mut server, c) = by_hand(cfg, move || {
        IbsimClient::connect_to(&Endpoint::Udp { server: addr }, Some("h2"), 0, false).unwrap()
    });
    let tids: Vec<u64> = (0x500..0x528).collect();
    for &t in &tids {
        c.send_mad(1, 1, &cpi_get(t)).unwrap();
    }
    turn(&mut net, &mut server);
    let k = *server.counters();
    assert_eq!((k.mads_in, k.mads_out, k.out_dropped), (40, 40, 0), "{k:?}");
    let id = u64::from(c.client_id());
    for &t in &tids {
        let r = c.recv(LONG).unwrap().expect("an answer");
        let h = MadHeaderRepr::parse_bytes(&r.mad).unwrap();
        assert_eq!(
            (h.method, h.transaction_id),
            (Method::GetResp, id << 48 | t)
        );
    }
}

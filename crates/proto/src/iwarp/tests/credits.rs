//! FlowC 0: the BSDH on every SEND and SDP's credits (iWarp mapping, FlowC; docs/DEPLOYED.md
//! "SDP (the data structures the iWarp mapping reuses)").

use super::*;

#[test]
fn iw9_every_send_starts_with_a_bsdh() {
    // iWarp mapping FlowC 0: "may embed a 16 byte headers in RC Send (just like SDP does, and uses
    // zero in that field)": MID 0, flags 0, bufs = posted buffers, len = whole SEND, mseq from 1,
    // mseq_ack = last mseq received.
    let mut p = Pair::transport(64, 5);
    assert_eq!(p.a.s.send(b"hello"), Ok(5));
    assert_eq!(p.a.s.send(&[7u8; 60]), Ok(60));
    let m1 = p.a.s.poll_send().unwrap();
    let m2 = p.a.s.poll_send().unwrap();
    assert_eq!(p.a.s.poll_send(), None);
    let h1 = bsdh(&m1);
    assert_eq!(
        (h1.mid, h1.flags, h1.bufs, h1.len, h1.mseq, h1.mseq_ack),
        (0, 0, 5, 64, 1, 0)
    );
    assert_eq!(&m1[16..21], b"hello");
    // Segmented at the peer's receive size (64 = 16 + 48 bytes of payload).
    assert_eq!(m1.len(), 64);
    assert_eq!((m2.len(), bsdh(&m2).len, bsdh(&m2).mseq), (33, 33, 2));
    for m in [m1, m2] {
        p.b.inbox.push_back(m);
    }
    while p.b.deliver() {}
    assert_eq!(p.b.events(), [StreamEvent::Readable]);
    let got = p.b.read_all();
    assert_eq!(&got[..5], b"hello");
    assert_eq!(got[5..], [7u8; 60]);
    // The server's first SEND acknowledges mseq 2.
    p.b.s.send(b"x").unwrap();
    p.b.post();
    let r = p.b.s.poll_send().unwrap();
    let hr = bsdh(&r);
    assert_eq!((hr.mseq, hr.mseq_ack, hr.bufs, hr.len), (1, 2, 5, 17));
    assert_eq!(p.b.s.stats().sent, 1);
    assert_eq!(p.a.s.stats().sent, 2);
}

#[test]
fn iw9_credits_run_out_and_come_back() {
    // SDP: the sender sends only while it holds credits (the peer's advertised buffers), keeps the
    // last credit for credit updates (CA4-82), and resumes when the peer advertises freed buffers.
    let mut p = Pair::transport(116, 4);
    let data: Vec<u8> = (0..1000u32).map(|i| i as u8).collect();
    assert_eq!(p.a.s.send(&data), Ok(1000));
    assert_eq!(p.a.s.credits(), 4);
    let mut sent = Vec::new();
    while let Some(m) = p.a.s.poll_send() {
        sent.push(m);
    }
    // Four credits, the last kept back: three SENDs of 100 bytes.
    assert_eq!(sent.len(), 3);
    assert_eq!(p.a.s.credits(), 1);
    assert_eq!(p.a.s.queued_send_bytes(), 700);
    for m in sent {
        p.b.inbox.push_back(m);
    }
    while p.b.deliver() {}
    // The server holds the three buffers until its user reads: nothing to advertise.
    p.b.post();
    assert_eq!(p.b.s.posted_recv_buffers(), 1);
    assert_eq!(p.b.s.poll_send(), None);
    assert_eq!(p.b.s.readable_bytes(), 300);
    // Reading frees them; the server tells the starving client with a BSDH-only SEND.
    assert_eq!(p.b.read_all().len(), 300);
    p.b.post();
    assert_eq!(p.b.posted, 4);
    let upd = p.b.s.poll_send().unwrap();
    assert_eq!(upd.len(), 16);
    let h = bsdh(&upd);
    assert_eq!((h.bufs, h.len, h.mseq, h.mseq_ack), (4, 16, 1, 3));
    assert_eq!(p.b.s.stats().credit_updates, 1);
    assert_eq!(p.b.s.poll_send(), None);
    p.a.inbox.push_back(upd);
    p.a.deliver();
    // The update's buffer is free at once; no Readable for an empty SEND.
    assert_eq!(p.a.events(), []);
    assert_eq!(p.a.s.readable_bytes(), 0);
    assert_eq!(p.a.s.credits(), 4);
    // And the data flows again, three SENDs per round of reading.
    let mut got = Vec::new();
    for _ in 0..10 {
        p.drive(100);
        got.extend(p.b.read_all());
    }
    assert_eq!(got, data[300..]);
    assert_eq!(p.a.s.queued_send_bytes(), 0);
    assert_eq!(p.a.s.stats().sent, 10);
}

#[test]
fn iw9_last_credit_carries_credits_only() {
    // SDP CA4-82: with one credit left, only a SEND that gives credits and carries no payload.
    let mut p = Pair::transport(116, 4);
    p.b.s.send(&[1u8; 300]).unwrap();
    p.a.s.send(&[2u8; 300]).unwrap();
    // Both spend down to one credit.
    while p.transmit(true) {}
    while p.transmit(false) {}
    assert_eq!((p.a.s.credits(), p.b.s.credits()), (1, 1));
    while p.a.deliver() {}
    while p.b.deliver() {}
    // Credits computed from the crossing SENDs: each saw none of the other's.
    assert_eq!((p.a.s.credits(), p.b.s.credits()), (1, 1));
    // The client has sent all it had; it reads, its buffers come back, and it tells the server
    // with its last credit.
    p.a.read_all();
    p.a.post();
    let upd = p.a.s.poll_send().unwrap();
    assert_eq!(upd.len(), 16, "the last credit carries no payload");
    assert_eq!(p.a.s.credits(), 0);
    assert_eq!(p.a.s.poll_send(), None);
    // A data SEND never goes with a single credit.
    p.b.s.send(&[3u8; 50]).unwrap();
    p.b.post();
    assert_eq!(p.b.s.credits(), 1);
    assert_eq!(p.b.s.poll_send(), None);
    p.b.inbox.push_back(upd);
    p.b.deliver();
    assert_eq!(p.b.s.credits(), 4);
    // Everything settles without credit updates answering each other.
    p.b.read_all();
    p.drive(50);
    assert_eq!(p.a.read_all(), [3u8; 50]);
    assert_eq!(p.b.read_all(), []);
    p.drive(50);
    assert_eq!(p.a.s.poll_send(), None);
    assert_eq!(p.b.s.poll_send(), None);
    assert!(p.a.s.credits() >= MIN_DATA_CREDITS);
    assert!(p.b.s.credits() >= MIN_DATA_CREDITS);
}

#[test]
fn iw9_idle_streams_stay_quiet() {
    // After a burst both ways and reading, credit updates stop: the threshold (OFED SDP's
    // credit_update_needed) never answers an update with an update at depth 4 and more.
    for depth in [4u16, 5, 8, 64] {
        let mut p = Pair::transport(100, depth);
        p.a.s.send(&[1u8; 5000]).unwrap();
        p.b.s.send(&[2u8; 5000]).unwrap();
        let mut got_a = 0;
        let mut got_b = 0;
        for _ in 0..200 {
            p.drive(10_000);
            got_a += p.a.read_all().len();
            got_b += p.b.read_all().len();
        }
        assert_eq!((got_a, got_b), (5000, 5000), "depth {depth}");
        let quiet = p.drive(10);
        assert_eq!(quiet, 0, "depth {depth}: SENDs on an idle stream");
    }
}

//! What a broken or hostile peer sends, and what a user does that would grow memory: bad BSDHs
//! fail the stream with a counted reason and never panic; the queues stay bounded.

use super::*;
use ipoib_wire::bsdh::BsdhRepr;
use proptest::prelude::*;

/// A SEND from the peer with the given header fields and payload.
fn msg(h: BsdhRepr, payload: &[u8]) -> Vec<u8> {
    let mut m = vec![0u8; 16];
    h.emit(&mut m).unwrap();
    m.extend_from_slice(payload);
    m
}

fn good(mseq: u32) -> BsdhRepr {
    BsdhRepr {
        mid: 0,
        flags: 0,
        bufs: 4,
        len: 21,
        mseq,
        mseq_ack: 0,
    }
}

/// Feeds one SEND to a fresh server and returns its error.
fn verdict(m: &[u8]) -> Option<StreamError> {
    let mut p = Pair::transport(64, 4);
    p.b.s.handle_message(m);
    let e = p.b.s.error();
    if let Some(e) = e {
        assert_eq!(p.b.s.stats().bad, 1);
        assert_eq!(p.b.events(), [StreamEvent::Error(e)]);
    }
    e
}

#[test]
fn iw9_bad_bsdh_fails_the_stream_with_its_reason() {
    // The BSDH as SDP: MID zero (iWarp mapping FlowC 0), len = the SEND, mseq in order, mseq_ack
    // within what was sent, bufs covering our SENDs still in flight.
    assert_eq!(verdict(&msg(good(1), b"hello")), None);
    assert_eq!(verdict(&[0u8; 15]), Some(StreamError::Truncated(15)));
    assert_eq!(verdict(&[]), Some(StreamError::Truncated(0)));
    let mid = BsdhRepr {
        mid: 0xff,
        ..good(1)
    };
    assert_eq!(verdict(&msg(mid, b"hello")), Some(StreamError::Mid(0xff)));
    let len = BsdhRepr { len: 20, ..good(1) };
    assert_eq!(
        verdict(&msg(len, b"hello")),
        Some(StreamError::Length {
            field: 20,
            actual: 21
        })
    );
    assert_eq!(
        verdict(&msg(good(2), b"hello")),
        Some(StreamError::Sequence {
            expected: 1,
            got: 2
        })
    );
    assert_eq!(
        verdict(&msg(good(0), b"hello")),
        Some(StreamError::Sequence {
            expected: 1,
            got: 0
        })
    );
    let ack = BsdhRepr {
        mseq_ack: 1,
        ..good(1)
    };
    assert_eq!(verdict(&msg(ack, b"hello")), Some(StreamError::Ack(1)));
    assert_eq!(
        verdict(&[0u8; 65]),
        Some(StreamError::TooLarge { len: 65, max: 64 })
    );
    // Flags are reserved: ignored.
    let flags = BsdhRepr {
        flags: 0x03,
        ..good(1)
    };
    assert_eq!(verdict(&msg(flags, b"hello")), None);
}

#[test]
fn iw9_bufs_below_in_flight_and_overrun() {
    let mut p = Pair::transport(64, 4);
    p.a.s.send(&[1u8; 90]).unwrap();
    // Two SENDs in flight from the client; a server SEND that saw none of them and advertises one
    // buffer took credits away.
    assert!(p.transmit(true) && p.transmit(true));
    let m = msg(BsdhRepr { bufs: 1, ..good(1) }, b"hello");
    p.a.s.handle_message(&m);
    assert_eq!(
        p.a.s.error(),
        Some(StreamError::Credits {
            bufs: 1,
            in_flight: 2
        })
    );
    // A failed stream ignores what follows, refuses sends and sends nothing.
    p.a.s.handle_message(&msg(good(1), b"hello"));
    assert_eq!(p.a.s.stats().ignored, 1);
    assert_eq!(p.a.s.stats().bad, 1);
    assert!(matches!(p.a.s.send(b"x"), Err(SendError::Failed(_))));
    assert_eq!(p.a.s.poll_send(), None);

    // Five SENDs into four buffers.
    let mut p = Pair::transport(64, 4);
    for mseq in 1..=4 {
        p.b.s.handle_message(&msg(good(mseq), b"hello"));
    }
    assert_eq!(p.b.s.error(), None);
    p.b.s.handle_message(&msg(good(5), b"hello"));
    assert_eq!(p.b.s.error(), Some(StreamError::Overrun));
    assert_eq!(p.b.s.readable_bytes(), 20);
}

#[test]
fn iw9_message_before_the_reply() {
    let (mut a, _) =
        IwarpStream::client(&client_cfg(FlowControl::Transport, stream_cfg(64, 4))).unwrap();
    a.handle_message(&msg(good(1), b"hello"));
    assert_eq!(a.error(), Some(StreamError::NotEstablished));
}

#[test]
fn send_queue_is_bounded() {
    // send takes what fits, says Full when nothing does, and Writable once SENDs drain it.
    let mut cfg = stream_cfg(116, 4);
    cfg.send_buffer = 250;
    let mut p = Pair::new(&client_cfg(FlowControl::Transport, cfg), &cfg);
    assert_eq!(p.a.s.send(&[0u8; 200]), Ok(200));
    assert_eq!(p.a.s.send(&[0u8; 200]), Ok(50));
    assert_eq!(p.a.s.send(&[0u8; 1]), Err(SendError::Full));
    assert_eq!(p.a.s.queued_send_bytes(), 250);
    assert_eq!(p.a.events(), []);
    assert!(p.transmit(true));
    assert_eq!(p.a.events(), [StreamEvent::Writable]);
    assert_eq!(p.a.s.send(&[0u8; 200]), Ok(100));
    // FlowC 1 counts whole messages.
    let mut cfg = stream_cfg(100, 2);
    cfg.send_buffer = 150;
    let mut p = Pair::new(&client_cfg(FlowControl::Ulp, cfg), &cfg);
    assert_eq!(p.a.s.send(&[0u8; 100]), Ok(100));
    assert_eq!(p.a.s.send(&[0u8; 51]), Err(SendError::Full));
    assert_eq!(p.a.s.send(&[0u8; 50]), Ok(50));
    assert_eq!(p.a.s.send(b""), Err(SendError::Full));
}

#[test]
fn received_data_is_bounded_by_the_depth() {
    // A user who never reads holds at most depth buffers: the peer runs out of credits first.
    let mut p = Pair::transport(1016, 6);
    p.a.s.send(&[9u8; 60_000]).unwrap();
    for _ in 0..20 {
        p.drive(1000);
    }
    assert_eq!(p.b.s.readable_bytes(), 5 * 1000);
    assert_eq!(p.b.s.posted_recv_buffers(), 1);
    assert_eq!(p.a.s.credits(), 1);
    assert_eq!(p.a.s.queued_send_bytes(), 55_000);
}

proptest! {
    #[test]
    fn random_sends_never_panic(msgs in proptest::collection::vec(
        proptest::collection::vec(any::<u8>(), 0..80), 1..12)) {
        for fc in [FlowControl::Transport, FlowControl::Ulp] {
            let cfg = stream_cfg(64, 4);
            let mut p = Pair::new(&client_cfg(fc, cfg), &cfg);
            for m in &msgs {
                p.b.s.handle_message(m);
                let _ = p.b.s.recv(&mut [0u8; 7]);
                let _ = p.b.s.poll_send();
                p.b.post();
            }
            let st = p.b.s.stats();
            prop_assert_eq!(st.received + st.bad + st.ignored, msgs.len() as u64);
            prop_assert!(st.bad <= 1);
            prop_assert_eq!(st.bad == 1, p.b.s.error().is_some());
        }
    }

    #[test]
    fn mutated_sends_never_panic(seed in any::<u64>(), at in 0usize..16, v in any::<u8>()) {
        // A valid exchange with one header byte of one SEND changed.
        let mut p = Pair::transport(80, 4);
        p.a.s.send(&vec![seed as u8; 500]).unwrap();
        p.transmit(true);
        p.transmit(true);
        let which = (seed % 2) as usize;
        if let Some(m) = p.b.inbox.get_mut(which) {
            m[at] = v;
        }
        p.b.deliver_unchecked();
        p.b.deliver_unchecked();
        let st = p.b.s.stats();
        prop_assert_eq!(st.received + st.bad + st.ignored, 2);
        prop_assert_eq!(st.bad == 1, p.b.s.error().is_some());
    }
}

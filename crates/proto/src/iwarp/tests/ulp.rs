//! FlowC 1: "ULP owns flow control and control the entire Send buffer (e.g. iSER does not require
//! any additional headers)" (iWarp mapping, FlowC).

use super::*;

fn ulp_pair(client_size: u32, server_size: u32, depth: u16) -> Pair {
    let client = ClientConfig {
        desired_remote_recv_size: server_size,
        ..client_cfg(FlowControl::Ulp, stream_cfg(client_size, depth))
    };
    Pair::new(&client, &stream_cfg(server_size, depth))
}

#[test]
fn iw9_ulp_messages_pass_through_unchanged() {
    let mut p = ulp_pair(100, 48, 3);
    // Whatever bytes the ULP writes are the whole SEND: a BSDH-looking message is not parsed.
    let mut looks_like_bsdh = [0u8; 48];
    looks_like_bsdh[3] = 9;
    looks_like_bsdh[7] = 48;
    let msgs: [&[u8]; 4] = [b"iSER login", &looks_like_bsdh, b"", &[0xff; 47]];
    for m in msgs {
        assert_eq!(p.a.s.send(m), Ok(m.len()));
    }
    let mut wire = Vec::new();
    while let Some(m) = p.a.s.poll_send() {
        wire.push(m);
    }
    assert_eq!(wire, msgs.map(|m| m.to_vec()));
    for m in wire {
        p.b.inbox.push_back(m);
    }
    // Three buffers: the ULP, not the stream, must not send more than the peer posted.
    p.b.deliver();
    p.b.deliver();
    p.b.deliver();
    assert_eq!(p.b.events(), [StreamEvent::Readable]);
    assert_eq!(p.b.s.recv_message().unwrap(), b"iSER login");
    p.b.post();
    p.b.deliver();
    // Boundaries kept, the empty message included.
    assert_eq!(p.b.s.recv_message().unwrap(), looks_like_bsdh);
    assert_eq!(p.b.s.recv_message().unwrap(), b"");
    assert_eq!(p.b.s.recv_message().unwrap(), [0xff; 47]);
    assert_eq!(p.b.s.recv_message(), None);
    assert_eq!(p.b.s.stats().received, 4);
    assert_eq!(p.b.s.poll_recv_buffers(), 3);

    // The other way, read as a byte stream across the boundaries.
    p.b.s.send(b"abc").unwrap();
    p.b.s.send(b"").unwrap();
    p.b.s.send(b"defg").unwrap();
    p.drive(10);
    let mut buf = [0u8; 5];
    assert_eq!(p.a.s.recv(&mut buf), 5);
    assert_eq!(&buf, b"abcde");
    assert_eq!(p.a.s.recv(&mut buf), 2);
    assert_eq!(&buf[..2], b"fg");
    assert_eq!(p.a.s.recv(&mut buf), 0);
    // Every buffer came back, the empty message's too.
    assert_eq!(p.a.s.poll_recv_buffers(), 3);
}

#[test]
fn iw9_ulp_message_sizes() {
    let mut p = ulp_pair(100, 48, 3);
    // No longer than the peer's receive buffers (ActRcvSz 48 for the client, LocalRcvSz 100 for
    // the server).
    assert_eq!(
        p.a.s.send(&[0; 49]),
        Err(SendError::TooLarge { len: 49, max: 48 })
    );
    assert_eq!(p.b.s.send(&[0; 100]), Ok(100));
    assert_eq!(
        p.b.s.send(&[0; 101]),
        Err(SendError::TooLarge { len: 101, max: 100 })
    );
    // A SEND longer than our buffers (a peer ignoring our size) fails the stream.
    p.b.inbox.push_back(vec![0; 49]);
    p.b.deliver_unchecked();
    assert_eq!(
        p.b.s.error(),
        Some(StreamError::TooLarge { len: 49, max: 48 })
    );
    // FlowC 1 before the HelloReply: the bound on a message is unknown.
    let (mut a, _) = IwarpStream::client(&client_cfg(FlowControl::Ulp, stream_cfg(64, 2))).unwrap();
    assert_eq!(a.send(b"early"), Err(SendError::NotEstablished));
}

#[test]
fn iw9_ulp_overrun_is_an_error() {
    // The ULP owns flow control; a peer that sends into no posted buffer has broken it.
    let mut p = ulp_pair(100, 100, 1);
    p.b.s.handle_message(b"one");
    p.b.s.handle_message(b"two");
    assert_eq!(p.b.s.error(), Some(StreamError::Overrun));
    assert_eq!(p.b.s.stats().bad, 1);
    assert_eq!(p.b.s.recv_message().unwrap(), b"one");
}

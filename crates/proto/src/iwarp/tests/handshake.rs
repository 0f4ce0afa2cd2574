//! The Hello / HelloReply exchange (iWarp mapping §II, Figure 1, CM Reply figure).

use super::*;

#[test]
fn iw2_iw6_handshake_ipv4_exchanges_sizes_and_depths() {
    // iWarp mapping §II: "exchanging receiver buffer size and depth for initial usage"; the fields
    // as SDP: bufs = posted receive buffers, LocalRcvSz / DesRemRcvSz / ActRcvSz.
    let client = ClientConfig {
        stream: stream_cfg(8192, 8),
        flow_control: FlowControl::Transport,
        addrs: v4(),
        local_port: 40003,
        desired_remote_recv_size: 4096,
    };
    let (mut a, hello) = IwarpStream::client(&client).unwrap();
    assert_eq!(
        hello,
        HelloRepr {
            bufs: 8,
            len: 64,
            major_version: MAJOR_VERSION,
            minor_version: MINOR_VERSION,
            flow_control: FlowControl::Transport,
            des_rem_rcv_sz: 4096,
            local_rcv_sz: 8192,
            local_port: 40003,
            addrs: v4(),
        }
    );
    // Through the REQ's bytes: IPVer 4, the addresses in the last 4 bytes of each field.
    let mut pd = [0u8; 92];
    hello.emit(&mut pd).unwrap();
    assert_eq!(pd[17], 0x40);
    assert_eq!(pd[44..48], [10, 0, 0, 1]);
    assert_eq!(HelloRepr::parse(&pd), Ok(hello));
    assert!(!a.is_established());
    // The buffers the Hello advertises are posted before the REQ leaves.
    assert_eq!(a.poll_recv_buffers(), 8);
    assert_eq!(a.poll_recv_buffers(), 0);

    let (b, reply) = IwarpStream::server(&stream_cfg(16384, 6), &hello_wire(&hello)).unwrap();
    assert_eq!(
        reply,
        HelloReplyRepr {
            bufs: 6,
            len: 24,
            major_version: MAJOR_VERSION,
            minor_version: MINOR_VERSION,
            act_rcv_sz: 4096,
        }
    );
    // The server posts the size the client asked for, sends at most the client's LocalRcvSz, and
    // holds the Hello's bufs as credits.
    assert!(b.is_established());
    assert_eq!(b.recv_size(), 4096);
    assert_eq!(b.peer_recv_size(), 8192);
    assert_eq!(b.credits(), 8);
    assert_eq!(b.peer_initial_bufs(), 8);
    assert_eq!(b.addrs(), v4());
    assert_eq!(b.client_port(), 40003);
    assert_eq!(b.flow_control(), FlowControl::Transport);

    a.on_reply(&reply_wire(&reply)).unwrap();
    assert!(a.is_established());
    assert_eq!(a.recv_size(), 8192);
    assert_eq!(a.peer_recv_size(), 4096);
    assert_eq!(a.credits(), 6);
    assert_eq!(a.peer_initial_bufs(), 6);
    assert_eq!(a.on_reply(&reply), Err(HandshakeError::Unexpected));
}

#[test]
fn iw2_iw6_handshake_ipv6_and_act_rcv_sz_choice() {
    // iWarp mapping Figure 1, IPVer 6; ActRcvSz from DesRemRcvSz, within [minimum, own size].
    let server = stream_cfg(2048, 4);
    for (desired, act) in [(0, 2048), (1000, 1000), (9000, 2048), (5, 17)] {
        let client = ClientConfig {
            stream: stream_cfg(1024, 4),
            flow_control: FlowControl::Transport,
            addrs: v6(),
            local_port: 5000,
            desired_remote_recv_size: desired,
        };
        let (mut a, hello) = IwarpStream::client(&client).unwrap();
        let mut pd = [0u8; 92];
        hello.emit(&mut pd).unwrap();
        assert_eq!(pd[17] >> 4, 6);
        assert_eq!(pd[32..48], v6_src_octets());
        let (b, reply) = IwarpStream::server(&server, &hello_wire(&hello)).unwrap();
        assert_eq!(reply.act_rcv_sz, act, "DesRemRcvSz {desired}");
        assert_eq!(b.recv_size(), act);
        assert_eq!(b.addrs(), v6());
        a.on_reply(&reply_wire(&reply)).unwrap();
        assert_eq!(a.peer_recv_size(), act);
    }
}

fn v6_src_octets() -> [u8; 16] {
    match v6() {
        IpPair::V6 { src, .. } => src.octets(),
        IpPair::V4 { .. } => unreachable!(),
    }
}

#[test]
fn iw6_server_refuses_what_cannot_work() {
    let cfg = stream_cfg(4096, 4);
    let (_, good) = IwarpStream::client(&client_cfg(FlowControl::Transport, cfg)).unwrap();
    // MajVer as SDP: another major version is refused, another minor accepted.
    let mut h = good;
    h.major_version = MAJOR_VERSION + 1;
    assert_eq!(
        IwarpStream::server(&cfg, &h).map(|_| ()),
        Err(HandshakeError::Version(MAJOR_VERSION + 1))
    );
    h.major_version = MAJOR_VERSION;
    h.minor_version = 9;
    assert!(IwarpStream::server(&cfg, &h).is_ok());
    // iWarp mapping FlowC: other values reserved.
    let mut h = good;
    h.flow_control = FlowControl::Unknown(3);
    assert_eq!(
        IwarpStream::server(&cfg, &h).map(|_| ()),
        Err(HandshakeError::FlowControl(3))
    );
    // A LocalRcvSz that cannot hold the BSDH and a byte (FlowC 0), or a byte (FlowC 1).
    let mut h = good;
    h.local_rcv_sz = 16;
    assert_eq!(
        IwarpStream::server(&cfg, &h).map(|_| ()),
        Err(HandshakeError::RecvSize(16))
    );
    h.flow_control = FlowControl::Ulp;
    assert!(IwarpStream::server(&cfg, &h).is_ok());
    h.local_rcv_sz = 0;
    assert_eq!(
        IwarpStream::server(&cfg, &h).map(|_| ()),
        Err(HandshakeError::RecvSize(0))
    );
    // Our own configuration too shallow for FlowC 0.
    assert_eq!(
        IwarpStream::server(&stream_cfg(4096, 3), &good).map(|_| ()),
        Err(HandshakeError::RecvDepth(3))
    );
}

#[test]
fn iw6_client_refuses_bad_config_and_reply() {
    let bad = |stream: StreamConfig, fc| IwarpStream::client(&client_cfg(fc, stream)).map(|_| ());
    assert_eq!(
        bad(stream_cfg(16, 4), FlowControl::Transport),
        Err(HandshakeError::RecvSize(16))
    );
    assert_eq!(
        bad(stream_cfg(64, 3), FlowControl::Transport),
        Err(HandshakeError::RecvDepth(3))
    );
    assert_eq!(bad(stream_cfg(1, 1), FlowControl::Ulp), Ok(()));
    assert_eq!(
        bad(stream_cfg(64, 0), FlowControl::Ulp),
        Err(HandshakeError::RecvDepth(0))
    );
    assert_eq!(
        bad(stream_cfg(64, 4), FlowControl::Unknown(15)),
        Err(HandshakeError::FlowControl(15))
    );
    let mut no_queue = stream_cfg(64, 4);
    no_queue.send_buffer = 0;
    assert_eq!(
        bad(no_queue, FlowControl::Transport),
        Err(HandshakeError::SendBuffer)
    );

    let cfg = stream_cfg(4096, 4);
    let (mut a, hello) = IwarpStream::client(&client_cfg(FlowControl::Transport, cfg)).unwrap();
    let (mut b, reply) = IwarpStream::server(&cfg, &hello).unwrap();
    assert_eq!(b.on_reply(&reply), Err(HandshakeError::Unexpected));
    let mut r = reply;
    r.major_version = 0;
    assert_eq!(a.on_reply(&r), Err(HandshakeError::Version(0)));
    r = reply;
    r.act_rcv_sz = 16;
    assert_eq!(a.on_reply(&r), Err(HandshakeError::RecvSize(16)));
    assert!(!a.is_established());
    assert_eq!(a.poll_send(), None);
    r = reply;
    r.minor_version = 7;
    assert_eq!(a.on_reply(&r), Ok(()));
}

#[test]
fn iw2_ulp_flow_control_handshake() {
    // iWarp mapping FlowC 1: the sizes and depth are exchanged for the ULP, which then owns flow
    // control; a receive buffer need not hold a BSDH.
    let client = ClientConfig {
        stream: stream_cfg(1, 1),
        flow_control: FlowControl::Ulp,
        addrs: v6(),
        local_port: 3260,
        desired_remote_recv_size: 8,
    };
    let (mut a, hello) = IwarpStream::client(&client).unwrap();
    let mut pd = [0u8; 92];
    hello.emit(&mut pd).unwrap();
    assert_eq!(pd[17], 0x61);
    let (b, reply) = IwarpStream::server(&stream_cfg(512, 2), &hello_wire(&hello)).unwrap();
    assert_eq!(b.flow_control(), FlowControl::Ulp);
    assert_eq!(reply.act_rcv_sz, 8);
    a.on_reply(&reply).unwrap();
    assert_eq!(a.peer_initial_bufs(), 2);
    assert_eq!(b.peer_initial_bufs(), 1);
}

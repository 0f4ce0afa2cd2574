//! The iWarp-emulation stream's tests: a client and a server stream joined by a [`Pair`], whose
//! two in-order queues stand for the RC connection, and whose own count of posted receive buffers
//! stands for the QPs' receive queues (so an overrun shows up in the harness, not only in the
//! stream's own accounting).
//!
//! Files: `handshake` (Hello / HelloReply, sizes and depths, refusals), `credits` (the BSDH on every
//! SEND, credits running out and coming back, credit updates), `stream` (a 1 MiB byte stream each
//! way under random interleaving), `ulp` (FlowC 1 passthrough), `hostile` (bad BSDHs, bounded
//! queues, random input).

mod credits;
mod handshake;
mod hostile;
mod stream;
mod ulp;

use super::*;
use ipoib_wire::private_data::iwarp::{HELLO_LEN, HELLO_REPLY_LEN};
use std::net::{Ipv4Addr, Ipv6Addr};

pub(super) fn v4() -> IpPair {
    IpPair::V4 {
        src: Ipv4Addr::new(10, 0, 0, 1),
        dst: Ipv4Addr::new(10, 0, 0, 2),
    }
}

pub(super) fn v6() -> IpPair {
    IpPair::V6 {
        src: Ipv6Addr::new(0xfe80, 0, 0, 0, 0x0202, 0xc903, 0, 0x0a),
        dst: Ipv6Addr::new(0xfe80, 0, 0, 0, 0x0202, 0xc903, 0, 0x0b),
    }
}

pub(super) fn stream_cfg(recv_size: u32, recv_depth: u16) -> StreamConfig {
    StreamConfig {
        recv_size,
        recv_depth,
        send_buffer: 64 * 1024,
    }
}

pub(super) fn client_cfg(fc: FlowControl, stream: StreamConfig) -> ClientConfig {
    ClientConfig {
        stream,
        flow_control: fc,
        addrs: v4(),
        local_port: 40003,
        desired_remote_recv_size: stream.recv_size,
    }
}

/// The Hello through the bytes of a CM REQ's private data (92 bytes, IBA 1 §12.6).
pub(super) fn hello_wire(h: &HelloRepr) -> HelloRepr {
    let mut pd = [0u8; 92];
    h.emit(&mut pd).expect("a Hello fits the REQ");
    HelloRepr::parse(&pd).expect("our Hello parses")
}

/// The HelloReply through the bytes of a CM REP's private data (196 bytes).
pub(super) fn reply_wire(r: &HelloReplyRepr) -> HelloReplyRepr {
    let mut pd = [0u8; 196];
    r.emit(&mut pd).expect("a HelloReply fits the REP");
    HelloReplyRepr::parse(&pd).expect("our HelloReply parses")
}

/// One end: the stream, what its QP has posted, and the SENDs travelling towards it.
pub(super) struct End {
    pub s: IwarpStream,
    /// Receive buffers on the QP (the host's count, from `poll_recv_buffers`).
    pub posted: u32,
    /// SENDs in flight to this end, in order (RC).
    pub inbox: VecDeque<Vec<u8>>,
    /// Every SEND delivered to this end.
    pub delivered: u64,
}

impl End {
    fn new(s: IwarpStream) -> End {
        End {
            s,
            posted: 0,
            inbox: VecDeque::new(),
            delivered: 0,
        }
    }

    /// Posts what the stream asks for.
    pub fn post(&mut self) {
        self.posted += self.s.poll_recv_buffers();
    }

    /// Delivers the oldest SEND in flight; false when none. Panics, as a QP would fail, when no
    /// receive buffer is posted or the SEND is longer than the buffers.
    pub fn deliver(&mut self) -> bool {
        let Some(m) = self.inbox.pop_front() else {
            return false;
        };
        assert!(self.posted > 0, "SEND with no receive buffer posted (RNR)");
        assert!(
            m.len() <= self.s.recv_size() as usize,
            "SEND of {} bytes into {}-byte buffers",
            m.len(),
            self.s.recv_size()
        );
        self.posted -= 1;
        self.delivered += 1;
        self.s.handle_message(&m);
        true
    }

    /// Delivers the oldest SEND without the harness's checks (for SENDs a QP would have failed).
    pub fn deliver_unchecked(&mut self) {
        if let Some(m) = self.inbox.pop_front() {
            self.delivered += 1;
            self.s.handle_message(&m);
        }
    }

    /// Reads everything readable.
    pub fn read_all(&mut self) -> Vec<u8> {
        let mut out = vec![0u8; self.s.readable_bytes()];
        let n = self.s.recv(&mut out);
        out.truncate(n);
        out
    }

    /// The events, in order.
    pub fn events(&mut self) -> Vec<StreamEvent> {
        std::iter::from_fn(|| self.s.poll_event()).collect()
    }
}

/// Two ends after the handshake: `a` the client, `b` the server.
pub(super) struct Pair {
    pub a: End,
    pub b: End,
}

impl Pair {
    /// Runs the handshake through the private-data bytes and posts both sides' first buffers.
    pub fn new(client: &ClientConfig, server: &StreamConfig) -> Pair {
        let (mut a, hello) = IwarpStream::client(client).expect("client config");
        assert_eq!(hello.buffer_len(), HELLO_LEN);
        let (b, reply) = IwarpStream::server(server, &hello_wire(&hello)).expect("server accepts");
        assert_eq!(reply.buffer_len(), HELLO_REPLY_LEN);
        a.on_reply(&reply_wire(&reply)).expect("client accepts");
        let mut p = Pair {
            a: End::new(a),
            b: End::new(b),
        };
        p.a.post();
        p.b.post();
        p
    }

    /// FlowC 0, both sides `recv_size` × `depth`.
    pub fn transport(recv_size: u32, depth: u16) -> Pair {
        let cfg = stream_cfg(recv_size, depth);
        Pair::new(&client_cfg(FlowControl::Transport, cfg), &cfg)
    }

    /// Moves one SEND from `a` to `b`'s inbox (or the other way); false when there was none.
    pub fn transmit(&mut self, from_a: bool) -> bool {
        let (from, to) = if from_a {
            (&mut self.a, &mut self.b)
        } else {
            (&mut self.b, &mut self.a)
        };
        from.post();
        match from.s.poll_send() {
            Some(m) => {
                to.inbox.push_back(m);
                true
            }
            None => false,
        }
    }

    /// Moves and delivers SENDs both ways until nothing moves; returns how many SENDs went. Panics
    /// after `limit` SENDs (a livelock, e.g. credit updates answering each other).
    pub fn drive(&mut self, limit: u64) -> u64 {
        let mut n = 0;
        loop {
            let mut moved = false;
            while self.transmit(true) {
                n += 1;
                moved = true;
            }
            while self.transmit(false) {
                n += 1;
                moved = true;
            }
            self.b.post();
            while self.b.deliver() {
                moved = true;
            }
            self.a.post();
            while self.a.deliver() {
                moved = true;
            }
            assert!(n <= limit, "more than {limit} SENDs: livelock");
            if !moved {
                return n;
            }
        }
    }
}

/// The BSDH of a SEND.
pub(super) fn bsdh(m: &[u8]) -> ipoib_wire::bsdh::BsdhRepr {
    ipoib_wire::bsdh::BsdhRepr::parse(m).expect("a BSDH")
}

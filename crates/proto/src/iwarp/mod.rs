//! iWarp emulation over an RC connection ("Mapping of iWarp/TCP connections to InfiniBand", v0.30,
//! cited as "iWarp mapping"): the byte stream, or the message passthrough, that runs on the RC QP
//! once the CM REQ has carried the Hello and the REP the HelloReply. No IO, no clock, no threads.
//!
//! How the connection is made is not this module's business: the caller (the IP CM service, a test)
//! puts [`IwarpStream::client`]'s Hello into the REQ, hands the REQ's Hello to
//! [`IwarpStream::server`] and its HelloReply to the REP, and gives the REP's HelloReply to
//! [`IwarpStream::on_reply`]. The caller owns the QP and moves values between it and the stream:
//!
//! - [`IwarpStream::poll_recv_buffers`]: how many receive buffers of [`IwarpStream::recv_size`]
//!   bytes to post. The first answer covers the buffers the Hello or HelloReply advertised (`bufs`),
//!   which must be posted before that CM message leaves; later answers give back the buffers whose
//!   bytes the user has read. Call it before [`IwarpStream::poll_send`]: only buffers handed out are
//!   advertised.
//! - [`IwarpStream::poll_send`]: the next SEND to post, whole.
//! - [`IwarpStream::handle_message`]: a SEND that arrived (one receive completion), in order, as
//!   RC delivers.
//! - [`IwarpStream::send`], [`IwarpStream::recv`], [`IwarpStream::recv_message`] for the user, and
//!   [`IwarpStream::poll_event`] ([`StreamEvent::Readable`], [`StreamEvent::Writable`],
//!   [`StreamEvent::Error`]).
//!
//! # The two modes (iWarp mapping, FlowC)
//!
//! - **FlowC 0, the transport owns flow control** (`transport`): every SEND starts with SDP's
//!   16-byte BSDH ([`ipoib_wire::bsdh`]) with MID zero, and the stream runs SDP's credit scheme
//!   (docs/DEPLOYED.md "SDP (the data structures the iWarp mapping reuses)"). `send` takes bytes, the
//!   stream cuts them into messages no longer than the peer's receive buffers and sends one only
//!   while it holds a credit for it; received payload is delivered in order by `recv`.
//! - **FlowC 1, the ULP owns flow control and the whole SEND buffer**: no header. `send` takes one
//!   message, `recv_message` returns one; the stream checks sizes and posts receive buffers but
//!   counts no credits (the ULP does, from [`IwarpStream::peer_initial_bufs`] on).
//!
//! # The handshake (iWarp mapping §II: "exchanging receiver buffer size and depth")
//!
//! - Hello: `bufs` = our receive depth (the peer's first credits), LocalRcvSz = our receive buffer
//!   size, DesRemRcvSz = the size we would like the peer's buffers to have, FlowC, our version.
//! - HelloReply: `bufs` = the server's receive depth, ActRcvSz = the size of the buffers the server
//!   posts: DesRemRcvSz brought into `[minimum, own size]`, or its own size when DesRemRcvSz is 0.
//! - Each side sends messages of at most the other's size (LocalRcvSz for the server, ActRcvSz for
//!   the client), BSDH included.
//! - Versions: the mapping gives none ("as in SDP"); we send [`MAJOR_VERSION`].[`MINOR_VERSION`]
//!   and, as SDP implementations do, refuse another major version and accept any minor.
//!
//! Invariants:
//! - bad input never panics: a message that breaks a rule is counted ([`StreamStats::bad`]), the
//!   stream fails with the reason ([`IwarpStream::error`], [`StreamEvent::Error`]), and later
//!   messages are ignored and counted ([`StreamStats::ignored`]);
//! - memory is bounded: the send queue by [`StreamConfig::send_buffer`], received data by the
//!   receive depth (a buffer is given back only once its bytes are read), events by one pending
//!   flag each;
//! - in FlowC 0 no SEND leaves without a credit, a data SEND only with two or more (SDP's rule that
//!   the last credit carries credits only), so a peer that follows SDP is never overrun.

mod transport;

#[cfg(test)]
mod tests;

use ipoib_wire::bsdh::BSDH_LEN;
use ipoib_wire::private_data::iwarp::{HELLO_LEN, HELLO_REPLY_LEN};
use ipoib_wire::private_data::{FlowControl, HelloReplyRepr, HelloRepr, IpPair};
use std::collections::VecDeque;

/// The major version we send and accept (iWarp mapping: MajVer "as in SDP"; the mapping gives no
/// number, and 1 is its first).
pub const MAJOR_VERSION: u8 = 1;
/// The minor version we send; any minor version is accepted.
pub const MINOR_VERSION: u8 = 0;
/// The fewest receive buffers a FlowC 0 stream keeps posted. With fewer, SDP's credit-update
/// threshold (docs/DEPLOYED.md "SDP ...") would answer every credit update with another one.
pub const MIN_TRANSPORT_RECV_DEPTH: u16 = 4;
/// Credits a data SEND needs in FlowC 0: the last credit only carries credits (SDP CA4-82,
/// docs/DEPLOYED.md "SDP ...").
pub const MIN_DATA_CREDITS: u32 = 2;

/// The smallest receive buffer that can carry one byte: 17 with the BSDH, 1 without.
pub fn min_recv_size(flow_control: FlowControl) -> u32 {
    match flow_control {
        FlowControl::Transport => BSDH_LEN as u32 + 1,
        _ => 1,
    }
}

/// What a stream needs on either side.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamConfig {
    /// Bytes of each receive buffer we post, the BSDH included in FlowC 0 (LocalRcvSz in the Hello;
    /// on the server the most it answers as ActRcvSz).
    pub recv_size: u32,
    /// Receive buffers kept posted: the `bufs` of the Hello or HelloReply, the peer's credits.
    pub recv_depth: u16,
    /// Most bytes `send` holds that have not left yet.
    pub send_buffer: usize,
}

impl StreamConfig {
    /// 32 KiB buffers, 16 deep, 256 KiB of send queue (the buffer size is OFED SDP's initial
    /// receive size, docs/DEPLOYED.md "SDP ...").
    pub fn new() -> StreamConfig {
        StreamConfig {
            recv_size: 32 * 1024,
            recv_depth: 16,
            send_buffer: 256 * 1024,
        }
    }

    fn check(&self, flow_control: FlowControl) -> Result<(), HandshakeError> {
        if self.recv_size < min_recv_size(flow_control) {
            return Err(HandshakeError::RecvSize(self.recv_size));
        }
        let min_depth = match flow_control {
            FlowControl::Transport => MIN_TRANSPORT_RECV_DEPTH,
            _ => 1,
        };
        if self.recv_depth < min_depth {
            return Err(HandshakeError::RecvDepth(self.recv_depth));
        }
        if self.send_buffer == 0 {
            return Err(HandshakeError::SendBuffer);
        }
        Ok(())
    }
}

impl Default for StreamConfig {
    fn default() -> StreamConfig {
        StreamConfig::new()
    }
}

/// What the active side puts in its Hello.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientConfig {
    /// Buffers and queues.
    pub stream: StreamConfig,
    /// FlowC: who owns flow control.
    pub flow_control: FlowControl,
    /// Our address (source) and the server's (destination).
    pub addrs: IpPair,
    /// Our TCP port (the server's is in the service ID).
    pub local_port: u16,
    /// DesRemRcvSz: the receive buffer size we ask the server for; 0 leaves it to the server.
    pub desired_remote_recv_size: u32,
}

/// Why a handshake, or a stream's configuration, is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum HandshakeError {
    /// The peer speaks another major version.
    #[error("major version {0}, we speak {MAJOR_VERSION}")]
    Version(u8),
    /// FlowC is reserved (neither 0 nor 1).
    #[error("FlowC {0} is reserved")]
    FlowControl(u8),
    /// A receive size too small to carry a byte (ours in the config, or the peer's).
    #[error("receive size {0} cannot carry a byte")]
    RecvSize(u32),
    /// Our receive depth is below the minimum of the mode.
    #[error("receive depth {0} below the minimum")]
    RecvDepth(u16),
    /// Our send buffer is zero.
    #[error("send buffer of zero bytes")]
    SendBuffer,
    /// A HelloReply on a server stream, or a second one.
    #[error("no HelloReply expected")]
    Unexpected,
}

/// Why a received SEND broke the rules; the stream fails with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum StreamError {
    /// A FlowC 0 message shorter than the BSDH.
    #[error("message of {0} bytes has no room for the 16-byte BSDH")]
    Truncated(usize),
    /// BSDH MID other than zero.
    #[error("BSDH MID {0}, only 0 is allowed")]
    Mid(u8),
    /// BSDH len disagrees with the message.
    #[error("BSDH len {field}, message of {actual} bytes")]
    Length {
        /// The len field.
        field: u32,
        /// The message's length.
        actual: usize,
    },
    /// A message longer than our receive buffers (the QP would have failed it).
    #[error("message of {len} bytes, receive buffers of {max}")]
    TooLarge {
        /// The message's length.
        len: usize,
        /// Our receive size.
        max: u32,
    },
    /// mseq out of order.
    #[error("mseq {got}, expected {expected}")]
    Sequence {
        /// The next mseq.
        expected: u32,
        /// The one received.
        got: u32,
    },
    /// mseq_ack acknowledges a message we never sent, or goes back.
    #[error("mseq_ack {0} outside what was sent")]
    Ack(u32),
    /// bufs is below the messages the peer has not yet received, so the peer took credits away.
    #[error("bufs {bufs} below the {in_flight} messages in flight")]
    Credits {
        /// The bufs field.
        bufs: u16,
        /// Our messages the peer had not received.
        in_flight: u32,
    },
    /// A message arrived while no receive buffer was posted.
    #[error("message with no receive buffer posted")]
    Overrun,
    /// A message before the HelloReply.
    #[error("message before the handshake completed")]
    NotEstablished,
}

/// Why `send` did not take the bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SendError {
    /// The send queue is full; [`StreamEvent::Writable`] follows when it drains.
    #[error("send queue full")]
    Full,
    /// FlowC 1: the message is longer than the peer's receive buffers.
    #[error("message of {len} bytes, peer receive buffers of {max}")]
    TooLarge {
        /// The message's length.
        len: usize,
        /// The peer's receive size.
        max: u32,
    },
    /// FlowC 1 before the HelloReply: the peer's receive size, which bounds a message, is unknown.
    #[error("handshake not complete")]
    NotEstablished,
    /// The stream has failed.
    #[error("stream failed: {0}")]
    Failed(StreamError),
}

/// What the user must know.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamEvent {
    /// Received bytes wait for `recv`.
    Readable,
    /// `send` refused bytes before, and now has room.
    Writable,
    /// The peer broke a rule; the stream is dead (tear the connection down).
    Error(StreamError),
}

/// Counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StreamStats {
    /// SENDs handed out by `poll_send`.
    pub sent: u64,
    /// Of which credit updates (FlowC 0, BSDH only).
    pub credit_updates: u64,
    /// SENDs accepted by `handle_message`.
    pub received: u64,
    /// SENDs that broke a rule.
    pub bad: u64,
    /// SENDs ignored because the stream had failed.
    pub ignored: u64,
}

/// A received SEND whose receive buffer is held until its bytes are read.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Held {
    data: Vec<u8>,
    read: usize,
}

/// Which side of the handshake we are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    /// Waiting for the HelloReply.
    Connecting,
    /// Client after the HelloReply, or server.
    Established,
}

/// One iWarp-emulated connection's data path (see the module docs).
#[derive(Debug, Clone)]
pub struct IwarpStream {
    flow_control: FlowControl,
    role: Role,
    is_client: bool,
    addrs: IpPair,
    client_port: u16,
    cfg: StreamConfig,
    /// Our receive buffer size: the config's on the client, ActRcvSz on the server.
    recv_size: u32,
    /// The peer's receive buffer size (0 until known).
    peer_recv_size: u32,
    peer_initial_bufs: u16,

    // Receive buffers.
    /// Buffers posted (or, for the first batch, to be posted before the CM message leaves).
    posted: u32,
    /// Buffers freed and not yet handed out by `poll_recv_buffers`.
    unposted: u32,
    /// The first batch, still to hand out.
    initial: u32,
    held: VecDeque<Held>,
    readable: usize,

    // Send side.
    /// FlowC 0: the byte stream not yet sent.
    send_bytes: VecDeque<u8>,
    /// FlowC 1: messages not yet sent.
    send_msgs: VecDeque<Vec<u8>>,
    /// Bytes in either queue.
    queued: usize,
    send_blocked: bool,

    // FlowC 0 credits and sequence numbers (SDP's BSDH; the Hello and HelloReply are mseq 0).
    /// Our credits: SENDs the peer has buffers for.
    credits: u32,
    /// mseq of the last SEND we sent.
    tx_seq: u32,
    /// mseq of the last SEND we received.
    rx_seq: u32,
    /// The last mseq_ack received.
    peer_acked: u32,
    /// The peer's credits as we know them: bufs of our last SEND minus the SENDs received since.
    remote_credits: u32,

    error: Option<StreamError>,
    readable_event: bool,
    writable_event: bool,
    error_event: bool,
    stats: StreamStats,
}

impl IwarpStream {
    fn new(flow_control: FlowControl, cfg: StreamConfig, addrs: IpPair, client_port: u16) -> Self {
        let depth = u32::from(cfg.recv_depth);
        IwarpStream {
            flow_control,
            role: Role::Connecting,
            is_client: true,
            addrs,
            client_port,
            cfg,
            recv_size: cfg.recv_size,
            peer_recv_size: 0,
            peer_initial_bufs: 0,
            posted: depth,
            unposted: 0,
            initial: depth,
            held: VecDeque::new(),
            readable: 0,
            send_bytes: VecDeque::new(),
            send_msgs: VecDeque::new(),
            queued: 0,
            send_blocked: false,
            credits: 0,
            tx_seq: 0,
            rx_seq: 0,
            peer_acked: 0,
            remote_credits: depth,
            error: None,
            readable_event: false,
            writable_event: false,
            error_event: false,
            stats: StreamStats::default(),
        }
    }

    /// The active side: a stream waiting for its HelloReply, and the Hello for the CM REQ's private
    /// data (iWarp mapping Figure 1). `Err` when the configuration cannot work (reserved FlowC,
    /// receive size below [`min_recv_size`], depth below the mode's minimum, no send buffer).
    pub fn client(cfg: &ClientConfig) -> Result<(IwarpStream, HelloRepr), HandshakeError> {
        check_flow_control(cfg.flow_control)?;
        cfg.stream.check(cfg.flow_control)?;
        let s = IwarpStream::new(cfg.flow_control, cfg.stream, cfg.addrs, cfg.local_port);
        let hello = HelloRepr {
            bufs: cfg.stream.recv_depth,
            len: HELLO_LEN as u32,
            major_version: MAJOR_VERSION,
            minor_version: MINOR_VERSION,
            flow_control: cfg.flow_control,
            des_rem_rcv_sz: cfg.desired_remote_recv_size,
            local_rcv_sz: cfg.stream.recv_size,
            local_port: cfg.local_port,
            addrs: cfg.addrs,
        };
        Ok((s, hello))
    }

    /// The passive side: checks the Hello of a CM REQ and answers the stream and the HelloReply for
    /// the REP (iWarp mapping, CM Reply figure). `Err` when the REQ should be rejected: another major
    /// version, reserved FlowC, a LocalRcvSz that cannot carry a byte, or our own `cfg` unusable in
    /// the requested mode.
    pub fn server(
        cfg: &StreamConfig,
        hello: &HelloRepr,
    ) -> Result<(IwarpStream, HelloReplyRepr), HandshakeError> {
        if hello.major_version != MAJOR_VERSION {
            return Err(HandshakeError::Version(hello.major_version));
        }
        check_flow_control(hello.flow_control)?;
        cfg.check(hello.flow_control)?;
        let min = min_recv_size(hello.flow_control);
        if hello.local_rcv_sz < min {
            return Err(HandshakeError::RecvSize(hello.local_rcv_sz));
        }
        // DesRemRcvSz is what the client would like our buffers to be; we post no larger buffers
        // than we can, nor smaller than can carry a byte; 0 leaves the choice to us.
        let act = match hello.des_rem_rcv_sz {
            0 => cfg.recv_size,
            d => d.clamp(min, cfg.recv_size),
        };
        let mut s = IwarpStream::new(hello.flow_control, *cfg, hello.addrs, hello.local_port);
        s.is_client = false;
        s.recv_size = act;
        s.establish(hello.local_rcv_sz, hello.bufs);
        let reply = HelloReplyRepr {
            bufs: cfg.recv_depth,
            len: HELLO_REPLY_LEN as u32,
            major_version: MAJOR_VERSION,
            minor_version: MINOR_VERSION,
            act_rcv_sz: act,
        };
        Ok((s, reply))
    }

    /// The active side takes the REP's HelloReply: the server's receive size and depth. `Err` (and
    /// the stream stays unusable) for another major version or an ActRcvSz that cannot carry a
    /// byte; [`HandshakeError::Unexpected`] on a server or a second reply.
    pub fn on_reply(&mut self, reply: &HelloReplyRepr) -> Result<(), HandshakeError> {
        if !self.is_client || self.role != Role::Connecting {
            return Err(HandshakeError::Unexpected);
        }
        if reply.major_version != MAJOR_VERSION {
            return Err(HandshakeError::Version(reply.major_version));
        }
        if reply.act_rcv_sz < min_recv_size(self.flow_control) {
            return Err(HandshakeError::RecvSize(reply.act_rcv_sz));
        }
        self.establish(reply.act_rcv_sz, reply.bufs);
        Ok(())
    }

    fn establish(&mut self, peer_recv_size: u32, peer_bufs: u16) {
        self.role = Role::Established;
        self.peer_recv_size = peer_recv_size;
        self.peer_initial_bufs = peer_bufs;
        self.credits = u32::from(peer_bufs);
    }

    /// Queues bytes to send. FlowC 0: takes as many bytes as the send buffer has room for and
    /// returns how many (TCP-like partial writes), also before the HelloReply. FlowC 1: takes
    /// `data` as one message, whole or not at all, once the handshake is complete. `Err(Full)` when
    /// nothing could be taken ([`StreamEvent::Writable`] follows), `Err(TooLarge)` for a FlowC 1
    /// message longer than the peer's receive size, `Err(Failed)` once the stream has failed.
    pub fn send(&mut self, data: &[u8]) -> Result<usize, SendError> {
        if let Some(e) = self.error {
            return Err(SendError::Failed(e));
        }
        let room = self.cfg.send_buffer.saturating_sub(self.queued);
        if self.flow_control == FlowControl::Transport {
            if data.is_empty() {
                return Ok(0);
            }
            let n = data.len().min(room);
            if n == 0 {
                self.send_blocked = true;
                return Err(SendError::Full);
            }
            self.send_bytes.extend(&data[..n]);
            self.queued += n;
            return Ok(n);
        }
        if self.role != Role::Established {
            return Err(SendError::NotEstablished);
        }
        if data.len() > self.peer_recv_size as usize {
            return Err(SendError::TooLarge {
                len: data.len(),
                max: self.peer_recv_size,
            });
        }
        // An empty message still needs a slot: count it as one byte of the queue.
        if data.len().max(1) > room {
            self.send_blocked = true;
            return Err(SendError::Full);
        }
        self.send_msgs.push_back(data.to_vec());
        self.queued += data.len().max(1);
        Ok(data.len())
    }

    /// The next SEND to post on the RC QP, whole (FlowC 0: BSDH and payload), or `None`.
    pub fn poll_send(&mut self) -> Option<Vec<u8>> {
        if self.role != Role::Established || self.error.is_some() {
            return None;
        }
        let msg = if self.flow_control == FlowControl::Transport {
            self.poll_send_transport()?
        } else {
            let m = self.send_msgs.pop_front()?;
            self.queued -= m.len().max(1);
            m
        };
        self.stats.sent += 1;
        if self.send_blocked && self.queued < self.cfg.send_buffer {
            self.send_blocked = false;
            self.writable_event = true;
        }
        Some(msg)
    }

    /// Receive buffers (of [`Self::recv_size`] bytes) to post now; the stream counts them as posted.
    pub fn poll_recv_buffers(&mut self) -> u32 {
        let n = self.initial + self.unposted;
        self.posted += self.unposted;
        self.initial = 0;
        self.unposted = 0;
        n
    }

    /// A SEND received on the RC QP (one receive completion's bytes), in arrival order. A SEND that
    /// breaks a rule fails the stream (see [`StreamError`]); nothing here panics.
    pub fn handle_message(&mut self, msg: &[u8]) {
        if self.error.is_some() {
            self.stats.ignored += 1;
            return;
        }
        let r = if self.role != Role::Established {
            Err(StreamError::NotEstablished)
        } else if self.posted == 0 {
            Err(StreamError::Overrun)
        } else if msg.len() > self.recv_size as usize {
            Err(StreamError::TooLarge {
                len: msg.len(),
                max: self.recv_size,
            })
        } else if self.flow_control == FlowControl::Transport {
            self.handle_transport(msg)
        } else {
            self.hold(msg.to_vec());
            Ok(())
        };
        match r {
            Ok(()) => self.stats.received += 1,
            Err(e) => {
                self.stats.bad += 1;
                self.error = Some(e);
                self.error_event = true;
            }
        }
    }

    /// Keeps a received SEND's bytes; its receive buffer comes back once they are read.
    fn hold(&mut self, data: Vec<u8>) {
        self.posted -= 1;
        if self.held.is_empty() {
            self.readable_event = true;
        }
        self.readable += data.len();
        self.held.push_back(Held { data, read: 0 });
    }

    /// Copies received bytes, in order, into `buf`; returns how many (0 when none wait). In FlowC 1
    /// it reads across message boundaries; use [`Self::recv_message`] to keep them.
    pub fn recv(&mut self, buf: &mut [u8]) -> usize {
        let mut n = 0;
        while let Some(h) = self.held.front_mut() {
            let take = (h.data.len() - h.read).min(buf.len() - n);
            buf[n..n + take].copy_from_slice(&h.data[h.read..h.read + take]);
            h.read += take;
            n += take;
            if h.read < h.data.len() {
                break;
            }
            self.held.pop_front();
            self.unposted += 1;
        }
        self.readable -= n;
        n
    }

    /// The unread rest of the oldest received SEND (FlowC 1: one ULP message, possibly empty).
    pub fn recv_message(&mut self) -> Option<Vec<u8>> {
        let h = self.held.pop_front()?;
        self.unposted += 1;
        self.readable -= h.data.len() - h.read;
        let mut data = h.data;
        data.drain(..h.read);
        Some(data)
    }

    /// The next event: an error first, then Readable, then Writable; each is reported once per
    /// occurrence, however often it happened since the last poll.
    pub fn poll_event(&mut self) -> Option<StreamEvent> {
        if self.error_event {
            self.error_event = false;
            return self.error.map(StreamEvent::Error);
        }
        if self.readable_event {
            self.readable_event = false;
            return Some(StreamEvent::Readable);
        }
        if self.writable_event {
            self.writable_event = false;
            return Some(StreamEvent::Writable);
        }
        None
    }

    /// FlowC of the connection.
    pub fn flow_control(&self) -> FlowControl {
        self.flow_control
    }
    /// Whether the handshake is complete (always on a server).
    pub fn is_established(&self) -> bool {
        self.role == Role::Established
    }
    /// The IP addresses of the Hello (source: the client).
    pub fn addrs(&self) -> IpPair {
        self.addrs
    }
    /// The client's TCP port (the Hello's Local Port).
    pub fn client_port(&self) -> u16 {
        self.client_port
    }
    /// Bytes of each receive buffer to post (on the server, the ActRcvSz it answered).
    pub fn recv_size(&self) -> u32 {
        self.recv_size
    }
    /// The peer's receive buffer size, the most a SEND may carry (0 before the HelloReply).
    pub fn peer_recv_size(&self) -> u32 {
        self.peer_recv_size
    }
    /// The peer's `bufs` in the handshake: its first receive depth.
    pub fn peer_initial_bufs(&self) -> u16 {
        self.peer_initial_bufs
    }
    /// FlowC 0: SENDs we may post now (a data SEND needs [`MIN_DATA_CREDITS`]).
    pub fn credits(&self) -> u32 {
        self.credits
    }
    /// Receive buffers counted as posted.
    pub fn posted_recv_buffers(&self) -> u32 {
        self.posted
    }
    /// Bytes `send` holds that have not left.
    pub fn queued_send_bytes(&self) -> usize {
        self.queued
    }
    /// Received bytes not yet read.
    pub fn readable_bytes(&self) -> usize {
        self.readable
    }
    /// Why the stream failed, if it did.
    pub fn error(&self) -> Option<StreamError> {
        self.error
    }
    /// Counters.
    pub fn stats(&self) -> StreamStats {
        self.stats
    }
}

fn check_flow_control(fc: FlowControl) -> Result<(), HandshakeError> {
    match fc {
        FlowControl::Transport | FlowControl::Ulp => Ok(()),
        FlowControl::Unknown(v) => Err(HandshakeError::FlowControl(v)),
    }
}

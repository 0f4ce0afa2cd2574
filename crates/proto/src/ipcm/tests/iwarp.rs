//! iWarp emulation through the IP CM service (iWarp mapping §II, "IB Service ID's used"): two real
//! CMs make the RC connection with the Hello in the REQ and the HelloReply in the REP, then two
//! [`IwarpStream`]s carry a byte stream each way over it, the test moving each SEND from one
//! side's `poll_send` to the other side's `handle_message` only into a posted receive buffer.
//! Tests are named after the iWarp mapping statements (docs/CONFORMANCE.md IW-n) they show.
//! This file holds the connections that come up and the Hello/HelloReply layout, and the helpers
//! both iWarp files use; the refusals are in `iwarp_reject.rs`.

use super::*;
use crate::iwarp::{IwarpStream, StreamConfig, StreamEvent};
use ipoib_wire::cm::{RepRepr, TransportServiceType};
use ipoib_wire::private_data::service_id::{iwarp_service_id, rdma_cm_service_id};
use ipoib_wire::private_data::{FlowControl, HelloReplyRepr, HelloRepr, IpPair, RdmaPortSpace};
use std::collections::VecDeque;

/// Small buffers so that 256 KiB takes many SENDs and the credits run out often.
pub(super) fn stream_cfg() -> StreamConfig {
    StreamConfig {
        recv_size: 4096,
        recv_depth: 8,
        send_buffer: 64 * 1024,
    }
}

pub(super) fn connect_cfg(fc: FlowControl) -> IwarpConnect {
    IwarpConnect {
        stream: stream_cfg(),
        ..IwarpConnect::new(fc)
    }
}

/// The wildcard address of the family of `v6`.
pub(super) fn any(v6: bool) -> IpAddr {
    if v6 {
        Ipv6Addr::UNSPECIFIED.into()
    } else {
        Ipv4Addr::UNSPECIFIED.into()
    }
}

impl World {
    /// B listens for iWarp emulation on `port` of `addr`.
    pub(super) fn listen_b_iwarp(
        &mut self,
        addr: IpAddr,
        port: u16,
        sid: IwarpServiceId,
    ) -> IpListenId {
        let l = self
            .b
            .ipcm
            .listen_iwarp(addr, port, stream_cfg(), sid)
            .unwrap();
        self.settle_now();
        l
    }

    /// A connects an iWarp-emulated connection to `dst` with `pd` after the Hello.
    pub(super) fn connect_a_iwarp(
        &mut self,
        dst: SocketAddr,
        cfg: &IwarpConnect,
        pd: &[u8],
    ) -> IpConnId {
        let now = self.now;
        self.a.ipcm.connect_iwarp(now, dst, None, cfg, pd).unwrap()
    }

    /// The REPs that went over the wire.
    fn reps(&self) -> Vec<RepRepr> {
        self.sent(attr::REP)
            .into_iter()
            .filter_map(|(_, m)| match m {
                CmMessage::Rep(r) => Some(r),
                _ => None,
            })
            .collect()
    }
}

pub(super) fn established(events: &[IpCmEvent]) -> Option<(IpConnId, Vec<u8>)> {
    find(events, |e| match e {
        IpCmEvent::Established { conn, private_data } => Some((*conn, private_data.clone())),
        _ => None,
    })
}

pub(super) fn request(
    events: &[IpCmEvent],
) -> Option<(IpConnId, IpListenId, u8, SocketAddr, SocketAddr)> {
    find(events, |e| match e {
        IpCmEvent::ConnectRequest {
            conn,
            listen,
            protocol,
            src,
            dst,
            ..
        } => Some((*conn, *listen, *protocol, *src, *dst)),
        _ => None,
    })
}

/// One end of the data path: the stream, the receive buffers its QP holds and the SENDs
/// travelling to it (RC: in order), what it has to write and what it read.
struct End {
    s: IwarpStream,
    posted: u32,
    inbox: VecDeque<Vec<u8>>,
    data: Vec<u8>,
    written: usize,
    read: Vec<u8>,
}

impl End {
    fn new(s: IwarpStream, posted: u32, data: Vec<u8>) -> End {
        End {
            s,
            posted,
            inbox: VecDeque::new(),
            data,
            written: 0,
            read: Vec::new(),
        }
    }

    /// The user writes what the stream takes: FlowC 0 bytes, FlowC 1 messages of up to the
    /// peer's receive size (sizes from `rng`).
    fn write(&mut self, rng: &mut Rng) {
        while self.written < self.data.len() {
            let rest = &self.data[self.written..];
            let r = if self.s.flow_control() == FlowControl::Transport {
                self.s.send(rest)
            } else {
                let max = self.s.peer_recv_size() as usize;
                let n = (1 + rng.below(max as u64) as usize).min(rest.len());
                self.s.send(&rest[..n])
            };
            match r {
                Ok(n) => self.written += n,
                Err(crate::iwarp::SendError::Full) => return,
                Err(e) => panic!("send: {e}"),
            }
        }
    }

    /// The host posts what the stream asks for, and moves its SENDs to the peer's QP.
    fn transmit(&mut self, peer: &mut End) -> bool {
        self.posted += self.s.poll_recv_buffers();
        let mut any = false;
        while let Some(m) = self.s.poll_send() {
            peer.inbox.push_back(m);
            any = true;
        }
        any
    }

    /// The QP takes SENDs into posted buffers only (one waits, as under RNR retries, while none
    /// is posted); the user reads everything.
    fn receive(&mut self) -> bool {
        let mut any = false;
        while self.posted > 0 {
            let Some(m) = self.inbox.pop_front() else {
                break;
            };
            assert!(
                m.len() <= self.s.recv_size() as usize,
                "SEND larger than the buffers"
            );
            self.posted -= 1;
            self.s.handle_message(&m);
            any = true;
        }
        if self.s.flow_control() == FlowControl::Transport {
            assert!(
                self.inbox.is_empty(),
                "FlowC 0: credits keep SENDs within posted buffers"
            );
        }
        while let Some(m) = self.s.recv_message() {
            self.read.extend_from_slice(&m);
        }
        while let Some(e) = self.s.poll_event() {
            assert!(!matches!(e, StreamEvent::Error(_)), "{e:?}");
        }
        any
    }
}

/// Pumps both ends until everything written was read.
fn pump(a: &mut End, b: &mut End, rng: &mut Rng) {
    for _ in 0..100_000 {
        a.write(rng);
        b.write(rng);
        let moved = a.transmit(b) | b.transmit(a) | a.receive() | b.receive();
        if a.read.len() == b.data.len() && b.read.len() == a.data.len() {
            return;
        }
        assert!(moved, "stuck: {:?} / {:?}", a.s.stats(), b.s.stats());
    }
    panic!("no end");
}

fn bytes(rng: &mut Rng, n: usize) -> Vec<u8> {
    (0..n).map(|_| rng.next_u32() as u8).collect()
}

// iWarp mapping §II (IW-1) and "IB Service ID's used" (IW-10): over IPv4 and IPv6, with FlowC 0
// and FlowC 1, A's REQ carries the iWarp service ID of the port and a Hello with both addresses
// and A's port, B's REP a HelloReply; the connection is RC, both sides hear Established, and the
// two streams carry 256 KiB each way over it (IW-2, IW-9 through the CM).
#[test]
fn iw1_iw10_connect_ipv4_ipv6_flowc_0_and_1_then_256_kib_each_way() {
    for v6 in [false, true] {
        for fc in [FlowControl::Transport, FlowControl::Ulp] {
            let mut w = World::new(60);
            let l = w.listen_b_iwarp(any(v6), PORT, IwarpServiceId::Iwarp);
            let dst = SocketAddr::new(b_ip(v6), PORT);
            let ca = w.connect_a_iwarp(dst, &connect_cfg(fc), b"hi");
            w.drive(Duration::from_secs(5));

            // The REQ: service ID, RC, the Hello, then the consumer's bytes.
            let reqs = w.reqs();
            assert_eq!(reqs.len(), 1);
            assert_eq!(reqs[0].service_id, iwarp_service_id(PORT));
            assert_eq!(reqs[0].transport_service_type, TransportServiceType::Rc);
            let hello = HelloRepr::parse(&reqs[0].private_data).unwrap();
            let (al, ar) = w.a.ipcm.addrs(ca).unwrap();
            assert_eq!(ar, dst);
            let want = match (al.ip(), dst.ip()) {
                (IpAddr::V4(src), IpAddr::V4(dst)) => IpPair::V4 { src, dst },
                (IpAddr::V6(src), IpAddr::V6(dst)) => IpPair::V6 { src, dst },
                _ => panic!("families differ"),
            };
            assert_eq!(hello.addrs, want);
            assert_eq!(hello.local_port, al.port());
            assert_eq!(hello.flow_control, fc);
            assert_eq!(hello.bufs, 8);
            assert_eq!(hello.local_rcv_sz, 4096);
            assert_eq!(&reqs[0].private_data[64..66], b"hi");

            // B's consumer heard the Hello's addresses and ports.
            let (cb, listen, protocol, src, bdst) = request(&w.b.events).expect("request");
            assert_eq!((listen, protocol, src, bdst), (l, TCP, al, dst));
            assert_eq!(w.b.ipcm.addrs(cb), Some((bdst, src)));

            // The REP: a HelloReply, then B's consumer's bytes, which A's consumer hears.
            let reps = w.reps();
            assert_eq!(reps.len(), 1);
            let reply = HelloReplyRepr::parse(&reps[0].private_data).unwrap();
            assert_eq!((reply.bufs, reply.act_rcv_sz), (8, 4096));
            let (c, pd) = established(&w.a.events).expect("A established");
            assert_eq!(c, ca);
            assert!(pd.starts_with(b"welcome"), "REP bytes after the HelloReply");
            assert!(established(&w.b.events).is_some(), "B established");

            // The Hello's and HelloReply's buffers were posted before the REQ and REP left.
            assert_eq!(w.a.posted.get(&ca), Some(&8));
            assert_eq!(w.b.posted.get(&cb), Some(&8));

            let sa = w.a.ipcm.take_iwarp_stream(ca).expect("A's stream");
            let sb = w.b.ipcm.take_iwarp_stream(cb).expect("B's stream");
            assert!(w.a.ipcm.take_iwarp_stream(ca).is_none(), "taken once");
            assert_eq!(sa.flow_control(), fc);
            assert_eq!((sa.peer_recv_size(), sb.peer_recv_size()), (4096, 4096));
            assert_eq!(sb.addrs(), want);
            assert_eq!(sb.client_port(), al.port());

            let mut rng = Rng::new(61);
            let mut a = End::new(sa, w.a.posted[&ca], bytes(&mut rng, 256 * 1024));
            let mut b = End::new(sb, w.b.posted[&cb], bytes(&mut rng, 256 * 1024));
            pump(&mut a, &mut b, &mut rng);
            assert!(
                a.read == b.data && b.read == a.data,
                "bytes arrive whole and in order"
            );
            assert!(a.s.stats().sent >= 64 && b.s.stats().sent >= 64);

            w.a.ipcm.disconnect(ca).unwrap();
            w.finish();
        }
    }
}

// iWarp mapping "IB Service ID's used", the option (IW-11): on SDP's service IDs a Hello with
// FlowC 1 is raw iWarp emulation and connects; FlowC 0 there is SDP's Hello, which we do not
// serve (REJ 8), and our client refuses to send it.
#[test]
fn iw11_sdp_service_ids_told_apart_by_flowc() {
    let mut w = World::new(72);
    w.listen_b_iwarp(any(false), PORT, IwarpServiceId::Sdp);
    let dst = SocketAddr::new(b_ip(false), PORT);
    let cfg = IwarpConnect {
        service_id: IwarpServiceId::Sdp,
        ..connect_cfg(FlowControl::Ulp)
    };
    let now = w.now;
    assert!(matches!(
        w.a.ipcm.connect_iwarp(
            now,
            dst,
            None,
            &IwarpConnect {
                flow_control: FlowControl::Transport,
                ..cfg
            },
            b""
        ),
        Err(IpCmError::Invalid(_))
    ));
    let ca = w.connect_a_iwarp(dst, &cfg, b"");
    w.drive(Duration::from_secs(5));
    assert_eq!(
        w.reqs()[0].service_id,
        rdma_cm_service_id(RdmaPortSpace::Sdp, PORT)
    );
    let (cb, ..) = request(&w.b.events).expect("request");
    let mut rng = Rng::new(73);
    let mut a = End::new(
        w.a.ipcm.take_iwarp_stream(ca).unwrap(),
        w.a.posted[&ca],
        bytes(&mut rng, 20_000),
    );
    let mut b = End::new(
        w.b.ipcm.take_iwarp_stream(cb).unwrap(),
        w.b.posted[&cb],
        bytes(&mut rng, 30_000),
    );
    pump(&mut a, &mut b, &mut rng);
    assert!(a.read == b.data && b.read == a.data);
    w.b.ipcm.disconnect(cb).unwrap();
    w.finish();

    // FlowC 0 on SDP's service ID: SDP.
    let mut w = World::new(74);
    w.listen_b_iwarp(any(false), PORT, IwarpServiceId::Sdp);
    w.a.mangle = Some(Box::new(|pd: &mut Vec<u8>| pd[17] &= 0xf0));
    w.connect_a_iwarp(dst, &cfg, b"");
    w.drive(Duration::from_secs(5));
    let (reason, ari, _) = rejected(&w.a.events);
    assert_eq!(
        (reason, ari),
        (RejReason::InvalidServiceId, RejectAri::Empty)
    );
    assert!(w.b.events.is_empty());
    w.finish();

    // The iWarp service ID when B listens on SDP's only: no CM listener.
    let mut w = World::new(75);
    w.listen_b_iwarp(any(false), PORT, IwarpServiceId::Sdp);
    w.connect_a_iwarp(dst, &connect_cfg(FlowControl::Ulp), b"");
    w.drive(Duration::from_secs(5));
    assert_eq!(rejected(&w.a.events).0, RejReason::InvalidServiceId);
    w.finish();
}

/// A connects to B's iWarp listener over `v6` with FlowC `fc`, the REQ's Hello changed by
/// `req` and the REP's HelloReply by `rep`; returns the world once settled, with the REQ's and
/// REP's private data as they went over the wire (after the changes).
pub(super) fn hello_exchange(
    v6: bool,
    fc: FlowControl,
    req: impl FnMut(&mut Vec<u8>) + 'static,
    rep: impl FnMut(&mut Vec<u8>) + 'static,
) -> (World, Vec<u8>, Option<Vec<u8>>) {
    let mut w = World::new(70);
    w.listen_b_iwarp(any(v6), PORT, IwarpServiceId::Iwarp);
    w.a.mangle = Some(Box::new(req));
    w.b.mangle_rep = Some(Box::new(rep));
    w.connect_a_iwarp(SocketAddr::new(b_ip(v6), PORT), &connect_cfg(fc), b"");
    w.drive(Duration::from_secs(5));
    let hello = w.reqs()[0].private_data.to_vec();
    let reply = w.reps().first().map(|r| r.private_data.to_vec());
    (w, hello, reply)
}

/// Both sides came up and nobody was refused.
fn both_up(w: &World) -> bool {
    established(&w.a.events).is_some() && established(&w.b.events).is_some() && w.rejs().is_empty()
}

// iWarp mapping §II (IW-3): the SDP fields that do not apply are reserved: zero in the Hello and
// HelloReply we send, and ignored in the ones we receive.
#[test]
fn iw3_reserved_fields_zero_on_emit_ignored_on_parse() {
    // Hello: byte 1 (SDP's flags), 8-15 (mseq, mseq_ack), 18-19, 30-31. HelloReply: byte 1,
    // 8-15, 17-19.
    let hello_rsvd = [1usize, 8, 9, 10, 11, 12, 13, 14, 15, 18, 19, 30, 31];
    let reply_rsvd = [1usize, 8, 9, 10, 11, 12, 13, 14, 15, 17, 18, 19];
    for v6 in [false, true] {
        let (w, hello, reply) = hello_exchange(v6, FlowControl::Transport, |_| {}, |_| {});
        assert!(both_up(&w));
        let reply = reply.expect("a REP");
        assert!(hello_rsvd.iter().all(|&i| hello[i] == 0), "{hello:02x?}");
        assert!(reply_rsvd.iter().all(|&i| reply[i] == 0), "{reply:02x?}");
        let (w, _, _) = hello_exchange(
            v6,
            FlowControl::Transport,
            move |pd| hello_rsvd.iter().for_each(|&i| pd[i] = 0xff),
            move |pd| reply_rsvd.iter().for_each(|&i| pd[i] = 0xff),
        );
        assert!(both_up(&w), "reserved bytes set to ones are ignored");
    }
}

// iWarp mapping Figure 1 (IW-4): the REQ's Hello, field by field at the offsets of SDP's BSDH and
// Hello header: MID, bufs, len, MajVer/MinVer, IPVer/FlowC, DesRemRcvSz, LocalRcvSz, Local Port,
// Src IP, Dst IP (IPv4 in the low 32 bits of each 128).
#[test]
fn iw4_hello_layout_ipv4_ipv6() {
    for v6 in [false, true] {
        let (w, h, _) = hello_exchange(v6, FlowControl::Ulp, |_| {}, |_| {});
        assert!(both_up(&w));
        let (local, _) = w.a.ipcm.addrs(*w.a.posted.keys().next().unwrap()).unwrap();
        assert_eq!(h[0], 0, "MID Hello");
        assert_eq!(
            u16::from_be_bytes([h[2], h[3]]),
            8,
            "bufs: A's receive depth"
        );
        assert_eq!(u32::from_be_bytes([h[4], h[5], h[6], h[7]]), 64, "len");
        assert_eq!(h[16] >> 4, 1, "MajVer");
        assert_eq!(h[17], if v6 { 0x61 } else { 0x41 }, "IPVer, FlowC 1");
        assert_eq!(
            u32::from_be_bytes([h[24], h[25], h[26], h[27]]),
            4096,
            "LocalRcvSz"
        );
        assert_eq!(
            u16::from_be_bytes([h[28], h[29]]),
            local.port(),
            "Local Port"
        );
        let field = |ip: IpAddr| match ip {
            IpAddr::V4(a) => {
                let mut f = [0u8; 16];
                f[12..].copy_from_slice(&a.octets());
                f
            }
            IpAddr::V6(a) => a.octets(),
        };
        assert_eq!(h[32..48], field(a_ip(v6)), "Src IP");
        assert_eq!(h[48..64], field(b_ip(v6)), "Dst IP");
    }
}

// iWarp mapping "CM Reply" figure (IW-5): the REP's HelloReply: MID 1, bufs, len 24, MajVer/MinVer,
// ActRcvSz.
#[test]
fn iw5_hello_reply_layout_ipv4_ipv6() {
    for v6 in [false, true] {
        let (w, _, r) = hello_exchange(v6, FlowControl::Transport, |_| {}, |_| {});
        assert!(both_up(&w));
        let r = r.expect("a REP");
        assert_eq!(r[0], 1, "MID Reply");
        assert_eq!(
            u16::from_be_bytes([r[2], r[3]]),
            8,
            "bufs: B's receive depth"
        );
        assert_eq!(u32::from_be_bytes([r[4], r[5], r[6], r[7]]), 24, "len");
        assert_eq!(r[16] >> 4, 1, "MajVer");
        assert_eq!(
            u32::from_be_bytes([r[20], r[21], r[22], r[23]]),
            4096,
            "ActRcvSz"
        );
    }
}

// iWarp mapping "FlowC" (IW-8): the low 4 bits of Hello byte 17 say who owns flow control, 0 the
// transport and 1 the ULP; the server's stream runs the mode the Hello names; reserved values
// are refused.
#[test]
fn iw8_flowc_field_0_and_1() {
    for v6 in [false, true] {
        for fc in [FlowControl::Transport, FlowControl::Ulp] {
            let (mut w, h, _) = hello_exchange(v6, fc, |_| {}, |_| {});
            assert!(both_up(&w));
            assert_eq!(h[17] & 0x0f, u8::from(fc));
            let (cb, ..) = request(&w.b.events).unwrap();
            assert_eq!(w.b.ipcm.take_iwarp_stream(cb).unwrap().flow_control(), fc);
        }
        let (w, _, _) = hello_exchange(v6, FlowControl::Ulp, |pd| pd[17] |= 0x0e, |_| {});
        let (reason, _, pd) = rejected(&w.a.events);
        assert_eq!(reason, RejReason::ConsumerDefined);
        assert!(String::from_utf8_lossy(&pd).contains("FlowC 15 is reserved"));
    }
}

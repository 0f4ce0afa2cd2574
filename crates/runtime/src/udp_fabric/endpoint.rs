//! The UDP socket as an endpoint of the real-time driver ([`UdpEndpoint`]) and the agents'
//! side of it ([`DatagramPeer`]): batched reads (`recvmmsg(2)`, `UDP_GRO`) and sends
//! (`UDP_SEGMENT` runs), docs/UDP-FABRIC.md "Timing".

use super::{IoCounters, BUF_LEN};
use crate::realtime::Endpoint;
use ipoib_fabric::node::remote::Outgoing;
use nix::sys::socket::SockaddrStorage;
use std::io::{self, ErrorKind};
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::{AsRawFd, RawFd};

/// An emulation that speaks datagrams: what [`UdpEndpoint`] reads goes in, what it sends comes
/// out.
pub trait DatagramPeer {
    /// A datagram from `from`, at the emulation's present.
    fn on_datagram(&mut self, from: SocketAddr, data: &[u8]);
    /// The next datagram to send, in its two parts, and to whom (`None`: the connected socket's
    /// peer).
    fn next_datagram(&mut self) -> Option<(Option<SocketAddr>, Outgoing)>;
    /// Where the endpoint counts.
    fn io_counters(&mut self) -> &mut IoCounters;
    /// The body of a datagram sent (a packet's own buffer, [`Outgoing`]), given back for the
    /// agent's next packets; by default dropped.
    fn recycle(&mut self, _body: Vec<u8>) {}
}

/// A non-blocking UDP socket as an endpoint of the driver.
///
/// Runs of datagrams to one peer leave in one system call where Linux allows it: consecutive
/// datagrams of equal length (the last may be shorter) to the same address go out as one
/// `sendmsg(2)` with `UDP_SEGMENT` (generic segmentation offload: the kernel cuts the buffer
/// into the datagrams, which arrive as separate datagrams), and the socket asks for `UDP_GRO`, so
/// that such a run arrives as one buffer with its segment size, which is cut again here
/// (docs/DEPLOYED.md "Linux UDP sockets"). A connected-mode IPoIB packet of 65,520 bytes is 16
/// or more InfiniBand packets of the path MTU: one system call on each side instead of 16. What
/// the peer receives is the same datagrams, in the same order; where the kernel refuses
/// segmentation the endpoint falls back to one `send` per datagram. The runs of a flush go
/// together: one `sendmmsg(2)` carries up to `SEND_BATCH` (64) of them, each a message of its
/// own with its peer's address, as long as they share one segment size (single datagrams, an
/// RC acknowledgement or the shorter last packet of a message, go in it unsegmented; `group`):
/// a flush of several connected-mode packets to two hosts is one system call, not one per run
/// (docs/benchmarks/udp.md "Connected mode over UDP"). Reads are batched too: one
/// `recvmmsg(2)` takes up to `RECV_BATCH` (8) datagrams or coalesced runs, and a batch that comes
/// back short means the socket is drained, so no read is spent on learning that it would block.
#[derive(Debug)]
pub struct UdpEndpoint {
    socket: UdpSocket,
    /// Room for [`RECV_BATCH`] reads, each a datagram or (`UDP_GRO` accepted) a coalesced run.
    buf: Box<[u8]>,
    /// `UDP_SEGMENT` works (until the kernel refuses it once).
    gso: bool,
    /// The last segmented send did not fail with `EMSGSIZE` (segments larger than the path's
    /// MTU, `udp_send_skb`): while it did, a flush sends run by run, as before `sendmmsg(2)`,
    /// without trying a group first.
    segments_fit: bool,
    /// The datagrams of the current flush.
    out: Vec<(Option<SocketAddr>, Outgoing)>,
    /// The reads of the last `recv_batch`: sender, offset and length in `buf`, segment size.
    got: Vec<(SocketAddr, usize, usize, Option<usize>)>,
    /// The runs of the current `sendmmsg(2)` (datagrams each, [`group`]).
    runs: Vec<usize>,
    /// System calls that sent (`sendmsg(2)` and `sendmmsg(2)`), for the tests.
    send_calls: u64,
}

/// Reads in one `recvmmsg(2)` at most; `buf` holds room for each.
const RECV_BATCH: usize = 8;
/// Messages (segmented runs or single datagrams) in one `sendmmsg(2)` at most.
const SEND_BATCH: usize = 64;

/// The socket address of `a`, an IPv4 or IPv6 one.
fn socket_addr(a: &SockaddrStorage) -> Option<SocketAddr> {
    a.as_sockaddr_in()
        .map(|v4| SocketAddr::from(std::net::SocketAddrV4::from(*v4)))
        .or_else(|| {
            a.as_sockaddr_in6()
                .map(|v6| SocketAddr::from(std::net::SocketAddrV6::from(*v6)))
        })
}

/// Most datagrams in one segmented send (Linux `UDP_MAX_SEGMENTS`).
const GSO_MAX_SEGMENTS: usize = 64;
/// Most bytes in one segmented send (the payload of one IPv4 UDP datagram, less room for the
/// IPv6 header's difference).
const GSO_MAX_BYTES: usize = 65_000;

impl UdpEndpoint {
    /// Makes `socket` non-blocking and wraps it.
    pub fn new(socket: UdpSocket) -> io::Result<UdpEndpoint> {
        use nix::sys::socket::{setsockopt, sockopt};
        socket.set_nonblocking(true)?;
        let gro = setsockopt(&socket, sockopt::UdpGroSegment, &true).is_ok();
        Ok(UdpEndpoint {
            socket,
            buf: vec![0; RECV_BATCH * if gro { 65_536 } else { BUF_LEN }].into_boxed_slice(),
            gso: true,
            segments_fit: true,
            out: Vec::new(),
            got: Vec::with_capacity(RECV_BATCH),
            runs: Vec::with_capacity(SEND_BATCH),
            send_calls: 0,
        })
    }

    /// Reads what is waiting, at most `max` reads (each a datagram, or with `UDP_GRO` a coalesced
    /// run) in one `recvmmsg(2)`, into `got` (sender, offset and length in `buf`, segment size).
    /// Fewer than `max` means the socket was drained: the kernel stops at the first read that
    /// would block. `WouldBlock` when nothing was waiting.
    fn recv_batch(&mut self, max: usize) -> io::Result<usize> {
        use nix::sys::socket::{recvmmsg, ControlMessageOwned, MsgFlags, MultiHeaders};
        let slot = self.buf.len() / RECV_BATCH;
        let count = max.clamp(1, RECV_BATCH);
        // Fresh headers for every call: the kernel writes each header's control length back and
        // nix does not reset it, so reused headers would lose the next segment size.
        let mut headers =
            MultiHeaders::<SockaddrStorage>::preallocate(count, Some(nix::cmsg_space!(i32)));
        let mut iovs: Vec<[io::IoSliceMut<'_>; 1]> = self
            .buf
            .chunks_mut(slot)
            .take(count)
            .map(|b| [io::IoSliceMut::new(b)])
            .collect();
        let results = recvmmsg(
            self.socket.as_raw_fd(),
            &mut headers,
            iovs.iter_mut(),
            MsgFlags::MSG_DONTWAIT,
            None,
        )
        .map_err(io::Error::from)?;
        self.got.clear();
        let mut received = 0;
        for (i, m) in results.enumerate() {
            received = i + 1;
            let mut seg = None;
            if let Ok(cmsgs) = m.cmsgs() {
                for c in cmsgs {
                    if let ControlMessageOwned::UdpGroSegments(n) = c {
                        seg = usize::try_from(n).ok().filter(|&n| n > 0);
                    }
                }
            }
            // A datagram without a sender address (not on a UDP socket) is skipped.
            if let Some(from) = m.address.as_ref().and_then(socket_addr) {
                self.got.push((from, i * slot, m.bytes.min(slot), seg));
            }
        }
        Ok(received)
    }

    /// Sends `run` (datagrams of equal length but the last, to one peer) as one segmented
    /// send; `Err` when the kernel refused it (nothing was sent).
    fn send_run(
        &self,
        to: Option<SocketAddr>,
        run: &[(Option<SocketAddr>, Outgoing)],
    ) -> io::Result<()> {
        use nix::sys::socket::ControlMessage;
        let seg =
            u16::try_from(run[0].1.len()).map_err(|_| io::Error::from(ErrorKind::InvalidInput))?;
        self.send_parts(to, run, &[ControlMessage::UdpGsoSegments(&seg)])
    }

    /// One `sendmsg(2)` of the datagrams of `run`, each as its header and body (two buffers,
    /// nothing copied here), with `cmsg`.
    fn send_parts(
        &self,
        to: Option<SocketAddr>,
        run: &[(Option<SocketAddr>, Outgoing)],
        cmsg: &[nix::sys::socket::ControlMessage<'_>],
    ) -> io::Result<()> {
        use nix::sys::socket::{sendmsg, MsgFlags};
        let iov: Vec<io::IoSlice<'_>> = run
            .iter()
            .flat_map(|(_, d)| [io::IoSlice::new(&d.header), io::IoSlice::new(&d.body)])
            .collect();
        let addr = to.map(SockaddrStorage::from);
        sendmsg(
            self.socket.as_raw_fd(),
            &iov,
            cmsg,
            MsgFlags::empty(),
            addr.as_ref(),
        )
        .map(|_| ())
        .map_err(io::Error::from)
    }

    /// One `sendmmsg(2)` of the runs `self.runs` from the start of `out`, each a message of
    /// its datagrams (header and body each, nothing copied) under the one `UDP_SEGMENT` size
    /// `seg` ([`group`]). The number of messages sent: the kernel stops at the first that fails
    /// after one went, and reports an error only when none went.
    fn send_group(&self, out: &[(Option<SocketAddr>, Outgoing)], seg: usize) -> io::Result<usize> {
        use nix::sys::socket::{sendmmsg, ControlMessage, MsgFlags, MultiHeaders};
        let seg = u16::try_from(seg).map_err(|_| io::Error::from(ErrorKind::InvalidInput))?;
        let mut iovs: Vec<Vec<io::IoSlice<'_>>> = Vec::with_capacity(self.runs.len());
        let mut addrs: Vec<Option<SockaddrStorage>> = Vec::with_capacity(self.runs.len());
        let mut at = 0;
        for &n in &self.runs {
            let run = &out[at..at + n];
            iovs.push(
                run.iter()
                    .flat_map(|(_, d)| [io::IoSlice::new(&d.header), io::IoSlice::new(&d.body)])
                    .collect(),
            );
            addrs.push(run[0].0.map(SockaddrStorage::from));
            at += n;
        }
        let mut headers =
            MultiHeaders::<SockaddrStorage>::preallocate(iovs.len(), Some(nix::cmsg_space!(u16)));
        let cmsg = [ControlMessage::UdpGsoSegments(&seg)];
        let sent = sendmmsg(
            self.socket.as_raw_fd(),
            &mut headers,
            &iovs,
            &addrs,
            cmsg,
            MsgFlags::empty(),
        )
        .map_err(io::Error::from)?;
        Ok(sent.count())
    }
}

/// How many datagrams from the start of `out` form one segmented send: same peer, same length
/// (the last may be shorter), within the kernel's limits.
fn run_len(out: &[(Option<SocketAddr>, Outgoing)]) -> usize {
    let Some((to, first)) = out.first() else {
        return 0;
    };
    let seg = first.len();
    let (mut n, mut bytes) = (1, seg);
    for (t, d) in &out[1..] {
        if t != to || d.len() > seg || n == GSO_MAX_SEGMENTS || bytes + d.len() > GSO_MAX_BYTES {
            break;
        }
        n += 1;
        bytes += d.len();
        if d.len() < seg {
            break;
        }
    }
    n
}

/// Errors by which Linux refuses `UDP_SEGMENT` itself (an old kernel, a device without
/// checksum offload), rather than the datagrams.
fn gso_unsupported(e: &io::Error) -> bool {
    use nix::errno::Errno;
    errno_in(
        e,
        &[
            Errno::EIO,
            Errno::EINVAL,
            Errno::ENOPROTOOPT,
            Errno::EOPNOTSUPP,
        ],
    )
}

/// Whether `e` is one of the system errors `codes`.
fn errno_in(e: &io::Error, codes: &[nix::errno::Errno]) -> bool {
    e.raw_os_error()
        .is_some_and(|c| codes.iter().any(|&x| x as i32 == c))
}

/// `EMSGSIZE`: a segmented send whose segments do not fit the path's MTU (`udp_send_skb` in
/// `net/ipv4/udp.c`), or a pending fragmentation-needed error of the socket.
fn too_big(e: &io::Error) -> bool {
    e.raw_os_error() == Some(nix::errno::Errno::EMSGSIZE as i32)
}

/// Errors a UDP socket's read reports for an ICMP error that came back for an earlier datagram
/// (docs/UDP-FABRIC.md "ICMP errors on the host's socket"). None ends the process: the
/// protocol's keepalives and retries recover, or find the fabric lost.
fn reported_by_network(e: &io::Error) -> bool {
    use nix::errno::Errno;
    errno_in(
        e,
        &[
            Errno::ECONNREFUSED,
            Errno::EHOSTUNREACH,
            Errno::ENETUNREACH,
            Errno::EHOSTDOWN,
            Errno::ENONET,
            Errno::ENOPROTOOPT,
            Errno::EACCES,
            Errno::EPROTO,
            Errno::EMSGSIZE,
        ],
    )
}

impl<E: DatagramPeer> Endpoint<E> for UdpEndpoint {
    fn raw_fd(&self) -> RawFd {
        self.socket.as_raw_fd()
    }

    fn on_readable(&mut self, emu: &mut E, budget: usize) -> io::Result<usize> {
        let mut n = 0;
        while n < budget {
            let want = (budget - n).min(RECV_BATCH);
            match self.recv_batch(want) {
                Ok(got) => {
                    n += got;
                    for &(from, off, len, seg) in &self.got {
                        let seg = seg.unwrap_or(len).max(1);
                        for d in self.buf[off..off + len].chunks(seg) {
                            emu.io_counters().received += 1;
                            emu.on_datagram(from, d);
                        }
                    }
                    if got < want {
                        // Drained: the kernel stopped at a read that would block.
                        break;
                    }
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                // An ICMP error for an earlier datagram (module docs): read on.
                Err(e) if reported_by_network(&e) => emu.io_counters().net_errors += 1,
                Err(e) => return Err(e),
            }
        }
        Ok(n)
    }

    fn flush(&mut self, emu: &mut E) -> io::Result<usize> {
        while let Some(d) = emu.next_datagram() {
            self.out.push(d);
        }
        let total = self.out.len();
        let mut i = 0;
        while i < total {
            if self.gso && self.segments_fit {
                let seg = group(&self.out[i..], &mut self.runs);
                if self.runs.len() > 1 {
                    self.send_calls += 1;
                    match self.send_group(&self.out[i..], seg) {
                        Ok(k) if k > 0 => {
                            // The first k messages left; after a short count the next one
                            // failed, and the next round sends it again (alone, if it fails
                            // again).
                            let n: usize = self.runs[..k].iter().sum();
                            emu.io_counters().sent += n as u64;
                            i += n;
                            continue;
                        }
                        // No segmentation on this path: one by one from now on.
                        Err(e) if gso_unsupported(&e) => self.gso = false,
                        Err(e) if too_big(&e) => self.segments_fit = false,
                        // The socket's own error (an earlier datagram refused): run by run.
                        _ => {}
                    }
                }
            }
            let run = if self.gso { run_len(&self.out[i..]) } else { 1 };
            let to = self.out[i].0;
            if run > 1 {
                self.send_calls += 1;
                match self.send_run(to, &self.out[i..i + run]) {
                    Ok(()) => {
                        self.segments_fit = true;
                        emu.io_counters().sent += run as u64;
                        i += run;
                        continue;
                    }
                    // No segmentation on this path: one by one from now on.
                    Err(e) if gso_unsupported(&e) => self.gso = false,
                    Err(e) if too_big(&e) => self.segments_fit = false,
                    // The socket's own error (an earlier datagram refused): this one alone.
                    Err(_) => {}
                }
            }
            self.send_calls += 1;
            let r = self.send_parts(to, &self.out[i..=i], &[]);
            let c = emu.io_counters();
            match r {
                Ok(_) => c.sent += 1,
                Err(_) => c.send_errors += 1,
            }
            i += 1;
        }
        // The packets' buffers go back to the agent, which builds its next packets in them.
        for (_, o) in self.out.drain(..) {
            emu.recycle(o.body);
        }
        Ok(total)
    }
}

/// The runs from the start of `out` that one `sendmmsg(2)` carries under one `UDP_SEGMENT`
/// size, their lengths (datagrams each) into `runs`; returns that size. The kernel must cut each
/// run right at it: a run of several datagrams needs segments of exactly that length, a single
/// datagram one no longer (Linux sends a datagram no longer than the segment size unsegmented:
/// `udp_send_skb` in `net/ipv4/udp.c` sets segmentation up only for `datalen > gso_size`). The
/// size is the segment of the first run of several; single datagrams before it must be no longer;
/// with none, the longest single datagram.
fn group(out: &[(Option<SocketAddr>, Outgoing)], runs: &mut Vec<usize>) -> usize {
    runs.clear();
    let (mut seg, mut longest) = (None, 0);
    let mut i = 0;
    while i < out.len() && runs.len() < SEND_BATCH {
        let n = run_len(&out[i..]);
        let len = out[i].1.len();
        match seg {
            Some(s) if (n > 1 && len != s) || len > s => break,
            None if n > 1 && len < longest => break,
            None if n > 1 => seg = Some(len),
            _ => {}
        }
        longest = longest.max(len);
        runs.push(n);
        i += n;
    }
    seg.unwrap_or(longest)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ipoib_wire::udp_fabric::HEADER_LEN;
    use std::time::{Duration, Instant as Wall};

    /// A peer that records what it gets and sends what it is given.
    #[derive(Default)]
    struct Peer {
        got: Vec<(SocketAddr, Vec<u8>)>,
        send: std::collections::VecDeque<(Option<SocketAddr>, Vec<u8>)>,
        io: IoCounters,
    }

    /// What endpoints `eb` and `ec` read until they have `nb` and `nc` datagrams (at most 5 s).
    fn read_both(eb: &mut UdpEndpoint, ec: &mut UdpEndpoint, nb: usize, nc: usize) -> (Peer, Peer) {
        let (mut pb, mut pc) = (Peer::default(), Peer::default());
        let deadline = Wall::now() + Duration::from_secs(5);
        while (pb.got.len() < nb || pc.got.len() < nc) && Wall::now() < deadline {
            Endpoint::on_readable(eb, &mut pb, 64).unwrap();
            Endpoint::on_readable(ec, &mut pc, 64).unwrap();
            std::thread::sleep(Duration::from_millis(1));
        }
        (pb, pc)
    }

    impl DatagramPeer for Peer {
        fn on_datagram(&mut self, from: SocketAddr, data: &[u8]) {
            self.got.push((from, data.to_vec()));
        }
        fn next_datagram(&mut self) -> Option<(Option<SocketAddr>, Outgoing)> {
            self.send.pop_front().map(|(to, d)| (to, parts(&d)))
        }
        fn io_counters(&mut self) -> &mut IoCounters {
            &mut self.io
        }
    }

    /// `d` (at least a header long) as its two parts.
    fn parts(d: &[u8]) -> Outgoing {
        let mut header = [0; HEADER_LEN];
        header.copy_from_slice(&d[..HEADER_LEN]);
        Outgoing {
            header,
            body: d[HEADER_LEN..].to_vec(),
        }
    }

    fn datagram(len: usize, tag: usize) -> Vec<u8> {
        (0..len).map(|i| (i * 7 + tag * 31) as u8).collect()
    }

    /// Runs of equal-length datagrams (segmented sends, coalesced reads where the kernel offers
    /// them), a shorter last one, single ones and a run to a second peer all arrive as the same
    /// datagrams in the same order, each counted once on both sides.
    #[test]
    fn endpoint_keeps_datagrams_and_order_across_runs() {
        let a = UdpSocket::bind("127.0.0.1:0").unwrap();
        let b = UdpSocket::bind("127.0.0.1:0").unwrap();
        let c = UdpSocket::bind("127.0.0.1:0").unwrap();
        let (a_addr, b_addr, c_addr) = (
            a.local_addr().unwrap(),
            b.local_addr().unwrap(),
            c.local_addr().unwrap(),
        );
        let (mut ea, mut eb, mut ec) = (
            UdpEndpoint::new(a).unwrap(),
            UdpEndpoint::new(b).unwrap(),
            UdpEndpoint::new(c).unwrap(),
        );
        let mut sender = Peer::default();
        let mut want_b = Vec::new();
        let mut want_c = Vec::new();
        let lens = [
            [1000; 20].as_slice(),
            &[300, 4120, 4120, 4120, 17, 17],
            &[900; 70],
        ]
        .concat();
        for (tag, &len) in lens.iter().enumerate() {
            let d = datagram(len, tag);
            // A few to the second peer in the middle break the runs.
            let to = if (30..33).contains(&tag) {
                c_addr
            } else {
                b_addr
            };
            if to == b_addr {
                want_b.push(d.clone());
            } else {
                want_c.push(d.clone());
            }
            sender.send.push_back((Some(to), d));
        }
        let sent = Endpoint::flush(&mut ea, &mut sender).unwrap();
        assert_eq!(sent, lens.len());
        assert_eq!(sender.io.sent, lens.len() as u64);
        assert_eq!(sender.io.send_errors, 0);
        let (pb, pc) = read_both(&mut eb, &mut ec, want_b.len(), want_c.len());
        assert!(pb.got.iter().chain(&pc.got).all(|(f, _)| *f == a_addr));
        let got_b: Vec<_> = pb.got.into_iter().map(|(_, d)| d).collect();
        let got_c: Vec<_> = pc.got.into_iter().map(|(_, d)| d).collect();
        assert_eq!(got_b, want_b);
        assert_eq!(got_c, want_c);
        assert_eq!(pb.io.received, want_b.len() as u64);
    }

    /// Datagrams from several senders, none coalescible with the next, more than one
    /// `recvmmsg` holds: one call with room for all reads them all, each with its sender; with
    /// a smaller budget it stops at the budget and the next call goes on.
    #[test]
    fn batched_reads_drain_the_socket_and_keep_senders() {
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        let to = rx.local_addr().unwrap();
        let mut ep = UdpEndpoint::new(rx).unwrap();
        let senders: Vec<UdpSocket> = (0..3)
            .map(|_| UdpSocket::bind("127.0.0.1:0").unwrap())
            .collect();
        let mut want = Vec::new();
        for i in 0..30 {
            for (k, s) in senders.iter().enumerate() {
                let d = datagram(100 + i * 3 + k, i * 3 + k);
                s.send_to(&d, to).unwrap();
                want.push((s.local_addr().unwrap(), d));
            }
        }
        let mut p = Peer::default();
        let n = Endpoint::on_readable(&mut ep, &mut p, 10).unwrap();
        assert_eq!(n, 10);
        assert_eq!(p.got.len(), 10);
        let n = Endpoint::on_readable(&mut ep, &mut p, 1000).unwrap();
        assert_eq!(n, 80);
        assert_eq!(p.got, want);
        assert_eq!(p.io.received, 90);
        // Drained: the next call finds nothing.
        assert_eq!(Endpoint::on_readable(&mut ep, &mut p, 1000).unwrap(), 0);
    }

    /// What a flush of the fabric carries in connected mode (docs/benchmarks/udp.md "Connected
    /// mode over UDP"): 65,520-byte IPoIB-CM packets as 15 InfiniBand packets of the 4,096-byte
    /// MTU and a shorter last one each, RC acknowledgements between them, to two hosts. All of it
    /// leaves in one `sendmmsg(2)` (one `sendmsg(2)` per run before: 9 here), and both peers get
    /// the same datagrams in the same order.
    #[test]
    fn a_flush_of_several_runs_and_acks_leaves_in_one_system_call() {
        let a = UdpSocket::bind("127.0.0.1:0").unwrap();
        let b = UdpSocket::bind("127.0.0.1:0").unwrap();
        let c = UdpSocket::bind("127.0.0.1:0").unwrap();
        let (b_addr, c_addr) = (b.local_addr().unwrap(), c.local_addr().unwrap());
        let (mut ea, mut eb, mut ec) = (
            UdpEndpoint::new(a).unwrap(),
            UdpEndpoint::new(b).unwrap(),
            UdpEndpoint::new(c).unwrap(),
        );
        let mut sender = Peer::default();
        let (mut want_b, mut want_c) = (Vec::new(), Vec::new());
        let mut tag = 0;
        for _ in 0..3 {
            for len in [[4134; 15].as_slice(), &[4122]].concat() {
                let d = datagram(len, tag);
                tag += 1;
                want_b.push(d.clone());
                sender.send.push_back((Some(b_addr), d));
            }
            // The other host's acknowledgement of what it sent.
            let d = datagram(42, tag);
            tag += 1;
            want_c.push(d.clone());
            sender.send.push_back((Some(c_addr), d));
        }
        let total = want_b.len() + want_c.len();
        assert_eq!(Endpoint::flush(&mut ea, &mut sender).unwrap(), total);
        assert_eq!(sender.io.sent, total as u64);
        assert_eq!(sender.io.send_errors, 0);
        assert_eq!(ea.send_calls, 1);
        let (pb, pc) = read_both(&mut eb, &mut ec, want_b.len(), want_c.len());
        let got_b: Vec<_> = pb.got.into_iter().map(|(_, d)| d).collect();
        let got_c: Vec<_> = pc.got.into_iter().map(|(_, d)| d).collect();
        assert_eq!(got_b, want_b);
        assert_eq!(got_c, want_c);
    }

    #[test]
    fn a_group_shares_one_segment_size() {
        let p: SocketAddr = "127.0.0.1:1".parse().unwrap();
        let q: SocketAddr = "127.0.0.1:2".parse().unwrap();
        let d = |to, len: usize| (Some(to), parts(&vec![0u8; len]));
        let mut runs = Vec::new();
        // Runs of one segment size, a shorter last one, single datagrams no longer, two peers.
        let out = [
            d(q, 40),
            d(p, 100),
            d(p, 100),
            d(p, 60),
            d(q, 40),
            d(p, 100),
            d(p, 100),
        ];
        assert_eq!(group(&out, &mut runs), 100);
        assert_eq!(runs, [1, 3, 1, 2]);
        // A single datagram longer than the segment, or a run of another, ends the group.
        assert_eq!(group(&[d(p, 100), d(p, 100), d(p, 101)], &mut runs), 100);
        assert_eq!(runs, [2]);
        assert_eq!(
            group(&[d(p, 100), d(p, 100), d(q, 90), d(q, 90)], &mut runs),
            100
        );
        assert_eq!(runs, [2]);
        // Single datagrams before the first run must be no longer than its segment.
        assert_eq!(group(&[d(q, 120), d(p, 100), d(p, 100)], &mut runs), 120);
        assert_eq!(runs, [1]);
        // Only single datagrams: the longest is the size, none is cut.
        assert_eq!(group(&[d(p, 20), d(q, 40), d(p, 30)], &mut runs), 40);
        assert_eq!(runs, [1, 1, 1]);
        assert_eq!(group(&[], &mut runs), 0);
        assert!(runs.is_empty());
        assert_eq!(group(&vec![d(p, 20); 200], &mut runs), 20);
        assert_eq!(runs, [64, 64, 64, 8]);
        let singles: Vec<_> = (0..200)
            .map(|i| d(if i % 2 == 0 { p } else { q }, 20))
            .collect();
        group(&singles, &mut runs);
        assert_eq!(runs, [1; SEND_BATCH]);
    }

    #[test]
    fn runs_are_equal_length_to_one_peer_within_limits() {
        let p: SocketAddr = "127.0.0.1:1".parse().unwrap();
        let q: SocketAddr = "127.0.0.1:2".parse().unwrap();
        let d = |to, len: usize| (Some(to), parts(&vec![0u8; len]));
        assert_eq!(run_len(&[]), 0);
        assert_eq!(run_len(&[d(p, 30), d(p, 30), d(p, 15), d(p, 15)]), 3);
        assert_eq!(run_len(&[d(p, 30), d(p, 31)]), 1);
        assert_eq!(run_len(&[d(p, 30), d(q, 30)]), 1);
        assert_eq!(run_len(&vec![d(p, 100); 100]), GSO_MAX_SEGMENTS);
        assert_eq!(run_len(&vec![d(p, 4120); 100]), GSO_MAX_BYTES / 4120);
    }
}

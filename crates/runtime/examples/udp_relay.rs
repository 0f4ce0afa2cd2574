//! Baseline for docs/benchmarks/udp.md: the path of `ipoib fabric` and two `ipoib attach`
//! processes (docs/UDP-FABRIC.md) with nothing emulated, the floor of that architecture: three
//! processes, each packet crossing two loopback UDP sockets and a middle process, cut into
//! datagrams of at most 4,096 bytes as an IPoIB packet is cut into InfiniBand packets.
//!
//! ```sh
//! udp_relay end NAME MTU LOCAL_PORT HOP_PORT   # a TUN device NAME <-> UDP (one per side)
//! udp_relay hop PORT PORT_A PORT_B             # UDP PORT: from PORT_A to PORT_B and back
//! ```
//!
//! All on 127.0.0.1. An `end` opens a layer-3 TUN device without packet information in its
//! namespace, down and without addresses (as `examples/tun_relay.rs`; the caller moves it and
//! configures it), prints `ready`, and runs two threads: one reads the device and sends each
//! packet to the hop as datagrams of at most [`CHUNK`] bytes, each with a 4-byte header (the
//! packet's length, big-endian), in one `sendmsg(2)` with `UDP_SEGMENT` (as `UdpEndpoint` sends a
//! run of InfiniBand packets); the other receives datagrams (with `UDP_GRO`), puts the packet
//! together and writes it to the device. The `hop` forwards every datagram from one end's port to
//! the other's, unchanged: a run the kernel coalesced (`UDP_GRO`) leaves as one segmented send,
//! as the fabric process sends its runs. Blocking reads, no epoll, no emulation: every cost left is the
//! kernel's and the scheduler's. Runs until killed. Linux only, the `end` needs
//! CAP_NET_ADMIN. Not run by the test suite (benchmark only).
#![forbid(unsafe_code)]

use nix::sys::socket::{
    recvmsg, sendmsg, setsockopt, sockopt, ControlMessage, ControlMessageOwned, MsgFlags,
    SockaddrStorage,
};
use std::io::{ErrorKind, IoSlice, IoSliceMut};
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::process::ExitCode;
use std::thread;

/// Most bytes of a packet per datagram (an InfiniBand MTU).
const CHUNK: usize = 4096;
/// The header of a datagram: the whole packet's length.
const HEADER: usize = 4;

fn local(port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], port))
}

fn socket(port: u16) -> std::io::Result<UdpSocket> {
    let s = UdpSocket::bind(local(port))?;
    let big = 8usize << 20;
    let _ = setsockopt(&s, sockopt::RcvBufForce, &big);
    let _ = setsockopt(&s, sockopt::SndBufForce, &big);
    Ok(s)
}

/// TUN -> datagrams of at most `CHUNK` bytes, one segmented send a packet.
fn outbound(from: &tun_rs::SyncDevice, sock: &UdpSocket, hop: SocketAddr) -> std::io::Error {
    let mut buf = vec![0u8; 65_536];
    let mut out = Vec::with_capacity(70_000);
    let to = SockaddrStorage::from(hop);
    loop {
        let n = match from.recv(&mut buf) {
            Ok(n) => n,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) => return e,
        };
        out.clear();
        for c in buf[..n].chunks(CHUNK) {
            out.extend_from_slice(&(n as u32).to_be_bytes());
            out.extend_from_slice(c);
        }
        // At most 15 datagrams of 4,100 bytes a send: a segmented send holds one UDP datagram's
        // worth (64 KiB), as `UdpEndpoint` cuts its runs.
        let seg = HEADER + CHUNK.min(n);
        for run in out.chunks(seg * 15) {
            let s = seg as u16;
            let iov = [IoSlice::new(run)];
            let cmsg = [ControlMessage::UdpGsoSegments(&s)];
            let cm: &[ControlMessage<'_>] = if run.len() > seg { &cmsg } else { &[] };
            if let Err(e) = sendmsg(sock.as_raw_fd(), &iov, cm, MsgFlags::empty(), Some(&to)) {
                eprintln!("udp_relay: send: {e}");
            }
        }
    }
}

/// One `recvmsg(2)` into `buf`: its length, the size of the datagrams the kernel coalesced into
/// it (`UDP_GRO`; the length when it is one datagram) and the sender.
fn recv_gro(
    sock: &UdpSocket,
    buf: &mut [u8],
) -> Result<(usize, usize, Option<SockaddrStorage>), nix::errno::Errno> {
    let mut cmsg = nix::cmsg_space!(i32);
    let mut iov = [IoSliceMut::new(buf)];
    let m = recvmsg::<SockaddrStorage>(
        sock.as_raw_fd(),
        &mut iov,
        Some(&mut cmsg),
        MsgFlags::empty(),
    )?;
    let len = m.bytes;
    let mut seg = len;
    if let Ok(cs) = m.cmsgs() {
        for c in cs {
            if let ControlMessageOwned::UdpGroSegments(s) = c {
                seg = usize::try_from(s).unwrap_or(len).max(1);
            }
        }
    }
    Ok((len, seg, m.address))
}

/// Datagrams (coalesced by `UDP_GRO`) -> whole packets -> TUN.
fn inbound(to: &tun_rs::SyncDevice, sock: &UdpSocket) -> std::io::Error {
    let mut buf = vec![0u8; 65_536];
    let mut packet = Vec::with_capacity(65_536);
    loop {
        let (len, seg, _) = match recv_gro(sock, &mut buf) {
            Ok(r) => r,
            Err(nix::errno::Errno::EINTR) => continue,
            Err(e) => return e.into(),
        };
        for d in buf[..len].chunks(seg) {
            let Some(h) = d.get(..HEADER) else { continue };
            let total = u32::from_be_bytes([h[0], h[1], h[2], h[3]]) as usize;
            packet.extend_from_slice(&d[HEADER..]);
            if packet.len() >= total {
                let _ = to.send(&packet[..total]);
                packet.clear();
            }
        }
    }
}

fn end(name: &str, mtu: u16, port: u16, hop: u16) -> Result<(), String> {
    // Blocking, no packet information, no offload; left down.
    let dev = tun_rs::DeviceBuilder::new()
        .name(name)
        .mtu(mtu)
        .layer(tun_rs::Layer::L3)
        .packet_information(false)
        .offload(false)
        .inherit_enable_state()
        .build_sync()
        .map(std::sync::Arc::new)
        .map_err(|e| format!("TUN {name}: {e}"))?;
    let sock = socket(port).map_err(|e| format!("bind {port}: {e}"))?;
    let reader = std::sync::Arc::clone(&dev);
    let send = sock.try_clone().map_err(|e| e.to_string())?;
    let _ = setsockopt(&sock, sockopt::UdpGroSegment, &true);
    println!("ready");
    let t = thread::spawn(move || outbound(&reader, &send, local(hop)));
    let e = inbound(&dev, &sock);
    let _ = t.join();
    Err(e.to_string())
}

fn hop(port: u16, a: u16, b: u16) -> Result<(), String> {
    let sock = socket(port).map_err(|e| format!("bind {port}: {e}"))?;
    let _ = setsockopt(&sock, sockopt::UdpGroSegment, &true);
    let (a, b) = (local(a), local(b));
    let (sa, sb) = (SockaddrStorage::from(a), SockaddrStorage::from(b));
    let mut buf = vec![0u8; 65_536];
    println!("ready");
    loop {
        let (len, seg, from) = match recv_gro(&sock, &mut buf) {
            Ok(r) => r,
            Err(nix::errno::Errno::EINTR) => continue,
            Err(e) => return Err(e.to_string()),
        };
        let from_a = from.as_ref() == Some(&sa);
        let to = if from_a { &sb } else { &sa };
        // A coalesced run goes on as one segmented send, as it came.
        let s = seg as u16;
        let iov = [IoSlice::new(&buf[..len])];
        let cmsg = [ControlMessage::UdpGsoSegments(&s)];
        let cm: &[ControlMessage<'_>] = if len > seg { &cmsg } else { &[] };
        let _ = sendmsg(sock.as_raw_fd(), &iov, cm, MsgFlags::empty(), Some(to));
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let num = |s: &String| s.parse::<u16>().ok();
    let r = match args.as_slice() {
        [m, name, mtu, p, h] if m == "end" => match (num(mtu), num(p), num(h)) {
            (Some(mtu), Some(p), Some(h)) => end(name, mtu, p, h),
            _ => Err("bad numbers".into()),
        },
        [m, p, a, b] if m == "hop" => match (num(p), num(a), num(b)) {
            (Some(p), Some(a), Some(b)) => hop(p, a, b),
            _ => Err("bad numbers".into()),
        },
        _ => {
            eprintln!("usage: udp_relay end NAME MTU LOCAL_PORT HOP_PORT | hop PORT PORT_A PORT_B");
            return ExitCode::from(2);
        }
    };
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("udp_relay: {e}");
            ExitCode::from(1)
        }
    }
}

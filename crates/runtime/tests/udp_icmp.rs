//! ICMP errors that come back to `ipoib attach`'s connected UDP socket (docs/UDP-FABRIC.md "ICMP
//! errors on the host's socket"): a read that reports one is counted (section `udp`, `net_errors`) and the host
//! goes on attaching, whatever the error. As root, in a network namespace of the test's thread
//! alone (gone with the thread): the ICMP messages are written on a raw socket, each quoting a
//! datagram the attach process sent, as a firewall or router on the path would send them.

use ipoib_runtime::netlink::Rtnl;
use ipoib_runtime::udp_fabric::{AttachOptions, AttachProcess};
use nix::sys::socket::SockaddrIn;
use nix::sys::socket::{sendto, socket, AddressFamily, MsgFlags, SockFlag, SockProtocol, SockType};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, UdpSocket};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

/// The Internet checksum (RFC 1071).
fn checksum(b: &[u8]) -> u16 {
    let mut s: u32 = b
        .chunks(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)])))
        .sum();
    while s >> 16 != 0 {
        s = (s & 0xffff) + (s >> 16);
    }
    !(s as u16)
}

/// An ICMP destination unreachable of `code` (RFC 792) for a UDP datagram from `from` to `to`:
/// its IPv4 header and the first 8 bytes (the UDP header) quoted.
fn unreachable(code: u8, from: SocketAddrV4, to: SocketAddrV4) -> Vec<u8> {
    let mut ip = vec![0x45, 0, 0, 28, 0, 0, 0x40, 0, 64, 17, 0, 0];
    ip.extend_from_slice(&from.ip().octets());
    ip.extend_from_slice(&to.ip().octets());
    let c = checksum(&ip);
    ip[10..12].copy_from_slice(&c.to_be_bytes());
    let mut m = vec![3, code, 0, 0, 0, 0, 0, 0];
    m.extend_from_slice(&ip);
    m.extend_from_slice(&from.port().to_be_bytes());
    m.extend_from_slice(&to.port().to_be_bytes());
    m.extend_from_slice(&[0, 8, 0, 0]);
    let c = checksum(&m);
    m[2..4].copy_from_slice(&c.to_be_bytes());
    m
}

/// Waits up to 3 s, turning `p`, for the next AttachRequest at `fabric`; its sender.
fn next_request(p: &mut AttachProcess, fabric: &UdpSocket) -> Option<SocketAddrV4> {
    let end = Instant::now() + Duration::from_secs(3);
    let mut buf = [0u8; 2048];
    while Instant::now() < end {
        p.turn(Duration::from_millis(20))
            .expect("the attach process turns on");
        if let Ok((_, SocketAddr::V4(a))) = fabric.recv_from(&mut buf) {
            return Some(a);
        }
    }
    None
}

// Linux `icmp_err_convert`: port unreachable (3) is ECONNREFUSED, host prohibited (10)
// EHOSTUNREACH, host unknown (7) EHOSTDOWN, protocol unreachable (2) ENOPROTOOPT, and
// fragmentation needed (4) EMSGSIZE on a socket that does path MTU discovery. Before, every one
// but ECONNREFUSED ended the attach process's turn with that error, and `ipoib attach` exited
// (status 1) where it was to keep attaching.
#[test]
fn icmp_errors_for_its_datagrams_do_not_stop_an_attach_process() {
    if !nix::unistd::geteuid().is_root() {
        eprintln!("skipped: needs root");
        return;
    }
    std::thread::spawn(|| {
        nix::sched::unshare(nix::sched::CloneFlags::CLONE_NEWNET).expect("unshare");
        Rtnl::open()
            .unwrap()
            .set_link(1, None, true)
            .expect("lo up");
        let fabric = UdpSocket::bind("127.0.0.1:0").unwrap();
        fabric.set_nonblocking(true).unwrap();
        let SocketAddr::V4(fabric_addr) = fabric.local_addr().unwrap() else {
            unreachable!()
        };
        let mut o = AttachOptions::new(fabric_addr.into());
        o.ipv4 = Some((Ipv4Addr::new(10, 9, 0, 2), 24));
        o.ipv6_on = false;
        let mut p = AttachProcess::connect(&o).expect("attach socket");
        let host = next_request(&mut p, &fabric).expect("an AttachRequest");
        let raw = socket(
            AddressFamily::Inet,
            SockType::Raw,
            SockFlag::empty(),
            SockProtocol::Icmp,
        )
        .expect("raw ICMP socket");
        let lo = SockaddrIn::from(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0));
        let codes = [3u8, 10, 7, 2, 4];
        for code in codes {
            let m = unreachable(code, host, fabric_addr);
            sendto(raw.as_raw_fd(), &m, &lo, MsgFlags::empty()).expect("send the ICMP error");
            // The error is read on the next turn, and the AttachRequests go on.
            assert!(
                next_request(&mut p, &fabric).is_some(),
                "no AttachRequest after ICMP code {code}"
            );
        }
        assert_eq!(p.counters().net_errors, codes.len() as u64);
    })
    .join()
    .unwrap();
}

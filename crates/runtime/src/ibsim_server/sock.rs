//! The server's datagram sockets, in either of ibsim's two families (`ibsim/ibsim.c`
//! `make_name`, `sim_init_conn`): abstract Unix names `<base>:ctl` and `<base>:out<n>` whose
//! length covers one trailing NUL, or UDP ports `P` and `P + n + 1`. All non-blocking.

use nix::sys::socket::{recvmmsg, sendmmsg, MsgFlags, MultiHeaders};
use std::io::{self, IoSlice, IoSliceMut};
use std::net::{SocketAddr as InetAddr, UdpSocket};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr as UnixAddr, UnixDatagram};

/// Where the server listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Listen {
    /// Abstract Unix datagram sockets `<basename>:ctl`, `<basename>:out<n>` (ibsim's default;
    /// `IBSIM_SOCKNAME`, default `sim`).
    Unix {
        /// The basename.
        basename: String,
    },
    /// UDP: control at `addr`, client `n`'s data at port `addr.port() + n + 1` (ibsim `-r`,
    /// `IBSIM_SERVER_NAME`/`IBSIM_SERVER_PORT` on the client side).
    Udp {
        /// The control address.
        addr: InetAddr,
    },
}

/// The most datagrams one [`Sock::send_many`] call sends.
pub const MAX_BATCH: usize = 64;
/// Up to this many, [`Sock::send_many`] makes its slices on an array of this size.
const SMALL_BATCH: usize = 8;
/// The most datagrams one [`Sock::recv_many`] call takes (its slices are built on the stack
/// each call, so no more than the server asks for: 16 per recvmmsg(2)).
pub const RECV_MAX: usize = 16;

/// The message headers of recvmmsg(2) and sendmmsg(2) for [`MAX_BATCH`] datagrams, kept by the
/// caller from call to call instead of allocated per call (with the vectors of buffers, about
/// 1.5 % of the server's samples in an SM's sweep, docs/benchmarks/subnet-history.md).
pub struct Headers(MultiHeaders<()>);

impl Headers {
    /// Headers for [`MAX_BATCH`] datagrams, for connected sockets (no addresses).
    pub fn new() -> Headers {
        Headers(MultiHeaders::preallocate(MAX_BATCH, None))
    }
}

impl Default for Headers {
    fn default() -> Headers {
        Headers::new()
    }
}

impl std::fmt::Debug for Headers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Headers")
    }
}

/// A peer's address.
#[derive(Debug, Clone)]
pub enum Peer {
    /// An abstract Unix name (its bytes, and the address to send to).
    Unix(Vec<u8>, UnixAddr),
    /// A UDP address.
    Udp(InetAddr),
}

impl PartialEq for Peer {
    fn eq(&self, o: &Peer) -> bool {
        match (self, o) {
            (Peer::Unix(a, _), Peer::Unix(b, _)) => a == b,
            (Peer::Udp(a), Peer::Udp(b)) => a == b,
            _ => false,
        }
    }
}

/// An abstract socket address whose name is `name` plus one NUL, as ibsim's `make_name`.
pub fn abstract_addr(name: &str) -> io::Result<UnixAddr> {
    let mut bytes = name.as_bytes().to_vec();
    bytes.push(0);
    UnixAddr::from_abstract_name(bytes)
}

/// One datagram socket.
#[derive(Debug)]
pub enum Sock {
    /// Unix.
    Unix(UnixDatagram),
    /// UDP.
    Udp(UdpSocket),
}

impl Sock {
    /// The control socket of `listen`.
    pub fn bind_ctl(listen: &Listen) -> io::Result<Sock> {
        match listen {
            Listen::Unix { basename } => Sock::bind_unix(&format!("{basename}:ctl")),
            Listen::Udp { addr } => Sock::bind_udp(*addr),
        }
    }

    /// The data socket of client slot `n`.
    pub fn bind_slot(listen: &Listen, n: u32) -> io::Result<Sock> {
        match listen {
            Listen::Unix { basename } => Sock::bind_unix(&format!("{basename}:out{n}")),
            Listen::Udp { addr } => {
                let port = u32::from(addr.port()) + n + 1;
                let port = u16::try_from(port).map_err(|_| {
                    io::Error::new(io::ErrorKind::AddrNotAvailable, "slot port past 65535")
                })?;
                Sock::bind_udp(InetAddr::new(addr.ip(), port))
            }
        }
    }

    fn bind_unix(name: &str) -> io::Result<Sock> {
        let s = UnixDatagram::bind_addr(&abstract_addr(name)?)?;
        s.set_nonblocking(true)?;
        Ok(Sock::Unix(s))
    }

    fn bind_udp(addr: InetAddr) -> io::Result<Sock> {
        let s = UdpSocket::bind(addr)?;
        s.set_nonblocking(true)?;
        Ok(Sock::Udp(s))
    }

    /// Connects a slot socket to the client's input socket: `<base>:in<tag>` (the tag printed
    /// with `%d`), or the control sender's IP address with the tag as port.
    pub fn connect_client(&self, listen: &Listen, tag: u32, ctl_from: &Peer) -> io::Result<()> {
        match (self, listen, ctl_from) {
            (Sock::Unix(s), Listen::Unix { basename }, _) => {
                s.connect_addr(&abstract_addr(&format!("{basename}:in{}", tag as i32))?)
            }
            (Sock::Udp(s), Listen::Udp { .. }, Peer::Udp(from)) => {
                let port = u16::try_from(tag).map_err(|_| {
                    io::Error::new(io::ErrorKind::InvalidInput, "UDP client tag is not a port")
                })?;
                s.connect(InetAddr::new(from.ip(), port))
            }
            _ => Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "socket family does not match",
            )),
        }
    }

    /// Receives one datagram with its sender.
    pub fn recv_from(&self, buf: &mut [u8]) -> io::Result<(usize, Peer)> {
        match self {
            Sock::Unix(s) => {
                let (n, a) = s.recv_from(buf)?;
                let name = a.as_abstract_name().map(<[u8]>::to_vec).unwrap_or_default();
                Ok((n, Peer::Unix(name, a)))
            }
            Sock::Udp(s) => {
                let (n, a) = s.recv_from(buf)?;
                Ok((n, Peer::Udp(a)))
            }
        }
    }

    /// Sends to `to`.
    pub fn send_to(&self, b: &[u8], to: &Peer) -> io::Result<usize> {
        match (self, to) {
            (Sock::Unix(s), Peer::Unix(_, a)) => s.send_to_addr(b, a),
            (Sock::Udp(s), Peer::Udp(a)) => s.send_to(b, a),
            _ => Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "socket family does not match",
            )),
        }
    }

    /// Sends to the connected peer.
    pub fn send(&self, b: &[u8]) -> io::Result<usize> {
        match self {
            Sock::Unix(s) => s.send(b),
            Sock::Udp(s) => s.send(b),
        }
    }

    /// Receives up to `bufs.len()` datagrams from the connected peer in one recvmmsg(2) call,
    /// without waiting: datagram `i` in `bufs[i]` (cut to its size, as recv(2) cuts it), its
    /// length in `lens[i]`. Returns how many, from the first: fewer than `bufs.len()` means the
    /// socket had no more at that moment; `WouldBlock` when it had none. At most as many as
    /// `headers` holds and [`RECV_MAX`]; `headers` is the caller's, kept from call to call
    /// ([`Headers`]).
    pub fn recv_many<const N: usize>(
        &self,
        bufs: &mut [[u8; N]],
        lens: &mut [usize],
        headers: &mut Headers,
    ) -> io::Result<usize> {
        let want = bufs.len().min(lens.len()).min(RECV_MAX);
        let mut rest = bufs.iter_mut();
        let mut slices: [[IoSliceMut<'_>; 1]; RECV_MAX] = std::array::from_fn(|_| {
            [IoSliceMut::new(
                rest.next().map_or(&mut [][..], |b| &mut b[..]),
            )]
        });
        let fd = self.fd().as_raw_fd();
        let got = recvmmsg(
            fd,
            &mut headers.0,
            slices[..want].iter_mut(),
            MsgFlags::MSG_DONTWAIT,
            None,
        )
        .map_err(io::Error::from)?;
        let mut n = 0;
        for (m, len) in got.zip(lens.iter_mut()) {
            *len = m.bytes;
            n += 1;
        }
        Ok(n)
    }

    /// Sends each of `msgs` to the connected peer as a datagram of its own, in one sendmmsg(2)
    /// call: the peer is woken once for the lot instead of once per datagram (a program under
    /// ibsim-run reads its socket in a loop, so it takes the rest without sleeping). Returns how
    /// many were sent, from the first: fewer than all when the peer's queue filled up
    /// (`WouldBlock` when not even the first fitted). At most [`MAX_BATCH`] per call.
    pub fn send_many<M: AsRef<[u8]>>(
        &self,
        msgs: &[M],
        headers: &mut Headers,
    ) -> io::Result<usize> {
        match msgs {
            [] => Ok(0),
            [one] => self.send(one.as_ref()).map(|_| 1),
            // A turn of a sweep answers a few MADs: their slices are made on a small array
            // (making all of MAX_BATCH's cost more than the call's other work).
            _ if msgs.len() <= SMALL_BATCH => self.send_batch::<SMALL_BATCH, M>(msgs, headers),
            _ => self.send_batch::<MAX_BATCH, M>(&msgs[..msgs.len().min(MAX_BATCH)], headers),
        }
    }

    /// [`Sock::send_many`] of at most `N` messages.
    fn send_batch<const N: usize, M: AsRef<[u8]>>(
        &self,
        msgs: &[M],
        headers: &mut Headers,
    ) -> io::Result<usize> {
        let msgs = &msgs[..msgs.len().min(N)];
        let mut rest = msgs.iter();
        let slices: [[IoSlice<'_>; 1]; N] =
            std::array::from_fn(|_| [IoSlice::new(rest.next().map_or(&[][..], AsRef::as_ref))]);
        // Connected sockets: no address (`()` names none).
        let no_addrs: [Option<()>; N] = [None; N];
        let fd = self.fd().as_raw_fd();
        match sendmmsg(
            fd,
            &mut headers.0,
            &slices[..msgs.len()],
            no_addrs,
            [],
            MsgFlags::MSG_DONTWAIT,
        ) {
            Ok(sent) => Ok(sent.count()),
            Err(e) => Err(io::Error::from(e)),
        }
    }

    /// The descriptor.
    pub fn fd(&self) -> BorrowedFd<'_> {
        match self {
            Sock::Unix(s) => s.as_fd(),
            Sock::Udp(s) => s.as_fd(),
        }
    }
}

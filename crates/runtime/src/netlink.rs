//! A few rtnetlink requests (RFC 3549; Linux `rtnetlink(7)`), made synchronously: the
//! configuration `ip link set` and `ip addr add` would do, without spawning `ip`.
//!
//! A [`Rtnl`] socket acts on the network namespace of the thread that opened it (netlink sockets
//! belong to their creator's namespace), so one opened on a thread that entered a namespace
//! configures that namespace, from any thread afterwards. Every request asks for an
//! acknowledgement and waits for it: the kernel's answer, success or errno, is the result.
//! A [`LinkWatch`] listens instead: the kernel's notices of link changes in its namespace
//! (`RTNLGRP_LINK`), kept in the socket until read.

use netlink_packet_core::{
    NetlinkHeader, NetlinkMessage, NetlinkPayload, NLM_F_ACK, NLM_F_CREATE, NLM_F_EXCL,
    NLM_F_REQUEST,
};
use netlink_packet_route::address::{AddressAttribute, AddressFlags, AddressMessage};
use netlink_packet_route::link::{LinkAttribute, LinkFlags, LinkMessage};
use netlink_packet_route::{AddressFamily, RouteNetlinkMessage};
use netlink_sys::{protocols::NETLINK_ROUTE, Socket, SocketAddr};
use std::io;
use std::net::IpAddr;

/// Why a request failed.
#[derive(Debug, thiserror::Error)]
pub enum NetlinkError {
    /// The socket failed.
    #[error("rtnetlink socket: {0}")]
    Io(#[from] io::Error),
    /// The kernel refused the request.
    #[error("{what}: {source}")]
    Refused {
        /// The request, as `ip` would be written.
        what: String,
        /// The errno the kernel answered.
        source: io::Error,
    },
    /// The answer was not a netlink message.
    #[error("rtnetlink: undecodable answer to {0}")]
    Garbled(String),
}

/// An rtnetlink socket of the current thread's network namespace.
#[derive(Debug)]
pub struct Rtnl {
    sock: Socket,
    seq: u32,
    buf: Vec<u8>,
}

impl Rtnl {
    /// Opens a socket in the calling thread's network namespace.
    pub fn open() -> Result<Rtnl, NetlinkError> {
        let mut sock = Socket::new(NETLINK_ROUTE)?;
        sock.bind_auto()?;
        sock.connect(&SocketAddr::new(0, 0))?;
        Ok(Rtnl {
            sock,
            seq: 0,
            buf: vec![0; 16 * 1024],
        })
    }

    /// `ip link set dev INDEX txqueuelen LEN`.
    pub fn set_txqueuelen(&mut self, index: u32, len: u32) -> Result<(), NetlinkError> {
        let mut m = LinkMessage::default();
        m.header.index = index;
        m.attributes.push(LinkAttribute::TxQueueLen(len));
        let what = format!("ip link set dev #{index} txqueuelen {len}");
        self.request(RouteNetlinkMessage::SetLink(m), 0, what)
    }

    /// `ip link set dev INDEX gso_max_segs SEGS`.
    pub fn set_gso_max_segs(&mut self, index: u32, segs: u32) -> Result<(), NetlinkError> {
        let mut m = LinkMessage::default();
        m.header.index = index;
        m.attributes.push(LinkAttribute::GsoMaxSegs(segs));
        let what = format!("ip link set dev #{index} gso_max_segs {segs}");
        self.request(RouteNetlinkMessage::SetLink(m), 0, what)
    }

    /// `ip link set dev INDEX [mtu MTU] up|down`.
    pub fn set_link(&mut self, index: u32, mtu: Option<u32>, up: bool) -> Result<(), NetlinkError> {
        let mut m = LinkMessage::default();
        m.header.index = index;
        m.header.change_mask = LinkFlags::Up;
        if up {
            m.header.flags = LinkFlags::Up;
        }
        if let Some(mtu) = mtu {
            m.attributes.push(LinkAttribute::Mtu(mtu));
        }
        let what = format!(
            "ip link set dev #{index}{} {}",
            mtu.map(|m| format!(" mtu {m}")).unwrap_or_default(),
            if up { "up" } else { "down" }
        );
        self.request(RouteNetlinkMessage::SetLink(m), 0, what)
    }

    /// `ip link set dev INDEX mtu MTU`, the device's flags untouched.
    pub fn set_mtu(&mut self, index: u32, mtu: u32) -> Result<(), NetlinkError> {
        let mut m = LinkMessage::default();
        m.header.index = index;
        m.attributes.push(LinkAttribute::Mtu(mtu));
        let what = format!("ip link set dev #{index} mtu {mtu}");
        self.request(RouteNetlinkMessage::SetLink(m), 0, what)
    }

    /// `ip link set dev INDEX carrier on|off`: the device's carrier, as a driver sets it with
    /// netif_carrier_on/off (a TUN device takes it from Linux 5.0, `tun_net_change_carrier`; it
    /// refuses `on` while no file holds the device; docs/DEPLOYED.md "TUN devices"). Addresses
    /// stay; routes through the device are marked `linkdown` while it has none.
    pub fn set_carrier(&mut self, index: u32, on: bool) -> Result<(), NetlinkError> {
        let mut m = LinkMessage::default();
        m.header.index = index;
        m.attributes.push(LinkAttribute::Carrier(u8::from(on)));
        let what = format!(
            "ip link set dev #{index} carrier {}",
            if on { "on" } else { "off" }
        );
        self.request(RouteNetlinkMessage::SetLink(m), 0, what)
    }

    /// `ip addr del ADDR/PREFIX dev INDEX`.
    pub fn del_address(
        &mut self,
        index: u32,
        addr: IpAddr,
        prefix_len: u8,
    ) -> Result<(), NetlinkError> {
        let m = address_message(index, addr, prefix_len);
        let what = format!("ip addr del {addr}/{prefix_len} dev #{index}");
        self.request(RouteNetlinkMessage::DelAddress(m), 0, what)
    }

    /// `ip addr add ADDR/PREFIX dev INDEX` (IPv6 addresses with `nodad`: the lab's devices have
    /// no duplicate to detect, docs/DEPLOYED.md).
    pub fn add_address(
        &mut self,
        index: u32,
        addr: IpAddr,
        prefix_len: u8,
    ) -> Result<(), NetlinkError> {
        let mut m = address_message(index, addr, prefix_len);
        if addr.is_ipv6() {
            m.attributes
                .push(AddressAttribute::Flags(AddressFlags::Nodad));
        }
        let what = format!("ip addr add {addr}/{prefix_len} dev #{index}");
        self.request(
            RouteNetlinkMessage::NewAddress(m),
            NLM_F_CREATE | NLM_F_EXCL,
            what,
        )
    }

    /// Sends `msg` with `flags` (plus REQUEST and ACK) and waits for the kernel's answer to it.
    fn request(
        &mut self,
        msg: RouteNetlinkMessage,
        flags: u16,
        what: String,
    ) -> Result<(), NetlinkError> {
        self.seq = self.seq.wrapping_add(1);
        let mut header = NetlinkHeader::default();
        header.flags = NLM_F_REQUEST | NLM_F_ACK | flags;
        header.sequence_number = self.seq;
        let mut m = NetlinkMessage::new(header, NetlinkPayload::from(msg));
        m.finalize();
        let len = m.buffer_len();
        if self.buf.len() < len {
            self.buf.resize(len, 0);
        }
        m.serialize(&mut self.buf[..len]);
        self.sock.send(&self.buf[..len], 0)?;
        loop {
            let n = self.sock.recv(&mut &mut self.buf[..], 0)?;
            let mut off = 0;
            while off < n {
                let answer = NetlinkMessage::<RouteNetlinkMessage>::deserialize(&self.buf[off..n])
                    .map_err(|_| NetlinkError::Garbled(what.clone()))?;
                let step = answer.header.length as usize;
                if answer.header.sequence_number == self.seq {
                    if let NetlinkPayload::Error(e) = answer.payload {
                        return match e.code {
                            None => Ok(()),
                            Some(_) => Err(NetlinkError::Refused {
                                what,
                                source: e.to_io(),
                            }),
                        };
                    }
                }
                if step == 0 {
                    break;
                }
                off += (step + 3) & !3;
            }
        }
    }
}

/// `RTNLGRP_LINK` (`include/uapi/linux/rtnetlink.h`): the multicast group of the kernel's
/// `RTM_NEWLINK` / `RTM_DELLINK` notices, sent on every change of a device's flags, MTU, carrier
/// or name (`rtmsg_ifinfo`, `net/core/rtnetlink.c`).
const RTNLGRP_LINK: u32 = 1;

/// At most this many notices are read by one [`LinkWatch::take`]: the rest wait for the next.
const WATCH_BATCH: usize = 256;

/// What a [`LinkWatch`] saw of one device since the last look.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct LinkChanges {
    /// A notice said it was down (no `IFF_UP`), or notices were lost (the socket's buffer
    /// overflowed, `ENOBUFS`, or one could not be read) and it may have been.
    pub was_down: bool,
    /// Up or not, by the latest notice.
    pub up: Option<bool>,
    /// The MTU by the latest notice.
    pub mtu: Option<u32>,
}

/// The kernel's link notices of the calling thread's network namespace (`RTNLGRP_LINK`),
/// queued in a non-blocking socket until [`take`](LinkWatch::take) reads them, so that a
/// device taken down and up again between two looks is seen to have been down.
#[derive(Debug)]
pub struct LinkWatch {
    sock: Socket,
    buf: Vec<u8>,
}

impl LinkWatch {
    /// Subscribes in the calling thread's namespace.
    pub fn open() -> Result<LinkWatch, NetlinkError> {
        let mut sock = Socket::new(NETLINK_ROUTE)?;
        sock.bind_auto()?;
        sock.add_membership(RTNLGRP_LINK)?;
        sock.set_non_blocking(true)?;
        Ok(LinkWatch {
            sock,
            buf: vec![0; 32 * 1024],
        })
    }

    /// Reads the notices waiting (at most 256) and says what they tell of the
    /// device with `index`.
    pub fn take(&mut self, index: u32) -> Result<LinkChanges, NetlinkError> {
        let mut seen = LinkChanges::default();
        for _ in 0..WATCH_BATCH {
            let n = match self.sock.recv(&mut &mut self.buf[..], 0) {
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) if e.raw_os_error() == Some(nix::errno::Errno::ENOBUFS as i32) => {
                    seen.was_down = true;
                    continue;
                }
                Err(e) => return Err(e.into()),
            };
            let mut off = 0;
            while off < n {
                let Ok(m) = NetlinkMessage::<RouteNetlinkMessage>::deserialize(&self.buf[off..n])
                else {
                    seen.was_down = true;
                    break;
                };
                let step = m.header.length as usize;
                if let NetlinkPayload::InnerMessage(RouteNetlinkMessage::NewLink(l)) = m.payload {
                    if l.header.index == index {
                        let up = l.header.flags.contains(LinkFlags::Up);
                        seen.was_down |= !up;
                        seen.up = Some(up);
                        for a in &l.attributes {
                            if let LinkAttribute::Mtu(mtu) = a {
                                seen.mtu = Some(*mtu);
                            }
                        }
                    }
                }
                if step == 0 {
                    break;
                }
                off += (step + 3) & !3;
            }
        }
        Ok(seen)
    }
}

/// The message of `ip addr add|del ADDR/PREFIX dev INDEX`: the address as both IFA_LOCAL and
/// IFA_ADDRESS, as iproute2 sends it.
fn address_message(index: u32, addr: IpAddr, prefix_len: u8) -> AddressMessage {
    let mut m = AddressMessage::default();
    m.header.index = index;
    m.header.prefix_len = prefix_len;
    m.header.family = match addr {
        IpAddr::V4(_) => AddressFamily::Inet,
        IpAddr::V6(_) => AddressFamily::Inet6,
    };
    m.attributes.push(AddressAttribute::Local(addr));
    m.attributes.push(AddressAttribute::Address(addr));
    m
}

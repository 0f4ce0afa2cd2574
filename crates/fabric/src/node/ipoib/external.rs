//! An [`IpoibApp`] whose IP layer is the host's own stack (Linux behind a TUN device, driven by
//! the runtime) instead of the built-in [`ipoib_proto::ip_host::IpHost`]: the stack hands IP
//! packets down with [`IpoibApp::from_os`] and takes what the link delivers with
//! [`IpoibApp::to_os`]. The interface stays what it is for `IpHost`: ARP and ND on the IB side
//! with real 20-byte link-layer addresses (draft-ietf-ipoib-ip-over-infiniband-06 §9.2, §9.3),
//! packets queued while their neighbour, path or group resolves, SendOnlyNonMember joins for
//! multicast it sends to (§11), connected mode when configured (RFC 4755). The IP layer's bytes
//! are never changed: what one host's stack sends comes out of the other's as it went in.
//!
//! What the interface raises for its IP layer means, here:
//! - [`InterfaceEvent::Deliver`](ipoib_proto::ipoib::InterfaceEvent::Deliver): a packet for the
//!   stack, queued for [`IpoibApp::to_os`]. That includes the ICMP "fragmentation needed"
//!   (RFC 792, RFC 1191 §4) and ICMPv6 "packet too big" (RFC 4443 §3.2) the interface builds for
//!   a packet too large for the way it must go, as Linux's `ipoib_cm_skb_too_long` hands its own
//!   stack (docs/DEPLOYED.md "Linux IPoIB"), within the no-reply rules of RFC 1122 §3.2.2 and
//!   RFC 4443 §2.4 (e) that the interface applies;
//! - `AddressReady(a)`: the interface's own IPv6 address `a` passed DAD on the IB side, so it now
//!   answers Neighbor Solicitations for `a` and may send from it; recorded
//!   ([`IpoibApp::os_ipv6_ready`]). The stack must use the same addresses: the interface answers
//!   ARP and ND only for its own (its `InterfaceConfig::ipv4` and `ipv6_static`, addresses added
//!   later with `Interface::add_ipv6_address`, and the link-local address from the port GUID,
//!   §8), so the runtime gives the stack's TUN device that link-local address (a TUN device has
//!   no GUID to make one from) or hands the interface the stack's;
//! - `DadFailed(a)`: logged and recorded; the interface will not answer for `a`;
//! - carrier and the MTU are the adapter's and the interface's as ever
//!   ([`IpoibApp::carrier`], `Interface::mtu`): the runtime mirrors them onto the TUN device.
//!
//! The stack's multicast memberships come from the IGMP and MLD messages it sends
//! ([`ipoib_proto::ipoib::snoop`]): each change of listening becomes a FullMember join or leave of
//! the group's MGID, as Linux IPoIB follows the device's multicast list (docs/DEPLOYED.md "Linux
//! IPoIB"); the messages themselves still go out on the link, as any IP multicast.
//!
//! Invariants: both queues are bounded ([`TO_OS_LIMIT`], [`FROM_OS_LIMIT`]); whatever is dropped
//! is counted in [`OsCounters`]; no bytes from the stack panic the adapter.

use super::app::{IpoibApp, IpoibHandle, RECV_DEPTH};
use crate::hw::hca::VerbsError;
use crate::node::host::Host;
use crate::Instant;
use ipoib_proto::ipoib::snoop::{SnoopChange, SnoopCounters, Snooper};
use ipoib_proto::ipoib::{ip_frame, Interface, InterfaceConfig, InterfaceError, IpBuf};
use ipoib_proto::rng::Rng;
use ipoib_wire::ipoib::encap::HEADER_LEN as ENCAP_HEADER_LEN;
use ipoib_wire::ipoib::ip::IPV6_HEADER_LEN;
use ipoib_wire::ipoib::{Ipv4Packet, Ipv6Packet};
use std::collections::VecDeque;
use std::net::{IpAddr, Ipv6Addr};

/// Packets waiting for the stack, at most: as many as Linux lets wait between a device and its
/// stack (the per-CPU receive backlog, `net.core.netdev_max_backlog`, 1000 by default;
/// docs/DEPLOYED.md "Linux IPoIB").
pub const TO_OS_LIMIT: usize = 1000;

/// Packets from the stack waiting for the interface, at most: Linux IPoIB's transmit queue
/// length, twice `send_queue_size` (128), i.e. 256 (docs/DEPLOYED.md "Linux IPoIB"). The adapter
/// drains it at its next poll, which [`crate::node::subnet::Subnet::with_ipoib`] runs at once.
pub const FROM_OS_LIMIT: usize = 256;

/// Counters of the path between the interface and the host's stack.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OsCounters {
    /// Packets from the stack handed to the interface.
    pub from_os: u64,
    /// Packets from the stack that are not IPv4 or IPv6 (a version other than 4 or 6, shorter
    /// than their header or their length field): dropped.
    pub malformed: u64,
    /// Packets from the stack dropped because [`FROM_OS_LIMIT`] were waiting.
    pub from_os_dropped: u64,
    /// Packets queued for the stack.
    pub to_os: u64,
    /// Packets for the stack dropped because [`TO_OS_LIMIT`] (or the limit set) were waiting.
    pub to_os_dropped: u64,
    /// Joins and leaves the interface refused (an IPv6 group with IPv6 off).
    pub group_errors: u64,
    /// The IGMP/MLD snooping.
    pub snoop: SnoopCounters,
}

/// The stack's side of an external interface (see the module docs).
#[derive(Debug)]
pub(crate) struct OsSide {
    to_os: VecDeque<IpBuf>,
    to_os_limit: usize,
    /// Frames for [`Interface::send_ip_frame`] (the IP packet after room for the encapsulation
    /// header).
    from_os: VecDeque<Vec<u8>>,
    snoop: Snooper,
    counters: OsCounters,
    ready: Vec<Ipv6Addr>,
    dad_failed: Vec<Ipv6Addr>,
}

impl OsSide {
    fn new() -> OsSide {
        OsSide {
            to_os: VecDeque::new(),
            to_os_limit: TO_OS_LIMIT,
            from_os: VecDeque::new(),
            snoop: Snooper::default(),
            counters: OsCounters::default(),
            ready: Vec::new(),
            dad_failed: Vec::new(),
        }
    }

    /// A packet the interface delivers: queued for the stack, or dropped if the queue is full
    /// (tail drop, as Linux's receive backlog).
    pub(super) fn deliver(&mut self, p: IpBuf) {
        if self.to_os.len() >= self.to_os_limit {
            self.counters.to_os_dropped += 1;
            return;
        }
        self.counters.to_os += 1;
        self.to_os.push_back(p);
    }

    pub(super) fn address_ready(&mut self, a: Ipv6Addr) {
        if !self.ready.contains(&a) {
            self.ready.push(a);
        }
    }

    pub(super) fn dad_failed(&mut self, a: Ipv6Addr) {
        self.ready.retain(|x| *x != a);
        if !self.dad_failed.contains(&a) {
            self.dad_failed.push(a);
        }
    }

    /// Hands the interface what the stack sent: the joins and leaves its IGMP/MLD asked for
    /// first, then the packets. Returns each join or leave with the interface's answer.
    pub(super) fn pump(
        &mut self,
        now: Instant,
        iface: &mut Interface,
    ) -> Vec<(IpAddr, Result<(), InterfaceError>)> {
        let mut done = Vec::new();
        while let Some(c) = self.snoop.poll_change() {
            let (g, r) = match c {
                SnoopChange::Join(g) => (g, iface.join_group(now, g)),
                SnoopChange::Leave(g) => (g, iface.leave_group(now, g)),
            };
            if r.is_err() {
                self.counters.group_errors += 1;
            }
            done.push((g, r));
        }
        while let Some(frame) = self.from_os.pop_front() {
            self.counters.from_os += 1;
            iface.send_ip_frame(now, frame);
        }
        done
    }
}

/// The IP packet at the start of `b` (bytes past its length field cut off), or `None` if `b` is
/// not one.
fn ip_packet(b: &[u8]) -> Option<&[u8]> {
    match b.first()? >> 4 {
        4 => {
            let p = Ipv4Packet::new_checked(b).ok()?;
            b.get(..usize::from(p.total_len()))
        }
        6 => {
            let p = Ipv6Packet::new_checked(b).ok()?;
            b.get(..IPV6_HEADER_LEN + usize::from(p.payload_len()))
        }
        _ => None,
    }
}

impl IpoibApp {
    /// Installs an interface whose IP layer is the OS (a TUN device) instead of the built-in
    /// `IpHost`, as [`IpoibApp::install`] does otherwise. The interface answers ARP and ND for
    /// the addresses `cfg` gives it, which must be the stack's.
    pub fn install_external(
        host: &mut Host,
        cfg: InterfaceConfig,
        rng: Rng,
    ) -> Result<IpoibHandle, VerbsError> {
        IpoibApp::install_inner(host, cfg, rng, RECV_DEPTH, Some(Box::new(OsSide::new())))
    }

    /// True when the IP layer is the OS ([`IpoibApp::install_external`]).
    pub fn is_external(&self) -> bool {
        self.os.is_some()
    }

    /// One IP packet (IPv4 or IPv6, no link header) the OS sent on the link. Malformed ->
    /// counted, dropped. IGMP (v1/v2/v3) and MLD (v1/v2) reports and leaves seen here make the
    /// interface join or leave the IB multicast group (FullMember), as Linux IPoIB follows the
    /// device's multicast list; they are sent on the link too. The interface takes the packet at
    /// the adapter's next poll (at once through
    /// [`crate::node::subnet::Subnet::with_ipoib`]). Nothing happens on an adapter that is not
    /// external.
    pub fn from_os(&mut self, now: Instant, packet: &[u8]) {
        if self.os.is_some() {
            // The one copy of the packet on its way out: the frame has room for the
            // encapsulation header in front, which the interface writes in place.
            self.from_os_frame(now, ip_frame(packet));
        }
    }

    /// [`IpoibApp::from_os`] for a packet that comes in a buffer of its own, after
    /// `ENCAP_HEADER_LEN` free bytes ([`ip_frame`]): the buffer
    /// becomes the frame that goes out, with no copy.
    pub fn from_os_frame(&mut self, _now: Instant, mut frame: Vec<u8>) {
        let Some(os) = self.os.as_mut() else {
            return;
        };
        let Some(p) = frame.get(ENCAP_HEADER_LEN..).and_then(ip_packet) else {
            os.counters.malformed += 1;
            return;
        };
        os.snoop.handle_packet(p);
        if os.from_os.len() >= FROM_OS_LIMIT {
            os.counters.from_os_dropped += 1;
            return;
        }
        let len = ENCAP_HEADER_LEN + p.len();
        frame.truncate(len);
        os.from_os.push_back(frame);
    }

    /// Next IP packet for the OS (delivered datagrams, and ICMP too-big answers built for the OS).
    /// Bounded queue ([`TO_OS_LIMIT`]).
    pub fn to_os(&mut self) -> Option<Vec<u8>> {
        self.to_os_buf().map(IpBuf::into_vec)
    }

    /// [`IpoibApp::to_os`] without moving the packet to a buffer of its own: it stays in the
    /// buffer it was received in, after the encapsulation header (what a device write wants).
    pub fn to_os_buf(&mut self) -> Option<IpBuf> {
        self.os.as_mut()?.to_os.pop_front()
    }

    /// Packets waiting in the queue for the OS.
    pub fn to_os_len(&self) -> usize {
        self.os.as_ref().map_or(0, |o| o.to_os.len())
    }

    /// Sets the bound of the queue for the OS (at least 1; [`TO_OS_LIMIT`] by default). Packets
    /// already waiting past a smaller bound stay.
    pub fn set_to_os_limit(&mut self, limit: usize) {
        if let Some(os) = self.os.as_mut() {
            os.to_os_limit = limit.max(1);
        }
    }

    /// Counters of this path (malformed from OS, queue drops, joins/leaves from snooping); zero
    /// on an adapter that is not external.
    pub fn os_counters(&self) -> OsCounters {
        self.os.as_ref().map_or_else(OsCounters::default, |o| {
            let mut c = o.counters;
            c.snoop = o.snoop.counters();
            c
        })
    }

    /// The multicast groups the OS listens to, as its IGMP and MLD messages said (the interface
    /// holds a FullMember join of each).
    pub fn os_groups(&self) -> Vec<IpAddr> {
        self.os
            .as_ref()
            .map(|o| o.snoop.groups().collect())
            .unwrap_or_default()
    }

    /// The interface's IPv6 addresses that passed DAD, in the order they did (external adapters;
    /// the built-in endpoint's are `ip().ipv6()`).
    pub fn os_ipv6_ready(&self) -> &[Ipv6Addr] {
        self.os.as_ref().map_or(&[], |o| &o.ready)
    }

    /// The interface's IPv6 addresses whose DAD found another node using them.
    pub fn os_ipv6_dad_failed(&self) -> &[Ipv6Addr] {
        self.os.as_ref().map_or(&[], |o| &o.dad_failed)
    }

    /// The OS's interface went away: every group it listened to is left (at the next poll).
    pub fn forget_os_groups(&mut self) {
        if let Some(os) = self.os.as_mut() {
            os.snoop.forget_all();
        }
    }
}

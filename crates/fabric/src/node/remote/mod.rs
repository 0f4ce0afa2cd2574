//! The emulated subnet across processes: the fabric (switches, the SM and SA) in one process and
//! each host's HCA in its own, exchanging whole InfiniBand packets (LRH through VCRC) in datagrams
//! of the format `ipoib_wire::udp_fabric` (docs/UDP-FABRIC.md). Everything here is sans-IO: the
//! agents take datagrams and time as arguments and hand datagrams back; `ipoib-runtime` owns the
//! sockets and the clock.
//!
//! - Fabric side: [`FabricServer`] builds the subnet of a topology with the SM's CA as an ordinary
//!   host (SM by SMPs and SA, as [`crate::node::subnet::Subnet`] has them; none with
//!   [`crate::node::subnet::SmMode::None`], for an external SM) and every other CA as a
//!   [`Remote`] slot (module `slot`), then gives slots to hosts that attach, checks what they send,
//!   forwards what the fabric sends them, and takes a silent host's link down; a slot's cable
//!   going up or down is a trap 128 from its switch, on which the SM sweeps again.
//! - Host side: [`RemoteHost`] runs one host (HCA and its software) in a simulator of its own,
//!   cabled to an [`Uplink`] (module `uplink`), and speaks the attach protocol ([`HostLink`]):
//!   attach, keepalives, reattach when the fabric stops answering, detach.
//!
//! The SM configures a slot's ports by SMPs like every other port; the CA's SMA runs in the slot
//! (module `slot`), and what a SubnSet changed reaches the host as a PortConfig message (the port
//! as the SMA holds it). SMPs never cross the network.
//!
//! Invariants: a host never chooses its identity (the fabric assigns slot, GUIDs and session);
//! a packet from a host enters the fabric only with that slot's SLID, GID and P_Keys; every queue
//! is bounded; bad datagrams are counted, never panicked on.

mod client;
mod cookie;
mod link;
mod options;
mod reliable;
mod server;
mod slot;
mod uplink;

pub use client::{InstallFn, RemoteHost};
pub use cookie::COOKIE_BUCKET;
pub use link::{HostLink, HostLinkConfig, HostLinkCounters, HostLinkEvent};
pub use server::{FabricOptions, FabricServer, ServerCounters};
pub use slot::{Remote, RemoteCounters, ToHost, DEFAULT_QUEUE_LIMIT, SLOT_PORT_BUFFER};
pub use uplink::{Uplink, UplinkCounters, UPLINK_PORT};

use crate::hw::mgmt::{PortConfig, PortState};
use ipoib_wire::udp_fabric::{
    DatagramRepr, MessageRepr, PortConfigRepr, PortStateCode, HEADER_LEN,
};

/// A datagram to send, in two parts: the 12-byte header, then the body. For a Packet message the
/// body is the packet's own buffer, moved in, so that an InfiniBand packet is not copied into a
/// datagram of its own (the socket sends both parts in one `sendmsg(2)`); the agents'
/// `poll_transmit` joins the parts for callers that want one buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outgoing {
    /// The datagram's header (docs/UDP-FABRIC.md "Datagrams").
    pub header: [u8; HEADER_LEN],
    /// The rest: the message's body.
    pub body: Vec<u8>,
}

impl Outgoing {
    /// A Packet message of `session` carrying `packet` (moved, not copied).
    pub fn packet(session: u64, packet: Vec<u8>) -> Outgoing {
        let mut header = [0; HEADER_LEN];
        // A Packet message's header does not depend on the packet: emitted with an empty one.
        let head = DatagramRepr {
            session,
            message: MessageRepr::Packet(&[]),
        };
        let _ = head.emit(&mut header);
        Outgoing {
            header,
            body: packet,
        }
    }

    /// Any message, emitted (`None` for one the format cannot carry, as
    /// [`DatagramRepr::emit`]).
    pub fn message(d: &DatagramRepr<'_>) -> Option<Outgoing> {
        let mut v = d.to_vec().ok()?;
        let body = v.split_off(HEADER_LEN);
        let mut header = [0; HEADER_LEN];
        header.copy_from_slice(&v);
        Some(Outgoing { header, body })
    }

    /// The datagram's length.
    pub fn len(&self) -> usize {
        HEADER_LEN + self.body.len()
    }

    /// Never empty: every datagram has its header.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The datagram in one buffer.
    pub fn to_vec(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(self.len());
        v.extend_from_slice(&self.header);
        v.extend_from_slice(&self.body);
        v
    }
}

/// A port configuration as the PortConfig message carries it.
pub fn config_to_wire(c: &PortConfig) -> PortConfigRepr {
    PortConfigRepr {
        port: c.port,
        state: match c.state {
            PortState::Down => PortStateCode::Down,
            PortState::Init => PortStateCode::Init,
            PortState::Armed => PortStateCode::Armed,
            PortState::Active => PortStateCode::Active,
        },
        lmc: c.lmc,
        sm_sl: c.sm_sl,
        lid: c.lid,
        sm_lid: c.sm_lid,
        mtu: c.mtu,
        rate: c.rate,
        subnet_prefix: c.subnet_prefix,
        pkeys: c.pkeys.clone(),
    }
}

/// A PortConfig message as a port configuration; `None` for an unknown port state (the MTU is
/// checked by the HCA that applies it, `crate::hw::hca::Port::apply`).
pub fn config_from_wire(c: &PortConfigRepr) -> Option<PortConfig> {
    Some(PortConfig {
        port: c.port,
        state: match c.state {
            PortStateCode::Down => PortState::Down,
            PortStateCode::Init => PortState::Init,
            PortStateCode::Armed => PortState::Armed,
            PortStateCode::Active => PortState::Active,
            PortStateCode::Unknown(_) => return None,
        },
        lid: c.lid,
        lmc: c.lmc,
        sm_lid: c.sm_lid,
        sm_sl: c.sm_sl,
        subnet_prefix: c.subnet_prefix,
        mtu: c.mtu,
        rate: c.rate,
        pkeys: c.pkeys.clone(),
    })
}

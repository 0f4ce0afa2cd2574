//! IPoIB connected mode (RFC 4755): unicast IP over RC or UC connections that the Communication
//! Manager sets up, beside the UD QP that keeps multicast, broadcast and address resolution.
//!
//! The interface owns no CM and no connected QP. It decides and says what to do through values,
//! and its host carries them out on the host's CM agent ([`crate::cm::Cm`]) and HCA:
//! - [`Interface::poll_cm_command`]: connect (a REQ to the peer's service ID, our private data),
//!   accept or reject a REQ, disconnect (DREQ). The host makes the QP for a connect or an accept
//!   and says which connection it started ([`Interface::cm_connect_started`]).
//! - [`Interface::handle_cm_event`]: the CM events of this interface's listeners
//!   ([`Interface::cm_service_ids`]) and connections.
//! - [`Interface::poll_conn_transmit`]: an encapsulated packet to SEND on a connection;
//!   [`Interface::handle_conn_received`] a message received on one;
//!   [`Interface::conn_send_failed`] a send that completed in error (the connection is dropped
//!   and its traffic goes over UD).
//!
//! The rules, with their sources:
//! - the link-layer address carries the RC and UC flags (RFC 4755 §3.1); a peer without a flag we
//!   share is reached over UD, and so is everyone while the mode is datagram;
//! - we listen on the service ID made from our UD QPN in both spellings and connect with the
//!   peer's (RFC 4755 §3.5; Linux's 0x10 top octet first, `wire::private_data::service_id`
//!   explains it); a REJ with reason 8 (invalid service ID) makes us try the other spelling at
//!   once, and the spelling that worked is remembered for the peer;
//! - every REQ, REP, RTU and REJ carries our UD QPN and receive MTU (RFC 4755 §3.2, §6), and the
//!   connection's MTU is the smaller receive MTU less the 4-octet header (§5.1); a peer whose
//!   receive MTU could not carry IPv6's 1280 octets is refused and reached over UD (§5,
//!   [`ConnectedConfig::MIN_PEER_RECEIVE_MTU`]);
//! - REQs that cross (a REQ from a peer we have a REQ outstanding to) are settled by §3.3: the
//!   side with the numerically smaller link-layer address (flags zeroed) accepts, the other
//!   rejects with Consumer Reject (28); the winner then sends on the connection it accepted
//!   once its own REQ is rejected, and on its own if the peer accepts that too (a peer that
//!   does not apply §3.3, as Linux; it receives only on connections it accepted);
//! - any other REQ is accepted, also from a peer we are already connected to: Linux opens one
//!   connection per direction and never sends on the one it accepted, so we send only on a
//!   connection we opened, or on the one §3.3 made us accept (docs/DEPLOYED.md "Linux IPoIB");
//! - multicast, broadcast, ARP and ND always go over UD (§2.1, §7); any unicast is accepted on any
//!   mode (§7);
//! - a packet larger than the MTU of the way it must go is answered with ICMP "fragmentation
//!   needed" or ICMPv6 "packet too big" carrying that MTU, as Linux does (docs/DEPLOYED.md);
//! - a connection that is rejected, times out or fails sends its queued packets over UD and is
//!   not tried again for [`ConnectedConfig::retry_after`]; idle connections are released after
//!   [`ConnectedConfig::idle_timeout`], all of them when the link goes down (§3.4 SHOULD), ours
//!   when the mode goes back to datagram (Linux flushes its paths).
//!
//! With [`PeerRules::Linux`] the interface behaves as a Linux host does instead: it accepts every
//! REQ (no §3.3 check), listens on the 0x10 spelling only and connects with it only (a REJ with
//! reason 8 ends the attempt). Tests use it as a Linux-style peer.
//!
//! Invariants: at most [`ConnectedConfig::max_peers`] peers, [`ConnectedConfig::queue_len`]
//! packets queued per peer and [`ConnectedConfig::MAX_ACCEPTED_PER_PEER`] connections accepted
//! from a peer and not being released; every connection record leaves the table on its TimeWait exit or
//! rejection; maps are `BTreeMap`s.

mod events;
mod tx;

use super::too_big::{too_big_reply, unreachable_reply};
use super::{DropReason, Interface, InterfaceEvent, Link, LogLevel};
use crate::cm::{CmEvent, ConnId, ConnectParams, QpProgram};
use crate::time::Instant;
use ipoib_wire::cm::{RejReason, ReqRepr, TransportServiceType};
use ipoib_wire::ipoib::{HwAddr, HwAddrFlags};
use ipoib_wire::private_data::ipoib_cm::{
    connection_mtu, IpoibCmPrivateDataRepr, LINUX_RECEIVE_MTU,
};
use ipoib_wire::private_data::service_id::{
    ipoib_cm_qpn, ipoib_cm_service_id, ipoib_cm_service_id_rfc, IpoibCmSidForm,
};
use ipoib_wire::sa::PathRecordRepr;
use ipoib_wire::Gid;
use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

/// Datagram or connected (Linux's per-interface `mode` attribute).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Unicast over UD; connections from peers are still accepted (RFC 4755 §7).
    Datagram,
    /// Unicast over connections to peers that offer them.
    Connected,
}

/// Whose rules the interface follows where RFC 4755 and Linux differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PeerRules {
    /// RFC 4755: the §3.3 crossing rule; listen on both service-ID spellings, and after a REJ
    /// with reason 8 connect once with the other.
    Rfc4755,
    /// Linux `ipoib_cm.c`: accept every REQ, one connection per direction, listen and connect
    /// on the 0x10 spelling only (docs/DEPLOYED.md "Linux IPoIB").
    Linux,
}

/// Connected-mode settings (RFC 4755).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectedConfig {
    /// Datagram or connected, at start; [`Interface::set_mode`] changes it.
    pub mode: Mode,
    /// Offer RC (flag 0x80 of the link-layer address, RFC 4755 §3.1).
    pub rc: bool,
    /// Offer UC (flag 0x40).
    pub uc: bool,
    /// Connect with UC when both sides offer it, even if both offer RC.
    pub prefer_uc: bool,
    /// The largest message we receive, encapsulation header included (RFC 4755 §5.1): Linux's
    /// 65524 by default, so the connection MTU is 65520 with a Linux peer.
    pub receive_mtu: u32,
    /// The service-ID spelling tried first.
    pub spelling: IpoibCmSidForm,
    /// RFC 4755 or Linux behaviour.
    pub rules: PeerRules,
    /// A connection with no traffic for this long is released.
    pub idle_timeout: Duration,
    /// After a failed connection, the peer is reached over UD for this long before a new try.
    pub retry_after: Duration,
    /// Packets queued per peer while its connection comes up.
    pub queue_len: usize,
    /// Peers with connection state at once.
    pub max_peers: usize,
}

impl ConnectedConfig {
    /// RC, Linux's receive MTU and spelling, RFC rules, connected mode; idle connections released
    /// after 60 s, failures retried after 1 s, 16 packets queued per peer, 1024 peers.
    pub fn rc() -> ConnectedConfig {
        ConnectedConfig {
            mode: Mode::Connected,
            rc: true,
            uc: false,
            prefer_uc: false,
            receive_mtu: LINUX_RECEIVE_MTU,
            spelling: IpoibCmSidForm::Linux,
            rules: PeerRules::Rfc4755,
            idle_timeout: Duration::from_secs(60),
            retry_after: Duration::from_secs(1),
            queue_len: 16,
            max_peers: 1024,
        }
    }

    /// The flags octet these settings advertise (RFC 4755 §3.1).
    pub fn flags(&self) -> HwAddrFlags {
        let mut f = 0;
        if self.rc {
            f |= HwAddrFlags::RC.0;
        }
        if self.uc {
            f |= HwAddrFlags::UC.0;
        }
        HwAddrFlags(f)
    }

    /// The largest receive MTU: 65524, so that the IP MTU stays 65520 (64 KiB less 16, Linux's
    /// `IPOIB_CM_MTU`).
    pub const MAX_RECEIVE_MTU: u32 = LINUX_RECEIVE_MTU;
    /// The smallest: 2048, the default IPoIB link MTU of 2044 plus the header (RFC 4755 §5).
    pub const MIN_RECEIVE_MTU: u32 = 2048;

    /// The smallest receive MTU we take from a peer: IPv6's minimum link MTU, 1280 (RFC 8200 §5),
    /// plus the 4-octet header. RFC 4755 §5.1 makes us accept a receive MTU smaller than ours,
    /// but §5 wants the link to carry the protocols' minimum MTU, so a peer offering less is
    /// reached over UD instead (and a receive MTU of 0 cannot make every packet "too big").
    pub const MIN_PEER_RECEIVE_MTU: u32 = 1280 + 4;

    /// Connections we accept from one peer (link-layer address) at once, not counting those
    /// being released: Linux opens one per direction, and a peer that restarted may still hold
    /// an older one in our table. A REQ beyond this is rejected with "no resources" (RFC 4755
    /// §3.2: the receiver MAY refuse another connection), so that REQs from one address, each
    /// with a new communication ID and QP, cannot make connections and QPs without bound.
    pub const MAX_ACCEPTED_PER_PEER: usize = 4;

    /// Peers (link-layer addresses) one GID may hold in the table through its REQs: a port has
    /// one UD QP per IPoIB interface, one interface per partition, so a GID naming many more UD
    /// QPNs in its private data is filling the table, not talking (one peer could otherwise take
    /// all of [`ConnectedConfig::max_peers`]).
    pub const MAX_PEERS_PER_GID: usize = 16;
}

/// A command for the host's CM.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CmCommand {
    /// Make an RC or UC QP (as `params.transport` says), move it to Init and send the REQ with it
    /// (`params.qpn` is the host's to fill); then report [`Interface::cm_connect_started`].
    Connect {
        /// The peer's link-layer address.
        peer: HwAddr,
        /// The REQ.
        params: ConnectParams,
    },
    /// Make a QP for this request, accept it with `private_data` and move the QP to RTR and RTS;
    /// if that fails, reject it (reason 1, no QP) and report [`Interface::cm_accept_failed`].
    Accept {
        /// The connection.
        conn: ConnId,
        /// The REP's private data.
        private_data: Vec<u8>,
    },
    /// Reject this request.
    Reject {
        /// The connection.
        conn: ConnId,
        /// Reason.
        reason: RejReason,
        /// The REJ's private data.
        private_data: Vec<u8>,
    },
    /// Release this connection (DREQ); the QP goes to Error on [`CmEvent::Disconnected`].
    Disconnect {
        /// The connection.
        conn: ConnId,
    },
}

/// An encapsulated packet to SEND on a connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnTransmit {
    /// The connection.
    pub conn: ConnId,
    /// The 4-byte encapsulation header and the datagram.
    pub data: Vec<u8>,
}

/// Where a connection stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConnState {
    /// REQ sent, or REP sent and the RTU not yet in.
    Connecting,
    /// Established.
    Up,
    /// Released or failed; waiting for TimeWait to end.
    Closing,
}

/// One connection, as [`Interface::connections`] shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectionInfo {
    /// The connection (its local communication ID).
    pub conn: ConnId,
    /// The peer's link-layer address (flags as last heard).
    pub peer: HwAddr,
    /// True if we sent the REQ.
    pub active: bool,
    /// True if we send on it (our own, or the one the crossing rule made us accept).
    pub sends: bool,
    /// State.
    pub state: ConnState,
    /// RC or UC.
    pub transport: TransportServiceType,
    /// The service ID of the REQ.
    pub service_id: u64,
    /// The IP MTU of the connection (0 until both receive MTUs are known).
    pub mtu: u32,
    /// Our QPN and the peer's, once established.
    pub qpns: Option<(u32, u32)>,
    /// Packets sent and received on it.
    pub tx_packets: u64,
    /// Packets received.
    pub rx_packets: u64,
}

/// The peer key: the link-layer address with the flags zeroed (RFC 4755 §3.3 note).
type PeerKey = (u32, Gid);

fn key(hw: &HwAddr) -> PeerKey {
    (hw.qpn & 0x00ff_ffff, hw.gid)
}

/// RFC 4755 §3.3: when REQs cross, the side whose link-layer address is numerically smaller
/// accepts the peer's REQ. The addresses are compared with the connection-mode flags zeroed,
/// from the most significant octet (flags, QPN, then the GID) to the least.
pub(super) fn crossing_accepts(local: &HwAddr, remote: &HwAddr) -> bool {
    let zeroed = |h: &HwAddr| HwAddr::new(HwAddrFlags::NONE, h.qpn, h.gid).to_bytes();
    zeroed(local) < zeroed(remote)
}

#[derive(Debug)]
struct Peer {
    hw: HwAddr,
    /// Our connection (REQ sent or established), and the spelling it used.
    tx: Option<ConnId>,
    /// A REQ is being made by the host (between the command and `cm_connect_started`).
    starting: bool,
    /// The connection §3.3 made us accept, which we send on.
    shared: Option<ConnId>,
    spelling: IpoibCmSidForm,
    /// True once the other spelling was tried for the current attempt.
    tried_other: bool,
    /// Reached over UD until then after a failure.
    retry_at: Option<Instant>,
    /// Frames waiting for the connection, with the path to send them over UD if it fails.
    queue: VecDeque<Vec<u8>>,
    /// The path, for UD fallback and the REQ.
    path: Option<(super::path::PathInfo, PathRecordRepr)>,
}

#[derive(Debug)]
struct Conn {
    peer: PeerKey,
    active: bool,
    state: ConnState,
    transport: TransportServiceType,
    service_id: u64,
    /// The peer's receive MTU from its private data (0 until known).
    remote_receive_mtu: u32,
    qpns: Option<(u32, u32)>,
    last_used: Instant,
    tx_packets: u64,
    rx_packets: u64,
}

/// The connected-mode state of an interface.
#[derive(Debug, Default)]
pub(super) struct Connected {
    peers: BTreeMap<PeerKey, Peer>,
    conns: BTreeMap<ConnId, Conn>,
    commands: VecDeque<CmCommand>,
    out: VecDeque<ConnTransmit>,
    /// The service-ID spelling that last worked with a peer, kept after its connections are
    /// gone (at most `max_peers`; the oldest entry makes room).
    spellings: BTreeMap<PeerKey, (Instant, IpoibCmSidForm)>,
    /// When the idle connections are next looked for: set when a connection comes up, moved on
    /// by each look (one scan per idle period, not one per event).
    idle_check: Option<Instant>,
}

impl Connected {
    /// A peer with no connection yet; the spelling is the one that last worked with it, if any.
    fn add_peer(&mut self, k: PeerKey, hw: HwAddr, default: IpoibCmSidForm) {
        let spelling = self.spelling_for(&k, default);
        self.peers.insert(
            k,
            Peer {
                hw,
                tx: None,
                starting: false,
                shared: None,
                spelling,
                tried_other: false,
                retry_at: None,
                queue: VecDeque::new(),
                path: None,
            },
        );
    }

    /// True when there is room for one more peer under `max`, after forgetting, if need be, a
    /// peer that holds nothing: no connection, nothing queued, no REQ being made, and its UD-only
    /// period after a failure over (such a peer is otherwise kept until we send to it again).
    fn make_room(&mut self, now: Instant, max: usize) -> bool {
        if self.peers.len() < max {
            return true;
        }
        let busy: std::collections::BTreeSet<PeerKey> =
            self.conns.values().map(|c| c.peer).collect();
        let spare = self
            .peers
            .iter()
            .find(|(k, p)| {
                p.tx.is_none()
                    && p.shared.is_none()
                    && !p.starting
                    && p.queue.is_empty()
                    && p.retry_at.is_none_or(|t| t <= now)
                    && !busy.contains(*k)
            })
            .map(|(k, _)| *k);
        spare.is_some_and(|k| self.peers.remove(&k).is_some())
    }

    fn spelling_for(&self, k: &PeerKey, default: IpoibCmSidForm) -> IpoibCmSidForm {
        self.spellings.get(k).map_or(default, |s| s.1)
    }

    fn remember_spelling(&mut self, now: Instant, k: PeerKey, s: IpoibCmSidForm, max: usize) {
        if !self.spellings.contains_key(&k) && self.spellings.len() >= max.max(1) {
            let oldest = self
                .spellings
                .iter()
                .min_by_key(|(_, v)| v.0)
                .map(|(k, _)| *k);
            if let Some(o) = oldest {
                self.spellings.remove(&o);
            }
        }
        self.spellings.insert(k, (now, s));
    }

    pub(super) fn next_deadline(&self) -> Option<Instant> {
        self.idle_check
    }
}

impl Interface {
    fn cm_cfg(&self) -> Option<ConnectedConfig> {
        self.cfg.connected
    }

    /// The service IDs the host must listen on for this interface (exact match each): the two
    /// spellings of RFC 4755 §3.5, or Linux's alone with [`PeerRules::Linux`].
    pub fn cm_service_ids(&self) -> Vec<u64> {
        match self.cm_cfg() {
            None => Vec::new(),
            Some(c) if c.rules == PeerRules::Linux => vec![ipoib_cm_service_id(self.cfg.qpn)],
            Some(_) => vec![
                ipoib_cm_service_id(self.cfg.qpn),
                ipoib_cm_service_id_rfc(self.cfg.qpn),
            ],
        }
    }

    /// Peers with connection state (tests check the bound).
    #[cfg(test)]
    pub(crate) fn cm_peer_count(&self) -> usize {
        self.cm.peers.len()
    }

    /// The mode (datagram without connected-mode settings).
    pub fn mode(&self) -> Mode {
        self.cm_cfg().map_or(Mode::Datagram, |c| c.mode)
    }

    /// Switches between datagram and connected mode (Linux's `mode` attribute). Going to datagram
    /// releases the connections we send on; connections from peers stay (RFC 4755 §7: unicast is
    /// accepted on any mode). Without connected-mode settings only datagram is possible.
    pub fn set_mode(&mut self, now: Instant, mode: Mode) -> Result<(), super::InterfaceError> {
        let Some(c) = self.cfg.connected.as_mut() else {
            return match mode {
                Mode::Datagram => Ok(()),
                Mode::Connected => Err(super::InterfaceError::NotConnectedCapable),
            };
        };
        if c.mode == mode {
            return Ok(());
        }
        c.mode = mode;
        if mode == Mode::Datagram {
            let ours: Vec<ConnId> = self
                .cm
                .conns
                .iter()
                .filter(|(_, c)| c.active && c.state != ConnState::Closing)
                .map(|(id, _)| *id)
                .collect();
            for id in ours {
                self.cm_release(now, id);
            }
        }
        self.log(LogLevel::Info, format_args!("mode {mode:?}"));
        self.settle_deadline();
        Ok(())
    }

    /// The connections.
    pub fn connections(&self) -> Vec<ConnectionInfo> {
        self.cm
            .conns
            .iter()
            .map(|(id, c)| {
                let peer = self.cm.peers.get(&c.peer);
                let sends = peer.is_some_and(|p| p.tx == Some(*id) || p.shared == Some(*id));
                ConnectionInfo {
                    conn: *id,
                    peer: peer.map_or(HwAddr::new(HwAddrFlags::NONE, c.peer.0, c.peer.1), |p| p.hw),
                    active: c.active,
                    sends,
                    state: c.state,
                    transport: c.transport,
                    service_id: c.service_id,
                    mtu: self.conn_mtu(c),
                    qpns: c.qpns,
                    tx_packets: c.tx_packets,
                    rx_packets: c.rx_packets,
                }
            })
            .collect()
    }

    /// The MTU towards `dst` right now (the per-destination MTU Linux keeps with the
    /// neighbour): the MTU of the connection we send to it on, when one is up (RFC 4755 §5.1),
    /// else the UD MTU; the link MTU while `dst` is not resolved yet.
    pub fn path_mtu(&self, dst: std::net::IpAddr) -> u32 {
        let hw = self.neigh.get(&dst).and_then(|n| n.hw);
        let Some(hw) = hw else {
            return self.mtu();
        };
        let k = key(&hw);
        // A peer in its UD-only period after a failure is reached with the UD MTU.
        let failed = self.cm.peers.get(&k).is_some_and(|p| p.retry_at.is_some());
        match self.sending_conn(&k).and_then(|c| self.cm.conns.get(&c)) {
            Some(c) => self.conn_mtu(c),
            None if !failed && self.goes_connected(&hw, &[0x08, 0x00]) => self.mtu(),
            None => self.ud_mtu(),
        }
    }

    /// The next command for the host's CM.
    pub fn poll_cm_command(&mut self) -> Option<CmCommand> {
        self.cm.commands.pop_front()
    }

    /// The next packet to send on a connection.
    pub fn poll_conn_transmit(&mut self) -> Option<ConnTransmit> {
        let t = self.cm.out.pop_front()?;
        self.counters.tx_frames += 1;
        Some(t)
    }

    /// The host sent the REQ of [`CmCommand::Connect`] for `peer` as connection `conn`, or could
    /// not (`None`: the peer is reached over UD for a while).
    pub fn cm_connect_started(&mut self, now: Instant, peer: HwAddr, conn: Option<ConnId>) {
        self.connect_started(now, peer, conn);
        self.settle_deadline();
    }

    /// The host could not make a QP for an accepted request; it rejected it.
    pub fn cm_accept_failed(&mut self, now: Instant, conn: ConnId) {
        self.forget_conn(now, conn);
        self.settle_deadline();
    }

    /// A CM event for one of this interface's listeners or connections.
    pub fn handle_cm_event(&mut self, now: Instant, e: &CmEvent) {
        self.cm_event(now, e);
        self.settle_deadline();
    }

    /// A message received on connection `conn`: the encapsulation header and a datagram (the
    /// buffer is handed on to the IP layer as it is, [`super::IpBuf`]).
    pub fn handle_conn_received(&mut self, now: Instant, conn: ConnId, data: Vec<u8>) {
        self.counters.rx_frames += 1;
        if let Some(c) = self.cm.conns.get_mut(&conn) {
            c.last_used = now;
            c.rx_packets += 1;
        }
        if self.link != Link::Up {
            self.drop1(DropReason::NotUp);
        } else {
            self.receive_encapsulated(now, data, None);
        }
        self.settle_deadline();
    }

    /// A send on `conn` completed in error: the connection is released and its peer reached over
    /// UD until [`ConnectedConfig::retry_after`] has passed.
    pub fn conn_send_failed(&mut self, now: Instant, conn: ConnId) {
        if let Some(c) = self.cm.conns.get(&conn) {
            let k = c.peer;
            self.peer_failed(now, k);
            self.cm_release(now, conn);
        }
        self.settle_deadline();
    }

    fn conn_mtu(&self, c: &Conn) -> u32 {
        match (self.cm_cfg(), c.remote_receive_mtu) {
            (Some(cfg), r) if r > 0 => connection_mtu(cfg.receive_mtu, r),
            _ => 0,
        }
    }

    /// Our private data for every establishment message and REJ (RFC 4755 §3.2, §6): our UD
    /// QPN and receive MTU. The host puts it in the REJ it sends when it withdraws a connection
    /// that is not established yet ([`CmCommand::Disconnect`]).
    pub fn cm_private_data(&self) -> Vec<u8> {
        let receive_mtu = self.cm_cfg().map_or(LINUX_RECEIVE_MTU, |c| c.receive_mtu);
        let r = IpoibCmPrivateDataRepr {
            ud_qpn: self.cfg.qpn & 0x00ff_ffff,
            receive_mtu,
        };
        let mut v = vec![0u8; r.buffer_len()];
        // The buffer is buffer_len() bytes.
        let _ = r.emit(&mut v);
        v
    }

    /// True when a unicast frame to `hw` goes over a connection: connected mode, a transport we
    /// share, and not address resolution (RFC 4755 §7: always UD).
    pub(super) fn goes_connected(&self, hw: &HwAddr, frame: &[u8]) -> bool {
        let Some(c) = self.cm_cfg() else {
            return false;
        };
        c.mode == Mode::Connected && self.transport_with(hw).is_some() && !tx::is_resolution(frame)
    }

    fn transport_with(&self, hw: &HwAddr) -> Option<TransportServiceType> {
        let c = self.cm_cfg()?;
        let rc = c.rc && hw.flags.rc();
        let uc = c.uc && hw.flags.uc();
        match (rc, uc) {
            (_, true) if c.prefer_uc || !rc => Some(TransportServiceType::Uc),
            (true, _) => Some(TransportServiceType::Rc),
            _ => None,
        }
    }
}

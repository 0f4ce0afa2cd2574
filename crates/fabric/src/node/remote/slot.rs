//! [`Remote`]: the device that stands, in the fabric's simulator, for a channel adapter whose HCA
//! runs in another process. It is cabled where the topology puts that CA; what the switch sends it
//! waits in a bounded queue for the network ([`Remote::poll_to_host`]), and what the network
//! brings is put on its port ([`Remote::from_network`]) only after the checks below.
//!
//! The fabric never trusts a host for another host's identity. A packet from the host is dropped
//! and counted ([`RemoteCounters`]) unless:
//! - it parses as an InfiniBand packet with a good VCRC (IBA 1 §7.7, §7.8.2: a port discards a
//!   packet whose VCRC is bad);
//! - it is not on VL15 (subnet management packets: the slot's own SMA answers the SM, and a host
//!   has no business sending SMPs into the fabric);
//! - the slot's port has a link (IBA 1 §5.6.2.1: a port whose PortPhysicalState, or the switch
//!   end's, a SubnSet made Disabled, §14.2.5.6, sends nothing; counted in `link_down`);
//! - the slot's port is Active (IBA 1 §7.2: a port in Init or Armed transmits subnet management
//!   packets only, and a data packet from a port not Active is discarded, as the emulated HCA's
//!   `TxPortNotActive`, counted in PortXmitDiscards, §16.1.3.5): the port's state is the slot's
//!   SMA's, which the SM sets; the host learns it by a [`PortConfig`] that may arrive after the
//!   change, and what it sends meanwhile on a port the SM took out of Active is dropped here,
//!   counted in `port_not_active` only: the CA's PMA runs in the host's HCA, which sent it from a
//!   port it held Active, so the port's PortXmitDiscards does not count it;
//! - the slot's port has a LID and the packet's SLID is in its LID range (IBA 1 §7.11.1: a port
//!   sends with SLID = base LID + path bits);
//! - a GRH's SGID is the port's GID (IBA 1 §8.3.1: the SGID is one of the sender's GIDs; the port
//!   has one, subnet prefix + port GUID, §4.1.1);
//! - it has a BTH and its P_Key is one of the port's P_Key table entries, membership bit included
//!   (IBA 1 §10.9.2: the P_Key a packet carries comes from the sender's table).
//!
//! What the switch sends the CA on VL15 goes to the slot's SMA (below), never to the host; a data
//! packet is queued for the host only while the slot's port is Armed or Active (IBA 1 §7.2: a
//! port in Init receives subnet management packets only), whatever the host's view of its port,
//! or when it fails the link layer's checks (malformed, a bad CRC): those the host's HCA
//! discards and counts in the port's PortRcvErrors (IBA 1 §16.1.3.5), in any state.
//!
//! The CA's subnet management agent runs here, in the fabric, not in the host: SMPs (VL15) that
//! reach the slot go to an [`Hca`] that holds the CA's GUIDs and ports and answers them as any
//! HCA's SMA does (IBA 1 chapter 14, `crate::hw::hca` module `sma`), so the SM discovers and
//! configures the port by SMPs as it does an in-process host's. The HCA's QPs are never used.
//! Every port whose PortInfo or P_KeyTable a SubnSet changed is queued for the host (its
//! configuration as a [`PortConfig`]) while a host is attached, and every port's again when
//! a host attaches ([`Remote::attach`]), so a host that comes (back) gets what it missed. So is
//! a port whose link went down (Down: its PortPhysicalState or the switch end's Disabled) or
//! trained again (Init): the host takes its own cable down or up with it, as a host in the
//! fabric's process sees its link go (docs/UDP-FABRIC.md).

use crate::hw::hca::Hca;
use crate::hw::mgmt::PortConfig;
use crate::hw::sim::{Device, Frame, Tx};
use ipoib_proto::time::Instant;
use ipoib_wire::packet::Packet;
use ipoib_wire::{Gid, Guid, Mtu};
use std::any::Any;
use std::collections::VecDeque;

/// Packets (and configurations) waiting for the network, at most.
pub const DEFAULT_QUEUE_LIMIT: usize = 4096;

/// Bytes each port of a slot may hold queued for its link ([`Device::port_buffer`]; the link
/// discards a packet beyond them, counted in [`RemoteCounters::buffer_full`]). A host's packets
/// come as fast as its datagrams do, with no link-level credit to hold them back (IBA 1 §7.9),
/// so without a bound a host sending faster than its link carries grew the fabric's memory
/// without end. 32 MiB: eight times the most one turn of `ipoib fabric` takes from its socket
/// at one instant (64 reads of at most 64 KiB, `runtime::udp_fabric`), 8 ms of a 32 Gb/s link.
pub const SLOT_PORT_BUFFER: usize = 32 << 20;

/// What a [`Remote`] hands to the network for its host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToHost {
    /// A packet the switch sent the CA.
    Packet(Vec<u8>),
    /// The SM's configuration of a port.
    Config(PortConfig),
    /// A SubnSet(PortInfo) with ClientReregister 1 on this port (IBA 1 §14.4.11), after the
    /// port's configuration it wrote.
    ClientReregister(u8),
}

/// Counters of a [`Remote`] slot.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RemoteCounters {
    /// Packets from the fabric queued for the host.
    pub to_host: u64,
    /// Packets from the fabric dropped: no host attached.
    pub unattached: u64,
    /// Packets from the fabric dropped: the queue was full.
    pub queue_full: u64,
    /// Packets from the fabric that arrived on a port other than the slot's.
    pub other_port: u64,
    /// Data packets from the fabric dropped: the slot's port was neither Armed nor Active
    /// (IBA 1 §7.2: a port in Init receives subnet management packets only). A packet that
    /// fails the link layer's checks is not dropped here but by the host's HCA (module docs).
    pub to_host_not_armed: u64,
    /// Packets from the host put on the port.
    pub from_host: u64,
    /// From the host, dropped: not a packet, or a bad VCRC.
    pub malformed: u64,
    /// From the host, dropped: on VL15.
    pub management: u64,
    /// From the host, dropped: the slot's port has no link (its PortPhysicalState Disabled, or
    /// the switch port facing it disabled: IBA 1 §14.2.5.6, §5.6.2.1), as a port without a
    /// link sends nothing; the host, which the PortConfig with PortState Down may not have
    /// reached yet, sent it.
    pub link_down: u64,
    /// From the host, dropped: a data packet while the slot's port is not Active (IBA 1 §7.2).
    pub port_not_active: u64,
    /// From the host, dropped: the port has no LID yet.
    pub unconfigured: u64,
    /// From the host, dropped: a SLID outside the port's LID range.
    pub spoofed_lid: u64,
    /// From the host, dropped: a GRH SGID that is not the port's GID.
    pub spoofed_gid: u64,
    /// From the host, dropped: a raw packet or a P_Key not in the port's table.
    pub bad_pkey: u64,
    /// SMPs from the fabric given to the slot's SMA.
    pub smps: u64,
    /// Packets the port put on its link and the link discarded: [`SLOT_PORT_BUFFER`] bytes were
    /// waiting for it already (the host sends faster than the link carries).
    pub buffer_full: u64,
}

impl RemoteCounters {
    /// Packets from the host dropped, for any reason.
    pub fn dropped_from_host(&self) -> u64 {
        self.malformed
            + self.management
            + self.link_down
            + self.port_not_active
            + self.unconfigured
            + self.spoofed_lid
            + self.spoofed_gid
            + self.bad_pkey
    }
}

/// The stand-in for a CA whose HCA is elsewhere. See the module docs.
pub struct Remote {
    node_guid: Guid,
    port_guids: Vec<Guid>,
    port: u8,
    attached: bool,
    /// The CA's SMA: its ports as the SM configured them.
    sma: Hca,
    queue: VecDeque<ToHost>,
    limit: usize,
    counters: RemoteCounters,
}

impl std::fmt::Debug for Remote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Remote")
            .field("node_guid", &self.node_guid)
            .field("port", &self.port)
            .field("attached", &self.attached)
            .field("queue", &self.queue.len())
            .field("counters", &self.counters)
            .finish_non_exhaustive()
    }
}

impl Remote {
    /// The slot for a CA with these GUIDs (port 1 first) whose host uses `port`.
    pub fn new(node_guid: Guid, port_guids: Vec<Guid>, port: u8) -> Remote {
        Remote::with_sma(Hca::with_port_guids(node_guid, port_guids), port)
    }

    /// The slot whose SMA is `sma` (its GUIDs are the CA's), whose host uses `port`.
    pub fn with_sma(sma: Hca, port: u8) -> Remote {
        let port_guids = (1..=sma.port_count())
            .map(|p| sma.port(p).map_or(Guid(0), |x| x.guid))
            .collect();
        Remote {
            node_guid: sma.node_guid(),
            sma,
            port_guids,
            port,
            attached: false,
            queue: VecDeque::new(),
            limit: DEFAULT_QUEUE_LIMIT,
            counters: RemoteCounters::default(),
        }
    }

    /// Holds at most `limit` items for the network.
    pub fn with_queue_limit(mut self, limit: usize) -> Remote {
        self.limit = limit;
        self
    }

    /// Node GUID.
    pub fn node_guid(&self) -> Guid {
        self.node_guid
    }

    /// Port GUIDs, port 1 first.
    pub fn port_guids(&self) -> &[Guid] {
        &self.port_guids
    }

    /// The port the host uses.
    pub fn port(&self) -> u8 {
        self.port
    }

    /// The host port's GUID.
    pub fn port_guid(&self) -> Guid {
        self.port_guids
            .get(usize::from(self.port).wrapping_sub(1))
            .copied()
            .unwrap_or(Guid(0))
    }

    /// The slot's SMA: the CA's ports (node description, rates, cables are set through it).
    pub fn sma(&self) -> &Hca {
        &self.sma
    }

    /// The slot's SMA, mutably.
    pub fn sma_mut(&mut self) -> &mut Hca {
        &mut self.sma
    }

    /// `port`'s configuration as the SM set it.
    pub fn port_config(&self, port: u8) -> Option<PortConfig> {
        self.sma.port(port).map(|p| p.config())
    }

    /// The host port's LID (0 before the SM configured it).
    pub fn lid(&self) -> u16 {
        self.port_config(self.port).map_or(0, |c| c.lid)
    }

    /// The host port's GID.
    pub fn gid(&self) -> Gid {
        let prefix = self
            .port_config(self.port)
            .map_or(Gid::DEFAULT_SUBNET_PREFIX, |c| c.subnet_prefix);
        Gid::new(prefix, self.port_guid().0)
    }

    /// True while a host is attached.
    pub fn is_attached(&self) -> bool {
        self.attached
    }

    /// Counters.
    pub fn counters(&self) -> RemoteCounters {
        self.counters
    }

    /// A host attached: the queue starts afresh with every port's configuration, in port order,
    /// then the ClientReregister events that waited (an event, not state: a host attached again
    /// whose AttachRequest came before the slot's queue went out would lose it, and its IPoIB
    /// would not register with a new SA, IBA 1 §14.4.11).
    pub fn attach(&mut self) {
        self.attached = true;
        let events: Vec<ToHost> = (self.queue.drain(..))
            .filter(|q| matches!(q, ToHost::ClientReregister(_)))
            .collect();
        let configs: Vec<PortConfig> = (1..=self.sma.port_count())
            .filter_map(|p| self.port_config(p))
            .collect();
        self.queue.extend(configs.into_iter().map(ToHost::Config));
        self.queue.extend(events);
    }

    /// The host left: what waited for it is dropped, and nothing is queued until the next
    /// [`Remote::attach`].
    pub fn detach(&mut self) {
        self.attached = false;
        self.queue.clear();
    }

    /// The next item for the host, oldest first.
    pub fn poll_to_host(&mut self) -> Option<ToHost> {
        self.queue.pop_front()
    }

    /// True when something waits for the host.
    pub fn has_to_host(&self) -> bool {
        !self.queue.is_empty()
    }

    /// A packet from the host: checked (module docs), then put on the port, or dropped and
    /// counted. True when it was put on the port.
    pub fn from_network(&mut self, packet: &[u8], tx: &mut Tx) -> bool {
        let verdict = self.check(packet);
        match verdict {
            Ok(()) => {
                self.counters.from_host += 1;
                // Copied into a spent packet's allocation ([`Tx::spare`]; the sent datagrams'
                // come back through `FabricServer::recycle`), not a new one.
                let mut buf = tx.spare();
                buf.clear();
                buf.extend_from_slice(packet);
                // The check computed the VCRC over these bytes: the switch port at the cable's
                // other end, which checks what this one did (IBA 1 §7.8.2), does not again. The
                // ICRC stays the destination's to check (IBA 1 §7.8.1).
                tx.send_frame(self.port, Frame::with_vcrc_checked(buf));
                true
            }
            Err(c) => {
                *c += 1;
                false
            }
        }
    }

    /// The counter a packet from the host is dropped under, if any.
    fn check(&mut self, packet: &[u8]) -> Result<(), &mut u64> {
        let c = &mut self.counters;
        // The switch port the host's cable ends on checks the VCRC; the ICRC is the
        // destination's to check (IBA 1 §7.8.1).
        let p = match Packet::parse_vcrc_only(packet) {
            Ok(p) if p.vcrc_ok => p,
            _ => return Err(&mut c.malformed),
        };
        if p.lrh.vl == 15 {
            return Err(&mut c.management);
        }
        // IBA 1 §5.6.2.1: a port whose link is down (disabled at either end) sends nothing.
        if !self.sma.port(self.port).is_some_and(|p| p.phys_up) {
            return Err(&mut c.link_down);
        }
        // IBA 1 §7.2: only VL15 leaves a port that is not Active (the emulated HCA's
        // `TxPortNotActive`); the port's state is the SMA's, as the SM set it.
        if !self
            .sma
            .port(self.port)
            .is_some_and(|p| p.state.transmits_data())
        {
            return Err(&mut c.port_not_active);
        }
        let Some(cfg) = self.sma.port(self.port).filter(|c| c.lid != 0) else {
            return Err(&mut c.unconfigured);
        };
        let span = 1u32 << cfg.lmc.min(7);
        let slid = u32::from(p.lrh.slid);
        if slid < u32::from(cfg.lid) || slid >= u32::from(cfg.lid) + span {
            return Err(&mut c.spoofed_lid);
        }
        if let Some(g) = p.grh {
            let guid = self
                .port_guids
                .get(usize::from(self.port).wrapping_sub(1))
                .copied()
                .unwrap_or(Guid(0));
            if g.sgid != Gid::new(cfg.subnet_prefix, guid.0) {
                return Err(&mut c.spoofed_gid);
            }
        }
        match p.bth {
            Some(b) if cfg.pkeys.contains(&b.pkey) => Ok(()),
            _ => Err(&mut c.bad_pkey),
        }
    }

    fn push(&mut self, item: ToHost) -> bool {
        if self.queue.len() >= self.limit {
            self.counters.queue_full += 1;
            return false;
        }
        self.queue.push_back(item);
        true
    }

    /// Port `port`'s MTUCap, as the slot's SMA holds it.
    fn mtu_cap(&self, port: u8) -> Mtu {
        self.sma
            .port(port)
            .map_or(crate::hw::sma::MTU_CAP, |p| p.mtu_cap)
    }

    /// Every port's ClientReregister count (`Port::client_reregisters`), port 1 first.
    fn reregisters(&self) -> Vec<u64> {
        (1..=self.sma.port_count())
            .map(|p| self.sma.port(p).map_or(0, |x| x.client_reregisters))
            .collect()
    }

    /// Queues for the host the configuration of every port the SMA changed.
    fn port_changes(&mut self) {
        for p in self.sma.take_port_changes() {
            if let Some(c) = self.port_config(p).filter(|_| self.attached) {
                self.push(ToHost::Config(c));
            }
        }
    }
}

/// True for a packet on VL15 (IBA 1 §7.6.3: subnet management; LRH byte 0, bits 7-4).
fn on_vl15(packet: &[u8]) -> bool {
    packet.first().is_some_and(|b| b >> 4 == 15)
}

/// True for a packet that passes the checks a receiving port makes before its state's
/// (`crate::hw::hca` `rx`): it parses, its LVer is 0 (IBA 1 §7.7), its VCRC and ICRC are good
/// (IBA 1 §7.8), its VL is one the port operates and its payload within the port's MTUCap
/// `mtu_cap` (`crate::hw::sma::rcv_malformed`). Computed only for a data packet to a port in
/// Init or Armed, never on the way to a host whose port is Active.
fn passes_link_checks(packet: &[u8], mtu_cap: Mtu) -> bool {
    Packet::parse(packet).is_ok_and(|p| {
        p.lrh.lver == 0
            && p.vcrc_ok
            && p.icrc_ok
            && !crate::hw::sma::rcv_malformed(p.lrh.vl, p.payload.len(), mtu_cap)
    })
}

/// True for a packet whose DLID the port `p` takes (IBA 1 §7.11.1): in its LID range, or a
/// multicast LID (`crate::hw::hca` `rx`).
fn for_port(packet: &[u8], p: &crate::hw::hca::Port) -> bool {
    let dlid = packet.get(2..4).map(|b| u16::from_be_bytes([b[0], b[1]]));
    dlid.is_some_and(|d| ipoib_wire::ib::lid::is_multicast_lid(d) || p.path_bits(d).is_some())
}

impl Device for Remote {
    fn receive(&mut self, now: Instant, port: u8, packet: Vec<u8>, tx: &mut Tx) {
        if on_vl15(&packet) {
            self.counters.smps += 1;
            let before = self.reregisters();
            self.sma.receive(now, port, packet, tx);
            self.port_changes();
            let after = self.reregisters();
            for (p, (b, a)) in (1..).zip(before.into_iter().zip(after)) {
                if a != b && self.attached {
                    self.push(ToHost::ClientReregister(p));
                }
            }
        } else if port != self.port {
            self.counters.other_port += 1;
        } else if !self.sma.port(port).is_some_and(|p| p.state.receives_data())
            && passes_link_checks(&packet, self.mtu_cap(port))
        {
            // IBA 1 §7.2, as the emulated HCA's `PortNotActive` on receipt: the host, whose
            // view of the port may lag the SMA's, is not given what its port would not take.
            // A packet that fails the link layer's checks goes on: the host's HCA discards it
            // and counts it in PortRcvErrors (IBA 1 §16.1.3.5), as it checks before the state.
            self.counters.to_host_not_armed += 1;
        } else if !self.attached {
            self.counters.unattached += 1;
        } else {
            // IBA 1 §7.2: a valid data packet takes an Armed port Active (`Hca::data_received`);
            // the host hears of it before the packet, as of the SM's writes.
            // The DLID check too (IBA 1 §7.11.1), as the HCA's before it goes Active.
            let armed = self.sma.port(port).is_some_and(|p| {
                p.state == crate::hw::mgmt::PortState::Armed && for_port(&packet, p)
            });
            if armed && passes_link_checks(&packet, self.mtu_cap(port)) {
                self.sma.data_received(port);
                self.port_changes();
            }
            if self.push(ToHost::Packet(packet)) {
                self.counters.to_host += 1;
            }
        }
    }

    fn handle_timeout(&mut self, _now: Instant, _tx: &mut Tx) {}

    fn poll_timeout(&self) -> Option<Instant> {
        None
    }

    fn port_buffer(&self) -> Option<usize> {
        Some(SLOT_PORT_BUFFER)
    }

    fn discarded(&mut self, _port: u8, _frame: &Frame) {
        self.counters.buffer_full += 1;
    }

    /// The port's link went down (its PortPhysicalState or the switch's end Disabled, the cable
    /// gone with the host's session) or trained again (Init): the host is told by a PortConfig,
    /// Down or Init, as of a SubnSet, and takes its own cable down or up with it
    /// (docs/UDP-FABRIC.md, "PortConfig carries what the SMA set").
    fn link_state(&mut self, now: Instant, port: u8, up: bool, tx: &mut Tx) {
        let before = self.port_config(port);
        self.sma.link_state(now, port, up, tx);
        let after = self.port_config(port);
        if self.attached && after != before {
            if let Some(c) = after {
                self.push(ToHost::Config(c));
            }
        }
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hw::mgmt::{Config, PortState};
    use crate::testing::ud_packet;
    use ipoib_wire::{Mtu, PKey, Rate};

    /// A slot whose port 1 has LID 5, the default P_Key, and `state`.
    fn slot_in(state: PortState) -> (Remote, Tx) {
        let mut r = Remote::new(Guid(0x100), vec![Guid(0x101)], 1);
        r.attach();
        let mut tx = Tx::default();
        let config = PortConfig {
            port: 1,
            lid: 5,
            lmc: 0,
            sm_lid: 1,
            sm_sl: 0,
            subnet_prefix: Gid::DEFAULT_SUBNET_PREFIX,
            state,
            mtu: Mtu::Mtu2048,
            rate: Rate::Gbps40,
            pkeys: vec![PKey::DEFAULT],
        };
        r.sma_mut()
            .configure(Instant::ZERO, Config::Port(config), &mut tx);
        (r, tx)
    }

    // IBA 1 §7.2: a port in Init or Armed transmits subnet management packets only. A host whose
    // view of its port lags the SM's (the PortConfig on its way) has its data packet dropped at
    // the slot and counted, as the emulated HCA counts `TxPortNotActive`; an Active port passes it.
    #[test]
    fn a_data_packet_from_a_host_whose_port_is_not_active_is_dropped_and_counted() {
        let packet = ud_packet(5, 9, 64, PKey::DEFAULT);
        for state in [PortState::Down, PortState::Init, PortState::Armed] {
            let (mut r, mut tx) = slot_in(state);
            assert!(!r.from_network(&packet, &mut tx), "{state:?}");
            assert!(tx.is_empty(), "{state:?}");
            let c = r.counters();
            assert_eq!((c.port_not_active, c.from_host), (1, 0), "{state:?}");
            assert_eq!(c.dropped_from_host(), 1, "{state:?}");
        }
        let (mut r, mut tx) = slot_in(PortState::Active);
        assert!(r.from_network(&packet, &mut tx));
        assert_eq!(tx.len(), 1);
        let c = r.counters();
        assert_eq!((c.port_not_active, c.from_host), (0, 1));
    }

    // IBA 1 §14.2.5.6, §5.6.2.1: the slot's link going down (its port or the switch's end
    // Disabled) and training again reaches the host as PortConfigs Down, then Init; what the host
    // sends meanwhile, its port Active as far as it knows, is dropped and counted as `link_down`.
    #[test]
    fn the_links_going_down_and_up_is_told_the_host_and_its_packets_are_dropped() {
        let (mut r, mut tx) = slot_in(PortState::Active);
        r.queue.clear();
        r.link_state(Instant::ZERO, 1, false, &mut tx);
        match r.poll_to_host() {
            Some(ToHost::Config(c)) => assert_eq!((c.port, c.state), (1, PortState::Down)),
            x => panic!("a PortConfig Down: {x:?}"),
        }
        let packet = ud_packet(5, 9, 64, PKey::DEFAULT);
        assert!(!r.from_network(&packet, &mut tx));
        assert!(tx.is_empty());
        let c = r.counters();
        assert_eq!((c.link_down, c.port_not_active, c.from_host), (1, 0, 0));
        assert_eq!(c.dropped_from_host(), 1);
        r.link_state(Instant::ZERO, 1, true, &mut tx);
        match r.poll_to_host() {
            Some(ToHost::Config(c)) => assert_eq!((c.lid, c.state), (5, PortState::Init)),
            x => panic!("a PortConfig Init: {x:?}"),
        }
        // No host attached: nothing is queued.
        r.detach();
        r.link_state(Instant::ZERO, 1, false, &mut tx);
        assert!(!r.has_to_host());
    }

    // A host's packet is copied into a spent packet's allocation (`Tx::spare`, which the
    // fabric's sent datagrams refill through `FabricServer::recycle`), not a new one.
    #[test]
    fn a_packet_from_the_host_is_copied_into_a_spare_buffer() {
        let packet = ud_packet(5, 9, 64, PKey::DEFAULT);
        let (mut r, mut tx) = slot_in(PortState::Active);
        let spare = vec![0xee; 4200];
        let at = spare.as_ptr();
        tx.recycle(spare);
        assert!(r.from_network(&packet, &mut tx));
        let sent: Vec<(u8, Frame)> = tx.drain_frames().collect();
        assert_eq!(sent.len(), 1);
        assert_eq!(&sent[0].1[..], &packet[..]);
        assert_eq!(sent[0].1.as_ptr(), at, "built in the spare");
        // Its VCRC checked here, for the switch port not to check it again; its ICRC not.
        assert!(sent[0].1.vcrc_good() && !sent[0].1.crcs_good());
    }

    // IBA 1 §7.2: a port in Init receives subnet management packets only, Armed and Active data
    // too. What the switch sends the slot's port in Init is not queued for the host, however
    // the host sees its port; SMPs go to the slot's SMA in every state.
    #[test]
    fn a_data_packet_for_a_port_in_init_is_not_given_to_the_host() {
        let packet = ud_packet(9, 5, 64, PKey::DEFAULT);
        for (state, queued) in [
            (PortState::Down, false),
            (PortState::Init, false),
            (PortState::Armed, true),
            (PortState::Active, true),
        ] {
            let (mut r, mut tx) = slot_in(state);
            r.queue.clear();
            r.receive(Instant::ZERO, 1, packet.clone(), &mut tx);
            let c = r.counters();
            assert_eq!(r.has_to_host(), queued, "{state:?}");
            assert_eq!(c.to_host, u64::from(queued), "{state:?}");
            assert_eq!(c.to_host_not_armed, u64::from(!queued), "{state:?}");
        }
    }

    // IBA 1 §7.2: a good data packet takes a slot's Armed port Active, as it does an HCA's
    // (`Hca::data_received`): the host is given the port's new state before the packet.
    #[test]
    fn a_data_packet_takes_an_armed_port_active_and_the_host_hears_first() {
        let (mut r, mut tx) = slot_in(PortState::Armed);
        r.queue.clear();
        r.receive(
            Instant::ZERO,
            1,
            ud_packet(9, 5, 64, PKey::DEFAULT),
            &mut tx,
        );
        assert_eq!(r.sma().port(1).unwrap().state, PortState::Active);
        match r.poll_to_host() {
            Some(ToHost::Config(c)) => assert_eq!(c.state, PortState::Active),
            _ => panic!("the port's new state first"),
        }
        assert!(matches!(r.poll_to_host(), Some(ToHost::Packet(_))));
        assert_eq!(r.counters().to_host, 1);
    }

    // IBA 1 §7.11.1: a data packet for another LID (a wrong LFT's) fails the DLID check and
    // leaves an Armed port Armed, as at an HCA.
    #[test]
    fn a_data_packet_for_another_lid_leaves_an_armed_port_armed() {
        let (mut r, mut tx) = slot_in(PortState::Armed);
        r.queue.clear();
        r.receive(
            Instant::ZERO,
            1,
            ud_packet(9, 6, 64, PKey::DEFAULT),
            &mut tx,
        );
        assert_eq!(r.sma().port(1).unwrap().state, PortState::Armed);
    }

    // IBA 1 §16.1.3.5: a packet received malformed (LVer not 0, a data VL the port does not
    // operate, a payload over its MTUCap, IBA 1 §7.7) or with a bad VCRC
    // counts in the receiving port's PortRcvErrors whatever the port's state; the emulated HCA
    // checks the link layer before the port state (`crate::hw::hca` `rx`). Such a packet for a
    // slot's port in Init goes to the host, whose HCA discards and counts it, as an HCA in the
    // fabric would; only a good data packet is dropped at the slot for the port's state.
    #[test]
    fn a_bad_packet_for_a_port_in_init_still_counts_in_port_rcv_errors() {
        let good = ud_packet(9, 5, 64, PKey::DEFAULT);
        let mut lver = good.clone();
        lver[0] |= 1;
        ipoib_wire::packet::fill_crcs(&mut lver).unwrap();
        let mut bad_vcrc = good.clone();
        let n = bad_vcrc.len();
        bad_vcrc[n - 1] ^= 1;
        // VL 2: a data VL the port does not operate (`crate::hw::sma::rcv_malformed`).
        let mut vl2 = good.clone();
        vl2[0] = 0x20 | (vl2[0] & 0x0f);
        ipoib_wire::packet::fill_crcs(&mut vl2).unwrap();
        // A payload over the port's MTUCap (4096 bytes).
        let big = ud_packet(9, 5, 4100, PKey::DEFAULT);
        let (mut r, mut tx) = slot_in(PortState::Init);
        r.queue.clear();
        for p in [good, lver, bad_vcrc, vl2, big] {
            r.receive(Instant::ZERO, 1, p, &mut tx);
        }
        let c = r.counters();
        assert_eq!((c.to_host, c.to_host_not_armed), (4, 1), "{c:?}");
        // The host's HCA, its port in Init as the slot's: each is a receive error.
        let (mut host, mut htx) = slot_in(PortState::Init);
        while let Some(ToHost::Packet(p)) = r.poll_to_host() {
            host.sma_mut().receive(Instant::ZERO, 1, p, &mut htx);
        }
        assert_eq!(host.sma().port(1).unwrap().traffic.rcv_errors, 4);
    }
}

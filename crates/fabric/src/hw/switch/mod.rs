//! An InfiniBand switch: ports 1..=N on the fabric plus management port 0 with its own LID, a
//! linear forwarding table (LFT) and a multicast forwarding table (MFT), both written by the subnet
//! manager through [`Device::configure`] ([`Config::Lft`], [`Config::Mft`]; they stand in for the
//! LinearForwardingTable and MulticastForwardingTable attributes of IBA 1 §14.2.5).
//!
//! Forwarding (IBA 1 §18.2.4): the output port comes from the LRH DLID only. Unicast DLIDs index
//! the LFT; an entry of 255 means "drop". Multicast DLIDs (0xC000..=0xFFFE, IBA 1 §4.1) select an
//! MFT entry, and the packet is replicated to every port of the entry except the one it arrived
//! on (IBA 1 §18.2.4.3). A packet for the switch's own LID goes to management port 0: SMPs and
//! GMPs to its agents (module `sma`: the SMA of IBA 1 chapter 14, which also forwards
//! directed-route SMPs port to port; module `gsi`: the PMA of §16.1, and status 0x000C for a Get
//! or Set of another class), anything else is counted and consumed.
//! The tables the SMA's SubnSet writes are those [`Config`] writes.
//!
//! Checks, in order, each failure dropping the packet with a counted [`SwitchDropReason`]:
//! 1. the LRH is readable, its LVer 0 and its PktLen the buffer's (IBA 1 §7.7) — `Malformed`;
//!    so, after check 2, is a packet on a data VL the port does not operate or whose payload
//!    exceeds its MTUCap, the largest it receives (`crate::hw::sma::rcv_malformed`);
//! 2. the VCRC is good (IBA 1 §7.8.2: the VCRC is checked hop by hop) — `VcrcBad`; not computed
//!    for a packet whose CRCs the emulation computed and nobody changed since
//!    ([`crate::hw::frame`]). The ICRC is end to end (IBA 1 §7.8.1) and switches do not check it.
//!    This switch keeps the VL as it is, so the packet leaves byte for byte as it came (with its
//!    mark) and no CRC is recomputed;
//! 3. a data packet (any VL but VL15) arrived at a port in Armed or Active: a port in Init
//!    receives subnet management packets only (IBA 1 §7.2) — `InPortNotArmed`. Not counted in
//!    the port's PortRcvErrors, whose causes (IBA 1 §16.1.3.5: physical errors, malformed
//!    packets, buffer overrun) do not include the port's state; PortRcvPkts counts it;
//!    then, when partition enforcement is on (off by default, as on most deployed fabrics), the
//!    BTH P_Key matches the arrival port's P_Key table (IBA 1 §10.9; QP0 traffic and packets for
//!    the switch's own agents are exempt) — `Partition`, counted in the arrival port's
//!    PortRcvConstraintErrors (IBA 1 §16.1.3.5: PartitionEnforcementInbound);
//! 4. the DLID has a route (`UnknownLid`, `LftDrop`, `NoMftEntry`), and a unicast route does not
//!    lead back out of the arrival port (`Looping`); a multicast packet whose MFT entry holds no
//!    port but its arrival port has no copy to send (`McastArrivalOnly`, IBA 1 §18.2.4.3: the
//!    arrival port is left out of the copies), which is no error;
//! 5. per output port: the port is up (`PortDown`), a data packet's port is Active (IBA 1 §7.2:
//!    Init and Armed transmit VL15 only) — `PortNotActive`, the payload fits the port's MTU (`Mtu`:
//!    IBA 1 §7.7 and PortInfo:NeighborMTU, §14.2.5.6 — MTU is the largest payload, headers
//!    excluded), and, when partition enforcement is on, the BTH P_Key matches the output port's
//!    P_Key table — `Partition`, counted in the output port's PortXmitConstraintErrors (IBA 1
//!    §16.1.3.5: PartitionEnforcementOutbound);
//! 6. the packet has not been forwarded by [`SWITCH_HOP_LIMIT`](crate::hw::frame::SWITCH_HOP_LIMIT) switches already — `Lifetime`:
//!    the simulator's form of the switch lifetime limit (IBA 1 §18.2.5.4), which ends a packet
//!    going round a forwarding loop (two masters' conflicting tables, docs/OPENSM-NOTES.md); the
//!    count is kept beside the bytes ([`crate::hw::frame`]), no byte of the packet changes.
//!
//! 7. once sent, the output port's buffer has room: each port holds at most
//!    [`SWITCH_PORT_BUFFER`] bytes queued for its link, and the simulator discards a packet that
//!    finds it full (`crate::hw::link`, [`Device::port_buffer`]) — `BufferFull`. Real switches
//!    do not drop there: credit flow control holds the packet in the previous hop, and a packet
//!    stuck too long is discarded by the switch lifetime limit or the head-of-queue lifetime
//!    (IBA 1 §18.2.5.4, SwitchInfo LifeTimeValue, PortInfo HOQLife). The simulator models no
//!    credits; the bound stands in for both, so that a multicast loop whose copies multiply at
//!    each switch (which the hop limit alone does not end) keeps bounded queues. No test of
//!    this crate and no run of `ipoib sim` or `ipoib demo` that was compared fills one (their
//!    captures are the same with and without it); traffic from several ports converging on one
//!    faster than it drains, for long enough, would, where hardware would slow the senders.
//!
//! A packet dropped at its output port (`PortDown`, `PortNotActive`, `Mtu`, `Lifetime`,
//! `BufferFull`) also counts in that port's PortXmitDiscards (IBA 1 §16.1.3.5: outbound packets
//! discarded because the port is down or congested, the output port not in the Active state, the
//! neighbor MTU exceeded, the switch lifetime limit exceeded). The switch's own packets follow
//! the same port rule: an SMA answer or trap (VL15) leaves a port in Init or Armed, a PMA answer
//! (QP1) only an Active one.
//!
//! Management port 0 is a base switch port 0 (SwitchInfo:EnhancedPort0 0): an internal port
//! with no link of its own, whose PortState the SM writes and the SMA reports but which gates no
//! packet. IBA 1 §7.2's states are those of a port's link, and a packet for the switch's agents
//! (an SMP, or a PMA GMP, a data packet) crosses a link only at the external port it enters by
//! (check 3) and the one its answer leaves by (`send_from_management`), which the rule gates.
//! OpenSM does not use port 0's PortState and leaves it in Init; infiniband-diags treats it as
//! always active (docs/DEPLOYED.md "OpenSM"): gating on it would make every switch's PMA silent
//! under OpenSM, where a real switch answers `perfquery`.
//!
//! A packet dropped at its arrival port as malformed or for a bad CRC (checks 1 and 2, and
//! `Malformed` for transport headers too short for the payload length check 5 needs) also counts
//! in that port's PortRcvErrors (IBA 1 §16.1.3.5: local physical errors, the VCRC among them, and
//! malformed data packets, a length that does not match among them), and so does a management
//! packet for the switch whose ICRC is bad (`SmpDiscarded`, module `sma`), in port 0's: the end
//! port that checks the ICRC (IBA 1 §7.8.1). No other drop counts there: the port's state and
//! a partition are not among PortRcvErrors' causes, and nothing here overruns a receive buffer.
//!
//! A packet the relay cannot forward (check 4: `UnknownLid`, `LftDrop`, `NoMftEntry`,
//! `Looping`) counts in its arrival port's PortRcvSwitchRelayErrors (IBA 1 §16.1.3.5: packets
//! received that could not be forwarded by the switch relay, for DLID mapping, VL mapping or
//! looping, the output port the input port), not in any PortXmitDiscards: no output port was
//! chosen. This switch keeps each packet's VL (no SL-to-VL mapping is applied), so no packet
//! fails a VL mapping. A multicast packet with no port to go to but its arrival port
//! (`McastArrivalOnly`) is not an error and counts in no port counter.
//!
//! Invariants: bad bytes never panic; the switch adds no delay of its own (latency comes from the
//! links); forwarding is deterministic (MFT ports in ascending order).

use crate::hw::mgmt::{Config, PortState};
use crate::hw::sim::{Device, Frame, Tx};
use crate::hw::sma::PortTraffic;
use ipoib_proto::time::Instant;
use ipoib_wire::crc;
use ipoib_wire::ib::lid::{check_pkt_len, is_multicast_lid, is_unicast_lid};
use ipoib_wire::ib::{Bth, BthRepr, ExtHeaderSet, GrhRepr, Lnh, LrhRepr, ICRC_LEN, VCRC_LEN};
use ipoib_wire::mad::MAD_LEN;
use ipoib_wire::{Guid, Mtu, PKey, Rate};
use std::any::Any;
use std::collections::BTreeMap;

/// The LFT value that means "drop" (IBA 1 §14.2.5, LinearForwardingTable).
pub const LFT_DROP: u8 = 255;

/// Bytes each switch port may hold queued for its link (1 MiB: 262 µs at 32 Gb/s); see the
/// module docs, check 7.
pub const SWITCH_PORT_BUFFER: usize = 1 << 20;

/// Why a switch dropped a packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SwitchDropReason {
    /// LRH unreadable, LVer not 0, PktLen disagrees with the buffer, transport headers too
    /// short for the payload length, a data VL the arrival port does not operate, or a payload
    /// over its MTUCap.
    Malformed,
    /// VCRC mismatch.
    VcrcBad,
    /// DLID beyond the LFT, DLID 0 or the permissive LID.
    UnknownLid,
    /// The LFT entry is 255, or names a port the switch does not have.
    LftDrop,
    /// Multicast DLID with no (or an empty) MFT entry.
    NoMftEntry,
    /// A unicast DLID whose LFT port is the arrival port (IBA 1 §16.1.3.5
    /// PortRcvSwitchRelayErrors: looping, the output port the input port).
    Looping,
    /// A multicast DLID whose MFT entry holds no port but the arrival port (and port 0): no copy
    /// to send (IBA 1 §18.2.4.3), not an error.
    McastArrivalOnly,
    /// Payload larger than the output port's MTU.
    Mtu,
    /// The output port's link is down.
    PortDown,
    /// P_Key not in the input or output port's P_Key table (enforcement on only): counted in
    /// the input port's PortRcvConstraintErrors or the output port's PortXmitConstraintErrors.
    Partition,
    /// An SMP the management agent did not answer or forward: a directed-route hop rule
    /// broken, an M_Key violation, a method or MAD the agent does not take (IBA 1 §14.2.2,
    /// §14.2.4); or a management packet for the switch (an SMP, a GMP to its PMA) whose ICRC is
    /// bad (IBA 1 §7.8.1), or an SMP off VL15 or a GMP on it (§13.5.3.1).
    SmpDiscarded,
    /// Already forwarded by [`SWITCH_HOP_LIMIT`](crate::hw::frame::SWITCH_HOP_LIMIT) switches: a forwarding loop (the switch
    /// lifetime limit, IBA 1 §18.2.5.4; see the module docs).
    Lifetime,
    /// The output port's buffer was full ([`SWITCH_PORT_BUFFER`]): the simulator's stand-in for
    /// credit back-pressure and the lifetime discards of packets it holds (see the module docs).
    BufferFull,
    /// A data packet (not VL15) for an output port whose state is not Active (IBA 1 §7.2,
    /// §16.1.3.5).
    PortNotActive,
    /// A data packet (not VL15) that arrived at a port in Init (or Down): such a port receives
    /// subnet management packets only (IBA 1 §7.2).
    InPortNotArmed,
}

impl SwitchDropReason {
    /// Every reason, in counter order.
    pub const ALL: [SwitchDropReason; 15] = [
        SwitchDropReason::Malformed,
        SwitchDropReason::VcrcBad,
        SwitchDropReason::UnknownLid,
        SwitchDropReason::LftDrop,
        SwitchDropReason::NoMftEntry,
        SwitchDropReason::Looping,
        SwitchDropReason::McastArrivalOnly,
        SwitchDropReason::Mtu,
        SwitchDropReason::PortDown,
        SwitchDropReason::Partition,
        SwitchDropReason::SmpDiscarded,
        SwitchDropReason::Lifetime,
        SwitchDropReason::BufferFull,
        SwitchDropReason::PortNotActive,
        SwitchDropReason::InPortNotArmed,
    ];
}

/// Counters of one switch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SwitchStats {
    /// Packets received on any port.
    pub received: u64,
    /// Packets sent out (a multicast packet counts once per copy), with those the output
    /// port's full buffer then discarded (`BufferFull`).
    pub forwarded: u64,
    /// Packets addressed to the switch's own LID (consumed by management port 0).
    pub to_management: u64,
    /// SMPs the management agent answered.
    pub smp_answered: u64,
    /// Directed-route SMPs sent on port to port.
    pub smp_forwarded: u64,
    /// Traps sent to the SM.
    pub traps_sent: u64,
    /// Drops, indexed like [`SwitchDropReason::ALL`].
    pub drops: [u64; SwitchDropReason::ALL.len()],
}

impl SwitchStats {
    /// Drops for one reason.
    pub fn dropped(&self, r: SwitchDropReason) -> u64 {
        self.drops[r as usize]
    }
    /// All drops.
    pub fn dropped_total(&self) -> u64 {
        self.drops.iter().sum()
    }
}

/// What the switch knows about one of its ports.
#[derive(Debug, Clone, PartialEq, Eq)]
struct SwPort {
    /// MTU (a defined code: `configure` refuses a write with an undefined one).
    mtu: Mtu,
    /// The largest MTU the port runs (PortInfo:MTUCap; [`Switch::set_port_mtu_cap`]).
    mtu_cap: Mtu,
    /// Link up (from [`Device::link_state`]).
    up: bool,
    /// A SubnSet(PortInfo) PortPhysicalState Disabled switched the port off; Polling switches it
    /// on again (IBA 1 §14.2.5.6).
    disabled: bool,
    /// State the SM wrote.
    state: PortState,
    /// P_Key table (partition enforcement).
    pkeys: Vec<PKey>,
    /// Packets and data through the port (what its PMA reports).
    traffic: PortTraffic,
    /// The rate its link trained to (PortInfo LinkWidthActive and LinkSpeedActive, IBA 1
    /// §14.2.5.6): its cable's, once the subnet set it ([`Switch::set_port_rate`]).
    rate: Rate,
}

/// An InfiniBand switch. See the module docs.
#[derive(Debug, Clone)]
pub struct Switch {
    guid: Guid,
    name: String,
    lid: u16,
    sm_lid: u16,
    /// Ports 0..=N (index 0 is management port 0).
    ports: Vec<SwPort>,
    /// The LFT entries written, by DLID; those above `lft_top` are kept but not used.
    lft: Vec<u8>,
    /// SwitchInfo:LinearFDBTop (IBA 1 §14.2.5.4): unicast DLIDs above it are discarded. Only a
    /// SubnSet(SwitchInfo) or a configuration write of the whole table moves it; an LFT block
    /// written above it does not (§14.2.5.10).
    lft_top: u16,
    mft: BTreeMap<u16, Vec<u8>>,
    enforce_partitions: bool,
    stats: SwitchStats,
    mgmt: sma::SwitchMgmt,
    /// The buffer of the last SMP the agent took and did not answer in place (one it dropped,
    /// a TrapRepress), for its next answer built apart (`sma_answer`): only its allocation is
    /// reused, every byte is written again.
    spare: Option<Vec<u8>>,
}

impl Switch {
    /// A switch with ports 1..=`nports` (plus port 0), all up, MTU 4096, 4x QDR (40 Gb/s),
    /// tables empty.
    pub fn new(guid: Guid, nports: u8, name: impl Into<String>) -> Switch {
        let port = SwPort {
            mtu: Mtu::Mtu4096,
            mtu_cap: crate::hw::sma::MTU_CAP,
            up: true,
            disabled: false,
            state: PortState::Down,
            pkeys: vec![PKey::DEFAULT],
            traffic: PortTraffic::default(),
            rate: Rate::Gbps40,
        };
        Switch {
            guid,
            name: name.into(),
            lid: 0,
            sm_lid: 0,
            ports: vec![port; usize::from(nports) + 1],
            lft: Vec::new(),
            lft_top: 0,
            mft: BTreeMap::new(),
            enforce_partitions: false,
            stats: SwitchStats::default(),
            mgmt: sma::SwitchMgmt::default(),
            spare: None,
        }
    }

    /// Turns switch partition enforcement on or off (IBA 1 §10.9; off by default).
    pub fn set_partition_enforcement(&mut self, on: bool) {
        self.enforce_partitions = on;
    }

    /// Node GUID.
    pub fn guid(&self) -> Guid {
        self.guid
    }
    /// Name (node description).
    pub fn name(&self) -> &str {
        &self.name
    }
    /// LID of management port 0 (0 until the SM set it).
    pub fn lid(&self) -> u16 {
        self.lid
    }
    /// LID of the master SM, as written by the SM.
    pub fn sm_lid(&self) -> u16 {
        self.sm_lid
    }
    /// Number of external ports.
    pub fn nports(&self) -> u8 {
        (self.ports.len() - 1) as u8
    }
    /// The linear forwarding table in use (index = DLID): the entries up to LinearFDBTop.
    pub fn lft(&self) -> &[u8] {
        &self.lft[..self.lft.len().min(usize::from(self.lft_top) + 1)]
    }

    /// The LFT's entry for `dlid`: `None` above LinearFDBTop or past the entries written.
    fn lft_entry(&self, dlid: u16) -> Option<u8> {
        self.lft().get(usize::from(dlid)).copied()
    }
    /// The MFT entry of `mlid` (ports in ascending order), if any.
    pub fn mft(&self, mlid: u16) -> Option<&[u8]> {
        self.mft.get(&mlid).map(|v| v.as_slice())
    }
    /// MTU of a port.
    pub fn port_mtu(&self, port: u8) -> Option<Mtu> {
        self.ports.get(usize::from(port)).map(|p| p.mtu)
    }
    /// P_Key table of a port (partition enforcement, IBA 1 §10.9.3).
    pub fn port_pkeys(&self, port: u8) -> Option<&[ipoib_wire::PKey]> {
        self.ports
            .get(usize::from(port))
            .map(|p| p.pkeys.as_slice())
    }
    /// The SLtoVLMappingTable from port `input` to port `output` (IBA 1 §14.2.5.8), as a
    /// SubnGet reads it: all zero until an SM writes it.
    pub fn sl_to_vl(&self, input: u8, output: u8) -> ipoib_wire::smp::SlToVlTableRepr {
        let t = self.mgmt.sl2vl.get(&(input, output));
        t.copied().unwrap_or_default()
    }
    /// Block `block` (1-4) of port `port`'s VLArbitrationTable (IBA 1 §14.2.5.9), as
    /// [`Switch::sl_to_vl`].
    pub fn vl_arbitration(&self, port: u8, block: u8) -> ipoib_wire::smp::VlArbTableRepr {
        let t = self.mgmt.vlarb.get(&(port, block));
        t.copied().unwrap_or_default()
    }
    /// State the SM wrote into a port.
    pub fn port_state(&self, port: u8) -> Option<PortState> {
        self.ports.get(usize::from(port)).map(|p| p.state)
    }
    /// Whether a port's link is up (PortInfo:PortPhysicalState LinkUp; Polling when not).
    pub fn port_link_up(&self, port: u8) -> Option<bool> {
        self.ports.get(usize::from(port)).map(|p| p.up)
    }
    /// The rate port `port`'s link trained to.
    pub fn port_rate(&self, port: u8) -> Option<Rate> {
        self.ports.get(usize::from(port)).map(|p| p.rate)
    }
    /// Sets the rate port `port`'s link trains to (its cable's; what its PortInfo reports as
    /// active width and speed). False for a port the switch does not have.
    pub fn set_port_rate(&mut self, port: u8, rate: Rate) -> bool {
        match self.ports.get_mut(usize::from(port)) {
            Some(p) => {
                p.rate = rate;
                true
            }
            None => false,
        }
    }
    /// Sets port `port`'s MTUCap (its cable's MTU; what its PortInfo reports, and the largest
    /// NeighborMTU a SubnSet may write). False for a port the switch does not have or an
    /// undefined MTU code.
    pub fn set_port_mtu_cap(&mut self, port: u8, mtu: Mtu) -> bool {
        match self.ports.get_mut(usize::from(port)) {
            Some(p) if mtu.is_valid() => {
                p.mtu_cap = mtu;
                true
            }
            _ => false,
        }
    }
    /// Counters.
    pub fn stats(&self) -> SwitchStats {
        self.stats
    }

    fn drop(&mut self, r: SwitchDropReason) {
        self.stats.drops[r as usize] += 1;
    }

    /// A drop at output port `out`, counted in its PortXmitDiscards too (see the module docs).
    fn xmit_discard(&mut self, out: u8, r: SwitchDropReason) {
        self.drop(r);
        if let Some(p) = self.ports.get_mut(usize::from(out)) {
            p.traffic.xmit_discards += 1;
        }
    }

    /// A packet received on `port` discarded as malformed or for a bad CRC, counted in the
    /// port's PortRcvErrors too (see the module docs).
    fn rcv_error(&mut self, port: u8, r: SwitchDropReason) {
        self.drop(r);
        if let Some(p) = self.ports.get_mut(usize::from(port)) {
            p.traffic.rcv_errors += 1;
        }
    }

    /// A packet received on `port` that the relay could not forward, counted in the port's
    /// PortRcvSwitchRelayErrors too (see the module docs).
    fn relay_error(&mut self, port: u8, r: SwitchDropReason) {
        self.drop(r);
        if let Some(p) = self.ports.get_mut(usize::from(port)) {
            p.traffic.rcv_switch_relay_errors += 1;
        }
    }

    /// Payload length (after the transport headers, without pad and ICRC) of a packet whose LRH
    /// and length were checked; `None` when the headers do not fit (IBA 1 §9.2).
    fn payload_len(lrh: &LrhRepr, data: &[u8]) -> Option<usize> {
        let body_end = data.len().checked_sub(VCRC_LEN)?;
        if !lrh.lnh.is_iba() {
            return body_end.checked_sub(LrhRepr::LEN);
        }
        let mut off = LrhRepr::LEN;
        if lrh.lnh == Lnh::IbaGlobal {
            off += GrhRepr::LEN;
        }
        let bth = BthRepr::parse_bytes(data.get(off..body_end)?).ok()?;
        off += BthRepr::LEN;
        off += bth.opcode.ext_headers().unwrap_or(ExtHeaderSet::NONE).len();
        body_end
            .checked_sub(ICRC_LEN)?
            .checked_sub(off)?
            .checked_sub(usize::from(bth.pad_count))
    }

    /// BTH P_Key and destination QP of an IBA packet (`None` for raw packets).
    fn pkey_and_qp(lrh: &LrhRepr, data: &[u8]) -> Option<(PKey, u32)> {
        if !lrh.lnh.is_iba() {
            return None;
        }
        let off = LrhRepr::LEN
            + if lrh.lnh == Lnh::IbaGlobal {
                GrhRepr::LEN
            } else {
                0
            };
        let bth = BthRepr::parse_bytes(data.get(off..)?).ok()?;
        Some((bth.pkey, bth.dest_qp))
    }

    fn pkey_ok(&self, port: u8, pkey: PKey) -> bool {
        self.ports
            .get(usize::from(port))
            .is_some_and(|p| p.pkeys.iter().any(|&k| k.matches(pkey)))
    }

    /// Checks one output port and sends the copy there, or counts why not.
    fn emit(
        &mut self,
        out: u8,
        payload: usize,
        pkey: Option<PKey>,
        mut packet: Frame,
        tx: &mut Tx,
    ) {
        let Some(p) = self.ports.get(usize::from(out)) else {
            self.drop(SwitchDropReason::LftDrop);
            return;
        };
        if !p.up {
            self.xmit_discard(out, SwitchDropReason::PortDown);
            return;
        }
        if !is_vl15(&packet) && !p.state.transmits_data() {
            self.xmit_discard(out, SwitchDropReason::PortNotActive);
            return;
        }
        // Always a defined code: `configure` refuses an undefined one.
        let fits = p.mtu.bytes().is_some_and(|m| payload <= m as usize);
        if !fits {
            self.xmit_discard(out, SwitchDropReason::Mtu);
            return;
        }
        if let Some(k) = pkey {
            if !self.pkey_ok(out, k) {
                self.drop(SwitchDropReason::Partition);
                if let Some(p) = self.ports.get_mut(usize::from(out)) {
                    p.traffic.xmit_constraint_errors += 1;
                }
                return;
            }
        }
        if !packet.count_switch_hop() {
            self.xmit_discard(out, SwitchDropReason::Lifetime);
            return;
        }
        self.stats.forwarded += 1;
        if let Some(p) = self.ports.get_mut(usize::from(out)) {
            p.traffic.count_xmit(&packet);
        }
        tx.send_frame(out, packet);
    }
}

/// Whether `packet` travels on VL15 (LRH VL, the high nibble of its first byte, IBA 1 §7.7):
/// subnet management packets, which ports in Init and Armed send and receive too (IBA 1 §7.2).
fn is_vl15(packet: &[u8]) -> bool {
    packet.first().is_some_and(|b| b >> 4 == 15)
}

/// What the switch reads of a packet's headers, from one reading of a packet whose CRCs are
/// known good ([`Frame`]): the same values `Switch::payload_len`, `Switch::pkey_and_qp` and the
/// management agents' `mad_offset` read one by one, which a packet from outside, or one this
/// reading refuses (a GRH `Switch::payload_len` passes over, say), still takes.
#[derive(Debug, Clone, Copy)]
struct Headers {
    /// `Switch::payload_len`.
    payload: usize,
    /// `Switch::pkey_and_qp`.
    bth: Option<(PKey, u32)>,
    /// Where a MAD of 256 bytes starts, when the packet carries one after a BTH.
    mad: Option<usize>,
}

impl Headers {
    /// The headers of `packet`, whose LRH is `lrh` and whose length matches its PktLen (checked
    /// by `Switch::receive_frame`); `None` exactly when `Packet::parse_crcs_known_good` refuses
    /// the packet: its checks, in its order, without building the parsed packet (its extended
    /// headers are only measured: their parsers check nothing but their length).
    fn of(lrh: &LrhRepr, packet: &[u8]) -> Option<Headers> {
        let body_end = packet.len().checked_sub(VCRC_LEN)?;
        if !lrh.lnh.is_iba() {
            return Some(Headers {
                payload: body_end.checked_sub(LrhRepr::LEN)?,
                bth: None,
                mad: None,
            });
        }
        let mut off = LrhRepr::LEN;
        if lrh.lnh == Lnh::IbaGlobal {
            let grh = GrhRepr::parse_bytes(packet.get(off..body_end)?).ok()?;
            off += GrhRepr::LEN;
            if grh.nxthdr != GrhRepr::NXT_HDR_IBA || usize::from(grh.paylen) != body_end - off {
                return None;
            }
        }
        // The four fields read where they are (a view), not the whole BTH decoded:
        // `BthRepr::parse` checks nothing but the length either.
        let bth = Bth::new_checked(packet.get(off..body_end)?).ok()?;
        off += BthRepr::LEN;
        let icrc_off = body_end.checked_sub(ICRC_LEN).filter(|&i| i >= off)?;
        off += bth
            .opcode()
            .ext_headers()
            .unwrap_or(ExtHeaderSet::NONE)
            .len();
        let payload = icrc_off
            .checked_sub(off)?
            .checked_sub(usize::from(bth.pad_count()))?;
        Some(Headers {
            payload,
            bth: Some((PKey(bth.pkey()), bth.dest_qp())),
            // The payload starts right after the extended headers.
            mad: (payload == MAD_LEN).then_some(off),
        })
    }
}

impl Device for Switch {
    fn receive(&mut self, now: Instant, port: u8, packet: Vec<u8>, tx: &mut Tx) {
        self.receive_frame(now, port, Frame::new(packet), tx);
    }

    fn receive_frame(&mut self, now: Instant, port: u8, packet: Frame, tx: &mut Tx) {
        self.stats.received += 1;
        if let Some(p) = self.ports.get_mut(usize::from(port)) {
            p.traffic.count_rcv(&packet);
        }
        let Ok(lrh) = LrhRepr::parse_bytes(&packet) else {
            return self.rcv_error(port, SwitchDropReason::Malformed);
        };
        // IBA 1 §7.7: LVer is 0 in this version of the link layer; a packet of another is a
        // malformed data packet (§16.1.3.5 PortRcvErrors).
        if lrh.lver != 0 || check_pkt_len(lrh.pkt_len, packet.len()).is_err() {
            return self.rcv_error(port, SwitchDropReason::Malformed);
        }
        // check_pkt_len guarantees len = 4 * PktLen + 2 >= 2.
        let body_end = packet.len() - VCRC_LEN;
        let vcrc = u16::from_le_bytes([packet[body_end], packet[body_end + 1]]);
        // A UDP fabric slot's packet comes with its VCRC checked (`Frame::vcrc_good`).
        if !packet.vcrc_good() && crc::vcrc(&packet[..body_end]) != vcrc {
            return self.rcv_error(port, SwitchDropReason::VcrcBad);
        }
        let known = if packet.crcs_good() {
            Headers::of(&lrh, &packet)
        } else {
            None
        };
        let payload = match known {
            Some(h) => h.payload,
            None => match Self::payload_len(&lrh, &packet) {
                Some(n) => n,
                None => return self.rcv_error(port, SwitchDropReason::Malformed),
            },
        };
        // A data VL the port does not operate, or a payload over its MTUCap (IBA 1 §7.7).
        let cap = self.ports.get(usize::from(port)).map(|p| p.mtu_cap);
        if cap.is_some_and(|c| crate::hw::sma::rcv_malformed(lrh.vl, payload, c)) {
            return self.rcv_error(port, SwitchDropReason::Malformed);
        }
        // IBA 1 §7.2: a port in Init receives subnet management packets (VL15) only. Not an
        // error PortRcvErrors lists (§16.1.3.5): counted here only (see the module docs).
        let in_ready = self
            .ports
            .get(usize::from(port))
            .is_some_and(|p| p.state.receives_data());
        if lrh.vl != 15 && !in_ready {
            self.drop(SwitchDropReason::InPortNotArmed);
            return;
        }
        // IBA 1 §7.2: an Armed port that receives a data packet goes Active (this port only).
        if lrh.vl != 15 {
            if let Some(p) = self.ports.get_mut(usize::from(port)) {
                p.state = p.state.after_data_received();
            }
        }
        // A data packet read from one parse (a BTH for a QP other than 0 and 1) is no
        // management agent's: what `management` gives back at its first test, without the
        // frame going through it.
        let data = matches!(known.and_then(|h| h.bth), Some((_, qp)) if qp > 1);
        let packet = if data {
            packet
        } else {
            let Some(packet) = self.management(now, port, &lrh, known, packet, tx) else {
                return;
            };
            packet
        };
        let pkey = if self.enforce_partitions {
            match known.map_or_else(|| Self::pkey_and_qp(&lrh, &packet), |h| h.bth) {
                Some((_, 0)) | None => None, // QP0 (SMPs) and raw packets are exempt
                Some((k, _)) => Some(k),
            }
        } else {
            None
        };
        if let Some(k) = pkey {
            if !self.pkey_ok(port, k) {
                self.drop(SwitchDropReason::Partition);
                if let Some(p) = self.ports.get_mut(usize::from(port)) {
                    p.traffic.rcv_constraint_errors += 1;
                }
                return;
            }
        }
        let dlid = lrh.dlid;
        if is_multicast_lid(dlid) {
            // IBA 1 §18.2.4.3: replicate to every MFT port but the arrival port.
            let Some(ports) = self.mft.get(&dlid) else {
                return self.relay_error(port, SwitchDropReason::NoMftEntry);
            };
            let outs: Vec<u8> = ports
                .iter()
                .copied()
                .filter(|&p| p != port && p != 0)
                .collect();
            if outs.is_empty() {
                return self.drop(SwitchDropReason::McastArrivalOnly);
            }
            let n = outs.len();
            let mut packet = Some(packet);
            for (i, out) in outs.into_iter().enumerate() {
                let copy = if i + 1 == n {
                    packet.take().unwrap_or_default()
                } else {
                    packet.clone().unwrap_or_default()
                };
                self.emit(out, payload, pkey, copy, tx);
            }
            return;
        }
        if dlid != 0 && dlid == self.lid {
            self.stats.to_management += 1;
            return;
        }
        // IBA 1 §16.1.3.5 PortRcvSwitchRelayErrors: a DLID the LFT maps to no port, or to the
        // port the packet came in by, is discarded at its arrival port.
        if !is_unicast_lid(dlid) {
            return self.relay_error(port, SwitchDropReason::UnknownLid);
        }
        match self.lft_entry(dlid) {
            None => self.relay_error(port, SwitchDropReason::UnknownLid),
            Some(LFT_DROP) => self.relay_error(port, SwitchDropReason::LftDrop),
            Some(0) => self.stats.to_management += 1,
            Some(out) if out == port => self.relay_error(port, SwitchDropReason::Looping),
            Some(out) if usize::from(out) >= self.ports.len() => {
                self.relay_error(port, SwitchDropReason::LftDrop)
            }
            Some(out) => self.emit(out, payload, pkey, packet, tx),
        }
    }

    fn handle_timeout(&mut self, _now: Instant, _tx: &mut Tx) {}

    fn poll_timeout(&self) -> Option<Instant> {
        None
    }

    fn never_times_out(&self) -> bool {
        true
    }

    fn link_state(&mut self, _now: Instant, port: u8, up: bool, tx: &mut Tx) {
        self.link_changed(port, up, tx);
    }

    fn configure(&mut self, _now: Instant, config: Config, _tx: &mut Tx) {
        self.apply_config(config);
    }

    fn port_buffer(&self) -> Option<usize> {
        Some(SWITCH_PORT_BUFFER)
    }

    fn discarded(&mut self, port: u8, frame: &Frame) {
        self.drop(SwitchDropReason::BufferFull);
        if let Some(p) = self.ports.get_mut(usize::from(port)) {
            p.traffic.uncount_xmit(frame);
        }
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

impl Switch {
    /// Writes `config` (from the SM's `Device::configure` or the SMA's SubnSet: one state, two
    /// ways to write it).
    fn apply_config(&mut self, config: Config) {
        match config {
            // A write with an undefined MTU code is refused whole (no port runs at it).
            Config::Port(pc) if !pc.mtu.is_valid() => {}
            Config::Port(pc) => {
                if pc.port == 0 {
                    self.lid = pc.lid;
                    self.sm_lid = pc.sm_lid;
                    self.mgmt.sm_sl = pc.sm_sl;
                    self.mgmt.gid_prefix = pc.subnet_prefix;
                    self.mgmt.lmc = pc.lmc.min(7);
                }
                if let Some(p) = self.ports.get_mut(usize::from(pc.port)) {
                    p.mtu = pc.mtu;
                    p.state = pc.state;
                    p.pkeys = pc.pkeys;
                }
            }
            Config::Lft(lft) => {
                self.lft_top = lft.len().saturating_sub(1) as u16;
                self.lft = lft;
            }
            Config::Mft { mlid, mut ports } => {
                ports.sort_unstable();
                ports.dedup();
                if ports.is_empty() {
                    self.mft.remove(&mlid);
                } else {
                    self.mft.insert(mlid, ports);
                }
            }
            // An event for a CA's clients (IBA 1 §14.4.11); a switch has none.
            Config::ClientReregister(_) => {}
        }
    }
}

mod gsi;
mod sma;
mod sma_port;

pub use sma::{LINEAR_FDB_CAP, MULTICAST_FDB_CAP, PARTITION_ENFORCEMENT_CAP};

#[cfg(test)]
pub(crate) mod tests;

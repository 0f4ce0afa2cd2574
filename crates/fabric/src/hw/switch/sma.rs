//! The switch's subnet management agent on management port 0 (IBA 1 chapter 14) and its
//! performance management agent (IBA 1 §16.1).
//!
//! - Directed-route SMPs (class 0x81) are taken whatever their LRH DLID: the hop rules of
//!   `crate::hw::sma::dr` send them on port to port (§14.2.2) or hand them to the agent at the
//!   end of their path. LID-routed SMPs (class 0x01) and GMPs on QP1 (module `gsi`: PerfMgt to
//!   the PMA, other classes answered unsupported) are taken when the DLID is the switch's LID (or
//!   its LFT entry is port 0); other SMPs are forwarded like data.
//! - SubnGet/SubnSet of NodeInfo, NodeDescription (Get only), SwitchInfo, GUIDInfo, PortInfo
//!   (AttributeModifier = port 0..=N), P_KeyTable (bits 31-16 port, one block of 32 P_Keys),
//!   SLtoVLMappingTable (bits 15-8 input, 7-0 output port), VLArbitrationTable (bits 31-16 block
//!   1-4, 15-0 port), LinearForwardingTable and MulticastForwardingTable (§14.2.5). SMInfo and
//!   anything else: status 0x000C (§13.4.7; a switch runs no SM). A Set of a value the switch
//!   cannot take: status 0x001C, nothing changed.
//! - M_Key (§14.2.4) is port 0's, for every SMP the switch answers.
//! - Trap 128 (§14.2.5.1): when a port's link goes up or down, SwitchInfo:PortStateChange is set
//!   and, once the SM gave the switch a LID and a MasterSMLID, a Trap(Notice 128) goes to the SM
//!   by the LFT; trap 256 (Bad M_Key) likewise for each SMP that fails the M_Key check. Traps are
//!   sent once (no repeat until TrapRepress).

use super::{Headers, Switch, SwitchDropReason, LFT_DROP};
use crate::hw::mgmt::{Config, PortState};
use crate::hw::sim::{Frame, Tx};
use crate::hw::sma::{self, dr, pma, DrStep, MKeyCheck};
use ipoib_proto::time::Instant;
use ipoib_wire::crc;
use ipoib_wire::ib::lid::{LID_MULTICAST_FIRST, LID_PERMISSIVE};
use ipoib_wire::ib::LrhRepr;
use ipoib_wire::mad::attr::smp as attr;
use ipoib_wire::mad::{
    MadStatus, Method, MgmtClass, NoticeRepr, ProducerType, BASE_VERSION, MAD_LEN,
};
use ipoib_wire::packet::{Packet, UD_LOCAL_PAYLOAD_OFFSET};
use ipoib_wire::smp::{
    GuidInfoRepr, LftBlockRepr, MftBlockRepr, NodeDescriptionRepr, NodeInfoRepr, NodeType,
    PKeyTableRepr, SlToVlTableRepr, SmpAttribute, SmpMad, SmpMadRepr, SwitchInfoRepr,
    VlArbTableRepr, LFT_BLOCK_LIDS, MFT_BLOCK_MLIDS, MFT_POSITION_PORTS, PKEY_TABLE_BLOCK,
};
use ipoib_wire::PKey;
use std::collections::BTreeMap;

/// LIDs the linear forwarding table can hold (SwitchInfo:LinearFDBCap): every unicast LID.
pub const LINEAR_FDB_CAP: u16 = 0xc000;
/// MLIDs the multicast forwarding table can hold (SwitchInfo:MulticastFDBCap, IBA 1 §14.2.5.4):
/// all 16,384 that the table's 512 blocks address, 0xC000-0xFFFF, so that every MLID the SA
/// hands out (0xC000-0xFFFE, `SaServerConfig::max_mlid`) is forwarded. ibsim's switches hold
/// 1,024 (docs/DIAGS.md "MulticastFDBTop"); with that many here the SMA refused the SM's blocks
/// past 0xC3FF and the groups beyond, on more than about 1,000 IPv6 hosts, got no forwarding.
pub const MULTICAST_FDB_CAP: u16 = 0x4000;
/// P_Keys per port (SwitchInfo:PartitionEnforcementCap): one P_KeyTable block.
pub const PARTITION_ENFORCEMENT_CAP: u16 = PKEY_TABLE_BLOCK as u16;

/// The switch's management state beyond what forwarding reads.
#[derive(Debug, Clone, Default)]
pub(super) struct SwitchMgmt {
    pub mkey: sma::MKeyGuard,
    pub sm_sl: u8,
    pub gid_prefix: u64,
    pub lmc: u8,
    pub subnet_timeout: u8,
    pub life_time_value: u8,
    pub port_state_change: bool,
    /// A change set PortStateChange since the last SubnGet(SwitchInfo) answer: a SubnSet writing
    /// 1 then leaves the bit set (`set_switch_info`).
    pub port_state_change_unread: bool,
    /// DefaultPort, DefaultMulticastPrimaryPort, DefaultMulticastNotPrimaryPort.
    pub default_ports: [u8; 3],
    /// SLtoVLMappingTable per (input, output) port.
    pub sl2vl: BTreeMap<(u8, u8), SlToVlTableRepr>,
    /// VLArbitrationTable per (port, block).
    pub vlarb: BTreeMap<(u8, u8), VlArbTableRepr>,
    /// A port a SubnSet(PortInfo) just disabled (false) or enabled (true), for the simulator
    /// once the answer is sent ([`Tx::set_port_enabled`]).
    pub port_request: Option<(u8, bool)>,
    /// The link settings SubnSet(PortInfo) wrote, per port (`sma::port_set`).
    pub links: BTreeMap<u8, sma::port_set::LinkSettings>,
}

/// Where the MAD of a management packet starts, when it carries one of 256 bytes, with its QP
/// and whether its ICRC is good (`Switch::receive` checked the VCRC already; neither is computed
/// when the CRCs are known good, [`Frame`]).
pub(super) fn mad_offset(packet: &Frame) -> Option<(usize, u32, bool)> {
    let p = if packet.crcs_good() {
        Packet::parse_crcs_known_good(packet)
    } else {
        Packet::parse_vcrc_checked(packet)
    }
    .ok()?;
    let bth = p.bth?;
    if p.payload.len() != MAD_LEN {
        return None;
    }
    let off = packet.len() - 6 - usize::from(bth.pad_count) - MAD_LEN;
    Some((off, bth.dest_qp, p.icrc_ok))
}

impl Switch {
    /// Takes the packet if it is for the switch's management agents; otherwise gives it back.
    pub(super) fn management(
        &mut self,
        now: Instant,
        port: u8,
        lrh: &LrhRepr,
        known: Option<Headers>,
        packet: Frame,
        tx: &mut Tx,
    ) -> Option<Frame> {
        let to_me = (self.lid != 0 && lrh.dlid == self.lid) || self.lft_entry(lrh.dlid) == Some(0);
        // Cheap test first: data packets (any other QP, or QP1 not to this switch) pass by
        // without the full parse and ICRC check below.
        let bth = match known {
            Some(h) => h.bth,
            None => Self::pkey_and_qp(lrh, &packet),
        };
        match bth {
            Some((_, 0)) => {}
            Some((_, 1)) if to_me => {}
            _ => return Some(packet),
        }
        // A packet whose headers were read from one parse ([`Headers`]) has its CRCs known
        // good: its ICRC too.
        let mad = match (known, bth) {
            (Some(h), Some((_, qp))) => h.mad.map(|off| (off, qp, true)),
            _ => mad_offset(&packet),
        };
        let Some((off, qp, icrc_ok)) = mad else {
            return Some(packet);
        };
        let class = MgmtClass::from(packet[off + 1]);
        let for_agents = match (qp, class) {
            (0, MgmtClass::SubnDirectedRoute) => true,
            (0, MgmtClass::SubnLid) => to_me,
            // QP1 takes GMPs of every class but the SMPs' (IBA 1 §13.5.3.1).
            (1, MgmtClass::SubnLid | MgmtClass::SubnDirectedRoute) => false,
            (1, _) => to_me,
            _ => false,
        };
        if !for_agents {
            return Some(packet);
        }
        // IBA 1 §7.8.1: the end port checks the ICRC, and management port 0 is the end of the
        // packet's hop (a directed-route SMP is re-sent, not forwarded).
        if !icrc_ok {
            // IBA 1 §16.1.3.5: an ICRC error counts in the checking port's PortRcvErrors.
            self.rcv_error(0, SwitchDropReason::SmpDiscarded);
            return None;
        }
        // The agents take an SMP on VL15 only and a GMP on any VL but 15 (IBA 1 §13.5.3.1, as
        // the HCA's `BadVl`; docs/PERF-COUNTERS.md "Malformed data packets"): no link error.
        if (qp == 0) != (lrh.vl == 15) {
            self.drop(SwitchDropReason::SmpDiscarded);
            return None;
        }
        match (qp, class) {
            (0, MgmtClass::SubnDirectedRoute) => {
                let nports = self.nports();
                let (mut packet, trusted) = packet.into_parts();
                let mad = &mut packet[off..off + MAD_LEN];
                // The bytes before the hop rules change them, for update_crcs (CRCs pending
                // need none).
                let old = if trusted {
                    None
                } else {
                    Some(<[u8; MAD_LEN]>::try_from(&*mad).ok()?)
                };
                match dr::receive(mad, port, true, nports) {
                    // CRCs the emulation computed: they are written when the bytes are next
                    // needed, if ever ([`Frame::with_crcs_pending`]).
                    DrStep::Forward(out) if trusted => {
                        self.stats.smp_forwarded += 1;
                        self.send_from_management(out, Frame::with_crcs_pending(packet), tx);
                    }
                    DrStep::Forward(out) => {
                        // The hop rules changed two bytes of the MAD: the ICRC is computed
                        // again, the VCRC (good on receipt) updated for the changed bytes,
                        // byte for byte what fill_crcs writes, without a pass over the packet.
                        let updated =
                            old.is_some_and(|o| crc::update_crcs(&mut packet, off, &o).is_ok());
                        if updated {
                            self.stats.smp_forwarded += 1;
                            self.send_from_management(out, Frame::with_crcs(packet), tx);
                        }
                    }
                    DrStep::Local => self.sma_answer(now, port, lrh, packet, off, true, tx),
                    // A switch runs no SM; the rest break a hop rule.
                    DrStep::ToRequester | DrStep::Discard(_) => {
                        self.drop(SwitchDropReason::SmpDiscarded)
                    }
                }
                None
            }
            (0, MgmtClass::SubnLid) if to_me => {
                self.sma_answer(now, port, lrh, packet.into_spare(), off, false, tx);
                None
            }
            (1, class) if to_me => {
                self.stats.to_management += 1;
                self.gsi_answer(class, port, lrh, &packet, off, tx);
                None
            }
            _ => Some(packet),
        }
    }

    /// Sends a packet the switch itself makes (or a directed-route SMP it forwards) out of `out`.
    /// Its CRCs were computed by the emulation (or are pending): it carries the mark
    /// ([`Frame`]). A port that is down discards it, counted in its PortXmitDiscards as a
    /// forwarded packet is (module docs of `super`, IBA 1 §16.1.3.5).
    pub(super) fn send_from_management(&mut self, out: u8, packet: Frame, tx: &mut Tx) {
        match self.ports.get_mut(usize::from(out)) {
            // A PMA answer is a data packet (QP1, not VL15): only an Active port sends it.
            Some(p)
                if out != 0 && p.up && !super::is_vl15(&packet) && !p.state.transmits_data() =>
            {
                self.xmit_discard(out, SwitchDropReason::PortNotActive)
            }
            Some(p) if out != 0 && p.up => {
                p.traffic.count_xmit(&packet);
                tx.send_frame(out, packet);
            }
            Some(_) if out != 0 => self.xmit_discard(out, SwitchDropReason::PortDown),
            _ => self.drop(SwitchDropReason::PortDown),
        }
    }

    /// The LFT's port toward `dlid`, or `fallback` when it has none.
    pub(super) fn route_or(&self, dlid: u16, fallback: u8) -> u8 {
        match self.lft_entry(dlid) {
            Some(p) if p != 0 && p != LFT_DROP => p,
            _ => fallback,
        }
    }

    /// Answers the SMP at `off` in `packet` (a directed-route one as the hop rules left it). The
    /// answer is written over the request in its own buffer when the MAD sits where an SMP
    /// packet's does (no GRH: every SMP of this fabric's SMAs and of OpenSM), else built apart
    /// in the spare buffer; the same bytes either way (`SmpMad::respond_in_place`).
    #[allow(clippy::too_many_arguments)]
    fn sma_answer(
        &mut self,
        now: Instant,
        port: u8,
        lrh: &LrhRepr,
        mut packet: Vec<u8>,
        off: usize,
        directed: bool,
        tx: &mut Tx,
    ) {
        let Some((req, hide_key)) = self.sma_request(now, packet.get(off..), tx) else {
            // Nothing to answer: the request's buffer is kept for an answer built apart.
            self.spare = Some(packet);
            return;
        };
        let method = req.header.method;
        let (status, attribute) = match sma::header_status(&req.header) {
            Some(s) => (s, req.attribute),
            None => self.sma_attribute(port, &req, hide_key),
        };
        self.stats.smp_answered += 1;
        // An unsupported method is answered with its own response method (R bit set).
        let method = method
            .response()
            .unwrap_or(Method::from(u8::from(method) | Method::RESPONSE_BIT));
        let (slid, dlid, sl) = if directed {
            (LID_PERMISSIVE, LID_PERMISSIVE, 0)
        } else {
            (self.lid, lrh.slid, lrh.sl)
        };
        let in_place = match packet.get_mut(off..off + MAD_LEN) {
            Some(mad) if off == UD_LOCAL_PAYLOAD_OFFSET => SmpMad::new_unchecked(&mut *mad)
                .respond_in_place(method, status, &attribute)
                .is_ok()
                .then(|| self.answer_port(mad, port, lrh, directed)),
            _ => None,
        };
        let (out, frame) =
            match in_place.map(|out| (out, sma::smp_frame_around(packet, slid, dlid, sl))) {
                Some((out, Ok(frame))) => (out, frame),
                // The request elsewhere in its packet: built apart.
                None | Some((_, Err(_))) => {
                    let mut resp = req.get_response(status, attribute);
                    resp.header.method = method;
                    let mut bytes = resp.to_bytes();
                    let out = self.answer_port(&mut bytes, port, lrh, directed);
                    let spare = self.spare.take().unwrap_or_default();
                    (out, sma::smp_frame_in(spare, slid, dlid, sl, &bytes))
                }
            };
        self.send_from_management(out, frame, tx);
        if let Some((p, enabled)) = self.mgmt.port_request.take() {
            tx.set_port_enabled(p, enabled);
        }
    }

    /// The SMP `mad` if the agent answers it, with whether its M_Key is hidden in the answer;
    /// `None` for one it discards (unparsable, a version or method it does not take, an M_Key
    /// violation, reported by trap 256) or that needs no answer (TrapRepress).
    fn sma_request(
        &mut self,
        now: Instant,
        mad: Option<&[u8]>,
        tx: &mut Tx,
    ) -> Option<(SmpMadRepr, bool)> {
        let Some(Ok(req)) = mad.map(SmpMadRepr::parse) else {
            self.drop(SwitchDropReason::SmpDiscarded);
            return None;
        };
        let method = req.header.method;
        if req.header.base_version != BASE_VERSION
            || !(sma::is_agent_method(method) || sma::is_unsupported_request(method))
        {
            self.drop(SwitchDropReason::SmpDiscarded);
            return None;
        }
        let hide_key = match self.mgmt.mkey.check(now, method, req.mkey) {
            MKeyCheck::Violation => {
                self.drop(SwitchDropReason::SmpDiscarded);
                self.bad_mkey_trap(&req, tx);
                return None;
            }
            MKeyCheck::PassHideKey => true,
            MKeyCheck::Pass => false,
        };
        // Traps are sent once: nothing to stop.
        (method != Method::TrapRepress).then_some((req, hide_key))
    }

    /// The port the answer `mad` to an SMP that came in on `port` leaves by: a directed-route
    /// one's by its return path (the hop rules' response step, which updates `mad`), a
    /// LID-routed one's by the LFT toward the requester's LID.
    fn answer_port(&self, mad: &mut [u8], port: u8, lrh: &LrhRepr, directed: bool) -> u8 {
        if directed {
            dr::respond(mad, port)
        } else {
            self.route_or(lrh.slid, port)
        }
    }

    /// The GetResp's status and attribute for `req` (after a Set, the values now held).
    fn sma_attribute(
        &mut self,
        in_port: u8,
        req: &SmpMadRepr,
        hide_key: bool,
    ) -> (MadStatus, SmpAttribute) {
        let set = req.header.method == Method::Set;
        let m = req.header.attribute_modifier;
        let ok = |a| (MadStatus::SUCCESS, a);
        let invalid = |a| (MadStatus::INVALID_ATTR_VALUE, a);
        // IBA 1 §14.2.5 Table 145: NodeInfo's and NodeDescription's AttributeModifier is 0;
        // another is answered with the attribute and status 0x001C (as the HCA's SMA).
        let node = |a| if m == 0 { ok(a) } else { invalid(a) };
        match (req.header.attribute_id, &req.attribute) {
            (attr::NODE_INFO, _) if !set => node(SmpAttribute::NodeInfo(self.node_info(in_port))),
            (attr::NODE_DESCRIPTION, _) if !set => node(SmpAttribute::NodeDescription(
                NodeDescriptionRepr::new(&self.name),
            )),
            (attr::SWITCH_INFO, a) => {
                if let (true, SmpAttribute::SwitchInfo(w)) = (set, a) {
                    self.set_switch_info(w);
                } else if !set {
                    self.mgmt.port_state_change_unread = false;
                }
                ok(SmpAttribute::SwitchInfo(self.switch_info()))
            }
            (attr::GUID_INFO, _) => {
                // GUIDCap 1: index 0, the port GUID, is read only.
                let mut g = GuidInfoRepr::default();
                g.guids[0] = self.guid;
                if m == 0 {
                    ok(SmpAttribute::GuidInfo(g))
                } else {
                    invalid(SmpAttribute::GuidInfo(GuidInfoRepr::default()))
                }
            }
            (attr::PORT_INFO, a) => {
                let Some(p) = u8::try_from(m)
                    .ok()
                    .filter(|&p| usize::from(p) < self.ports.len())
                else {
                    return invalid(req.attribute);
                };
                let mut status = MadStatus::SUCCESS;
                if let (true, SmpAttribute::PortInfo(w)) = (set, a) {
                    if self.set_port_info(p, w) {
                        self.set_phys_state(p, sma::phys_request(w.port_phys_state));
                    } else {
                        status = MadStatus::INVALID_ATTR_VALUE;
                    }
                }
                (
                    status,
                    SmpAttribute::PortInfo(self.port_info(p, in_port, hide_key)),
                )
            }
            (attr::P_KEY_TABLE, a) => {
                let (p, block) = ((m >> 16) as usize, m & 0xffff);
                let Some(port) = self.ports.get_mut(p).filter(|_| block == 0) else {
                    return invalid(req.attribute);
                };
                if let (true, SmpAttribute::PKeyTable(w)) = (set, a) {
                    port.pkeys = trimmed(&w.pkeys);
                }
                let mut t = PKeyTableRepr::default();
                for (d, s) in t.pkeys.iter_mut().zip(&port.pkeys) {
                    *d = *s;
                }
                ok(SmpAttribute::PKeyTable(t))
            }
            (attr::SL_TO_VL_MAPPING_TABLE, a) => {
                let key = ((m >> 8) as u8, m as u8);
                if m > 0xffff || usize::from(key.0.max(key.1)) >= self.ports.len() {
                    return invalid(req.attribute);
                }
                if let (true, SmpAttribute::SlToVlMappingTable(w)) = (set, a) {
                    self.mgmt.sl2vl.insert(key, *w);
                }
                let t = self.mgmt.sl2vl.get(&key).copied().unwrap_or_default();
                ok(SmpAttribute::SlToVlMappingTable(t))
            }
            (attr::VL_ARBITRATION_TABLE, a) => {
                let (block, p) = ((m >> 16) as u8, m & 0xffff);
                if !(1..=4).contains(&block) || p as usize >= self.ports.len() {
                    return invalid(req.attribute);
                }
                let key = (p as u8, block);
                if let (true, SmpAttribute::VlArbitrationTable(w)) = (set, a) {
                    self.mgmt.vlarb.insert(key, *w);
                }
                let t = self.mgmt.vlarb.get(&key).copied().unwrap_or_default();
                ok(SmpAttribute::VlArbitrationTable(t))
            }
            (attr::LINEAR_FORWARDING_TABLE, a) => {
                let first = m as usize * LFT_BLOCK_LIDS;
                if first >= usize::from(LINEAR_FDB_CAP) {
                    return invalid(req.attribute);
                }
                if let (true, SmpAttribute::LinearForwardingTable(w)) = (set, a) {
                    if self.lft.len() < first + LFT_BLOCK_LIDS {
                        self.lft.resize(first + LFT_BLOCK_LIDS, LFT_DROP);
                    }
                    self.lft[first..first + LFT_BLOCK_LIDS].copy_from_slice(&w.ports);
                }
                let mut b = LftBlockRepr {
                    ports: [LFT_DROP; LFT_BLOCK_LIDS],
                };
                for (d, s) in b.ports.iter_mut().zip(self.lft.iter().skip(first)) {
                    *d = *s;
                }
                ok(SmpAttribute::LinearForwardingTable(b))
            }
            (attr::MULTICAST_FORWARDING_TABLE, a) => {
                let (position, block) = ((m >> 28) as u8, (m & 0x1ff) as usize);
                let first_port = usize::from(position) * MFT_POSITION_PORTS;
                if block * MFT_BLOCK_MLIDS >= usize::from(MULTICAST_FDB_CAP)
                    || first_port >= self.ports.len()
                {
                    return invalid(req.attribute);
                }
                let first_mlid = LID_MULTICAST_FIRST + (block * MFT_BLOCK_MLIDS) as u16;
                if let (true, SmpAttribute::MulticastForwardingTable(w)) = (set, a) {
                    for (i, mask) in w.port_masks.iter().enumerate() {
                        self.set_mft_mask(first_mlid + i as u16, position, *mask);
                    }
                }
                let mut b = MftBlockRepr {
                    port_masks: [0; MFT_BLOCK_MLIDS],
                };
                for (i, mask) in b.port_masks.iter_mut().enumerate() {
                    for &p in self.mft.get(&(first_mlid + i as u16)).into_iter().flatten() {
                        let bit = usize::from(p).wrapping_sub(first_port);
                        if bit < MFT_POSITION_PORTS {
                            *mask |= 1 << bit;
                        }
                    }
                }
                ok(SmpAttribute::MulticastForwardingTable(b))
            }
            _ => (MadStatus::METHOD_ATTR_UNSUPPORTED, req.attribute),
        }
    }

    /// Replaces the ports `16 × position` to `16 × position + 15` of `mlid`'s MFT entry.
    fn set_mft_mask(&mut self, mlid: u16, position: u8, mask: u16) {
        let lo = u16::from(position) * MFT_POSITION_PORTS as u16;
        let mut ports: Vec<u8> = self
            .mft
            .get(&mlid)
            .into_iter()
            .flatten()
            .copied()
            .filter(|&p| !(lo..lo + 16).contains(&u16::from(p)))
            .collect();
        for bit in 0..16u16 {
            if mask & 1 << bit != 0 {
                if let Ok(p) = u8::try_from(lo + bit) {
                    ports.push(p);
                }
            }
        }
        // The same write a Config::Mft makes: sorted, deduplicated, removed when empty.
        self.apply_config(Config::Mft { mlid, ports });
    }

    /// What the SMA answers SubnGet(NodeInfo) entering by `in_port` with (IBA 1 §14.2.5.3).
    pub fn node_info(&self, in_port: u8) -> NodeInfoRepr {
        NodeInfoRepr {
            base_version: BASE_VERSION,
            class_version: 1,
            node_type: NodeType::Switch,
            num_ports: self.nports(),
            system_image_guid: self.guid,
            node_guid: self.guid,
            port_guid: self.guid,
            partition_cap: PARTITION_ENFORCEMENT_CAP,
            device_id: 0xb924,
            revision: 1,
            local_port_num: in_port,
            vendor_id: 0x0002c9,
        }
    }

    /// What the SMA answers SubnGet(SwitchInfo) with (IBA 1 §14.2.5.4).
    pub fn switch_info(&self) -> SwitchInfoRepr {
        let [default_port, mcast_primary, mcast_not_primary] = self.mgmt.default_ports;
        SwitchInfoRepr {
            linear_fdb_cap: LINEAR_FDB_CAP,
            multicast_fdb_cap: MULTICAST_FDB_CAP,
            linear_fdb_top: self.lft_top,
            default_port,
            default_multicast_primary_port: mcast_primary,
            default_multicast_not_primary_port: mcast_not_primary,
            life_time_value: self.mgmt.life_time_value,
            port_state_change: self.mgmt.port_state_change,
            lids_per_port: 1,
            partition_enforcement_cap: PARTITION_ENFORCEMENT_CAP,
            inbound_enforcement_cap: true,
            outbound_enforcement_cap: true,
            // An MLID: the highest the MFT forwards; 0, below 0xC000, when it holds none (OpenSM
            // `osm_mcast_mgr.c`, `ibroute -M`: docs/OPENSM-NOTES.md "Diags on a fat tree").
            multicast_fdb_top: self.mft.keys().next_back().copied().unwrap_or(0),
            ..SwitchInfoRepr::default()
        }
    }

    /// IBA 1 §14.2.5.4: writing 1 to PortStateChange clears it, the changes the SM read in a
    /// SubnGet(SwitchInfo); a change since that read (a link that came up while the SM swept,
    /// before the switch had the LID, MasterSMLID and route its trap 128 needs) leaves it set for
    /// the SM's next read, where a literal clear would lose it (docs/OPENSM-LIMITS.md "A host
    /// attached while OpenSM sweeps"). LinearFDBTop is what the Set
    /// says: the LFT entries above it stay as written but are not used (DLIDs above it are
    /// discarded), and an LFT block written above it leaves it where it is (ibsim's
    /// `sim_mad.c` keeps it so too; docs/OPENSM-NOTES.md "ibsim against our fabric").
    fn set_switch_info(&mut self, w: &SwitchInfoRepr) {
        if w.port_state_change && !self.mgmt.port_state_change_unread {
            self.mgmt.port_state_change = false;
        }
        self.mgmt.life_time_value = w.life_time_value & 0x1f;
        self.mgmt.default_ports = [
            w.default_port,
            w.default_multicast_primary_port,
            w.default_multicast_not_primary_port,
        ];
        self.lft_top = w.linear_fdb_top.min(LINEAR_FDB_CAP - 1);
    }

    /// A port's link went up or down (IBA 1 §7.2: the port goes Init or Down): PortStateChange is
    /// set and trap 128 goes to the SM (IBA 1 §14.2.5.1) once the switch has a LID and the SM's.
    pub(super) fn link_changed(&mut self, port: u8, up: bool, tx: &mut Tx) {
        let Some(p) = self.ports.get_mut(usize::from(port)) else {
            return;
        };
        // IBA 1 §16.1.3.5 LinkDownedCounter: a link that had trained (LinkUp: port state Init or
        // above, IBA 1 §7.2) went down. A port that never trained, such as a fabric slot with no
        // host at power-on, or one told again it is down, does not count.
        if p.up && p.state != PortState::Down && !up {
            p.traffic.link_downed += 1;
        }
        p.up = up;
        p.state = if up { PortState::Init } else { PortState::Down };
        self.mgmt.port_state_change = true;
        self.mgmt.port_state_change_unread = true;
        self.send_trap(NoticeRepr::link_state_trap(self.lid), tx);
    }

    /// Sends Trap(`notice`) to the master SM by the LFT, once the switch has a LID and knows the
    /// SM's (IBA 1 §14.2.5.1; PortInfo:MasterSMLID is the trap destination).
    fn send_trap(&mut self, notice: NoticeRepr, tx: &mut Tx) {
        if self.lid == 0 || self.sm_lid == 0 {
            return;
        }
        let out = self.route_or(self.sm_lid, 0);
        if out == 0 {
            return;
        }
        let mut trap = SmpMadRepr::lid_routed_get(self.stats.traps_sent, attr::NOTICE, 0);
        trap.header.method = Method::Trap;
        trap.mkey = self.mgmt.mkey.mkey;
        trap.attribute = SmpAttribute::Notice(notice);
        let packet = sma::smp_packet(self.lid, self.sm_lid, self.mgmt.sm_sl, &trap.to_bytes());
        self.stats.traps_sent += 1;
        self.send_from_management(out, Frame::with_crcs(packet), tx);
    }

    /// Trap 256 for an SMP that failed the M_Key check (IBA 1 §14.2.4.1, §14.2.5.1): LIDADDR is
    /// the switch's LID (`sma::bad_mkey_details`).
    fn bad_mkey_trap(&mut self, req: &SmpMadRepr, tx: &mut Tx) {
        let t = sma::bad_mkey_details(req, self.lid);
        self.send_trap(t.notice(ProducerType::Switch, self.lid), tx);
    }

    /// The M_Key state of port 0 (tests and diagnostics).
    pub fn mkey_guard(&self) -> sma::MKeyGuard {
        self.mgmt.mkey
    }

    /// Traffic counters of a port (what its PMA reports).
    pub fn port_traffic(&self, port: u8) -> Option<pma::PortTraffic> {
        self.ports.get(usize::from(port)).map(|p| p.traffic)
    }
}

/// A P_Key table as written: up to the last valid entry, at least one entry.
fn trimmed(pkeys: &[PKey]) -> Vec<PKey> {
    let n = pkeys
        .iter()
        .rposition(|k| k.0 & 0x7fff != 0)
        .map_or(1, |i| i + 1);
    pkeys[..n].to_vec()
}

//! The HCA's subnet management agent on QP0 of every port (IBA 1 chapter 14) and its performance
//! management agent on QP1 (IBA 1 §16.1), as firmware: they answer before any consumer of QP0 or
//! QP1 sees the MAD.
//!
//! - A directed-route SMP follows the hop rules of `crate::hw::sma::dr` with the HCA as a CA: it
//!   is answered only at the end of its path (a CA forwards nothing, §14.2.2), and a returning one
//!   at the requester goes to QP0 (the SM). A LID-routed SMP reached the port through its LID.
//! - SubnGet/SubnSet (§14.2.5) are answered for the port the SMP came in on (PortInfo's
//!   AttributeModifier 0 or that port's number; another port of the CA is read but not written,
//!   one past NumPorts is invalid, §14.2.5.6, docs/conformance/sma-set.md): NodeInfo,
//!   NodeDescription (Get only), GUIDInfo (block 0, index 0 the port GUID, read only), PortInfo,
//!   P_KeyTable (blocks 0-3, 128 P_Keys), SLtoVLMappingTable, VLArbitrationTable (blocks 1-4),
//!   and SMInfo when an SM runs on the port ([`Hca::set_sm_info`]; SubnGet only, the SM_Key
//!   only to a requester presenting it, IBA 1 §14.4.1; a SubnSet(SMInfo) goes to QP0 for the
//!   SM); an SMInfo (LID-routed or at
//!   the end of its directed route) on a port with an SM program on QP0 ([`Hca::set_sm_client`])
//!   goes to QP0 for it; a SubnSet(PortInfo) with ClientReregister is counted for the host
//!   ([`super::Port::client_reregisters`], IBA 1 §14.4.11); anything else, SMInfo
//!   without an SM and a Set of a read-only attribute: status 0x000C. A Set of a value the port cannot
//!   take: status 0x001C, nothing changed. A SubnSet(PortInfo) PortPhysicalState Disabled
//!   switches the port off and Polling on again, once the answer has left (`set_phys_state`,
//!   as a switch port, IBA 1 §14.2.5.6); a directed-route SMP with HopCount 0 reaches the SMA of
//!   a port without a link (`ud.rs`, `rx.rs`). Every other method (GetResp, Trap, Report) is for the
//!   SM on QP0 and is delivered there.
//! - M_Key (§14.2.4) is per port: a violation is counted in PortInfo:M_KeyViolations and in
//!   [`HcaDropReason::SmpDiscarded`], and the SMP is dropped.
//! - Traps 257/258 (Bad P_Key/Q_Key, §14.2.5.1) leave from `trap.rs`; the SM's TrapRepress to one
//!   is taken here (§13.4.9), any other TrapRepress goes to QP0 for the program that trapped.
//! - PerfMgt Get/Set of PortCounters and PortCountersExtended on QP1 (crate::hw::sma::pma).
//!
//! Answers queue in the HCA and leave at the next flush, with the port's traffic counted.

use super::{trap, Hca, HcaDropReason};
use crate::hw::sim::Frame;
use crate::hw::sma::{self, dr, pma, port_set, DrStep, MKeyCheck};
use ipoib_proto::subnet::{link_width_speed, CAP_EXT_SPEEDS};
use ipoib_proto::time::Instant;
use ipoib_wire::ib::lid::LID_PERMISSIVE;
use ipoib_wire::mad::attr::smp as attr;
use ipoib_wire::mad::{MadStatus, Method, MgmtClass, BASE_VERSION, MAD_LEN};
use ipoib_wire::packet::Packet;
use ipoib_wire::smp::{
    cap_mask, GuidInfoRepr, NodeDescriptionRepr, NodeInfoRepr, NodeType, PKeyTableRepr,
    PortInfoRepr, PortPhysState, SmInfoRepr, SmpAttribute, SmpMad, SmpMadRepr, PKEY_TABLE_BLOCK,
    SMP_DATA_LEN,
};
use ipoib_wire::PKey;

/// What the HCA does with an SMP that came in on QP0 ([`Hca::sma_take`]).
pub(super) enum Qp0In {
    /// The SMA took it (answered or discarded).
    Taken,
    /// QP0 gets it as it came.
    Deliver,
    /// QP0 gets these 256 bytes instead (a directed-route SMP as the SMI left it).
    DeliverAs(Box<[u8; MAD_LEN]>),
}

impl Hca {
    /// The NodeDescription every port answers with (IBA 1 §14.2.5.2).
    pub fn set_node_description(&mut self, text: &str) {
        self.node_description = NodeDescriptionRepr::new(text);
    }

    /// The NodeDescription's text.
    pub fn node_description(&self) -> &str {
        self.node_description.text()
    }

    /// Says an SM runs on `port` and what it answers SubnGet(SMInfo) with (`None`: no SM).
    pub fn set_sm_info(&mut self, port: u8, info: Option<SmInfoRepr>) {
        if let Some(p) = self.port_mut(port) {
            p.sm_info = info;
        }
    }

    /// Says an SM program runs on `port` through QP0 (or no longer does): PortInfo's
    /// CapabilityMask has IsSM while it does (IBA 1 §14.2.5.6), as Linux sets it for a process
    /// that opened the port's `issm` device (docs/DEPLOYED.md).
    pub fn set_sm_client(&mut self, port: u8, on: bool) {
        if let Some(p) = self.port_mut(port) {
            p.sm_client = on;
        }
    }

    /// The PortInfo the SMA answers a SubnGet(PortInfo) on `port` with (IBA 1 §14.2.5.6), the
    /// M_Key hidden as from a requester without it: the one description of the port that the SM,
    /// the SA's records and the ibsim server's GET_PORTINFO (crates/runtime/src/ibsim_server/
    /// info.rs) all read.
    pub fn port_info(&self, port: u8) -> Option<PortInfoRepr> {
        self.port(port).map(|p| port_info(p, true))
    }

    /// The ports whose PortInfo or P_KeyTable a SubnSet wrote since the last call, in order,
    /// each once: the host tells its consumers, as after a configuration write (IBA 1 §14.2.5.6;
    /// Linux raises IB_EVENT_LID_CHANGE, PKEY_CHANGE, PORT_ACTIVE, docs/DEPLOYED.md).
    pub fn take_port_changes(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.sma_changed)
    }

    /// A data packet (not VL15) that passed the link layer's checks arrived on `port`: an Armed
    /// port goes Active by itself (`PortState::after_data_received`, IBA 1 §7.2), and the host is
    /// told as after an SMA's write ([`Hca::take_port_changes`]; Linux raises
    /// IB_EVENT_PORT_ACTIVE on the port's change).
    pub fn data_received(&mut self, port: u8) {
        let Some(p) = self.port_mut(port) else {
            return;
        };
        let next = p.state.after_data_received();
        if next != p.state {
            p.state = next;
            if !self.sma_changed.contains(&port) {
                self.sma_changed.push(port);
            }
        }
    }

    /// True when [`Hca::take_port_changes`] would give a port (a host asks at every round).
    pub fn has_port_changes(&self) -> bool {
        !self.sma_changed.is_empty()
    }

    /// Queues an agent's answer for the next flush: the first in room for one (a host's agents
    /// answer one MAD at a time; a `Vec` grown by a push reserves four), more as before.
    pub(super) fn push_sma_out(&mut self, answer: (u8, Frame, bool)) {
        if self.sma_out.capacity() == 0 {
            self.sma_out.reserve_exact(1);
        }
        self.sma_out.push(answer);
    }

    /// Takes an SMP that came in on `port` for the SMA; else says how QP0 gets it.
    pub(super) fn sma_take(&mut self, now: Instant, port: u8, pkt: &Packet<'_>) -> Qp0In {
        let mut for_sm = None;
        if self.sma_take_mad(now, port, pkt, &mut for_sm) {
            return Qp0In::Taken;
        }
        for_sm.map_or(Qp0In::Deliver, |m| Qp0In::DeliverAs(Box::new(m)))
    }

    /// [`Hca::sma_take`]: true when taken; false, with `for_sm` filled when QP0 gets the SMP as
    /// this node's SMI left it (a directed-route one at its end, for the SM program on the port).
    fn sma_take_mad(
        &mut self,
        now: Instant,
        port: u8,
        pkt: &Packet<'_>,
        for_sm: &mut Option<[u8; MAD_LEN]>,
    ) -> bool {
        let Ok(arrived) = <&[u8; MAD_LEN]>::try_from(pkt.payload) else {
            return false;
        };
        let directed = match MgmtClass::from(arrived[1]) {
            MgmtClass::SubnDirectedRoute => true,
            MgmtClass::SubnLid => false,
            _ => return false,
        };
        let nports = self.port_count();
        // The hop rules decide on the MAD as it came; only one for the SMA is copied, to be
        // changed by them and answered (a returning SMP, the answers an SM's sweep brings back
        // to its port, goes to QP0 as it came).
        if directed {
            match dr::step(arrived, false, nports) {
                DrStep::Local => {}
                DrStep::ToRequester | DrStep::Forward(_) => return false,
                DrStep::Discard(_) => {
                    self.counters.count(HcaDropReason::SmpDiscarded);
                    return true;
                }
            }
        }
        let mut mad = *arrived;
        if directed {
            dr::receive(&mut mad, port, false, nports);
        }
        let Ok(req) = SmpMadRepr::parse(&mad) else {
            return false;
        };
        if req.header.base_version != BASE_VERSION || !sma::is_agent_method(req.header.method) {
            return false;
        }
        // A TrapRepress (IBA 1 §13.4.9) answers a trap 257/258 this port sent (`trap.rs`, known
        // by its TID: taken, as Linux's qib takes it in `subn_trap_repress`), else one a program
        // on QP0 sent (an SM's trap 144), which the host hands it by its TID. Taken here, an
        // OpenSM whose trap 144 stayed outstanding never finished a sweep as master (under
        // ibsim-run no MAD layer times a send out).
        if req.header.method == Method::TrapRepress {
            if trap::is_own_trap(req.header.transaction_id) {
                if let Some(p) = self.port_mut(port) {
                    p.trap_represses += 1;
                }
                return true;
            }
            return false;
        }
        let Some(p) = self.port_mut(port) else {
            return true;
        };
        // IBA 1 §14.2.5.13: SMInfo is the SM's, not the SMA's: with an SM program on the port
        // (and no SMInfo of ours) it goes to QP0 for it to answer, as ibsim hands it to its SM
        // client (docs/OPENSM-NOTES.md "Our SM against OpenSM"). A directed-route one goes as
        // the SMI left it at the end of its path (IBA 1 §14.2.2.2: ReturnPath[n] and HopPointer
        // n + 1), so that the SM's GetResp leaves by the return path (C14-13:1, `dr::originate`).
        // A SubnSet(SMInfo) (HANDOVER, ACKNOWLEDGE, ..., IBA 1 §14.4.1) is for the SM program
        // too when the SMA answers its Gets (`crate::node::sm::election`): it changes the SM.
        let for_program = if p.sm_info.is_some() {
            req.header.method == Method::Set
        } else {
            p.sm_client
        };
        if req.header.attribute_id == attr::SM_INFO && for_program {
            if directed {
                *for_sm = Some(mad);
            }
            return false;
        }
        let hide_key = match p.mkey.check(now, req.header.method, req.mkey) {
            MKeyCheck::Violation => {
                self.counters.count(HcaDropReason::SmpDiscarded);
                self.bad_mkey_trap(now, port, &req);
                return true;
            }
            MKeyCheck::PassHideKey => true,
            MKeyCheck::Pass => false,
        };
        let (status, attribute) = match sma::header_status(&req.header) {
            Some(s) => (s, req.attribute),
            None => self.sma_attribute(port, &req, hide_key),
        };
        let configures = matches!(req.header.attribute_id, attr::PORT_INFO | attr::P_KEY_TABLE);
        if req.header.method == Method::Set
            && status == MadStatus::SUCCESS
            && configures
            && !self.sma_changed.contains(&port)
        {
            self.sma_changed.push(port);
        }
        self.counters.smp_answered += 1;
        // IBA 1 §14.2.2: HopCount 0 names the node whose SMI sent it: the answer goes back to
        // QP0 here; so does the answer to a LID-routed SMP this port sent itself.
        let local = if directed {
            SmpMad::new_checked(&mad[..]).is_ok_and(|m| m.hop_count() == 0)
        } else {
            self.to_self(port, pkt.lrh.slid)
        };
        // The answer written over the request's copy (no longer read as the request): the
        // bytes of `req.get_response(status, attribute)` (`SmpMad::respond_in_place`).
        if SmpMad::new_unchecked(&mut mad[..])
            .respond_in_place(Method::GetResp, status, &attribute)
            .is_err()
        {
            mad = req.get_response(status, attribute).to_bytes();
        }
        let spare = self.spare.take().unwrap_or_default();
        let packet = if directed {
            dr::respond(&mut mad, port);
            sma::smp_frame_in(spare, LID_PERMISSIVE, LID_PERMISSIVE, 0, &mad)
        } else {
            let slid = self.port(port).map_or(0, |p| p.lid);
            sma::smp_frame_in(spare, slid, pkt.lrh.slid, pkt.lrh.sl, &mad)
        };
        self.push_sma_out((port, packet, local));
        true
    }

    /// Answers a PerfMgt MAD on QP1 of `port`; false when it is not for the PMA.
    pub(super) fn pma_take(&mut self, port: u8, pkt: &Packet<'_>) -> bool {
        let (Some(bth), Some(deth)) = (pkt.bth, pkt.ext.deth) else {
            return false;
        };
        // IBA 1 §10.9.3: QP1 takes only a P_Key its port's table holds; other requests go on to
        // QP1's delivery, which counts and reports the violation (`ud.rs`, `trap.rs`).
        if self
            .port(port)
            .is_none_or(|p| p.match_any_pkey(bth.pkey).is_none())
        {
            return false;
        }
        let ports = &self.ports;
        let mut cleared = None;
        let Some(resp) = pma::answer(
            pkt.payload,
            |n| ports.get(usize::from(n).wrapping_sub(1)).map(|p| p.traffic),
            |n, c| cleared = Some((n, c)),
        ) else {
            return false;
        };
        if let Some((n, c)) = cleared {
            if let Some(p) = self.port_mut(n) {
                p.traffic = c;
            }
        }
        let slid = self.port(port).map_or(0, |p| p.lid);
        let reply = sma::gmp_packet(slid, pkt.lrh.slid, pkt.lrh.sl, bth.pkey, deth.src_qp, &resp);
        let local = self.to_self(port, pkt.lrh.slid);
        self.push_sma_out((port, Frame::with_crcs(reply), local));
        true
    }

    /// Whether an answer to `dlid` is for this port itself (a request it sent to its own LID,
    /// looped back): then the answer is looped back too, as a UD send to a LID of the port is
    /// (`ud.rs`), instead of leaving by the link for the switch to send back (which a switch
    /// refuses, IBA 1 §16.1.3.5 PortRcvSwitchRelayErrors: looping).
    pub(super) fn to_self(&self, port: u8, dlid: u16) -> bool {
        self.port(port).is_some_and(|p| p.path_bits(dlid).is_some())
    }

    /// The GetResp's status and attribute for `req` on `port` (after a Set, the values now held).
    fn sma_attribute(
        &mut self,
        port: u8,
        req: &SmpMadRepr,
        hide_key: bool,
    ) -> (MadStatus, SmpAttribute) {
        let set = req.header.method == Method::Set;
        let m = req.header.attribute_modifier;
        // Made only when answered: each copies the request's attribute.
        let unsupported = || (MadStatus::METHOD_ATTR_UNSUPPORTED, req.attribute);
        let invalid = || (MadStatus::INVALID_ATTR_VALUE, req.attribute);
        let ok = |a| (MadStatus::SUCCESS, a);
        let node_info = self.node_info(port);
        let description = self.node_description;
        let nports = self.port_count();
        let Some(p) = self.port_mut(port) else {
            return unsupported();
        };
        // IBA 1 §14.2.5 Table 145: NodeInfo's and NodeDescription's AttributeModifier is 0;
        // another is answered with the attribute and status 0x001C (Linux's qib
        // `subn_get_nodeinfo`, `subn_get_nodedescription`).
        let node_status = if m == 0 {
            MadStatus::SUCCESS
        } else {
            MadStatus::INVALID_ATTR_VALUE
        };
        match (req.header.attribute_id, &req.attribute) {
            (attr::NODE_INFO, _) if !set => (node_status, SmpAttribute::NodeInfo(node_info)),
            (attr::NODE_DESCRIPTION, _) if !set => {
                (node_status, SmpAttribute::NodeDescription(description))
            }
            (attr::GUID_INFO, _) if m == 0 => {
                let mut g = GuidInfoRepr::default();
                g.guids[0] = p.guid;
                ok(SmpAttribute::GuidInfo(g))
            }
            (attr::GUID_INFO, _) => invalid(),
            // The vendor attribute OpenSM asks of Mellanox HCAs (our NodeInfo's VendorID 0x02c9,
            // DeviceID 0x1003) for FDR10 (docs/OPENSM-NOTES.md): all zero, no FDR10 speed
            // supported, enabled or active; a Set changes nothing.
            (MLNX_EXTENDED_PORT_INFO, _) => ok(SmpAttribute::Raw([0; SMP_DATA_LEN])),
            // IBA 1 §14.2.5.6: AttributeModifier 0 is the port the SMP came in on; another
            // port of the CA is read but written only through itself, and a port past NumPorts
            // is an invalid modifier (Linux's qib `subn_get_portinfo`, `subn_set_portinfo`;
            // ibsim's `do_portinfo` refuses both).
            (attr::PORT_INFO, _) if m > u32::from(nports) => invalid(),
            (attr::PORT_INFO, a) => {
                let target = if m == 0 { port } else { m as u8 };
                let mut status = MadStatus::SUCCESS;
                let mut rereg = false;
                if let (true, true, SmpAttribute::PortInfo(w)) = (set, target == port, a) {
                    if !set_port_info(p, w) {
                        status = MadStatus::INVALID_ATTR_VALUE;
                    } else {
                        rereg = w.client_reregister;
                        if let Some(enabled) =
                            set_phys_state(p, sma::phys_request(w.port_phys_state))
                        {
                            self.port_requests.push((port, enabled));
                        }
                    }
                }
                let Some(t) = self.port(target) else {
                    return unsupported();
                };
                let mut info = port_info(t, hide_key);
                info.local_port_num = port;
                // IBA 1 o14-12.2.1 (as Linux's qib quotes it, `subn_set_portinfo`): the
                // answer to a Set that asked the clients to reregister carries the bit.
                info.client_reregister = rereg;
                (status, SmpAttribute::PortInfo(info))
            }
            (attr::P_KEY_TABLE, a) => {
                let first = (m & 0xffff) as usize * PKEY_TABLE_BLOCK;
                if first >= usize::from(super::PKEY_TABLE_SIZE) {
                    return invalid();
                }
                if let (true, SmpAttribute::PKeyTable(w)) = (set, a) {
                    let mut c = p.config();
                    if c.pkeys.len() < first + PKEY_TABLE_BLOCK {
                        c.pkeys.resize(first + PKEY_TABLE_BLOCK, PKey(0));
                    }
                    c.pkeys[first..first + PKEY_TABLE_BLOCK].copy_from_slice(&w.pkeys);
                    let n = c
                        .pkeys
                        .iter()
                        .rposition(|k| k.0 & 0x7fff != 0)
                        .map_or(1, |i| i + 1);
                    c.pkeys.truncate(n);
                    p.apply(&c);
                }
                let mut t = PKeyTableRepr::default();
                for (d, s) in t.pkeys.iter_mut().zip(p.pkeys.iter().skip(first)) {
                    *d = *s;
                }
                ok(SmpAttribute::PKeyTable(t))
            }
            (attr::SL_TO_VL_MAPPING_TABLE, a) => {
                if let (true, SmpAttribute::SlToVlMappingTable(w)) = (set, a) {
                    p.sl2vl = *w;
                }
                ok(SmpAttribute::SlToVlMappingTable(p.sl2vl))
            }
            (attr::VL_ARBITRATION_TABLE, a) => {
                let Some(i) = ((m >> 16) as usize).checked_sub(1).filter(|&i| i < 4) else {
                    return invalid();
                };
                if let (true, SmpAttribute::VlArbitrationTable(w)) = (set, a) {
                    p.vlarb[i] = *w;
                }
                ok(SmpAttribute::VlArbitrationTable(p.vlarb[i]))
            }
            (attr::SM_INFO, a) if !set => match p.sm_info {
                // IBA 1 §14.4.1: the SM_Key is given only to a requester that presented it, in
                // the SMInfo of its SubnGet (as our SMs ask, `crate::node::sm::election`).
                Some(mut i) => {
                    // A Get's data parses as Raw.
                    let presented = match a {
                        SmpAttribute::SmInfo(r) => r.sm_key,
                        SmpAttribute::Raw(b) => SmInfoRepr::parse(b).map_or(0, |r| r.sm_key),
                        _ => 0,
                    };
                    if presented != i.sm_key {
                        i.sm_key = 0;
                    }
                    ok(SmpAttribute::SmInfo(i))
                }
                None => unsupported(),
            },
            _ => unsupported(),
        }
    }

    /// What the SMA answers SubnGet(NodeInfo) on `port` with (IBA 1 §14.2.5.3).
    pub fn node_info(&self, port: u8) -> NodeInfoRepr {
        NodeInfoRepr {
            base_version: BASE_VERSION,
            class_version: 1,
            node_type: NodeType::ChannelAdapter,
            num_ports: self.port_count(),
            system_image_guid: self.node_guid,
            node_guid: self.node_guid,
            port_guid: self.port(port).map_or(self.node_guid, |p| p.guid),
            partition_cap: super::PKEY_TABLE_SIZE,
            device_id: 0x1003,
            revision: 1,
            local_port_num: port,
            vendor_id: 0x0002c9,
        }
    }
}

/// PortInfo:LinkWidthSupported of a CA port: 1x, 4x and 12x (IBA 1 §14.2.5.6).
const LINK_WIDTH_SUPPORTED: u8 = 0x0b;

/// Mellanox's vendor-specific SMP attribute ExtendedPortInfo (vendor range 0xFF00-0xFFFF, IBA 1
/// §14.2.5 Table 145), as OpenSM names it (`IB_MAD_ATTR_MLNX_EXTENDED_PORT_INFO`).
const MLNX_EXTENDED_PORT_INFO: u16 = 0xFF90;

fn port_info(p: &super::Port, hide_key: bool) -> PortInfoRepr {
    let (width, speed, ext) = link_width_speed(p.rate);
    // IsClientReregistrationSupported, as Linux's mlx4 and mlx5 HCAs say (docs/DEPLOYED.md).
    let mut caps = cap_mask::IS_SYSTEM_IMAGE_GUID_SUPPORTED
        | cap_mask::IS_COMMUNICATION_MANAGEMENT_SUPPORTED
        | cap_mask::IS_CLIENT_REREGISTRATION_SUPPORTED;
    if ext != 0 {
        caps |= CAP_EXT_SPEEDS;
    }
    if p.sm_info.is_some() || p.sm_client {
        caps |= cap_mask::IS_SM;
    }
    PortInfoRepr {
        mkey: if hide_key { 0 } else { p.mkey.mkey },
        gid_prefix: p.subnet_prefix,
        lid: p.lid,
        master_sm_lid: p.sm_lid,
        capability_mask: caps,
        mkey_lease_period: p.mkey.lease_period,
        local_port_num: p.num,
        link_width_enabled: p.link.width_enabled(width),
        link_width_supported: LINK_WIDTH_SUPPORTED,
        link_width_active: width,
        link_speed_supported: port_set::LINK_SPEED_SUPPORTED,
        port_state: sma::wire_state(p.state),
        port_phys_state: if p.disabled {
            PortPhysState::Disabled
        } else {
            sma::phys_state(p.phys_up)
        },
        link_down_default_state: p.link.link_down_default(),
        mkey_protect_bits: p.mkey.protect,
        lmc: p.lmc,
        link_speed_active: speed,
        link_speed_enabled: p.link.speed_enabled(),
        neighbor_mtu: p.mtu,
        master_sm_sl: p.sm_sl,
        vl_cap: crate::hw::sma::OPERATIONAL_VLS,
        mtu_cap: p.mtu_cap,
        operational_vls: crate::hw::sma::OPERATIONAL_VLS,
        mkey_violations: p.mkey.violations,
        pkey_violations: p.pkey_violations,
        qkey_violations: p.qkey_violations,
        guid_cap: 1,
        subnet_timeout: p.subnet_timeout,
        link_speed_ext_active: ext,
        link_speed_ext_supported: ext,
        link_speed_ext_enabled: ext,
        ..PortInfoRepr::default()
    }
}

/// PortPhysicalState of a SubnSet(PortInfo) of CA port `p` (IBA 1 §14.2.5.6, §5.6.2.1), as a
/// switch port takes it (`crate::hw::switch`): Disabled switches the port off (its link goes
/// down: this port Down, the switch's end Polling and its trap 128, the host told as of a cable
/// pulled), Polling switches a disabled port on (the link trains: both ends Init, trap 128). The
/// link changes once the Set's answer has left by it, so that a remote `ibportstate disable`
/// gets its answer. Gives the simulator's request ([`crate::hw::sim::Tx::set_port_enabled`])
/// when the port changed.
fn set_phys_state(p: &mut super::Port, phys: sma::PhysRequest) -> Option<bool> {
    let disable = match phys {
        sma::PhysRequest::Disable => true,
        sma::PhysRequest::Enable => false,
        sma::PhysRequest::Keep => return None,
    };
    (p.disabled != disable).then(|| {
        p.disabled = disable;
        !disable
    })
}

/// Applies a SubnSet(PortInfo) through [`super::Port::apply`], the write the SM's `Config::Port`
/// makes; false (and nothing changed) when the state transition, the LID or the MTU is invalid
/// (IBA 1 §14.2.5.6).
fn set_port_info(p: &mut super::Port, w: &PortInfoRepr) -> bool {
    let Some(state) = sma::port_state_after_set(p.state, p.phys_up, w.port_state) else {
        return false;
    };
    let mtu = if u8::from(w.neighbor_mtu) == 0 {
        p.mtu
    } else {
        w.neighbor_mtu
    };
    // The active width is supported whatever the constant says (an 8x cable's).
    let (width, _, _) = link_width_speed(p.rate);
    let Some(link) = p.link.after_set(w, LINK_WIDTH_SUPPORTED | width) else {
        return false;
    };
    if !sma::mtu_ok(mtu, p.mtu_cap)
        || !port_set::unicast_lid_ok(w.lid)
        || !port_set::unicast_lid_ok(w.master_sm_lid)
    {
        return false;
    }
    let mut c = p.config();
    c.lid = w.lid;
    c.lmc = w.lmc & 7;
    c.sm_lid = w.master_sm_lid;
    c.sm_sl = w.master_sm_sl & 0x0f;
    c.subnet_prefix = w.gid_prefix;
    c.state = state;
    c.mtu = mtu;
    if !p.apply(&c) {
        return false;
    }
    p.mkey.mkey = w.mkey;
    p.mkey.protect = w.mkey_protect_bits & 3;
    p.mkey.lease_period = w.mkey_lease_period;
    p.link = link;
    p.mkey.violations = port_set::violations_after_set(p.mkey.violations, w.mkey_violations);
    p.pkey_violations = port_set::violations_after_set(p.pkey_violations, w.pkey_violations);
    p.qkey_violations = port_set::violations_after_set(p.qkey_violations, w.qkey_violations);
    p.subnet_timeout = w.subnet_timeout & 0x1f;
    // IBA 1 §14.4.11: the port's clients register again; the bit itself is not kept (a
    // SubnGet reads it 0; the Set's answer carries it).
    if w.client_reregister {
        p.client_reregisters += 1;
    }
    true
}

//! The subnet's records, read-only: NodeRecord (IBA 1 §15.2.5.2), PortInfoRecord (§15.2.5.3),
//! LinkRecord (§15.2.5.13), P_KeyTableRecord (§15.2.5.11) and
//! LinearForwardingTableRecord (§15.2.5.6) and GUIDInfoRecord (§15.2.5.18), answered from the [`crate::subnet::SubnetModel`] as
//! OpenSM answers them (`osm_sa_node_record.c`, `osm_sa_portinfo_record.c`, `osm_sa_link_record.c`,
//! `osm_sa_pkey_record.c`, `osm_sa_lft_record.c`, `osm_sa_guidinfo_record.c`; docs/OPENSM-NOTES.md "Subnet records").
//!
//! Common rules: only Get and GetTable (Set and Delete dropped, other methods
//! METHOD_ATTR_UNSUPPORTED); nodes in node-GUID order, ports in port order; a port is visible to the requester only if the two share a P_Key
//! (OpenSM `osm_physp_share_pkey`: the same port, or either P_Key table empty, or an entry of one
//! matching an entry of the other with not both limited); a switch answers for its ports with the
//! LID of its management port 0; the component mask selects on the fields it names, and a Get that
//! matches no record or several is ERR_NO_RECORDS or ERR_TOO_MANY_RECORDS
//! (`SaServer::respond_records`).

use super::{Req, SaServer};
use crate::subnet::{CaPort, Peer, SubnetModel};
use crate::time::Instant;
use ipoib_wire::mad::{MadStatus, Method, SaStatus};
use ipoib_wire::sa::{
    gir_mask, lftr_mask, lr_mask, node_description, nr_mask, pir_mask, pkr_mask,
    GuidInfoRecordRepr, LftRecordRepr, LinkRecordRepr, NodeRecordRepr, PKeyTableRecordRepr,
    PortInfoRecordRepr, SaAttribute, GUID_BLOCK_ENTRIES, PIR_ENHANCED_COMP_MASK,
    PKEY_BLOCK_ENTRIES,
};
use ipoib_wire::smp::{NodeInfoRepr, NodeType, PortInfoRepr, LFT_BLOCK_LIDS};
use ipoib_wire::{Guid, PKey};

/// A physical port of the model, as the records see it.
#[derive(Debug, Clone)]
pub(super) struct Phys {
    /// Node GUID (the node's identity and the record order).
    pub(super) node_guid: Guid,
    /// Port number on the node (0 for a switch's management port).
    pub(super) num: u8,
    /// The port's GUID (a switch's ports all have the switch's).
    pub(super) guid: Guid,
    /// Base LID of the port, or of switch port 0 for a switch's ports.
    pub(super) lid: u16,
    /// LMC of that LID (0 for switches: port 0 of our switches is not LMC-capable).
    pub(super) lmc: u8,
    /// The P_Key table.
    pub(super) pkeys: Vec<PKey>,
    /// Where the port is in the model.
    pub(super) at: At,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum At {
    Ca(usize),
    Switch(usize),
}

/// OpenSM `osm_physp_share_pkey` (without `allow_both_pkeys`): the same port, or an empty table
/// at either end, or a pair of entries that match, not both limited.
pub(super) fn share_pkey(a: &[PKey], b: &[PKey], same: bool) -> bool {
    same || a.is_empty() || b.is_empty() || a.iter().any(|&ka| b.iter().any(|&kb| ka.matches(kb)))
}

/// `[lid, lid + 2^lmc - 1]` holds `want`.
pub(super) fn lid_in(lid: u16, lmc: u8, want: u16) -> bool {
    lid != 0 && want >= lid && u32::from(want) < u32::from(lid) + (1u32 << lmc.min(16))
}

/// Two NodeDescriptions compared as OpenSM does, with `strncmp` over 64 bytes: equal up to the
/// first NUL of either.
fn same_description(a: &[u8; 64], b: &[u8; 64]) -> bool {
    for (x, y) in a.iter().zip(b) {
        if x != y {
            return false;
        }
        if *x == 0 {
            return true;
        }
    }
    true
}

impl SubnetModel {
    /// Every port a record may name: the CA ports with a LID (those the SM reached), every port
    /// of every switch; by node GUID, then port number.
    pub(super) fn phys_ports(&self) -> Vec<Phys> {
        let mut v: Vec<Phys> = self
            .ports
            .iter()
            .enumerate()
            .filter(|(_, p)| p.lid != 0)
            .map(|(i, p)| Phys {
                node_guid: p.node_guid,
                num: p.port_num,
                guid: p.port_guid,
                lid: p.lid,
                lmc: p.lmc,
                pkeys: p.pkeys.clone(),
                at: At::Ca(i),
            })
            .collect();
        for (s, sw) in self.switches.iter().enumerate() {
            for n in 0..sw.ports.len() {
                let num = u8::try_from(n).unwrap_or(u8::MAX);
                v.push(Phys {
                    node_guid: sw.guid,
                    num,
                    guid: sw.guid,
                    lid: sw.lid,
                    lmc: 0,
                    pkeys: self.switch_port_pkeys(sw, num),
                    at: At::Switch(s),
                });
            }
        }
        v.sort_by_key(|p| (p.node_guid, p.num));
        v
    }

    /// The NodeInfo of the node `p` is on, PortGUID and LocalPortNum being `p`'s.
    fn node_info(&self, p: &Phys) -> NodeInfoRepr {
        let (node_type, facts) = match p.at {
            At::Ca(i) => (NodeType::ChannelAdapter, self.ports[i].node),
            At::Switch(s) => (NodeType::Switch, self.switches[s].node),
        };
        NodeInfoRepr {
            base_version: 1,
            class_version: 1,
            node_type,
            num_ports: facts.num_ports,
            system_image_guid: facts.system_image_guid,
            node_guid: p.node_guid,
            port_guid: p.guid,
            partition_cap: facts.partition_cap,
            device_id: facts.device_id,
            revision: facts.revision,
            local_port_num: p.num,
            vendor_id: facts.vendor_id,
        }
    }

    fn name_of(&self, p: &Phys) -> &str {
        match p.at {
            At::Ca(i) => &self.ports[i].name,
            At::Switch(s) => &self.switches[s].name,
        }
    }

    fn port_info_of(&self, p: &Phys) -> Option<PortInfoRepr> {
        match p.at {
            At::Ca(i) => Some(self.ca_port_info(&self.ports[i])),
            At::Switch(s) => self.switch_port_info(&self.switches[s], p.num),
        }
    }

    /// The port at the other end of `p`'s cable, if the model knows it.
    fn peer_of(&self, p: &Phys) -> Option<(Guid, u8)> {
        let peer = match p.at {
            At::Ca(i) => self.ports[i].peer,
            At::Switch(s) => self.switches[s].ports.get(usize::from(p.num))?.peer,
        };
        match peer {
            Peer::None => None,
            Peer::Ca(i) => self.ports.get(i).map(|c| (c.node_guid, c.port_num)),
            Peer::Switch(s, n) => self.switches.get(s).map(|w| (w.guid, n)),
        }
    }
}

impl SaServer {
    pub(super) fn requester(&self, req: &Req<'_>) -> Option<&CaPort> {
        self.model().ports.get(req.port)
    }

    /// The requester sees `p` (see the module docs).
    pub(super) fn visible(&self, req: &Req<'_>, p: &Phys) -> bool {
        let Some(r) = self.requester(req) else {
            return false;
        };
        share_pkey(&r.pkeys, &p.pkeys, p.at == At::Ca(req.port))
    }

    /// Only Get and GetTable are answered. OpenSM 3.3.23 drops a Set or Delete of these
    /// attributes unanswered ("Dispatcher post message failed (CL_NOT_FOUND)", measured by
    /// `opensm_diff::our_subnet_records_match_opensm`), and so do we; other methods get
    /// METHOD_ATTR_UNSUPPORTED.
    pub(super) fn get_or_table(&mut self, req: &Req<'_>) -> bool {
        match req.mad.header.method {
            Method::Get | Method::GetTable => true,
            Method::Set | Method::Delete => {
                self.drop_mad("Set or Delete of a read-only record");
                false
            }
            _ => {
                self.respond_error(req.raw, &req.from, MadStatus::METHOD_ATTR_UNSUPPORTED);
                false
            }
        }
    }

    /// NodeRecord (OpenSM `osm_nr_rcv_process`): one record per visible port of a CA, one for a
    /// switch (its port 0); the node's fields select nodes, LID (any LID of the port's range),
    /// PortGUID and LocalPortNum select ports. LID is the port's base LID, NodeInfo's PortGUID and
    /// LocalPortNum the port's.
    pub(super) fn node_record(&mut self, now: Instant, req: &Req<'_>, q: NodeRecordRepr) {
        if !self.get_or_table(req) {
            return;
        }
        let mask = req.mad.sa.component_mask;
        let model = self.model();
        let qi = &q.node_info;
        let mut recs = Vec::new();
        for p in model.phys_ports() {
            if matches!(p.at, At::Switch(_)) && p.num != 0 {
                continue;
            }
            let ni = model.node_info(&p);
            let desc = node_description(model.name_of(&p));
            let node_ok = [
                (nr_mask::NODE_GUID, ni.node_guid == qi.node_guid),
                (
                    nr_mask::SYSTEM_IMAGE_GUID,
                    ni.system_image_guid == qi.system_image_guid,
                ),
                (nr_mask::BASE_VERSION, ni.base_version == qi.base_version),
                (nr_mask::CLASS_VERSION, ni.class_version == qi.class_version),
                (nr_mask::NODE_TYPE, ni.node_type == qi.node_type),
                (nr_mask::NUM_PORTS, ni.num_ports == qi.num_ports),
                (nr_mask::PARTITION_CAP, ni.partition_cap == qi.partition_cap),
                (nr_mask::DEVICE_ID, ni.device_id == qi.device_id),
                (nr_mask::REVISION, ni.revision == qi.revision),
                (nr_mask::VENDOR_ID, ni.vendor_id == qi.vendor_id),
                (
                    nr_mask::NODE_DESCRIPTION,
                    same_description(&desc, &q.node_description),
                ),
                (nr_mask::PORT_GUID, p.guid == qi.port_guid),
                (nr_mask::LID, lid_in(p.lid, p.lmc, q.lid)),
                (nr_mask::LOCAL_PORT_NUM, p.num == qi.local_port_num),
            ]
            .iter()
            .all(|&(bit, ok)| mask & bit == 0 || ok);
            if node_ok && self.visible(req, &p) {
                recs.push(SaAttribute::NodeRecord(NodeRecordRepr {
                    lid: p.lid,
                    node_info: ni,
                    node_description: desc,
                }));
            }
        }
        self.respond_records(now, req, recs);
    }

    /// PortInfoRecord (OpenSM `osm_pir_rcv_process`): one record per visible port, EndportLID the
    /// port's base LID (switch port 0's for every port of a switch). EndportLID in the mask names
    /// the node whose base LID it is (none: no records); PortNum one port; the PortInfo fields
    /// select by equality (every field OpenSM's `sa_pir_check_physp` compares; ClientReregister
    /// and the reserved bits select nothing), CapabilityMask and CapabilityMask2 by "all given bits
    /// set" when AttributeModifier bit 31 is set. M_Key reads 0 unless the request carries the SM_Key (IBA 1 §15.2.5.3; ours is 0).
    pub(super) fn port_info_record(&mut self, now: Instant, req: &Req<'_>, q: PortInfoRecordRepr) {
        if !self.get_or_table(req) {
            return;
        }
        let mask = req.mad.sa.component_mask;
        let enhanced = req.mad.header.attribute_modifier & PIR_ENHANCED_COMP_MASK != 0;
        let trusted = req.mad.sa.sm_key != 0;
        let model = self.model();
        let all = model.phys_ports();
        // EndportLID, else PortInfo.LID, picks the node by its base LID.
        let node = if mask & pir_mask::LID != 0 {
            Some(
                all.iter()
                    .find(|p| p.lid == q.lid && q.lid != 0)
                    .map(|p| p.node_guid),
            )
        } else if mask & pir_mask::BASE_LID != 0 {
            Some(
                all.iter()
                    .find(|p| p.lid == q.port_info.lid && q.port_info.lid != 0)
                    .map(|p| p.node_guid),
            )
        } else {
            None
        };
        let mut recs = Vec::new();
        if node != Some(None) {
            let qi = &q.port_info;
            for p in &all {
                if node.is_some_and(|n| n != Some(p.node_guid)) {
                    continue;
                }
                if mask & pir_mask::PORT_NUM != 0 && p.num != q.port_num {
                    continue;
                }
                if !self.visible(req, p) {
                    continue;
                }
                let Some(mut pi) = model.port_info_of(p) else {
                    continue;
                };
                let bits_ok = |want: u32, have: u32| {
                    if enhanced {
                        want & have == want
                    } else {
                        want == have
                    }
                };
                let ok = [
                    (pir_mask::BASE_LID, qi.lid == pi.lid),
                    (pir_mask::M_KEY, qi.mkey == pi.mkey),
                    (pir_mask::GID_PREFIX, qi.gid_prefix == pi.gid_prefix),
                    (
                        pir_mask::MASTER_SM_LID,
                        qi.master_sm_lid == pi.master_sm_lid,
                    ),
                    (
                        pir_mask::CAPABILITY_MASK,
                        bits_ok(qi.capability_mask, pi.capability_mask),
                    ),
                    (pir_mask::DIAG_CODE, qi.diag_code == pi.diag_code),
                    (
                        pir_mask::MKEY_LEASE_PERIOD,
                        qi.mkey_lease_period == pi.mkey_lease_period,
                    ),
                    (
                        pir_mask::LOCAL_PORT_NUM,
                        qi.local_port_num == pi.local_port_num,
                    ),
                    (
                        pir_mask::LINK_WIDTH_ENABLED,
                        qi.link_width_enabled == pi.link_width_enabled,
                    ),
                    (
                        pir_mask::LINK_WIDTH_SUPPORTED,
                        qi.link_width_supported == pi.link_width_supported,
                    ),
                    (
                        pir_mask::LINK_WIDTH_ACTIVE,
                        qi.link_width_active == pi.link_width_active,
                    ),
                    (
                        pir_mask::LINK_SPEED_SUPPORTED,
                        qi.link_speed_supported == pi.link_speed_supported,
                    ),
                    (pir_mask::PORT_STATE, qi.port_state == pi.port_state),
                    (
                        pir_mask::PORT_PHYS_STATE,
                        qi.port_phys_state == pi.port_phys_state,
                    ),
                    (
                        pir_mask::LINK_DOWN_DEFAULT_STATE,
                        qi.link_down_default_state == pi.link_down_default_state,
                    ),
                    (
                        pir_mask::MKEY_PROTECT_BITS,
                        qi.mkey_protect_bits == pi.mkey_protect_bits,
                    ),
                    (pir_mask::LMC, qi.lmc == pi.lmc),
                    (
                        pir_mask::LINK_SPEED_ACTIVE,
                        qi.link_speed_active == pi.link_speed_active,
                    ),
                    (
                        pir_mask::LINK_SPEED_ENABLED,
                        qi.link_speed_enabled == pi.link_speed_enabled,
                    ),
                    (pir_mask::NEIGHBOR_MTU, qi.neighbor_mtu == pi.neighbor_mtu),
                    (pir_mask::MASTER_SM_SL, qi.master_sm_sl == pi.master_sm_sl),
                    (pir_mask::VL_CAP, qi.vl_cap == pi.vl_cap),
                    (pir_mask::INIT_TYPE, qi.init_type == pi.init_type),
                    (
                        pir_mask::VL_HIGH_LIMIT,
                        qi.vl_high_limit == pi.vl_high_limit,
                    ),
                    (
                        pir_mask::VL_ARB_HIGH_CAP,
                        qi.vl_arbitration_high_cap == pi.vl_arbitration_high_cap,
                    ),
                    (
                        pir_mask::VL_ARB_LOW_CAP,
                        qi.vl_arbitration_low_cap == pi.vl_arbitration_low_cap,
                    ),
                    (pir_mask::MTU_CAP, qi.mtu_cap == pi.mtu_cap),
                    (
                        pir_mask::VL_STALL_COUNT,
                        qi.vl_stall_count == pi.vl_stall_count,
                    ),
                    (pir_mask::HOQ_LIFE, qi.hoq_life == pi.hoq_life),
                    (
                        pir_mask::OPERATIONAL_VLS,
                        qi.operational_vls == pi.operational_vls,
                    ),
                    (
                        pir_mask::PARTITION_ENFORCEMENT_INBOUND,
                        qi.partition_enforcement_inbound == pi.partition_enforcement_inbound,
                    ),
                    (
                        pir_mask::PARTITION_ENFORCEMENT_OUTBOUND,
                        qi.partition_enforcement_outbound == pi.partition_enforcement_outbound,
                    ),
                    (
                        pir_mask::FILTER_RAW_INBOUND,
                        qi.filter_raw_inbound == pi.filter_raw_inbound,
                    ),
                    (
                        pir_mask::FILTER_RAW_OUTBOUND,
                        qi.filter_raw_outbound == pi.filter_raw_outbound,
                    ),
                    (
                        pir_mask::MKEY_VIOLATIONS,
                        qi.mkey_violations == pi.mkey_violations,
                    ),
                    (
                        pir_mask::PKEY_VIOLATIONS,
                        qi.pkey_violations == pi.pkey_violations,
                    ),
                    (
                        pir_mask::QKEY_VIOLATIONS,
                        qi.qkey_violations == pi.qkey_violations,
                    ),
                    (pir_mask::GUID_CAP, qi.guid_cap == pi.guid_cap),
                    (
                        pir_mask::SUBNET_TIMEOUT,
                        qi.subnet_timeout == pi.subnet_timeout,
                    ),
                    (
                        pir_mask::RESP_TIME_VALUE,
                        qi.resp_time_value == pi.resp_time_value,
                    ),
                    (
                        pir_mask::LOCAL_PHY_ERRORS,
                        qi.local_phy_errors == pi.local_phy_errors,
                    ),
                    (
                        pir_mask::OVERRUN_ERRORS,
                        qi.overrun_errors == pi.overrun_errors,
                    ),
                    (
                        pir_mask::MAX_CREDIT_HINT,
                        qi.max_credit_hint == pi.max_credit_hint,
                    ),
                    (
                        pir_mask::LINK_ROUND_TRIP_LATENCY,
                        qi.link_round_trip_latency == pi.link_round_trip_latency,
                    ),
                    (
                        pir_mask::CAPABILITY_MASK2,
                        bits_ok(qi.capability_mask2.into(), pi.capability_mask2.into()),
                    ),
                    (
                        pir_mask::LINK_SPEED_EXT_ACTIVE,
                        qi.link_speed_ext_active == pi.link_speed_ext_active,
                    ),
                    (
                        pir_mask::LINK_SPEED_EXT_SUPPORTED,
                        qi.link_speed_ext_supported == pi.link_speed_ext_supported,
                    ),
                    (
                        pir_mask::LINK_SPEED_EXT_ENABLED,
                        qi.link_speed_ext_enabled == pi.link_speed_ext_enabled,
                    ),
                ]
                .iter()
                .all(|&(bit, ok)| mask & bit == 0 || ok);
                if !ok {
                    continue;
                }
                // EndportLID in the mask must fall in the port's LID range (OpenSM
                // `sa_pir_create`); a switch's ports answer for port 0's.
                if mask & pir_mask::LID != 0 && !lid_in(p.lid, p.lmc, q.lid) {
                    continue;
                }
                if !trusted {
                    pi.mkey = 0;
                }
                recs.push(SaAttribute::PortInfoRecord(PortInfoRecordRepr {
                    lid: p.lid,
                    port_num: p.num,
                    options: 0,
                    port_info: pi,
                }));
            }
        }
        self.respond_records(now, req, recs);
    }

    /// LinkRecord (OpenSM `osm_lr_rcv_process`): one record per direction of every cable whose
    /// two ends the model knows, in FromLID then FromPort order (as OpenSM 3.3.23 answers),
    /// FromLID/ToLID the base LIDs of the ports' nodes (switch port 0's for a switch); the four
    /// fields select where the mask names them. Only links whose source port the requester can see
    /// are given.
    pub(super) fn link_record(&mut self, now: Instant, req: &Req<'_>, q: LinkRecordRepr) {
        if !self.get_or_table(req) {
            return;
        }
        let mask = req.mad.sa.component_mask;
        let model = self.model();
        let all = model.phys_ports();
        let mut recs = Vec::new();
        for p in &all {
            let Some((peer_node, peer_num)) = model.peer_of(p) else {
                continue;
            };
            let Some(to) = all
                .iter()
                .find(|x| x.node_guid == peer_node && x.num == peer_num)
            else {
                continue;
            };
            let r = LinkRecordRepr {
                from_lid: p.lid,
                from_port: p.num,
                to_port: to.num,
                to_lid: to.lid,
            };
            let ok = [
                (lr_mask::FROM_LID, r.from_lid == q.from_lid),
                (lr_mask::FROM_PORT, r.from_port == q.from_port),
                (lr_mask::TO_PORT, r.to_port == q.to_port),
                (lr_mask::TO_LID, r.to_lid == q.to_lid),
            ]
            .iter()
            .all(|&(bit, ok)| mask & bit == 0 || ok);
            if ok && self.visible(req, p) {
                recs.push(r);
            }
        }
        recs.sort_by_key(|r| (r.from_lid, r.from_port));
        let recs = recs.into_iter().map(SaAttribute::LinkRecord).collect();
        self.respond_records(now, req, recs);
    }

    /// P_KeyTableRecord (OpenSM `osm_pkey_rec_rcv_process`): only for trusted requests, those
    /// carrying the SM_Key (IBA 1 §15.2.5.11, "shall only be provided in response to trusted
    /// requests"; untrusted: ERR_REQ_INVALID). LID names a port by its base LID (none: no
    /// records); a CA answers for that port alone, a switch for every port or the PortNum given;
    /// without LID, every port in port-GUID order. One record per block of the table (its
    /// PartitionCap / 32 blocks for a CA port and switch port 0, the entries the model holds for
    /// other switch ports), or the BlockNum given; entries past the table read 0. The LID is
    /// switch port 0's for a switch's ports.
    pub(super) fn pkey_table_record(
        &mut self,
        now: Instant,
        req: &Req<'_>,
        q: PKeyTableRecordRepr,
    ) {
        if !self.get_or_table(req) {
            return;
        }
        let mask = req.mad.sa.component_mask;
        if req.mad.sa.sm_key != self.cfg().sm_key {
            return self.respond_sa_error(req, SaStatus::ReqInvalid);
        }
        let model = self.model();
        let mut all = model.phys_ports();
        all.sort_by_key(|p| (p.guid, p.num));
        let node = (mask & pkr_mask::LID != 0).then(|| {
            all.iter()
                .find(|p| p.lid == q.lid && q.lid != 0)
                .map(|p| (p.node_guid, p.at))
        });
        let mut recs = Vec::new();
        if node != Some(None) {
            for p in &all {
                if let Some(Some((guid, at))) = node {
                    // A CA answers for the port with the LID; a switch for its ports.
                    let mine = match at {
                        At::Ca(_) => p.at == at,
                        At::Switch(_) => p.node_guid == guid,
                    };
                    if !mine {
                        continue;
                    }
                }
                let is_switch = matches!(p.at, At::Switch(_));
                if is_switch && mask & pkr_mask::PORT_NUM != 0 && p.num != q.port_num {
                    continue;
                }
                if !self.visible(req, p) {
                    continue;
                }
                let cap = match p.at {
                    At::Ca(i) => usize::from(model.ports[i].node.partition_cap),
                    At::Switch(s) if p.num == 0 => {
                        usize::from(model.switches[s].node.partition_cap)
                    }
                    At::Switch(_) => p.pkeys.len(),
                };
                let blocks = cap.max(p.pkeys.len()).div_ceil(PKEY_BLOCK_ENTRIES);
                for b in 0..blocks {
                    let block = u16::try_from(b).unwrap_or(u16::MAX);
                    if mask & pkr_mask::BLOCK != 0 && block != q.block {
                        continue;
                    }
                    let mut pkeys = [PKey(0); PKEY_BLOCK_ENTRIES];
                    for (k, e) in p.pkeys.iter().skip(b * PKEY_BLOCK_ENTRIES).zip(&mut pkeys) {
                        *e = *k;
                    }
                    recs.push(SaAttribute::PKeyTableRecord(PKeyTableRecordRepr {
                        lid: p.lid,
                        block,
                        port_num: p.num,
                        pkeys,
                    }));
                }
            }
        }
        self.respond_records(now, req, recs);
    }

    /// LinearForwardingTableRecord (OpenSM `osm_lftr_rcv_process`): for every switch in GUID order
    /// whose port 0 the requester sees, the blocks of its LFT in use (0 up to the block of the
    /// highest LID the table routes), or the BlockNum given if in use; LID selects the switch by
    /// any LID of port 0's range. Entries past the table read 255 (no route).
    pub(super) fn lft_record(&mut self, now: Instant, req: &Req<'_>, q: LftRecordRepr) {
        if !self.get_or_table(req) {
            return;
        }
        let mask = req.mad.sa.component_mask;
        let model = self.model();
        let mut recs = Vec::new();
        for p in model.phys_ports() {
            let At::Switch(s) = p.at else { continue };
            if p.num != 0 || !self.visible(req, &p) {
                continue;
            }
            if mask & lftr_mask::LID != 0 && !lid_in(p.lid, p.lmc, q.lid) {
                continue;
            }
            let lft = &model.switches[s].lft;
            let top = lft.iter().rposition(|&o| o != 255).unwrap_or(0);
            let max_block = top / LFT_BLOCK_LIDS;
            let blocks = if mask & lftr_mask::BLOCK != 0 {
                let b = usize::from(q.block);
                if b > max_block {
                    continue;
                }
                b..=b
            } else {
                0..=max_block
            };
            for b in blocks {
                let mut ports = [255u8; LFT_BLOCK_LIDS];
                for (o, &e) in ports.iter_mut().zip(lft.iter().skip(b * LFT_BLOCK_LIDS)) {
                    *o = e;
                }
                recs.push(SaAttribute::LftRecord(LftRecordRepr {
                    lid: p.lid,
                    block: u16::try_from(b).unwrap_or(u16::MAX),
                    ports,
                }));
            }
        }
        self.respond_records(now, req, recs);
    }

    /// GUIDInfoRecord Get and GetTable (OpenSM `osm_gir_rcv_process`): for every visible CA port
    /// and switch port 0, in node-GUID order, GUIDCap / 8 blocks (rounded up; [`NodeFacts`]
    /// `guid_cap`), as the port's GUID table holds them: the port GUID first, then its alias
    /// GUIDs (`alias_guids.rs`), zero where it has none; LID selects by the port's LID range,
    /// BlockNum the block, GUID n the block's n-th GUID. Set and Delete: `alias_guids.rs`.
    ///
    /// [`NodeFacts`]: crate::subnet::NodeFacts
    pub(super) fn guid_info_record(&mut self, now: Instant, req: &Req<'_>, q: GuidInfoRecordRepr) {
        if matches!(req.mad.header.method, Method::Set | Method::Delete) {
            return self.guid_info_modify(req, q);
        }
        if !matches!(req.mad.header.method, Method::Get | Method::GetTable) {
            return self.respond_error(req.raw, &req.from, MadStatus::METHOD_ATTR_UNSUPPORTED);
        }
        let mask = req.mad.sa.component_mask;
        let model = self.model();
        let mut recs = Vec::new();
        for p in model.phys_ports() {
            let facts = match p.at {
                At::Switch(_) if p.num != 0 => continue,
                At::Switch(s) => model.switches[s].node,
                At::Ca(i) => model.ports[i].node,
            };
            if mask & gir_mask::LID != 0 && !lid_in(p.lid, p.lmc, q.lid) {
                continue;
            }
            if !self.visible(req, &p) {
                continue;
            }
            let blocks = usize::from(facts.guid_cap).div_ceil(GUID_BLOCK_ENTRIES);
            for b in 0..blocks {
                let block = u8::try_from(b).unwrap_or(u8::MAX);
                if mask & gir_mask::BLOCK != 0 && q.block != block {
                    continue;
                }
                let guids = self.aliases.block(p.guid, block);
                let same = (0..GUID_BLOCK_ENTRIES)
                    .all(|n| mask & (gir_mask::GUID0 << n) == 0 || guids[n] == q.guids[n]);
                if same {
                    recs.push(SaAttribute::GuidInfoRecord(GuidInfoRecordRepr {
                        lid: p.lid,
                        block,
                        guids,
                    }));
                }
            }
        }
        self.respond_records(now, req, recs);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // OpenSM `osm_physp_share_pkey`.
    #[test]
    fn pkey_sharing() {
        let full = [PKey(0xffff)];
        let limited = [PKey(0x7fff)];
        let other = [PKey(0x8123)];
        assert!(share_pkey(&full, &limited, false));
        assert!(!share_pkey(&limited, &limited, false));
        assert!(share_pkey(&limited, &limited, true));
        assert!(!share_pkey(&full, &other, false));
        assert!(share_pkey(&[], &other, false));
    }

    #[test]
    fn descriptions_compare_as_strncmp() {
        let a = node_description("Hca1");
        let mut b = a;
        b[10] = b'x'; // after the NUL
        assert!(same_description(&a, &b));
        assert!(!same_description(&a, &node_description("Hca2")));
        assert!(!same_description(&a, &node_description("Hca")));
        assert!(same_description(&[b'z'; 64], &[b'z'; 64]));
    }

    #[test]
    fn lid_ranges() {
        assert!(lid_in(4, 2, 7));
        assert!(!lid_in(4, 2, 8));
        assert!(!lid_in(0, 0, 0));
    }
}

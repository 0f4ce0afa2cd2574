//! The subnet administrator (IBA 1 §15), reached only through SA MADs. It answers from a
//! [`SubnetModel`] (set by the SM with [`SaServer::set_subnet`]) and the partitions; it owns the
//! multicast groups and tells the SM about them through [`SaServer::poll_event`].
//!
//! Invariants: every request from a known port gets exactly one response (or one RMPP transfer),
//! with the status OpenSM gives; a request from a LID the model does not know (but a
//! ServiceRecord Set or Delete: ERR_REQ_INVALID), or carrying an SM_Key neither 0 nor the SA's,
//! or a method, attribute or Set/Delete OpenSM does not serve, is dropped and counted, as OpenSM
//! drops it (docs/OPENSM-LIMITS.md); the open RMPP transfers stay within
//! [`SaServerConfig::max_rmpp_transfers`] and [`SaServerConfig::max_rmpp_bytes`], the
//! InformInfo subscriptions within [`MAX_INFORMS`]; nothing here
//! panics on MAD data; output order depends only on the inputs and the seed.

mod alias_guids;
mod class_port_info;
mod gone;
mod inform;
mod mcast;
mod multipath;
mod path;
mod qos_records;
mod records;
mod respond;
mod services;
mod sm_records;
mod switch_records;

use super::rmpp::{abort_for, segment_table, RmppSender, SendState};
use super::{SaEvent, DEFAULT_SUBNET_TIMEOUT};
use crate::mad_agent::{MadAddr, MadAgent, MadIn, MadOut};
use crate::partitions::PartitionConfig;
use crate::rng::Rng;
use crate::subnet::{CaPort, Peer, SubnetModel};
use crate::time::Instant;
use ipoib_wire::ib::lid::LID_MULTICAST_LAST;
use ipoib_wire::mad::attr::sa as attr;
use ipoib_wire::mad::{
    ClassPortInfoRepr, MadHeaderRepr, MadStatus, Method, MgmtClass, RmppRepr, RmppType, SaStatus,
    BASE_VERSION, MAD_LEN, SA_CLASS_VERSION,
};
use ipoib_wire::sa::{
    attribute_offset_for, emit_records, record_len, JoinState, SaAttribute, SaHeaderRepr, SaMadRepr,
};
use ipoib_wire::{Gid, Guid, QKey};
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::time::Duration;

pub use inform::MAX_INFORMS;
pub use mcast::McastGroupInfo;
pub use services::MAX_SERVICES;

/// Tunables, with OpenSM's defaults.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SaServerConfig {
    /// SM_Key (OpenSM `sm_key`/`sa_key`, default 1). A request carrying another non-zero SM_Key is
    /// discarded unanswered, as OpenSM does; one carrying this key is trusted (full
    /// MCMemberRecord queries, ServiceKey shown).
    pub sm_key: u64,
    /// Subnet timeout code (OpenSM `subnet_timeout`, 18): PacketLifeTime of non-loopback paths.
    pub subnet_timeout: u8,
    /// Highest MLID to allocate (OpenSM limits it by the switches' MulticastFDBCap).
    pub max_mlid: u16,
    /// OpenSM `mcgroup_join_validation` (default TRUE): a join must match the group's Q_Key,
    /// P_Key, TClass, SL, FlowLabel and HopLimit where the component mask gives them.
    pub join_validation: bool,
    /// OpenSM `ipoib_mcgroup_creation_validation` (default TRUE): an IPoIB group other than the
    /// broadcast group may only be created when the broadcast group of its P_Key and scope exists,
    /// with matching parameters.
    pub ipoib_creation_validation: bool,
    /// Time to wait for a ReportResp (OpenSM `transaction_timeout`, 200 ms).
    pub report_timeout: Duration,
    /// Sends of a Report before giving up (OpenSM `transaction_retries` 3, plus the first).
    pub report_tries: u8,
    /// Time to wait for an RMPP ACK before resending the window.
    pub rmpp_timeout: Duration,
    /// Tries of an RMPP window before the transfer is abandoned.
    pub rmpp_tries: u8,
    /// QoS enabled (OpenSM `qos`): without it paths and groups use SL 0 unless asked otherwise.
    pub qos: bool,
    /// Time the SA takes to process a request: what a request makes the SA send (response, RMPP
    /// segments, Reports) leaves [`MadAgent::poll_transmit`] only `processing_delay` after the
    /// request was received, in order. Requests are pipelined (each waits its own delay, not
    /// the previous one's): OpenSM on ibsim answers about one join per 10 µs when many are in
    /// flight (docs/benchmarks/subnet.md). Zero (the default): at once.
    pub processing_delay: Duration,
    /// Most RMPP transfers open at once (each holds its whole table until acknowledged or
    /// abandoned). A GetTable that would open one more is answered ERR_NO_RESOURCES, as OpenSM's
    /// `osm_sa_respond` answers when it cannot get the response's buffer (docs/OPENSM-LIMITS.md).
    pub max_rmpp_transfers: usize,
    /// Most bytes of segments the open RMPP transfers may hold together; past it, likewise
    /// ERR_NO_RESOURCES.
    pub max_rmpp_bytes: usize,
}

impl Default for SaServerConfig {
    fn default() -> Self {
        SaServerConfig {
            sm_key: 1,
            subnet_timeout: DEFAULT_SUBNET_TIMEOUT,
            max_mlid: LID_MULTICAST_LAST,
            join_validation: true,
            ipoib_creation_validation: true,
            report_timeout: Duration::from_millis(200),
            report_tries: 4,
            rmpp_timeout: Duration::from_millis(200),
            rmpp_tries: 5,
            qos: false,
            processing_delay: Duration::ZERO,
            max_rmpp_transfers: 256,
            max_rmpp_bytes: 32 << 20,
        }
    }
}

/// ClassPortInfo.CapabilityMask: IsNoticeSupported (bit 1), IsUDMulticastSupported (bit 9),
/// IsMultiPathSupported (bit 10: MultiPathRecord GetMulti, `multipath.rs`),
/// IsPortInfoCapMaskMatchSupported (bit 13: PortInfoRecord queries match CapabilityMask bitwise
/// when AttributeModifier bit 31 is set) (OpenSM `OSM_CAP_IS_SUBN_GET_SET_NOTICE_SUP`,
/// `OSM_CAP_IS_UD_MCAST_SUP`, `OSM_CAP_IS_MULTIPATH_SUP`,
/// `OSM_CAP_IS_PORT_INFO_CAPMASK_MATCH_SUPPORTED`): 0x2602, exactly OpenSM's. Neither claims
/// IsTrapSupported (bit 0): the SA sends Reports, not Traps (OpenSM `osm_sa_class_port_info.c`
/// "So not sending traps", docs/OPENSM-NOTES.md "ClassPortInfo (SA)").
pub const CAP_MASK: u16 = (1 << 1) | (1 << 9) | (1 << 10) | (1 << 13);
/// ClassPortInfo.CapabilityMask2: IsSendOnlyFullMemberSupported (bit 12; OpenSM
/// `OSM_CAP2_IS_SEND_ONLY_FULL_MEM_SUPPORTED`, Linux `IB_SA_CAP_MASK2_SENDONLY_FULL_MEM_SUPPORT`).
pub const CAP_MASK2: u32 = 1 << 12;

/// ClassPortInfo.RespTimeValue as OpenSM computes it from its transaction timeout
/// (osm_sa_class_port_info.c: the first entry of `msecs_to_rtv_table` not below the timeout, plus
/// 8; 200 ms gives 16, i.e. 4.096 µs × 2^16 ≈ 268 ms).
pub fn resp_time_value(transaction_timeout: Duration) -> u8 {
    const MSECS_TO_RTV: [u128; 12] = [1, 2, 4, 8, 16, 33, 67, 134, 268, 536, 1073, 2147];
    let ms = transaction_timeout.as_millis();
    let i = MSECS_TO_RTV
        .iter()
        .position(|&t| ms <= t)
        .unwrap_or(MSECS_TO_RTV.len() - 1);
    i as u8 + 8
}

/// Counters.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SaStats {
    /// Requests from known ports, answered (errors included) or dropped past that check (a wrong
    /// SM_Key, an unsupported method or attribute: also in `dropped`).
    pub requests: u64,
    /// MADs dropped, by reason.
    pub dropped: BTreeMap<&'static str, u64>,
    /// Reports sent (first sends and resends).
    pub reports_sent: u64,
    /// Reports given up on (no ReportResp).
    pub reports_lost: u64,
    /// Reports not sent to a matching subscriber that may not reach the trap's source (IBA 1
    /// o13-17.1.1: its port is not the subnet's, lacks the group's P_Key, or shares none with
    /// the port the trap names).
    pub reports_refused: u64,
    /// RMPP transfers started / completed / failed.
    pub rmpp_started: u64,
    /// RMPP transfers completed.
    pub rmpp_done: u64,
    /// RMPP transfers abandoned.
    pub rmpp_failed: u64,
    /// GetTables answered ERR_NO_RESOURCES because their transfer would have passed
    /// [`SaServerConfig::max_rmpp_transfers`] or [`SaServerConfig::max_rmpp_bytes`].
    pub rmpp_refused: u64,
    /// Group creations refused with ERR_NO_RESOURCES because every MLID up to
    /// [`SaServerConfig::max_mlid`] was in use (OpenSM `get_new_mlid` failing).
    pub no_mlid: u64,
    /// New InformInfo subscriptions refused with ERR_NO_RESOURCES past [`MAX_INFORMS`].
    pub informs_refused: u64,
    /// New ServiceRecords refused with ERR_NO_RESOURCES past [`MAX_SERVICES`].
    pub services_refused: u64,
}

/// The attributes this SA serves: OpenSM 3.3.23's (osm_sa_mad_ctrl.c `sa_mad_ctrl_process`).
const SERVED: [u16; 18] = [
    attr::CLASS_PORT_INFO,
    attr::NODE_RECORD,
    attr::PORT_INFO_RECORD,
    attr::LINK_RECORD,
    attr::SM_INFO_RECORD,
    attr::SERVICE_RECORD,
    attr::PATH_RECORD,
    attr::MC_MEMBER_RECORD,
    attr::INFORM_INFO,
    attr::VL_ARBITRATION_TABLE_RECORD,
    attr::SL_TO_VL_MAPPING_TABLE_RECORD,
    attr::P_KEY_TABLE_RECORD,
    attr::LINEAR_FORWARDING_TABLE_RECORD,
    attr::GUID_INFO_RECORD,
    attr::INFORM_INFO_RECORD,
    attr::SWITCH_INFO_RECORD,
    attr::MULTICAST_FORWARDING_TABLE_RECORD,
    attr::MULTI_PATH_RECORD,
];

/// The attributes OpenSM 3.3.23 has a Set/Delete handler for (its dispatcher of Set and Delete
/// requests knows only these; measured by runtime test `opensm_sa_edges`).
const SETTABLE: [u16; 4] = [
    attr::MC_MEMBER_RECORD,
    attr::SERVICE_RECORD,
    attr::INFORM_INFO,
    attr::GUID_INFO_RECORD,
];

/// The subnet administrator.
#[derive(Debug)]
pub struct SaServer {
    cfg: SaServerConfig,
    model: SubnetModel,
    /// Base LID -> port index (ports with LID 0 left out).
    by_lid: BTreeMap<u16, usize>,
    /// Port GUID -> port index.
    by_guid: BTreeMap<u64, usize>,
    /// The switches' management ports 0 as end ports of PathRecords, after the CA ports (end
    /// port `model.ports.len() + k` is switch `k`'s; [`Self::endport`]).
    switch_endports: Vec<CaPort>,
    partitions: PartitionConfig,
    rng: Rng,
    mc: mcast::Groups,
    informs: inform::Informs,
    services: services::Services,
    transfers: BTreeMap<(u16, u64), RmppSender>,
    /// MADs to send with their release time, in send order (released head first, so a MAD never
    /// overtakes an earlier one).
    out: VecDeque<(Instant, MadOut)>,
    /// Release time of what is queued now: the time of the request being handled plus
    /// `processing_delay` inside `handle_mad`, the current time inside `handle_timeout`.
    release_at: Instant,
    events: VecDeque<SaEvent>,
    /// Groups whose membership changed since their last `McastGroup` event: one event per group
    /// however many joins came in between (10,000 hosts joining the broadcast group make one event
    /// per poll, not 10,000 growing lists).
    dirty: BTreeSet<Gid>,
    /// Alias GUIDs of GUIDInfoRecord Set (`alias_guids.rs`).
    aliases: alias_guids::AliasGuids,
    stats: SaStats,
}

/// A request being handled: its parsed form, raw bytes and sender.
pub(super) struct Req<'a> {
    pub mad: SaMadRepr,
    pub raw: &'a [u8],
    pub from: MadAddr,
    /// Index of the requesting port in the model.
    pub port: usize,
}

impl SaServer {
    /// An SA serving `model` with `partitions` (pre-creating their groups), randomness from `rng`.
    pub fn new(
        cfg: SaServerConfig,
        model: SubnetModel,
        partitions: PartitionConfig,
        rng: Rng,
    ) -> SaServer {
        let mut s = SaServer {
            cfg,
            model: SubnetModel::default(),
            by_lid: BTreeMap::new(),
            by_guid: BTreeMap::new(),
            switch_endports: Vec::new(),
            partitions: PartitionConfig {
                partitions: Vec::new(),
                warnings: Vec::new(),
            },
            rng,
            mc: mcast::Groups::default(),
            informs: inform::Informs::default(),
            services: services::Services::default(),
            transfers: BTreeMap::new(),
            out: VecDeque::new(),
            release_at: Instant::ZERO,
            events: VecDeque::new(),
            dirty: BTreeSet::new(),
            aliases: alias_guids::AliasGuids::default(),
            stats: SaStats::default(),
        };
        s.informs.next_tid = s.rng.next_u32().into();
        s.set_subnet(model);
        s.set_partitions(partitions);
        s
    }

    /// Replaces the subnet model (after a sweep). Groups and subscriptions stay.
    pub fn set_subnet(&mut self, model: SubnetModel) {
        self.by_lid = model
            .ports
            .iter()
            .enumerate()
            .filter(|(_, p)| p.lid != 0)
            .map(|(i, p)| (p.lid, i))
            .collect();
        self.by_guid = model
            .ports
            .iter()
            .enumerate()
            .map(|(i, p)| (p.port_guid.0, i))
            .collect();
        self.switch_endports = model
            .switches
            .iter()
            .map(|sw| {
                let p0 = sw.ports.first().copied().unwrap_or_default();
                CaPort {
                    node_guid: sw.guid,
                    port_guid: sw.guid,
                    port_num: 0,
                    lid: sw.lid,
                    lmc: 0,
                    mtu: p0.mtu,
                    rate: p0.rate,
                    pkeys: model.switch_port_pkeys(sw, 0),
                    active: sw.lid != 0,
                    peer: Peer::None,
                    name: sw.name.clone(),
                    node: sw.node,
                }
            })
            .collect();
        // A port the sweep no longer finds loses its alias GUIDs (`alias_guids.rs`).
        let gone: Vec<Guid> = self
            .aliases
            .ports()
            .filter(|g| {
                !self.by_guid.contains_key(&g.0)
                    && !self.switch_endports.iter().any(|s| s.port_guid == *g)
            })
            .collect();
        for g in gone {
            self.aliases.forget(g);
        }
        self.model = model;
    }

    /// End port `i` for PathRecords: CA port `i`, or past them a switch's management port 0
    /// (IBA 1 §15.2.5.16: paths between end ports; a switch's port 0 is one, with its LID and
    /// GID). A CA port's index is the same as in [`Self::port`].
    pub(super) fn endport(&self, i: usize) -> Option<&CaPort> {
        match i.checked_sub(self.model.ports.len()) {
            None => self.model.ports.get(i),
            Some(k) => self.switch_endports.get(k),
        }
    }

    /// How many end ports [`Self::endport`] numbers.
    pub(super) fn endport_count(&self) -> usize {
        self.model.ports.len() + self.switch_endports.len()
    }

    /// The end port answering `lid`: a CA port's LID range or a switch's LID.
    pub(super) fn endport_index_by_lid(&self, lid: u16) -> Option<usize> {
        self.port_index_by_lid(lid).or_else(|| {
            let k = self
                .switch_endports
                .iter()
                .position(|p| p.lid != 0 && p.lid == lid)?;
            Some(self.model.ports.len() + k)
        })
    }

    /// The end port with this port GUID.
    pub(super) fn endport_index_by_guid(&self, guid: u64) -> Option<usize> {
        self.port_index_by_guid(guid).or_else(|| {
            let k = self
                .switch_endports
                .iter()
                .position(|p| p.lid != 0 && p.port_guid.0 == guid)?;
            Some(self.model.ports.len() + k)
        })
    }

    /// The port answering `lid` (base LID to base LID + 2^LMC - 1), in O(log n).
    pub(super) fn port_index_by_lid(&self, lid: u16) -> Option<usize> {
        let (_, &i) = self.by_lid.range(..=lid).next_back()?;
        let p = self.model.ports.get(i)?;
        (u32::from(lid) < u32::from(p.lid) + (1u32 << p.lmc.min(16))).then_some(i)
    }

    /// The port with this GUID.
    pub(super) fn port_index_by_guid(&self, guid: u64) -> Option<usize> {
        self.by_guid.get(&guid).copied()
    }

    /// The port with this GID (subnet prefix checked).
    pub(super) fn port_index_by_gid(&self, gid: &Gid) -> Option<usize> {
        if gid.subnet_prefix() != self.model.subnet_prefix {
            return None;
        }
        self.port_index_by_guid(gid.interface_id())
    }

    /// The subnet model in use.
    pub fn subnet(&self) -> &SubnetModel {
        &self.model
    }

    /// Replaces the partitions and pre-creates their groups (existing groups stay).
    pub fn set_partitions(&mut self, partitions: PartitionConfig) {
        for g in partitions.precreated_groups() {
            self.precreate(&g);
        }
        self.partitions = partitions;
    }

    /// The partitions in use.
    pub fn partitions(&self) -> &PartitionConfig {
        &self.partitions
    }

    /// The next event for the subnet manager. Membership changes are coalesced: a group whose
    /// members changed yields one `McastGroup` with the current list, after the queued
    /// `GroupCreated`/`GroupDeleted` events.
    pub fn poll_event(&mut self) -> Option<SaEvent> {
        if let Some(e) = self.events.pop_front() {
            return Some(e);
        }
        while let Some(mgid) = self.dirty.pop_first() {
            if let Some(e) = self.mc.membership(&mgid) {
                return Some(e);
            }
        }
        None
    }

    /// Like [`SaServer::poll_event`], but leaves out membership changes of groups with more than
    /// `max_members` members (they stay pending for `poll_event`): lets the subnet manager update
    /// small groups at once while it coalesces the big ones.
    pub fn poll_small_event(&mut self, max_members: usize) -> Option<SaEvent> {
        if let Some(e) = self.events.pop_front() {
            return Some(e);
        }
        let small = self.dirty.iter().copied().find(|g| {
            self.mc
                .by_mgid
                .get(g)
                .is_none_or(|x| x.members.len() <= max_members)
        })?;
        self.dirty.remove(&small);
        self.mc
            .membership(&small)
            .or_else(|| self.poll_small_event(max_members))
    }

    /// True when [`SaServer::poll_event`] has something, without building the event: lets the
    /// subnet manager leave membership changes to coalesce until it recomputes its trees (a
    /// `McastGroup` event carries the whole member list, so polling after every join of 10,000
    /// would copy 50 million members).
    pub fn has_events(&self) -> bool {
        !self.events.is_empty() || !self.dirty.is_empty()
    }

    /// True when [`SaServer::poll_small_event`] with `max_members` has something (the subnet
    /// manager, coalescing a big group's changes, looks before it polls).
    pub fn has_small_events(&self, max_members: usize) -> bool {
        !self.events.is_empty()
            || self.dirty.iter().any(|g| {
                self.mc
                    .by_mgid
                    .get(g)
                    .is_none_or(|x| x.members.len() <= max_members)
            })
    }

    pub(super) fn mark_dirty(&mut self, mgid: Gid) {
        self.dirty.insert(mgid);
    }

    /// Emits the pending membership of `mgid` now (before it is deleted).
    pub(super) fn flush_dirty(&mut self, mgid: &Gid) {
        self.dirty.remove(mgid);
        if let Some(e) = self.mc.membership(mgid) {
            self.events.push_back(e);
        }
    }

    /// Counters.
    pub fn stats(&self) -> &SaStats {
        &self.stats
    }

    /// Every multicast group, in MGID order.
    pub fn groups(&self) -> Vec<McastGroupInfo> {
        self.mc.infos()
    }

    /// The MGID of every multicast group, in MGID order (no member list is copied, unlike
    /// [`SaServer::groups`]).
    pub fn group_mgids(&self) -> impl Iterator<Item = &Gid> + '_ {
        self.mc.by_mgid.keys()
    }

    /// The JoinState the SA records for the port `port_gid` in the group `mgid`; `None` when
    /// there is no such group or the port is not a member. This is the SA's own member record,
    /// what a join's success must be checked against.
    pub fn member_join_state(&self, mgid: &Gid, port_gid: &Gid) -> Option<JoinState> {
        let m = self.mc.by_mgid.get(mgid)?.members.get(port_gid)?;
        Some(m.join_state)
    }

    fn drop_mad(&mut self, reason: &'static str) {
        *self.stats.dropped.entry(reason).or_insert(0) += 1;
    }

    pub(super) fn sm_gid(&self) -> Gid {
        self.port_index_by_lid(self.model.sm_lid)
            .and_then(|i| self.model.ports.get(i))
            .map(|p| self.model.gid(p))
            .unwrap_or(Gid::ZERO)
    }

    pub(super) fn port(&self, i: usize) -> Option<&CaPort> {
        self.model.ports.get(i)
    }

    fn handle_request(&mut self, now: Instant, from: MadAddr, raw: &[u8], h: MadHeaderRepr) {
        if h.base_version != BASE_VERSION || h.class_version != SA_CLASS_VERSION {
            self.stats.requests += 1;
            return self.respond_error(raw, &from, MadStatus::BAD_VERSION);
        }
        let Ok(mad) = SaMadRepr::parse(raw) else {
            return self.drop_mad("unparsable SA MAD");
        };
        let Some(port) = self.port_index_by_lid(from.lid) else {
            // OpenSM: "Cannot find requester physical port" - no response; but a ServiceRecord
            // Set or Delete from a LID no end port has, past the SM_Key check, is
            // ERR_REQ_INVALID (validate_sr, "ERR 2404"). (A switch's LID: dropped like every
            // request from a switch here.)
            let key_ok = mad.sa.sm_key == 0 || mad.sa.sm_key == self.cfg.sm_key;
            if h.attribute_id == attr::SERVICE_RECORD
                && matches!(h.method, Method::Set | Method::Delete)
                && key_ok
                && self.endport_index_by_lid(from.lid).is_none()
            {
                self.stats.requests += 1;
                return self.respond_error(raw, &from, MadStatus::sa(SaStatus::ReqInvalid));
            }
            return self.drop_mad("requester LID unknown");
        };
        self.stats.requests += 1;
        // C15-0.1.5; OpenSM 3.3.23 osm_sa_mad_ctrl.c "ERR 1A04 ... SA MAD ignored": discarded,
        // no answer.
        if mad.sa.sm_key != 0 && mad.sa.sm_key != self.cfg.sm_key {
            return self.drop_mad("SM_Key neither 0 nor the SA's");
        }
        let req = Req {
            mad,
            raw,
            from,
            port,
        };
        // OpenSM 3.3.23's gates before any handler (measured by runtime test
        // `opensm_sa_edges`; docs/OPENSM-LIMITS.md): a method it does not take (osm_sa_mad_ctrl.c
        // "ERR 1A05: Unsupported method") or an attribute it does not serve ("ERR 1A01") is
        // dropped unanswered; so is a Set or Delete of an attribute with no Set/Delete handler
        // ("ERR 1A02: Dispatcher post message failed (CL_NOT_FOUND)"). IBA 1 §13.4.7 gives the
        // statuses an answer would carry but asks no answer here of a class manager; on hardware
        // the kernel does not even hand OpenSM a method it did not register.
        let known_method = matches!(
            h.method,
            Method::Get | Method::Set | Method::GetTable | Method::Delete | Method::GetMulti
        );
        if !known_method {
            return self.drop_mad("method unsupported");
        }
        if !SERVED.contains(&h.attribute_id) {
            return self.drop_mad("attribute unsupported");
        }
        if matches!(h.method, Method::Set | Method::Delete) && !SETTABLE.contains(&h.attribute_id) {
            return self.drop_mad("Set or Delete of a read-only record");
        }
        // MultiPathRecord checks RMPP before the method (`multipath.rs`).
        if h.attribute_id == attr::MULTI_PATH_RECORD {
            return self.multipath_record(now, &req);
        }
        // GetMulti (OpenSM is built with DUAL_SIDED_RMPP and takes it) reaches the attribute's
        // handler, which refuses it: METHOD_ATTR_UNSUPPORTED ("ERR xx05: Unsupported Method"),
        // ClassPortInfo ERR_REQ_INVALID ("ERR 1403").
        if h.method == Method::GetMulti {
            let status = match h.attribute_id {
                attr::CLASS_PORT_INFO => MadStatus::sa(SaStatus::ReqInvalid),
                _ => MadStatus::METHOD_ATTR_UNSUPPORTED,
            };
            return self.respond_error(raw, &from, status);
        }
        match (h.attribute_id, &req.mad.attribute) {
            (attr::CLASS_PORT_INFO, _) => self.class_port_info(&req),
            (attr::MC_MEMBER_RECORD, SaAttribute::McMemberRecord(r)) => {
                let r = *r;
                self.mcmember(now, &req, r)
            }
            (attr::PATH_RECORD, SaAttribute::PathRecord(r)) => {
                let r = *r;
                self.path_record(now, &req, r)
            }
            (attr::NODE_RECORD, SaAttribute::NodeRecord(r)) => {
                let r = *r;
                self.node_record(now, &req, r)
            }
            (attr::PORT_INFO_RECORD, SaAttribute::PortInfoRecord(r)) => {
                let r = *r;
                self.port_info_record(now, &req, r)
            }
            (attr::LINK_RECORD, SaAttribute::LinkRecord(r)) => {
                let r = *r;
                self.link_record(now, &req, r)
            }
            (attr::P_KEY_TABLE_RECORD, SaAttribute::PKeyTableRecord(r)) => {
                let r = *r;
                self.pkey_table_record(now, &req, r)
            }
            (attr::LINEAR_FORWARDING_TABLE_RECORD, SaAttribute::LftRecord(r)) => {
                let r = *r;
                self.lft_record(now, &req, r)
            }
            (attr::GUID_INFO_RECORD, SaAttribute::GuidInfoRecord(r)) => {
                let r = *r;
                self.guid_info_record(now, &req, r)
            }
            (attr::SM_INFO_RECORD, SaAttribute::SmInfoRecord(r)) => {
                let r = *r;
                self.sm_info_record(now, &req, r)
            }
            (attr::INFORM_INFO_RECORD, SaAttribute::InformInfoRecord(r)) => {
                let r = *r;
                self.inform_info_record(now, &req, r)
            }
            (attr::SL_TO_VL_MAPPING_TABLE_RECORD, SaAttribute::SlToVlRecord(r)) => {
                let r = *r;
                self.sl_to_vl_record(now, &req, r)
            }
            (attr::VL_ARBITRATION_TABLE_RECORD, SaAttribute::VlArbRecord(r)) => {
                let r = *r;
                self.vl_arb_record(now, &req, r)
            }
            (attr::SWITCH_INFO_RECORD, SaAttribute::SwitchInfoRecord(r)) => {
                let r = *r;
                self.switch_info_record(now, &req, r)
            }
            (attr::SERVICE_RECORD, SaAttribute::ServiceRecord(r)) => {
                let r = *r;
                self.service_record(now, &req, r)
            }
            (attr::MULTICAST_FORWARDING_TABLE_RECORD, SaAttribute::MftRecord(r)) => {
                let r = *r;
                self.mft_record(now, &req, r)
            }
            (attr::INFORM_INFO, SaAttribute::InformInfo(r)) => {
                let r = *r;
                self.inform_info(&req, r)
            }
            _ => self.drop_mad("attribute unsupported"),
        }
    }

    pub(super) fn push_event(&mut self, e: SaEvent) {
        self.events.push_back(e);
    }

    /// Queues `m` for release at the current release time (see `release_at`).
    pub(super) fn push_out(&mut self, m: MadOut) {
        self.out.push_back((self.release_at, m));
    }

    pub(super) fn cfg(&self) -> &SaServerConfig {
        &self.cfg
    }

    pub(super) fn model(&self) -> &SubnetModel {
        &self.model
    }

    pub(super) fn stats_mut(&mut self) -> &mut SaStats {
        &mut self.stats
    }
}

impl MadAgent for SaServer {
    fn handle_mad(&mut self, now: Instant, m: MadIn) {
        self.release_at = now.saturating_add(self.cfg.processing_delay);
        let raw = m.mad.as_slice();
        let Ok(h) = MadHeaderRepr::parse_bytes(raw) else {
            return self.drop_mad("short MAD");
        };
        if raw.len() < MAD_LEN {
            return self.drop_mad("short MAD");
        }
        if h.mgmt_class != MgmtClass::SubnAdm {
            return self.drop_mad("not SubnAdm");
        }
        if h.method == Method::ReportResp {
            return self.report_resp(h.transaction_id);
        }
        if h.method.is_response() {
            return self.drop_mad("unexpected response");
        }
        let rmpp = ipoib_wire::mad::Rmpp::new_unchecked(&raw[24..36]);
        if let Ok(r) = RmppRepr::parse(&rmpp) {
            if r.is_active() && r.rmpp_type != RmppType::Data {
                return self.rmpp_control(now, &m.from, &h, &r, raw);
            }
        }
        self.handle_request(now, m.from, raw, h);
    }

    fn poll_transmit(&mut self, now: Instant) -> Option<MadOut> {
        if self.out.front().is_some_and(|(t, _)| *t <= now) {
            self.out.pop_front().map(|(_, m)| m)
        } else {
            None
        }
    }

    fn poll_timeout(&self) -> Option<Instant> {
        let t = self.transfers.values().map(|t| t.deadline());
        let r = self.informs.next_deadline();
        let o = self.out.front().map(|(t, _)| *t);
        t.chain(r).chain(o).min()
    }

    fn handle_timeout(&mut self, now: Instant) {
        self.release_at = now;
        let keys: Vec<(u16, u64)> = self
            .transfers
            .iter()
            .filter(|(_, t)| t.deadline() <= now)
            .map(|(k, _)| *k)
            .collect();
        for k in keys {
            let Some(tx) = self.transfers.get_mut(&k) else {
                continue;
            };
            match tx.on_timeout(now) {
                SendState::Active => self.send_window(k, now),
                _ => {
                    self.transfers.remove(&k);
                    self.stats.rmpp_failed += 1;
                }
            }
        }
        self.report_timeouts(now);
        self.services.expire(now);
    }
}

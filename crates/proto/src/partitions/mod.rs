//! Partitions as OpenSM configures them from `partitions.conf` (OpenSM `opensm(8)` "PARTITION
//! CONFIGURATION", `osm_prtn_config.c`, `osm_prtn.c`): the parser ([`parse`]), the configuration
//! used when no file is given ([`PartitionConfig::default_config`]), the P_Key table a port gets
//! ([`PartitionConfig::pkey_table`]) and the multicast groups the SA pre-creates
//! ([`PartitionConfig::precreated_groups`]).
//!
//! Invariants: parsing never panics, whatever the input (a proptest checks it); every error names
//! its line and column; every partition in a parsed configuration has a distinct P_Key (definitions
//! with the same P_Key are merged, as OpenSM merges them); the default partition 0x7fff always
//! exists (OpenSM creates it unconditionally).

mod parse;
#[cfg(test)]
mod tests;

pub use parse::{parse, parse_with, ParseError, ParseOptions, Warning};

use ipoib_wire::ipoib::mcast::{broadcast_mgid, ipoib_signature, with_pkey, with_scope, Scope};
use ipoib_wire::{Gid, Guid, Mtu, PKey, QKey, Rate};

/// Default group MTU, code 4 = 2048 bytes (opensm(8) `mtu=`; OpenSM `OSM_DEFAULT_MGRP_MTU`).
pub const DEFAULT_MTU: Mtu = Mtu::Mtu2048;
/// Default group rate, code 3 = 10 Gb/s (opensm(8) `rate=`; OpenSM `OSM_DEFAULT_MGRP_RATE`).
pub const DEFAULT_RATE: Rate = Rate::Gbps10;
/// Default scope, 2 = link local (opensm(8) `scope=`).
pub const DEFAULT_SCOPE: u8 = 2;

/// Who a port specifier in a partition's port list names (opensm(8) "keywords for PortGUID").
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum MemberSpec {
    /// `ALL`: every end port.
    All,
    /// `ALL_CAS`: every channel-adapter end port.
    AllCas,
    /// `ALL_SWITCHES`: every switch end port (management port 0).
    AllSwitches,
    /// `ALL_ROUTERS`: every router end port.
    AllRouters,
    /// `SELF`: the subnet manager's own port.
    SelfPort,
    /// One port by GUID.
    Guid(Guid),
}

/// Membership of a port in a partition (opensm(8) `full|limited|both`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub enum Membership {
    /// Limited member: P_Key without the 0x8000 bit.
    #[default]
    Limited,
    /// Full member: P_Key with the 0x8000 bit.
    Full,
    /// Both. OpenSM adds the limited P_Key as well only with `allow_both_pkeys`, which is off by
    /// default; like OpenSM's default, this gives full membership.
    Both,
}

impl Membership {
    /// The P_Key table entry of a member of partition `base`: with the full-member bit for `Full`
    /// and `Both`, without it for `Limited`.
    pub fn pkey(self, base: PKey) -> PKey {
        match self {
            Membership::Limited => base.limited(),
            Membership::Full | Membership::Both => base.full(),
        }
    }
}

/// The kind of node a port belongs to, for `ALL_CAS`, `ALL_SWITCHES`, `ALL_ROUTERS`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PortKind {
    /// Channel adapter.
    Ca,
    /// Switch (its management port 0).
    Switch,
    /// Router.
    Router,
}

/// The multicast-group flags of a partition or an `mgid=` line (opensm(8) `mgroup_flag`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupFlags {
    /// MTU (`mtu=`, a defined code 1..=5), default 2048.
    pub mtu: Mtu,
    /// Rate (`rate=`, a defined code 2..=22), default 10 Gb/s.
    pub rate: Rate,
    /// Service level (`sl=`), default 0.
    pub sl: u8,
    /// Scopes (`scope=`, may repeat); empty means the default, 2 (link local), written over
    /// the MGID's scope nibble as OpenSM does (`osm_prtn_config.c` `__create_mgrp` passes scope
    /// 0 and `osm_prtn.c` `osm_prtn_add_mcgroup` takes `OSM_DEFAULT_MGRP_SCOPE` for it;
    /// measured: `mgid=ff15::abcd` made `ff12::abcd`, docs/OPENSM-PARTITIONS.md).
    pub scopes: Vec<u8>,
    /// Q_Key (`Q_Key=`); 0 means the default (0x0b1b for IP groups, 0 otherwise).
    pub qkey: QKey,
    /// Traffic class (`TClass=`).
    pub tclass: u8,
    /// Flow label (`FlowLabel=`).
    pub flow_label: u32,
}

impl Default for GroupFlags {
    fn default() -> Self {
        GroupFlags {
            mtu: DEFAULT_MTU,
            rate: DEFAULT_RATE,
            sl: 0,
            scopes: Vec::new(),
            qkey: QKey(0),
            tclass: 0,
            flow_label: 0,
        }
    }
}

/// An `mgid=` line inside a partition (opensm(8) "MCast Group").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McGroupSpec {
    /// The MGID as written (P_Key bits of IP groups filled in when the groups are made).
    pub mgid: Gid,
    /// Its flags (inherited from the partition, then overridden).
    pub flags: GroupFlags,
    /// Line of the definition (for messages).
    pub line: usize,
}

/// One partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Partition {
    /// Name (may be empty).
    pub name: String,
    /// P_Key, low 15 bits (opensm(8): "Only low 15 bits will be used"): the limited form.
    pub pkey: PKey,
    /// `ipoib`: the IPoIB broadcast group is pre-created.
    pub ipoib: bool,
    /// `indx0`: the P_Key goes to index 0 of the P_Key table.
    pub index0: bool,
    /// Partition-level group flags (mtu, rate, sl, scope, Q_Key, TClass, FlowLabel).
    pub flags: GroupFlags,
    /// `defmember=`: membership of port specifiers without one.
    pub default_member: Membership,
    /// Port list, in file order.
    pub members: Vec<(MemberSpec, Membership)>,
    /// `mgid=` groups, in file order.
    pub groups: Vec<McGroupSpec>,
}

impl Partition {
    /// An empty partition with default flags.
    pub fn new(name: &str, pkey: PKey) -> Partition {
        Partition {
            name: name.to_string(),
            pkey: pkey.limited(),
            ipoib: false,
            index0: false,
            flags: GroupFlags::default(),
            default_member: Membership::Limited,
            members: Vec::new(),
            groups: Vec::new(),
        }
    }

    /// The membership `port` has in this partition, if any: that of the last port specifier
    /// naming it, in file order (`Both` read as `Full`). OpenSM's parser adds each specifier's
    /// ports as it reads them and a port named again is overwritten (`osm_prtn.c`
    /// `osm_prtn_add_port`: "already in partition ... Will overwrite"), so `ALL=full,
    /// 0x...=limited` leaves that port limited (measured on OpenSM 3.3.23,
    /// docs/OPENSM-PARTITIONS.md).
    pub fn membership_of(&self, port: &PortId) -> Option<Membership> {
        self.members
            .iter()
            .rev()
            .find(|(spec, _)| match spec {
                MemberSpec::All => true,
                MemberSpec::AllCas => port.kind == PortKind::Ca,
                MemberSpec::AllSwitches => port.kind == PortKind::Switch,
                MemberSpec::AllRouters => port.kind == PortKind::Router,
                MemberSpec::SelfPort => port.is_sm,
                MemberSpec::Guid(g) => *g == port.guid,
            })
            .map(|(_, m)| match m {
                Membership::Limited => Membership::Limited,
                Membership::Full | Membership::Both => Membership::Full,
            })
    }
}

/// The identity of a port for P_Key resolution.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PortId {
    /// Port GUID.
    pub guid: Guid,
    /// Node kind.
    pub kind: PortKind,
    /// True for the subnet manager's own port (`SELF`).
    pub is_sm: bool,
}

/// A multicast group the SA creates at start and never deletes (OpenSM `osm_prtn_add_mcgroup`,
/// "well known" groups).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PrecreatedGroup {
    /// MGID (scope nibble and, for IP groups, P_Key bits filled in).
    pub mgid: Gid,
    /// P_Key, full-member bit set.
    pub pkey: PKey,
    /// Q_Key.
    pub qkey: QKey,
    /// MTU.
    pub mtu: Mtu,
    /// Rate.
    pub rate: Rate,
    /// Service level.
    pub sl: u8,
    /// Traffic class.
    pub tclass: u8,
    /// Flow label.
    pub flow_label: u32,
    /// Scope nibble.
    pub scope: u8,
}

/// A parsed configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionConfig {
    /// Partitions, in order of first definition; P_Keys distinct.
    pub partitions: Vec<Partition>,
    /// What OpenSM would log as `PARSE WARN` (ignored flags, skipped groups).
    pub warnings: Vec<Warning>,
}

impl PartitionConfig {
    /// The configuration when no file is given (opensm(8): "In the case of no partition
    /// configuration file ... `Default=0x7fff : ALL=full ;`", plus the IPoIB broadcast group of the
    /// default partition, docs/DEPLOYED.md: "Without a config the default partition 0x7fff (0xffff
    /// full) gets it").
    pub fn default_config() -> PartitionConfig {
        let mut p = Partition::new("Default", PKey::DEFAULT);
        p.ipoib = true;
        p.members.push((MemberSpec::All, Membership::Full));
        PartitionConfig {
            partitions: vec![p],
            warnings: Vec::new(),
        }
    }

    /// The partition with P_Key `pkey` (membership bit ignored).
    pub fn partition(&self, pkey: PKey) -> Option<&Partition> {
        self.partitions.iter().find(|p| p.pkey.same_partition(pkey))
    }

    /// The P_Key table the SM writes into `port`: one entry per partition the port belongs to, with
    /// the 0x8000 bit for full members. `indx0` partitions first, then the default partition, then
    /// the others in file order (OpenSM `osm_pkey_mgr.c` keeps the default P_Key at index 0 unless a
    /// partition asks for `indx0`).
    pub fn pkey_table(&self, port: &PortId) -> Vec<PKey> {
        let entry = |p: &Partition| p.membership_of(port).map(|m| m.pkey(p.pkey));
        let mut out = Vec::new();
        for p in self.partitions.iter().filter(|p| p.index0) {
            out.extend(entry(p));
        }
        for p in self
            .partitions
            .iter()
            .filter(|p| !p.index0 && p.pkey.same_partition(PKey::DEFAULT))
        {
            out.extend(entry(p));
        }
        for p in self
            .partitions
            .iter()
            .filter(|p| !p.index0 && !p.pkey.same_partition(PKey::DEFAULT))
        {
            out.extend(entry(p));
        }
        out
    }

    /// The groups the SA pre-creates: the IPoIB broadcast group `ff12:401b:<pkey|0x8000>::ffff:ffff`
    /// of each `ipoib` partition (Q_Key 0x0b1b unless `Q_Key=` says otherwise) and each `mgid=` group,
    /// once per scope when `scope=` is given (OpenSM `partition_create`, `mgroup_create`,
    /// `__create_mgrp`). Duplicate MGIDs are made once.
    pub fn precreated_groups(&self) -> Vec<PrecreatedGroup> {
        let mut out: Vec<PrecreatedGroup> = Vec::new();
        for p in &self.partitions {
            let full_pkey = p.pkey.full();
            let mut push = |mgid: Gid, f: &GroupFlags, default_qkey: QKey| {
                let qkey = if f.qkey != QKey(0) {
                    f.qkey
                } else {
                    default_qkey
                };
                let scopes: Vec<u8> = if f.scopes.is_empty() {
                    vec![DEFAULT_SCOPE]
                } else {
                    f.scopes.clone()
                };
                for scope in scopes {
                    let g = with_scope(mgid, Scope::from(scope));
                    if out.iter().any(|o| o.mgid == g) {
                        continue;
                    }
                    out.push(PrecreatedGroup {
                        mgid: g,
                        pkey: full_pkey,
                        qkey,
                        mtu: f.mtu,
                        rate: f.rate,
                        sl: f.sl,
                        tclass: f.tclass,
                        flow_label: f.flow_label,
                        scope: scope & 0x0f,
                    });
                }
            };
            if p.ipoib {
                // OpenSM `osm_ipoib_broadcast_mgid`, ff12:401b:<P_Key>::ffff:ffff.
                let g = broadcast_mgid(full_pkey, Scope::LinkLocal);
                push(g, &p.flags, QKey::IPOIB_BROADCAST);
            }
            for spec in &p.groups {
                let mut g = spec.mgid;
                let mut default_qkey = QKey(0);
                if ipoib_signature(&g).is_some() {
                    g = with_pkey(g, full_pkey);
                    default_qkey = QKey::IPOIB_BROADCAST;
                }
                push(g, &spec.flags, default_qkey);
            }
        }
        out
    }
}

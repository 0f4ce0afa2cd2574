//! One HCA port as the subnet manager configured it: GUID, GID table, P_Key table, LID/LMC, SM LID,
//! state, MTU and rate, plus the partition-key matching rule.
//!
//! Invariant: the GID table always has exactly one entry, index 0 = subnet prefix + port GUID
//! (IBA 1 §4.1.1 "the default GID"); the P_Key table never has fewer than one entry; the MTU is a
//! defined code ([`Port::apply`] refuses a write with an undefined one).

use crate::hw::mgmt::{PortConfig, PortState};
use crate::hw::sma::{MKeyGuard, PortTraffic};
use ipoib_proto::time::Instant;
use ipoib_wire::ib::lid::{is_multicast_lid, LID_PERMISSIVE};
use ipoib_wire::smp::{SlToVlTableRepr, SmInfoRepr, VlArbTableRepr};
use ipoib_wire::{Gid, Guid, Mtu, PKey, Rate};

/// Entries the HCA's P_Key table can hold (PartitionCap, as ConnectX reports); a QP's P_Key index
/// must be below it. Entries beyond what the SM wrote read as 0 (invalid, matches nothing).
pub const PKEY_TABLE_SIZE: u16 = 128;

/// A port's attributes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Port {
    /// Port number (1..).
    pub num: u8,
    /// Port GUID.
    pub guid: Guid,
    /// Subnet prefix of GID index 0.
    pub subnet_prefix: u64,
    /// Base LID (0 until the SM assigns one).
    pub lid: u16,
    /// LID mask control: the port answers to `lid ..= lid + 2^lmc - 1`.
    pub lmc: u8,
    /// Master SM LID.
    pub sm_lid: u16,
    /// SL to the SM.
    pub sm_sl: u8,
    /// Port state.
    pub state: PortState,
    /// Active MTU.
    pub mtu: Mtu,
    /// The largest MTU the port runs (PortInfo:MTUCap): [`crate::hw::sma::MTU_CAP`], or its
    /// cable's MTU when the topology gives one.
    pub mtu_cap: Mtu,
    /// Rate.
    pub rate: Rate,
    /// P_Key table.
    pub pkeys: Vec<PKey>,
    /// False while the cable is down (then the state stays Down whatever the SM writes).
    pub phys_up: bool,
    /// A SubnSet(PortInfo) PortPhysicalState Disabled switched the port off (PortInfo reads
    /// Disabled, its link is down); Polling switches it on again (IBA 1 §14.2.5.6).
    pub disabled: bool,
    /// M_Key, its protection and violations (IBA 1 §14.2.4), written by SubnSet(PortInfo).
    pub mkey: MKeyGuard,
    /// PortInfo:SubnetTimeOut.
    pub subnet_timeout: u8,
    /// The link settings a SubnSet(PortInfo) wrote (`crate::hw::sma::port_set`).
    pub link: crate::hw::sma::port_set::LinkSettings,
    /// SLtoVLMappingTable (IBA 1 §14.2.5.8).
    pub sl2vl: SlToVlTableRepr,
    /// VLArbitrationTable blocks 1-4 (IBA 1 §14.2.5.9).
    pub vlarb: [VlArbTableRepr; 4],
    /// The SMInfo of the SM running on this port, which the port answers SubnGet(SMInfo) with
    /// (none: status 0x000C, IBA 1 §14.2.5.13).
    pub sm_info: Option<SmInfoRepr>,
    /// An SM program runs on this port through its QP0 (an ibsim client that registered as SM):
    /// PortInfo:CapabilityMask says IsSM (IBA 1 §14.2.5.6) even with no `sm_info`.
    pub sm_client: bool,
    /// Packets and data through the port (what its PMA reports, IBA 1 §16.1.3.5).
    pub traffic: PortTraffic,
    /// SubnSet(PortInfo) with ClientReregister set so far (IBA 1 §14.4.11): each asks the
    /// port's clients to register again with the SA (Linux: IB_EVENT_CLIENT_REREGISTER).
    pub client_reregisters: u64,
    /// PortInfo:P_KeyViolations and Q_KeyViolations (IBA 1 §14.2.5.6): packets this port
    /// discarded for a P_Key or (UD) a Q_Key that did not match, stopping at 0xFFFF; the SM may
    /// write them. Linux's qib counts both so (`qib_bad_pqkey`, docs/PERF-COUNTERS.md); each also
    /// sends trap 257/258 (`trap.rs`).
    pub pkey_violations: u16,
    /// See [`Port::pkey_violations`].
    pub qkey_violations: u16,
    /// Until when a violation sends no trap 257/258 (`trap.rs`: 4.096 µs × 2^SubnetTimeOut after
    /// the last one sent, as Linux's qib `trap_timeout`).
    pub trap_holdoff: Option<Instant>,
    /// Traps 257/258 this port sent (`trap.rs`).
    pub traps_sent: u64,
    /// TrapRepresses the SM answered them with (IBA 1 §13.4.9).
    pub trap_represses: u64,
}

impl Port {
    /// A port before the SM saw it: Down, LID 0, default prefix and P_Key table `[0xFFFF]`, MTU
    /// 256, rate 2.5 Gb/s.
    pub fn new(num: u8, guid: Guid) -> Port {
        Port {
            num,
            guid,
            subnet_prefix: Gid::DEFAULT_SUBNET_PREFIX,
            lid: 0,
            lmc: 0,
            sm_lid: 0,
            sm_sl: 0,
            state: PortState::Down,
            mtu: Mtu::Mtu256,
            mtu_cap: crate::hw::sma::MTU_CAP,
            rate: Rate::Gbps2_5,
            pkeys: vec![PKey::DEFAULT],
            phys_up: true,
            disabled: false,
            mkey: MKeyGuard::default(),
            subnet_timeout: 0,
            link: Default::default(),
            sl2vl: SlToVlTableRepr::default(),
            vlarb: [VlArbTableRepr::default(); 4],
            sm_info: None,
            sm_client: false,
            traffic: PortTraffic::default(),
            client_reregisters: 0,
            pkey_violations: 0,
            qkey_violations: 0,
            trap_holdoff: None,
            traps_sent: 0,
            trap_represses: 0,
        }
    }

    /// GID at `index` (only index 0 exists).
    pub fn gid(&self, index: u8) -> Option<Gid> {
        (index == 0).then(|| Gid::new(self.subnet_prefix, self.guid.0))
    }

    /// The port GID (index 0).
    pub fn port_gid(&self) -> Gid {
        Gid::new(self.subnet_prefix, self.guid.0)
    }

    /// The path bits when `dlid` is in this port's LID range (IBA 1 §7.11.1, LMC).
    pub fn path_bits(&self, dlid: u16) -> Option<u8> {
        if self.lid == 0 || is_multicast_lid(dlid) || dlid == LID_PERMISSIVE {
            return None;
        }
        let span = 1u32 << self.lmc.min(7);
        let off = u32::from(dlid).checked_sub(u32::from(self.lid))?;
        (off < span).then_some(off as u8)
    }

    /// The SLID for `path_bits` (masked by the LMC).
    pub fn slid(&self, path_bits: u8) -> u16 {
        let mask = ((1u16 << self.lmc.min(7)) - 1) as u8;
        self.lid | u16::from(path_bits & mask)
    }

    /// The P_Key at `index`.
    pub fn pkey(&self, index: u16) -> Option<PKey> {
        self.pkeys.get(usize::from(index)).copied()
    }

    /// The first table index whose entry matches `pkey` (IBA 1 §10.9.3), as QP1 checks.
    pub fn match_any_pkey(&self, pkey: PKey) -> Option<u16> {
        self.pkeys
            .iter()
            .position(|&e| pkey.matches(e))
            .map(|i| i as u16)
    }

    /// The index of `pkey` to send with: an exact entry first, else one of the same partition
    /// (ibv_find_pkey_index behaves the same way for full/limited variants).
    pub fn find_pkey_index(&self, pkey: PKey) -> Option<u16> {
        if !pkey.is_valid() {
            return None;
        }
        self.pkeys
            .iter()
            .position(|&e| e == pkey)
            .or_else(|| self.pkeys.iter().position(|&e| e.same_partition(pkey)))
            .map(|i| i as u16)
    }

    /// The port as a [`PortConfig`] (what a write that changes nothing would carry).
    pub fn config(&self) -> PortConfig {
        PortConfig {
            port: self.num,
            lid: self.lid,
            lmc: self.lmc,
            sm_lid: self.sm_lid,
            sm_sl: self.sm_sl,
            subnet_prefix: self.subnet_prefix,
            state: self.state,
            mtu: self.mtu,
            rate: self.rate,
            pkeys: self.pkeys.clone(),
        }
    }

    /// Applies the SM's PortInfo/P_KeyTable write. The state is taken as written unless the
    /// cable is down. An empty P_Key table is replaced by `[0]` (no valid key: matches nothing).
    /// A write with an undefined MTU code is refused whole (no port runs at it): `false`, and the
    /// port stays as it was.
    pub fn apply(&mut self, c: &PortConfig) -> bool {
        if !c.mtu.is_valid() {
            return false;
        }
        self.lid = c.lid;
        self.lmc = c.lmc.min(7);
        self.sm_lid = c.sm_lid;
        self.sm_sl = c.sm_sl;
        self.subnet_prefix = c.subnet_prefix;
        self.state = if self.phys_up {
            c.state
        } else {
            PortState::Down
        };
        self.mtu = c.mtu;
        self.rate = c.rate;
        self.pkeys = if c.pkeys.is_empty() {
            vec![PKey(0)]
        } else {
            c.pkeys.clone()
        };
        true
    }

    /// The cable went up (Init: link up, waiting for the SM, IBA 1 §7.2) or down (Down).
    pub fn set_phys(&mut self, up: bool) {
        // IBA 1 §16.1.3.5 LinkDownedCounter: only a link that had trained (port state Init or
        // above) counts when it goes down.
        if self.phys_up && self.state != PortState::Down && !up {
            self.traffic.link_downed += 1;
        }
        self.phys_up = up;
        self.state = if up { PortState::Init } else { PortState::Down };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lid_range_and_mtu() {
        let mut p = Port::new(1, Guid(0x10));
        assert_eq!(p.path_bits(0), None, "LID 0 is nobody");
        p.lid = 8;
        p.lmc = 2;
        assert_eq!(p.path_bits(8), Some(0));
        assert_eq!(p.path_bits(11), Some(3));
        assert_eq!(p.path_bits(12), None);
        assert_eq!(p.path_bits(7), None);
        assert_eq!(p.slid(5), 9);
        assert_eq!(p.mtu.bytes(), Some(256));
        let mut c = PortConfig {
            port: 1,
            lid: 8,
            lmc: 2,
            sm_lid: 1,
            sm_sl: 0,
            subnet_prefix: Gid::DEFAULT_SUBNET_PREFIX,
            state: PortState::Active,
            mtu: Mtu::Mtu4096,
            rate: Rate::Gbps10,
            pkeys: vec![PKey::DEFAULT],
        };
        assert!(p.apply(&c));
        assert_eq!(p.mtu.bytes(), Some(4096));
        c.mtu = Mtu::Unknown(6);
        c.lid = 9;
        assert!(!p.apply(&c), "an undefined MTU code is refused");
        assert_eq!((p.mtu, p.lid), (Mtu::Mtu4096, 8));
        assert_eq!(p.gid(0), Some(Gid::new(0xfe80 << 48, 0x10)));
        assert_eq!(p.gid(1), None);
        p.pkeys = vec![PKey(0xffff), PKey(0x8001), PKey(0x0002)];
        assert_eq!(p.find_pkey_index(PKey(0x8002)), Some(2));
        assert_eq!(p.find_pkey_index(PKey(0x8001)), Some(1));
        assert_eq!(p.match_any_pkey(PKey(0x0002)), None, "limited/limited");
        assert_eq!(p.match_any_pkey(PKey(0x8002)), Some(2));
    }

    /// IBA 1 §16.1.3.5: a port that never trained does not count a LinkDowned.
    #[test]
    fn link_downed_counts_only_a_trained_link() {
        let mut p = Port::new(1, Guid(0x10));
        p.set_phys(false);
        assert_eq!(p.traffic.link_downed, 0);
        p.set_phys(true);
        p.set_phys(false);
        p.set_phys(false);
        assert_eq!(p.traffic.link_downed, 1);
    }
}

//! PortInfo of the switch's ports as its SMA answers and writes it (IBA 1 §14.2.5.6): port 0's
//! LID, MasterSMLID, M_Key and the like are the switch's, answered on every port; a SubnSet of an
//! external port writes its state, NeighborMTU, link settings and PortPhysicalState. The rules
//! every SMA shares are in `crate::hw::sma` (`port_state_after_set`, `mtu_ok`, `port_set`).

use super::Switch;
use crate::hw::mgmt::{Config, PortConfig};
use crate::hw::sma::{self, port_set};
use ipoib_proto::subnet::{link_width_speed, CAP_EXT_SPEEDS};
use ipoib_wire::smp::PortState as WireState;
use ipoib_wire::smp::{PortInfoRepr, PortPhysState};

impl Switch {
    /// The PortInfo the SMA answers a SubnGet(PortInfo) of port `p` entering by `in_port` with
    /// (IBA 1 §14.2.5.6), the M_Key hidden as from a requester without it; `None` past the ports.
    pub fn port_info_of(&self, p: u8, in_port: u8) -> Option<PortInfoRepr> {
        (usize::from(p) < self.ports.len()).then(|| self.port_info(p, in_port, true))
    }

    pub(super) fn port_info(&self, p: u8, in_port: u8, hide_key: bool) -> PortInfoRepr {
        let port = &self.ports[usize::from(p)];
        let g = &self.mgmt;
        let (width, speed, ext) = link_width_speed(port.rate);
        let link = g.links.get(&p).copied().unwrap_or_default();
        let mut caps = ipoib_wire::smp::cap_mask::IS_TRAP_SUPPORTED;
        if ext != 0 {
            caps |= CAP_EXT_SPEEDS;
        }
        PortInfoRepr {
            mkey: if hide_key { 0 } else { g.mkey.mkey },
            gid_prefix: g.gid_prefix,
            lid: self.lid,
            master_sm_lid: self.sm_lid,
            capability_mask: caps,
            mkey_lease_period: g.mkey.lease_period,
            local_port_num: in_port,
            link_width_enabled: link.width_enabled(width),
            link_width_supported: width_supported(width),
            link_width_active: width,
            link_speed_supported: port_set::LINK_SPEED_SUPPORTED,
            port_state: sma::wire_state(port.state),
            port_phys_state: if port.disabled {
                PortPhysState::Disabled
            } else {
                sma::phys_state(port.up)
            },
            link_down_default_state: link.link_down_default(),
            mkey_protect_bits: g.mkey.protect,
            lmc: g.lmc,
            link_speed_active: speed,
            link_speed_enabled: link.speed_enabled(),
            neighbor_mtu: port.mtu,
            master_sm_sl: g.sm_sl,
            vl_cap: crate::hw::sma::OPERATIONAL_VLS,
            mtu_cap: port.mtu_cap,
            operational_vls: crate::hw::sma::OPERATIONAL_VLS,
            partition_enforcement_inbound: self.enforce_partitions,
            partition_enforcement_outbound: self.enforce_partitions,
            mkey_violations: g.mkey.violations,
            guid_cap: 1,
            subnet_timeout: g.subnet_timeout,
            link_speed_ext_active: ext,
            link_speed_ext_supported: ext,
            link_speed_ext_enabled: ext,
            ..PortInfoRepr::default()
        }
    }

    /// Applies a SubnSet(PortInfo) of port `p` through the same write a `Config::Port` makes;
    /// false (and nothing changed) when a field holds a value the port cannot take.
    pub(super) fn set_port_info(&mut self, p: u8, w: &PortInfoRepr) -> bool {
        let port = &self.ports[usize::from(p)];
        let Some(state) = sma::port_state_after_set(port.state, port.up, w.port_state) else {
            return false;
        };
        let mtu = if p == 0 || u8::from(w.neighbor_mtu) == 0 {
            port.mtu
        } else {
            w.neighbor_mtu
        };
        // Port 0's LID and MasterSMLID are the switch's; an external port's are not written.
        let bad_lid =
            !port_set::unicast_lid_ok(w.lid) || !port_set::unicast_lid_ok(w.master_sm_lid);
        let (width, _, _) = link_width_speed(port.rate);
        let link = self.mgmt.links.get(&p).copied().unwrap_or_default();
        let Some(link) = link.after_set(w, width_supported(width)) else {
            return false;
        };
        if !sma::mtu_ok(mtu, port.mtu_cap) || (p == 0 && bad_lid) {
            return false;
        }
        let changed = state != port.state;
        let pkeys = port.pkeys.clone();
        self.mgmt.links.insert(p, link);
        if p == 0 {
            let g = &mut self.mgmt;
            g.mkey.mkey = w.mkey;
            g.mkey.protect = w.mkey_protect_bits & 3;
            g.mkey.lease_period = w.mkey_lease_period;
            g.mkey.violations =
                port_set::violations_after_set(g.mkey.violations, w.mkey_violations);
            g.lmc = w.lmc & 7;
            g.subnet_timeout = w.subnet_timeout & 0x1f;
            g.gid_prefix = w.gid_prefix;
            g.sm_sl = w.master_sm_sl & 0x0f;
        }
        let (lid, sm_lid) = if p == 0 {
            (w.lid, w.master_sm_lid)
        } else {
            (self.lid, self.sm_lid)
        };
        self.apply_config(Config::Port(PortConfig {
            port: p,
            lid,
            lmc: self.mgmt.lmc,
            sm_lid,
            sm_sl: self.mgmt.sm_sl,
            subnet_prefix: self.mgmt.gid_prefix,
            state,
            mtu,
            rate: ipoib_wire::Rate::Gbps40,
            pkeys,
        }));
        // IBA 1 §14.2.5.4 SwitchInfo:PortStateChange: set by the link state machine's changes,
        // not by a SubnSet's (ibsim `sim_mad.c` reads the spec so too). Writing Down is both: the
        // link goes down and retrains to Init.
        if changed && p != 0 && w.port_state == WireState::Down {
            self.mgmt.port_state_change = true;
            self.mgmt.port_state_change_unread = true;
        }
        true
    }

    /// PortPhysicalState of a SubnSet(PortInfo) of external port `p` (IBA 1 §14.2.5.6, §5.6.2.1):
    /// Disabled switches the port off (its link goes down, the other end Polling, as ibsim's
    /// `sim_mad.c` does and `ibportstate disable` expects), Polling switches a disabled port on
    /// (the link trains again: both ends Init, trap 128, as a cable plugged in). Other values
    /// change nothing (`sma::phys_request`); port 0 has no physical link.
    pub(super) fn set_phys_state(&mut self, p: u8, phys: sma::PhysRequest) {
        let Some(port) = self.ports.get_mut(usize::from(p)).filter(|_| p != 0) else {
            return;
        };
        let disable = match phys {
            sma::PhysRequest::Disable => true,
            sma::PhysRequest::Enable => false,
            sma::PhysRequest::Keep => return,
        };
        if port.disabled != disable {
            port.disabled = disable;
            self.mgmt.port_request = Some((p, !disable));
        }
    }
}

/// PortInfo:LinkWidthSupported of a switch port whose link trained to `active`: 1x and 4x, and the
/// active width when wider (IBA 1 §14.2.5.6).
fn width_supported(active: u8) -> u8 {
    3 | active
}

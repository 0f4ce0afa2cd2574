//! The device state a subnet manager sets: port attributes (LID, SM LID, state, P_Keys, MTU),
//! linear forwarding tables and multicast forwarding tables. Our SM sets them as a real one does,
//! by SubnSet SMPs (PortInfo, P_KeyTable, LinearForwardingTable, MulticastForwardingTable, IBA 1
//! §14.2.5; `crate::node::sm::sweep`), and the devices' SMAs write them as [`Config`] values. The
//! same values may also travel through the simulator (`Tx::configure`), with the same meaning and
//! in order, after [`CONFIG_DELAY`]: only the harness's port events use that side-band path
//! (`Subnet::sweep_port`, `Subnet::move_lid`); no SM of ours does.

use ipoib_wire::PKey;
use ipoib_wire::{Mtu, Rate};
use std::time::Duration;

/// Time a configuration takes to reach its device (about one SMP round trip).
pub const CONFIG_DELAY: Duration = Duration::from_micros(1);

/// Port state (IBA 1 §7.2, PortInfo:PortState).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub enum PortState {
    /// No physical link.
    #[default]
    Down,
    /// Link up, not configured: only subnet management traffic.
    Init,
    /// Configured, waiting to be activated.
    Armed,
    /// Fully operational.
    Active,
}

impl PortState {
    /// Whether a port in this state transmits a data packet (any VL but VL15; IBA 1 §7.2: only
    /// an Active port does — Init and Armed send subnet management packets only, and
    /// PortXmitDiscards counts "output port not in the Active state", §16.1.3.5).
    pub fn transmits_data(self) -> bool {
        self == PortState::Active
    }

    /// Whether a port in this state takes a data packet it receives (IBA 1 §7.2: Armed and
    /// Active do; Init receives subnet management packets only, and Down nothing).
    pub fn receives_data(self) -> bool {
        matches!(self, PortState::Armed | PortState::Active)
    }

    /// The state after the port received a data packet (not VL15) that passed the link layer's
    /// checks (IBA 1 §7.2, the link state machine's ActiveTrigger; docs/DEPLOYED.md "The
    /// link state machine: Armed to Active"): an Armed port goes Active by itself, as when the
    /// SM writes Active; every other state stays. Of a switch, only the port that received it.
    /// No PortStateChange (IBA 1 §14.2.5.4: Armed to Active is none of its transitions).
    pub fn after_data_received(self) -> PortState {
        if self == PortState::Armed {
            PortState::Active
        } else {
            self
        }
    }
}

/// Port attributes set by the SM (PortInfo and P_KeyTable).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortConfig {
    /// Port number.
    pub port: u8,
    /// Base LID.
    pub lid: u16,
    /// LID mask control.
    pub lmc: u8,
    /// LID of the master SM (where SA requests go).
    pub sm_lid: u16,
    /// SL to reach the SM.
    pub sm_sl: u8,
    /// Subnet prefix of the port's GIDs.
    pub subnet_prefix: u64,
    /// New port state.
    pub state: PortState,
    /// Active MTU (a defined code: devices refuse a write with an undefined one).
    pub mtu: Mtu,
    /// Rate.
    pub rate: Rate,
    /// P_Key table (index = P_Key index).
    pub pkeys: Vec<PKey>,
}

/// One configuration write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Config {
    /// PortInfo + P_KeyTable of one port.
    Port(PortConfig),
    /// Linear forwarding table: output port per DLID, from LID 0 (255 = drop).
    Lft(Vec<u8>),
    /// Multicast forwarding table entry: the ports a packet to `mlid` leaves by (empty = none).
    Mft {
        /// Multicast LID (0xC000..=0xFFFE).
        mlid: u16,
        /// Output ports.
        ports: Vec<u8>,
    },
    /// A SubnSet(PortInfo) with ClientReregister 1 on this port (IBA 1 §14.4.11): the event, not
    /// state, that asks the port's clients to register again with the SA. Only an attached
    /// host's uplink writes it, for the SMA that runs in the fabric's slot (docs/UDP-FABRIC.md,
    /// "ClientReregister").
    ClientReregister(u8),
}

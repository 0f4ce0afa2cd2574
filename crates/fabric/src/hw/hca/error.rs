//! Errors of verbs calls ([`VerbsError`]) and the reasons the HCA drops packets ([`HcaDropReason`],
//! counted in [`HcaCounters`]). A bad call is refused with an error and changes nothing; a bad packet
//! from the network is dropped and counted, never a panic.

use crate::hw::verbs::{QpState, Qpn};

/// Identifies a completion queue of one HCA.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CqId(pub u32);

/// Why a verbs call was refused (the call had no effect).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum VerbsError {
    /// No QP with this number (or handle).
    #[error("unknown QP {0:#x}")]
    UnknownQp(Qpn),
    /// No CQ with this id.
    #[error("unknown CQ {}", .0 .0)]
    UnknownCq(CqId),
    /// The HCA has no such port.
    #[error("no port {0}")]
    NoSuchPort(u8),
    /// The operation is not allowed in the QP's current state (IBA 1 §10.3.1, e.g. post_send
    /// outside RTS, post_recv in Reset).
    #[error("QP {qpn:#x} is in state {state:?}")]
    WrongState {
        /// The QP.
        qpn: Qpn,
        /// Its state.
        state: QpState,
    },
    /// modify_qp asked for a transition the QP state diagram does not have (IBA 1 §10.3.1).
    #[error("invalid QP transition {from:?} -> {to:?}")]
    InvalidTransition {
        /// Current state.
        from: QpState,
        /// Requested state.
        to: QpState,
    },
    /// The P_Key index is outside the port's P_Key table.
    #[error("P_Key index {0} outside the table")]
    BadPkeyIndex(u16),
    /// The message is longer than the largest message the QP type allows (2^31 bytes, IBA 1
    /// §9.4.1; UD: one packet, checked against the port MTU at send time).
    #[error("message of {len} bytes longer than {max}")]
    MessageTooLong {
        /// Bytes asked for.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// The request is malformed for this QP (e.g. a UD send without a destination).
    #[error("invalid argument: {0}")]
    InvalidArgument(&'static str),
    /// The HCA does not implement this (e.g. RC/UC without a connected-QP engine).
    #[error("unsupported: {0}")]
    Unsupported(&'static str),
    /// The 24-bit QPN space is exhausted.
    #[error("no QP number left")]
    NoQpnLeft,
    /// No memory region has this L_Key (never registered, or deregistered; IBA 1 §10.6).
    #[error("no memory region with L_Key {0:#x}")]
    UnknownMr(u32),
    /// The bytes asked for do not lie inside the region.
    #[error("bytes {offset}..+{len} outside memory region {lkey:#x}")]
    MrRange {
        /// The region's L_Key.
        lkey: u32,
        /// Offset from the region's first byte.
        offset: usize,
        /// Bytes asked for.
        len: usize,
    },
    /// Registering would take the HCA's registered memory over its limit.
    #[error("registering {len} bytes exceeds the HCA's memory limit ({free} bytes free)")]
    MrLimit {
        /// Bytes asked for.
        len: usize,
        /// Bytes the limit leaves.
        free: usize,
    },
}

macro_rules! drop_reasons {
    ($($(#[$m:meta])* $name:ident,)*) => {
        /// Why the HCA discarded a packet (received or about to be sent).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum HcaDropReason { $($(#[$m])* $name,)* }

        impl HcaDropReason {
            /// Every reason, in declaration order.
            pub const ALL: &'static [HcaDropReason] = &[$(HcaDropReason::$name,)*];
        }
    };
}

drop_reasons! {
    /// Lengths or headers do not parse, LVer is not 0, a data VL the port does not operate, or
    /// a payload over the port's MTUCap (IBA 1 §7.7, §9.2).
    Malformed,
    /// VCRC mismatch (IBA 1 §7.8.2).
    BadVcrc,
    /// ICRC mismatch (IBA 1 §7.8.1).
    BadIcrc,
    /// Raw packet (LNH 0/1): no raw QPs here.
    Raw,
    /// Arrived on a port number the HCA does not have.
    NoSuchPort,
    /// The port is Down, or not yet Armed/Active for a non-management packet (IBA 1 §7.2).
    PortNotActive,
    /// DLID is neither this port's LID range nor an attached multicast LID (IBA 1 §7.11.1).
    BadDlid,
    /// VL15 not to QP0, or QP0 not on VL15 (IBA 1 §7.6.3, §14.2.2.1).
    BadVl,
    /// Multicast DLID without a GRH (IBA 1 §10.5.2: multicast packets carry a GRH).
    McastNoGrh,
    /// Multicast DLID/DGID with no QP of this port attached (IBA 1 §10.5.2).
    McastNotAttached,
    /// Multicast packet whose BTH DestQP is not 0xFFFFFF (IBA 1 §9.2).
    McastBadQpn,
    /// No QP with the BTH DestQP on this port.
    UnknownQp,
    /// The QP cannot receive in its state (Reset/Init, IBA 1 §10.3.1).
    QpNotReady,
    /// Opcode of a transport the QP does not run, or an opcode UD does not have.
    BadOpcode,
    /// BTH TVer other than 0, the one transport header version (IBA 1 §9.2, §9.6).
    BadTver,
    /// RC/UC: not from the QP's path: a GRH where the path has none or none where it has one,
    /// an SGID other than the path's DGID, or a DGID other than the port GID the path's SGID
    /// index names (IBA 1 §9.6.1.5).
    GrhNotPath,
    /// P_Key does not match (IBA 1 §10.9.3).
    PkeyMismatch,
    /// Q_Key does not match the QP's (IBA 1 §10.2.4).
    QkeyMismatch,
    /// A UD datagram found no posted receive (IBA 1 §9.8.3.2: silently dropped).
    NoRecvPosted,
    /// RC/UC packet for a QP with no connected-QP engine.
    NoConnectedEngine,
    /// A send while the port was not Active (the link layer discards it; the WR completes).
    TxPortNotActive,
    /// An SMP the SMA dropped: a directed-route hop rule broken (IBA 1 §14.2.2) or an M_Key
    /// violation (IBA 1 §14.2.4).
    SmpDiscarded,
}

/// Counters of one HCA.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HcaCounters {
    /// Packets put on a port (or looped back).
    pub tx_packets: u64,
    /// Packets arriving on a port (or looped back).
    pub rx_packets: u64,
    /// Datagrams placed into a receive buffer (one per QP copy for multicast).
    pub rx_delivered: u64,
    /// SMPs the SMA answered.
    pub smp_answered: u64,
    /// Configuration writes not applied: of a kind an HCA does not take (LFT, MFT), for a port it
    /// does not have, or with an undefined MTU code.
    pub config_ignored: u64,
    drops: Vec<u64>,
}

impl HcaCounters {
    /// Packets dropped for `reason`.
    pub fn drops(&self, reason: HcaDropReason) -> u64 {
        self.drops.get(reason as usize).copied().unwrap_or(0)
    }
    /// Every reason with a non-zero count, in declaration order.
    pub fn nonzero_drops(&self) -> Vec<(HcaDropReason, u64)> {
        HcaDropReason::ALL
            .iter()
            .map(|&r| (r, self.drops(r)))
            .filter(|&(_, n)| n > 0)
            .collect()
    }
    /// All drops together.
    pub fn total_drops(&self) -> u64 {
        self.drops.iter().sum()
    }
    pub(crate) fn count(&mut self, reason: HcaDropReason) {
        let i = reason as usize;
        if self.drops.len() <= i {
            self.drops.resize(HcaDropReason::ALL.len(), 0);
        }
        self.drops[i] += 1;
    }
}

//! The vocabulary a consumer uses with an emulated HCA, shaped after the verbs interface (IBA 1 ch. 11,
//! libibverbs): queue-pair types and states, work requests and work completions with their status
//! values, memory-region handles and access rights (IBA 1 §10.6). The HCA ([`crate::hw::hca`]) and
//! the connected-QP engine ([`crate::hw::rc`]) share these types.

use ipoib_wire::QKey;
use ipoib_wire::{Gid, Mtu};
use std::time::Duration;

/// Queue pair number (24 bits).
pub type Qpn = u32;

/// Transport service of a QP (IBA 1 §9.8).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum QpType {
    /// Unreliable datagram (also QP0/QP1).
    Ud,
    /// Reliable connection.
    Rc,
    /// Unreliable connection.
    Uc,
}

/// QP state (IBA 1 §10.3.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum QpState {
    /// Just created.
    #[default]
    Reset,
    /// Initialised: receives may be posted.
    Init,
    /// Ready to receive.
    Rtr,
    /// Ready to send.
    Rts,
    /// Send queue drained.
    Sqd,
    /// Send queue error: the send queue stopped after an error completion.
    Sqe,
    /// Error: every outstanding request completes with [`WcStatus::WrFlushErr`].
    Err,
}

/// Global route to a destination (for a UD address handle or a connected QP's path).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct GlobalRoute {
    /// Destination GID.
    pub dgid: Gid,
    /// Index of the source GID in the port's GID table.
    pub sgid_index: u8,
    /// Flow label (20 bits).
    pub flow_label: u32,
    /// Hop limit.
    pub hop_limit: u8,
    /// Traffic class.
    pub tclass: u8,
}

/// Where a UD datagram goes, or the primary path of a connected QP (IBA 1 §11.2.2, ibv_ah_attr).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AddressHandle {
    /// Destination LID (a multicast LID for a multicast send).
    pub dlid: u16,
    /// Service level.
    pub sl: u8,
    /// Offset added to the port's base LID to make the SLID (LMC path bits).
    pub src_path_bits: u8,
    /// GRH to add; required for multicast (IBA 1 §10.5.2).
    pub grh: Option<GlobalRoute>,
    /// Port number to send from.
    pub port: u8,
}

/// Operation of a send work request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SendOp {
    /// SEND.
    Send,
    /// SEND with immediate data.
    SendWithImm(u32),
    /// RDMA WRITE to the remote address (RC/UC).
    RdmaWrite {
        /// Remote virtual address.
        remote_addr: u64,
        /// Remote key.
        rkey: u32,
    },
    /// RDMA WRITE with immediate data (consumes a receive at the responder).
    RdmaWriteWithImm {
        /// Remote virtual address.
        remote_addr: u64,
        /// Remote key.
        rkey: u32,
        /// Immediate data.
        imm: u32,
    },
    /// RDMA READ from the remote address (RC only) into `local`, or, when `local` is `None`, into
    /// the completion's `data` (the engine's standalone use).
    RdmaRead {
        /// Remote virtual address.
        remote_addr: u64,
        /// Remote key.
        rkey: u32,
        /// Bytes to read.
        len: u32,
        /// Where the bytes land: a registered local region granting local write (IBA 1 §10.6.3.1).
        local: Option<LocalBuf>,
    },
}

/// Where the data of an RDMA READ lands (IBA 1 §10.6: a local access names its region by the
/// L_Key and a virtual address inside it; ibv_sge without the length, which is the READ's).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LocalBuf {
    /// L_Key of the region ([`MrHandle::lkey`]).
    pub lkey: u32,
    /// Virtual address of the first byte: [`MrHandle::addr`] plus the offset into the region.
    pub addr: u64,
}

/// Access rights of a memory region (IBA 1 §10.6.3.1; ibv_access_flags). Local read is always
/// granted; combine rights with `|`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Access(u8);

impl Access {
    /// Local read only.
    pub const NONE: Access = Access(0);
    /// The HCA may write the region for local operations (RDMA READ responses landing there).
    pub const LOCAL_WRITE: Access = Access(1);
    /// Incoming RDMA WRITEs may write the region (requires [`Access::LOCAL_WRITE`]).
    pub const REMOTE_WRITE: Access = Access(2);
    /// Incoming RDMA READs may read the region.
    pub const REMOTE_READ: Access = Access(4);

    /// Every right in `other` is granted here.
    pub const fn contains(self, other: Access) -> bool {
        self.0 & other.0 == other.0
    }

    /// The rights of both (`|` in const context).
    pub const fn union(self, other: Access) -> Access {
        Access(self.0 | other.0)
    }
}

impl core::ops::BitOr for Access {
    type Output = Access;
    fn bitor(self, rhs: Access) -> Access {
        Access(self.0 | rhs.0)
    }
}

/// A registered memory region as the consumer sees it (IBA 1 §10.6; ibv_mr): its keys, the
/// virtual address of its first byte, its length and rights.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct MrHandle {
    /// Local key: names the region in local accesses ([`LocalBuf`], `Hca::mr_read`).
    pub lkey: u32,
    /// Remote key: what a peer puts in its RDMA requests (RETH R_Key).
    pub rkey: u32,
    /// Virtual address of byte 0 (remote requests address the region from here).
    pub addr: u64,
    /// Length in bytes.
    pub len: usize,
    /// Access rights.
    pub access: Access,
}

/// Destination of a UD send.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct UdDest {
    /// Address handle.
    pub ah: AddressHandle,
    /// Remote QPN (0xFFFFFF for multicast).
    pub remote_qpn: Qpn,
    /// Q_Key; a value with the high bit set means "use the QP's own Q_Key" (IBA 1 §10.2.4).
    pub remote_qkey: QKey,
    /// P_Key index to send with (QP1 may choose per datagram; others use the QP's).
    pub pkey_index: Option<u16>,
}

/// A send work request. The emulation carries the bytes in the request (`data`), or, for a SEND
/// or RDMA WRITE on an RC/UC QP, names them in a registered region (`local`, one gather element)
/// that the HCA reads as it builds each packet; an RDMA READ names where its data lands with a
/// [`LocalBuf`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SendWr {
    /// Returned in the completion.
    pub wr_id: u64,
    /// Operation.
    pub op: SendOp,
    /// The message (for RDMA READ, or when `local` is set: ignored).
    pub data: Vec<u8>,
    /// RC/UC SEND or RDMA WRITE: the message is these bytes of a registered region instead of
    /// `data`, read when each packet is built. A key, range or region that does not (or no
    /// longer) serve completes the request with [`WcStatus::LocProtErr`] and moves the QP to the
    /// error state (IBA 1 §10.6 local access checks, §10.3.1).
    pub local: Option<LocalSge>,
    /// UD only: where to.
    pub ud: Option<UdDest>,
    /// Ask for a completion even if the QP signals only on request.
    pub signaled: bool,
    /// Set the BTH solicited-event bit.
    pub solicited: bool,
}

impl SendWr {
    /// A signaled SEND of `data` on a connected QP (no UD destination, no immediate data).
    pub fn send(wr_id: u64, data: Vec<u8>) -> SendWr {
        SendWr {
            wr_id,
            op: SendOp::Send,
            data,
            local: None,
            ud: None,
            signaled: true,
            solicited: false,
        }
    }

    /// The message length in bytes: `local`'s when set, else `data`'s (RDMA READ: see its `len`).
    pub fn data_len(&self) -> usize {
        self.local.map_or(self.data.len(), |l| l.len as usize)
    }
}

/// One gather element of a send work request (ibv_sge): `len` bytes from `buf` of a registered
/// region, which local read reaches (IBA 1 §10.6.3.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LocalSge {
    /// Region (L_Key) and virtual address of the first byte.
    pub buf: LocalBuf,
    /// Bytes.
    pub len: u32,
}

/// A receive work request: a buffer of `capacity` bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RecvWr {
    /// Returned in the completion.
    pub wr_id: u64,
    /// Bytes the buffer holds (for UD including the 40-byte GRH area, as verbs does).
    pub capacity: u32,
}

/// Completion status (IBA 1 §11.4.2.1, ibv_wc_status).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WcStatus {
    /// Success.
    Success,
    /// Local length error (message larger than the receive buffer or the path allows).
    LocLenErr,
    /// Local QP operation error.
    LocQpOpErr,
    /// Local protection error.
    LocProtErr,
    /// Flushed because the QP went to the error state.
    WrFlushErr,
    /// Remote invalid request (NAK invalid request).
    RemInvReqErr,
    /// Remote access error (NAK remote access).
    RemAccessErr,
    /// Remote operational error.
    RemOpErr,
    /// Transport retry counter exceeded (no ACK after retry_count retries).
    RetryExcErr,
    /// RNR retry counter exceeded.
    RnrRetryExcErr,
    /// Bad response (unexpected opcode).
    BadRespErr,
    /// Remote aborted.
    RemAbortErr,
    /// Fatal error.
    FatalErr,
}

/// What a completion completes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WcOpcode {
    /// A send.
    Send,
    /// An RDMA write.
    RdmaWrite,
    /// An RDMA read.
    RdmaRead,
    /// A receive.
    Recv,
    /// A receive consumed by an RDMA write with immediate.
    RecvRdmaWithImm,
}

/// A work completion (ibv_wc). Receive completions carry the received bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Completion {
    /// From the work request.
    pub wr_id: u64,
    /// Status.
    pub status: WcStatus,
    /// Operation.
    pub opcode: WcOpcode,
    /// The QP it belongs to.
    pub qpn: Qpn,
    /// Bytes transferred (receives of UD: including the 40 GRH bytes, as verbs).
    pub byte_len: u32,
    /// Immediate data, when present.
    pub imm: Option<u32>,
    /// Receive: source QP (UD).
    pub src_qp: Qpn,
    /// Receive: source LID.
    pub slid: u16,
    /// Receive: SL.
    pub sl: u8,
    /// Receive: DLID path bits.
    pub dlid_path_bits: u8,
    /// Receive: P_Key index the packet matched.
    pub pkey_index: u16,
    /// Receive (UD): the GRH when the packet had one.
    pub grh: Option<ipoib_wire::ib::GrhRepr>,
    /// Receive: the message (without GRH); for an RDMA READ without a [`LocalBuf`]: the data read.
    pub data: Vec<u8>,
}

/// Connection parameters of an RC/UC QP (what modify_qp to RTR/RTS sets; ibv_qp_attr).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ConnectedAttr {
    /// Primary path.
    pub path: AddressHandle,
    /// Remote QPN.
    pub dest_qpn: Qpn,
    /// First PSN this QP expects to receive.
    pub rq_psn: u32,
    /// First PSN this QP sends.
    pub sq_psn: u32,
    /// Path MTU (an undefined code is refused as an invalid attribute).
    pub path_mtu: Mtu,
    /// P_Key index.
    pub pkey_index: u16,
    /// Transport retries before RetryExcErr (0..=7).
    pub retry_count: u8,
    /// RNR retries (0..=6; 7 = infinite).
    pub rnr_retry: u8,
    /// Local ACK timeout exponent: 4.096 µs × 2^timeout (IBA 1 §9.7.6.1.3); 0 = infinite.
    pub timeout: u8,
    /// RNR NAK timer code this QP advertises as responder (IBA 1 Table 45).
    pub min_rnr_timer: u8,
    /// Outstanding RDMA reads/atomics as requester.
    pub max_rd_atomic: u8,
    /// Outstanding RDMA reads/atomics accepted as responder.
    pub max_dest_rd_atomic: u8,
}

impl ConnectedAttr {
    /// The local ACK timeout as a duration (`None` for infinite).
    pub fn ack_timeout(&self) -> Option<Duration> {
        (self.timeout != 0).then(|| Duration::from_nanos(4096u64 << self.timeout.min(31)))
    }
}

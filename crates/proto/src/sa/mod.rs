//! Subnet administration as protocol agents: [`SaServer`], the subnet administrator reached only
//! through SA MADs on QP1 (IBA 1 §15), and [`SaClient`], the requester side hosts use. Both are
//! [`crate::mad_agent::MadAgent`]s: MADs in through `handle_mad(now, ..)`, MADs out through
//! `poll_transmit`, timers through `poll_timeout`/`handle_timeout`, results through
//! `poll_event`. No IO, no clock, no threads; transaction IDs come from a seeded
//! [`crate::rng::Rng`], and every map whose order can reach the wire is a `BTreeMap`.
//!
//! Behaviour follows OpenSM as deployed (docs/DEPLOYED.md; OpenSM `osm_sa_mcmember_record.c`,
//! `osm_sa_path_record.c`, `osm_sa_informinfo.c`, `osm_sa.c`, `osm_prtn_config.c`) and Linux
//! (`drivers/infiniband/core/mad_rmpp.c`, `sa_query.c`) where they read IBA 1 in a particular way.
//!
//! Multi-MAD tables (IBA 1 §13.6, RMPP): the server cuts a GetTableResp that does not fit one MAD
//! into 200-byte DATA segments, each with the MAD, RMPP and SA headers repeated; PayloadLength is
//! what Linux's `mad_rmpp.c` sender writes (first segment: data + 20 × segments; last segment:
//! 20 + the bytes it carries; middle segments: 0), which is also what Linux's receiver reads
//! (`get_mad_len` uses the last segment's). The sender starts with a window of one segment and
//! sends up to each ACK's NewWindowLast (an ACK of a segment past that window, or whose
//! NewWindowLast is below its SegmentNumber, ends the transfer with an ABORT, status S2B or W2S;
//! an ACK older than the last, by window or segment, is ignored; Linux `process_rmpp_ack`); it
//! resends from the last acknowledged segment on a timeout and gives up after a bounded number of
//! tries. The receiver (client) acknowledges every in-order
//! segment with NewWindowLast = segment + [`rmpp::RECEIVE_WINDOW`] (the last one too: the window
//! never shrinks, [`rmpp::window_last`]), re-acknowledges duplicates and drops out-of-order
//! segments; ACKs carry the DATA's method with the R bit flipped, as Linux's
//! `ack_recv` does, so they reach the server agent of the class.
//!
//! Routing the host must do (see `crate::mad_agent::MadAgent`): requests of class SubnAdm (R bit
//! clear) go to the [`SaServer`] on the SM's port, and that includes RMPP ACK/STOP/ABORT MADs
//! (method GetTable, R bit clear, RMPPFlags.Active); ReportResp (0x86) answers the server's
//! Report, so it must reach the [`SaServer`] that sent it (by TID); Report (0x06, a request) must
//! reach the host's [`SaClient`], which answers it. Every other response goes by TID to the
//! [`SaClient`] that asked.

mod client;
pub mod rmpp;
mod server;

#[cfg(test)]
mod tests;

pub use client::{RequestId, SaClient, SaClientConfig, SaClientError, SaClientEvent, SaResponse};
pub use server::{
    resp_time_value, McastGroupInfo, SaServer, SaServerConfig, SaStats, CAP_MASK, CAP_MASK2,
    MAX_INFORMS, MAX_SERVICES,
};

use ipoib_wire::sa::JoinState;
use ipoib_wire::Gid;

/// What the SA tells the subnet manager (which builds multicast trees from it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SaEvent {
    /// A multicast group now exists (joined into existence or pre-created from partitions).
    GroupCreated {
        /// MGID.
        mgid: Gid,
        /// MLID.
        mlid: u16,
    },
    /// The membership of a group changed; `members` is the whole new list in PortGID order.
    McastGroup {
        /// MGID.
        mgid: Gid,
        /// MLID.
        mlid: u16,
        /// Every member port and its JoinState.
        members: Vec<(Gid, JoinState)>,
    },
    /// A group was deleted (its last FullMember left); its MLID is free again.
    GroupDeleted {
        /// MGID.
        mgid: Gid,
        /// MLID.
        mlid: u16,
    },
}

/// OpenSM's default subnet timeout (`subnet_timeout 18`, 4.096 µs × 2^18 ≈ 1.07 s), used as the
/// PacketLifeTime of paths and groups and as the ClassPortInfo RespTimeValue.
pub const DEFAULT_SUBNET_TIMEOUT: u8 = 18;

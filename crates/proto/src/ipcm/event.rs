//! The values the agent exchanges with its host and its consumer: commands for the host
//! ([`IpCmCommand`]), events for the consumer ([`IpCmEvent`]) and a REJ's ARI as a client reads
//! it ([`RejectAri`], Annex A11 §A11.6, §A11.7).

#[cfg(doc)]
use super::IpCm;
use super::{IpConnId, IpListenId};
use crate::cm::{ConnId, ConnectParams, ListenId};
use ipoib_wire::cm::RejReason;
use ipoib_wire::private_data::{IpCmAriCode, IpCmReject, RejectionLayer, SuggestedValue};
use ipoib_wire::Gid;
use std::net::{IpAddr, SocketAddr};

/// What the host must do for the agent (see the module docs for how it reports back).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IpCmCommand {
    /// Find the GID of `ip` in the IPoIB neighbour table; answer with [`IpCm::handle_resolved`].
    Resolve {
        /// The address.
        ip: IpAddr,
    },
    /// Find a PathRecord to `dgid`; answer with [`IpCm::handle_path`].
    PathQuery {
        /// The destination port's GID.
        dgid: Gid,
    },
    /// Listen on the CM; answer with [`IpCm::cm_listening`].
    CmListen {
        /// The Annex A11 service ID (CA11-6), or an iWarp-emulation one (iWarp mapping).
        service_id: u64,
        /// The mask (`u64::MAX`: this service ID only).
        mask: u64,
    },
    /// Stop a CM listener.
    CmUnlisten {
        /// Which.
        listen: ListenId,
    },
    /// Make a QP (as `params.transport` says), move it to Init, put its QPN in `params.qpn` and
    /// send the REQ; answer with [`IpCm::cm_connect_started`].
    CmConnect {
        /// The connection.
        conn: IpConnId,
        /// The REQ: service ID, path, A11 private data (or the iWarp Hello).
        params: ConnectParams,
    },
    /// Make a QP, accept with `private_data` and program the QP; on failure reject (reason 1)
    /// and call [`IpCm::cm_accept_failed`].
    CmAccept {
        /// The CM connection.
        conn: ConnId,
        /// The REP's private data.
        private_data: Vec<u8>,
    },
    /// Reject a REQ.
    CmReject {
        /// The CM connection.
        conn: ConnId,
        /// The REJ reason (28 here).
        reason: RejReason,
        /// The ARI (Reject Info Length = its length).
        ari: Vec<u8>,
        /// The REJ's private data.
        private_data: Vec<u8>,
    },
    /// Release a connection (DREQ), or withdraw a REQ not answered yet.
    CmDisconnect {
        /// The CM connection.
        conn: ConnId,
    },
}

/// What a REJ's Additional Rejection Information says (Annex A11 §A11.7 Tables 3-5).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RejectAri {
    /// No ARI (Reject Info Length 0), as Linux's rdma_cm sends with reason 28.
    Empty,
    /// Layer 0x00: the server's RDMA IP CM service refused (Table 4).
    IpCm {
        /// Table 5 code.
        code: IpCmAriCode,
        /// The suggested value for the refused field (oA11-2).
        suggested: SuggestedValue,
    },
    /// Layer 0x01: the RDMA-aware ULP refused; the bytes after the layer byte are the ULP's.
    Ulp(Vec<u8>),
    /// Any other ARI: another reject reason's (reason 4 carries a CA GUID), another layer, or a
    /// layer-0x00 ARI that is not in Table 4 form. The bytes as received.
    Other(Vec<u8>),
}

impl RejectAri {
    /// Decodes the ARI of a REJ with `reason`. Only reason 28 carries the Table 3 layers.
    pub fn decode(reason: RejReason, ari: &[u8]) -> RejectAri {
        if ari.is_empty() {
            return RejectAri::Empty;
        }
        if reason != RejReason::ConsumerDefined {
            return RejectAri::Other(ari.to_vec());
        }
        match RejectionLayer::of(ari) {
            Some(RejectionLayer::IpCmService) => match IpCmReject::parse(ari) {
                Ok(r) => RejectAri::IpCm {
                    code: r.code,
                    suggested: r.suggested,
                },
                Err(_) => RejectAri::Other(ari.to_vec()),
            },
            Some(RejectionLayer::RdmaAwareUlp) => RejectAri::Ulp(ari[1..].to_vec()),
            _ => RejectAri::Other(ari.to_vec()),
        }
    }

    /// The rejection layer (Table 3), when the ARI has one.
    pub fn layer(&self) -> Option<RejectionLayer> {
        match self {
            RejectAri::IpCm { .. } => Some(RejectionLayer::IpCmService),
            RejectAri::Ulp(_) => Some(RejectionLayer::RdmaAwareUlp),
            RejectAri::Empty | RejectAri::Other(_) => None,
        }
    }

    /// The Table 5 code of a layer-0x00 ARI.
    pub fn code(&self) -> Option<IpCmAriCode> {
        match self {
            RejectAri::IpCm { code, .. } => Some(*code),
            _ => None,
        }
    }

    /// True when the REJ shows that the server runs the RDMA IP CM service: a layer-0x00 ARI
    /// with a code other than Unspecified (only such a server checks the Table 1 fields,
    /// oA11-1). Unspecified implies neither the service nor a listener (Annex A11 §A11.6).
    pub fn shows_service(&self) -> bool {
        matches!(self, RejectAri::IpCm { code, .. } if *code != IpCmAriCode::Unspecified)
    }
}

/// What the agent tells its consumer (rdma_cm's events).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IpCmEvent {
    /// A REQ passed the Annex A11 checks and matched a listener: answer with [`IpCm::accept`]
    /// or [`IpCm::reject`] (`RDMA_CM_EVENT_CONNECT_REQUEST`).
    ConnectRequest {
        /// The new connection.
        conn: IpConnId,
        /// The listener it matched.
        listen: IpListenId,
        /// The IP protocol of the service ID (CA11-6); 6 (TCP) for iWarp emulation.
        protocol: u8,
        /// The client's address and port (Table 1 Source IP Address and Source Port; the Hello's
        /// Src IP and Local Port).
        src: SocketAddr,
        /// Our address (Destination IP Address) and the port of the service ID.
        dst: SocketAddr,
        /// The client's minor version (CA11-3: the connection runs at it; the Hello's MinVer).
        minor_version: u8,
        /// The consumer private data (Table 1 bytes 36-91, zero-padded by the CM; the REQ's
        /// bytes 64-91 after a Hello).
        private_data: Vec<u8>,
    },
    /// The connection is up (`RDMA_CM_EVENT_ESTABLISHED`).
    Established {
        /// Which.
        conn: IpConnId,
        /// The REP's (client; after the HelloReply for iWarp emulation) or RTU's (server)
        /// private data.
        private_data: Vec<u8>,
    },
    /// The peer rejected the connection (`RDMA_CM_EVENT_REJECTED`).
    Rejected {
        /// Which.
        conn: IpConnId,
        /// The REJ reason.
        reason: RejReason,
        /// The ARI, decoded.
        ari: RejectAri,
        /// The REJ's private data.
        private_data: Vec<u8>,
    },
    /// The connection was released, by either side (`RDMA_CM_EVENT_DISCONNECTED`).
    Disconnected {
        /// Which.
        conn: IpConnId,
        /// The peer sent the DREQ.
        by_peer: bool,
        /// The peer's DREQ or DREP private data.
        private_data: Vec<u8>,
    },
    /// The destination address could not be resolved to a GID (`RDMA_CM_EVENT_ADDR_ERROR`).
    AddressError {
        /// Which (forgotten now).
        conn: IpConnId,
    },
    /// No path to the destination (`RDMA_CM_EVENT_ROUTE_ERROR`).
    RouteError {
        /// Which (forgotten now).
        conn: IpConnId,
    },
    /// The peer's CM never answered our REQ or REP (`RDMA_CM_EVENT_UNREACHABLE`).
    Unreachable {
        /// Which.
        conn: IpConnId,
    },
    /// The host could not start the REQ or take the accepted request (no QP, the CM refused the
    /// parameters; `RDMA_CM_EVENT_CONNECT_ERROR`).
    ConnectError {
        /// Which.
        conn: IpConnId,
    },
    /// The host's CM refused the listener's service ID (another user holds it); the listener is
    /// gone.
    ListenError {
        /// Which.
        listen: IpListenId,
    },
}

impl IpCmEvent {
    /// The connection the event is about (`None` for [`IpCmEvent::ListenError`]).
    pub fn conn(&self) -> Option<IpConnId> {
        match self {
            IpCmEvent::ConnectRequest { conn, .. }
            | IpCmEvent::Established { conn, .. }
            | IpCmEvent::Rejected { conn, .. }
            | IpCmEvent::Disconnected { conn, .. }
            | IpCmEvent::AddressError { conn }
            | IpCmEvent::RouteError { conn }
            | IpCmEvent::Unreachable { conn }
            | IpCmEvent::ConnectError { conn } => Some(*conn),
            IpCmEvent::ListenError { .. } => None,
        }
    }
}

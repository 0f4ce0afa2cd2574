//! iWarp-emulated streams on a host ("Mapping of iWarp/TCP connections to InfiniBand", v0.30,
//! cited as "iWarp mapping"): the host's part of the contract the `ipoib_proto::ipcm` module docs
//! give in "iWarp emulation", carried out for [`IpCmApp`], and the consumer's stream calls.
//!
//! - The QP of an iWarp connection is made with no receives of its own
//!   ([`super::IpCmAppConfig::recv_depth`] does not apply): before the REQ (`CmConnect`) or the REP
//!   (`CmAccept`) leaves, it gets the `poll_recv_buffers()` buffers of `recv_size()` bytes the
//!   Hello or HelloReply advertises (`bufs`, iWarp mapping §II).
//! - Once the service reports [`ipoib_proto::ipcm::IpCmEvent::Established`] the application takes
//!   the stream ([`IpCm::take_iwarp_stream`]) and pumps it after every completion and every poll:
//!   the receive buffers `poll_recv_buffers` asks for, then the SENDs `poll_send` gives (at most
//!   [`SEND_WINDOW`] outstanding on the QP), each receive completion's bytes to `handle_message`
//!   in completion order (RC delivers in order, IBA 1 §9.7.7). A SEND that reaches the passive QP
//!   before the RTU establishes the connection (IBA 1 §12.9) and waits for the stream.
//! - A stream that fails (a message that breaks the mapping's rules, [`IwarpFailure::Stream`]), a
//!   work request that completes in error ([`IwarpFailure::Completion`], e.g. RC retries
//!   exhausted, IBA 1 §9.7.5.1.2) or one the HCA refuses ([`IwarpFailure::Verbs`]) releases the
//!   connection: the service sends the DREQ and its consumer hears `Disconnected`;
//!   [`IpCmApp::stream_failure`] says why.
//! - The consumer: [`IpCmApp::iwarp_listen`], [`IpCmApp::iwarp_connect`], then
//!   [`IpCmApp::stream_send`] and [`IpCmApp::stream_recv`] (FlowC 0 bytes, or FlowC 1 messages
//!   with [`IpCmApp::stream_recv_message`]); what is sent is posted on the host's next round.
//!
//! Invariants: a stream's receive buffers on the QP are exactly those it counts as posted (no
//! other receive is posted on its QP); no SEND leaves that the stream did not give; a stream
//! record goes when its QP is gone and its received bytes are read.

use super::{IpCmApp, IpCmAppError};
use crate::hw::hca::{Hca, VerbsError};
use crate::hw::verbs::{Completion, Qpn, RecvWr, SendWr, WcOpcode, WcStatus};
use crate::node::cm::{new_qp, CmAppConfig};
use crate::node::host::HostCtx;
use crate::Instant;
use ipoib_proto::cm::{Cm, ConnId};
#[cfg(doc)]
use ipoib_proto::ipcm::IpCm;
use ipoib_proto::ipcm::{IpConnId, IpListenId, IwarpConnect, IwarpServiceId};
use ipoib_proto::iwarp::{IwarpStream, StreamConfig, StreamError, StreamEvent};
use ipoib_wire::cm::TransportServiceType;
use ipoib_wire::PKey;
use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};

/// SENDs of one stream outstanding on its QP at most (the rest wait in the stream).
pub const SEND_WINDOW: u32 = 16;

/// Why an iWarp stream's connection was released.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum IwarpFailure {
    /// The peer broke the iWarp mapping's rules (the stream's reason).
    #[error("stream: {0}")]
    Stream(StreamError),
    /// A work request of the stream completed in error.
    #[error("completion {0:?}")]
    Completion(WcStatus),
    /// The HCA refused a work request of the stream.
    #[error("verbs: {0}")]
    Verbs(VerbsError),
}

/// One iWarp connection's QP and, once established, its stream.
#[derive(Debug)]
struct IwRec {
    conn: IpConnId,
    /// `None` once destroyed.
    qpn: Option<Qpn>,
    /// The stream once taken from the service.
    stream: Option<IwarpStream>,
    /// SENDs that arrived before the stream was taken, in order.
    early: Vec<Vec<u8>>,
    /// SENDs posted and not completed.
    outstanding: u32,
    failed: Option<IwarpFailure>,
    /// The service was asked to release the connection for `failed`.
    released: bool,
}

/// The iWarp connections of an [`IpCmApp`].
#[derive(Debug, Default)]
pub(super) struct Streams {
    recs: BTreeMap<IpConnId, IwRec>,
    by_qpn: BTreeMap<Qpn, IpConnId>,
}

impl Streams {
    /// True if `qpn` is an iWarp connection's QP.
    pub(super) fn owns(&self, qpn: Qpn) -> bool {
        self.by_qpn.contains_key(&qpn)
    }

    /// The QP `qpn` is gone.
    pub(super) fn qp_gone(&mut self, qpn: Qpn) {
        let Some(conn) = self.by_qpn.remove(&qpn) else {
            return;
        };
        let drop = self.recs.get_mut(&conn).is_some_and(|r| {
            r.qpn = None;
            r.stream.as_ref().map_or(0, |s| s.readable_bytes()) == 0
        });
        if drop {
            self.recs.remove(&conn);
        }
    }
}

/// Posts `n` receives of `size` bytes on `qpn`.
fn post_recvs(
    hca: &mut Hca,
    qpn: Qpn,
    n: u32,
    size: u32,
    next_wr: &mut u64,
) -> Result<(), VerbsError> {
    (0..n).try_for_each(|_| {
        *next_wr += 1;
        hca.post_recv(
            qpn,
            RecvWr {
                wr_id: *next_wr,
                capacity: size,
            },
        )
    })
}

impl IpCmApp {
    /// The service's iWarp connection for `CmConnect` of `conn` or `CmAccept` of CM connection
    /// `cm`, if it is one.
    pub(super) fn iwarp_conn(
        &self,
        conn: Option<IpConnId>,
        cm: Option<ConnId>,
    ) -> Option<IpConnId> {
        let c = conn.or_else(|| cm.and_then(|cm| self.ipcm.conn_of(cm)))?;
        self.ipcm.iwarp_stream(c).map(|_| c)
    }

    /// An iWarp connection's QP in Init with the stream's first receive buffers posted (the
    /// `bufs` of the Hello or HelloReply about to leave), counted as [`Self::make_qp`] counts.
    pub(super) fn make_iwarp_qp(
        &mut self,
        hca: &mut Hca,
        conn: IpConnId,
        transport: TransportServiceType,
        pkey: PKey,
    ) -> Option<Qpn> {
        let cfg = CmAppConfig {
            recv_depth: 0,
            ..self.qp_cfg
        };
        let Ok(qpn) = new_qp(hca, &cfg, self.cq, transport, pkey, &mut self.next_wr) else {
            self.counters.qp_errors += 1;
            return None;
        };
        self.counters.qps_created += 1;
        let (n, size) = match self.ipcm.iwarp_stream_mut(conn) {
            Some(s) => (s.poll_recv_buffers(), s.recv_size()),
            None => (0, 0),
        };
        if post_recvs(hca, qpn, n, size, &mut self.next_wr).is_err() {
            self.counters.recv_errors += 1;
            self.destroy_qp(hca, qpn);
            return None;
        }
        self.iw.by_qpn.insert(qpn, conn);
        self.iw.recs.insert(
            conn,
            IwRec {
                conn,
                qpn: Some(qpn),
                stream: None,
                early: Vec::new(),
                outstanding: 0,
                failed: None,
                released: false,
            },
        );
        Some(qpn)
    }

    /// The service reported `conn` established: the stream is the application's from now on.
    pub(super) fn iwarp_established(&mut self, conn: IpConnId) {
        let Some(rec) = self.iw.recs.get_mut(&conn) else {
            return;
        };
        if rec.stream.is_some() {
            return;
        }
        let Some(mut s) = self.ipcm.take_iwarp_stream(conn) else {
            return;
        };
        for m in rec.early.drain(..) {
            s.handle_message(&m);
        }
        rec.stream = Some(s);
    }

    /// A completion on an iWarp connection's QP (not a flush).
    pub(super) fn iwarp_completion(
        &mut self,
        now: Instant,
        cm: ConnId,
        c: &Completion,
        ctx: &mut HostCtx<'_>,
    ) {
        let Some(&conn) = self.iw.by_qpn.get(&c.qpn) else {
            return;
        };
        let passive_down = self.qps.get(&cm).is_some_and(|r| !r.active && !r.up);
        let Some(rec) = self.iw.recs.get_mut(&conn) else {
            return;
        };
        let recv = matches!(c.opcode, WcOpcode::Recv | WcOpcode::RecvRdmaWithImm);
        if c.status != WcStatus::Success {
            rec.failed.get_or_insert(IwarpFailure::Completion(c.status));
        } else if recv {
            match rec.stream.as_mut() {
                Some(s) => s.handle_message(&c.data),
                None => rec.early.push(c.data.clone()),
            }
            if passive_down {
                // IBA 1 §12.9: the first message on the passive QP establishes the connection
                // when the RTU is late or lost.
                if let Some(agent) = ctx.agents.get_mut::<Cm>(self.cm) {
                    let _ = agent.notify_established(cm);
                }
            }
        } else {
            rec.outstanding = rec.outstanding.saturating_sub(1);
        }
        self.iwarp_pump(now, ctx);
    }

    /// Moves every live stream's receive buffers and SENDs to its QP, and releases the
    /// connections whose stream failed.
    pub(super) fn iwarp_pump(&mut self, now: Instant, ctx: &mut HostCtx<'_>) {
        let _ = now;
        let mut release = Vec::new();
        for rec in self.iw.recs.values_mut() {
            let (Some(qpn), Some(s)) = (rec.qpn, rec.stream.as_mut()) else {
                continue;
            };
            if rec.failed.is_none() {
                let n = s.poll_recv_buffers();
                let size = s.recv_size();
                if let Err(e) = post_recvs(ctx.hca, qpn, n, size, &mut self.next_wr) {
                    rec.failed = Some(IwarpFailure::Verbs(e));
                }
            }
            while rec.failed.is_none() && rec.outstanding < SEND_WINDOW {
                let Some(data) = s.poll_send() else {
                    break;
                };
                self.next_wr += 1;
                let wr = SendWr::send(self.next_wr, data);
                match ctx.hca.post_send(qpn, wr) {
                    Ok(()) => rec.outstanding += 1,
                    Err(e) => rec.failed = Some(IwarpFailure::Verbs(e)),
                }
            }
            while let Some(e) = s.poll_event() {
                if let StreamEvent::Error(e) = e {
                    rec.failed.get_or_insert(IwarpFailure::Stream(e));
                }
            }
            if rec.failed.is_some() && !rec.released {
                // Released once; the QP stays until TimeWait, the stream stops here.
                rec.released = true;
                release.push(rec.conn);
            }
        }
        if !release.is_empty() {
            // The service's CmDisconnect is carried out on the host's next round.
            ctx.poll_again();
        }
        for conn in release {
            self.counters.iwarp_failures += 1;
            // The service refuses when the connection is already going: nothing more to do.
            let _ = self.ipcm.disconnect(conn);
        }
    }

    /// Listens for iWarp-emulated connections to `addr` (ours, or `0.0.0.0` / `::`) on TCP
    /// `port` (0: an ephemeral one) on the service IDs of `service_id`; each accepted
    /// connection's stream gets `stream`'s buffers ([`IpCm::listen_iwarp`]). Requests are answered
    /// as [`super::AcceptPolicy`] says.
    pub fn iwarp_listen(
        &mut self,
        addr: IpAddr,
        port: u16,
        stream: StreamConfig,
        service_id: IwarpServiceId,
    ) -> Result<IpListenId, IpCmAppError> {
        Ok(self.ipcm.listen_iwarp(addr, port, stream, service_id)?)
    }

    /// Connects an iWarp-emulated connection to `dst` from `src_port` (`None`: an ephemeral
    /// one) with the Hello `cfg` describes and up to 28 bytes of private data
    /// ([`IpCm::connect_iwarp`]).
    pub fn iwarp_connect(
        &mut self,
        now: Instant,
        dst: SocketAddr,
        src_port: Option<u16>,
        cfg: &IwarpConnect,
        private_data: &[u8],
    ) -> Result<IpConnId, IpCmAppError> {
        Ok(self
            .ipcm
            .connect_iwarp(now, dst, src_port, cfg, private_data)?)
    }

    /// The stream of an iWarp connection (the service's until established, then ours).
    pub fn stream(&self, conn: IpConnId) -> Option<&IwarpStream> {
        self.iw
            .recs
            .get(&conn)
            .and_then(|r| r.stream.as_ref())
            .or_else(|| self.ipcm.iwarp_stream(conn))
    }

    fn stream_mut(&mut self, conn: IpConnId) -> Option<&mut IwarpStream> {
        match self.iw.recs.get_mut(&conn).and_then(|r| r.stream.as_mut()) {
            Some(s) => Some(s),
            None => self.ipcm.iwarp_stream_mut(conn),
        }
    }

    /// Queues bytes on an iWarp connection's stream ([`IwarpStream::send`]: FlowC 0 takes what
    /// fits, FlowC 1 one whole message); they leave on the host's next round.
    pub fn stream_send(&mut self, conn: IpConnId, data: &[u8]) -> Result<usize, IpCmAppError> {
        if let Some(f) = self.stream_failure(conn) {
            return Err(IpCmAppError::Iwarp(f));
        }
        let s = self.stream_mut(conn).ok_or(IpCmAppError::NoStream)?;
        s.send(data).map_err(IpCmAppError::Send)
    }

    /// Copies received bytes, in order, into `buf` ([`IwarpStream::recv`]); 0 when none wait.
    /// The buffers read are posted again on the host's next round.
    pub fn stream_recv(&mut self, conn: IpConnId, buf: &mut [u8]) -> usize {
        let n = self
            .iw
            .recs
            .get_mut(&conn)
            .and_then(|r| r.stream.as_mut())
            .map_or(0, |s| s.recv(buf));
        self.forget_closed(conn);
        n
    }

    /// The oldest received message of a FlowC 1 stream ([`IwarpStream::recv_message`]).
    pub fn stream_recv_message(&mut self, conn: IpConnId) -> Option<Vec<u8>> {
        let m = self
            .iw
            .recs
            .get_mut(&conn)
            .and_then(|r| r.stream.as_mut())
            .and_then(|s| s.recv_message());
        self.forget_closed(conn);
        m
    }

    /// Why an iWarp connection's stream stopped, if it did.
    pub fn stream_failure(&self, conn: IpConnId) -> Option<IwarpFailure> {
        self.iw.recs.get(&conn).and_then(|r| r.failed)
    }

    /// Drops the record of a connection whose QP is gone once its bytes are read.
    fn forget_closed(&mut self, conn: IpConnId) {
        let done = self.iw.recs.get(&conn).is_some_and(|r| {
            r.qpn.is_none() && r.stream.as_ref().map_or(0, |s| s.readable_bytes()) == 0
        });
        if done {
            self.iw.recs.remove(&conn);
        }
    }
}

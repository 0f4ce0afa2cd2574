//! The stand-in for a host's IPoIB interface until the real one exists (issue 4 replaces it): when
//! its port (port 1, or the one [`JoinApp::on_port`] names) becomes Active it joins the IPoIB broadcast group of each of its partitions that has one
//! (MCMemberRecord Set, FullMember, through the host's [`SaClient`]) and records the group's MLID,
//! Q_Key, MTU and rate.
//!
//! The request is the one Linux IPoIB sends for the broadcast group (`ipoib_multicast.c`
//! `ipoib_mcast_join`, `create == 0`): MGID `ff12:401b:<P_Key|0x8000>::ffff:ffff` (the scope the
//! partition gives), PortGID, JoinState FullMember and P_Key, component mask MGID | PortGID |
//! P_Key | JoinState; the SA created the group from partitions.conf (REFERENCE.md). It goes to the
//! SM LID the port was given, with the P_Key at index 0 of the port's table (Linux `sa_query.c`
//! uses the default P_Key's index, else index 0). A join that fails (the client already retried
//! on timeouts) is sent again after a backoff of 1 s doubling to 16 s, as IPoIB does
//! (REFERENCE.md "join backoff 1 s doubling to 16 s").
//!
//! The [`SaClient`]'s events belong to this application: responses to its own joins are consumed,
//! every other event (responses to requests others sent through the same client, Reports) is kept
//! in an inbox ([`JoinApp::take_events`]).
//!
//! Invariants: one outstanding request per group; a port that leaves Active forgets its joins
//! and joins again when it is Active again.

use crate::hw::hca::Port;
use crate::hw::mgmt::PortState;
use crate::hw::verbs::Completion;
use crate::node::host::{AgentId, App, HostCtx};
use ipoib_proto::mad_agent::MadAddr;
use ipoib_proto::sa::{RequestId, SaClient, SaClientError, SaClientEvent};
use ipoib_proto::time::Instant;
use ipoib_wire::sa::{mcr_mask, JoinState, McMemberRecordRepr, SaAttribute, SaMadRepr};
use ipoib_wire::{Gid, Mtu, PKey, QKey, Rate};
use std::any::Any;
use std::collections::VecDeque;
use std::time::Duration;

/// First retry delay after a failed join (Linux IPoIB: 1 s).
pub const JOIN_BACKOFF: Duration = Duration::from_secs(1);
/// Largest retry delay (Linux `IPOIB_MAX_BACKOFF_SECONDS`, 16 s).
pub const JOIN_BACKOFF_MAX: Duration = Duration::from_secs(16);

/// What the SA answered to a successful join.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JoinResult {
    /// Multicast LID.
    pub mlid: u16,
    /// The group's Q_Key.
    pub qkey: u32,
    /// The group's MTU.
    pub mtu: Mtu,
    /// The group's rate.
    pub rate: Rate,
    /// Service level.
    pub sl: u8,
    /// The JoinState the port now holds.
    pub join_state: JoinState,
    /// When the response arrived.
    pub at: Instant,
}

/// Where one broadcast join stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JoinStatus {
    /// Request sent, no answer yet.
    Pending(RequestId),
    /// Joined.
    Joined(JoinResult),
    /// The last attempt failed; another goes out at `retry_at`.
    Failed {
        /// Why.
        error: SaClientError,
        /// Next attempt.
        retry_at: Instant,
    },
}

/// One broadcast group this port joins.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BroadcastJoin {
    /// The partition's P_Key (with the full-member bit, as in the MGID).
    pub pkey: u16,
    /// The broadcast MGID.
    pub mgid: Gid,
    /// Where it stands.
    pub status: JoinStatus,
    /// Requests sent (first attempt and later ones; the client's own resends not counted).
    pub attempts: u32,
}

/// The application. See the module docs.
#[derive(Debug)]
pub struct JoinApp {
    client: AgentId,
    /// The port whose state it follows (the host's management port).
    port: u8,
    /// Every broadcast group of the subnet's partitions: (P_Key with 0x8000, MGID).
    groups: Vec<(u16, Gid)>,
    joins: Vec<BroadcastJoin>,
    active: bool,
    active_at: Option<Instant>,
    /// The address of the SA and our own port GID, from the port's configuration.
    sa: MadAddr,
    port_gid: Gid,
    inbox: VecDeque<SaClientEvent>,
}

impl JoinApp {
    /// An application using the [`SaClient`] agent `client`, joining those of `groups` (P_Key
    /// with the full-member bit, broadcast MGID) whose partition its port belongs to.
    pub fn new(client: AgentId, groups: Vec<(u16, Gid)>) -> JoinApp {
        JoinApp {
            client,
            port: crate::node::host::MGMT_PORT,
            groups,
            joins: Vec::new(),
            active: false,
            active_at: None,
            sa: MadAddr::gsi(0),
            port_gid: Gid::ZERO,
            inbox: VecDeque::new(),
        }
    }

    /// The same, following port `port` instead of port 1 (the host's management port, whose QP1
    /// the [`SaClient`] uses).
    pub fn on_port(self, port: u8) -> JoinApp {
        JoinApp { port, ..self }
    }

    /// The SA client agent this application uses.
    pub fn client(&self) -> AgentId {
        self.client
    }

    /// The broadcast joins of this port (empty until it is Active).
    pub fn joins(&self) -> &[BroadcastJoin] {
        &self.joins
    }

    /// True once the port is Active and every broadcast group it should join is joined.
    pub fn is_joined(&self) -> bool {
        self.active
            && self
                .joins
                .iter()
                .all(|j| matches!(j.status, JoinStatus::Joined(_)))
    }

    /// When the port last became Active.
    pub fn active_at(&self) -> Option<Instant> {
        self.active_at
    }

    /// When the last broadcast join completed, once all are.
    pub fn joined_at(&self) -> Option<Instant> {
        if !self.is_joined() {
            return None;
        }
        let last = self.joins.iter().filter_map(|j| match j.status {
            JoinStatus::Joined(r) => Some(r.at),
            _ => None,
        });
        last.max().or(self.active_at)
    }

    /// The address the SA is reached at (SM LID, QP1, P_Key index 0's key), once Active.
    pub fn sa_addr(&self) -> MadAddr {
        self.sa
    }

    /// SA client events that were not answers to this application's joins (oldest first).
    pub fn events(&self) -> &VecDeque<SaClientEvent> {
        &self.inbox
    }

    /// Takes those events out.
    pub fn take_events(&mut self) -> Vec<SaClientEvent> {
        self.inbox.drain(..).collect()
    }

    pub(crate) fn inbox_position(&self, id: RequestId) -> Option<usize> {
        self.inbox
            .iter()
            .position(|e| matches!(e, SaClientEvent::Response { id: r, .. } if *r == id))
    }

    pub(crate) fn remove_event(&mut self, pos: usize) -> Option<SaClientEvent> {
        self.inbox.remove(pos)
    }

    fn send_join(&mut self, now: Instant, i: usize, ctx: &mut HostCtx<'_>) {
        let Some(client) = ctx.agents.get_mut::<SaClient>(self.client) else {
            return;
        };
        let Some(j) = self.joins.get_mut(i) else {
            return;
        };
        let rec = McMemberRecordRepr {
            mgid: j.mgid,
            port_gid: self.port_gid,
            pkey: j.pkey,
            join_state: JoinState::FULL_MEMBER,
            ..McMemberRecordRepr::default()
        };
        let mad = SaMadRepr::mcmember_join(0, rec, mcr_mask::JOIN | mcr_mask::P_KEY);
        let id = client.request(now, mad, self.sa);
        j.status = JoinStatus::Pending(id);
        j.attempts += 1;
    }

    fn on_response(
        &mut self,
        now: Instant,
        i: usize,
        result: Result<ipoib_proto::sa::SaResponse, SaClientError>,
    ) {
        let Some(j) = self.joins.get_mut(i) else {
            return;
        };
        let rec = match result {
            Ok(r) => match r.attribute {
                Some(SaAttribute::McMemberRecord(rec)) => Ok(rec),
                _ => Err(SaClientError::Malformed),
            },
            Err(e) => Err(e),
        };
        j.status = match rec {
            Ok(rec) => JoinStatus::Joined(JoinResult {
                mlid: rec.mlid,
                qkey: rec.qkey,
                mtu: rec.mtu,
                rate: rec.rate,
                sl: rec.sl,
                join_state: rec.join_state,
                at: now,
            }),
            Err(error) => {
                let shift = j.attempts.saturating_sub(1).min(4);
                let backoff = (JOIN_BACKOFF * (1u32 << shift)).min(JOIN_BACKOFF_MAX);
                JoinStatus::Failed {
                    error,
                    retry_at: now + backoff,
                }
            }
        };
    }
}

impl App for JoinApp {
    fn on_completion(&mut self, _now: Instant, _c: &Completion, _ctx: &mut HostCtx<'_>) {}

    fn poll(&mut self, now: Instant, ctx: &mut HostCtx<'_>) {
        while let Some(e) = ctx
            .agents
            .get_mut::<SaClient>(self.client)
            .and_then(SaClient::poll_event)
        {
            let mine = match &e {
                SaClientEvent::Response { id, .. } => self
                    .joins
                    .iter()
                    .position(|j| j.status == JoinStatus::Pending(*id)),
                SaClientEvent::Report { .. } => None,
            };
            match (mine, e) {
                (Some(i), SaClientEvent::Response { result, .. }) => {
                    self.on_response(now, i, result)
                }
                (_, e) => self.inbox.push_back(e),
            }
        }
        if !self.active {
            return;
        }
        for i in 0..self.joins.len() {
            if matches!(self.joins[i].status, JoinStatus::Failed { retry_at, .. } if retry_at <= now)
            {
                self.send_join(now, i, ctx);
            }
        }
    }

    fn poll_timeout(&self) -> Option<Instant> {
        self.joins
            .iter()
            .filter_map(|j| match j.status {
                JoinStatus::Failed { retry_at, .. } => Some(retry_at),
                _ => None,
            })
            .min()
    }

    fn on_port_change(&mut self, now: Instant, port: &Port, ctx: &mut HostCtx<'_>) {
        if port.num != self.port {
            return;
        }
        let active = port.state == PortState::Active && port.lid != 0;
        if active == self.active {
            return;
        }
        self.active = active;
        if let Some(c) = ctx.agents.get_mut::<SaClient>(self.client) {
            for j in &self.joins {
                if let JoinStatus::Pending(id) = j.status {
                    c.cancel(id);
                }
            }
        }
        self.joins.clear();
        if !active {
            return;
        }
        self.active_at = Some(now);
        self.port_gid = port.port_gid();
        self.sa = MadAddr {
            lid: port.sm_lid,
            qpn: 1,
            qkey: QKey::GSI.0,
            sl: port.sm_sl,
            pkey: port.pkeys.first().copied().unwrap_or(PKey::DEFAULT.0),
            grh: None,
        };
        self.joins = self
            .groups
            .iter()
            .filter(|&&(k, _)| port.pkeys.iter().any(|&p| PKey(p).same_partition(PKey(k))))
            .map(|&(pkey, mgid)| BroadcastJoin {
                pkey,
                mgid,
                status: JoinStatus::Failed {
                    error: SaClientError::Timeout,
                    retry_at: now,
                },
                attempts: 0,
            })
            .collect();
        for i in 0..self.joins.len() {
            self.send_join(now, i, ctx);
        }
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

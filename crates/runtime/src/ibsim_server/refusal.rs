//! Why [`IbsimServer`] refused a client (ibsim `sim_ctl_new_client` answers a refused CONNECT
//! with `SIM_CTL_ERROR` and nothing else, so the client learns no reason: libumad2sim prints only
//! "connect failed"), or refused it the SM role (SET_ISSM 1 answered `SIM_CTL_ERROR`, which
//! libumad2sim ignores: `umad2sim.c` opens the `issm` device whatever `sim_client_set_sm`
//! returns, so OpenSM refused the role runs on as an SM that never gets the SA's requests and
//! says nothing, docs/IBSIM.md). The server keeps the reason of each of the first
//! [`TOLD_REFUSALS`] refusals of its life for its owner to tell ([`IbsimServer::take_refusals`]);
//! later ones are only counted ([`super::ServerCounters::refused`],
//! [`super::ServerCounters::sm_role_refused`]), so a flood of CONNECTs neither grows memory nor
//! fills a log.

use super::{Client, IbsimServer};
use crate::ibsim::msg::ClientInfo;
use std::fmt;

/// Refusals whose reasons are kept, from the first of the server's life; later ones are only
/// counted.
pub const TOLD_REFUSALS: u64 = 10;

/// Why a CONNECT was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RefuseReason {
    /// Its payload is not a `sim_client_info`.
    Malformed,
    /// No node of the topology has that name or node description.
    NoSuchNode,
    /// The node is in the topology but no host of this server: a switch, or (`ipoib fabric
    /// --ibsim`, which serves its SM's CA only) a CA whose host runs in an `ipoib attach`
    /// process.
    NoHostHere,
    /// An SM client asked for a node where an SM runs already (ours, or another client).
    SmThere,
    /// Every slot up to [`super::ServerConfig::max_clients`] is taken.
    TooManyClients(u32),
    /// The slot's data socket could not be set up (the error).
    NoSlotSocket(String),
    /// The client's input socket (`<base>:in<tag>`, or its UDP port) cannot be reached (the
    /// error).
    NoInputSocket(String),
    /// The host has no HCA to attach a MAD agent to.
    NoAgent,
    /// The SM role could not be registered on the host's port.
    NoSmRole,
}

impl fmt::Display for RefuseReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RefuseReason::Malformed => write!(f, "not a sim_client_info"),
            RefuseReason::NoSuchNode => write!(f, "no such node"),
            RefuseReason::NoHostHere => write!(
                f,
                "not a CA this server attaches clients to (a switch, or a CA whose host runs in \
                 an `ipoib attach` process)"
            ),
            RefuseReason::SmThere => write!(f, "an SM runs on that node already"),
            RefuseReason::TooManyClients(n) => write!(f, "too many clients ({n} attached)"),
            RefuseReason::NoSlotSocket(e) => write!(f, "no data socket for it ({e})"),
            RefuseReason::NoInputSocket(e) => write!(f, "its input socket is unreachable ({e})"),
            RefuseReason::NoAgent => write!(f, "no HCA on that node"),
            RefuseReason::NoSmRole => write!(f, "cannot make it the node's SM"),
        }
    }
}

/// One refused CONNECT, or SET_ISSM 1.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The SM role (SET_ISSM 1) was refused to a client attached already, not its CONNECT.
    pub sm_role: bool,
    /// The tag of its socket names (umad2sim: its pid; UDP: its data port), when the request
    /// carried one.
    pub tag: Option<u32>,
    /// The node it asked for (empty: the default, the first host), when the request carried one.
    pub node: Option<String>,
    /// Why.
    pub reason: RefuseReason,
}

impl fmt::Display for Refusal {
    /// `refused client 1234 (node "h9"): no such node`, `refused the SM role to client 1234
    /// (node "h0"): an SM runs on that node already`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.sm_role {
            write!(f, "refused the SM role to client")?;
        } else {
            write!(f, "refused client")?;
        }
        if let Some(t) = self.tag {
            write!(f, " {}", t as i32)?;
        }
        match self.node.as_deref() {
            Some("") => write!(f, " (the default node)")?,
            Some(n) => write!(f, " (node {n:?})")?,
            None => {}
        }
        write!(f, ": {}", self.reason)
    }
}

/// The reasons kept, and how many refusals there were in all.
#[derive(Debug, Default)]
pub(super) struct Refusals {
    kept: Vec<Refusal>,
    seen: u64,
    /// Whether [`IbsimServer::told_refusals`] said that later refusals are only counted.
    told_more: bool,
}

impl IbsimServer {
    /// Refuses the CONNECT `info` (if it parsed) for `reason`: counts it and keeps the reason
    /// while fewer than [`TOLD_REFUSALS`] were kept. Always false (the CONNECT's answer).
    pub(super) fn refuse(&mut self, info: Option<&ClientInfo>, reason: RefuseReason) -> bool {
        self.counters.refused += 1;
        self.keep_refusal(Refusal {
            sm_role: false,
            tag: info.map(|i| i.id),
            node: info.map(|i| i.node_id.clone()),
            reason,
        });
        false
    }

    /// Refuses client `c` the SM role it asked for (SET_ISSM 1) for `reason`: counts it and
    /// keeps the reason as [`IbsimServer::refuse`] does. Always false (the SET_ISSM's answer).
    pub(super) fn refuse_sm_role(&mut self, c: &Client, reason: RefuseReason) -> bool {
        self.counters.sm_role_refused += 1;
        self.keep_refusal(Refusal {
            sm_role: true,
            tag: Some(c.tag),
            node: Some(c.name.clone()),
            reason,
        });
        false
    }

    fn keep_refusal(&mut self, r: Refusal) {
        if self.refusals.seen < TOLD_REFUSALS {
            self.refusals.kept.push(r);
        }
        self.refusals.seen = self.refusals.seen.saturating_add(1);
    }

    /// The refusals kept since the last call, oldest first (at most [`TOLD_REFUSALS`] in the
    /// server's life: a refusal beyond them is only counted).
    pub fn take_refusals(&mut self) -> Vec<Refusal> {
        std::mem::take(&mut self.refusals.kept)
    }

    /// What an owner tells of the refusals since the last call, a line each (no prefix): the
    /// kept ones ([`IbsimServer::take_refusals`]), then once, when more than [`TOLD_REFUSALS`]
    /// were refused, that further refusals are only counted. `ipoib ibsim-server`, `ipoib lab
    /// --sm opensm` and `ipoib fabric --ibsim` print these on standard error.
    pub fn told_refusals(&mut self) -> Vec<String> {
        // Asked at every turn of a serving loop, which has nothing to tell in nearly all of
        // them: no list taken, built and dropped then.
        let more = !self.refusals.told_more && self.refusals.seen > TOLD_REFUSALS;
        if self.refusals.kept.is_empty() && !more {
            return Vec::new();
        }
        let mut lines: Vec<String> = self.take_refusals().iter().map(|r| r.to_string()).collect();
        if more {
            self.refusals.told_more = true;
            lines.push(format!(
                "more than {TOLD_REFUSALS} refused (clients, SM roles); further ones only counted"
            ));
        }
        lines
    }
}

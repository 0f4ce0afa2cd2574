//! Checking the hosts' broadcast joins against the SA, and saying why a host is not joined.
//!
//! A host's own view ([`Subnet::is_joined`]) is not proof: a host with nothing to join counts
//! itself joined. Success is what the SA's member records say ([`Subnet::sa_joined`]): the host's
//! port GID is a FullMember of an IPoIB broadcast group (`ff1S:401b:<P_Key>::ffff:ffff`,
//! draft-ietf-ipoib-ip-over-infiniband-06 §5). When it is not, [`Subnet::join_problems`] names
//! what stands in the way, from the SM's, the port's and the SA's state.
//!
//! Invariant: everything here only reads; the cost is one pass over the SA's MGIDs plus a map
//! lookup per host and broadcast group.

use super::Subnet;
use crate::hw::hca::HcaDropReason;
use crate::hw::mgmt::PortState;
use crate::hw::topology::End;
use crate::node::sm::MAX_DR_HOPS;
use ipoib_wire::ipoib::mcast::{mgid_pkey, IpoibMgid};
use ipoib_wire::sa::JoinState;
use ipoib_wire::{Gid, PKey};
use std::fmt;

/// Why a host is not (verifiably) joined to an IPoIB broadcast group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JoinProblem {
    /// The SM cannot reach the host: more than [`MAX_DR_HOPS`] cables from the SM's port
    /// (`Some(hops)`), or no cable path at all (`None`). It gets no LID.
    Unreachable {
        /// Cables between the SM's port and the host on a shortest path.
        hops: Option<u32>,
    },
    /// The host's ports are cabled to the SM's only through another channel adapter, which does
    /// not forward SMPs (IBA 1 §14.2.2): the SM does not reach them and they get no LID.
    BehindCa,
    /// The SM did not configure the port: it is not Active with a LID.
    PortNotActive {
        /// The port's state.
        state: PortState,
        /// Its LID (0: none).
        lid: u16,
    },
    /// The SA holds no IPoIB broadcast group for any P_Key of the port's table: nothing to join
    /// (OpenSM pre-creates the group only for partitions with the `ipoib` flag, opensm(8)).
    NoBroadcastGroup {
        /// The port's P_Keys.
        pkeys: Vec<PKey>,
    },
    /// The host counts itself joined, but the SA does not list its port as a FullMember of any
    /// broadcast group.
    NotInSa,
    /// Nothing above: the join is still under way (no answer yet, or an error answer that the
    /// host retries).
    NotYet,
    /// Packets the host's HCA discarded, by reason (e.g. MADs arriving with no receive buffer
    /// posted on QP1, IBA 1 §9.8.3.2: lost requests or answers the host has to wait out).
    Drops(Vec<(HcaDropReason, u64)>),
}

impl fmt::Display for JoinProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JoinProblem::Unreachable { hops: Some(h) } => write!(
                f,
                "{h} hops from the SM's port, and the subnet manager reaches {MAX_DR_HOPS} at \
                 most (a directed route's limit, IBA 1 §14.2.2): it got no LID"
            ),
            JoinProblem::BehindCa => f.write_str(
                "reachable only through a channel adapter, which does not forward SMPs (IBA 1 \
                 §14.2.2): it got no LID",
            ),
            JoinProblem::Unreachable { hops: None } => {
                f.write_str("no cable path to the SM's port: it got no LID")
            }
            JoinProblem::PortNotActive { state, lid } => {
                write!(
                    f,
                    "port {state:?} with LID {lid}: the SM did not configure it"
                )
            }
            JoinProblem::NoBroadcastGroup { pkeys } => {
                let keys: Vec<String> = pkeys.iter().map(|k| format!("{k:#06x}")).collect();
                write!(
                    f,
                    "the SA has no IPoIB broadcast group for its P_Keys ({}): none of its \
                     partitions has the `ipoib` flag",
                    keys.join(", ")
                )
            }
            JoinProblem::NotInSa => f.write_str(
                "the host counts itself joined but the SA does not list its port as a full \
                 member of any broadcast group",
            ),
            JoinProblem::NotYet => {
                f.write_str("its join is still under way (unanswered or answered with an error)")
            }
            JoinProblem::Drops(d) => {
                let parts: Vec<String> = d
                    .iter()
                    .map(|(r, n)| match r {
                        HcaDropReason::NoRecvPosted => {
                            format!("{n} with no receive buffer posted (NoRecvPosted)")
                        }
                        r => format!("{n} {r:?}"),
                    })
                    .collect();
                write!(f, "its HCA discarded packets: {}", parts.join(", "))
            }
        }
    }
}

fn is_broadcast(mgid: &Gid) -> bool {
    IpoibMgid::parse(mgid).is_ok_and(|m| m.is_broadcast())
}

impl Subnet {
    /// The IPoIB broadcast groups the SA holds now, in MGID order.
    pub fn sa_broadcast_groups(&self) -> Vec<Gid> {
        self.sa()
            .group_mgids()
            .filter(|g| is_broadcast(g))
            .copied()
            .collect()
    }

    /// Per host: true when the SA's member records list the host's port GID as a FullMember of
    /// an IPoIB broadcast group. This, not the host's own view, is what a reported join must be.
    pub fn sa_joined(&self) -> Vec<bool> {
        let groups = self.sa_broadcast_groups();
        (0..self.host_count())
            .map(|i| self.sa_full_member(i, &groups))
            .collect()
    }

    /// True when the SA lists host `i`'s port as a FullMember of one of `groups`.
    fn sa_full_member(&self, i: usize, groups: &[Gid]) -> bool {
        let gid = self.gid(i);
        let sa = self.sa();
        groups.iter().any(|g| {
            sa.member_join_state(g, &gid)
                .is_some_and(|js| js.0 & JoinState::FULL_MEMBER.0 != 0)
        })
    }

    /// Hosts whose port belongs to more partitions than its P_Key table holds
    /// ([`crate::hw::hca::PKEY_TABLE_SIZE`] entries): each with the P_Keys the SM left out of the
    /// table (OpenSM: "ERR 0512 ... Pkey table is full"). Such a host cannot use those
    /// partitions, their broadcast groups included.
    pub fn pkey_tables_full(&self) -> Vec<(usize, Vec<PKey>)> {
        let sm = &self.plan;
        (0..self.host_count())
            .filter_map(|i| {
                let h = self.host(i);
                let port = End {
                    node: h.topo_node,
                    port: h.port,
                };
                let out = sm.pkeys_left_out(port);
                (!out.is_empty()).then_some((i, out))
            })
            .collect()
    }

    /// Nodes (switches and CAs) the SM cannot reach, with their hop count from its port: more than
    /// [`MAX_DR_HOPS`] cables away, they get no LID ([`crate::node::sm::SubnetManager::unreached`]).
    pub fn unreached_nodes(&self) -> Vec<(usize, u32)> {
        self.plan.unreached()
    }

    /// CA ports and switches (port 0) cabled to the SM's node only through a channel adapter,
    /// which does not forward SMPs: no LID, down
    /// ([`crate::node::sm::SubnetManager::behind_ca`]).
    pub fn behind_ca(&self) -> &[End] {
        self.plan.behind_ca()
    }

    /// Why host `i` is not joined, as far as the SM, its port and the SA tell; empty when both
    /// the host and the SA say it is.
    pub fn join_problems(&self, i: usize) -> Vec<JoinProblem> {
        let hops = self.plan.hops_from_sm(self.host(i).topo_node);
        let reached = matches!(hops, Some(h) if h <= MAX_DR_HOPS);
        if !reached {
            let node = self.host(i).topo_node;
            let sm = &self.plan;
            if hops.is_none() && sm.behind_ca().iter().any(|e| e.node == node) {
                return vec![JoinProblem::BehindCa];
            }
            return vec![JoinProblem::Unreachable { hops }];
        }
        let port = self.host_port(i);
        let (state, lid) = port.map_or((PortState::Down, 0), |p| (p.state, p.lid));
        if state != PortState::Active || lid == 0 {
            return vec![JoinProblem::PortNotActive { state, lid }];
        }
        let pkeys: Vec<PKey> = port.map(|p| p.pkeys.clone()).unwrap_or_default();
        let groups = self.sa_broadcast_groups();
        // Every group here has the IPoIB signature (`is_broadcast`), so each has a P_Key field.
        let usable = groups
            .iter()
            .filter_map(mgid_pkey)
            .any(|key| key.is_valid() && pkeys.iter().any(|&k| k.same_partition(key)));
        if !usable {
            return vec![JoinProblem::NoBroadcastGroup { pkeys }];
        }
        let mut v = match (self.is_joined(i), self.sa_full_member(i, &groups)) {
            (true, true) => return Vec::new(),
            (true, false) => vec![JoinProblem::NotInSa],
            (false, _) => vec![JoinProblem::NotYet],
        };
        let drops = self.host_device(i).hca().counters().nonzero_drops();
        if !drops.is_empty() {
            v.push(JoinProblem::Drops(drops));
        }
        v
    }
}

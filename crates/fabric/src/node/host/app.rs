//! What runs on a host above the HCA: management agents (boxed [`MadAgent`]s, reachable again as
//! their concrete type through [`Agents`]) and applications ([`App`]) that own QPs and CQs and
//! react to their completions inside the simulation (the IPoIB interface is one).

use crate::hw::hca::{Hca, Port};
use crate::hw::verbs::Completion;
use ipoib_proto::mad_agent::MadAgent;
use ipoib_proto::time::Instant;
use std::any::Any;

/// Identifies a management agent of a host.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct AgentId(pub usize);

/// Identifies an application of a host.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct AppId(pub usize);

/// A [`MadAgent`] that can be downcast.
pub trait AnyAgent: MadAgent {
    /// For downcasting.
    fn as_any(&self) -> &dyn Any;
    /// For downcasting.
    fn as_any_mut(&mut self) -> &mut dyn Any;
}

impl<T: MadAgent + Any> AnyAgent for T {
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

/// The management agents of a host, in registration order.
#[derive(Default)]
pub struct Agents {
    pub(crate) list: Vec<Box<dyn AnyAgent>>,
    /// Set by [`Agents::get_mut`]: an agent may have been handed work since the host cleared it.
    pub(crate) touched: bool,
}

impl Agents {
    /// Agent `id` as its concrete type.
    pub fn get<T: 'static>(&self, id: AgentId) -> Option<&T> {
        self.list.get(id.0)?.as_any().downcast_ref()
    }
    /// Agent `id` as its concrete type, mutably. (Inside a host callback the host polls the
    /// agent afterwards; from outside use [`super::Host::agent_mut`].)
    pub fn get_mut<T: 'static>(&mut self, id: AgentId) -> Option<&mut T> {
        self.touched = true;
        self.list.get_mut(id.0)?.as_any_mut().downcast_mut()
    }
    /// Number of agents.
    pub fn len(&self) -> usize {
        self.list.len()
    }
    /// True when there is none.
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }
}

/// What an application may use while the host runs it.
pub struct HostCtx<'a> {
    /// The HCA (create QPs/CQs, post work, attach multicast).
    pub hca: &'a mut Hca,
    /// The host's management agents (e.g. the SA client, to join a group).
    pub agents: &'a mut Agents,
    /// CQs whose completions the host should hand to this application from now on.
    pub route_cqs: &'a mut Vec<crate::hw::hca::CqId>,
    /// Configuration writes to other devices (only the subnet manager's application uses it;
    /// see [`crate::hw::mgmt`]).
    pub config: &'a mut Vec<(crate::hw::sim::NodeId, crate::hw::mgmt::Config)>,
    /// Set by [`HostCtx::poll_again`].
    pub(crate) again: bool,
}

impl HostCtx<'_> {
    /// Routes the completions of `cq` to the calling application.
    pub fn route_cq(&mut self, cq: crate::hw::hca::CqId) {
        self.route_cqs.push(cq);
    }

    /// Asks the host for another round of its agents and applications before it rests: what
    /// this application did gave work to one polled before it (e.g. the IPoIB interface queued an
    /// ARP request for the IP CM service), which would otherwise wait for the host's next event.
    pub fn poll_again(&mut self) {
        self.again = true;
    }

    /// Writes `config` into device `to` (the subnet manager's privilege; see [`crate::hw::mgmt`]).
    pub fn configure(&mut self, to: crate::hw::sim::NodeId, config: crate::hw::mgmt::Config) {
        self.config.push((to, config));
    }
}

/// An application on a host, driven quinn-proto style by the host device: completions of the
/// CQs routed to it arrive through `on_completion`; `poll` runs on every host activity and
/// when `poll_timeout` is due (it doubles as the timer handler, so it must tolerate being
/// called early or often). The one activity it does not run on: a packet the HCA takes
/// quietly (a SEND or RDMA WRITE First or Middle, no completion, answer or timer:
/// [`super::Host`]'s `receive_frame`) when the host's last round moved nothing; so `poll`
/// must not count on seeing a message's packets land before its last (neither does a verbs
/// consumer: nothing tells it of them), and a deadline belongs in `poll_timeout`.
pub trait App: Any {
    /// A completion of one of the application's CQs (owned: a receive's data may be kept or
    /// handed on without a copy).
    fn on_completion(&mut self, now: Instant, c: Completion, ctx: &mut HostCtx<'_>);
    /// Do due work: timers, sends.
    fn poll(&mut self, now: Instant, ctx: &mut HostCtx<'_>);
    /// When `poll` is next needed for a timer.
    fn poll_timeout(&self) -> Option<Instant>;
    /// True when `poll` at `now` would change nothing, the HCA and the agents as they are:
    /// nothing queued for the application to hand on, no timer due, no agent's output waiting
    /// for it. The host then ends its pump without another round of agents and applications
    /// ([`super::Host::drive`]). The default, false, is always right (the host polls once more).
    fn is_idle(&self, _now: Instant, _hca: &Hca, _agents: &Agents) -> bool {
        false
    }
    /// A port's attributes changed (SM configuration, link up/down).
    fn on_port_change(&mut self, _now: Instant, _port: &Port, _ctx: &mut HostCtx<'_>) {}
    /// For downcasting.
    fn as_any(&self) -> &dyn Any;
    /// For downcasting.
    fn as_any_mut(&mut self) -> &mut dyn Any;
}

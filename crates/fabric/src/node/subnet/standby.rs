//! More than one SM of ours on a subnet (IBA 1 §14.4): [`Subnet::add_sm`] installs another SM
//! agent and SA on a host, as the first one is installed on host 0. Each works by SMPs and takes
//! part in the master election by SMInfo (`crate::node::sm::election`): one becomes Master and
//! programs the subnet, the others are Standby and poll it.

use super::{Subnet, SubnetError};
use crate::node::host::AppId;
use crate::node::sm::{ElectionSettings, SmOptions, SmpSettings, SmpSm};
use crate::node::subnet::SmApp;
use ipoib_proto::sa::{SaServer, SaServerConfig};
use ipoib_wire::smp::SmState;
use std::time::Duration;

/// One SM of ours on the subnet ([`Subnet::sms`]).
#[derive(Debug, Clone, Copy)]
pub struct OurSm<'a> {
    /// The host it runs on (0-based).
    pub host: usize,
    /// Its application (multicast counters).
    pub app: &'a SmApp,
    /// Its SMP agent (sweeps, election).
    pub smp: &'a SmpSm,
    /// Its SA.
    pub sa: &'a SaServer,
}

/// What another SM of ours is made of: the settings the first one was built with.
#[derive(Debug, Clone)]
pub(super) struct SmTemplate {
    pub sm: SmOptions,
    pub smp: SmpSettings,
    pub sa: SaServerConfig,
    pub mcast_delay: Duration,
}

impl Subnet {
    /// Installs another SM of ours (by SMPs, with its SA) on host `host`'s port, with `election`
    /// settings (priority, polling); it starts once its port has its link. Call before the
    /// simulation runs for both SMs to discover together. A host runs at most one SM (its port
    /// has one SMInfo and one QP0, IBA 1 §14.2.5.13): a host that runs one already is refused.
    pub fn add_sm(
        &mut self,
        host: usize,
        election: ElectionSettings,
    ) -> Result<AppId, SubnetError> {
        let h = *self.hosts.get(host).ok_or(SubnetError::NoHost)?;
        let first = self.sm_app.map(|_| 0);
        if first
            .into_iter()
            .chain(self.more_sms.iter().map(|s| s.0))
            .any(|h| h == host)
        {
            return Err(SubnetError::SmOnHost(host));
        }
        let t = self.sm_template.clone();
        let guid = self.plan.topology().nodes()[h.topo_node].port_guid(h.port);
        let sa = SaServer::new(
            t.sa,
            ipoib_proto::subnet::SubnetModel::default(),
            self.partitions.clone(),
            self.sim.fork_rng(u64::MAX - 1 - host as u64),
        );
        let mut o = t.sm;
        o.partitions = Vec::new();
        let agent = SmpSm::new(o, self.partitions.clone(), t.smp).with_election(election);
        let (_, app) = super::install_sm(
            &mut self.sim,
            h.node,
            h.port,
            guid,
            sa,
            agent,
            t.mcast_delay,
        )?;
        self.more_sms.push((host, app));
        Ok(app)
    }

    /// Every SM of ours on the subnet: host 0's first ([`SmMode::Ours`](super::SmMode::Ours)),
    /// then those [`Subnet::add_sm`] installed, in that order.
    pub fn sms(&self) -> Vec<OurSm<'_>> {
        let first = self.sm_app.map(|app| (0, app));
        first
            .into_iter()
            .chain(self.more_sms.iter().copied())
            .filter_map(|(host, app)| {
                Some(OurSm {
                    host,
                    app: self.host_device(host).app::<SmApp>(app)?,
                    smp: self.smp_sm_on(host, app)?,
                    sa: self.sa_on(host, app)?,
                })
            })
            .collect()
    }

    /// The SM of ours that is Master now (SMInfo SMState, IBA 1 §14.4), if one is: after a
    /// failover or a handover not host 0's.
    pub fn master_sm(&self) -> Option<OurSm<'_>> {
        self.sms()
            .into_iter()
            .find(|s| s.smp.election().state() == SmState::Master)
    }

    /// The SMP agent of the SM application `app` on host `host` ([`Subnet::add_sm`]; host 0's
    /// is [`Subnet::smp_sm`]).
    pub fn smp_sm_on(&self, host: usize, app: AppId) -> Option<&SmpSm> {
        let d = self.host_device(host);
        let id = d.app::<SmApp>(app)?.smp_agent();
        d.agent::<SmpSm>(id)
    }

    /// The SA of the SM application `app` on host `host` ([`Subnet::add_sm`]; host 0's is
    /// [`Subnet::sa`]).
    pub fn sa_on(&self, host: usize, app: AppId) -> Option<&SaServer> {
        let d = self.host_device(host);
        let id = d.app::<SmApp>(app)?.sa_agent();
        d.agent::<SaServer>(id)
    }

    /// The SM application of host 0 ([`SmMode::Ours`](super::SmMode::Ours)), if any.
    pub fn sm_app_id(&self) -> Option<AppId> {
        self.sm_app
    }
}

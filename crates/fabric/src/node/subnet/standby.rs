//! More than one SM of ours on a subnet (IBA 1 §14.4): [`Subnet::add_sm`] installs another SM
//! agent and SA on a host, as the first one is installed on host 0. Each works by SMPs and takes
//! part in the master election by SMInfo (`crate::node::sm::election`): one becomes Master and
//! programs the subnet, the others are Standby and poll it.

use super::{Subnet, SubnetError};
use crate::node::host::AppId;
use crate::node::sm::{ElectionSettings, SmOptions, SmpSettings, SmpSm};
use crate::node::subnet::SmApp;
use ipoib_proto::sa::{SaServer, SaServerConfig};
use std::time::Duration;

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
    /// simulation runs for both SMs to discover together.
    pub fn add_sm(
        &mut self,
        host: usize,
        election: ElectionSettings,
    ) -> Result<AppId, SubnetError> {
        let h = *self.hosts.get(host).ok_or(SubnetError::NoHost)?;
        let t = self.sm_template.clone();
        let guid = self.topology.nodes()[h.topo_node].port_guid(h.port);
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
        Ok(app)
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

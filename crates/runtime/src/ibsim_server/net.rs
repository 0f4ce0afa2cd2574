//! [`IbsimNet`]: what an [`super::IbsimServer`] needs of the subnet it serves, its hosts by
//! index. A [`Subnet`] offers all its hosts (`ipoib ibsim-server`, `ipoib lab --sm opensm`); a
//! UDP fabric ([`FabricEmu`], `ipoib fabric --ibsim`) offers the one CA that runs in its
//! process, the SM's ([`ipoib_fabric::node::remote::FabricServer::sm_host`]): its other CAs are
//! slots whose hosts run in `ipoib attach` processes.

use crate::udp_fabric::FabricEmu;
use ipoib_fabric::hw::sim::Simulator;
use ipoib_fabric::hw::topology::Topology;
use ipoib_fabric::node::host::Host;
use ipoib_fabric::node::subnet::{HostHandle, Subnet};
use ipoib_fabric::Instant;

/// The hosts an ibsim server's clients attach to, and the simulator they live in.
pub trait IbsimNet {
    /// The topology (node names and descriptions clients name hosts by).
    fn topology(&self) -> &Topology;
    /// The simulator.
    fn sim(&self) -> &Simulator;
    /// The simulator, mutably.
    fn sim_mut(&mut self) -> &mut Simulator;
    /// Hosts a client can attach to.
    fn host_count(&self) -> usize;
    /// Host `i` (below [`IbsimNet::host_count`]).
    fn host(&self, i: usize) -> HostHandle;
    /// Runs `f` on host `i`'s device now, then lets the host act at once.
    fn with_host<R>(&mut self, i: usize, f: impl FnOnce(&mut Host, Instant) -> R) -> Option<R>;

    /// Host `i`'s device.
    ///
    /// # Panics
    /// When host `i`'s node is no [`Host`] (every [`IbsimNet::host`] is one).
    fn host_device(&self, i: usize) -> &Host {
        self.sim()
            .node::<Host>(self.host(i).node)
            .expect("an ibsim host is a Host")
    }

    /// The host on topology node `topo_node`, if any.
    fn host_of_topo_node(&self, topo_node: usize) -> Option<usize> {
        (0..self.host_count()).find(|&i| self.host(i).topo_node == topo_node)
    }

    /// Host `i`'s LID (of its host port; 0 before the SM gave one).
    fn lid(&self, i: usize) -> u16 {
        self.host_device(i)
            .hca()
            .port(self.host(i).port)
            .map_or(0, |p| p.lid)
    }
}

impl IbsimNet for Subnet {
    fn topology(&self) -> &Topology {
        Subnet::topology(self)
    }
    fn sim(&self) -> &Simulator {
        Subnet::sim(self)
    }
    fn sim_mut(&mut self) -> &mut Simulator {
        Subnet::sim_mut(self)
    }
    fn host_count(&self) -> usize {
        Subnet::host_count(self)
    }
    fn host(&self, i: usize) -> HostHandle {
        Subnet::host(self, i)
    }
    fn with_host<R>(&mut self, i: usize, f: impl FnOnce(&mut Host, Instant) -> R) -> Option<R> {
        Subnet::with_host(self, i, f)
    }
    fn host_device(&self, i: usize) -> &Host {
        Subnet::host_device(self, i)
    }
    fn host_of_topo_node(&self, topo_node: usize) -> Option<usize> {
        Subnet::host_of_topo_node(self, topo_node)
    }
    fn lid(&self, i: usize) -> u16 {
        Subnet::lid(self, i)
    }
}

/// One host, 0: the SM's CA.
impl IbsimNet for FabricEmu {
    fn topology(&self) -> &Topology {
        self.server().topology()
    }
    fn sim(&self) -> &Simulator {
        self.server().sim()
    }
    fn sim_mut(&mut self) -> &mut Simulator {
        self.server_mut().sim_mut()
    }
    fn host_count(&self) -> usize {
        1
    }
    fn host(&self, _i: usize) -> HostHandle {
        self.server().sm_host()
    }
    fn with_host<R>(&mut self, i: usize, f: impl FnOnce(&mut Host, Instant) -> R) -> Option<R> {
        if i != 0 {
            return None;
        }
        self.server_mut().with_sm_host(f)
    }
}

//! [`OsPort`]s of the fabric's IPoIB interfaces whose IP layer is the operating system
//! ([`ipoib_fabric::node::ipoib::IpoibApp`] installed for external IP): packets from a TUN device
//! enter the interface at the emulation's current time, and the interface's packets for the OS
//! leave through it.
//!
//! - [`SubnetHost`]: host `i`'s (first) interface of a [`Subnet`] (`ipoib lab`);
//! - [`HostInterface`]: one interface on one simulator node (a process emulating one host).
//!
//! Taking packets out does not drive the host (nothing it does creates work); putting one in
//! drives it at once, so what the packet causes leaves at the current virtual time.

use crate::tun::OsPort;
use ipoib_fabric::node::host::Host;
use ipoib_fabric::node::ipoib::{IpoibApp, IpoibHandle};
use ipoib_fabric::node::subnet::Subnet;
use ipoib_fabric::{NodeId, Simulator};

/// Host `i`'s first IPoIB interface of a [`Subnet`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SubnetHost(pub usize);

impl OsPort<Subnet> for SubnetHost {
    fn packet_from_os(&mut self, net: &mut Subnet, packet: &[u8]) {
        let (Some(h), Some(node)) = (
            net.ipoib_handle(self.0),
            (self.0 < net.host_count()).then(|| net.host(self.0).node),
        ) else {
            return;
        };
        inject(net.sim_mut(), node, h, packet);
    }

    fn packets_to_os(&mut self, net: &mut Subnet, out: &mut dyn FnMut(&[u8])) {
        let (Some(h), Some(node)) = (
            net.ipoib_handle(self.0),
            (self.0 < net.host_count()).then(|| net.host(self.0).node),
        ) else {
            return;
        };
        drain(net.sim_mut(), node, h, out);
    }
}

/// One IPoIB interface on simulator node `node`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostInterface {
    /// The host's node.
    pub node: NodeId,
    /// Where the interface lives on it.
    pub handle: IpoibHandle,
}

impl OsPort<Simulator> for HostInterface {
    fn packet_from_os(&mut self, sim: &mut Simulator, packet: &[u8]) {
        inject(sim, self.node, self.handle, packet);
    }

    fn packets_to_os(&mut self, sim: &mut Simulator, out: &mut dyn FnMut(&[u8])) {
        drain(sim, self.node, self.handle, out);
    }
}

fn inject(sim: &mut Simulator, node: NodeId, h: IpoibHandle, packet: &[u8]) {
    sim.with_node::<Host, _>(node, |host, now, tx| {
        from_os(host, h, now, packet);
        host.drive(now, tx);
    });
}

fn drain(sim: &mut Simulator, node: NodeId, h: IpoibHandle, out: &mut dyn FnMut(&[u8])) {
    let Some(host) = sim.node_mut::<Host>(node) else {
        return;
    };
    while let Some(p) = to_os(host, h) {
        out(&p);
    }
}

fn from_os(host: &mut Host, h: IpoibHandle, now: ipoib_fabric::Instant, packet: &[u8]) {
    if let Some(a) = host.app_mut::<IpoibApp>(h.app) {
        a.from_os(now, packet);
    }
}

fn to_os(host: &mut Host, h: IpoibHandle) -> Option<Vec<u8>> {
    host.app_mut::<IpoibApp>(h.app)?.to_os()
}

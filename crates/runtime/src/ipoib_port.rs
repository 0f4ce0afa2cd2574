//! [`OsPort`]s of the fabric's IPoIB interfaces whose IP layer is the operating system
//! ([`ipoib_fabric::node::ipoib::IpoibApp`] installed for external IP): packets from a TUN device
//! enter the interface at the emulation's current time, and the interface's packets for the OS
//! leave through it.
//!
//! - [`SubnetHost`]: host `i`'s (first) interface of a [`Subnet`] (`ipoib lab`);
//! - [`HostInterface`]: one interface on one simulator node (a process emulating one host).
//!
//! Taking packets out does not drive the host (nothing it does creates work); packets put in are
//! queued in the adapter, and the host is driven once per batch ([`OsPort::end_of_batch`]), at
//! the same virtual time, so what they cause leaves at once. A batch must not exceed the
//! adapter's queue (`ipoib_fabric::node::ipoib::FROM_OS_LIMIT`, 256; the driver's default batch
//! is 64).

use crate::tun::{OsPort, READ_BUFFER};
use ipoib_fabric::node::host::Host;
use ipoib_fabric::node::ipoib::{IpoibApp, IpoibHandle};
use ipoib_fabric::node::subnet::Subnet;
use ipoib_fabric::{NodeId, Simulator};
use ipoib_proto::ipoib::IpBuf;

/// Host `i`'s first IPoIB interface of a [`Subnet`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SubnetHost(pub usize);

impl SubnetHost {
    fn place(&self, net: &Subnet) -> Option<(NodeId, IpoibHandle)> {
        let h = net.ipoib_handle(self.0)?;
        (self.0 < net.host_count()).then(|| (net.host(self.0).node, h))
    }
}

impl OsPort<Subnet> for SubnetHost {
    fn packet_from_os(&mut self, net: &mut Subnet, packet: &[u8]) {
        if let Some((node, h)) = self.place(net) {
            queue(net.sim_mut(), node, h, packet);
        }
    }

    fn frame_from_os(&mut self, net: &mut Subnet, frame: Vec<u8>) -> Option<Vec<u8>> {
        let (node, h) = self.place(net)?;
        queue_frame(net.sim_mut(), node, h, frame)
    }

    fn end_of_batch(&mut self, net: &mut Subnet) {
        if let Some((node, _)) = self.place(net) {
            drive(net.sim_mut(), node);
        }
    }

    fn packets_to_os(&mut self, net: &mut Subnet, out: &mut dyn FnMut(IpBuf)) {
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
        queue(sim, self.node, self.handle, packet);
    }

    fn frame_from_os(&mut self, sim: &mut Simulator, frame: Vec<u8>) -> Option<Vec<u8>> {
        queue_frame(sim, self.node, self.handle, frame)
    }

    fn end_of_batch(&mut self, sim: &mut Simulator) {
        drive(sim, self.node);
    }

    fn packets_to_os(&mut self, sim: &mut Simulator, out: &mut dyn FnMut(IpBuf)) {
        drain(sim, self.node, self.handle, out);
    }
}

/// Queues `packet` in the interface's adapter (bounded: `FROM_OS_LIMIT`, more than a batch).
fn queue(sim: &mut Simulator, node: NodeId, h: IpoibHandle, packet: &[u8]) {
    sim.with_node::<Host, _>(node, |host, now, _| from_os(host, h, now, packet));
}

/// Queues a packet in its own buffer, after the room for the encapsulation header (no copy);
/// returns a buffer of a completed message the simulator kept (`Tx::spare_large`), to read the
/// next packets into.
fn queue_frame(
    sim: &mut Simulator,
    node: NodeId,
    h: IpoibHandle,
    frame: Vec<u8>,
) -> Option<Vec<u8>> {
    sim.with_node::<Host, _>(node, |host, now, tx| {
        if let Some(a) = host.app_mut::<IpoibApp>(h.app) {
            a.from_os_frame(now, frame);
        }
        tx.spare_large(READ_BUFFER)
    })
    .flatten()
}

/// Lets the host act on what was queued, now.
fn drive(sim: &mut Simulator, node: NodeId) {
    sim.with_node::<Host, _>(node, |host, now, tx| host.drive(now, tx));
}

fn drain(sim: &mut Simulator, node: NodeId, h: IpoibHandle, out: &mut dyn FnMut(IpBuf)) {
    let Some(host) = sim.node_mut::<Host>(node) else {
        return;
    };
    while let Some(p) = to_os(host, h) {
        out(p);
    }
}

fn from_os(host: &mut Host, h: IpoibHandle, now: ipoib_fabric::Instant, packet: &[u8]) {
    if let Some(a) = host.app_mut::<IpoibApp>(h.app) {
        a.from_os(now, packet);
    }
}

/// Taking a packet the adapter queued for the OS gives the host no work, so the host is not
/// marked for a round ([`Host::app_output_mut`]): a driver that drains after every event would
/// otherwise make every middle packet of a connected-mode message take one.
fn to_os(host: &mut Host, h: IpoibHandle) -> Option<IpBuf> {
    host.app_output_mut::<IpoibApp>(h.app)?.to_os_buf()
}

//! The RDMA IP CM service on a subnet's hosts (Annex A11): every host runs IPoIB and an
//! [`IpCmApp`] beside it; shortcuts to act on a host's service and to read what it saw.

use super::ipoib::{options, up};
use crate::hw::topology::Topology;
use crate::hw::verbs::QpType;
use crate::node::host::Host;
use crate::node::ipcm::{self, IpCmApp, IpCmAppConfig, IpCmHandle};
use crate::node::subnet::Subnet;
use crate::Instant;
use ipoib_proto::ipcm::{IpCmEvent, IpConnId};
use std::time::Duration;

/// A subnet whose hosts all run the IP CM service.
pub struct IpCmNet {
    /// The subnet (capture on unless the options said otherwise).
    pub net: Subnet,
    /// Each host's service.
    pub h: Vec<IpCmHandle>,
}

/// Builds `topo` with IPoIB on every host (IPv4 and IPv6, capture as `capture` says), runs it
/// until every interface has carrier and its link-local address, and installs the service on
/// every host with the defaults as `tune(host, cfg)` changes them.
pub fn ipcm_net(
    topo: Topology,
    seed: u64,
    capture: bool,
    tune: impl Fn(usize, &mut IpCmAppConfig),
) -> IpCmNet {
    let mut o = options(topo, seed);
    o.capture = capture;
    let mut net = up(o, true);
    let mut h = Vec::new();
    for i in 0..net.host_count() {
        let iface = net.ipoib_handle(i).expect("IPoIB on every host");
        let rng = net.sim().fork_rng(0x1c_0000 + i as u64);
        let mut cfg = IpCmAppConfig::default();
        tune(i, &mut cfg);
        let handle = net
            .with_host(i, |host, _| ipcm::install(host, iface, cfg, rng))
            .expect("a host")
            .expect("installed");
        h.push(handle);
    }
    IpCmNet { net, h }
}

impl IpCmNet {
    /// Host `i`'s service.
    pub fn app(&self, i: usize) -> &IpCmApp {
        app_of(&self.net, self.h[i], i)
    }

    /// Runs `f` on host `i`'s service now, then lets the host act.
    pub fn with_app<R>(&mut self, i: usize, f: impl FnOnce(&mut IpCmApp, Instant) -> R) -> R {
        let h = self.h[i];
        self.net
            .with_host(i, |host, now| {
                f(host.app_mut::<IpCmApp>(h.app).expect("the service"), now)
            })
            .expect("a host")
    }

    /// Runs `f` on host `i` with its service's handle now (the verbs of [`crate::node::ipcm`]),
    /// then lets the host act.
    pub fn with_host<R>(&mut self, i: usize, f: impl FnOnce(&mut Host, IpCmHandle) -> R) -> R {
        let h = self.h[i];
        self.net.with_host(i, |host, _| f(host, h)).expect("a host")
    }

    /// Runs until `done` holds or `limit` of virtual time passed; true when it held.
    pub fn run_until(&mut self, limit: Duration, done: impl Fn(View<'_>) -> bool) -> bool {
        let deadline = self.net.sim().now() + limit;
        let h = self.h.clone();
        self.net
            .run_until_with(deadline, |net| done(View { net, h: &h }))
    }

    /// Runs `d` of virtual time.
    pub fn run_for(&mut self, d: Duration) {
        self.net.sim_mut().run_for(d);
    }

    /// The events host `i`'s service saw about `conn`.
    pub fn events_of(&self, i: usize, conn: IpConnId) -> Vec<IpCmEvent> {
        self.app(i)
            .events()
            .filter(|(_, e)| e.conn() == Some(conn))
            .map(|(_, e)| e.clone())
            .collect()
    }

    /// RC QPs on host `i`'s HCA.
    pub fn rc_qps(&self, i: usize) -> usize {
        self.net.host_device(i).hca().qp_count(QpType::Rc)
    }
}

/// The subnet and the services, to check a condition while running.
#[derive(Clone, Copy)]
pub struct View<'a> {
    /// The subnet.
    pub net: &'a Subnet,
    /// Each host's service.
    pub h: &'a [IpCmHandle],
}

impl View<'_> {
    /// Host `i`'s service.
    pub fn app(&self, i: usize) -> &IpCmApp {
        app_of(self.net, self.h[i], i)
    }
}

/// Host `i`'s service on `net`.
pub fn app_of(net: &Subnet, h: IpCmHandle, i: usize) -> &IpCmApp {
    net.host_device(i)
        .app::<IpCmApp>(h.app)
        .expect("the service")
}

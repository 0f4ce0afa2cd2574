//! A whole emulated subnet in one call: [`Subnet::build`] instantiates a [`Topology`] in a
//! [`Simulator`] with a [`Host`] on every channel adapter and a [`Switch`]
//! on every switch, and puts the subnet manager on the first CA port.
//!
//! Multi-port HCAs: the SM treats every cabled CA port as its own end node (IBA 1 §4.1.1, §14.2.5:
//! each port its own LID and port GUID, hence its own GID; the node GUID shared), so every cabled
//! port it reaches is Active with its own LID and GID, the SA answers PathRecords to and from each, and the
//! switches route to each. A host's software (its management agents on QP1, the SA client, the
//! broadcast join, the IPoIB interface) runs on one port: its first port the SM reaches (host
//! port, [`HostHandle::port`]; [`Reach::first_configured_port`]), as Linux brings `ib0` up on an
//! Active port; its other ports carry no IPoIB interface. The SM reaches a CA port only over
//! switches, never through another CA (IBA 1 §14.2.2; [`SubnetManager::behind_ca`]): such ports
//! get no LID and stay down. A host the SM reaches on no port runs on its first cabled port and
//! never comes up. A CA with no cabled port ([`Topology::host_ports`]) is no host.
//!
//! - Every host runs one IPoIB interface ([`crate::node::ipoib::IpoibApp`] running
//!   [`ipoib_proto::ipoib::Interface`]) per IPoIB partition its port belongs to: a link with no
//!   address family on, which FullMember-joins the partition's broadcast group when the port
//!   becomes Active (draft-ietf-ipoib-ip-over-infiniband-06 §5), retrying with the interface's
//!   backoff, and sends nothing else (module `ipoib`).
//! - A host gets an [`SaClient`] agent on QP1 for the requests made through the subnet
//!   ([`Subnet::sa_request`], [`Subnet::sa_call`]) when the first one is made; its events wait in
//!   it until [`Subnet::take_sa_events`] or [`Subnet::sa_call`] take them, and it receives the
//!   SA's Reports ([`Host::serve_method`]) unless the host's interface runs IP (that interface
//!   subscribes to traps itself and takes them). A client made at once on every host would be
//!   polled after every event of every host for nothing while the subnet comes up.
//! - The SM's host (host 0, the first CA with a cabled port, on that port) runs, besides those, the
//!   [`SaServer`] (served for class SubnAdm), the [`SmpSm`] agent on QP0 (serving class SubnLid,
//!   so that traps reach it) and the [`SmApp`]: every cabled port comes up to Init at time zero
//!   (LinkUp, IBA 1 §7.2; switch port 0 with its switch), the agent discovers the subnet by
//!   directed-route SMPs, runs the brain ([`SubnetManager`]) on what it found and programs every
//!   device by SMPs, in OpenSM's order (`crate::node::sm::sweep`); the SA gets the subnet the
//!   brain configured, and the SM programs multicast trees as groups change. The SM host joins the
//!   broadcast group like every other host, as a node running OpenSM and IPoIB does.
//!   [`Subnet::add_sm`] puts another such SM (with its SA) on another host; the SMs elect a
//!   master by SMInfo (IBA 1 §14.4, `crate::node::sm::election`, priority from
//!   [`SubnetOptions::sm_election`]) and the others stand by. [`Subnet::plan`] is the brain run on the topology, which the harness uses for reachability
//!   and P_Key diagnostics.
//! - Partitions come from a [`PartitionConfig`] (OpenSM's default when none is given); the same
//!   configuration gives the SM its P_Key tables ([`partition_specs`]) and the SA its partitions
//!   and pre-created groups.
//!
//! - With [`SubnetOptions::ipoib`], every host runs one IPoIB interface with IP instead.
//!
//! SA and SM traffic are real MADs on QP1 and QP0 through the fabric. Only the harness's
//! [`Subnet::sweep_port`] and [`Subnet::move_lid`] use the simulator's configuration channel
//! ([`crate::hw::mgmt`]).
//!
//! - With [`SubnetOptions::sm_mode`] [`SmMode::None`] there is no SM and no SA of ours: nothing
//!   writes configuration, and every cabled port comes up physically at time zero (LinkUp, port
//!   state Init, IBA 1 §7.2; switch port 0, the management port, is no cable: it starts as the
//!   switch does), so that an external SM (OpenSM under `ibsim-run`, through the ibsim server)
//!   discovers the fabric through the SMAs and configures it with SubnSet SMPs. The hosts'
//!   software is installed as with our SM (the IPoIB links on the partitions the configuration
//!   gives each port); it finds the SM through the SM LID and SL the external SM writes into
//!   PortInfo (IBA 1 §14.2.5.6) and talks to that SM's SA.
//!
//! Invariants: hosts are numbered in topology node order (host `i` of a generated topology is node
//! `h{i}`); every random choice follows from the seed (each CA's RNG is forked from the
//! simulator's with its node index); nothing here iterates a hash map.

mod check;
mod events;
mod ipoib;
mod partition_list;
mod sm_node;
mod standby;

pub use check::JoinProblem;
pub use events::{CableError, MoveLidError};
pub use ipoib::{host_ipv4, host_ipv6, BroadcastJoin, IpoibOptions};
pub use partition_list::{broadcast_groups, partition_specs};
pub use sm_node::{GuidMftWrites, SmApp, SmStats, MCAST_DELAY, SA_PROCESSING_DELAY};
pub use standby::OurSm;

use crate::hw::capture::Capture;
use crate::hw::hca::Hca;
use crate::hw::link::LinkParams;
use crate::hw::rc::engine_factory;
use crate::hw::sim::{Device, NodeId, Simulator};
use crate::hw::switch::Switch;
use crate::hw::topology::{build, Built, End, NodeKind, Topology};
use crate::node::host::{AgentId, AppId, Host, MGMT_PORT};
use crate::node::ipoib::IpoibApp;
use crate::node::sm::{
    ElectionSettings, Reach, SmError, SmOptions, SmpSettings, SmpSm, SubnetManager,
};
use ipoib_proto::mad_agent::MadAddr;
use ipoib_proto::partitions::PartitionConfig;
use ipoib_proto::sa::{
    RequestId, SaClient, SaClientConfig, SaClientError, SaClientEvent, SaResponse, SaServer,
    SaServerConfig,
};
use ipoib_proto::time::Instant;
use ipoib_wire::mad::{Method, MgmtClass};
use ipoib_wire::sa::SaMadRepr;
use ipoib_wire::{Gid, Guid, PKey};
use std::collections::BTreeMap;
use std::time::Duration;

/// Stream of a host's random generator its [`SaClient`] draws transaction IDs from (stream 1 is
/// the SA client of the host's first IPoIB interface, module `ipoib`).
const CLIENT_STREAM: u64 = 2;

/// Who manages the subnet.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum SmMode {
    /// Our SM and SA on the first host, the SM working by SMPs (the module docs).
    #[default]
    Ours,
    /// No SM of ours: ports come up to Init and wait for an external SM (module docs).
    None,
}

/// What to build.
#[derive(Debug, Clone)]
pub struct SubnetOptions {
    /// The fabric.
    pub topology: Topology,
    /// Seed of every random choice.
    pub seed: u64,
    /// partitions.conf; `None` for OpenSM's default (partition 0x7fff, every port full, with the
    /// IPoIB broadcast group).
    pub partitions: Option<PartitionConfig>,
    /// Cable parameters (the rate is adjusted per cable, [`crate::hw::topology::link_params`]).
    pub link: LinkParams,
    /// Subnet-wide SM settings (its `partitions` field is replaced by [`partition_specs`]).
    pub sm: SmOptions,
    /// Our SM, or none (an external SM manages the subnet; module docs).
    pub sm_mode: SmMode,
    /// SA tunables (OpenSM's defaults, with `processing_delay` [`SA_PROCESSING_DELAY`]).
    pub sa: SaServerConfig,
    /// SA client timeouts and retries of every host.
    pub client: SaClientConfig,
    /// The SM's multicast coalescing delay ([`SmApp`]).
    pub mcast_delay: Duration,
    /// The SMP transport of the SM ([`SmMode::Ours`]).
    pub smp: SmpSettings,
    /// The SM's priority and polling of a master (IBA 1 §14.4, [`SmMode::Ours`]; OpenSM's
    /// defaults: priority 0, a poll every 10 s, 4 failed polls).
    pub sm_election: ElectionSettings,
    /// Hosts join their partitions' broadcast groups when Active (a link-only IPoIB interface per
    /// IPoIB partition of each host; module docs).
    pub auto_join: bool,
    /// Record every packet into an ERF capture from time zero.
    pub capture: bool,
    /// Run an IPoIB interface with IP on every host ([`crate::node::ipoib::IpoibApp`], module
    /// `ipoib`) instead of the link-only ones; `auto_join` is then ignored.
    pub ipoib: Option<IpoibOptions>,
    /// The LIDs our SM starts with (port GUID to LID, a switch by its node GUID; OpenSM's
    /// guid2lid, [`SmpSm::with_guid2lid`]): a port in it gets that LID back, as after a restart
    /// of OpenSM with its `/var/cache/opensm/guid2lid`. Empty by default.
    pub guid2lid: BTreeMap<Guid, u16>,
}

impl SubnetOptions {
    /// Defaults for `topology` and `seed`: default partitions, default links, joins on, no
    /// capture.
    pub fn new(topology: Topology, seed: u64) -> SubnetOptions {
        SubnetOptions {
            topology,
            seed,
            partitions: None,
            link: LinkParams::default(),
            sm: SmOptions::default(),
            sm_mode: SmMode::Ours,
            sa: SaServerConfig {
                processing_delay: SA_PROCESSING_DELAY,
                ..SaServerConfig::default()
            },
            client: SaClientConfig::default(),
            mcast_delay: MCAST_DELAY,
            smp: SmpSettings::default(),
            sm_election: ElectionSettings::default(),
            auto_join: true,
            capture: false,
            ipoib: None,
            guid2lid: BTreeMap::new(),
        }
    }
}

/// Why a subnet could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SubnetError {
    /// No channel adapter has a cabled port: nowhere to run the SM.
    #[error("no channel adapter with a cabled port")]
    NoHost,
    /// The subnet manager refused the topology.
    #[error("subnet manager: {0}")]
    Sm(SmError),
    /// [`Subnet::add_sm`] on a host (0-based) that already runs an SM of ours: its port has one
    /// SMInfo and one QP0 (IBA 1 §14.2.5.13, §14.4), so it runs at most one SM.
    #[error("host {0} already runs a subnet manager")]
    SmOnHost(usize),
}

/// One host of the subnet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostHandle {
    /// Its simulator node.
    pub node: NodeId,
    /// Its topology node index.
    pub topo_node: usize,
    /// The HCA port its software runs on (its first port the SM reaches; see the module docs).
    pub port: u8,
}

/// Progress of [`Subnet::run_until_joined_with`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JoinProgress {
    /// Hosts joined.
    pub joined: usize,
    /// Hosts.
    pub hosts: usize,
    /// Simulated time.
    pub now: Instant,
}

/// A built subnet. See the module docs.
#[derive(Debug)]
pub struct Subnet {
    sim: Simulator,
    built: Built,
    hosts: Vec<HostHandle>,
    /// Who manages the subnet.
    mode: SmMode,
    /// The SM's plan computed from the topology: what our SM assigns (by SMPs, from what it
    /// discovers, the same for the fabrics it reaches whole); the harness's view of LIDs,
    /// reachability and P_Key tables.
    plan: SubnetManager,
    /// Our SA and SM on host 0 ([`SmMode::Ours`]).
    sa: Option<AgentId>,
    sm_app: Option<AppId>,
    partitions: PartitionConfig,
    /// Per host, its IPoIB interfaces (none with `auto_join` off or no IPoIB partition).
    ipoib: ipoib::Interfaces,
    /// True when the interfaces run IP ([`SubnetOptions::ipoib`]).
    ip: bool,
    /// Per host, its [`SaClient`] once made (module docs), and their settings.
    clients: Vec<Option<AgentId>>,
    client_cfg: SaClientConfig,
    /// What another SM of ours is made of ([`Subnet::add_sm`]).
    sm_template: standby::SmTemplate,
    /// The other SMs of ours ([`Subnet::add_sm`]): (host, application), in the order added.
    more_sms: Vec<(usize, AppId)>,
}

impl Subnet {
    /// Builds the subnet (nothing runs yet: the SM starts at time zero on the first step).
    pub fn build(opts: SubnetOptions) -> Result<Subnet, SubnetError> {
        let topo = opts.topology;
        let sm_port = topo.first_ca_port().ok_or(SubnetError::NoHost)?;
        // Per topology node, the host port of a CA that is a host: its first port the SM reaches,
        // else (the SM reaches none) its first cabled port.
        let reach = Reach::new(&topo, sm_port);
        let mut host_port: Vec<Option<u8>> = vec![None; topo.nodes().len()];
        for e in topo.host_ports() {
            host_port[e.node] = Some(reach.first_configured_port(&topo, e.node).unwrap_or(e.port));
        }
        let sm_node = sm_port.node;
        let sm_port_guid = topo.nodes()[sm_node].port_guid(sm_port.port);
        let partitions = opts
            .partitions
            .unwrap_or_else(PartitionConfig::default_config);
        let groups = if opts.auto_join && opts.ipoib.is_none() {
            broadcast_groups(&partitions)
        } else {
            Vec::new()
        };
        let mut sim = Simulator::new(opts.seed);
        if opts.capture {
            sim.set_capture(Capture::new());
        }
        let client_cfg = opts.client;
        // A CA's random stream (the simulator's, forked with the node index) is not taken here:
        // its first link's and its SaClient's are forked from the same stream later (module
        // `ipoib`, `Subnet::sa_client`).
        let default_rate = opts.sm.rate;
        let built = build(&topo, &mut sim, opts.link, |i, node, _rng| {
            let port = host_port[i].unwrap_or(MGMT_PORT);
            let hca = Hca::with_port_guids(
                node.guid,
                (1..=node.ports).map(|p| node.port_guid(p)).collect(),
            )
            .with_engine(engine_factory());
            let mut hca = hca;
            // IBA 1 §14.2.5.2: what the node's SMA answers SubnGet(NodeDescription) with.
            hca.set_node_description(&node.desc);
            // IBA 1 §7.2: a port with no cable has no link (PortPhysicalState Polling, PortState
            // Down); diags and SMs explore only ports whose link is up.
            for p in (1..=node.ports).filter(|&p| topo.peer(i, p).is_none()) {
                if let Some(port) = hca.port_mut(p) {
                    port.set_phys(false);
                }
            }
            // The link trains to the cable's rate (PortInfo LinkWidthActive and LinkSpeedActive,
            // IBA 1 §14.2.5.6); a cable's MTU is its ends' MTUCap.
            for p in 1..=node.ports {
                if let (Some(port), Some((_, l))) = (hca.port_mut(p), topo.peer(i, p)) {
                    port.rate = topo.links()[l].rate.unwrap_or(default_rate);
                    port.mtu_cap = cable_mtu_cap(&topo.links()[l]);
                }
            }
            Box::new(Host::with_mgmt_port(hca, port))
        });
        switch_ports_train(&topo, &built, &mut sim, default_rate);
        let hosts: Vec<HostHandle> = topo
            .host_ports()
            .map(|e| HostHandle {
                node: built.nodes[e.node],
                topo_node: e.node,
                port: host_port[e.node].unwrap_or(e.port),
            })
            .collect();
        let sm_opts_base = opts.sm.clone();
        let mut sm_opts = opts.sm;
        sm_opts.partitions = partition_specs(&partitions, &topo, sm_port);
        // The plan keeps the topology: the subnet reads it there, no copy of its own.
        let sm = SubnetManager::new(topo, built.nodes.clone(), sm_port, sm_opts)
            .map_err(SubnetError::Sm)?;
        let links = ipoib::install_links(&mut sim, &hosts, &sm, &groups, client_cfg);
        // IBA 1 §7.2: a cabled port whose link trains is LinkUp, port state Init, until an SM
        // sets it Armed and Active.
        for &l in &built.links {
            sim.schedule_link_state(l, Instant::ZERO, true);
        }
        switch_port0_up(sm.topology(), &built, &mut sim);
        let (sa, sm_app) = if opts.sm_mode == SmMode::None {
            (None, None)
        } else {
            let sa_server = SaServer::new(
                opts.sa.clone(),
                ipoib_proto::subnet::SubnetModel::default(),
                partitions.clone(),
                sim.fork_rng(u64::MAX),
            );
            let mut o = sm_opts_base.clone();
            o.partitions = Vec::new();
            let agent = SmpSm::new(o, partitions.clone(), opts.smp)
                .with_election(opts.sm_election)
                .with_guid2lid(opts.guid2lid.clone());
            let (sa, app) = install_sm(
                &mut sim,
                built.nodes[sm_node],
                sm_port.port,
                sm_port_guid,
                sa_server,
                agent,
                opts.mcast_delay,
            )?;
            (Some(sa), Some(app))
        };
        let sm_template = standby::SmTemplate {
            sm: sm_opts_base,
            smp: opts.smp,
            sa: opts.sa,
            mcast_delay: opts.mcast_delay,
        };
        let n_hosts = hosts.len();
        let mut net = Subnet {
            sim,
            built,
            hosts,
            mode: opts.sm_mode,
            plan: sm,
            sa,
            sm_app,
            partitions,
            ipoib: links,
            ip: false,
            clients: vec![None; n_hosts],
            client_cfg,
            sm_template,
            more_sms: Vec::new(),
        };
        if let Some(o) = opts.ipoib {
            net.install_ipoib(o, client_cfg);
        }
        Ok(net)
    }

    /// The simulator.
    pub fn sim(&self) -> &Simulator {
        &self.sim
    }

    /// The simulator, mutably (faults, captures, running).
    pub fn sim_mut(&mut self) -> &mut Simulator {
        &mut self.sim
    }

    /// The topology.
    pub fn topology(&self) -> &Topology {
        self.plan.topology()
    }

    /// Simulator nodes and links of the topology's nodes and links.
    pub fn built(&self) -> &Built {
        &self.built
    }

    /// The partitions in force.
    pub fn partitions(&self) -> &PartitionConfig {
        &self.partitions
    }

    /// Number of hosts (CAs with a cabled port; host 0 runs the SM).
    pub fn host_count(&self) -> usize {
        self.hosts.len()
    }

    /// Host `i`.
    pub fn host(&self, i: usize) -> HostHandle {
        self.hosts[i]
    }

    /// Host `i`'s device.
    pub fn host_device(&self, i: usize) -> &Host {
        self.sim
            .node::<Host>(self.hosts[i].node)
            .expect("a subnet host is a Host")
    }

    /// Runs `f` on host `i`'s device now, then lets the host act at once, so what `f` queued
    /// (a work request, a CM message) leaves at the current virtual time.
    pub fn with_host<R>(&mut self, i: usize, f: impl FnOnce(&mut Host, Instant) -> R) -> Option<R> {
        let node = self.hosts.get(i)?.node;
        self.sim.with_node::<Host, _>(node, |host, now, tx| {
            let r = f(host, now);
            host.drive(now, tx);
            r
        })
    }

    /// The index of the host that is topology node `topo_node`.
    pub fn host_of_topo_node(&self, topo_node: usize) -> Option<usize> {
        self.hosts.iter().position(|h| h.topo_node == topo_node)
    }

    /// Host `i`'s host port ([`HostHandle::port`]) as the HCA holds it.
    pub fn host_port(&self, i: usize) -> Option<&crate::hw::hca::Port> {
        self.host_device(i).hca().port(self.hosts[i].port)
    }

    /// Host `i`'s LID (of its host port) as its port holds it (0 before the SM configured it).
    pub fn lid(&self, i: usize) -> u16 {
        self.host_port(i).map_or(0, |p| p.lid)
    }

    /// Host `i`'s port GID (of its host port).
    pub fn gid(&self, i: usize) -> Gid {
        self.host_port(i).map_or(Gid::ZERO, |p| p.port_gid())
    }

    /// Every cabled CA port in node and port order, hosts' other ports included, with the port
    /// GUID and the LID its HCA holds (0 while the SM has not configured it).
    pub fn cabled_ca_ports(&self) -> Vec<(End, Guid, u16)> {
        let mut out = Vec::new();
        for n in self.plan.topology().cas() {
            let hca = self.sim.node::<Host>(self.built.nodes[n]).map(Host::hca);
            for port in self.plan.topology().cabled_ports(n) {
                let p = hca.and_then(|h| h.port(port));
                let guid = p.map_or(self.plan.topology().nodes()[n].port_guid(port), |p| p.guid);
                out.push((End { node: n, port }, guid, p.map_or(0, |p| p.lid)));
            }
        }
        out
    }

    /// True once host `i`'s port is Active with a LID and every one of its IPoIB interfaces has
    /// carrier (it joined its partition's broadcast group, draft-ietf-ipoib-ip-over-infiniband-06
    /// §5).
    pub fn is_joined(&self, i: usize) -> bool {
        let mut apps = self.ipoib_apps(i).peekable();
        if apps.peek().is_some() {
            // Carrier implies an Active port with a LID (the interface is up only then).
            return apps.all(IpoibApp::carrier);
        }
        self.host_port(i)
            .is_some_and(|p| p.state == crate::hw::mgmt::PortState::Active && p.lid != 0)
    }

    /// When host `i`'s last broadcast join completed, once it [is joined](Subnet::is_joined) and
    /// has IPoIB interfaces.
    pub fn joined_at(&self, i: usize) -> Option<Instant> {
        if !self.is_joined(i) {
            return None;
        }
        self.ipoib_apps(i)
            .map(|a| a.carrier_up_at())
            .max()
            .flatten()
    }

    /// Hosts joined.
    pub fn joined_count(&self) -> usize {
        (0..self.hosts.len()).filter(|&i| self.is_joined(i)).count()
    }

    /// Who manages the subnet.
    pub fn sm_mode(&self) -> SmMode {
        self.mode
    }

    /// The SM's plan computed from the topology (see [`SubnetManager`]): the LIDs, routes and
    /// P_Key tables our SM gives the subnet.
    pub fn plan(&self) -> &SubnetManager {
        &self.plan
    }

    /// The SM's SMP agent ([`SmMode::Ours`]).
    pub fn smp_sm(&self) -> Option<&SmpSm> {
        let id = self.sm_app.map(|_| self.sm().smp_agent())?;
        self.host_device(0).agent::<SmpSm>(id)
    }

    /// The SA server.
    ///
    /// # Panics
    /// With [`SmMode::None`]: there is no SA of ours.
    pub fn sa(&self) -> &SaServer {
        self.sa
            .and_then(|sa| self.host_device(0).agent::<SaServer>(sa))
            .expect("host 0 runs the SA (our SM)")
    }

    /// The SM application.
    ///
    /// # Panics
    /// With [`SmMode::None`]: there is no SM of ours.
    pub fn sm(&self) -> &SmApp {
        self.sm_app
            .and_then(|app| self.host_device(0).app::<SmApp>(app))
            .expect("host 0 runs the SM (our SM)")
    }

    /// True when the SM has written every multicast change the SA reported and the writes have
    /// reached the switches (the MFTs match the groups' membership).
    pub fn is_settled(&self) -> bool {
        if self.sm_app.is_none() {
            // An external SM: nothing of ours to wait for.
            return true;
        }
        let landed = self.smp_sm().is_some_and(SmpSm::is_idle);
        self.sm().is_settled() && !self.sa().has_events() && landed
    }

    /// Runs until every host joined and the SM wrote the resulting multicast trees, or virtual
    /// time reaches `deadline`; true when all joined (and the trees are written).
    pub fn run_until_joined(&mut self, deadline: Instant) -> bool {
        self.run_until_joined_with(deadline, |_| {})
    }

    /// [`Subnet::run_until_joined`], calling `progress` between slices of simulated time (slices
    /// start at 50 µs and double while nobody new joins, up to 50 ms; only the hosts not yet
    /// joined are looked at, so checking stays cheap on big fabrics).
    pub fn run_until_joined_with(
        &mut self,
        deadline: Instant,
        mut progress: impl FnMut(JoinProgress),
    ) -> bool {
        let mut waiting: Vec<usize> = (0..self.hosts.len()).collect();
        let min_slice = Duration::from_micros(50);
        let mut slice = min_slice;
        loop {
            let before = waiting.len();
            waiting.retain(|&i| !self.is_joined(i));
            progress(JoinProgress {
                joined: self.hosts.len() - waiting.len(),
                hosts: self.hosts.len(),
                now: self.sim.now(),
            });
            if waiting.is_empty() && self.is_settled() {
                return true;
            }
            if self.sim.now() >= deadline {
                return waiting.is_empty();
            }
            slice = if waiting.len() < before {
                min_slice
            } else {
                (slice * 2).min(Duration::from_millis(50))
            };
            // Skip idle stretches: nothing can change before the next event.
            let next = self.sim.next_event_at().unwrap_or(deadline);
            let until = (next.max(self.sim.now()) + slice).min(deadline);
            self.sim.run_until(until);
        }
    }

    /// Sends `mad` from host `i` to the SA through its [`SaClient`] (to the SM LID and SL its
    /// port was given, with the P_Key at index 0 of its table, as Linux `sa_query.c` does without
    /// a default P_Key); the answer comes as an event ([`Subnet::take_sa_events`]).
    pub fn sa_request(&mut self, i: usize, mad: SaMadRepr) -> RequestId {
        let h = self.hosts[i];
        let client = self.sa_client(i);
        self.sim
            .with_node::<Host, _>(h.node, |host, now, _| {
                let p = host.hca().port(h.port);
                let to = MadAddr {
                    pkey: p
                        .and_then(|p| p.pkeys.first().copied())
                        .unwrap_or(PKey::DEFAULT),
                    sl: p.map_or(0, |p| p.sm_sl),
                    ..MadAddr::gsi(p.map_or(0, |p| p.sm_lid))
                };
                host.agent_mut::<SaClient>(client)
                    .map(|c| c.request(now, mad, to))
            })
            .flatten()
            .expect("sa_client made host i's SaClient")
    }

    /// Host `i`'s [`SaClient`], made on first use (module docs). Its transaction IDs come from
    /// stream [`CLIENT_STREAM`] of the host's random stream.
    fn sa_client(&mut self, i: usize) -> AgentId {
        if let Some(id) = self.clients[i] {
            return id;
        }
        let h = self.hosts[i];
        let rng = self.sim.fork_rng(h.topo_node as u64).fork(CLIENT_STREAM);
        let (cfg, reports) = (self.client_cfg, !self.ip);
        let id = self
            .sim
            .with_node::<Host, _>(h.node, |host, _, _| {
                let id = host.add_agent(SaClient::new(cfg, rng));
                if reports {
                    host.serve_method(MgmtClass::SubnAdm, Method::Report, id);
                }
                id
            })
            .expect("a subnet host is a Host");
        self.clients[i] = Some(id);
        id
    }

    /// Takes host `i`'s SA client events (answers to [`Subnet::sa_request`], Reports), oldest
    /// first.
    pub fn take_sa_events(&mut self, i: usize) -> Vec<SaClientEvent> {
        let h = self.hosts[i];
        let Some(client) = self.clients[i] else {
            return Vec::new();
        };
        self.sim
            .with_node::<Host, _>(h.node, |host, _, _| {
                host.agent_mut::<SaClient>(client)
                    .map(|c| std::iter::from_fn(|| c.poll_event()).collect())
            })
            .flatten()
            .unwrap_or_default()
    }

    /// Sends `mad` from host `i` and runs until its answer (or `timeout` of virtual time); other
    /// events of that host's client stay queued.
    pub fn sa_call(
        &mut self,
        i: usize,
        mad: SaMadRepr,
        timeout: Duration,
    ) -> Result<SaResponse, SaClientError> {
        let id = self.sa_request(i, mad);
        let h = self.hosts[i];
        let client = self.sa_client(i);
        let deadline = self.sim.now() + timeout;
        let answered = |sim: &Simulator| {
            sim.node::<Host>(h.node)
                .and_then(|x| x.agent::<SaClient>(client))
                .is_some_and(|c| c.has_response(id))
        };
        if !self.sim.run_while_not(deadline, answered) {
            return Err(SaClientError::Timeout);
        }
        self.sim
            .with_node::<Host, _>(h.node, |host, _, _| {
                host.agent_mut::<SaClient>(client)?.take_response(id)
            })
            .flatten()
            .unwrap_or(Err(SaClientError::Timeout))
    }

    /// Switch devices with their topology node index, in topology order.
    pub fn switches(&self) -> impl Iterator<Item = (usize, &crate::hw::switch::Switch)> + '_ {
        self.plan
            .topology()
            .nodes()
            .iter()
            .enumerate()
            .filter(|(_, n)| n.kind == NodeKind::Switch)
            .filter_map(|(i, _)| Some((i, self.sim.node(self.built.nodes[i])?)))
    }
}

/// Puts our SA and SM on the SM's host: its port answers SMInfo (the agent's live state, IBA 1
/// §14.4), the SA serves class SubnAdm.
pub(crate) fn install_sm(
    sim: &mut Simulator,
    node: NodeId,
    port: u8,
    port_guid: Guid,
    sa_server: SaServer,
    agent: SmpSm,
    mcast_delay: Duration,
) -> Result<(AgentId, AppId), SubnetError> {
    sim.with_node::<Host, _>(node, |h, _, _| {
        // IBA 1 §14.2.5.13: the SM's port answers SubnGet(SMInfo) with the agent's state (IBA 1
        // §14.4; Discovering until its first poll updates it).
        h.hca_mut()
            .set_sm_info(port, Some(agent.sm_info(port_guid)));
        let sa = h.add_agent(sa_server);
        h.serve_class(MgmtClass::SubnAdm, sa);
        // QP0 is the SM's: SMP responses and traps (class SubnLid) come to it.
        h.open_smi();
        let id = h.add_agent(agent);
        h.serve_class(MgmtClass::SubnLid, id);
        // A directed-route SubnSet(SMInfo) (HANDOVER, ...) at the end of its path comes to QP0
        // for the agent too (IBA 1 §14.4.1, `crate::hw::hca`).
        h.serve_class(MgmtClass::SubnDirectedRoute, id);
        let app = h.add_app(SmApp::over_smps(id, port, sa, mcast_delay));
        (sa, app)
    })
    .ok_or(SubnetError::NoHost)
}

/// The MTUCap of a cable's ends (IBA 1 §14.2.5.6): the cable's MTU when the topology gives a
/// defined one no larger than [`crate::hw::sma::MTU_CAP`], else that.
pub(crate) fn cable_mtu_cap(link: &crate::hw::topology::TopoLink) -> ipoib_wire::Mtu {
    let cap = crate::hw::sma::MTU_CAP;
    link.mtu
        .filter(|m| m.is_valid() && m.bytes() <= cap.bytes())
        .unwrap_or(cap)
}

/// The switches' ports with no cable have no link (IBA 1 §7.2; port 0 is no cable, see
/// [`switch_port0_up`]); the cabled ones train to their cable's rate (`default_rate` where the
/// topology sets none) and take its MTU as MTUCap ([`cable_mtu_cap`]), as the CA's end does.
pub(crate) fn switch_ports_train(
    topo: &Topology,
    built: &Built,
    sim: &mut Simulator,
    default_rate: ipoib_wire::Rate,
) {
    for (n, node) in topo.nodes().iter().enumerate() {
        if node.kind != NodeKind::Switch {
            continue;
        }
        sim.with_node::<Switch, _>(built.nodes[n], |sw, now, tx| {
            for p in 1..=node.ports {
                match topo.peer(n, p) {
                    None => sw.link_state(now, p, false, tx),
                    Some((_, l)) => {
                        sw.set_port_rate(p, topo.links()[l].rate.unwrap_or(default_rate));
                        sw.set_port_mtu_cap(p, cable_mtu_cap(&topo.links()[l]));
                    }
                }
            }
        });
    }
}

/// A switch's management port 0 has no cable: we take it as up with the switch, in Init until
/// the SM sets it Armed and Active like any port (IBA 1 §14.2.5.6), so that the SM's
/// SubnSet(PortInfo) of port 0 (the switch's LID) passes the state checks.
pub(crate) fn switch_port0_up(topo: &Topology, built: &Built, sim: &mut Simulator) {
    for (n, node) in topo.nodes().iter().enumerate() {
        if node.kind == NodeKind::Switch {
            sim.with_node::<Switch, _>(built.nodes[n], |sw, now, tx| {
                sw.link_state(now, 0, true, tx)
            });
        }
    }
}

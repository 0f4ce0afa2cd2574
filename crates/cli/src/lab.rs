//! `ipoib lab`: the Linux IP stack over our emulated IPoIB. One process runs an emulated subnet
//! ([`Subnet`]) in real time ([`ipoib_runtime::realtime`]) and gives every host a network
//! namespace with a TUN device `ib0` whose packets its IPoIB interface carries
//! ([`ipoib_runtime::tun`], [`ipoib_runtime::ipoib_port`]): `ping`, `iperf3` and any other
//! program run in a host's namespace talk over the emulated fabric.
//!
//! - `ipoib lab [--hosts N] [--topology T] [--partitions FILE] [--mode M] [--seed S] [--sm SM]
//!   [--rt-priority P]`
//!   sets the lab up, prints the hosts once IPoIB is up on all of them (carrier and IPv6 ready),
//!   and runs until SIGINT, SIGTERM or SIGHUP, then removes everything it made. With `--sm
//!   opensm` the real OpenSM configures the fabric instead of our SM ([`opensm`]).
//! - `ipoib lab exec HOST -- CMD ARGS` runs CMD in HOST's namespace, with the lab's host names
//!   in its `/etc/hosts` ([`exec`]); the exit status is CMD's.
//! - `ipoib lab down` stops a running lab (SIGTERM, then SIGKILL after 10 s) and removes what is
//!   left of it, or of a lab whose process died.
//!
//! The state lives in `RUN_DIR/lab/lab.json` ([`state`]); hosts, addresses and partitions in
//! [`hosts`]. While it runs the lab serves `ipoib show` on `RUN_DIR/lab/control.sock`
//! ([`ipoib_runtime::realtime::control`]). Root only (namespaces, mounts, TUN devices). Exit status of the lab itself: 0
//! when it ran and was stopped by a signal, 1 when some host did not come up within
//! [`UP_TIMEOUT`], 2 on bad arguments or when it cannot be set up (not root, a lab already
//! running, a namespace or device refused).

mod exec;
mod hosts;
mod opensm;
pub(crate) mod state;

use crate::pcap_out::Told;
use ipoib_fabric::node::subnet::{IpoibOptions, SmMode, Subnet, SubnetOptions};
use ipoib_fabric::PortState;
use ipoib_runtime::capture_file::CaptureFile;
use ipoib_runtime::control::ControlServer;
use ipoib_runtime::control::View;
use ipoib_runtime::ibsim_server::{IbsimEndpoint, IbsimServer, ServerConfig, ServerCounters};
use ipoib_runtime::ipoib_port::SubnetHost;
use ipoib_runtime::netns::{self, NetNs};
use ipoib_runtime::realtime::control::ControlEndpoint;
use ipoib_runtime::realtime::{Config, Driver, Wake};
use ipoib_runtime::tun::{
    link_local, LinkControl, LinkMirror, Restored, Tun, TunConfig, TunEndpoint, LINK_LOCAL_PREFIX,
};
use std::cell::{Cell, OnceCell};
use std::io::Write as _;
use std::net::{IpAddr, Ipv6Addr};
use std::process::ExitCode;
use std::rc::Rc;
use std::time::{Duration, Instant as Wall};

/// How long every host has to come up (wall time).
pub const UP_TIMEOUT: Duration = Duration::from_secs(30);
/// How long with `--sm opensm` (OpenSM's first sweep, then the joins through its SA).
pub const OPENSM_UP_TIMEOUT: Duration = Duration::from_secs(60);
/// MTU of `ib0` in datagram mode: the 2048-byte IB MTU of the default broadcast group less the
/// 4-byte IPoIB header (RFC 4391 §3).
pub const DATAGRAM_MTU: u32 = 2044;
/// MTU of `ib0` in connected mode (RFC 4755 §3.3, Linux `IPOIB_CM_MTU`).
pub const CONNECTED_MTU: u32 = 65_520;

#[derive(clap::Args, Debug)]
#[command(args_conflicts_with_subcommands = true)]
pub struct Args {
    #[command(subcommand)]
    command: Option<LabCommand>,
    #[command(flatten)]
    up: UpArgs,
}

#[derive(clap::Subcommand, Debug)]
enum LabCommand {
    /// Run a command in a host's network namespace: `ipoib lab exec h1 -- ping -c 3 h2`.
    ///
    /// The lab's host names (h1, h2, ...) resolve through the namespace's own /etc/hosts. The
    /// exit status is the command's (127 when it cannot be run).
    Exec(exec::ExecArgs),
    /// Stop the running lab and remove its namespaces (also those of a lab whose process died).
    Down,
}

#[derive(clap::Args, Debug)]
struct UpArgs {
    /// Number of hosts (default 2; at most 254; with a net file, if given, it must match the
    /// file's hosts).
    #[arg(long)]
    hosts: Option<usize>,
    /// `single-switch`, `fat-tree`, or an ibnetdiscover / ibsim net file.
    #[arg(long, default_value = "single-switch")]
    topology: String,
    /// OpenSM partitions.conf: each host's ib0 runs on its first IPoIB partition (the first in
    /// the file with a broadcast group and the host among its members; no child interfaces for
    /// the others). Default: partition 0x7fff, every port a full member.
    #[arg(long)]
    partitions: Option<String>,
    /// `datagram` (UD, MTU 2044) or `connected` (RC, RFC 4755, MTU 65520).
    #[arg(long, value_enum, default_value_t = Mode::Datagram)]
    mode: Mode,
    /// Seed of every random choice of the emulation.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Who configures the fabric. `ours`: our SM and SA, on the first host. `opensm`: the real
    /// OpenSM, run by the lab under ibsim-run on the first host, configures it through our SMAs
    /// and serves the joins; needs `opensm` and `ibsim-run` installed (Debian packages opensm
    /// and ibsim-utils), reads the `--partitions` file (default: partition 0x7fff with its
    /// IPoIB broadcast group, every port full) and logs to RUN_DIR/lab/opensm/opensm.log.
    #[arg(long, value_enum, default_value_t = Sm::Ours)]
    sm: Sm,
    /// Run the emulation's thread under the real-time policy SCHED_FIFO at this priority (1 to
    /// 99, set with chrt(1)): a packet from a host's IP stack is then taken at once, as Linux
    /// IPoIB takes it in the sender's system call, rather than once the task on the CPU it
    /// woke on is preempted (up to a scheduler tick: a few milliseconds, 20 to 40 times a
    /// ping's usual round trip). The TUN writer threads and OpenSM keep the default policy. On a
    /// loaded machine it costs datagram mode throughput: the thread then preempts the sending
    /// program for nearly every packet instead of taking them in batches
    /// (docs/benchmarks/lab-connected.md).
    #[arg(long, value_parser = clap::value_parser!(u8).range(1..=99))]
    rt_priority: Option<u8>,
    /// Record every packet on every link of the fabric into this pcap (ERF records, which
    /// Wireshark and tshark read, time-stamped by the wall clock), written as the lab runs, from
    /// the subnet's bring-up on; a write that fails (a full disk) stops the recording, said on
    /// standard error, not the lab.
    #[arg(long)]
    pcap: Option<String>,
    /// Stop recording once the pcap reaches this many bytes (whole records; at least 24, the
    /// file's header); the lab says when it does.
    #[arg(long, requires = "pcap")]
    pcap_limit: Option<u64>,
}

/// `--sm`.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
enum Sm {
    Ours,
    Opensm,
}

/// The unicast mode of the lab's interfaces.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Datagram,
    Connected,
}

fn fail(msg: impl std::fmt::Display) -> ExitCode {
    note!("ipoib lab: {msg}");
    ExitCode::from(2)
}

/// Unless the process runs as root: says that `cmd` (`ipoib lab`, `ipoib lab exec`, ...) needs
/// root because it does `why`, and the exit status 2. (It said "ipoib lab: ipoib lab exec needs
/// root (it makes network namespaces, ...)" for every subcommand.)
fn require_root(cmd: &str, why: &str) -> Option<ExitCode> {
    if nix::unistd::geteuid().is_root() {
        return None;
    }
    note!("{cmd}: needs root ({why}): run it with sudo");
    Some(ExitCode::from(2))
}

pub fn run(args: &Args) -> ExitCode {
    match &args.command {
        Some(LabCommand::Exec(a)) => exec::exec(a),
        Some(LabCommand::Down) => exec::down(),
        None => up(&args.up),
    }
}

/// Removes what the lab made when dropped: set up before the first namespace, so an error or a
/// panic on the way leaves nothing behind.
struct Teardown {
    namespaces: Vec<String>,
}

impl Drop for Teardown {
    fn drop(&mut self) {
        for p in state::clean(&self.namespaces).problems {
            note!("ipoib lab: cleaning up: {p}");
        }
    }
}

/// Why the lab cannot take the existing network namespace `ns`, and the way out. One with the
/// hosts file a lab writes (`/etc/netns/NS/hosts`) is most likely a lab's of another run
/// directory (`IPOIB_RUN_DIR`), maybe running: "remove it" (the only advice once) would have
/// taken a running lab's host away.
fn taken_namespace(ns: &str) -> String {
    let hosts = std::path::Path::new(netns::NETNS_ETC_DIR)
        .join(ns)
        .join("hosts");
    if hosts.exists() {
        format!(
            "network namespace {ns} exists already, with the {} a lab writes: a lab of another \
             run directory (IPOIB_RUN_DIR) may be running; stop it with `ipoib lab down` under \
             its IPOIB_RUN_DIR, or, if none runs, remove the namespace with `ip netns del {ns}`",
            hosts.display()
        )
    } else {
        format!(
            "network namespace {ns} exists already (not made by a lab): remove it with `ip netns \
             del {ns}`"
        )
    }
}

/// Finds a lab left by a process that died and removes it; an error if one is running.
fn clear_stale() -> Result<(), String> {
    let Some(old) = state::read()? else {
        return Ok(());
    };
    if old.is_alive() {
        return Err(format!(
            "a lab is running (pid {}); `ipoib lab down` stops it",
            old.pid
        ));
    }
    // Its OpenSM (--sm opensm) outlives a lab that was killed.
    state::end_opensm(&old);
    let names: Vec<String> = old.hosts.iter().map(|h| h.namespace.clone()).collect();
    let c = state::clean(&names);
    note!(
        "ipoib lab: removed the lab of pid {}, which is gone ({} namespaces{})",
        old.pid,
        c.removed,
        exec::already_gone(c.missing)
    );
    match c.problems.is_empty() {
        true => Ok(()),
        false => Err(c.problems.join("; ")),
    }
}

/// The subnet of `a`, and the text of its `--partitions` file (read once: it may be a pipe, and
/// OpenSM gets this text, [`start_opensm`]).
fn build(a: &UpArgs) -> Result<(Subnet, Option<String>), String> {
    // Before the topology's own bounds: "use a fat tree for more" is no way past the lab's.
    if let Some(n) = a.hosts.filter(|&n| n > hosts::MAX_HOSTS) {
        return Err(format!("at most {} hosts, not {n}", hosts::MAX_HOSTS));
    }
    let topo = crate::topology_arg::load(&a.topology, a.hosts, Some(2))?;
    let n = topo.host_ports().count();
    if n > hosts::MAX_HOSTS {
        return Err(format!("at most {} hosts, not {n}", hosts::MAX_HOSTS));
    }
    let (text, parts) = match a.partitions.as_deref() {
        Some(p) => {
            let (text, cfg) = crate::sim::load_partitions_text("ipoib lab", p)?;
            (Some(text), Some(cfg))
        }
        None => (None, None),
    };
    if let Some(p) = &parts {
        let none = hosts::set_partitions(&topo, p);
        if !none.is_empty() {
            let names: Vec<String> = none.iter().map(|&i| hosts::name(i)).collect();
            return Err(format!(
                "{}: not in any IPoIB partition (one with a broadcast group): {}",
                a.partitions.as_deref().unwrap_or_default(),
                names.join(", ")
            ));
        }
    }
    let mut opts = SubnetOptions::new(topo, a.seed);
    opts.partitions = parts;
    if a.sm == Sm::Opensm {
        // OpenSM configures the ports by SMPs: they wait in Init for it.
        opts.sm_mode = SmMode::None;
    }
    opts.ipoib = Some(IpoibOptions {
        configure: Some(match a.mode {
            Mode::Datagram => hosts::datagram,
            Mode::Connected => hosts::connected,
        }),
        ..IpoibOptions::external()
    });
    let net = Subnet::build(opts).map_err(|e| e.to_string())?;
    Ok((net, text))
}

/// Serves ibsim's client protocol on the lab's driver (sockets `ipoib-lab-PID`) and starts
/// OpenSM under ibsim-run on the first host ([`opensm`]), with `partitions` (the text of the
/// `--partitions` file, read by [`build`]).
fn start_opensm(
    programs: &opensm::Programs,
    driver: &mut Driver<Subnet>,
    partitions: Option<&str>,
) -> Result<(opensm::OpenSm, IbsimCounters), String> {
    let sockname = format!("ipoib-lab-{}", std::process::id());
    let mut cfg = ServerConfig::unix(&sockname);
    cfg.sm_hosts.clear();
    let server = IbsimServer::bind(cfg).map_err(|e| format!("ibsim server on {sockname}: {e}"))?;
    // Why a client was refused (it learns no reason), as `ipoib ibsim-server` prints it.
    let ep = IbsimEndpoint::new(server, Duration::from_secs(2))
        .telling(Box::new(|line| note!("ipoib lab: ibsim server: {line}")));
    let counters = ep.counters();
    driver
        .add(Box::new(ep))
        .map_err(|e| format!("epoll: {e}"))?;
    let net = driver.emulation();
    let host = net.topology().nodes()[net.host(0).topo_node].name.clone();
    let dir = state::dir().join("opensm");
    let osm = opensm::OpenSm::start(programs, &state::dir(), &dir, &sockname, &host, partitions)?;
    Ok((osm, counters))
}

/// The ibsim server's counters of a lab run with `--sm opensm`, shown in `ipoib show counters`
/// (section `ibsim`, as `ipoib fabric --ibsim` shows its own), once the server runs.
type IbsimCounters = Rc<Cell<ServerCounters>>;

/// Makes host `i`'s namespace with its `ib0`, down until the interface has carrier, with the
/// interface's IPv6 link-local address `ll` (the kernel makes none of its own). The namespace's
/// name goes into `made` once it exists (also when its `ib0` then fails), and only then: a
/// namespace that existed already is another's, not this lab's to remove.
fn make_host(
    i: usize,
    mtu: u32,
    ll: Option<Ipv6Addr>,
    made: &mut Vec<String>,
) -> Result<(Tun, LinkControl), String> {
    let mut addresses = vec![
        (IpAddr::V4(hosts::ipv4(i)), hosts::IPV4_PREFIX),
        (IpAddr::V6(hosts::ipv6(i)), hosts::IPV6_PREFIX),
    ];
    addresses.extend(ll.map(|a| (IpAddr::V6(a), LINK_LOCAL_PREFIX)));
    let cfg = TunConfig {
        name: "ib0".into(),
        mtu,
        addresses,
        loopback_up: true,
        up: false,
        offload: true,
        tx_queue_len: Some(ipoib_runtime::tun::TX_QUEUE_LEN),
    };
    // On an error NetNs::create leaves nothing behind.
    let (_, setup) = NetNs::create(&hosts::namespace(i), move || {
        let tun = Tun::create(&cfg).map_err(|e| e.to_string())?;
        let control = LinkControl::open(tun.index()).map_err(|e| e.to_string())?;
        Ok::<_, String>((tun, control))
    })
    .map_err(|e| e.to_string())?;
    made.push(hosts::namespace(i));
    setup.map_err(|e| format!("{}: {e}", hosts::namespace(i)))
}

/// The IPv6 link-local address of host `i`'s interface (from its port GUID).
fn host_link_local(net: &Subnet, i: usize) -> Option<Ipv6Addr> {
    link_local(
        net.interface(i)?
            .ipv6_addresses()
            .into_iter()
            .map(|a| a.addr),
    )
}

/// Makes every host's `ib0` follow its interface ([`LinkMirror`]): up at the first carrier with
/// the interface's MTU (the broadcast group's less 4 in datagram mode, 65520 in connected mode),
/// as Linux IPoIB's `ib0` gets carrier only after its broadcast join; `NO-CARRIER` while the
/// interface has none later.
fn mirror_carrier(net: &Subnet, mirrors: &mut [LinkMirror]) -> Result<(), String> {
    for (i, m) in mirrors.iter_mut().enumerate() {
        let Some(iface) = net.interface(i) else {
            continue;
        };
        // The link-local address was given at creation: a lab host keeps its GUIDs.
        m.follow(iface.carrier(), iface.mtu(), None)
            .map_err(|e| format!("{}: {e}", hosts::namespace(i)))?;
    }
    Ok(())
}

/// `--pcap`: the lab's recording, and what it said of it.
type Recording = Option<(CaptureFile, Told)>;

/// Writes what the lab's links carried since the last turn into the `--pcap` file.
fn record(rec: &mut Recording, net: &mut Subnet) {
    if let Some((c, t)) = rec {
        c.drain(net.sim_mut());
        t.check(c, "the lab runs on");
    }
}

/// How often a running lab looks at what was done to the hosts' `ib0` by hand.
const CHECK_DEVICES: Duration = Duration::from_secs(1);

/// Writes lab.json again when a host's partition cells changed since it was written: the state
/// file gives the P_Keys the ports hold (an SM, OpenSM say, may write their tables at any time).
fn refresh_state(lab: &mut state::LabState, net: &Subnet) {
    let now = hosts::entries(net);
    if now == lab.hosts {
        return;
    }
    lab.hosts = now;
    if let Err(e) = state::write(lab) {
        note!("ipoib lab: {e}");
    }
}

/// Puts back on every host's `ib0` what Linux IPoIB would have kept through a change made by
/// hand in its namespace ([`LinkMirror::check`]): the link-local address after `ip link set ib0
/// down` and `up`, an MTU no larger than the interface's; and the interface's MTU when its
/// broadcast group's changed (Linux's `min(mcast_mtu, admin_mtu)`); says what it did.
fn check_devices(net: &Subnet, mirrors: &mut [LinkMirror]) {
    for (i, m) in mirrors.iter_mut().enumerate() {
        let Some(iface) = net.interface(i) else {
            continue;
        };
        let h = hosts::name(i);
        match m.check(iface.mtu()) {
            Ok(done) => {
                for r in done {
                    let hint = match r {
                        Restored::LinkLocal(_) => format!(
                            " (`ipoib lab exec {h} -- ip -6 addr add {}/{} dev ib0 nodad` puts \
                             the lab's back)",
                            hosts::ipv6(i),
                            hosts::IPV6_PREFIX
                        ),
                        Restored::Mtu { .. } | Restored::Followed { .. } => String::new(),
                    };
                    note!("ipoib lab: {h}: ib0 {r}{hint}");
                }
            }
            Err(e) => note!("ipoib lab: {}: {e}", hosts::namespace(i)),
        }
    }
}

fn up(a: &UpArgs) -> ExitCode {
    // First: SIGINT, SIGTERM and SIGHUP stop the lab, which then removes what it made. A signal
    // during the bring-up (the subnet, a namespace and TUN device per host, OpenSM) is kept, not
    // lost, also when the lab began with SIGINT ignored (started with `&` in a script, POSIX.1-2017
    // XCU §2.11, docs/DEPLOYED.md), and stops it at the next step.
    let (stop, signal) = match crate::interrupt::stop_file() {
        Ok(s) => s,
        Err(e) => return fail(format!("signal handlers: {e}")),
    };
    let stopped = |when: &str| signal.stopped_while("ipoib lab", when);
    // Once namespaces exist, the teardown removes them on the way out.
    let stopped_made = |when: &str| {
        let c = stopped(when)?;
        note!("ipoib lab: removing what was made");
        Some(c)
    };
    if let Some(c) = require_root(
        "ipoib lab",
        "it makes network namespaces, mounts and TUN devices",
    ) {
        return c;
    }
    // Held until after the teardown (dropped last): no other lab reads, writes or cleans the
    // state meanwhile.
    let _lock = match state::lock() {
        Ok(l) => l,
        Err(e) => return fail(e),
    };
    if let Err(e) = clear_stale() {
        return fail(e);
    }
    if let Some(c) = stopped("while the lab started") {
        return c;
    }
    let programs = match a.sm {
        Sm::Opensm => match opensm::check_installed() {
            Ok(p) => Some(p),
            Err(e) => return fail(e),
        },
        Sm::Ours => None,
    };
    if let Err(e) = crate::pcap_out::check_limit(a.pcap_limit) {
        return fail(e);
    }
    let (net, partitions) = match build(a) {
        Ok(n) => n,
        Err(e) => return fail(e),
    };
    // Said now, not only after the wait for the hosts: those ports never come up (as `sim` and
    // `demo` warn; neither our SM nor OpenSM reaches them).
    for w in [crate::why::unreached(&net), crate::why::behind_ca(&net)]
        .into_iter()
        .flatten()
    {
        note!("ipoib lab: warning: {w}");
    }
    if let Some(c) = stopped("while the subnet was built") {
        return c;
    }
    let n = net.host_count();
    let me = std::process::id() as i32;
    let mut lab = state::LabState {
        pid: me,
        start_time: state::start_time(me).unwrap_or(0),
        mode: format!("{:?}", a.mode).to_lowercase(),
        hosts: hosts::entries(&net),
        opensm: None,
    };
    // Namespaces of these names that this lab's state does not name are not ours to take (or to
    // remove).
    if let Some(i) = (0..n).find(|&i| netns::exists(&hosts::namespace(i))) {
        return fail(taken_namespace(&hosts::namespace(i)));
    }
    // Before the state file: a way out after it removes it.
    let mut teardown = Teardown {
        namespaces: Vec::new(),
    };
    if let Err(e) = state::write(&lab) {
        return fail(e);
    }
    let mtu = match a.mode {
        Mode::Datagram => DATAGRAM_MTU,
        Mode::Connected => CONNECTED_MTU,
    };
    let mut driver = match Driver::new(net, Config::default()) {
        Ok(d) => d,
        Err(e) => return fail(format!("epoll: {e}")),
    };
    driver.set_trace(std::env::var_os(crate::TRACE_TURNS_ENV).is_some());
    // Before the namespaces: an unwritable path is refused before anything is made (a file
    // that is there is emptied only once the recording starts, before the first turn).
    if let Some(Err(e)) = a.pcap.as_deref().map(crate::pcap_out::open) {
        return fail(e);
    }
    let mut controls = Vec::new();
    let mut tun_counters = Vec::new();
    for i in 0..n {
        let ll = host_link_local(driver.emulation(), i);
        let (tun, control) = match make_host(i, mtu, ll, &mut teardown.namespaces) {
            Ok(t) => t,
            Err(e) => return fail(e),
        };
        controls.push(LinkMirror::new(control, ll));
        let ep = match TunEndpoint::with_writer_thread(tun, SubnetHost(i)) {
            Ok(ep) => ep,
            Err(e) => return fail(format!("TUN writer thread: {e}")),
        };
        tun_counters.push(ep.counters());
        if let Err(e) = netns::write_etc_file(&hosts::namespace(i), "hosts", &hosts::hosts_file(n))
        {
            return fail(e);
        }
        if let Err(e) = driver.add(Box::new(ep)) {
            return fail(format!("epoll: {e}"));
        }
        if let Some(c) = stopped_made("while the namespaces were made") {
            return c;
        }
    }
    let control = match ControlServer::bind(state::control_path()) {
        Ok(c) => c,
        Err(e) => return fail(e),
    };
    // Each host's device counters in the counters view, as `ip -s link` shows a NIC's; with
    // OpenSM, the ibsim server's that serves it.
    let tuns = tun_counters.clone();
    let ibsim: Rc<OnceCell<IbsimCounters>> = Rc::default();
    let shown = Rc::clone(&ibsim);
    let served = ControlEndpoint::new(
        control,
        Box::new(move |net, req| {
            let mut a = ipoib_runtime::show::from_lab(net, req, &tuns)?;
            if let Some(c) = shown.get().filter(|_| req.view == View::Counters) {
                a.sections.push(c.get().section());
            }
            Ok(a)
        }),
    );
    if let Err(e) = driver.add(Box::new(served)) {
        return fail(format!("epoll: {e}"));
    }
    if let Err(e) = driver.set_stop(stop.into()) {
        return fail(format!("epoll: {e}"));
    }
    // Dropped before the teardown: OpenSM ends on every way out.
    let mut osm = None;
    if let Some(programs) = &programs {
        match start_opensm(programs, &mut driver, partitions.as_deref()) {
            Ok((o, counters)) => {
                lab.opensm = Some((o.pid(), state::start_time(o.pid()).unwrap_or(0)));
                osm = Some(o);
                let _ = ibsim.set(counters);
            }
            Err(e) => return fail(e),
        }
        lab.hosts = hosts::entries(driver.emulation());
        if let Err(e) = state::write(&lab) {
            return fail(e);
        }
        // Also from here on the driver's first turn would stop (the stop file).
        if let Some(c) = stopped_made("while OpenSM was started") {
            return c;
        }
    }
    if let Some(p) = a.rt_priority {
        // After the writer threads and OpenSM were made; what this thread makes later keeps the
        // default policy too.
        if let Err(e) = ipoib_runtime::realtime::priority::set_fifo(p) {
            return fail(format!("--rt-priority {p}: {e}"));
        }
    }

    let mut rec: Recording = None;
    if let Some(p) = &a.pcap {
        let epoch = ipoib_runtime::capture_file::epoch_of(&driver.clock());
        match CaptureFile::start(p, a.pcap_limit, driver.emulation_mut().sim_mut(), epoch) {
            Ok(c) => rec = Some((c, Told::new("ipoib lab", p, a.pcap_limit))),
            Err(e) => return fail(format!("--pcap {p}: {e}")),
        }
    }
    let started = Wall::now();
    let deadline = started
        + match osm {
            Some(_) => OPENSM_UP_TIMEOUT,
            None => UP_TIMEOUT,
        };
    // With OpenSM also every host's port Active (ours makes them so before the joins).
    let all_ready = |net: &Subnet| {
        (0..net.host_count()).all(|i| {
            hosts::ready(net, i)
                && net
                    .host_port(i)
                    .is_some_and(|p| p.state == PortState::Active)
        })
    };
    loop {
        let wake = driver.turn(deadline);
        record(&mut rec, driver.emulation_mut());
        if let Some(how) = osm.as_mut().and_then(|o| o.exited()) {
            note!(
                "ipoib lab: OpenSM ended ({how}) before the hosts came up; see {}",
                osm.as_ref()
                    .map(|o| o.log.display().to_string())
                    .unwrap_or_default()
            );
            return ExitCode::from(1);
        }
        let mirrored = mirror_carrier(driver.emulation(), &mut controls);
        match (wake, mirrored) {
            (Err(e), _) => {
                note!("ipoib lab: {e}");
                return ExitCode::from(1);
            }
            (_, Err(e)) => {
                note!("ipoib lab: {e}");
                return ExitCode::from(1);
            }
            (Ok(Wake::Stop), _) => {
                note!("ipoib lab: stopped before the hosts came up; removing what was made");
                return ExitCode::SUCCESS;
            }
            _ if all_ready(driver.emulation()) => break,
            (Ok(Wake::Deadline), _) => {
                let net = driver.emulation();
                let late_hosts: Vec<usize> = (0..n).filter(|&i| !hosts::ready(net, i)).collect();
                let late: Vec<String> = late_hosts.iter().map(|&i| hosts::name(i)).collect();
                note!(
                    "ipoib lab: not up after {} s: {} (no carrier or IPv6 not ready){}",
                    deadline.duration_since(started).as_secs(),
                    late.join(", "),
                    match &osm {
                        Some(o) => format!(
                            "; OpenSM {}, its log: {}",
                            if o.subnet_up() {
                                "reached SUBNET UP"
                            } else {
                                "never reached SUBNET UP"
                            },
                            o.log.display()
                        ),
                        None => String::new(),
                    }
                );
                // Each with what the emulation knows of why (its topology node's name).
                for &i in late_hosts.iter().take(crate::why::MAX_NAMED) {
                    note!("  {}: {}", hosts::name(i), crate::why::host_line(net, i));
                }
                if late_hosts.len() > crate::why::MAX_NAMED {
                    note!(
                        "  ... and {} more",
                        late_hosts.len() - crate::why::MAX_NAMED
                    );
                }
                return ExitCode::from(1);
            }
            _ => {}
        }
    }
    // The P_Keys the SM wrote into the ports by now (OpenSM's: not there at the first write).
    refresh_state(&mut lab, driver.emulation());
    let mut out = std::io::stdout();
    let managed = match &osm {
        Some(o) => format!(
            "OpenSM (pid {}) manages the fabric; its log: {}\n",
            o.pid(),
            o.log.display()
        ),
        None => String::new(),
    };
    let _ = write!(
        out,
        "ipoib lab: {n} host{} up in {:.1} s ({} mode)\n{}{managed}{}\n",
        if n == 1 { "" } else { "s" },
        started.elapsed().as_secs_f64(),
        lab.mode,
        hosts::table(driver.emulation()),
        hosts::try_line(n),
    );
    let _ = out.flush();
    // Once a second the lab looks at what was done to the hosts' ib0 by hand
    // ([`check_devices`]) and, with OpenSM, whether it still runs, saying so once if not: the
    // switches keep the tables it wrote, but nothing answers SA queries or traps any more.
    let look = CHECK_DEVICES;
    let mut checked = Wall::now();
    let status = loop {
        if let Some(how) = osm.as_mut().and_then(|o| o.exited()) {
            note!(
                "ipoib lab: OpenSM ended ({how}); the fabric keeps the tables it wrote, but no \
                 SM or SA answers now (new joins and path queries fail); its log: {}",
                osm.as_ref()
                    .map(|o| o.log.display().to_string())
                    .unwrap_or_default()
            );
            osm = None;
        }
        let wake = driver.turn(Wall::now() + look);
        record(&mut rec, driver.emulation_mut());
        match wake {
            Ok(Wake::Stop) => break ExitCode::SUCCESS,
            Ok(_) => {}
            Err(e) => {
                note!("ipoib lab: {e}");
                break ExitCode::from(1);
            }
        }
        // A port that went down (a cable the lab took away) shows as NO-CARRIER.
        if let Err(e) = mirror_carrier(driver.emulation(), &mut controls) {
            note!("ipoib lab: {e}");
        }
        if checked.elapsed() >= CHECK_DEVICES {
            checked = Wall::now();
            check_devices(driver.emulation(), &mut controls);
            refresh_state(&mut lab, driver.emulation());
        }
    };
    let refused: Vec<u64> = tun_counters
        .iter()
        .map(|c| c.write_errors.load(std::sync::atomic::Ordering::Relaxed))
        .collect();
    let st = driver.stats();
    note!(
        "{}\n{}",
        hosts::stop_line(started.elapsed().as_secs_f64(), st.turns, st.sleeps),
        hosts::summary(driver.emulation(), &refused).trim_end()
    );
    if let Some((c, t)) = &rec {
        note!("{}", t.summary(c));
    }
    status
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser as _;

    #[derive(clap::Parser)]
    struct Cli {
        #[command(flatten)]
        up: UpArgs,
    }

    // `--partitions FIFO`: the pipe is read once, and its text is what OpenSM is given (a second
    // read, as `OpenSm::start` made of the path, found the pipe empty, or blocked for a writer).
    #[test]
    fn partitions_from_a_pipe_are_read_once() {
        let tmp = tempfile::tempdir().unwrap();
        let fifo = tmp.path().join("parts");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        if !made.is_ok_and(|s| s.success()) {
            eprintln!("skipped: no mkfifo");
            return;
        }
        let text = "Default=0x7fff, ipoib : ALL=full;\n";
        let writer = {
            let fifo = fifo.clone();
            std::thread::spawn(move || std::fs::write(fifo, text))
        };
        let path = fifo.to_str().unwrap();
        let cli = Cli::try_parse_from(["lab", "--sm", "opensm", "--partitions", path]).unwrap();
        let (_, read) = build(&cli.up).unwrap();
        writer.join().unwrap().unwrap();
        assert_eq!(read.as_deref(), Some(text));
    }
}

//! `ipoib ibsim-server`: serves ibsim's client protocol on a subnet of ours, so that programs run
//! under `ibsim-run` (Debian ibsim-utils: `saquery`, `smpquery`, ...) attach to its hosts by name
//! ([`ipoib_runtime::ibsim_server`]). The subnet comes up in virtual time first (every host with
//! its LID, our SM and SA configured and the broadcast groups joined), then runs against the wall
//! clock while it serves, until SIGINT or SIGTERM. With `--sm none` nothing comes up before
//! serving: an SM run as a client (`ibsim-run opensm`) configures the subnet by SMPs while it
//! runs (docs/OPENSM-NOTES.md "OpenSM managing our fabric").
//!
//! While it serves, lines on standard input are ibsim's console commands
//! ([`ipoib_runtime::ibsim_server::Console`]: `Unlink "sw0"[2]` pulls a cable, `ReLink "sw0"[2]`
//! plugs it back, `Dump`, `Help`, `Quit`), each answered on standard output. They are read by a
//! thread of their own and run on the subnet between turns of the serving loop (within
//! [`ServeOptions::max_sleep`]); end of input leaves the server running. On a terminal the
//! console reads only while the server is in the foreground: run in the background of a shell
//! (`&`) it serves on and reads nothing until brought back with `fg`. One line is ours, not
//! ibsim's: `pingall` runs another round of `--ping-all`.

use crate::interrupt::Interrupt;
use crate::pcap_out::Told;
use ipoib_fabric::node::subnet::{IpoibOptions, SmMode, Subnet, SubnetOptions};
use ipoib_fabric::Instant;
use ipoib_runtime::capture_file::CaptureFile;
use ipoib_runtime::ibsim_server::{
    serve, Console, IbsimServer, Listen, ServeOptions, ServerConfig,
};
use std::net::IpAddr;
use std::process::ExitCode;
use std::time::Duration;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// `single-switch`, `fat-tree` (with `--hosts`) or an ibnetdiscover / ibsim net file. Clients
    /// attach to a host by its node name (`SIM_HOST` of ibsim-run) or description; without one to
    /// the first host, where our SM and SA run (`--sm ours`).
    #[arg(long)]
    topology: String,
    /// Number of hosts of a generated topology.
    #[arg(long)]
    hosts: Option<usize>,
    /// OpenSM partitions.conf (default: partition 0x7fff, every port full, IPoIB broadcast group).
    #[arg(long)]
    partitions: Option<String>,
    /// Seed of every random choice.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Basename of the abstract Unix sockets (`IBSIM_SOCKNAME` of the clients; ibsim's default
    /// `sim`).
    #[arg(long, default_value = "sim", value_parser = parse_sockname)]
    sockname: String,
    /// Serve UDP at ADDR:PORT instead (clients set `IBSIM_SERVER_NAME` and `IBSIM_SERVER_PORT`;
    /// client N's data goes to PORT + N + 1).
    #[arg(long)]
    udp: Option<std::net::SocketAddr>,
    /// Clients at once (ibsim allows 10); at least 1.
    #[arg(long, default_value_t = 4096, value_parser = clap::value_parser!(u32).range(1..))]
    max_clients: u32,
    /// `ours`: our SM and SA on the first host configure the subnet before serving. `none`: no SM
    /// of ours; the ports come up to Init and wait for an SM run as a client (`ibsim-run
    /// opensm`), whose SMPs configure them; the hosts' IPoIB interfaces then join through its SA.
    #[arg(long, value_enum, default_value_t = SmArg::Ours)]
    sm: SmArg,
    /// Every host runs an IPoIB interface with the built-in IP layer (host i: 10.0.0.(i+1)/8
    /// and its IPv6 link-local address) instead of a link that only joins.
    #[arg(long)]
    ip: bool,
    /// With `--ip`: a second after every interface has carrier and its link-local address, every
    /// host pings every other over IPv4 and IPv6 once; a line per answer (`ping A -> B ADDR:
    /// reply`, an unanswered echo request followed by another every second as ping(8) does),
    /// then `pings: N of M answered` when all are answered or after 10 s. The console
    /// line `pingall` starts another round (after a cable was pulled, say).
    #[arg(long, requires = "ip")]
    ping_all: bool,
    /// No IPoIB interface on any host: bare HCAs, as ibsim's, that join no broadcast group (so
    /// an SM run as a client sweeps the same fabric it would sweep on ibsim, with no SA traffic
    /// beside it; scripts/bench-sim.sh).
    #[arg(long, conflicts_with = "ip")]
    no_join: bool,
    /// Record every packet on every link of the subnet while it serves (an SM client's sweep,
    /// the clients' MADs, the hosts' traffic) into this pcap: ERF records, time-stamped by the
    /// wall clock, written as it runs. With `--sm ours` the bring-up, run in simulated time
    /// before serving, is not in it (`ipoib sim --pcap` records that). A write that fails (a full
    /// disk) stops the recording, said on standard error, not the server.
    #[arg(long)]
    pcap: Option<String>,
    /// Stop recording once the pcap reaches this many bytes (whole records; at least 24, the
    /// file's header); the server says when it does.
    #[arg(long, requires = "pcap")]
    pcap_limit: Option<u64>,
}

/// `--sm`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum SmArg {
    Ours,
    None,
}

/// `--sockname`: any name but the empty one, taken before as is: the server bound `:ctl` and
/// `:out<n>` and served there, a name no user means.
pub(crate) fn parse_sockname(s: &str) -> Result<String, String> {
    if s.is_empty() {
        Err(
            "empty: give the basename the clients set in IBSIM_SOCKNAME (ibsim's default `sim`)"
                .into(),
        )
    } else {
        Ok(s.to_string())
    }
}

fn fail(msg: impl std::fmt::Display) -> ExitCode {
    note!("ipoib ibsim-server: {msg}");
    ExitCode::from(2)
}

pub fn run(args: &Args) -> ExitCode {
    // First: a signal during the subnet's bring-up (seconds on a big fabric) is kept, not lost.
    // Started in the background of a non-interactive shell the process begins with SIGINT
    // ignored (POSIX.1-2017 XCU §2.11, docs/DEPLOYED.md), so a SIGINT before the handler would be
    // dropped and the server would serve on; it stops once the bring-up is done instead (a
    // second signal ends it at once, `crate::interrupt`).
    let (interrupt, err) = Interrupt::install();
    if let Some(e) = err {
        note!("ipoib ibsim-server: warning: no signal handler ({e})");
    }
    let stopped = |when: &str| interrupt.stopped_while("ipoib ibsim-server", when);
    // An unwritable `--pcap` is refused before the bring-up, which may take seconds; a file
    // that is there is emptied only once the recording starts.
    if let Err(e) = crate::pcap_out::check_limit(args.pcap_limit) {
        return fail(e);
    }
    if let Some(Err(e)) = args.pcap.as_deref().map(crate::pcap_out::open) {
        return fail(e);
    }
    let topo = match crate::topology_arg::load(&args.topology, args.hosts, None) {
        Ok(t) => t,
        Err(e) => return fail(e),
    };
    let parts = match args
        .partitions
        .as_deref()
        .map(|p| crate::sim::load_partitions("ipoib ibsim-server", p))
    {
        None => None,
        Some(Ok(c)) => Some(c),
        Some(Err(e)) => return fail(e),
    };
    let mut opts = SubnetOptions::new(topo, args.seed);
    opts.partitions = parts;
    let ours = args.sm == SmArg::Ours;
    if args.ip {
        opts.ipoib = Some(IpoibOptions::default());
    }
    opts.auto_join = !args.no_join;
    if !ours {
        opts.sm_mode = SmMode::None;
    }
    let mut net = match Subnet::build(opts) {
        Ok(n) => n,
        Err(e) => return fail(e),
    };
    if let Some(c) = stopped("while the subnet was built") {
        return c;
    }
    if ours {
        // As `sim` says them: ports our SM cannot reach, then each host that did not join.
        for w in [crate::why::unreached(&net), crate::why::behind_ca(&net)]
            .into_iter()
            .flatten()
        {
            note!("ipoib ibsim-server: warning: {w}");
        }
    }
    if ours && !net.run_until_joined(Instant::ZERO + Duration::from_secs(60)) {
        let in_sa = net.sa_joined();
        let missing: Vec<usize> = (0..net.host_count())
            .filter(|&i| !(net.is_joined(i) && in_sa[i]))
            .collect();
        note!("ipoib ibsim-server: warning: not every host joined its broadcast group:");
        for l in crate::why::host_lines(&net, &missing) {
            note!("  {l}");
        }
    }
    if let Some(c) = stopped("while the subnet came up") {
        return c;
    }
    let mut cfg = ServerConfig::unix(&args.sockname);
    cfg.max_clients = args.max_clients;
    if !ours {
        cfg.sm_hosts.clear();
    }
    if let Some(addr) = args.udp {
        cfg.listen = Listen::Udp { addr };
    }
    let mut server = match IbsimServer::bind(cfg) {
        Ok(s) => s,
        Err(e) => {
            return fail(format!(
                "cannot listen ({e}); is ibsim or another server running on that name?"
            ))
        }
    };
    let topo = net.topology().clone();
    for i in 0..net.host_count() {
        let h = net.host(i);
        println!(
            "host {} lid {} port {}{}",
            topo.nodes()[h.topo_node].name,
            net.lid(i),
            h.port,
            if i == 0 && ours { " (SM, SA)" } else { "" }
        );
    }
    println!("ready");
    let mut pings = args.ping_all.then(PingAll::default);
    let lines = console_lines();
    let mut console = Console::new();
    let mut quit = false;
    // Recorded from here on, time-stamped as the serving loop, started next, maps the wall clock
    // onto the subnet's time (its start at the subnet's present; the two clocks microseconds
    // apart).
    let mut rec = None;
    if let Some(p) = &args.pcap {
        let clock = ipoib_runtime::realtime::Clock::new(std::time::Instant::now(), net.sim().now());
        let epoch = ipoib_runtime::capture_file::epoch_of(&clock);
        match CaptureFile::start(p, args.pcap_limit, net.sim_mut(), epoch) {
            Ok(c) => rec = Some((c, Told::new("ipoib ibsim-server", p, args.pcap_limit))),
            Err(e) => return fail(format!("--pcap {p}: {e}")),
        }
    }
    let r = serve(
        &mut server,
        &mut net,
        &mut |server, net| {
            // Why a client was refused, at once (the client learns no reason): the first
            // TOLD_REFUSALS, then a line saying the rest are only counted.
            for line in server.told_refusals() {
                note!("ipoib ibsim-server: {line}");
            }
            while let Ok(line) = lines.try_recv() {
                if line.trim().eq_ignore_ascii_case("pingall") {
                    match pings.as_mut() {
                        Some(p) => {
                            *p = PingAll::default();
                            println!("pingall: another round");
                        }
                        None => println!("error: pingall needs --ping-all"),
                    }
                    continue;
                }
                let reply = console.execute(net, &line);
                for l in &reply.lines {
                    println!("{l}");
                }
                quit |= reply.quit;
            }
            if let Some(p) = pings.as_mut() {
                p.turn(net);
            }
            if let Some((c, t)) = rec.as_mut() {
                c.drain(net.sim_mut());
                t.check(c, "the server serves on");
            }
            quit || interrupt.signal().is_some()
        },
        ServeOptions::default(),
    );
    if let Some((c, t)) = rec.as_mut() {
        c.drain(net.sim_mut());
        note!("{}", t.summary(c));
    }
    let c = server.counters();
    let sim = net.sim().stats();
    note!(
        "ipoib ibsim-server: {} connects, {} refused, {} SM roles refused, {} handed over, {} \
         MADs in, {} out, {} handed back undelivered, {} lost to a client's full socket, {} \
         clients dropped (garbage {}, vanished {}); the subnet: {} packets, {} events",
        c.connects,
        c.refused,
        c.sm_role_refused,
        c.sm_handovers,
        c.mads_in,
        c.mads_out,
        c.undelivered,
        c.out_dropped,
        c.garbage_dropped + c.vanished,
        c.garbage_dropped,
        c.vanished,
        sim.packets,
        sim.events
    );
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            note!("ipoib ibsim-server: {e}");
            ExitCode::from(1)
        }
    }
}

/// Lines of standard input, read by a thread of their own (it ends at end of input or on a read
/// error; the receiver then just sees nothing more). A line that is not UTF-8 is passed on with
/// its odd bytes replaced (U+FFFD), to be answered like any other.
fn console_lines() -> std::sync::mpsc::Receiver<String> {
    use std::io::BufRead;
    let (tx, rx) = std::sync::mpsc::channel();
    let spawned = std::thread::Builder::new()
        .name("console".into())
        .spawn(move || {
            let mut input = std::io::stdin().lock();
            let mut buf = Vec::new();
            loop {
                if !line_may_be_read() {
                    continue;
                }
                buf.clear();
                if !matches!(input.read_until(b'\n', &mut buf), Ok(n) if n > 0) {
                    break;
                }
                let line = String::from_utf8_lossy(&buf);
                let line = line.trim_end_matches(['\n', '\r']).to_string();
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
    if let Err(e) = spawned {
        note!("ipoib ibsim-server: warning: no console ({e})");
    }
    rx
}

/// Whether the console may read standard input now: a pipe or a file always; a terminal only
/// while this process is in the terminal's foreground process group and a line waits (else it
/// waits up to 250 ms and says no). A background process that reads its terminal is stopped by
/// SIGTTIN (POSIX.1-2017 §11.1.4), the whole server with it: `ipoib ibsim-server ... &` in a
/// shell would stop serving at once.
fn line_may_be_read() -> bool {
    use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
    use std::io::IsTerminal;
    use std::os::fd::AsFd;
    let stdin = std::io::stdin();
    if !stdin.is_terminal() {
        return true;
    }
    let fd = stdin.as_fd();
    // An error: not our controlling terminal, which stops no one who reads it.
    let background = nix::unistd::tcgetpgrp(fd).is_ok_and(|g| g != nix::unistd::getpgrp());
    if background {
        std::thread::sleep(Duration::from_millis(250));
        return false;
    }
    let mut fds = [PollFd::new(fd, PollFlags::POLLIN)];
    matches!(poll(&mut fds, PollTimeout::from(250u16)), Ok(n) if n > 0)
}

/// `--ping-all`: every host pings every other over IPv4 and IPv6 link-local once the subnet is up
/// (whoever configured it), and the answers are printed. As ping(8) does, an echo request that
/// is not answered is followed by another a second later (the pair counts as answered when any
/// of them is): the first burst of ARP, ND and echoes towards a peer whose PathRecord query is
/// still in flight overflows the interface's path queue (3 packets, Linux's
/// `IPOIB_MAX_PATH_REC_QUEUE`, proto `ipoib::path`), and what overflows is lost.
#[derive(Debug, Default)]
struct PingAll {
    /// (from, to, address, indices of its echo requests in the sender's pings, printed).
    sent: Vec<(usize, usize, IpAddr, Vec<usize>, bool)>,
    sent_at: Option<Instant>,
    /// When the last echo requests went out.
    last_at: Option<Instant>,
    /// When every interface was first seen up.
    up_at: Option<Instant>,
    done: bool,
}

impl PingAll {
    /// How long the answers may take (virtual time, which follows the wall clock here).
    const WITHIN: Duration = Duration::from_secs(10);
    /// How long after every interface is up the pings start.
    const SETTLE: Duration = Duration::from_secs(1);
    /// How long an echo request waits before the next goes to the same address (ping(8)'s).
    const INTERVAL: Duration = Duration::from_secs(1);

    fn turn(&mut self, net: &mut Subnet) {
        if self.done {
            return;
        }
        let n = net.host_count();
        let Some(at) = self.sent_at else {
            // Up: carrier on every interface (broadcast group joined) and link-local ready.
            let up = (0..n).all(|i| {
                net.ipoib_app(i).is_some_and(|a| {
                    a.carrier() && a.ip().ipv4().is_some() && !a.ip().ipv6().is_empty()
                })
            });
            if !up {
                self.up_at = None;
                return;
            }
            // OpenSM programs the switches' multicast tables after it answers the joins: give
            // the broadcast group's tree a moment before the first ARP and ND go out on it.
            let since = *self.up_at.get_or_insert(net.sim().now());
            if net.sim().now() < since + Self::SETTLE {
                return;
            }
            let addrs: Vec<[IpAddr; 2]> = (0..n)
                .filter_map(|i| {
                    let ip = net.ipoib_app(i)?.ip();
                    Some([IpAddr::V4(ip.ipv4()?), IpAddr::V6(*ip.ipv6().first()?)])
                })
                .collect();
            for a in 0..n {
                for b in (0..n).filter(|&b| b != a) {
                    for &dst in &addrs[b] {
                        if let Some(Ok(k)) = net.with_ipoib(a, |app, now| app.ping(now, dst)) {
                            self.sent.push((a, b, dst, vec![k], false));
                        }
                    }
                }
            }
            println!("pinging: {} pings", self.sent.len());
            self.sent_at = Some(net.sim().now());
            self.last_at = self.sent_at;
            return;
        };
        let names: Vec<String> = (0..n)
            .map(|i| net.topology().nodes()[net.host(i).topo_node].name.clone())
            .collect();
        for (a, b, dst, ks, printed) in &mut self.sent {
            let answered = net.ipoib_app(*a).is_some_and(|app| {
                ks.iter().any(|&k| {
                    app.ip()
                        .pings()
                        .get(k)
                        .is_some_and(|p| p.reply_at.is_some())
                })
            });
            if answered && !*printed {
                *printed = true;
                println!("ping {} -> {} {dst}: reply", names[*a], names[*b]);
            }
        }
        let answered = self.sent.iter().filter(|s| s.4).count();
        let now = net.sim().now();
        if answered == self.sent.len() || now >= at + Self::WITHIN {
            println!("pings: {answered} of {} answered", self.sent.len());
            self.done = true;
            return;
        }
        if self.last_at.is_some_and(|t| now >= t + Self::INTERVAL) {
            self.last_at = Some(now);
            for (a, _, dst, ks, printed) in &mut self.sent {
                if !*printed {
                    if let Some(Ok(k)) = net.with_ipoib(*a, |app, now| app.ping(now, *dst)) {
                        ks.push(k);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(clap::Parser, Debug)]
    struct Cli {
        #[command(flatten)]
        args: Args,
    }

    /// `--max-clients 0` would serve a subnet that refuses every client: a bad argument.
    #[test]
    fn max_clients_is_at_least_one() {
        let parse =
            |n: &str| Cli::try_parse_from(["ibsim-server", "--topology", "x", "--max-clients", n]);
        assert!(parse("0").is_err());
        assert_eq!(parse("1").unwrap().args.max_clients, 1);
    }
}

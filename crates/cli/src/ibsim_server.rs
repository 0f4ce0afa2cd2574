//! `ipoib ibsim-server`: serves ibsim's client protocol on a subnet of ours, so that programs run
//! under `ibsim-run` (Debian ibsim-utils: `saquery`, `smpquery`, ...) attach to its hosts by name
//! ([`ipoib_runtime::ibsim_server`]). The subnet comes up in virtual time first (every host with
//! its LID, our SM and SA configured and the broadcast groups joined), then runs against the wall
//! clock while it serves, until SIGINT or SIGTERM.

use crate::interrupt::Interrupt;
use ipoib_fabric::node::subnet::{Subnet, SubnetOptions};
use ipoib_fabric::Instant;
use ipoib_proto::partitions;
use ipoib_runtime::ibsim_server::{serve, IbsimServer, Listen, ServeOptions, ServerConfig};
use std::process::ExitCode;
use std::time::Duration;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// `single-switch`, `fat-tree` (with `--hosts`) or an ibnetdiscover / ibsim net file. Clients
    /// attach to a host by its node name (`SIM_HOST` of ibsim-run) or description; without one to
    /// the first host, where our SM and SA run.
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
    #[arg(long, default_value = "sim")]
    sockname: String,
    /// Serve UDP at ADDR:PORT instead (clients set `IBSIM_SERVER_NAME` and `IBSIM_SERVER_PORT`;
    /// client N's data goes to PORT + N + 1).
    #[arg(long)]
    udp: Option<std::net::SocketAddr>,
    /// Clients at once (ibsim allows 10).
    #[arg(long, default_value_t = 4096)]
    max_clients: u32,
}

fn fail(msg: impl std::fmt::Display) -> ExitCode {
    note!("ipoib ibsim-server: {msg}");
    ExitCode::from(2)
}

pub fn run(args: &Args) -> ExitCode {
    let topo = match crate::topology_arg::load(&args.topology, args.hosts, None) {
        Ok(t) => t,
        Err(e) => return fail(e),
    };
    let parts = match args.partitions.as_deref().map(|p| {
        let text = std::fs::read_to_string(p).map_err(|e| format!("{p}: {e}"))?;
        partitions::parse(&text).map_err(|e| format!("{p}: {e}"))
    }) {
        None => None,
        Some(Ok(c)) => Some(c),
        Some(Err(e)) => return fail(e),
    };
    let mut opts = SubnetOptions::new(topo, args.seed);
    opts.partitions = parts;
    let mut net = match Subnet::build(opts) {
        Ok(n) => n,
        Err(e) => return fail(e),
    };
    if !net.run_until_joined(Instant::ZERO + Duration::from_secs(60)) {
        note!("ipoib ibsim-server: warning: not every host joined its broadcast group");
    }
    let mut cfg = ServerConfig::unix(&args.sockname);
    cfg.max_clients = args.max_clients;
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
    let (interrupt, err) = Interrupt::install();
    if let Some(e) = err {
        note!("ipoib ibsim-server: warning: no signal handler ({e})");
    }
    let topo = net.topology().clone();
    for i in 0..net.host_count() {
        let h = net.host(i);
        println!(
            "host {} lid {} port {}{}",
            topo.nodes()[h.topo_node].name,
            net.lid(i),
            h.port,
            if i == 0 { " (SM, SA)" } else { "" }
        );
    }
    println!("ready");
    let r = serve(
        &mut server,
        &mut net,
        &|| interrupt.signal().is_some(),
        ServeOptions::default(),
    );
    let c = server.counters();
    note!(
        "ipoib ibsim-server: {} connects, {} refused, {} MADs in, {} out, {} clients dropped \
         (garbage {}, vanished {})",
        c.connects,
        c.refused,
        c.mads_in,
        c.mads_out,
        c.garbage_dropped + c.vanished,
        c.garbage_dropped,
        c.vanished
    );
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            note!("ipoib ibsim-server: {e}");
            ExitCode::from(1)
        }
    }
}

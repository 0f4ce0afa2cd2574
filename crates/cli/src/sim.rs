//! `ipoib sim`: brings up an emulated subnet of N hosts ([`ipoib_fabric::node::subnet::Subnet`]): the
//! subnet manager configures every port and forwarding table, every host gets a LID and joins the
//! IPoIB broadcast group of its partitions through real SA MADs, and the command reports the wall
//! time, simulated time, packets, bytes, events, peak memory and the SA's group table.
//!
//! A host counts as joined when the SA's member records hold its port as a FullMember of an IPoIB
//! broadcast group ([`Subnet::sa_joined`]), not when the host says so (a host with nothing to join
//! would). Exit status: 0 when every host joined before the simulated deadline, 1 when some did
//! not (the first few named, each with why: [`Subnet::join_problems`]), 2 for bad arguments,
//! unreadable files or a capture that could not be written (the report then says so).

use ipoib_fabric::hw::topology::Topology;
use ipoib_fabric::node::subnet::{Subnet, SubnetOptions};
use ipoib_fabric::Instant;
use ipoib_proto::partitions::{self, PartitionConfig};
use ipoib_wire::render::escape;
use ipoib_wire::{PKey, QKey};
use std::fmt::Write as _;
use std::io::{IsTerminal, Write as _};
use std::process::ExitCode;
use std::time::{Duration, Instant as Wall};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Number of hosts: required with `fat-tree` (the default) and `single-switch`; with a net
    /// file optional, and if given it must match the file's hosts: its channel adapters with a
    /// cabled port.
    #[arg(long)]
    hosts: Option<usize>,
    /// `fat-tree` (two-level, up to 32,258 hosts), `single-switch` (up to 254 hosts), or an
    /// ibnetdiscover / ibsim net file. Multi-port HCAs: every cabled port gets its own LID and
    /// GID if the subnet manager reaches it (not one reachable only through another HCA, which
    /// does not forward SMPs); a host joins on its first port the SM reaches (Linux's IPoIB interface of a port
    /// gets carrier only once the port is Active).
    #[arg(long, default_value = "fat-tree")]
    topology: String,
    /// Seed of every random choice (same seed, same packets).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// OpenSM partitions.conf (default: partition 0x7fff, every port full, IPoIB broadcast group).
    /// A file without any definition (empty, or comments only) means that default, as OpenSM
    /// does; what OpenSM would warn about is printed as a warning with its line and column, an
    /// `mtu=` or `rate=` that is no MTU or rate code is refused. A port's P_Key table holds 128
    /// partitions; hosts that belong to more are named in a warning.
    #[arg(long)]
    partitions: Option<String>,
    /// Write every packet into this pcap (ERF records, link type 197; `ipoib decode` and tshark
    /// read it).
    #[arg(long)]
    pcap: Option<String>,
    /// Simulated seconds every host has to join (at least 1: at 0 nothing has run, and every
    /// host was reported as one the SM did not configure).
    #[arg(long, default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..))]
    deadline: u64,
    /// One JSON object instead of text.
    #[arg(long)]
    json: bool,
}

fn fail(msg: impl std::fmt::Display) -> ExitCode {
    note!("ipoib sim: {msg}");
    ExitCode::from(2)
}

fn load_topology(args: &Args) -> Result<Topology, String> {
    crate::topology_arg::load(&args.topology, args.hosts, None)
}

/// Where a group the SM made at its start (`well_known`) came from, as a parenthesis after its
/// line: the `--partitions` file `partitions`, or, without one, the default partition (P_Key
/// 0xffff, every port a full member) whose IPoIB broadcast group has IPoIB's default parameters
/// (OpenSM makes the same group when it has no partitions.conf, opensm(8)).
fn group_origin(partitions: Option<&str>) -> String {
    match partitions {
        Some(p) => format!(" (made by the SM from --partitions {p})"),
        None => " (made by the SM: the default partition's broadcast group with IPoIB's default \
                 parameters; no --partitions file)"
            .into(),
    }
}

/// Reads and parses the `--partitions` file `path`, printing its warnings (what OpenSM would log
/// as `PARSE WARN`, and the like) on standard error under `cmd`, the command that reads it
/// (`ipoib sim`, `ipoib lab`, ...). An error names the option, so that "No such file" says which.
pub(crate) fn load_partitions(cmd: &str, path: &str) -> Result<PartitionConfig, String> {
    Ok(load_partitions_text(cmd, path)?.1)
}

/// [`load_partitions`], with the text read: a caller that also hands the file on (`ipoib lab
/// --sm opensm` to OpenSM) gives it this text, as the file may be a pipe that is read only once.
pub(crate) fn load_partitions_text(
    cmd: &str,
    path: &str,
) -> Result<(String, PartitionConfig), String> {
    let text = crate::text_file::read("--partitions", path)?;
    let cfg = partitions::parse(&text).map_err(|e| format!("{path}: {e}"))?;
    for w in &cfg.warnings {
        note!("{cmd}: {path}: warning: {w}");
    }
    Ok((text, cfg))
}

fn human_duration(d: Duration) -> String {
    let ns = d.as_nanos();
    if ns >= 1_000_000_000 {
        format!("{:.3} s", d.as_secs_f64())
    } else if ns >= 1_000_000 {
        format!("{:.3} ms", ns as f64 / 1e6)
    } else {
        format!("{:.1} µs", ns as f64 / 1e3)
    }
}

/// A `\r` progress line on stderr, shown only on a terminal and only after the first second.
struct Progress {
    start: Wall,
    last: Option<Wall>,
    shown: bool,
    enabled: bool,
}

impl Progress {
    fn new(start: Wall) -> Progress {
        Progress {
            start,
            last: None,
            shown: false,
            enabled: std::io::stderr().is_terminal(),
        }
    }

    fn update(&mut self, joined: usize, hosts: usize, sim: Duration) {
        if !self.enabled || self.start.elapsed() < Duration::from_secs(1) {
            return;
        }
        if self
            .last
            .is_some_and(|t| t.elapsed() < Duration::from_millis(100))
        {
            return;
        }
        self.last = Some(Wall::now());
        self.shown = true;
        let width = 30;
        let filled = (joined * width).checked_div(hosts).unwrap_or(width);
        let _ = write!(
            std::io::stderr(),
            "\r[{}{}] {joined}/{hosts} hosts joined, {} simulated, {:.1} s",
            "#".repeat(filled),
            " ".repeat(width - filled),
            human_duration(sim),
            self.start.elapsed().as_secs_f64()
        );
        let _ = std::io::stderr().flush();
    }

    fn finish(&self) {
        if self.shown {
            note!();
        }
    }
}

pub fn run(args: &Args) -> ExitCode {
    let start = Wall::now();
    let topo = match load_topology(args) {
        Ok(t) => t,
        Err(e) => return fail(e),
    };
    let parts = match args
        .partitions
        .as_deref()
        .map(|p| load_partitions("ipoib sim", p))
        .transpose()
    {
        Ok(p) => p,
        Err(e) => return fail(e),
    };
    // Opened now, not after the run: an unwritable path (minutes into a big run) would throw the
    // run and its report away. Emptied only when the capture is written (a Ctrl-C before that
    // leaves an existing file as it was).
    let mut pcap = match args.pcap.as_deref().map(crate::pcap_out::open).transpose() {
        Ok(f) => f,
        Err(e) => return fail(e),
    };
    let mut opts = SubnetOptions::new(topo, args.seed);
    opts.partitions = parts;
    opts.capture = pcap.is_some();
    // Not dropped: the process exits after the report, and the OS takes the memory back at once
    // where freeing every host's state one allocation at a time costs about 4 % of a 10,000-host
    // run (perf; docs/benchmarks/subnet.md).
    let mut net = match Subnet::build(opts) {
        Ok(n) => std::mem::ManuallyDrop::new(n),
        Err(e) => return fail(e),
    };
    for w in [
        crate::why::unreached(&net),
        crate::why::behind_ca(&net),
        crate::why::pkey_tables_full(&net),
    ]
    .into_iter()
    .flatten()
    {
        note!("ipoib sim: warning: {w}");
    }
    let deadline = Instant::ZERO + Duration::from_secs(args.deadline);
    let mut progress = Progress::new(start);
    let all = net.run_until_joined_with(deadline, |p| {
        progress.update(p.joined, p.hosts, p.now - Instant::ZERO)
    });
    progress.finish();
    let wall = start.elapsed();
    // A capture the disk cannot take does not throw the run's report away: it says so there,
    // and the exit status is 2.
    let mut pcap_error = None;
    if let (Some(file), Some(path)) = (pcap.as_mut(), &args.pcap) {
        if let Some(c) = net.sim_mut().take_capture() {
            if let Err(e) = crate::pcap_out::replace(file, &c.into_bytes()) {
                pcap_error = Some(format!("--pcap {path}: {e}"));
            }
        }
    }
    // A join counts when the SA's member records hold it, not when the host says so.
    let in_sa = net.sa_joined();
    let missing: Vec<usize> = (0..net.host_count())
        .filter(|&i| !(net.is_joined(i) && in_sa[i]))
        .collect();
    let mut report = Report::gather(&net, wall, &missing);
    report.pcap_error = pcap_error;
    if args.json {
        println!("{}", report.json(args));
    } else {
        print!("{}", report.text(args));
    }
    let status = sim_status(args, all, &report);
    if let Some(e) = &report.pcap_error {
        return fail(e);
    }
    status
}

/// The exit status of a run whose report is out: 0 when every host joined and the multicast
/// trees were written, else 1, with why on standard error.
fn sim_status(args: &Args, all: bool, report: &Report) -> ExitCode {
    let missing = report.hosts - report.joined;
    if all && missing == 0 {
        return ExitCode::SUCCESS;
    }
    if missing == 0 {
        note!(
            "ipoib sim: every host joined, but the subnet manager had not written the multicast \
             trees within {} s of simulated time",
            args.deadline
        );
        return ExitCode::from(1);
    }
    note!(
        "ipoib sim: only {} of {} hosts joined the broadcast group within {} s of simulated time \
         (as the SA's member records say); not joined:",
        report.joined,
        report.hosts,
        args.deadline,
    );
    for line in &report.not_joined {
        note!("  {line}");
    }
    ExitCode::from(1)
}

/// One multicast group, as the SA holds it.
struct GroupLine {
    mgid: String,
    mlid: u16,
    pkey: PKey,
    qkey: QKey,
    /// MTU in bytes (0 for an undefined code, which the SA never gives a group).
    mtu: u32,
    members: usize,
    well_known: bool,
}

/// The figures the command prints.
struct Report {
    hosts: usize,
    joined: usize,
    with_lid: usize,
    /// Cabled CA ports (more than the hosts when HCAs cable several ports).
    ca_ports: usize,
    /// Cabled CA ports with a LID.
    ca_ports_with_lid: usize,
    /// Some CA cables more than one port, or another port than 1.
    multi_port: bool,
    wall: Duration,
    /// When the last host joined (simulated).
    last_join: Option<Duration>,
    sim_now: Duration,
    packets: u64,
    bytes: u64,
    events: u64,
    peak_kib: Option<u64>,
    sa_requests: u64,
    groups: Vec<GroupLine>,
    /// The first hosts not joined, each with why ([`crate::why::host_lines`]).
    not_joined: Vec<String>,
    /// `--pcap` could not be written (a full disk): what the write said.
    pcap_error: Option<String>,
}

impl Report {
    /// The figures of `net` after a run of `wall`; `missing` are the hosts the SA does not hold
    /// as joined.
    fn gather(net: &Subnet, wall: Duration, missing: &[usize]) -> Report {
        let stats = net.sim().stats();
        let n = net.host_count();
        let groups = net
            .sa()
            .groups()
            .into_iter()
            .map(|g| GroupLine {
                mgid: g.record.mgid.to_string(),
                mlid: g.record.mlid,
                pkey: g.record.pkey,
                qkey: g.record.qkey,
                mtu: g.record.mtu.bytes().unwrap_or(0),
                members: g.members.len(),
                well_known: g.well_known,
            })
            .collect();
        let ports = net.cabled_ca_ports();
        let topo = net.topology();
        Report {
            hosts: n,
            joined: n - missing.len(),
            with_lid: (0..n).filter(|&i| net.lid(i) != 0).count(),
            ca_ports: ports.len(),
            ca_ports_with_lid: ports.iter().filter(|p| p.2 != 0).count(),
            multi_port: topo.cas().any(|c| {
                let cabled: Vec<u8> = topo.cabled_ports(c).collect();
                !cabled.is_empty() && cabled != [1]
            }),
            wall,
            last_join: (0..n)
                .filter(|i| missing.binary_search(i).is_err())
                .filter_map(|i| net.joined_at(i))
                .max()
                .map(|t| t - Instant::ZERO),
            sim_now: net.sim().now() - Instant::ZERO,
            packets: stats.packets,
            bytes: stats.bytes,
            events: stats.events,
            peak_kib: crate::peak_memory_kib(),
            sa_requests: net.sa().stats().requests,
            groups,
            not_joined: crate::why::host_lines(net, missing),
            pcap_error: None,
        }
    }

    fn text(&self, args: &Args) -> String {
        let mut o = String::new();
        let _ = writeln!(
            o,
            "subnet: {} hosts ({}), seed {}",
            self.hosts, args.topology, args.seed
        );
        let _ = writeln!(
            o,
            "hosts with a LID: {}/{}; joined the broadcast group: {}/{} (the SA's member records)",
            self.with_lid, self.hosts, self.joined, self.hosts
        );
        if self.multi_port {
            let _ = writeln!(
                o,
                "CA ports with a LID: {}/{} cabled (each port its own LID and GID; a host joins \
                 on its first port the SM reaches)",
                self.ca_ports_with_lid, self.ca_ports
            );
        }
        let _ = writeln!(o, "wall time: {}", human_duration(self.wall));
        let _ = writeln!(
            o,
            "simulated time: {} (last join), {} (end of run)",
            self.last_join.map_or("n/a".into(), human_duration),
            human_duration(self.sim_now)
        );
        let _ = writeln!(
            o,
            "packets: {} ({} bytes); events: {}; SA requests answered: {}",
            self.packets, self.bytes, self.events, self.sa_requests
        );
        let _ = writeln!(
            o,
            "peak memory: {}",
            self.peak_kib
                .map_or("n/a".into(), |k| format!("{:.1} MiB", k as f64 / 1024.0))
        );
        let _ = writeln!(o, "SA multicast groups: {}", self.groups.len());
        for g in &self.groups {
            let _ = writeln!(
                o,
                "  {} MLID {:#06x} P_Key {:#06x} Q_Key {:#06x} MTU {} members {}{}",
                g.mgid,
                g.mlid,
                g.pkey,
                g.qkey,
                g.mtu,
                g.members,
                if g.well_known {
                    group_origin(args.partitions.as_deref())
                } else {
                    String::new()
                }
            );
        }
        match (&self.pcap_error, &args.pcap) {
            (Some(e), _) => {
                let _ = writeln!(o, "capture: NOT written: {e}");
            }
            (None, Some(p)) => {
                let _ = writeln!(o, "capture: {p}");
            }
            _ => {}
        }
        o
    }

    fn json(&self, args: &Args) -> String {
        let mut o = String::from("{");
        let _ = write!(o, "\"hosts\":{},\"topology\":", self.hosts);
        escape(&mut o, &args.topology);
        let _ = write!(
            o,
            ",\"seed\":{},\"hosts_with_lid\":{},\"ca_ports\":{},\"ca_ports_with_lid\":{},\
             \"joined\":{},\"wall_ns\":{},\"sim_last_join_ns\":{},\
             \"sim_end_ns\":{},\"packets\":{},\"bytes\":{},\"events\":{},\"sa_requests\":{},\
             \"peak_memory_kib\":{},\"groups\":[",
            args.seed,
            self.with_lid,
            self.ca_ports,
            self.ca_ports_with_lid,
            self.joined,
            self.wall.as_nanos(),
            self.last_join
                .map_or("null".into(), |d| d.as_nanos().to_string()),
            self.sim_now.as_nanos(),
            self.packets,
            self.bytes,
            self.events,
            self.sa_requests,
            self.peak_kib.map_or("null".into(), |k| k.to_string()),
        );
        for (i, g) in self.groups.iter().enumerate() {
            if i > 0 {
                o.push(',');
            }
            o.push_str("{\"mgid\":");
            escape(&mut o, &g.mgid);
            let _ = write!(
                o,
                ",\"mlid\":{},\"pkey\":{},\"qkey\":{},\"mtu\":{},\"members\":{},\"well_known\":{}}}",
                g.mlid, g.pkey.0, g.qkey.0, g.mtu, g.members, g.well_known
            );
        }
        o.push_str("],\"not_joined\":[");
        for (i, line) in self.not_joined.iter().enumerate() {
            if i > 0 {
                o.push(',');
            }
            escape(&mut o, line);
        }
        o.push(']');
        if let Some(p) = &args.pcap {
            o.push_str(",\"pcap\":");
            escape(&mut o, p);
            o.push_str(",\"pcap_error\":");
            match &self.pcap_error {
                Some(e) => escape(&mut o, e),
                None => o.push_str("null"),
            }
        }
        o.push('}');
        o
    }
}

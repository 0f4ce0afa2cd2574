//! `ipoib demo`: the README's main command. It builds a small InfiniBand subnet in one process
//! ([`ipoib_fabric::node::subnet::Subnet`] with IPoIB on every host), brings IPoIB up on every host
//! (draft-ietf-ipoib-ip-over-infiniband-06 §5: the broadcast join, carrier after it), and shows
//! what a person wants to see: every host's LID, GID, link-layer address and IP addresses; the ARP
//! and ND resolutions the first pings cause; IPv4 and IPv6 ping between all pairs (a bounded,
//! evenly spread sample on big subnets) with virtual-time round-trip times; a multicast join and
//! delivery (§11); the SA's group table. The whole conversation goes to a pcap that Wireshark and
//! tshark read. With `--mode connected` every interface runs IPoIB connected mode (RFC 4755) and
//! the report adds the connections ([`connected()`]), the CM messages of the capture, and a bulk
//! transfer over RC and then over UD ([`bulk`]), run with the capture off.
//!
//! Exit status: 0 when everything worked, 1 when something failed (a host without carrier, a ping
//! unanswered, a multicast datagram missing or delivered to a non-member), 2 for bad arguments
//! or an unwritable pcap, 128 + the signal number (130 for Ctrl-C, 143 for SIGTERM) when a
//! signal stopped the run: it then prints what it found up to that moment and keeps the capture
//! so far ([`crate::interrupt`]).
//!
//! The cost stays linear in the hosts: the pcap is written as it grows, the ping sample and the
//! gratuitous ARP are bounded by [`BROADCAST_BUDGET`], and a progress line shows on a terminal
//! when the run takes more than a second ([`drive`]).
//!
//! The run is deterministic: the same seed gives the same output (bar the wall time and memory)
//! and the same pcap, byte for byte.

mod bulk;
mod connected;
mod drive;
mod report;
mod scenario;

use crate::interrupt::Interrupt;
use drive::{Driver, ProgressMode};
use ipoib_fabric::hw::capture::Capture;
use ipoib_fabric::hw::topology::Topology;
use ipoib_fabric::node::ipoib::StackCost;
use ipoib_fabric::node::subnet::{IpoibOptions, Subnet, SubnetOptions};
use ipoib_proto::ipoib::{ConnectedConfig, InterfaceConfig};
use std::net::Ipv4Addr;
use std::process::ExitCode;
use std::time::{Duration, Instant as Wall};

/// Pairs pinged at most per address family; bigger subnets ping an evenly spread sample.
pub const MAX_PAIRS: usize = 256;
/// Host ports the ARP broadcasts of one phase may reach, about. The first ping of a pair sends
/// an ARP request to the broadcast group, which every host receives (draft-ietf-ipoib-ip-over-
/// infiniband-06 §9.2), so beyond 1,000 hosts the sample shrinks to keep pairs × hosts under
/// this; and the gratuitous ARP at carrier up (N broadcasts to N hosts) is only sent while N²
/// stays under it, up to 505 hosts ([`announces`]). Without these bounds the demo's cost grows
/// with the square of the hosts.
pub const BROADCAST_BUDGET: usize = MAX_PAIRS * 1000;
/// The multicast group of the demo.
pub const GROUP: Ipv4Addr = Ipv4Addr::new(239, 1, 1, 1);
/// UDP port the multicast datagram goes to.
pub const GROUP_PORT: u16 = 5001;
/// Packets kept in the pcap at most (about 300 MB): a subnet of a thousand hosts puts some 16
/// million packets on its links (mostly the SA's Reports of new groups to every subscriber).
pub const MAX_CAPTURE_PACKETS: u64 = 1_000_000;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Number of hosts (default 4; with a net file, if given, it must match the file's hosts: its
    /// channel adapters with a cabled port).
    #[arg(long)]
    hosts: Option<usize>,
    /// `single-switch` (up to 254 hosts), `fat-tree` (two-level, up to 32,258 hosts), or an
    /// ibnetdiscover / ibsim net file. Multi-port HCAs: every cabled port gets its own LID and
    /// GID if the subnet manager reaches it (not one reachable only through another HCA, which
    /// does not forward SMPs); IPoIB runs on a host's first port the SM reaches (one interface per host; Linux's
    /// IPoIB interface of a port gets carrier only once the port is Active), and the report lists
    /// every port.
    #[arg(long, default_value = "single-switch")]
    topology: String,
    /// Seed of every random choice (same seed, same packets).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Where to write the whole conversation (ERF records, link type 197: Wireshark, tshark and
    /// `ipoib decode` read it).
    #[arg(long, default_value = "ipoib-demo.pcap")]
    pcap: String,
    /// One JSON document instead of text.
    #[arg(long)]
    json: bool,
    /// A progress line on standard error: `auto` on a terminal once the run takes a second,
    /// `always` from the start (one line a second when not on a terminal), or `never`.
    #[arg(long, value_enum, default_value_t = ProgressMode::Auto)]
    progress: ProgressMode,
    /// `datagram`: unicast over UD (draft-ietf-ipoib-ip-over-infiniband-06). `connected`: every
    /// interface also offers RC connections (RFC 4755) and sends unicast over them with a 65520
    /// MTU; the report adds the connections, the CM messages of the capture and a bulk transfer
    /// in both modes.
    #[arg(long, value_enum, default_value_t = DemoMode::Datagram)]
    mode: DemoMode,
    /// Bytes of the bulk transfer from the first host to the second, in datagrams of the largest
    /// size the mode allows, run with the capture off (default in connected mode 65,492,000: 1,000
    /// datagrams of 65,492 bytes, under 64 MiB; in datagram mode no transfer unless given; 0 for
    /// none; at most 1 GiB; K, M or G for powers of 1024, as `ipoib rping --size` takes).
    /// Connected mode runs it over RC, then once more over UD after the sender went back to
    /// datagram mode, to compare.
    #[arg(long, value_parser = crate::rping::parse_size)]
    bulk_bytes: Option<u64>,
    /// Nanoseconds each emulated host spends on every IP packet it sends or receives, one packet
    /// after another (default 0: hosts spend no time and the links alone limit throughput). With
    /// a cost, datagram mode is bound by its hosts' per-packet work, as on real hosts, and the
    /// bulk transfers show what connected mode's 32 times fewer packets gain in simulated time.
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u64).range(0..=1_000_000_000))]
    packet_cost_ns: u64,
    /// `rfc`: IPv6 as RFC 4391 and RFC 4755 carry it (the 4-byte IPoIB header, the FF1y:401B::
    /// multicast mapping, RFC 4391 §9.1.2's link-layer option). `legacy`: every interface uses
    /// the profile of draft-kashyap-ipoib-ipv6-01 (its own link-layer option, the FF1y:3333::
    /// mapping, IPv6 over UD as a bare datagram with no IPoIB header and always a GRH); IPv4
    /// is unchanged.
    #[arg(long, value_enum, default_value_t = Ipv6Profile::Rfc)]
    ipv6_profile: Ipv6Profile,
}

/// Which IPv6 over InfiniBand profile the demo's interfaces follow.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ipv6Profile {
    /// RFC 4391 (and RFC 4755 in connected mode).
    Rfc,
    /// draft-kashyap-ipoib-ipv6-01 (docs/conformance/ipoib-ud.md, rows V6L-*).
    Legacy,
}

/// The unicast mode of the demo's interfaces.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum DemoMode {
    /// Unicast over UD.
    Datagram,
    /// Unicast over RC connections (RFC 4755).
    Connected,
}

/// What the scenario runs beyond its fixed phases.
#[derive(Debug, Clone, Copy)]
pub struct Plan {
    pub connected: bool,
    /// `--bulk-bytes` as given.
    pub bulk_bytes: Option<u64>,
}

impl Plan {
    /// Bytes of the bulk transfer, if one runs.
    pub fn bulk_bytes(&self) -> Option<u64> {
        match (self.bulk_bytes, self.connected) {
            (Some(b), _) => Some(b),
            (None, true) => Some(bulk::DEFAULT_BYTES),
            (None, false) => None,
        }
    }
}

fn connected(_: usize, c: &mut InterfaceConfig) {
    c.connected = Some(ConnectedConfig::rc());
}

fn connected_quiet(i: usize, c: &mut InterfaceConfig) {
    connected(i, c);
    c.arp_notify = false;
    c.ndisc_notify = false;
}

fn fail(msg: impl std::fmt::Display) -> ExitCode {
    note!("ipoib demo: {msg}");
    ExitCode::from(2)
}

fn load_topology(args: &Args) -> Result<Topology, String> {
    crate::topology_arg::load(&args.topology, args.hosts, Some(4))
}

pub fn run(args: &Args) -> ExitCode {
    let start = Wall::now();
    let (interrupt, error) = Interrupt::install();
    if let Some(e) = error {
        note!("ipoib demo: Ctrl-C will stop the run without a report: {e}");
    }
    let topo = match load_topology(args) {
        Ok(t) => t,
        Err(e) => return fail(e),
    };
    if args.bulk_bytes.is_some_and(|b| b > bulk::MAX_BYTES) {
        return fail(format!("--bulk-bytes: at most {} (1 GiB)", bulk::MAX_BYTES));
    }
    let plan = Plan {
        connected: args.mode == DemoMode::Connected,
        bulk_bytes: args.bulk_bytes,
    };
    let hosts = topo.host_ports().count();
    if hosts < 2 && args.bulk_bytes.is_some_and(|b| b > 0) {
        return fail(format!(
            "--bulk-bytes: the transfer goes from the first host to the second, and the subnet \
             has {hosts} host"
        ));
    }
    let mut opts = SubnetOptions::new(topo, args.seed);
    let ipoib = IpoibOptions {
        configure: match (plan.connected, announces(hosts)) {
            (false, true) => None,
            (false, false) => Some(|_, c| {
                c.arp_notify = false;
                c.ndisc_notify = false;
            }),
            (true, true) => Some(connected),
            (true, false) => Some(connected_quiet),
        },
        legacy_ipv6: args.ipv6_profile == Ipv6Profile::Legacy,
        ..IpoibOptions::default()
    };
    opts.ipoib = Some(ipoib);
    let mut drv = match Driver::new(interrupt, args.progress, start, &args.pcap) {
        Ok(d) => d,
        Err(e) => return fail(e),
    };
    let mut net = match Subnet::build(opts) {
        Ok(n) => n,
        Err(e) => return fail(e),
    };
    if let Some(w) = crate::why::behind_ca(&net) {
        eprintln!("ipoib demo: warning: {w}");
    }
    net.sim_mut()
        .set_capture(Capture::new().with_packet_limit(MAX_CAPTURE_PACKETS));
    let cost = StackCost::per_packet(Duration::from_nanos(args.packet_cost_ns));
    for i in 0..hosts {
        net.with_ipoib(i, |a, _| a.set_stack_cost(cost));
    }
    let mut found = scenario::Found::default();
    let stopped = scenario::run(&mut net, &mut drv, &plan, &mut found).err();
    let mut r = scenario::report(&net, &plan, &found, stopped);
    // A capture that could not be written (a full disk, minutes into a big run) does not throw
    // the report away: it says so there and in the exit status.
    match drv.finish(&mut net) {
        Ok((kept, skipped)) => (r.packets, r.packets_skipped) = (kept, skipped),
        Err(e) => r.capture_error = Some(e),
    }
    if let (Some(c), None) = (r.connected.as_mut(), &r.capture_error) {
        c.tally = Some(connected::tally(&args.pcap));
    }
    r.wall = start.elapsed();
    r.peak_kib = crate::peak_memory_kib();
    if args.json {
        println!("{}", r.json(args));
    } else {
        print!("{}", r.text(args));
    }
    if let Some(s) = stopped {
        ExitCode::from(s.signal.exit_code())
    } else if let Some(e) = &r.capture_error {
        fail(format!("--pcap {e}"))
    } else if r.failures.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

/// True when the hosts send a gratuitous ARP and unsolicited NAs at carrier up: while `hosts`² is
/// within [`BROADCAST_BUDGET`] (`InterfaceConfig::arp_notify`, `InterfaceConfig::ndisc_notify`).
pub fn announces(hosts: usize) -> bool {
    hosts.saturating_mul(hosts) <= BROADCAST_BUDGET
}

/// The pairs to ping: all ordered pairs when there are at most [`MAX_PAIRS`], else up to
/// `MAX_PAIRS / 2` sources (beyond 1,000 hosts fewer, [`BROADCAST_BUDGET`] / hosts / 2, at least
/// one) spread evenly over the hosts, each pinging the next host and the host half-way round (so
/// the sample crosses the fabric). Also says whether it is a sample.
pub fn ping_pairs(n: usize) -> (Vec<(usize, usize)>, bool) {
    if n * n.saturating_sub(1) <= MAX_PAIRS {
        let all = (0..n)
            .flat_map(|a| (0..n).filter(move |&b| b != a).map(move |b| (a, b)))
            .collect();
        return (all, false);
    }
    let sources = (MAX_PAIRS.min(BROADCAST_BUDGET / n) / 2).clamp(1, n);
    let mut v = Vec::new();
    for j in 0..sources {
        let a = j * n / sources;
        for d in [1, n / 2] {
            let b = (a + d) % n;
            if b != a && !v.contains(&(a, b)) {
                v.push((a, b));
            }
        }
    }
    (v, true)
}

#[cfg(test)]
mod tests {
    use super::{announces, ping_pairs, BROADCAST_BUDGET, MAX_PAIRS};

    // The first ping of a pair broadcasts an ARP request to every host: beyond 1,000 hosts the
    // sample shrinks so that pairs x hosts stays within the budget (it was 256 pairs at any
    // size, 2.6 million ARP deliveries on 10,000 hosts), and small subnets keep theirs.
    #[test]
    fn ping_sample_keeps_the_broadcasts_within_the_budget() {
        assert_eq!(
            ping_pairs(4),
            (
                (0..4)
                    .flat_map(|a| (0..4).filter(move |&b| b != a).map(move |b| (a, b)))
                    .collect(),
                false
            )
        );
        for n in [17, 100, 1000] {
            let (p, sampled) = ping_pairs(n);
            assert!(sampled);
            assert_eq!(p.len(), MAX_PAIRS.min(2 * n), "{n} hosts");
        }
        for n in [1001, 3000, 10_000, 32_258, 1_000_000] {
            let (p, sampled) = ping_pairs(n);
            assert!(sampled && !p.is_empty(), "{n} hosts");
            assert!(
                p.len() * n <= BROADCAST_BUDGET.max(2 * n),
                "{n} hosts: {} pairs",
                p.len()
            );
            assert!(p.iter().all(|&(a, b)| a != b && a < n && b < n));
        }
        assert_eq!(ping_pairs(10_000).0.len(), 24);
    }

    // The gratuitous ARP at carrier up costs hosts² deliveries: sent up to 505 hosts only.
    #[test]
    fn gratuitous_arp_only_while_its_square_fits() {
        assert!(announces(4) && announces(100) && announces(505));
        assert!(!announces(506) && !announces(10_000) && !announces(usize::MAX));
    }
}

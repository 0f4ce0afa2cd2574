//! The `ipoib` command: IP over InfiniBand on an emulated fabric.

/// `eprintln!` that never panics: a closed standard error (`2>&1 | true`) is no reason to stop a
/// run or to change its exit status, so a failed write there is ignored.
macro_rules! note {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

/// Set (to anything) in the environment of `ipoib fabric`, `ipoib attach` or `ipoib lab`: each
/// turn of the real-time driver that moved something prints its timings on standard error
/// (`ipoib_runtime::realtime::Driver::set_trace`, docs/benchmarks/udp.md).
const TRACE_TURNS_ENV: &str = "IPOIB_TRACE_TURNS";

mod attach;
mod decode;
mod demo;
mod fabric;
mod ibsim_server;
mod interrupt;
mod ipcm;
mod lab;
mod pcap_out;
mod rping;
mod show;
mod sim;
mod text_file;
mod topology_arg;
mod why;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

#[derive(Parser, Debug)]
#[command(
    name = "ipoib",
    version,
    about = "IP over InfiniBand, with its own emulated InfiniBand fabric"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Print InfiniBand packets layer by layer, with ICRC/VCRC verdicts.
    ///
    /// FILE is a capture: pcap (either byte order, micro- or nanosecond time stamps) or pcapng (what
    /// Wireshark and tshark save; every section and interface), of InfiniBand packets in ERF records
    /// (link type 197) or bare (link type 247); packets of pcapng interfaces of other link types are
    /// listed, not decoded. `-` reads standard input: a capture (told by its first bytes) or hex
    /// packets, one per line (LRH to VCRC; spaces and colons are ignored, `#` starts a comment). The
    /// input is read as it is decoded, in constant memory.
    ///
    /// The last line on standard error counts the packets (per link type), the malformed ones and
    /// the bad ICRCs and VCRCs. Exit status: 0 when every packet decoded and passed both CRCs; 1 when
    /// some packet was malformed, failed its ICRC or VCRC, or was not InfiniBand (each is shown with
    /// its verdict and decoding goes on); 2 when the input could not be read, at all or past some
    /// point.
    Decode(decode::Args),
    /// Bring up an emulated subnet: every host gets a LID and joins the IPoIB broadcast group.
    ///
    /// Prints wall and simulated time, packets, events, peak memory and the SA's groups. A host
    /// counts as joined when the SA's member records hold its port as a full member of an IPoIB
    /// broadcast group; every host that is not is named with the reason. Exit status: 0 when every
    /// host joined, 1 when some did not by the deadline, 2 on bad arguments or a `--pcap` that
    /// could not be written.
    Sim(sim::Args),
    /// Run a small IPoIB subnet in one process and show it working.
    ///
    /// Builds an emulated InfiniBand subnet (default: 4 hosts on one switch), brings IPoIB up on
    /// every host, and shows each host's LID, GID, link-layer and IP addresses, the ARP and ND
    /// resolutions, IPv4 and IPv6 ping between all pairs (a sample on big subnets) with round-trip
    /// times in virtual time, a multicast join and delivery, and the SA's group table. With
    /// `--mode connected` every interface runs IPoIB connected mode (RFC 4755) and the report adds
    /// the connections, the CM messages of the capture and a bulk transfer over RC and over UD.
    /// The whole conversation is written to a pcap for Wireshark, as the run goes (bar the bulk
    /// transfers). On a terminal a progress
    /// line shows once the run takes a second. Ctrl-C (SIGINT) or SIGTERM stops the run with the
    /// report of what it found so far. Exit status: 0 when everything worked, 1 when something
    /// failed (each failure listed; a host without carrier with the reason, e.g. too many hops
    /// from the subnet manager), 2 on bad arguments or a `--pcap` that could not be written, 130
    /// (SIGINT) or 143 (SIGTERM) when stopped.
    Demo(demo::Args),
    /// The RDMA IP CM service (IBTA Annex A11): what our server answers to a REQ.
    ///
    /// `ipoib ipcm check` decodes a REQ's service ID and private data (Annex A11 Tables 1 and 2)
    /// and prints the verdict our IP CM server would give: accept, or REJ 28 with the Annex A11
    /// ARI (layer, code and its meaning, suggested value). Exit status: 0 for either verdict, 2
    /// when the input is not a REQ of the service.
    Ipcm(ipcm::Args),
    /// librdmacm's rping over the RDMA IP CM service (IBTA Annex A11) on an emulated subnet.
    ///
    /// Two hosts on one switch (or `--hosts`) run IPoIB and the IP CM service; host 0 listens on
    /// a TCP port, host 1 connects to its IPv4 address (or IPv6 with `--ipv6`) through ARP/ND, a
    /// PathRecord and the CM's REQ/REP/RTU. The client then sends `--count` ping-pong messages
    /// (SEND/RECV, each checked), RDMA WRITEs a `--size` buffer into the server's registered region
    /// and RDMA READs it back into a second region, both checked byte for byte, and disconnects.
    /// Prints throughput in simulated and wall time (GB/s), or JSON with `--json`; `--pcap FILE`
    /// records every packet. Exit status: 0 when everything verified, 1 when a connection or a
    /// transfer failed or a byte differed, 2 on bad arguments or a `--pcap` that could not be
    /// written.
    Rping(rping::Args),
    /// Show the neighbours, paths, multicast groups, connections or counters of a running lab
    /// or attach process, or a fabric's slots and counters, read over its control socket (like
    /// `ip neigh`).
    ///
    /// The lab's socket is RUN_DIR/lab/control.sock, an attach process's
    /// RUN_DIR/attach-DEV.sock, a fabric's RUN_DIR/fabric-PORT.sock; RUN_DIR is $IPOIB_RUN_DIR
    /// or /run/ipoib. Text is one
    /// aligned table per view (one block per section for counters), a row per entry of every
    /// host, or of the host `--host` names; `--json` prints an array of rows. Exit status: 0
    /// with the view, 1 when nothing runs there (no socket, or a stale one) or the process
    /// answers with an error (e.g. no such host), 2 on bad arguments.
    Show(show::Args),
    /// Serve ibsim's client protocol on an emulated subnet: programs run under `ibsim-run`
    /// (saquery, smpquery, ...) attach to its hosts by name.
    ///
    /// Brings the subnet up in simulated time (our SM and SA on the first host), prints each
    /// host's name, LID and port and `ready`, then runs it against the wall clock and serves
    /// clients on the abstract Unix sockets `SOCKNAME:ctl` / `SOCKNAME:outN` (as ibsim; or UDP
    /// with `--udp`) until SIGINT or SIGTERM. A client names its host with `SIM_HOST` (node name
    /// or description). Lines on standard input are ibsim's console commands, each answered on
    /// standard output: `Unlink "sw0"[2]` pulls that port's cable (both ends Down, trap 128 to
    /// the SM), `ReLink "sw0"[2]` plugs it back, `Link`, `Dump`, `Help`, `Quit`. Exit status: 0
    /// when stopped by a signal or Quit, 1 on a socket error, 2 on bad arguments or when the
    /// sockets are taken.
    IbsimServer(ibsim_server::Args),
    /// Linux's IP stack over the emulated IPoIB: one network namespace per host (root only).
    ///
    /// Runs an emulated subnet in real time and gives every host a network namespace
    /// `ipoib-h1`, ... with a TUN device `ib0` (10.0.0.i/24, fd00::i/64, i in hex) whose packets
    /// its IPoIB interface carries over the fabric, so ping, iperf3 and any other program work
    /// between hosts. Prints the hosts (LID, GID, QPN, addresses) once IPoIB is up and runs until
    /// Ctrl-C, SIGTERM or SIGHUP, then removes the namespaces. `ipoib lab exec h1 -- CMD` runs a
    /// command in a host's namespace (names h1..hN resolve); `ipoib lab down` stops the lab from
    /// elsewhere. `--sm opensm`: the real OpenSM, run by the lab under ibsim-run, configures the
    /// fabric instead of our SM (needs opensm and ibsim-run installed). Exit status: 0 when
    /// stopped by a signal, 1 when a host did not come up, 2 on bad arguments or when the lab
    /// cannot be set up.
    Lab(lab::Args),
    /// Run the fabric of an emulated subnet whose hosts are other processes, over UDP.
    ///
    /// The switches, the subnet manager and the SA run here; every other channel adapter of the
    /// topology is a slot an `ipoib attach` process takes (the fabric assigns its identity: slot,
    /// node and port GUIDs). InfiniBand packets (LRH to VCRC) travel in UDP datagrams
    /// (docs/UDP-FABRIC.md); a host's packets enter the fabric only with its own LID, GID and
    /// P_Keys; a host silent for `--timeout-ms` loses its slot and its link goes down. Stops on
    /// SIGINT, SIGTERM or SIGHUP with its counters (exit status 0); 2 on bad arguments.
    Fabric(fabric::Args),
    /// Run one host attached to an `ipoib fabric` over UDP, with a TUN device for Linux's IP.
    ///
    /// The host gets its identity and its port's configuration from the fabric and brings IPoIB
    /// up (broadcast join); the operating system's IP stack uses it through a TUN device (`--dev`,
    /// in the current network namespace or the one `--netns` names) with the given addresses,
    /// or, with `--no-tun`, the emulation's own IP layer answers on them. It keeps the attachment
    /// alive, attaches again when the fabric restarts, and on SIGINT, SIGTERM or SIGHUP leaves its
    /// groups and detaches (exit status 0); 2 on bad arguments or when the TUN device cannot be
    /// made.
    Attach(attach::Args),
}

/// Peak resident memory (`VmHWM` of /proc/self/status) in KiB, where the system has it.
fn peak_memory_kib() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Decode(args) => decode::run(&args),
        Command::Sim(args) => sim::run(&args),
        Command::Demo(args) => demo::run(&args),
        Command::Ipcm(args) => ipcm::run(&args),
        Command::Rping(args) => rping::run(&args),
        Command::Show(args) => show::run(&args),
        Command::IbsimServer(args) => ibsim_server::run(&args),
        Command::Lab(args) => lab::run(&args),
        Command::Fabric(args) => fabric::run(&args),
        Command::Attach(args) => attach::run(&args),
    }
}

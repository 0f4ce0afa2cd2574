//! The `ipoib` command: IP over InfiniBand on an emulated fabric.

mod decode;
mod demo;
mod sim;
mod topology_arg;

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
    /// FILE is a pcap (ERF records, link type 197, or raw InfiniBand, link type 247), or `-` for hex
    /// packets on standard input, one per line (LRH to VCRC; spaces and colons are ignored, `#` starts
    /// a comment). Exit status: 0 when every packet decoded, 1 when some packet was malformed (each gets
    /// its own error and decoding goes on), 2 when the input could not be read at all.
    Decode(decode::Args),
    /// Bring up an emulated subnet: every host gets a LID and joins the IPoIB broadcast group.
    ///
    /// Prints wall and simulated time, packets, events, peak memory and the SA's groups. Exit
    /// status: 0 when every host joined, 1 when some did not by the deadline, 2 on bad arguments.
    Sim(sim::Args),
    /// Run a small IPoIB subnet in one process and show it working.
    ///
    /// Builds an emulated InfiniBand subnet (default: 4 hosts on one switch), brings IPoIB up on
    /// every host, and shows each host's LID, GID, link-layer and IP addresses, the ARP and ND
    /// resolutions, IPv4 and IPv6 ping between all pairs (a sample on big subnets) with round-trip
    /// times in virtual time, a multicast join and delivery, and the SA's group table. The whole
    /// conversation is written to a pcap for Wireshark. Exit status: 0 when everything worked, 1
    /// when something failed, 2 on bad arguments.
    Demo(demo::Args),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Decode(args) => decode::run(&args),
        Command::Sim(args) => sim::run(&args),
        Command::Demo(args) => demo::run(&args),
    }
}

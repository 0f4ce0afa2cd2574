//! `ipoib fabric`: the emulated subnet's switches, SM and SA in this process, its hosts in
//! `ipoib attach` processes that reach it over UDP (docs/UDP-FABRIC.md). Each CA of the topology
//! but the SM's is a slot a host can attach to; the SM's CA runs in this process.
//!
//! It prints a line when a host attaches or leaves, and the counters when stopped (SIGINT or
//! SIGTERM, exit status 0). Exit status 2 on bad arguments, a `--guid2lid` file that cannot be
//! read, does not parse or is no regular file, or a socket that cannot be bound.
//! With `--ibsim NAME` it serves ibsim's client protocol on the SM's CA (abstract Unix sockets
//! named NAME, as `ipoib ibsim-server --sockname`), so that programs under `ibsim-run` reach the
//! fabric there; with `--sm none` as well there is no SM or SA of ours and OpenSM started so
//! manages the fabric (docs/UDP-FABRIC.md "An external SM").
//! `ipoib show --fabric[=PORT] hosts|counters` reads its slots and counters over the control
//! socket `<run dir>/fabric-<port>.sock`. With `IPOIB_TRACE_TURNS` set it prints each busy
//! turn's timings.

use crate::ibsim_server::SmArg;
use ipoib_fabric::node::remote::{FabricOptions, HostLinkConfig};
use ipoib_fabric::node::subnet::{SmMode, SubnetOptions};
use ipoib_runtime::ibsim_server::ServerConfig;
use ipoib_runtime::udp_fabric::guid2lid::{self, Guid2LidFile};
use ipoib_runtime::udp_fabric::{parse_udp, FabricProcess, MAX_WAIT};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::Duration;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Where to listen for hosts: udp:ADDR:PORT (e.g. udp:0.0.0.0:4791).
    #[arg(long)]
    listen: String,
    /// fat-tree, single-switch, or an ibnetdiscover/ibsim net file.
    #[arg(long, default_value = "single-switch")]
    topology: String,
    /// CAs of a generated topology, the SM's included (hosts can attach to all but one; default
    /// 9); with a net file, if given, it must match the file's hosts.
    #[arg(long)]
    hosts: Option<usize>,
    /// OpenSM partitions.conf (default: partition 0x7fff, every port full, IPoIB broadcast group).
    #[arg(long)]
    partitions: Option<String>,
    /// Record every packet on every link of the fabric into this pcap (ERF records, time-stamped
    /// by the wall clock); a write that fails (a full disk) stops the recording, said on standard
    /// error, not the fabric.
    #[arg(long)]
    pcap: Option<String>,
    /// Stop recording once the pcap reaches this many bytes (whole records; at least 24, the
    /// file's header); the fabric says when it does.
    #[arg(long, requires = "pcap")]
    pcap_limit: Option<u64>,
    /// A host not heard from for this many milliseconds loses its slot (at least 2000: hosts
    /// send a keepalive every second).
    #[arg(long, default_value_t = 3000)]
    timeout_ms: u64,
    /// Seed of the fabric's random choices (the SA's; session ids are drawn fresh in every run,
    /// so that a restarted fabric never gives a host the id of its lost session).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// The SM's LIDs by port GUID, in OpenSM's guid2lid format: read at the start (a missing
    /// file is an empty table), written again whenever the SM gives a new port a LID, so that a
    /// restarted fabric gives the hosts their LIDs back (as OpenSM's
    /// /var/cache/opensm/guid2lid). Written by renaming a new file over the path, so the path
    /// must be a regular file's (a device such as /dev/null, or a pipe, is refused).
    #[arg(long)]
    guid2lid: Option<String>,
    /// After traffic, poll the sockets for this many microseconds (yielding the CPU between
    /// polls) before sleeping; 0 (the default) never polls, at most 1000000 (docs/UDP-FABRIC.md
    /// "Timing").
    #[arg(long, default_value_t = 0, value_parser = parse_busy_poll_us)]
    busy_poll_us: u64,
    /// Who manages the subnet: `ours` (our SM and SA, in this process) or `none` (no SM or SA
    /// of ours: the ports wait in Init for an external SM, OpenSM under ibsim-run on the SM's
    /// CA through `--ibsim`, which `none` needs).
    #[arg(long, value_enum, default_value_t = SmArg::Ours, requires_if("none", "ibsim"))]
    sm: SmArg,
    /// Serve ibsim's client protocol (Debian ibsim-utils) on the SM's CA, the one CA in this
    /// process, on abstract Unix sockets named after NAME: `IBSIM_SOCKNAME=NAME ibsim-run
    /// opensm` (with `--sm none`), `saquery`, ... reach the fabric there.
    #[arg(long, value_name = "NAME", value_parser = crate::ibsim_server::parse_sockname)]
    ibsim: Option<String>,
}

/// The most `--busy-poll-us` (of `ipoib fabric` and `ipoib attach`) takes: 1 s. A window longer
/// than the hosts' keepalive period (1 s) polls through idle time rather than after traffic,
/// and one near `u64::MAX` µs overflowed the driver's clock.
pub(crate) const MAX_BUSY_POLL_US: u64 = 1_000_000;

/// `--busy-poll-us`: microseconds, 0 to [`MAX_BUSY_POLL_US`].
pub(crate) fn parse_busy_poll_us(s: &str) -> Result<u64, String> {
    let us: u64 = s
        .parse()
        .map_err(|_| format!("{s:?}: a number of microseconds"))?;
    if us > MAX_BUSY_POLL_US {
        return Err(format!(
            "{us} µs: at most {MAX_BUSY_POLL_US} (1 s, the hosts' keepalive period; \
             docs/UDP-FABRIC.md \"Timing\")"
        ));
    }
    Ok(us)
}

fn fail(msg: &str) -> ExitCode {
    note!("ipoib fabric: {msg}");
    ExitCode::from(2)
}

pub fn run(args: &Args) -> ExitCode {
    // First: a signal while the fabric is built (seconds for a big topology) is kept, not lost,
    // also when the process began with SIGINT ignored (started with `&` in a script,
    // POSIX.1-2017 XCU §2.11, docs/DEPLOYED.md): it stops before serving.
    let stop = match crate::interrupt::stop_file() {
        Ok(s) => Some(s),
        Err(e) => {
            note!("ipoib fabric: signals: {e}");
            None
        }
    };
    let addr = match parse_udp(&args.listen) {
        Ok(a) => a,
        Err(e) => return fail(&format!("--listen {e}")),
    };
    let topology = match crate::topology_arg::load(&args.topology, args.hosts, Some(9)) {
        Ok(t) => t,
        Err(e) => return fail(&e),
    };
    let mut so = SubnetOptions::new(topology, args.seed);
    if args.sm == SmArg::None {
        if args.guid2lid.is_some() {
            return fail(
                "--guid2lid is our SM's table: with --sm none the external SM keeps its own \
                 (OpenSM's guid2lid)",
            );
        }
        so.sm_mode = SmMode::None;
    }
    if let Some(p) = &args.partitions {
        match crate::sim::load_partitions("ipoib fabric", p) {
            Ok(c) => so.partitions = Some(c),
            Err(e) => return fail(&e),
        }
    }
    let mut g2l_file = None;
    if let Some(p) = &args.guid2lid {
        let path = std::path::PathBuf::from(p);
        // A missing file is an empty table, but a missing directory could never be written.
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            if !dir.is_dir() {
                return fail(&format!("--guid2lid {p}: no directory {}", dir.display()));
            }
        }
        // The table is written by renaming a new file over the path (guid2lid::store): over
        // `/dev/null` that replaced the device with a regular file. A file that is no regular
        // file (a device, a pipe) is refused, as is one larger than any table (the read is
        // whole).
        match std::fs::metadata(&path) {
            Ok(m) if !m.is_file() => {
                return fail(&format!(
                    "--guid2lid {p}: not a regular file; the fabric writes the table by renaming \
                     a new file over it: give the path of a file (it need not exist yet)"
                ))
            }
            Ok(m) if m.len() > crate::text_file::MAX_BYTES => {
                return fail(&format!(
                    "--guid2lid {p}: more than {} MiB, far more than any such table (is it the \
                     right file?)",
                    crate::text_file::MAX_BYTES >> 20
                ))
            }
            _ => {}
        }
        match guid2lid::load(&path) {
            Ok(t) => {
                so.guid2lid = t.clone();
                g2l_file = Some(Guid2LidFile::new(path, t));
            }
            Err(e) => return fail(&format!("--guid2lid {e}")),
        }
    }
    // A host sends a Keepalive every second whatever the fabric's timeout (docs/UDP-FABRIC.md
    // "Liveness"): a shorter timeout drops idle hosts between keepalives, over and over.
    let keepalive = HostLinkConfig::default().keepalive;
    let timeout = Duration::from_millis(args.timeout_ms);
    if timeout < 2 * keepalive {
        return fail(&format!(
            "--timeout-ms {}: at least {} (two of the hosts' keepalives, one every {} ms)",
            args.timeout_ms,
            (2 * keepalive).as_millis(),
            keepalive.as_millis()
        ));
    }
    let mut opts = FabricOptions::new(so);
    opts.timeout = timeout;
    let mut f = match FabricProcess::bind(addr, opts) {
        Ok(f) => f,
        Err(e) => return fail(&format!("{addr}: {e}")),
    };
    let stopped = stop
        .as_ref()
        .and_then(|(_, i)| i.stopped_while("ipoib fabric", "while the fabric was built"));
    if let Some(c) = stopped {
        return c;
    }
    if f.server().slot_count() == 0 {
        return fail(&format!(
            "--topology {}: no channel adapter left for hosts to attach to (the SM's takes one; \
             a generated topology needs --hosts 2 or more)",
            args.topology
        ));
    }
    // As `lab` and `ibsim-server` warn: ports the fabric's SM cannot reach never come up, and a
    // host attached to one would wait without carrier.
    let topo = f.server().topology();
    if let Some(sm) = topo.first_ca_port() {
        let (far, behind) = ipoib_fabric::node::sm::unreachable(topo, sm);
        for w in [
            crate::why::unreached_in(topo, &far),
            crate::why::behind_ca_in(topo, &behind),
        ]
        .into_iter()
        .flatten()
        {
            note!("ipoib fabric: warning: {w}");
        }
    }
    f.set_trace(std::env::var_os(crate::TRACE_TURNS_ENV).is_some());
    f.set_busy_poll(Duration::from_micros(args.busy_poll_us));
    // An unwritable `--pcap` is refused here; a file that is there is emptied only once the
    // recording starts, when nothing can fail any more before the fabric serves.
    if let Err(e) = crate::pcap_out::check_limit(args.pcap_limit) {
        return fail(&e);
    }
    if let Some(Err(e)) = args.pcap.as_deref().map(crate::pcap_out::open) {
        return fail(&e);
    }
    // A signal from here on stops the first turn.
    if let Some((fd, _)) = stop {
        if let Err(e) = f.set_stop(fd.into()) {
            note!("ipoib fabric: signals: {e}");
        }
    }
    if let Some(name) = &args.ibsim {
        let mut cfg = ServerConfig::unix(name);
        if args.sm == SmArg::None {
            // No SM of ours on the SM's CA: an SM client (OpenSM) may attach there.
            cfg.sm_hosts.clear();
        }
        // Why a client was refused (it learns no reason), as `ipoib ibsim-server` prints it.
        let tell = Box::new(|line: &str| note!("ipoib fabric: ibsim server: {line}"));
        if let Err(e) = f.serve_ibsim(cfg, tell) {
            return fail(&format!("--ibsim {name}: {e}"));
        }
        let sm = f.server().sm_host();
        note!(
            "ipoib fabric: ibsim clients attach to the SM's CA: IBSIM_SOCKNAME={} \
             SIM_HOST={} ibsim-run ...",
            shell_word(name),
            shell_word(&f.server().topology().nodes()[sm.topo_node].name)
        );
    }
    if let Err(e) = f.serve_control(None) {
        note!("{}", crate::show::no_control_socket("ipoib fabric", &e));
    }
    let local = f.local_addr().map_or(addr, |a| a);
    note!(
        "ipoib fabric: listening on udp:{local}, {} CAs for hosts",
        f.server().slot_count()
    );
    let mut told = None;
    if let Some(p) = &args.pcap {
        if let Err(e) = f.capture_to(p, args.pcap_limit) {
            return fail(&format!("--pcap {p}: {e}"));
        }
        told = Some(crate::pcap_out::Told::new(
            "ipoib fabric",
            p,
            args.pcap_limit,
        ));
    }
    let mut known: BTreeMap<SocketAddr, usize> = BTreeMap::new();
    let mut g2l_gen = 0;
    loop {
        let stopped = match f.turn(MAX_WAIT) {
            Ok(s) => s,
            Err(e) => {
                note!("ipoib fabric: {e}");
                if let (Some(t), Some(c)) = (&told, f.capture()) {
                    note!("{}", t.summary(c));
                }
                return ExitCode::from(1);
            }
        };
        report_changes(&f, &mut known);
        if let (Some(t), Some(c)) = (&mut told, f.capture()) {
            t.check(c, "the fabric serves on");
        }
        // The table changes only at the end of a sweep (a new generation).
        let sm = f.server().smp_sm();
        if let (Some(g), Some(sm)) = (&mut g2l_file, sm.filter(|sm| sm.generation() != g2l_gen)) {
            g2l_gen = sm.generation();
            if let Err(e) = g.save(sm.guid2lid()) {
                note!("ipoib fabric: --guid2lid {}: {e}", g.path().display());
            }
        }
        if stopped {
            break;
        }
    }
    if let (Some(t), Some(c)) = (&told, f.capture()) {
        note!("{}", t.summary(c));
    }
    let c = f.server().counters();
    let io = f.counters();
    note!(
        "ipoib fabric: stopped; datagrams in {} out {} (send errors {}), attached {}, detached {}, \
         timed out {}, rejected {}, malformed {}, bad version {}, unknown session {}, \
         challenged {} (no cookie {}, bad cookie {})",
        io.received,
        io.sent,
        io.send_errors,
        c.attached,
        c.detached,
        c.timed_out,
        c.rejected,
        c.malformed,
        c.bad_version,
        c.unknown_session,
        c.no_cookie + c.bad_cookie,
        c.no_cookie,
        c.bad_cookie
    );
    for i in 0..f.server().slot_count() {
        if let Some(r) = f.server().slot(i) {
            let rc = r.counters();
            let dropped = rc.dropped_from_host();
            if rc.from_host + rc.to_host + dropped > 0 {
                note!(
                    "  CA {} ({:#018x}, LID {}): from host {}, to host {}, dropped from host {} \
                     (spoofed LID {}, GID {}, P_Key {})",
                    f.server().slot_topo_node(i).unwrap_or(usize::MAX),
                    r.node_guid().0,
                    r.lid(),
                    rc.from_host,
                    rc.to_host,
                    dropped,
                    rc.spoofed_lid,
                    rc.spoofed_gid,
                    rc.bad_pkey
                );
            }
        }
    }
    ExitCode::SUCCESS
}

/// Prints the hosts that attached or left since the last look.
fn report_changes(f: &FabricProcess, known: &mut BTreeMap<SocketAddr, usize>) {
    let now: BTreeMap<SocketAddr, usize> = f.server().peers().collect();
    if now == *known {
        return;
    }
    for (peer, &slot) in &now {
        if known.get(peer) != Some(&slot) {
            let ca = f.server().slot_topo_node(slot).unwrap_or(usize::MAX);
            let name = f
                .server()
                .topology()
                .nodes()
                .get(ca)
                .map_or(String::new(), |n| n.name.clone());
            let r = f.server().slot(slot);
            note!(
                "ipoib fabric: {peer} attached as CA {ca} ({name}, node GUID {:#018x}, LID {})",
                r.map_or(0, |r| r.node_guid().0),
                r.map_or(0, |r| r.lid())
            );
        }
    }
    for (peer, &slot) in known.iter() {
        if !now.contains_key(peer) {
            let ca = f.server().slot_topo_node(slot).unwrap_or(usize::MAX);
            note!("ipoib fabric: {peer} left CA {ca}");
        }
    }
    *known = now;
}

/// `s` as one word of a POSIX shell command line, so that the printed line can be pasted: as it
/// is when every character is plain, else in single quotes (a quote inside as `'\''`). A net file
/// may name a node with spaces or quotes (`"h 1"`), and the socket name is the user's.
fn shell_word(s: &str) -> std::borrow::Cow<'_, str> {
    let plain = |c: char| c.is_ascii_alphanumeric() || "_-./:=+,@%".contains(c);
    if !s.is_empty() && s.chars().all(plain) {
        s.into()
    } else {
        format!("'{}'", s.replace('\'', "'\\''")).into()
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

    // `--busy-poll-us` is bounded (it took any u64, and a huge window overflowed the clock).
    #[test]
    fn busy_poll_us_is_bounded() {
        let parse = |v: &str| {
            let arg = format!("--busy-poll-us={v}");
            Cli::try_parse_from(["fabric", "--listen", "udp:127.0.0.1:9", arg.as_str()])
        };
        assert_eq!(parse("0").unwrap().args.busy_poll_us, 0);
        assert_eq!(parse("1000000").unwrap().args.busy_poll_us, 1_000_000);
        for bad in ["1000001", "18446744073709551615", "-1", "x"] {
            let e = parse(bad).unwrap_err().to_string();
            assert!(e.contains("--busy-poll-us"), "{bad}: {e}");
        }
        let e = parse("1000001").unwrap_err().to_string();
        assert!(e.contains("at most 1000000"), "{e}");
    }

    // The printed `IBSIM_SOCKNAME=... SIM_HOST=... ibsim-run` line pastes into a shell as is,
    // whatever the node's name (a net file may give it spaces or quotes).
    #[test]
    fn shell_words_paste_as_one_word() {
        assert_eq!(shell_word("h0"), "h0");
        assert_eq!(shell_word("sw-1.a_b:c"), "sw-1.a_b:c");
        assert_eq!(shell_word("h 1"), "'h 1'");
        assert_eq!(shell_word(""), "''");
        assert_eq!(shell_word("it's"), "'it'\\''s'");
        assert_eq!(shell_word("$HOME;rm"), "'$HOME;rm'");
        // What sh reads back is the name itself.
        for name in ["h 1", "it's", "a\"b", "$x`y`", "tab\there", "ünï", "''"] {
            let out = std::process::Command::new("sh")
                .arg("-c")
                .arg(format!("printf %s {}", shell_word(name)))
                .output()
                .unwrap();
            assert_eq!(String::from_utf8(out.stdout).unwrap(), name);
        }
    }
}

//! `ipoib attach`: one host (HCA and IPoIB interface) whose fabric is an `ipoib fabric` process
//! reached over UDP (docs/UDP-FABRIC.md). The fabric assigns its identity (CA slot, GUIDs); the
//! SM's configuration of its port reaches it as a message; it keeps the attachment alive, attaches
//! again when the fabric restarts, and detaches on SIGINT, SIGTERM or SIGHUP (exit status 0).
//!
//! The operating system's IP stack uses the interface through a TUN device named `--dev`, made in
//! the current network namespace with the given addresses (root, or CAP_NET_ADMIN, is needed);
//! `--no-tun` runs the emulation's own IP layer instead (it answers ARP, ND and pings on its
//! addresses). `ipoib show --dev DEV` reads its tables over the control socket
//! `<run dir>/attach-DEV.sock`. With `IPOIB_TRACE_TURNS` set it prints each busy turn's timings.

use ipoib_fabric::node::remote::{HostLinkConfig, HostLinkEvent};
use ipoib_proto::ipoib::LogLevel;
use ipoib_runtime::control::BindError;
use ipoib_runtime::netns::NetNs;
use ipoib_runtime::tun::{link_local, LinkControl, LinkMirror, Tun, TunConfig, TunError};
use ipoib_runtime::udp_fabric::{
    parse_udp, AttachOptions, AttachProcess, CONNECTED_MTU, DATAGRAM_MTU, MAX_WAIT,
};
use ipoib_wire::PKey;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::process::ExitCode;

/// How long the fabric may stay silent at the start before the host says so (it asks again every
/// `HostLinkConfig::retry`, 500 ms).
const NO_ANSWER_NOTE: std::time::Duration = std::time::Duration::from_secs(3);

/// How long an Active port may be without carrier (the broadcast join takes milliseconds, a
/// failed one is retried after 2 s, doubling) before the host says so.
const NO_CARRIER_NOTE: std::time::Duration = std::time::Duration::from_secs(3);

/// The interface's distinct warnings an attach process prints at most (a bound on what a fabric
/// that refuses every join could make it print).
const SAY_AT_MOST: usize = 32;

/// Refuses `--dev DEV` whose control socket `socket` another process listens on.
fn socket_taken(dev: &str, socket: &std::path::Path) -> ExitCode {
    note!(
        "ipoib attach: {dev}: another process serves its control socket {} (another `ipoib \
         attach --dev {dev}`?); stop it or choose another --dev",
        socket.display()
    );
    ExitCode::from(2)
}

/// Datagram or connected IPoIB (RFC 4755).
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Datagram,
    Connected,
}

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The fabric: udp:ADDR:PORT of an `ipoib fabric --listen`.
    #[arg(long)]
    fabric: String,
    /// Name of the TUN device (and of the host in `ipoib show --dev`): 1 to 15 bytes, no `/`,
    /// `:` or blank, as Linux names devices. One that another attach process serves (something
    /// listens on its control socket) is refused, exit status 2; a stale socket is replaced.
    #[arg(long, default_value = "ib0", value_parser = parse_dev)]
    dev: String,
    /// No TUN device: the emulation's own IP layer answers on the addresses (no root needed).
    #[arg(long)]
    no_tun: bool,
    /// Make the TUN device in this existing network namespace (`ip netns add NAME`) instead of
    /// the current one; the UDP socket to the fabric stays in the current one.
    /// The control socket is then RUN_DIR/netns/NAME/attach-DEV.sock (`ipoib show --netns NAME
    /// --dev DEV`), so that attach processes with the same device name in different namespaces
    /// do not meet.
    #[arg(long, conflicts_with = "no_tun", value_parser = parse_netns)]
    netns: Option<String>,
    /// IPv4 address and prefix length, e.g. 10.0.0.2/24.
    #[arg(long, value_parser = parse_v4)]
    ip: (Ipv4Addr, u8),
    /// An IPv6 address and prefix length, e.g. fd00::2/64 (besides the link-local address).
    #[arg(long, value_parser = parse_v6)]
    ip6: Vec<(Ipv6Addr, u8)>,
    /// IPoIB mode.
    #[arg(long, value_enum, default_value = "datagram")]
    mode: Mode,
    /// Partition key (hex, e.g. 0xffff or 8001).
    #[arg(long, value_parser = parse_pkey, default_value = "0xffff")]
    pkey: PKey,
    /// After traffic, poll the sockets for this many microseconds (yielding the CPU between
    /// polls) before sleeping; 0 (the default) never polls, at most 1000000 (docs/UDP-FABRIC.md
    /// "Timing").
    #[arg(long, default_value_t = 0, value_parser = crate::fabric::parse_busy_poll_us)]
    busy_poll_us: u64,
    /// Record every packet on this host's cable, both ways, into this pcap (ERF records,
    /// time-stamped by the wall clock; its SA, CM and IPoIB traffic, not the SMPs, which the
    /// fabric answers for a remote host's port), written as
    /// it runs, across reattaches; a write that fails (a full disk) stops the recording, said
    /// on standard error, not the host.
    #[arg(long)]
    pcap: Option<String>,
    /// Stop recording once the pcap reaches this many bytes (whole records; at least 24, the
    /// file's header); the host says when it does.
    #[arg(long, requires = "pcap")]
    pcap_limit: Option<u64>,
}

/// A device name: also the name of the control socket `<run dir>/attach-DEV.sock`, so one with a
/// `/` would put the socket (and the directories `create_dir_all` makes for it) elsewhere, and
/// `ipoib show --dev` would refuse it.
fn parse_dev(s: &str) -> Result<String, String> {
    if crate::show::valid_dev(s) {
        Ok(s.to_string())
    } else {
        Err(format!(
            "{s:?}: not a device name (1 to 15 bytes, no '/', ':' or blank)"
        ))
    }
}

/// Removes a directory of control sockets on drop, if it is empty by then.
struct SocketDir(Option<std::path::PathBuf>);

impl Drop for SocketDir {
    fn drop(&mut self) {
        if let Some(d) = &self.0 {
            // Each fails, leaving its directory, while another attach process has a socket
            // there: RUN_DIR/netns/NS, then RUN_DIR/netns.
            let _ = std::fs::remove_dir(d);
            if let Some(up) = d.parent() {
                let _ = std::fs::remove_dir(up);
            }
        }
    }
}

/// A namespace name: a file in /run/netns and a directory of the control socket's path.
fn parse_netns(s: &str) -> Result<String, String> {
    if crate::show::valid_netns(s) {
        Ok(s.to_string())
    } else {
        Err(format!(
            "{s:?}: not a namespace name (no '/', not '.' or '..')"
        ))
    }
}

fn parse_v4(s: &str) -> Result<(Ipv4Addr, u8), String> {
    let (a, l) = s.split_once('/').ok_or("expected ADDR/LEN")?;
    let a = a.parse().map_err(|e| format!("{a}: {e}"))?;
    let l: u8 = l.parse().map_err(|e| format!("{l}: {e}"))?;
    if l > 32 {
        return Err(format!("prefix length {l} > 32"));
    }
    // The interface answers ARP for its address and sends from it (RFC 1122 §3.2.1.3: no
    // source address is 0, broadcast, multicast or loopback); these were taken without a word.
    let a: Ipv4Addr = a;
    if a.is_unspecified() || a.is_broadcast() || a.is_multicast() || a.is_loopback() {
        return Err(format!("{a} is no unicast address of a host"));
    }
    Ok((a, l))
}

fn parse_v6(s: &str) -> Result<(Ipv6Addr, u8), String> {
    let (a, l) = s.split_once('/').ok_or("expected ADDR/LEN")?;
    let a = a.parse().map_err(|e| format!("{a}: {e}"))?;
    let l: u8 = l.parse().map_err(|e| format!("{l}: {e}"))?;
    if l > 128 {
        return Err(format!("prefix length {l} > 128"));
    }
    // RFC 4291 §2.5.2, §2.5.3, §2.7: the unspecified, loopback and multicast addresses are no
    // interface's unicast address.
    let a: Ipv6Addr = a;
    if a.is_unspecified() || a.is_loopback() || a.is_multicast() {
        return Err(format!("{a} is no unicast address of a host"));
    }
    Ok((a, l))
}

fn parse_pkey(s: &str) -> Result<PKey, String> {
    let h = s.trim_start_matches("0x").trim_start_matches("0X");
    let v = u16::from_str_radix(h, 16).map_err(|e| format!("{s}: {e}"))?;
    if v & 0x7fff == 0 {
        return Err(format!("{s}: not a valid P_Key (partition 0)"));
    }
    Ok(PKey(v))
}

pub fn run(args: &Args) -> ExitCode {
    // First: a signal while the host and its TUN device are made is kept, not lost, also when
    // the process began with SIGINT ignored (started with `&` in a script, POSIX.1-2017 XCU
    // §2.11, docs/DEPLOYED.md): it stops before attaching.
    let stop = match crate::interrupt::stop_file() {
        Ok(s) => Some(s),
        Err(e) => {
            note!("ipoib attach: signals: {e}");
            None
        }
    };
    let fabric = match parse_udp(&args.fabric) {
        // No fabric listens on port 0 (bind(2) takes it for "any port"; a datagram to it goes
        // nowhere): the host would ask for its identity there forever.
        Ok(a) if a.port() == 0 => {
            note!(
                "ipoib attach: --fabric {}: port 0 is no fabric's port; give the one `ipoib \
                 fabric --listen` listens on",
                args.fabric
            );
            return ExitCode::from(2);
        }
        Ok(a) => a,
        Err(e) => {
            note!("ipoib attach: --fabric {e}");
            return ExitCode::from(2);
        }
    };
    if let Err(e) = crate::pcap_out::check_limit(args.pcap_limit) {
        note!("ipoib attach: {e}");
        return ExitCode::from(2);
    }
    let mut opts = AttachOptions::new(fabric);
    opts.ipv4 = Some(args.ip);
    opts.ipv6 = args.ip6.clone();
    opts.connected = args.mode == Mode::Connected;
    opts.pkey = args.pkey;
    opts.external = !args.no_tun;
    // Dropped after `p` (whose control server removes the socket): then the namespace's
    // directory of control sockets goes too, when empty.
    let _socket_dir = SocketDir(args.netns.as_deref().and_then(|ns| {
        ipoib_runtime::control::attach_socket(Some(ns), &args.dev)
            .parent()
            .map(|d| d.to_path_buf())
    }));
    // Another attach process with this device (in this namespace) would keep `ipoib show --dev`
    // to itself: refused before anything is attached, as `ipoib lab` refuses a live socket.
    let socket = ipoib_runtime::control::attach_socket(args.netns.as_deref(), &args.dev);
    if std::os::unix::net::UnixStream::connect(&socket).is_ok() {
        return socket_taken(&args.dev, &socket);
    }
    let mut p = match AttachProcess::connect(&opts) {
        Ok(p) => p,
        Err(e) => {
            note!("ipoib attach: {fabric}: {e}");
            return ExitCode::from(2);
        }
    };
    p.set_trace(std::env::var_os(crate::TRACE_TURNS_ENV).is_some());
    p.set_busy_poll(std::time::Duration::from_micros(args.busy_poll_us));
    // An unwritable `--pcap` is refused here; a file that is there is emptied only once the
    // recording starts, just before the host attaches.
    if let Some(Err(e)) = args.pcap.as_deref().map(crate::pcap_out::open) {
        note!("ipoib attach: {e}");
        return ExitCode::from(2);
    }
    // The TUN device's link, following the interface's carrier and link-local address.
    let mut link: Option<LinkMirror> = None;
    if !args.no_tun {
        let cfg = TunConfig {
            name: args.dev.clone(),
            mtu: if opts.connected {
                CONNECTED_MTU
            } else {
                DATAGRAM_MTU
            },
            addresses: AttachProcess::tun_addresses(&opts),
            loopback_up: false,
            // Down until the interface has carrier (after its broadcast join), as Linux's ib0.
            up: false,
            offload: true,
            tx_queue_len: Some(ipoib_runtime::tun::TX_QUEUE_LEN),
        };
        let root = nix::unistd::geteuid().is_root();
        let make = move || {
            let tun = Tun::create(&cfg).map_err(|e| match e {
                // As root, TUNSETIFF fails most often on a device of that name that is no TUN
                // device (EINVAL) or that another process holds (EBUSY).
                TunError::Open { .. } if root => format!(
                    "{e} (is there a device {0} already? `ip link show {0}`)",
                    cfg.name
                ),
                e => e.to_string(),
            })?;
            let ctl = LinkControl::open(tun.index()).map_err(|e| e.to_string())?;
            Ok::<_, String>((tun, ctl))
        };
        let made = match &args.netns {
            None => make(),
            // Said as is, root or not: it was followed by "root is needed for a TUN device;
            // --no-tun runs without", where --no-tun excludes --netns.
            Some(ns) if !ipoib_runtime::netns::exists(ns) => {
                note!(
                    "ipoib attach: --netns {ns}: no network namespace {ns}; make it with `ip \
                     netns add {ns}`"
                );
                return ExitCode::from(2);
            }
            Some(ns) => NetNs::open(ns)
                .map_err(|e| e.to_string())
                .and_then(|n| n.run_in(make).map_err(|e| e.to_string()))
                .and_then(|t| t.map_err(|e| format!("{ns}: {e}"))),
        };
        let added = made.and_then(|(t, ctl)| {
            p.add_tun(t).map_err(|e| format!("epoll: {e}"))?;
            Ok(ctl)
        });
        match added {
            // The link-local address is known once the fabric gave the identity.
            Ok(ctl) => link = Some(LinkMirror::new(ctl, None)),
            Err(e) if root => {
                note!("ipoib attach: {e}");
                return ExitCode::from(2);
            }
            Err(e) if args.netns.is_some() => {
                note!("ipoib attach: {e} (root is needed to make a TUN device in a namespace)");
                return ExitCode::from(2);
            }
            Err(e) => {
                note!("ipoib attach: {e} (root is needed for a TUN device; --no-tun runs without)");
                return ExitCode::from(2);
            }
        }
    }
    match p.serve_control(args.netns.as_deref(), &args.dev) {
        Ok(()) => {}
        // One that started since the check above.
        Err(BindError::InUse(path)) => return socket_taken(&args.dev, &path),
        Err(e) => note!("{}", crate::show::no_control_socket("ipoib attach", &e)),
    }
    let who = format!("ipoib attach: {}", args.dev);
    let stopped = stop
        .as_ref()
        .and_then(|(_, i)| i.stopped_while(&who, "while the host was made"));
    if let Some(c) = stopped {
        return c;
    }
    // A signal from here on stops the first turn.
    if let Some((f, _)) = stop {
        if let Err(e) = p.set_stop(f.into()) {
            note!("ipoib attach: signals: {e}");
        }
    }
    let mut told = None;
    if let Some(path) = &args.pcap {
        if let Err(e) = p.capture_to(path, args.pcap_limit) {
            note!("ipoib attach: --pcap {path}: {e}");
            return ExitCode::from(2);
        }
        told = Some(crate::pcap_out::Told::new(
            "ipoib attach",
            path,
            args.pcap_limit,
        ));
    }
    note!("ipoib attach: {}: attaching to udp:{fabric}", args.dev);
    let mut carrier = false;
    // Said once while the port is Active without the interface's P_Key (reset at carrier).
    let mut said_pkey = false;
    // Said once when the port is up with the P_Key and the broadcast join has not succeeded for
    // a while.
    let (mut said_join, mut waiting_since) = (false, None);
    // The time of the newest log line seen, and the warnings said.
    let mut logged = None;
    let mut said = std::collections::BTreeSet::new();
    let mut attached = false;
    // Said once when the fabric has not answered for a while: the host keeps asking quietly.
    let mut silent_since = Some(std::time::Instant::now());
    let mut last_refusal = None;
    let mut checked = std::time::Instant::now();
    loop {
        match p.turn(MAX_WAIT) {
            Ok(false) => {}
            Ok(true) => break,
            Err(e) => {
                note!("ipoib attach: {e}");
                if let (Some(t), Some(c)) = (&told, p.capture()) {
                    note!("{}", t.summary(c));
                }
                return ExitCode::from(1);
            }
        }
        if let (Some(t), Some(c)) = (&mut told, p.capture()) {
            t.check(c, "the host runs on");
        }
        if silent_since.is_some_and(|t| t.elapsed() >= NO_ANSWER_NOTE) {
            silent_since = None;
            note!(
                "ipoib attach: {}: no answer from udp:{fabric} for {} s (is `ipoib fabric` \
                 listening there?); still trying",
                args.dev,
                NO_ANSWER_NOTE.as_secs()
            );
        }
        while let Some(e) = p.poll_status() {
            match e {
                HostLinkEvent::Attached(a) => {
                    attached = true;
                    silent_since = None;
                    last_refusal = None;
                    note!(
                        "ipoib attach: {}: attached as CA {} of the topology (node GUID {:#018x}, port {})",
                        args.dev,
                        a.slot,
                        a.node_guid.0,
                        a.port
                    )
                }
                HostLinkEvent::Lost => {
                    attached = false;
                    note!("ipoib attach: {}: fabric lost, attaching again", args.dev)
                }
                HostLinkEvent::Rejected(r) => {
                    // The fabric answered; it refuses each retry (every 500 ms) alike: said once.
                    silent_since = None;
                    if last_refusal != Some(r.name()) {
                        last_refusal = Some(r.name());
                        note!(
                            "ipoib attach: {}: refused: {} (asking again every {} ms)",
                            args.dev,
                            r.name(),
                            HostLinkConfig::default().retry.as_millis()
                        )
                    }
                }
                HostLinkEvent::OtherVersion(v) => {
                    // A fabric of another build (docs/UDP-FABRIC.md "Datagrams"): said once.
                    silent_since = None;
                    if last_refusal != Some("bad version") {
                        last_refusal = Some("bad version");
                        note!(
                            "ipoib attach: {}: refused: bad version: udp:{fabric} speaks version \
                             {v} of the protocol, this ipoib version {} (run the same build of \
                             ipoib on both sides; asking again every {} ms)",
                            args.dev,
                            ipoib_wire::udp_fabric::VERSION,
                            HostLinkConfig::default().retry.as_millis()
                        )
                    }
                }
                _ => {}
            }
        }
        // The interface's warnings (what the draft says to log: failed joins, §13), as Linux
        // writes ipoib's to the kernel log: each new one, a message said before not again.
        if let Some(app) = p.app() {
            let new: Vec<_> = app.log().rev().take_while(|e| Some(e.0) > logged).collect();
            logged = new.first().map(|e| e.0).or(logged);
            for (_, level, m) in new.into_iter().rev() {
                if *level >= LogLevel::Warn && said.len() < SAY_AT_MOST && said.insert(m.clone()) {
                    note!("ipoib attach: {}: {m}", args.dev);
                }
            }
        }
        let now = p.app().is_some_and(|a| a.carrier());
        if now {
            (said_pkey, said_join, waiting_since) = (false, false, None);
        } else if let Some(port) = port_without_carrier(&p, args.pkey) {
            match port {
                NoCarrier::PkeyMissing(why) if !said_pkey => {
                    said_pkey = true;
                    note!("ipoib attach: {}: no carrier: {why}", args.dev);
                }
                NoCarrier::Joining(pkeys) => {
                    let since = *waiting_since.get_or_insert_with(std::time::Instant::now);
                    if !said_join && since.elapsed() >= NO_CARRIER_NOTE {
                        said_join = true;
                        note!(
                            "ipoib attach: {}: no carrier after {} s: the broadcast group of \
                             P_Key {:#06x} is not joined (the port's P_Keys: {pkeys}; --pkey \
                             chooses the partition, whose `ipoib` flag in the fabric's \
                             --partitions makes its broadcast group)",
                            args.dev,
                            NO_CARRIER_NOTE.as_secs(),
                            args.pkey.0 | 0x8000
                        );
                    }
                }
                NoCarrier::PkeyMissing(_) => {}
            }
        } else {
            waiting_since = None;
        }
        if now != carrier {
            carrier = now;
            // Up with the interface's MTU and link-local address at the first carrier,
            // NO-CARRIER while the port is down (the fabric lost), as Linux's ib0.
            if let (Some(m), Some(i)) = (&mut link, p.interface()) {
                let ll = link_local(i.ipv6_addresses().into_iter().map(|a| a.addr));
                if let Err(e) = m.follow(now, i.mtu(), ll) {
                    note!("ipoib attach: {}: {e}", args.dev);
                }
            }
            let lid = p
                .host()
                .host()
                .and_then(|h| h.hca().port(h.mgmt_port()))
                .map_or(0, |port| port.lid);
            note!(
                "ipoib attach: {}: carrier {} (LID {lid})",
                args.dev,
                if now { "up" } else { "down" }
            );
        }
        // What was done to the device by hand that Linux IPoIB would not let stand.
        if checked.elapsed() >= CHECK_DEVICE {
            checked = std::time::Instant::now();
            if let (Some(m), Some(i)) = (&mut link, p.interface()) {
                match m.check(i.mtu()) {
                    Ok(done) => {
                        for r in done {
                            note!("ipoib attach: {}: {r}", args.dev);
                        }
                    }
                    Err(e) => note!("ipoib attach: {}: {e}", args.dev),
                }
            }
        }
    }
    if let Err(e) = p.shutdown(std::time::Duration::from_millis(200)) {
        note!("ipoib attach: socket: {e}");
    }
    if let (Some(t), Some(c)) = (&told, p.capture()) {
        note!("{}", t.summary(c));
    }
    match attached {
        true => note!("ipoib attach: {}: detached", args.dev),
        false => note!(
            "ipoib attach: {}: stopped while not attached (no session with udp:{fabric})",
            args.dev
        ),
    }
    ExitCode::SUCCESS
}

/// Why an Active port's interface has no carrier.
enum NoCarrier {
    /// Its P_Key is not in the port's P_Key table, as the SM wrote it from the fabric's
    /// partitions (IBA 1 §10.9.2): the interface waits for it without a word, as Linux's
    /// `ib0.8001` of a partition the SM did not give the port (docs/DEPLOYED.md, Linux IPoIB, "A
    /// P_Key missing from the port's table"). What to say.
    PkeyMissing(String),
    /// The P_Key is there: carrier comes with the broadcast join (§5), not (yet) done. The
    /// port's P_Keys, to choose from.
    Joining(String),
}

/// Why the port is Active and the interface has no carrier; `None` while the port is not Active.
fn port_without_carrier(p: &AttachProcess, pkey: PKey) -> Option<NoCarrier> {
    let host = p.host().host()?;
    let port = host.hca().port(host.mgmt_port())?;
    if port.state != ipoib_fabric::PortState::Active {
        return None;
    }
    let table: Vec<String> = port
        .pkeys
        .iter()
        .filter(|k| k.0 & 0x7fff != 0)
        .map(|k| format!("{:#06x}", k.0))
        .collect();
    let table = table.join(", ");
    if port.find_pkey_index(pkey).is_some() {
        return Some(NoCarrier::Joining(table));
    }
    Some(NoCarrier::PkeyMissing(format!(
        "--pkey {:#06x} is not in the port's P_Key table ({table}), which the fabric's \
         --partitions sets; the interface waits for it",
        pkey.0,
    )))
}

/// How often the device is looked at for what was done to it by hand ([`LinkMirror::check`]).
const CHECK_DEVICE: std::time::Duration = std::time::Duration::from_secs(1);

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(clap::Parser, Debug)]
    struct Cli {
        #[command(flatten)]
        args: Args,
    }

    fn parse(dev: &str) -> Result<Cli, clap::Error> {
        Cli::try_parse_from([
            "attach",
            "--fabric",
            "udp:127.0.0.1:9",
            "--ip",
            "10.0.0.1/24",
            "--no-tun",
            "--dev",
            dev,
        ])
    }

    // `--busy-poll-us` is bounded as `ipoib fabric`'s.
    #[test]
    fn busy_poll_us_is_bounded() {
        let with = |v: &str| {
            Cli::try_parse_from([
                "attach",
                "--fabric",
                "udp:127.0.0.1:9",
                "--ip",
                "10.0.0.1/24",
                "--busy-poll-us",
                v,
            ])
        };
        assert_eq!(with("50").unwrap().args.busy_poll_us, 50);
        let e = with("18446744073709551615").unwrap_err().to_string();
        assert!(e.contains("at most 1000000"), "{e}");
    }

    /// `--dev` names the control socket too: a name Linux would not give a device (and
    /// `ipoib show --dev` refuses) is refused before anything is made.
    /// Two attach processes with the same device in different namespaces get different control
    /// sockets, and a namespace name that would leave the run directory is refused.
    #[test]
    fn netns_names_the_control_socket() {
        let a = ipoib_runtime::control::attach_socket(Some("h1"), "ib0");
        let b = ipoib_runtime::control::attach_socket(Some("h2"), "ib0");
        let c = ipoib_runtime::control::attach_socket(None, "ib0");
        assert!(a != b && a != c && b != c, "{a:?} {b:?} {c:?}");
        assert!(a.ends_with("netns/h1/attach-ib0.sock"), "{a:?}");
        let with = |ns: &str| {
            Cli::try_parse_from([
                "attach",
                "--fabric",
                "udp:127.0.0.1:9",
                "--ip",
                "10.0.0.1/24",
                "--netns",
                ns,
            ])
        };
        assert_eq!(with("h3").unwrap().args.netns.as_deref(), Some("h3"));
        for bad in ["", ".", "..", "../x", "a/b"] {
            assert!(with(bad).is_err(), "{bad:?} accepted");
        }
    }

    /// Addresses no host can have were taken (with `--no-tun` the emulation then answered ARP
    /// for 224.0.0.1 as its own): refused, as a malformed one is.
    #[test]
    fn addresses_must_be_a_hosts_unicast_address() {
        assert_eq!(
            parse_v4("10.0.0.2/24"),
            Ok(("10.0.0.2".parse().unwrap(), 24))
        );
        assert_eq!(parse_v6("fd00::2/64"), Ok(("fd00::2".parse().unwrap(), 64)));
        // A host's address all the same: a /32, link-local, class E (RFC 1112 §4: reserved, not
        // multicast), a network's first and last address, an IPv6 link-local, ULA or /128 one.
        for good in [
            "10.0.0.2/32",
            "169.254.7.9/16",
            "240.0.0.1/4",
            "10.0.0.0/24",
            "10.0.0.255/24",
        ] {
            assert!(parse_v4(good).is_ok(), "{good}");
        }
        for good in ["fe80::2/64", "fd00::2/128", "2001:db8::1/64"] {
            assert!(parse_v6(good).is_ok(), "{good}");
        }
        for bad in [
            "0.0.0.0/0",
            "255.255.255.255/32",
            "224.0.0.1/24",
            "127.0.0.1/8",
        ] {
            let e = parse_v4(bad).unwrap_err();
            assert!(e.ends_with("is no unicast address of a host"), "{bad}: {e}");
        }
        for bad in ["::/0", "::1/128", "ff02::1/64"] {
            let e = parse_v6(bad).unwrap_err();
            assert!(e.ends_with("is no unicast address of a host"), "{bad}: {e}");
        }
    }

    #[test]
    fn dev_must_be_a_device_name() {
        assert_eq!(parse("ib1").unwrap().args.dev, "ib1");
        for bad in [
            "",
            "a/b",
            "../../tmp/x",
            ".",
            "..",
            "a b",
            "a:1",
            "sixteen-bytes-xx",
        ] {
            assert!(parse(bad).is_err(), "{bad:?} accepted");
        }
    }
}

//! `ipoib show`: a view of the interfaces of a running lab or attach process, or of the slots of
//! a fabric process, read over its control socket ([`ipoib_runtime::control`]), the way `ip neigh`
//! reads the kernel's tables.

use ipoib_runtime::control::{self, query, Request, View};
use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// How long `ipoib show` waits for each read and write of the answer.
const TIMEOUT: Duration = Duration::from_secs(10);

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Ask the lab (`ipoib lab`), at RUN_DIR/lab/control.sock (the default).
    #[arg(long, conflicts_with_all = ["dev", "socket", "fabric"])]
    lab: bool,
    /// Ask the attach process of this device (`ipoib attach`), at RUN_DIR/attach-DEV.sock.
    #[arg(long, value_name = "DEV", conflicts_with_all = ["socket", "fabric"])]
    dev: Option<String>,
    /// With --dev: the attach process whose device is in this network namespace (`ipoib attach
    /// --netns NS`), at RUN_DIR/netns/NS/attach-DEV.sock.
    #[arg(long, value_name = "NS", requires = "dev")]
    netns: Option<String>,
    /// Ask the fabric process (`ipoib fabric`) listening on UDP port PORT, at
    /// RUN_DIR/fabric-PORT.sock (`--fabric=PORT`); without PORT, or with `--fabric=0`, the only
    /// fabric running (its one fabric-PORT.sock in RUN_DIR).
    #[arg(
        long,
        value_name = "PORT",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "0",
        conflicts_with = "socket"
    )]
    fabric: Option<u16>,
    /// Ask the control socket at this path.
    #[arg(long, value_name = "PATH")]
    socket: Option<PathBuf>,
    /// Only this host (a lab's h1, h2, ...; an attach process has one, its device; a fabric's
    /// slots are ca1, ca2, ... by topology node).
    #[arg(long, value_name = "HOST")]
    host: Option<String>,
    /// What to show.
    #[arg(value_enum)]
    what: What,
    /// A JSON array of rows instead of text (field names in the README).
    #[arg(long)]
    json: bool,
}

/// The views.
#[derive(clap::ValueEnum, Clone, Copy, Debug)]
enum What {
    /// Neighbours (ARP and ND): IP, 20-byte link-layer address, state.
    Neigh,
    /// Paths (PathRecords): DGID, DLID, SL, MTU, rate.
    Paths,
    /// Multicast groups: MGID, IP group, join state, MLID.
    Mcast,
    /// Connected-mode connections: peer, QPNs, service ID, MTU, state, RC or UC.
    Conns,
    /// Counters of the interfaces, their adapters and the process (of a fabric: per slot, and
    /// its garbage datagrams, unknown sessions, attaches and timeouts).
    Counters,
    /// A fabric's slots: node GUID, LID, the attached host's UDP address, state.
    Hosts,
}

impl From<What> for View {
    fn from(w: What) -> View {
        match w {
            What::Neigh => View::Neigh,
            What::Paths => View::Paths,
            What::Mcast => View::Mcast,
            What::Conns => View::Conns,
            What::Counters => View::Counters,
            What::Hosts => View::Hosts,
        }
    }
}

/// A device name as Linux takes one: 1 to 15 bytes, no `/`, `:` or blank (docs/DEPLOYED.md
/// "Network namespaces, TUN devices and netlink"). `ipoib attach --dev` takes the same names.
pub(crate) fn valid_dev(d: &str) -> bool {
    !d.is_empty()
        && d.len() < 16
        && d != "."
        && d != ".."
        && !d
            .bytes()
            .any(|b| b == b'/' || b == b':' || b.is_ascii_whitespace())
}

/// True when `ns` can name a network namespace (iproute2 refuses a `/`, `.` and `..`, for the
/// name is a file in /run/netns).
pub(crate) fn valid_netns(ns: &str) -> bool {
    !ns.is_empty() && ns != "." && ns != ".." && !ns.contains('/') && !ns.contains('\0')
}

/// The control socket of the fabric on `port`; for 0, the only one in the run directory.
fn fabric_path(port: u16) -> Result<PathBuf, String> {
    if port != 0 {
        return Ok(control::fabric_socket(port));
    }
    let mut all = control::fabric_sockets();
    match all.len() {
        0 => Err(format!(
            "no fabric running: no fabric-PORT.sock in {}",
            control::run_dir().display()
        )),
        1 => Ok(all.remove(0)),
        _ => {
            // Their ports, from the sockets' names (`fabric-PORT.sock`), to pick from.
            let mut ports: Vec<String> = all
                .iter()
                .filter_map(|p| p.file_name()?.to_str())
                .filter_map(|n| n.strip_prefix("fabric-")?.strip_suffix(".sock"))
                .map(str::to_string)
                .collect();
            ports.sort_by_key(|p| (p.len(), p.clone()));
            Err(format!(
                "{} fabrics running (ports {}): name one with --fabric=PORT",
                all.len(),
                ports.join(", ")
            ))
        }
    }
}

/// The pid of a lab that runs but has no control socket yet (it binds it once its namespaces
/// are made, seconds for many hosts; its state file comes before them), when `args` ask the lab.
fn lab_starting(args: &Args) -> Option<i32> {
    if args.dev.is_some() || args.socket.is_some() || args.fabric.is_some() {
        return None;
    }
    let s = crate::lab::state::read().ok()??;
    s.is_alive().then_some(s.pid)
}

/// What to do when no lab answers at the default socket: start one, or clean up after one that
/// died (its socket is stale; `ipoib lab down` removes it with the namespaces).
fn lab_hint(args: &Args, e: &control::QueryError) -> &'static str {
    if args.dev.is_some() || args.socket.is_some() || args.fabric.is_some() {
        return "";
    }
    match e {
        control::QueryError::NotFound(_) => "; start one with `sudo ipoib lab --hosts N &`",
        control::QueryError::Stale(_) => "; `sudo ipoib lab down` removes what the dead lab left",
        _ => "",
    }
}

/// For `--dev D` without `--netns`: the namespaces whose attach process of `D` runs, as a hint
/// (`ipoib attach --netns NS` serves RUN_DIR/netns/NS/attach-D.sock); empty when none does.
fn netns_hint(args: &Args) -> String {
    let (Some(dev), None) = (&args.dev, &args.netns) else {
        return String::new();
    };
    let Ok(dir) = std::fs::read_dir(control::run_dir().join("netns")) else {
        return String::new();
    };
    let mut found: Vec<String> = dir
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|ns| control::attach_socket(Some(ns), dev).exists())
        .collect();
    found.sort();
    match found.as_slice() {
        [] => String::new(),
        [ns] => format!(" (one runs in namespace {ns}: add --netns {ns})"),
        _ => format!(
            " (some run in namespaces {}: add --netns NS)",
            found.join(", ")
        ),
    }
}

pub fn run(args: &Args) -> ExitCode {
    let req = Request {
        view: args.what.into(),
        host: args.host.clone(),
        json: args.json,
    };
    // The server refuses what does not parse; say so before connecting.
    match Request::parse(req.to_line().as_bytes()) {
        Ok(r) if r == req => {}
        Ok(_) => {
            note!(
                "ipoib show: bad host name {:?}",
                args.host.as_deref().unwrap_or("")
            );
            return ExitCode::from(2);
        }
        Err(e) => {
            note!("ipoib show: {e}");
            return ExitCode::from(2);
        }
    }
    // A fabric has slots and no interfaces; a lab or attach process the reverse: their servers
    // would answer an empty table.
    match (args.fabric.is_some(), args.what) {
        (true, What::Neigh | What::Paths | What::Mcast | What::Conns) => {
            note!(
                "ipoib show --fabric: a fabric shows `hosts` and `counters` (a host's tables are \
                 its attach process's: `ipoib show --dev DEV`)"
            );
            return ExitCode::from(2);
        }
        (false, What::Hosts) if args.socket.is_none() => {
            note!("ipoib show hosts: only a fabric has slots (`ipoib show --fabric hosts`)");
            return ExitCode::from(2);
        }
        _ => {}
    }
    let (path, what) = match (&args.dev, &args.socket) {
        _ if args.fabric.is_some() => match fabric_path(args.fabric.unwrap_or(0)) {
            Ok(p) => (p, "no fabric running".to_string()),
            Err(e) => {
                note!("ipoib show: {e}");
                return ExitCode::from(1);
            }
        },
        (Some(d), _) if !valid_dev(d) => {
            note!("ipoib show: bad device name {d:?}");
            return ExitCode::from(2);
        }
        (Some(_), _) if args.netns.as_deref().is_some_and(|n| !valid_netns(n)) => {
            note!(
                "ipoib show: bad namespace name {:?}",
                args.netns.as_deref().unwrap_or_default()
            );
            return ExitCode::from(2);
        }
        (Some(d), _) => (
            control::attach_socket(args.netns.as_deref(), d),
            match &args.netns {
                Some(ns) => format!("no attach running for {d} in namespace {ns}"),
                None => format!("no attach running for {d}"),
            },
        ),
        (None, Some(p)) => (p.clone(), "nothing running".to_string()),
        (None, None) => (control::lab_socket(), "no lab running".to_string()),
    };
    match query(&path, &req, TIMEOUT) {
        Ok(answer) => {
            // A closed standard output (`| head`) ends the run quietly.
            let _ = std::io::stdout().write_all(answer.as_bytes());
            ExitCode::SUCCESS
        }
        Err(control::QueryError::NotFound(p)) if lab_starting(args).is_some() => {
            note!(
                "ipoib show: the lab of pid {} is starting: {} is not there yet; try again in a \
                 moment",
                lab_starting(args).unwrap_or_default(),
                p.display()
            );
            ExitCode::from(1)
        }
        Err(e) if e.not_running() => {
            note!("{what}: {e}{}{}", netns_hint(args), lab_hint(args, &e));
            ExitCode::from(1)
        }
        Err(e) => {
            note!("ipoib show: {e}");
            ExitCode::from(1)
        }
    }
}

/// What a process that could not make its control socket (`err`) says on standard error, after
/// `who` ("ipoib fabric", ...): the process runs on, but `ipoib show` cannot reach it, and a
/// directory the user can write is one `IPOIB_RUN_DIR` away (a user without root cannot write
/// /run/ipoib).
pub fn no_control_socket(who: &str, err: &control::BindError) -> String {
    let hint = match err {
        control::BindError::Io { .. } => format!(
            " (set {} to a directory you can write, for this process and for `ipoib show`)",
            control::RUN_DIR_VAR
        ),
        _ => String::new(),
    };
    format!("{who}: no control socket, so `ipoib show` cannot read this process: {err}{hint}")
}

//! What the OpenSM end-to-end tests share (`opensm_manages.rs`, `opensm_unplug.rs`, and the
//! server's console and SA tests, `ibsim_console.rs`, `ibsim_server.rs`): an
//! `ipoib ibsim-server --sm none` with its output read line by line and its console on standard
//! input, `ibsim-run opensm` attached to one of its hosts, infiniband-diags under `ibsim-run`, and
//! `ibnetdiscover`'s output read back into nodes and cables to compare with the topology given.
//!
//! Every process is started here and stopped by its PID (SIGTERM, then reaped) when its guard
//! drops, on every exit path, an assertion failure included.

#![allow(dead_code)]

use ipoib_fabric::hw::topology::{NodeKind, Topology};
use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// An IPoIB partition (the default one) with its broadcast group, every port a full member.
pub const PARTITIONS: &str = "Default=0x7fff, ipoib : ALL=full ;\n";

pub fn installed(exe: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(exe).is_file()))
        || ["/usr/sbin", "/usr/bin"]
            .iter()
            .any(|d| Path::new(d).join(exe).is_file())
}

/// False, with a SKIP message, when one of `exes` is not installed.
pub fn all_installed(exes: &[&str]) -> bool {
    for exe in exes {
        if !installed(exe) {
            eprintln!(
                "SKIP: {exe} is not installed (Debian opensm, ibsim-utils, infiniband-diags)"
            );
            return false;
        }
    }
    true
}

/// A child process, stopped by its PID with SIGTERM and reaped when dropped.
pub struct Guard(pub Child);

impl Drop for Guard {
    fn drop(&mut self) {
        if let Ok(Some(_)) = self.0.try_wait() {
            return; // reaped already: its PID may be another process's now
        }
        let _ = Command::new("kill")
            .args(["-TERM", &self.0.id().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.0.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `ipoib ibsim-server --sm none|ours --ip --ping-all` on a socket name of its own, its standard
/// output read line by line, its console on standard input.
pub struct Server {
    pub sock: String,
    pub lines: Vec<String>,
    rx: mpsc::Receiver<String>,
    stdin: Option<ChildStdin>,
    err: PathBuf,
    // Last: dropped after the pipes, so the server sees its input close first.
    _guard: Guard,
}

impl Server {
    /// Starts the server on `topology` with `--sm none` and waits for `ready`.
    pub fn start(dir: &Path, name: &str, topology: &[&str], parts: &Path) -> Server {
        Server::start_sm(dir, name, topology, parts, "none")
    }

    /// Starts the server on `topology` with `--sm SM` (`ours` or `none`) and waits for `ready`.
    pub fn start_sm(dir: &Path, name: &str, topology: &[&str], parts: &Path, sm: &str) -> Server {
        Server::spawn(dir, name, |c| {
            c.args(topology)
                .args(["--sm", sm, "--ip", "--ping-all"])
                .arg("--partitions")
                .arg(parts);
        })
    }

    /// Starts `ipoib ibsim-server`, with the arguments `args` adds and `--sockname
    /// ipoib-NAME-PID`, its standard error into `dir/server.err`, and waits for `ready`.
    pub fn spawn(dir: &Path, name: &str, args: impl FnOnce(&mut Command)) -> Server {
        let sock = format!("ipoib-{name}-{}", std::process::id());
        let err = dir.join("server.err");
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_ipoib"));
        cmd.arg("ibsim-server");
        args(&mut cmd);
        let mut child = cmd
            .args(["--sockname", &sock])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&err).unwrap())
            .spawn()
            .expect("start ipoib ibsim-server");
        let stdout = child.stdout.take().unwrap();
        let stdin = child.stdin.take();
        let (tx, rx) = mpsc::channel::<String>();
        std::thread::spawn(move || {
            for l in BufReader::new(stdout).lines() {
                let Ok(l) = l else { break };
                if tx.send(l).is_err() {
                    break;
                }
            }
        });
        let mut s = Server {
            sock,
            lines: Vec::new(),
            rx,
            stdin,
            err,
            _guard: Guard(child),
        };
        let ready = s.wait_line(30, |l| l == "ready");
        assert!(ready.is_some(), "no ready: {:?}", s.lines);
        s
    }

    /// The lines it printed before `ready`.
    pub fn before_ready(&self) -> &[String] {
        let n = self.lines.iter().position(|l| l == "ready");
        &self.lines[..n.unwrap_or(self.lines.len())]
    }

    /// The next line within `secs` seconds (kept in `lines`).
    pub fn next_line(&mut self, secs: u64) -> Option<String> {
        let l = self.rx.recv_timeout(Duration::from_secs(secs)).ok()?;
        self.lines.push(l.clone());
        Some(l)
    }

    /// The first line from now on for which `f` holds, within `secs` seconds.
    pub fn wait_line(&mut self, secs: u64, f: impl Fn(&str) -> bool) -> Option<String> {
        let deadline = Instant::now() + Duration::from_secs(secs);
        while let Some(left) = deadline.checked_duration_since(Instant::now()) {
            match self.rx.recv_timeout(left) {
                Ok(l) => {
                    self.lines.push(l.clone());
                    if f(&l) {
                        return Some(l);
                    }
                }
                Err(_) => return None,
            }
        }
        None
    }

    /// Types `line` on the console.
    pub fn send(&mut self, line: &str) {
        self.send_bytes(format!("{line}\n").as_bytes());
    }

    /// Writes `bytes` to the console as they are.
    pub fn send_bytes(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("console open");
        stdin.write_all(bytes).expect("write to the console");
        stdin.flush().unwrap();
    }

    /// Closes its standard input.
    pub fn close_console(&mut self) {
        self.stdin = None;
    }

    /// Its exit status, if it ends within `secs` seconds.
    pub fn wait_exit(&mut self, secs: u64) -> Option<ExitStatus> {
        let mut status = None;
        wait_for(secs, || {
            status = self._guard.0.try_wait().ok().flatten();
            status.is_some()
        });
        status
    }

    /// Stops it with SIGTERM: its exit status and what it wrote to its standard error.
    pub fn stop(mut self) -> (ExitStatus, String) {
        let c = &mut self._guard.0;
        let _ = Command::new("kill")
            .args(["-TERM", &c.id().to_string()])
            .status();
        let status = c.wait().expect("reap ipoib ibsim-server");
        (status, self.stderr())
    }

    /// What the server wrote to its standard error.
    pub fn stderr(&self) -> String {
        std::fs::read_to_string(&self.err).unwrap_or_default()
    }

    /// Types `unlink "Switch1"[port]` (net.2sw2path4hca: its peer is Switch2's same port) and
    /// checks the answer: both ends Down/Polling.
    pub fn unlink_switch1(&mut self, port: u8) {
        self.switch1_cable("unlink", port, "Down/Polling and Down/Polling");
    }

    /// Types `relink "Switch1"[port]` and checks the answer: both ends Init/LinkUp.
    pub fn relink_switch1(&mut self, port: u8) {
        self.switch1_cable("relink", port, "Init/LinkUp and Init/LinkUp");
    }

    fn switch1_cable(&mut self, verb: &str, port: u8, states: &str) {
        self.send(&format!("{verb} \"Switch1\"[{port}]"));
        let done = format!("{verb}ed ");
        let answer = self.wait_line(30, |l| l.starts_with(&done) || l.starts_with("error"));
        assert_eq!(
            answer,
            Some(format!(
                "{verb}ed \"Switch1\"[{port}] - \"Switch2\"[{port}]: {states}"
            ))
        );
    }

    /// The `pings: N of M answered` line of the next round, and the round's lines.
    pub fn ping_round(&mut self, secs: u64) -> (Option<String>, Vec<String>) {
        let from = self.lines.len();
        let r = self.wait_line(secs, |l| l.starts_with("pings: "));
        (r, self.lines[from..].to_vec())
    }

    /// A [`Server::ping_round`] in which every ordered pair of the `hosts` hosts answered over
    /// IPv4 and IPv6; the round's lines.
    pub fn all_pings_answered(&mut self, hosts: usize, secs: u64) -> Vec<String> {
        let (result, round) = self.ping_round(secs);
        let want = hosts * (hosts - 1) * 2;
        assert_eq!(
            result.as_deref(),
            Some(format!("pings: {want} of {want} answered").as_str()),
            "{round:#?}"
        );
        round
    }
}

/// `ibsim-run opensm` attached to host `host` of `server`, logging to `dir/opensm.log` (errors
/// and info, flushed after every line so that it can be read while OpenSM runs).
pub struct OpenSm {
    pub log: PathBuf,
    out: PathBuf,
    _guard: Guard,
}

impl OpenSm {
    pub fn start(dir: &Path, server: &Server, host: &str, parts: &Path) -> OpenSm {
        OpenSm::start_on(dir, &server.sock, host, parts, "opensm")
    }

    /// `ibsim-run opensm` attached to host `host` of the ibsim server on the socket name `sock`
    /// (`ipoib ibsim-server --sockname`, `ipoib fabric --ibsim`), logging to `dir/NAME.log`, its
    /// output in `dir/NAME.out`; its cache (guid2lid) in `dir`, as every OpenSM started here.
    pub fn start_on(dir: &Path, sock: &str, host: &str, parts: &Path, name: &str) -> OpenSm {
        OpenSm::start_args(dir, sock, host, parts, name, &[])
    }

    /// [`OpenSm::start_on`] with more options for OpenSM (`-p 15`, its priority, say).
    pub fn start_args(
        dir: &Path,
        sock: &str,
        host: &str,
        parts: &Path,
        name: &str,
        extra: &[&str],
    ) -> OpenSm {
        let log = dir.join(format!("{name}.log"));
        let out = dir.join(format!("{name}.out"));
        let child = Command::new("ibsim-run")
            .arg("opensm")
            .args(extra)
            .args(["-F", "/dev/null", "-D", "0x03", "-d", "2", "-f"])
            .arg(&log)
            .arg("--dump_files_dir")
            .arg(dir)
            .arg("-P")
            .arg(parts)
            .current_dir(dir)
            .env("IBSIM_SOCKNAME", sock)
            .env("SIM_HOST", host)
            .env("OSM_CACHE_DIR", dir)
            .env("OSM_TMP_DIR", dir)
            .env_remove("IBSIM_SERVER_NAME")
            .stdout(std::fs::File::create(&out).unwrap())
            .stderr(Stdio::null())
            .spawn()
            .expect("start ibsim-run opensm");
        OpenSm {
            log,
            out,
            _guard: Guard(child),
        }
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Kills it with SIGKILL, so that it cleans nothing up (no unsubscription, no handover),
    /// and reaps it.
    pub fn kill(&mut self) {
        let c = &mut self._guard.0;
        if let Ok(None) = c.try_wait() {
            let _ = c.kill();
        }
        let _ = c.wait();
    }

    /// Waits until the log has `n` lines containing `pat`, at most `secs` seconds.
    pub fn wait_count(&self, pat: &str, n: usize, secs: u64) -> bool {
        wait_for(secs, || self.log().matches(pat).count() >= n)
    }

    /// The log's error lines (`ERR ` codes, ERRORS DURING INITIALIZATION).
    pub fn errors(&self) -> Vec<String> {
        self.log()
            .lines()
            .filter(|l| l.contains("ERR ") || l.contains("ERRORS DURING INITIALIZATION"))
            .map(str::to_string)
            .collect()
    }

    /// What went wrong, for a failed assertion.
    pub fn explain(&self, server: &Server) -> String {
        format!(
            "OpenSM log:\n{}\nits output: {}\nserver: {}\nserver lines: {:#?}",
            self.log(),
            std::fs::read_to_string(&self.out).unwrap_or_default(),
            server.stderr(),
            server.lines
        )
    }
}

/// Runs `args` under `ibsim-run` attached to `host`, at most 20 s; its standard output.
pub fn diag(dir: &Path, sock: &str, host: &str, args: &[&str]) -> String {
    let (code, out, err) = diag_any(dir, sock, host, args);
    assert!(code == Some(0), "{args:?} failed ({code:?}): {err}\n{out}");
    out
}

/// Runs `args` under `ibsim-run` attached to `host`, at most 20 s, whatever its exit status:
/// (exit code, standard output, standard error).
pub fn diag_any(
    dir: &Path,
    sock: &str,
    host: &str,
    args: &[&str],
) -> (Option<i32>, String, String) {
    let o = Command::new("timeout")
        .arg("20")
        .arg("ibsim-run")
        .args(args)
        .current_dir(dir)
        .env("IBSIM_SOCKNAME", sock)
        .env("SIM_HOST", host)
        .env_remove("IBSIM_SERVER_NAME")
        .output()
        .expect("run ibsim-run");
    let s = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (o.status.code(), s(&o.stdout), s(&o.stderr))
}

/// Waits until `f` holds, at most `secs` seconds.
pub fn wait_for(secs: u64, mut f: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while Instant::now() < deadline {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    f()
}

/// The values of `key` in saquery's dump lines (`\t\tPortGid.........fe80::...`).
pub fn values(out: &str, key: &str) -> Vec<String> {
    out.lines()
        .filter_map(|l| {
            let rest = l.trim_start().strip_prefix(key)?;
            rest.starts_with('.')
                .then(|| rest.trim_start_matches('.').trim().to_string())
        })
        .collect()
}

/// A fabric as `ibnetdiscover` prints it, or as a topology says it is: nodes by GUID (kind,
/// port count, description) and cables as ordered pairs of (node GUID, port).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Fabric {
    pub nodes: BTreeMap<u64, (String, u8, String)>,
    pub cables: BTreeSet<((u64, u8), (u64, u8))>,
}

fn cable(a: (u64, u8), b: (u64, u8)) -> ((u64, u8), (u64, u8)) {
    (a.min(b), a.max(b))
}

/// `"S-0000000000200001"` (quoted or not): the GUID.
fn tag_guid(tag: &str) -> Option<u64> {
    let t = tag.trim_matches('"');
    let hex = t.strip_prefix("S-").or_else(|| t.strip_prefix("H-"))?;
    u64::from_str_radix(hex, 16).ok()
}

/// `Switch\t8 "S-<guid>"\t\t# "desc" ...`: the GUID, and (kind, ports, description).
fn header(kind: &str, l: &str) -> Option<(u64, (String, u8, String))> {
    let mut q = l.split('"');
    let ports: u8 = q.next()?.get(kind.len()..)?.trim().parse().ok()?;
    let guid = tag_guid(q.next()?)?;
    let desc = q.nth(1)?.to_string();
    Some((guid, (kind.to_string(), ports, desc)))
}

/// `[p](portguid) "X-<guid>"[q] ...`: p, and the peer's (GUID, q).
fn port_line(l: &str) -> Option<(u8, (u64, u8))> {
    let (p, rest) = l.strip_prefix('[')?.split_once(']')?;
    let mut q = rest.split('"');
    q.next();
    let peer = tag_guid(q.next()?)?;
    let (pp, _) = q.next()?.strip_prefix('[')?.split_once(']')?;
    Some((p.parse().ok()?, (peer, pp.parse().ok()?)))
}

impl Fabric {
    /// Reads ibnetdiscover's topology output: `Switch\t8 "S-<guid>"\t\t# "desc" ...` or
    /// `Ca\t2 "H-<guid>"\t\t# "desc"` headers, then `[p](portguid) "X-<guid>"[q]...` lines
    /// (every cable is listed from both ends; each end must name the other). Panics, showing
    /// the output, on a line it cannot read.
    pub fn from_ibnetdiscover(out: &str) -> Fabric {
        let mut f = Fabric::default();
        let mut ends = BTreeSet::new();
        let mut cur: Option<u64> = None;
        for l in out.lines() {
            let bad = || -> ! { panic!("ibnetdiscover line {l:?} unreadable in\n{out}") };
            if let Some(kind) = ["Switch", "Ca"].into_iter().find(|k| l.starts_with(k)) {
                let (guid, node) = header(kind, l).unwrap_or_else(|| bad());
                f.nodes.insert(guid, node);
                cur = Some(guid);
            } else if l.starts_with('[') {
                let node = cur.unwrap_or_else(|| bad());
                let (port, peer) = port_line(l).unwrap_or_else(|| bad());
                ends.insert(((node, port), peer));
            } else if l.trim().is_empty() {
                cur = None;
            } else if !(l.starts_with('#') || l.contains('=')) {
                bad();
            }
        }
        for &(a, b) in &ends {
            assert!(
                ends.contains(&(b, a)),
                "cable {a:?} -> {b:?} listed from one end only in\n{out}"
            );
            f.cables.insert(cable(a, b));
        }
        f
    }

    /// What `ibnetdiscover` should print for `topo` with the cables `pulled` (topology link
    /// indices) unplugged.
    pub fn of_topology(topo: &Topology, pulled: &[usize]) -> Fabric {
        let mut f = Fabric::default();
        for n in topo.nodes() {
            let kind = if n.kind == NodeKind::Switch {
                "Switch"
            } else {
                "Ca"
            };
            f.nodes
                .insert(n.guid.0, (kind.to_string(), n.ports, n.desc.clone()));
        }
        for (i, l) in topo.links().iter().enumerate() {
            if pulled.contains(&i) {
                continue;
            }
            let g = |e: ipoib_fabric::hw::topology::End| topo.nodes()[e.node].guid.0;
            f.cables
                .insert(cable((g(l.a), l.a.port), (g(l.b), l.b.port)));
        }
        f
    }
}

/// ibsim's net.2sw2path4hca: Switch1 and Switch2 joined by ports 3 and 5.
pub const NET_2SW2PATH4HCA: &str = "\
Switch\t8 \"Switch1\"\n[1]\t\"Hca1\"[1]\n[2]\t\"Hca3\"[1]\n[3]\t\"Switch2\"[3]\n[5]\t\"Switch2\"[5]\n\n\
Switch 8 \"Switch2\"\n[1]\t\"Hca2\"[1]\n[2]\t\"Hca4\"[1]\n[3]\t\"Switch1\"[3]\n[5]\t\"Switch1\"[5]\n\n\
Hca\t2 \"Hca1\"\n[1]\t\"Switch1\"[1]\n\nHca\t2 \"Hca2\"\n[1]\t\"Switch2\"[1]\n\n\
Hca\t2 \"Hca3\"\n[1]\t\"Switch1\"[2]\n\nHca\t2 \"Hca4\"\n[1]\t\"Switch2\"[2]\n";

/// Writes [`NET_2SW2PATH4HCA`] to `dir/net`: that file's path (for `--topology`), and the
/// topology.
pub fn net_2sw2path4hca(dir: &Path) -> (String, Topology) {
    let net = dir.join("net");
    std::fs::write(&net, NET_2SW2PATH4HCA).unwrap();
    let topo = Topology::parse_net(NET_2SW2PATH4HCA).unwrap();
    (net.to_str().unwrap().to_string(), topo)
}

/// Switch1's out port for `host`'s LID, by `ibroute` over the directed route 0,1 from Hca3
/// (its port 1 is cabled to Switch1).
pub fn out_port(dir: &Path, sock: &str, host: &str) -> u8 {
    let out = diag(dir, sock, "Hca3", &["ibroute", "-D", "0,1"]);
    // `0x0004 003 : (Channel Adapter portguid 0x0000000000100004: 'Hca2')`
    out.lines()
        .find(|l| l.ends_with(&format!("'{host}')")))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no route to {host} in\n{out}"))
}

/// The indices of `topo`'s links with an end at port `port` of the node named `node`.
pub fn links_at(topo: &Topology, node: &str, port: u8) -> Vec<usize> {
    (0..topo.links().len())
        .filter(|&i| {
            let l = &topo.links()[i];
            [l.a, l.b]
                .iter()
                .any(|e| topo.nodes()[e.node].name == node && e.port == port)
        })
        .collect()
}

/// Writes partitions.conf into `dir`.
pub fn partitions(dir: &Path) -> PathBuf {
    let p = dir.join("partitions.conf");
    std::fs::write(&p, PARTITIONS).unwrap();
    p
}

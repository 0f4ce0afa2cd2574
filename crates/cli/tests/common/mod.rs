//! Helpers of the tests that run `ipoib` programs (`ipoib lab`, `ipoib fabric`, `ipoib attach`):
//! running `ipoib` and other programs with a timeout, a lab that is stopped and removed however a
//! test ends, child processes killed by PID when dropped and read line by line, the host table
//! the lab prints, `ipoib show --json`, and the check that nothing is left behind. Each test file
//! compiles its own copy and uses part of it.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::mpsc;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// A net file whose H3 is cabled only to H2's second port: a CA does not forward, so no subnet
/// manager on H1 can reach H3 (nor H2's second port).
pub const SPLIT_NET: &str =
    "Switch 2 \"S1\"\n[1] \"H1\"[1]\n[2] \"H2\"[1]\nHca 1 \"H1\"\n[1] \"S1\"[1]\n\
     Hca 2 \"H2\"\n[1] \"S1\"[2]\n[2] \"H3\"[1]\nHca 1 \"H3\"\n[1] \"H2\"[2]\n";

pub const BIN: &str = env!("CARGO_BIN_EXE_ipoib");
/// The state file of a running lab (the default RUN_DIR, README "`ipoib lab`").
pub const LAB_STATE: &str = "/run/ipoib/lab/lab.json";

/// `ipoib ARGS` run in `dir` to its end, its exit status and output kept (the commands that end
/// by themselves: `ipoib demo`, `ipoib sim`).
pub fn ipoib_output(dir: &Path, args: &[&str]) -> Output {
    Command::new(BIN)
        .current_dir(dir)
        .args(args)
        .output()
        .expect("run ipoib")
}

/// A program's output as text (lossy UTF-8).
pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// One lab at a time on a machine: the tests of one file that start labs take this first.
pub fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// True when `tool` is an executable file in a directory of `PATH` (or /usr/sbin).
pub fn installed(tool: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(tool).is_file()))
        || Path::new("/usr/sbin").join(tool).is_file()
}

/// Why a root test of a lab cannot run here, if it cannot: not root, no TUN device, one of
/// `tools` missing, or another lab running.
pub fn skip_reason(tools: &[&str]) -> Option<String> {
    if !nix::unistd::geteuid().is_root() {
        return Some("needs root".into());
    }
    if !Path::new("/dev/net/tun").exists() {
        return Some("needs /dev/net/tun".into());
    }
    if let Some(t) = tools.iter().find(|t| !installed(t)) {
        return Some(format!("needs {t}"));
    }
    if Path::new(LAB_STATE).exists() {
        return Some(format!("another lab runs ({LAB_STATE})"));
    }
    None
}

/// Runs `cmd` with a timeout, standard output captured; its status and standard output (None
/// when it timed out and was killed).
pub fn run(cmd: &mut Command, timeout: Duration) -> Option<(ExitStatus, String)> {
    let mut c = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn");
    // Read while waiting: a full pipe would stall the program.
    let mut stdout = c.stdout.take().expect("piped");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut out = String::new();
        let _ = stdout.read_to_string(&mut out);
        let _ = tx.send(out);
    });
    let end = Instant::now() + timeout;
    let status = loop {
        if let Some(st) = c.try_wait().expect("wait") {
            break Some(st);
        }
        if Instant::now() >= end {
            let _ = c.kill();
            let _ = c.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    // A grandchild still holding the pipe would keep the reader waiting: bounded too.
    let out = rx.recv_timeout(Duration::from_secs(5)).unwrap_or_default();
    status.map(|st| (st, out))
}

/// Runs `ipoib ARGS` with a timeout ([`run`]).
pub fn ipoib(args: &[&str], timeout: Duration) -> Option<(ExitStatus, String)> {
    run(Command::new(BIN).args(args), timeout)
}

/// `ipoib ARGS` with RUN_DIR `run_dir` (`IPOIB_RUN_DIR`), its status and output within `timeout`.
pub fn ipoib_in(run_dir: &Path, args: &[&str], timeout: Duration) -> Option<(ExitStatus, String)> {
    run(
        Command::new(BIN).args(args).env("IPOIB_RUN_DIR", run_dir),
        timeout,
    )
}

/// `ipoib show ARGS --json` of the running lab, parsed: its rows.
pub fn show_json(args: &[&str]) -> Vec<serde_json::Value> {
    show_json_in(None, args)
}

/// `ipoib show ARGS --json` with RUN_DIR `run_dir` (`IPOIB_RUN_DIR`) when given, parsed.
pub fn show_json_in(run_dir: Option<&Path>, args: &[&str]) -> Vec<serde_json::Value> {
    let mut all = args.to_vec();
    all.push("--json");
    let mut cmd = Command::new(BIN);
    cmd.args(&all);
    if let Some(d) = run_dir {
        cmd.env("IPOIB_RUN_DIR", d);
    }
    let (st, out) = run(&mut cmd, Duration::from_secs(15)).expect("ipoib show within 15 s");
    assert!(st.success(), "ipoib {all:?}: {st}\n{out}");
    match serde_json::from_str(&out) {
        Ok(serde_json::Value::Array(rows)) => rows,
        other => panic!("ipoib {all:?}: not a JSON array: {other:?}\n{out}"),
    }
}

/// The address in the line `ipoib fabric` prints once it listens ("... listening on ADDR, ...").
pub fn listen_addr(line: &str) -> String {
    line.split("listening on ")
        .nth(1)
        .and_then(|r| r.split(',').next())
        .unwrap_or_else(|| panic!("no address in {line:?}"))
        .to_string()
}

/// A child process, killed (SIGKILL, by its PID) and reaped when dropped.
pub struct Reaped(pub Child);

impl Reaped {
    pub fn spawn(cmd: &mut Command) -> Reaped {
        Reaped(cmd.spawn().expect("spawn"))
    }

    pub fn pid(&self) -> u32 {
        self.0.id()
    }

    /// Waits up to `timeout` for the process to end, then kills it; its standard output (when
    /// piped) and whether it ended by itself.
    pub fn finish(mut self, timeout: Duration) -> (String, bool) {
        let end = Instant::now() + timeout;
        while Instant::now() < end && matches!(self.0.try_wait(), Ok(None)) {
            std::thread::sleep(Duration::from_millis(20));
        }
        let ended = !matches!(self.0.try_wait(), Ok(None));
        if !ended {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
        let mut out = String::new();
        if let Some(mut o) = self.0.stdout.take() {
            let _ = o.read_to_string(&mut out);
        }
        (out, ended)
    }
}

/// A child process with its standard output read line by line (piped, read on a thread).
pub struct Talker {
    pub proc: Reaped,
    lines: mpsc::Receiver<String>,
    /// Every line read so far.
    pub seen: Vec<String>,
}

impl Talker {
    /// Spawns `cmd` reading its standard output (its standard input a pipe).
    pub fn spawn(cmd: &mut Command) -> Talker {
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("spawn");
        let stdout = child.stdout.take().expect("piped");
        Talker::reading(child, stdout)
    }

    /// Spawns `cmd` reading its standard error (standard input and output null).
    pub fn spawn_stderr(cmd: &mut Command) -> Talker {
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn");
        let stderr = child.stderr.take().expect("piped");
        Talker::reading(child, stderr)
    }

    fn reading(child: Child, out: impl Read + Send + 'static) -> Talker {
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Talker {
            proc: Reaped(child),
            lines,
            seen: Vec::new(),
        }
    }

    /// Spawns `ipoib ARGS` with RUN_DIR `run_dir` (`IPOIB_RUN_DIR`), reading its standard error
    /// ([`Talker::spawn_stderr`]), where `ipoib fabric` and `ipoib attach` report.
    pub fn ipoib(args: &[&str], run_dir: &Path) -> Talker {
        Talker::spawn_stderr(Command::new(BIN).args(args).env("IPOIB_RUN_DIR", run_dir))
    }

    /// Spawns `ipoib ARGS` as a script's `ipoib ARGS &` starts it, with SIGINT ignored
    /// (POSIX.1-2017 XCU §2.11, docs/DEPLOYED.md), with RUN_DIR `run_dir` if given, reading its
    /// standard error; returns once the shell has exec'd it.
    pub fn with_sigint_ignored(args: &[&str], run_dir: Option<&Path>) -> Talker {
        let mut cmd = Command::new("sh");
        cmd.arg("-c")
            .arg(r#"trap "" INT; exec "$@""#)
            .arg("sh")
            .arg(BIN)
            .args(args);
        if let Some(d) = run_dir {
            cmd.env("IPOIB_RUN_DIR", d);
        }
        let t = Talker::spawn_stderr(&mut cmd);
        let pid = t.proc.pid();
        let exe = std::fs::canonicalize(BIN).unwrap();
        let end = Instant::now() + Duration::from_secs(20);
        while std::fs::read_link(format!("/proc/{pid}/exe")).ok().as_ref() != Some(&exe) {
            assert!(Instant::now() < end, "{args:?} did not start");
            std::thread::sleep(Duration::from_millis(1));
        }
        t
    }

    /// Waits until the process has a SIGINT handler ([`catches_sigint`]) or `at_most` passed
    /// (a bring-up well under way without one, as in the code before the handlers came first).
    pub fn until_it_catches_sigint(&self, at_most: Duration) {
        let end = Instant::now() + at_most;
        while !catches_sigint(self.proc.pid()) && Instant::now() < end {
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// Spawns `ipoib fabric --listen udp:127.0.0.1:0 --hosts 3 EXTRA...` with RUN_DIR `run_dir`
    /// and waits for it to listen: the fabric and its "listening on udp:" line.
    pub fn fabric_udp(extra: &[&str], run_dir: &Path) -> (Talker, String) {
        let mut args = vec!["fabric", "--listen", "udp:127.0.0.1:0", "--hosts", "3"];
        args.extend_from_slice(extra);
        let mut fabric = Talker::ipoib(&args, run_dir);
        let line = fabric.expect("listening on udp:");
        (fabric, line)
    }

    /// Spawns `ipoib attach --no-tun --fabric ADDR --ip IP EXTRA...` with RUN_DIR `run_dir`.
    pub fn attach_no_tun(addr: &str, ip: &str, extra: &[&str], run_dir: &Path) -> Talker {
        let mut args = vec!["attach", "--no-tun", "--fabric", addr, "--ip", ip];
        args.extend_from_slice(extra);
        Talker::ipoib(&args, run_dir)
    }

    /// The first line (seen before or read within `timeout`) that contains `pat`.
    pub fn wait_for(&mut self, pat: &str, timeout: Duration) -> Option<String> {
        self.wait_for_nth(pat, 1, timeout)
    }

    /// The `n`th line (from 1; seen before or read within `timeout`) that contains `pat`.
    pub fn wait_for_nth(&mut self, pat: &str, n: usize, timeout: Duration) -> Option<String> {
        let nth = |seen: &[String]| seen.iter().filter(|l| l.contains(pat)).nth(n - 1).cloned();
        self.wait_until(|seen| nth(seen).is_some(), timeout)?;
        nth(&self.seen)
    }

    /// [`Talker::wait_for`] within 20 s, or a panic that shows every line seen.
    pub fn expect(&mut self, pat: &str) -> String {
        self.expect_nth(pat, 1)
    }

    /// [`Talker::wait_for_nth`] within 20 s, or a panic that shows every line seen.
    pub fn expect_nth(&mut self, pat: &str, n: usize) -> String {
        match self.wait_for_nth(pat, n, Duration::from_secs(20)) {
            Some(l) => l,
            None => panic!("no line {n} with {pat:?}; saw {:?}", self.seen),
        }
    }

    /// Sends SIGINT and waits up to 30 s for the process to end (then kills it), reading what it
    /// printed while stopping: its exit code, -1 when it was killed or ended by a signal.
    pub fn interrupt_and_wait(&mut self) -> i32 {
        let pid = nix::unistd::Pid::from_raw(self.proc.pid() as i32);
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT);
        let end = Instant::now() + Duration::from_secs(30);
        let status = loop {
            match self.proc.0.try_wait() {
                Ok(Some(st)) => break st.code().unwrap_or(-1),
                Ok(None) if Instant::now() < end => std::thread::sleep(Duration::from_millis(20)),
                _ => {
                    let _ = self.proc.0.kill();
                    let _ = self.proc.0.wait();
                    break -1;
                }
            }
        };
        // The reader ends with the pipe; what it read is in the channel.
        while let Ok(l) = self.lines.recv_timeout(Duration::from_secs(2)) {
            self.seen.push(l);
        }
        status
    }

    /// Reads lines until `done(lines seen)` holds (true) or `timeout` passed (false).
    pub fn wait_until(
        &mut self,
        done: impl Fn(&[String]) -> bool,
        timeout: Duration,
    ) -> Option<()> {
        let end = Instant::now() + timeout;
        while !done(&self.seen) {
            let left = end.checked_duration_since(Instant::now())?;
            self.seen.push(self.lines.recv_timeout(left).ok()?);
        }
        Some(())
    }

    /// Sends SIGTERM and waits up to `timeout` for the process to end (then kills it): its exit
    /// status if it ended by itself, and every line it printed.
    pub fn terminate(mut self, timeout: Duration) -> (Option<ExitStatus>, Vec<String>) {
        let pid = nix::unistd::Pid::from_raw(self.proc.pid() as i32);
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
        let end = Instant::now() + timeout;
        let status = loop {
            match self.proc.0.try_wait() {
                Ok(Some(st)) => break Some(st),
                Ok(None) if Instant::now() < end => std::thread::sleep(Duration::from_millis(20)),
                _ => break None,
            }
        };
        (status, self.finish(Duration::ZERO))
    }

    /// Closes the process's standard input, waits up to `timeout` for it to end (then kills it)
    /// and returns every line it printed.
    pub fn finish(mut self, timeout: Duration) -> Vec<String> {
        drop(self.proc.0.stdin.take());
        let end = Instant::now() + timeout;
        while Instant::now() < end && matches!(self.proc.0.try_wait(), Ok(None)) {
            std::thread::sleep(Duration::from_millis(20));
        }
        drop(self.proc);
        // The reader ends with the pipe; what it read is in the channel.
        while let Ok(l) = self.lines.recv_timeout(Duration::from_millis(500)) {
            self.seen.push(l);
        }
        self.seen
    }
}

/// Network namespaces a test made (`ip netns add`); dropping it ends the processes in them and
/// deletes them.
pub struct Netns(pub Vec<String>);

impl Netns {
    pub fn add(names: Vec<String>) -> Netns {
        let mut ns = Netns(Vec::new());
        for n in names {
            let ok = Command::new("ip")
                .args(["netns", "add", &n])
                .status()
                .is_ok_and(|s| s.success());
            assert!(ok, "ip netns add {n}");
            ns.0.push(n);
        }
        ns
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        for n in &self.0 {
            // Deleting a namespace does not end the processes in it.
            if let Ok(o) = Command::new("ip").args(["netns", "pids", n]).output() {
                for p in String::from_utf8_lossy(&o.stdout).split_whitespace() {
                    if let Ok(p) = p.parse() {
                        let _ = nix::sys::signal::kill(
                            nix::unistd::Pid::from_raw(p),
                            nix::sys::signal::Signal::SIGKILL,
                        );
                    }
                }
            }
            let _ = Command::new("ip").args(["netns", "del", n]).status();
        }
    }
}

impl Drop for Reaped {
    fn drop(&mut self) {
        if matches!(self.0.try_wait(), Ok(None)) {
            let _ = self.0.kill();
        }
        let _ = self.0.wait();
    }
}

/// A host of the table `ipoib lab` prints once IPoIB is up.
#[derive(Debug, Clone)]
pub struct HostRow {
    pub name: String,
    pub gid: String,
    pub qpn: String,
    pub mtu: u32,
    /// The P_Key table entry of the host's partition, `0xffff`, and the port's membership in it
    /// (`full`, `limited`, or `none` when the table lacks it).
    pub pkey: String,
    pub member: String,
    pub ipv4: String,
    pub ipv6: String,
    /// The 20-byte link-layer address (RFC 4391 §9.1.1), as Linux prints one.
    pub lladdr: String,
}

/// The lab process; dropping it stops the lab and removes what is left (`ipoib lab down`).
pub struct Lab {
    child: Child,
    /// What the lab printed up to its "Run `ipoib lab exec`" line.
    pub table: String,
    pub hosts: Vec<HostRow>,
}

impl Lab {
    /// Starts `ipoib lab ARGS` and waits (60 s at most) until it prints that its hosts are up.
    pub fn start(args: &[&str]) -> Lab {
        Lab::start_to(args, Stdio::inherit())
    }

    /// [`Lab::start`] with the lab's standard error going to `stderr`.
    pub fn start_to(args: &[&str], stderr: impl Into<Stdio>) -> Lab {
        let mut child = Command::new(BIN)
            .arg("lab")
            .args(args)
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .expect("start the lab");
        let stdout = child.stdout.take().expect("piped");
        let mut lab = Lab {
            child,
            table: String::new(),
            hosts: Vec::new(),
        };
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let end = Instant::now() + Duration::from_secs(60);
        loop {
            let left = end.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left) {
                Ok(l) => {
                    let done = l.starts_with("Run `ipoib lab exec");
                    lab.table += &l;
                    lab.table.push('\n');
                    if done {
                        break;
                    }
                }
                Err(e) => panic!("the lab did not come up: {e}; printed:\n{}", lab.table),
            }
        }
        lab.hosts = parse_table(&lab.table);
        lab
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn host(&self, name: &str) -> &HostRow {
        self.hosts
            .iter()
            .find(|h| h.name == name)
            .unwrap_or_else(|| panic!("no {name} in\n{}", self.table))
    }
}

/// The rows of the lab's host table (`host namespace LID GID QPN MTU P_Key member IPv4 IPv6
/// link-layer address`).
fn parse_table(table: &str) -> Vec<HostRow> {
    table
        .lines()
        .filter(|l| l.starts_with('h') && !l.starts_with("host "))
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let [name, _ns, _lid, gid, qpn, mtu, pkey, member, ipv4, ipv6, lladdr] = f[..] else {
                return None;
            };
            Some(HostRow {
                name: name.into(),
                gid: gid.into(),
                qpn: qpn.into(),
                mtu: mtu.parse().ok()?,
                pkey: pkey.into(),
                member: member.into(),
                ipv4: ipv4.split('/').next()?.into(),
                ipv6: ipv6.split('/').next()?.into(),
                lladdr: lladdr.into(),
            })
        })
        .collect()
}

impl Drop for Lab {
    fn drop(&mut self) {
        let pid = nix::unistd::Pid::from_raw(self.child.id() as i32);
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
        let end = Instant::now() + Duration::from_secs(10);
        while Instant::now() < end && matches!(self.child.try_wait(), Ok(None)) {
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = ipoib(&["lab", "down"], Duration::from_secs(20));
    }
}

/// What is left of a lab of `hosts` hosts: namespaces (`ip netns list`, their /run/netns and
/// /etc/netns files), the state file, and which of `pids` still run.
pub fn leftovers(hosts: usize, pids: &[u32]) -> Vec<String> {
    let mut v = Vec::new();
    for i in 1..=hosts {
        for p in [
            format!("/run/netns/ipoib-h{i}"),
            format!("/etc/netns/ipoib-h{i}"),
        ] {
            if Path::new(&p).exists() {
                v.push(p);
            }
        }
    }
    if Path::new(LAB_STATE).exists() {
        v.push(LAB_STATE.into());
    }
    if let Ok(o) = Command::new("ip").args(["netns", "list"]).output() {
        let list = String::from_utf8_lossy(&o.stdout).into_owned();
        v.extend(
            list.lines()
                .filter(|l| l.starts_with("ipoib-h"))
                .map(str::to_string),
        );
    }
    v.extend(
        pids.iter()
            .filter(|p| Path::new(&format!("/proc/{p}")).exists())
            .map(|p| format!("process {p}")),
    );
    v
}

/// Whether process `pid` has a handler for SIGINT (/proc/PID/status, SigCgt: bit 1).
pub fn catches_sigint(pid: u32) -> bool {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("SigCgt:"))
        .and_then(|m| u64::from_str_radix(m.trim(), 16).ok())
        .is_some_and(|m| m & 2 != 0)
}

/// The line `PROG: --pcap PATH: N packets, B bytes...` in `stderr` (what a process that records
/// as it runs says on its way out), and its N.
pub fn pcap_said(stderr: &str, prog: &str, pcap: &Path) -> (String, u64) {
    let said = format!("{prog}: --pcap {}: ", pcap.display());
    let line = stderr
        .lines()
        .find_map(|l| l.split_once(&said).map(|(_, r)| r))
        .unwrap_or_else(|| panic!("no {said}... line in\n{stderr}"));
    let packets = line
        .split(' ')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{line}"));
    (line.to_string(), packets)
}

/// `ipoib decode` reads `packets` packets from `pcap`, every CRC good.
pub fn assert_decodes(pcap: &Path, packets: u64) {
    let o = Command::new(BIN)
        .args(["decode", pcap.to_str().unwrap()])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    let summary = err.lines().last().unwrap_or("");
    assert_eq!(o.status.code(), Some(0), "{summary}");
    assert!(
        summary.starts_with(&format!("ipoib decode: {packets} packets"))
            && summary.contains("0 malformed packets, 0 bad ICRC, 0 bad VCRC"),
        "{summary}"
    );
}

/// Seconds since the Unix epoch now.
pub fn unix_secs() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

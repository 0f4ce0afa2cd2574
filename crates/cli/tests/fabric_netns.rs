//! As root: `ipoib fabric` and two `ipoib attach` processes whose TUN devices live in two network
//! namespaces; Linux's own `ping` goes from one namespace to the other through the UDP fabric
//! (docs/UDP-FABRIC.md). Skipped with a message when not root (a TUN device and namespaces need
//! CAP_NET_ADMIN and CAP_SYS_ADMIN).

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::{Duration, Instant};

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .map(|l| l.split_whitespace().nth(2) == Some("0"))
        })
        .unwrap_or(false)
}

struct Proc {
    child: Child,
    lines: Receiver<String>,
    seen: Vec<String>,
}

fn spawn(args: &[&str], run_dir: &std::path::Path) -> Proc {
    let mut child = Command::new(env!("CARGO_BIN_EXE_ipoib"))
        .args(args)
        .env("IPOIB_RUN_DIR", run_dir)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run ipoib");
    let err = child.stderr.take().unwrap();
    let (tx, lines) = channel();
    std::thread::spawn(move || {
        for l in BufReader::new(err).lines().map_while(Result::ok) {
            if tx.send(l).is_err() {
                break;
            }
        }
    });
    Proc {
        child,
        lines,
        seen: Vec::new(),
    }
}

impl Proc {
    fn wait_for(&mut self, pat: &str) -> String {
        self.wait_for_nth(pat, 1)
    }

    /// The `n`th line (from 1) with `pat`.
    fn wait_for_nth(&mut self, pat: &str, n: usize) -> String {
        if let Some(l) = self.seen.iter().filter(|l| l.contains(pat)).nth(n - 1) {
            return l.clone();
        }
        let mut count = self.seen.iter().filter(|l| l.contains(pat)).count();
        let end = Instant::now() + Duration::from_secs(20);
        while let Some(left) = end.checked_duration_since(Instant::now()) {
            match self.lines.recv_timeout(left) {
                Ok(l) => {
                    self.seen.push(l.clone());
                    if l.contains(pat) {
                        count += 1;
                        if count == n {
                            return l;
                        }
                    }
                }
                Err(_) => break,
            }
        }
        panic!("no line {n} with {pat:?}; saw {:?}", self.seen);
    }

    fn interrupt_and_wait(&mut self) -> i32 {
        let _ = Command::new("kill")
            .args(["-INT", &self.child.id().to_string()])
            .status();
        self.child.wait().map_or(-1, |s| s.code().unwrap_or(-1))
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Network namespaces made for the test, deleted however it ends.
struct Namespaces(Vec<String>);

impl Drop for Namespaces {
    fn drop(&mut self) {
        for n in &self.0 {
            let _ = Command::new("ip").args(["netns", "del", n]).status();
        }
    }
}

fn ip(args: &[&str]) -> bool {
    Command::new("ip")
        .args(args)
        .status()
        .is_ok_and(|s| s.success())
}

/// What `ip -n NS ARGS` prints.
fn ip_out(ns: &str, args: &[&str]) -> String {
    let o = Command::new("ip")
        .args(["-n", ns])
        .args(args)
        .output()
        .unwrap();
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// `ping` from namespace `ns`: true when all `count` came back.
fn ping(ns: &str, args: &[&str], dst: &str, count: u32) -> (bool, String) {
    let o = Command::new("ip")
        .args([
            "netns",
            "exec",
            ns,
            "ping",
            "-c",
            &count.to_string(),
            "-W",
            "5",
        ])
        .args(args)
        .arg(dst)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    let ok = o.status.success() && out.contains(&format!("{count} received"));
    (ok, out)
}

/// The link-local addresses of `dev` in `ns`.
fn link_locals(ns: &str, dev: &str) -> Vec<String> {
    ip_out(
        ns,
        &["-6", "-o", "addr", "show", "dev", dev, "scope", "link"],
    )
    .lines()
    .filter_map(|l| l.split("inet6 ").nth(1))
    .filter_map(|r| r.split('/').next())
    .map(str::to_string)
    .collect()
}

#[test]
fn linux_ping_between_namespaces_through_the_udp_fabric() {
    if !is_root() {
        eprintln!("skipped: not root (TUN devices and network namespaces need it)");
        return;
    }
    let id = std::process::id();
    let ns: Vec<String> = (1..=2).map(|i| format!("ipoib-ufab{id}-{i}")).collect();
    let _cleanup = Namespaces(ns.clone());
    for n in &ns {
        assert!(ip(&["netns", "add", n]), "ip netns add {n}");
    }
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path();
    let mut fabric = spawn(
        &["fabric", "--listen", "udp:127.0.0.1:0", "--hosts", "3"],
        run,
    );
    let l = fabric.wait_for("listening on udp:");
    let addr = l
        .split("listening on ")
        .nth(1)
        .and_then(|r| r.split(',').next())
        .unwrap()
        .to_string();
    let mut hosts: Vec<Proc> = (1..=2)
        .map(|i| {
            spawn(
                &[
                    "attach",
                    "--fabric",
                    &addr,
                    "--dev",
                    &format!("ib{i}"),
                    "--netns",
                    &ns[i - 1],
                    "--ip",
                    &format!("10.77.{}.{i}/24", id % 200),
                ],
                run,
            )
        })
        .collect();
    for (i, h) in hosts.iter_mut().enumerate() {
        h.wait_for(&format!("ib{}: carrier up", i + 1));
    }
    let peer4 = format!("10.77.{}.2", id % 200);
    let (ok, out) = ping(&ns[0], &[], &peer4, 3);
    assert!(ok, "ping failed: {out}");

    // IPv6 link-local: each device holds its interface's address (from the port GUID the
    // fabric gave, draft-ietf-ipoib-ip-over-infiniband-06 §8) and no other, so a ping to the
    // peer's fe80::...%ib1 is answered (docs/DEPLOYED.md "TUN devices").
    let ll1 = link_locals(&ns[0], "ib1");
    let ll2 = link_locals(&ns[1], "ib2");
    assert_eq!((ll1.len(), ll2.len()), (1, 1), "{ll1:?} {ll2:?}");
    let (ok, out) = ping(&ns[0], &["-6"], &format!("{}%ib1", ll2[0]), 2);
    assert!(ok, "ping -6 {}%ib1 failed: {out}", ll2[0]);

    // The fabric goes: the hosts lose their ports, and the devices their carrier (Linux IPoIB's
    // netif_carrier_off), keeping their addresses.
    assert_eq!(fabric.interrupt_and_wait(), 0);
    for (i, h) in hosts.iter_mut().enumerate() {
        h.wait_for(&format!("ib{}: carrier down", i + 1));
    }
    let link = ip_out(&ns[0], &["link", "show", "ib1"]);
    assert!(
        link.contains("NO-CARRIER") && link.contains(",UP"),
        "{link}"
    );
    let addrs = ip_out(&ns[0], &["addr", "show", "ib1"]);
    assert!(
        addrs.contains(&format!("10.77.{}.1/24", id % 200)),
        "{addrs}"
    );
    // It comes back on the same port: the hosts attach again with their identities, the
    // devices get their carrier back, the same link-local addresses, and Linux pings again.
    let mut fabric = spawn(&["fabric", "--listen", &addr, "--hosts", "3"], run);
    fabric.wait_for("listening on udp:");
    for (i, h) in hosts.iter_mut().enumerate() {
        h.wait_for_nth(&format!("ib{}: carrier up", i + 1), 2);
    }
    let link = ip_out(&ns[0], &["link", "show", "ib1"]);
    assert!(link.contains(",UP,LOWER_UP"), "{link}");
    assert_eq!(link_locals(&ns[0], "ib1"), ll1);
    let (ok, out) = ping(&ns[0], &[], &peer4, 2);
    assert!(ok, "ping after the fabric's return failed: {out}");
    for h in &mut hosts {
        assert_eq!(h.interrupt_and_wait(), 0);
    }
    assert_eq!(fabric.interrupt_and_wait(), 0);
    // Each attach process served its socket in RUN_DIR/netns/NS/ and took it, and the
    // directory, away when it ended; so did the fabric.
    let left: Vec<_> = walk(dir.path());
    assert!(left.is_empty(), "left in the run directory: {left:?}");
}

/// Every file and directory under `d`.
fn walk(d: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(d).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        }
        out.push(p);
    }
    out
}

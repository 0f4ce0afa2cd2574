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
        if let Some(l) = self.seen.iter().find(|l| l.contains(pat)) {
            return l.clone();
        }
        let end = Instant::now() + Duration::from_secs(20);
        while let Some(left) = end.checked_duration_since(Instant::now()) {
            match self.lines.recv_timeout(left) {
                Ok(l) => {
                    self.seen.push(l.clone());
                    if l.contains(pat) {
                        return l;
                    }
                }
                Err(_) => break,
            }
        }
        panic!("no line with {pat:?}; saw {:?}", self.seen);
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
    let o = Command::new("ip")
        .args(["netns", "exec", &ns[0], "ping", "-c", "3", "-W", "5"])
        .arg(format!("10.77.{}.2", id % 200))
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "ping failed: {out}");
    assert!(out.contains("3 received"), "{out}");
    for h in &mut hosts {
        assert_eq!(h.interrupt_and_wait(), 0);
    }
    assert_eq!(fabric.interrupt_and_wait(), 0);
}

//! As root: `ipoib fabric` and two `ipoib attach` processes whose TUN devices live in two network
//! namespaces; Linux's own `ping` goes from one namespace to the other through the UDP fabric
//! (docs/UDP-FABRIC.md). Skipped with a message when not root (a TUN device and namespaces need
//! CAP_NET_ADMIN and CAP_SYS_ADMIN).

mod common;

use common::Talker;
use std::process::Command;

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
    let mut fabric = Talker::ipoib(
        &["fabric", "--listen", "udp:127.0.0.1:0", "--hosts", "3"],
        run,
    );
    let l = fabric.expect("listening on udp:");
    let addr = common::listen_addr(&l);
    let mut hosts: Vec<Talker> = (1..=2)
        .map(|i| {
            Talker::ipoib(
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
        h.expect(&format!("ib{}: carrier up", i + 1));
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
        h.expect(&format!("ib{}: carrier down", i + 1));
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
    let mut fabric = Talker::ipoib(&["fabric", "--listen", &addr, "--hosts", "3"], run);
    fabric.expect("listening on udp:");
    for (i, h) in hosts.iter_mut().enumerate() {
        h.expect_nth(&format!("ib{}: carrier up", i + 1), 2);
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

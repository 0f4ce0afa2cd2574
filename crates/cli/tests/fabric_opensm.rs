//! As root: the real OpenSM manages a UDP fabric and is restarted under it. `ipoib fabric --sm
//! none --ibsim NAME` (no SM or SA of ours; ibsim's client protocol on the SM's CA), OpenSM under
//! `ibsim-run` on that CA, and three `ipoib attach` hosts with TUN devices in network namespaces
//! made here. Once Linux pings between them (IPv4 and IPv6), OpenSM is killed with SIGKILL (it
//! cleans nothing up) and a fresh one started on the same port with the same cache: its first
//! sweep as master writes PortInfo:ClientReregister to every CA port (IBA 1 §14.4.11; OpenSM
//! `osm_lid_mgr.c`, docs/OPENSM-NOTES.md), each slot's SMA passes it to its host (message type
//! 9, docs/UDP-FABRIC.md "ClientReregister"), and the hosts' IPoIB joins the broadcast group
//! again at the new SA with the ports still Active: `saquery` lists the three ports as full
//! members again, each attach process counted the message (`ipoib show counters`, section
//! `attach`), and pings of both families still work.
//!
//! Skipped with a message when not root, without /dev/net/tun, or where ibsim-run, opensm,
//! saquery or ping is missing. Every process is stopped and every namespace deleted by guards,
//! however the test ends. Run it under the shared lock: `flock /work/notes/netns.lock cargo test
//! -p ipoib-cli --test fabric_opensm`.

mod common;
mod osm;

use common::{skip_reason, Netns, Talker};
use ipoib_fabric::hw::topology::Topology;
use osm::{partitions, values, wait_for, OpenSm};
use std::net::Ipv6Addr;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

const HOSTS: usize = 3;
/// The IPoIB broadcast group of the default partition (RFC 4391 §4).
const BROADCAST: &str = "ff12:401b:ffff::ffff:ffff";

/// `ping` from namespace `ns`, 2 requests: whether both came back, and its output.
fn ping(ns: &str, family: &str, dst: &str) -> (bool, String) {
    let o = Command::new("ip")
        .args(["netns", "exec", ns, "ping", family, "-c", "2", "-i", "0.2"])
        .args(["-W", "5", dst])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    (o.status.success() && out.contains("2 received"), out)
}

/// The broadcast group's members as OpenSM's SA lists them (saquery on the SM's CA, SM_Key 1,
/// OpenSM's default): (PortGid, JoinState) sorted; none when the query fails (no SA yet).
fn members(dir: &Path, sock: &str, host: &str) -> Vec<(String, String)> {
    let o = Command::new("timeout")
        .args([
            "10",
            "ibsim-run",
            "saquery",
            "--smkey",
            "1",
            "MCMR",
            "--mgid",
        ])
        .arg(BROADCAST)
        .current_dir(dir)
        .env("IBSIM_SOCKNAME", sock)
        .env("SIM_HOST", host)
        .env_remove("IBSIM_SERVER_NAME")
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    let mut m: Vec<(String, String)> = values(&out, "PortGid")
        .into_iter()
        .zip(values(&out, "JoinState"))
        .collect();
    m.sort();
    m
}

/// Section `attach`, counter `name` of the attach process of `dev` in `ns`.
fn attach_counter(run: &Path, ns: &str, dev: &str, name: &str) -> u64 {
    let rows = common::show_json_in(
        Some(run),
        &["show", "--netns", ns, "--dev", dev, "counters"],
    );
    rows.iter()
        .find(|r| r["section"] == "attach")
        .and_then(|r| r["counters"][name].as_u64())
        .unwrap_or_else(|| panic!("{dev}: no attach {name} in {rows:?}"))
}

/// For a failure's message: the attach process's counters and its port as it holds it, the
/// fabric's slots and counters (`ipoib show`; what cannot be read says so).
fn views(run: &Path, ns: &str, dev: &str) -> String {
    let show = |args: &[&str]| {
        let mut all = args.to_vec();
        all.push("--json");
        common::ipoib_in(run, &all, Duration::from_secs(15))
            .map_or_else(|| "(no answer in 15 s)".to_string(), |(_, out)| out)
    };
    format!(
        "attach counters: {}\nattach paths: {}\nfabric hosts: {}\nfabric counters: {}",
        show(&["show", "--netns", ns, "--dev", dev, "counters"]),
        show(&["show", "--netns", ns, "--dev", dev, "paths"]),
        show(&["show", "--fabric", "hosts"]),
        show(&["show", "--fabric", "counters"]),
    )
}

#[test]
fn attached_hosts_register_again_at_a_restarted_opensm() {
    if let Some(why) = skip_reason(&["ibsim-run", "opensm", "saquery", "ping"]) {
        eprintln!("SKIP: {why}");
        return;
    }
    let id = std::process::id();
    let ns: Vec<String> = (1..=HOSTS).map(|i| format!("ipoib-osmr{id}-{i}")).collect();
    // Dropped last: the processes in them end with them.
    let _netns = Netns::add(ns.clone());
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let parts = partitions(d);
    let sock = format!("ipoib-osmr-{id}");
    let mut fabric = Talker::ipoib(
        &[
            "fabric",
            "--listen",
            "udp:127.0.0.1:0",
            "--hosts",
            &(HOSTS + 1).to_string(),
            "--sm",
            "none",
            "--ibsim",
            &sock,
            "--partitions",
            parts.to_str().unwrap(),
        ],
        d,
    );
    let at = fabric.expect("SIM_HOST=");
    let sm_host = at
        .split("SIM_HOST=")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .unwrap()
        .to_string();
    let addr = common::listen_addr(&fabric.expect("listening on udp:"));
    let mut osm = OpenSm::start_on(d, &sock, &sm_host, &parts, "opensm1");
    let net = id % 200;
    let mut hosts: Vec<Talker> = (1..=HOSTS)
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
                    &format!("10.78.{net}.{i}/24"),
                    "--ip6",
                    &format!("fd00:78:{net}::{i}/64"),
                ],
                d,
            )
        })
        .collect();
    for (i, h) in hosts.iter_mut().enumerate() {
        if h.wait_for(&format!("ib{}: carrier up", i + 1), Duration::from_secs(30))
            .is_none()
        {
            panic!(
                "ib{} no carrier: {:?}\nOpenSM log:\n{}\nfabric: {:?}\n{}",
                i + 1,
                h.seen,
                osm.log(),
                fabric.seen,
                views(d, &ns[i], &format!("ib{}", i + 1))
            );
        }
    }
    let pings = |when: &str| {
        for (from, to) in [(0, 2), (1, 3), (2, 1)] {
            let v4 = format!("10.78.{net}.{to}");
            let v6 = format!("fd00:78:{net}::{to}");
            for (family, dst) in [("-4", v4), ("-6", v6)] {
                let (ok, out) = ping(&ns[from], family, &dst);
                assert!(ok, "{when}: ping {family} {dst} from {}: {out}", ns[from]);
            }
        }
    };
    pings("under the first OpenSM");

    // The three hosts' ports are the broadcast group's full members (JoinState 0x1).
    let topo = Topology::single_switch(HOSTS + 1).unwrap();
    let mut want: Vec<(String, String)> = topo
        .cas()
        .skip(1)
        .map(|n| {
            let g = topo.nodes()[n].port_guid(1).0;
            let gid = Ipv6Addr::from((0xfe80u128 << 112) | u128::from(g));
            (gid.to_string(), "0x1".to_string())
        })
        .collect();
    want.sort();
    let got = members(d, &sock, &sm_host);
    assert_eq!(got, want, "first OpenSM:\n{}", osm.log());
    // (The first OpenSM's first sweep may have found a host's port already, or not yet.)
    let before: Vec<u64> = (0..HOSTS)
        .map(|i| attach_counter(d, &ns[i], &format!("ib{}", i + 1), "client_reregisters"))
        .collect();

    // SIGKILL: no cleanup; the SA's groups go with it. A fresh OpenSM on the same port, with
    // the same cache (guid2lid: the same LIDs).
    osm.kill();
    let mut osm2 = OpenSm::start_on(d, &sock, &sm_host, &parts, "opensm2");
    assert!(
        osm2.wait_count("SUBNET UP", 1, 30),
        "no SUBNET UP:\n{}",
        osm2.log()
    );
    let mut got = Vec::new();
    let again = wait_for(20, || {
        got = members(d, &sock, &sm_host);
        got == want
    });
    assert!(
        again,
        "the hosts did not register again at the new SA: {got:?}\nOpenSM log:\n{}",
        osm2.log()
    );
    for (i, n) in ns.iter().enumerate() {
        let dev = format!("ib{}", i + 1);
        assert_eq!(
            attach_counter(d, n, &dev, "client_reregisters"),
            before[i] + 1,
            "{dev}: one ClientReregister from the new master's first sweep"
        );
        // Registered again with the port Active all along: no carrier lost.
        let down = hosts[i].wait_for("carrier down", Duration::from_millis(200));
        assert_eq!(down, None, "{dev}: {:?}", hosts[i].seen);
    }
    pings("under the second OpenSM");
    // The one error OpenSM logs is the documented refusal of the send-only join to ff02::2
    // (the all-routers group no host joined: RFC 4391 §11 makes it SendOnlyNonMember, which
    // creates no group; README "`ipoib fabric` and `ipoib attach`").
    let errors: Vec<String> = osm2
        .errors()
        .into_iter()
        .filter(|l| !(l.contains("ERR 1B10") && l.contains("MGID: ff12:601b:ffff::2 ")))
        .collect();
    assert!(errors.is_empty(), "OpenSM errors: {errors:#?}");
    osm2.kill();
    for h in &mut hosts {
        assert_eq!(h.interrupt_and_wait(), 0, "{:?}", h.seen);
    }
    assert_eq!(fabric.interrupt_and_wait(), 0, "{:?}", fabric.seen);
}

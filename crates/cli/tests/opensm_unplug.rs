//! Pulling a cable while the real OpenSM manages our fabric: two switches joined by two cables,
//! two hosts on each (ibsim's `net.2sw2path4hca`), `ipoib ibsim-server --sm none` and
//! `ibsim-run opensm` as in `opensm_manages.rs`. Once every host pings every other, the console's
//! `Unlink` pulls the cable that Switch1's LFT sends Hca2's traffic through: both ends go Down,
//! Switch1 sends trap 128 to OpenSM (IBA 1 §14.2.5.1), OpenSM logs it and sweeps again (a new
//! SUBNET UP after the trap), reroutes Hca2's LID through the other cable, and a second round of
//! pings is all answered, through that cable (its PMA counters grow by at least the pings that
//! cross). `ibnetdiscover` sees the topology less that cable, then, after `ReLink` and OpenSM's
//! next sweep, the whole topology again. Facts of OpenSM relied on: docs/OPENSM-NOTES.md "A cable
//! pulled while OpenSM manages the fabric". Skipped, with a message, where ibsim-run, opensm,
//! ibnetdiscover, ibroute or perfquery is not installed.

mod osm;

use osm::*;
use std::path::Path;

/// OpenSM's log line for a trap 128 (logged at its error level, 0x01, so `-D 0x03` shows it).
const TRAP_128: &str = "Received Generic Notice type:1 num:128 (Link state change)";

/// Switch1's LID from ibnetdiscover's header `Switch\t8 "S-..."\t\t# "Switch1" base port 0 lid 2`.
fn switch1_lid(discovered: &str) -> String {
    discovered
        .lines()
        .find(|l| l.starts_with("Switch") && l.contains("\"Switch1\""))
        .and_then(|l| l.split("lid ").nth(1))
        .and_then(|r| r.split_whitespace().next())
        .unwrap_or_else(|| panic!("no Switch1 LID in\n{discovered}"))
        .to_string()
}

/// PortXmitPkts of Switch1's `port` (perfquery -x through its PMA).
fn xmit_pkts(dir: &Path, sock: &str, lid: &str, port: u8) -> u64 {
    let out = diag(
        dir,
        sock,
        "Hca3",
        &["perfquery", "-x", lid, &port.to_string()],
    );
    out.lines()
        .find_map(|l| l.strip_prefix("PortXmitPkts:"))
        .and_then(|v| v.trim_start_matches('.').trim().parse().ok())
        .unwrap_or_else(|| panic!("no PortXmitPkts in\n{out}"))
}

#[test]
fn opensm_reroutes_around_a_pulled_cable() {
    if !all_installed(&[
        "ibsim-run",
        "opensm",
        "ibnetdiscover",
        "ibroute",
        "perfquery",
    ]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (net, topo) = net_2sw2path4hca(d);
    let parts = partitions(d);
    let mut server = Server::start(d, "osm-unplug", &["--topology", &net], &parts);
    let osm = OpenSm::start(d, &server, "Hca1", &parts);
    assert!(
        osm.wait_count("SUBNET UP", 1, 30),
        "no SUBNET UP:\n{}",
        osm.explain(&server)
    );
    let all = "pings: 24 of 24 answered";
    let (r, round) = server.ping_round(60);
    assert_eq!(r.as_deref(), Some(all), "{round:#?}");
    let discovered = diag(d, &server.sock, "Hca3", &["ibnetdiscover"]);
    assert_eq!(
        Fabric::from_ibnetdiscover(&discovered),
        Fabric::of_topology(&topo, &[]),
        "{discovered}"
    );

    // The cable Switch1 sends Hca2's traffic through, and the other one.
    let used = out_port(d, &server.sock, "Hca2");
    assert!(used == 3 || used == 5, "Hca2 through port {used}");
    let other = 8 - used;
    let pulled = links_at(&topo, "Switch1", used);
    assert_eq!(pulled.len(), 1);

    // Pull it: both ends Down, trap 128 to OpenSM, a sweep that ends in SUBNET UP.
    let sweeps = osm.log().matches("SUBNET UP").count();
    server.unlink_switch1(used);
    let swept = wait_for(30, || {
        let log = osm.log();
        let trap = log.find(TRAP_128);
        trap.is_some_and(|t| log[t..].contains("SUBNET UP"))
            && log.matches("SUBNET UP").count() > sweeps
    });
    assert!(
        swept,
        "no trap 128 and sweep after it:\n{}",
        osm.explain(&server)
    );
    assert!(osm
        .log()
        .contains("Reporting Urgent Notice \"Link state change\" from switch"));
    let errors = osm.errors();
    assert!(errors.is_empty(), "OpenSM errors: {errors:#?}");

    // Rerouted: Hca2 through the other cable, which then carries the second round of pings.
    assert!(
        wait_for(30, || out_port(d, &server.sock, "Hca2") == other),
        "Hca2 still through port {used}"
    );
    let lid = switch1_lid(&discovered);
    let before = xmit_pkts(d, &server.sock, &lid, other);
    server.send("pingall");
    let (r, round) = server.ping_round(60);
    assert_eq!(
        r.as_deref(),
        Some(all),
        "{round:#?}\n{}",
        osm.explain(&server)
    );
    let crossed = xmit_pkts(d, &server.sock, &lid, other) - before;
    // IBA 1 §16.1.3.5: the pulled port's PMA counted its link going down.
    let out = diag(
        d,
        &server.sock,
        "Hca3",
        &["perfquery", &lid, &used.to_string()],
    );
    assert!(
        out.lines()
            .any(|l| l.starts_with("LinkDownedCounter:") && l.ends_with(".1")),
        "{out}"
    );
    // Hca1 and Hca3 ping Hca2 and Hca4 (8 requests) and answer their 8 pings: at least 16
    // packets out of Switch1 towards Switch2, all on the cable left.
    assert!(crossed >= 16, "{crossed} packets on port {other}");
    let discovered = diag(d, &server.sock, "Hca3", &["ibnetdiscover"]);
    assert_eq!(
        Fabric::from_ibnetdiscover(&discovered),
        Fabric::of_topology(&topo, &pulled),
        "{discovered}"
    );

    // Plugged back: Init/LinkUp, another trap and sweep, the whole topology again.
    let sweeps = osm.log().matches("SUBNET UP").count();
    server.relink_switch1(used);
    assert!(
        osm.wait_count("SUBNET UP", sweeps + 1, 30),
        "no sweep after the relink:\n{}",
        osm.explain(&server)
    );
    let discovered = diag(d, &server.sock, "Hca3", &["ibnetdiscover"]);
    assert_eq!(
        Fabric::from_ibnetdiscover(&discovered),
        Fabric::of_topology(&topo, &[]),
        "{discovered}"
    );
    assert!(osm.errors().is_empty(), "{:#?}", osm.errors());
}

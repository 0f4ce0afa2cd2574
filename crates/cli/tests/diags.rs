//! infiniband-diags as an administrator runs them, against our fabric managed once by the real
//! OpenSM (`ipoib ibsim-server --sm none`, `ibsim-run opensm` on Hca1) and once by our own SM
//! (`--sm ours`), on ibsim's `net.2sw2path4hca` (two switches joined by ports 3 and 5, two hosts
//! on each), every host running IPoIB (so the broadcast group has members and an MFT entry).
//! From Hca3, under `ibsim-run`: `iblinkinfo` shows exactly the net file's cables Active and every
//! other switch port Down; `ibswitches` and `ibhosts` list its nodes; `dump_lfts` routes every LID
//! of each switch (its own LID to port 0, its hosts by their cables, the rest over 3 or 5);
//! `ibtracert` from Hca3 to Hca2 goes Hca3, Switch1, Switch2, Hca2, leaving Switch1 by the port
//! its LFT names, and `ibtracert -m` of the broadcast MLID takes the same switches;
//! `ibqueryerrors` finds only PortRcvSwitchRelayErrors of the bring-up (at host ports, or at an
//! inter-switch port, docs/DIAGS.md), none once `-k` cleared the counters, then, after the
//! console pulled and plugged back Switch1's port 5 cable, LinkDownedCounter 1 at both its ends
//! (IBA 1 §16.1.3.5), and none again after `-k` cleared them; `ibccquery` of a switch gets status 0x000C at once
//! (`crates/fabric/src/hw/switch/gsi.rs`). docs/DIAGS.md has what each tool printed on ibsim, on
//! ours with OpenSM and with our SM. Skipped, with a message, where ibsim-run, opensm or a tool is
//! not installed; every process is `osm/mod.rs`'s, stopped on every exit path.

mod osm;

use osm::*;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// One end of a cable as iblinkinfo names it: (node, port).
type End = (String, u8);

/// What `iblinkinfo` printed: node name -> LID (a switch's, or a CA port's), the Active links
/// (each from both ends), the Down switch ports, and the ports up but not yet Active.
#[derive(Debug, Default)]
struct Links {
    lids: BTreeMap<String, u16>,
    active: BTreeSet<(End, End)>,
    down: BTreeSet<End>,
    training: BTreeSet<End>,
}

/// Reads `iblinkinfo`: `CA: Hca4:` or `Switch: 0x... Switch2:` headers, then one line per port,
/// `  LID  PORT[  ] ==( 4X 2.5 Gbps Active/  LinkUp)==>  LID  PORT[  ] "Peer" ( ... )`.
fn links(out: &str) -> Links {
    let mut l = Links::default();
    let mut node = String::new();
    for line in out.lines() {
        if line.starts_with("CA: ") || line.starts_with("Switch: ") {
            let name = line.split_whitespace().last().unwrap_or_default();
            node = name.trim_end_matches(':').to_string();
            continue;
        }
        let Some((left, rest)) = line.split_once("==(") else {
            continue;
        };
        let Some((state, right)) = rest.split_once(")==>") else {
            panic!("iblinkinfo line {line:?} unreadable in\n{out}");
        };
        let left: Vec<&str> = left
            .split('[')
            .next()
            .unwrap_or_default()
            .split_whitespace()
            .collect();
        let (Some(lid), Some(port)) = (
            left.get(left.len().wrapping_sub(2))
                .and_then(|v| v.parse().ok()),
            left.last().and_then(|v| v.parse().ok()),
        ) else {
            panic!("iblinkinfo line {line:?} unreadable in\n{out}");
        };
        l.lids.insert(node.clone(), lid);
        if state.contains("Down/") {
            l.down.insert((node.clone(), port));
            continue;
        }
        if !state.contains("Active/  LinkUp") {
            // Trained, waiting for the SM (Initialize or Armed): not yet Active.
            l.training.insert((node.clone(), port));
            continue;
        }
        let peer_port = right
            .split('[')
            .next()
            .unwrap_or_default()
            .split_whitespace()
            .last();
        let peer = right.split('"').nth(1).unwrap_or_default().to_string();
        let peer_port = peer_port
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("{line}"));
        l.active.insert(((node.clone(), port), (peer, peer_port)));
    }
    l
}

/// The net file's cables, from both ends.
fn cables() -> BTreeSet<(End, End)> {
    let one_way = [
        ("Switch1", 1, "Hca1", 1),
        ("Switch1", 2, "Hca3", 1),
        ("Switch1", 3, "Switch2", 3),
        ("Switch1", 5, "Switch2", 5),
        ("Switch2", 1, "Hca2", 1),
        ("Switch2", 2, "Hca4", 1),
    ];
    let mut all = BTreeSet::new();
    for (a, p, b, q) in one_way {
        let (x, y) = ((a.to_string(), p), (b.to_string(), q));
        all.insert((x.clone(), y.clone()));
        all.insert((y, x));
    }
    all
}

/// `dump_lfts`: switch name -> (destination name -> out port), from its blocks `Unicast lids
/// [0x0-0x6] of switch DR path ... (Switch2):` and lines `0x0001 003 : (Channel Adapter portguid
/// 0x...: 'Hca1')`.
fn lfts(out: &str) -> BTreeMap<String, BTreeMap<String, u8>> {
    let mut all: BTreeMap<String, BTreeMap<String, u8>> = BTreeMap::new();
    let mut sw = String::new();
    for line in out.lines() {
        if line.starts_with("Unicast lids") {
            sw = line
                .rsplit('(')
                .next()
                .unwrap_or_default()
                .trim_end_matches("):")
                .to_string();
        } else if line.starts_with("0x") && line.contains(" : (") {
            let port = line.split_whitespace().nth(1).and_then(|p| p.parse().ok());
            let dest = line.split('\'').nth(1);
            let (Some(port), Some(dest)) = (port, dest) else {
                panic!("dump_lfts line {line:?} unreadable in\n{out}");
            };
            all.entry(sw.clone())
                .or_default()
                .insert(dest.to_string(), port);
        }
    }
    all
}

/// The node names of `ibtracert`'s hops (the last quoted name of each line) and the ports it
/// left each switch by (`[3] -> ...` is the out port of the line before).
fn hops(out: &str) -> (Vec<String>, Vec<u8>) {
    let mut names = Vec::new();
    let mut outs = Vec::new();
    for line in out.lines() {
        let Some(name) = line.rsplit('"').nth(1) else {
            continue;
        };
        if names.last() != Some(&name.to_string()) {
            names.push(name.to_string());
        }
        if let Some(p) = line.strip_prefix('[').and_then(|r| r.split(']').next()) {
            outs.push(p.parse().unwrap_or_else(|_| panic!("{line}")));
        }
    }
    (names, outs)
}

/// Runs `args` under `ibsim-run` from Hca3 whatever its exit status: (exit code, stdout,
/// stderr).
fn run_any(dir: &Path, sock: &str, args: &[&str]) -> (Option<i32>, String, String) {
    diag_any(dir, sock, "Hca3", args)
}

/// `ibqueryerrors`' summary and its error lines (`   GUID 0x200000 port 5: [LinkDownedCounter
/// == 1] ...`) by node name.
fn errors(dir: &Path, sock: &str, args: &[&str]) -> (String, BTreeMap<String, Vec<String>>) {
    let mut cmd = vec!["ibqueryerrors"];
    cmd.extend_from_slice(args);
    let (code, out, err) = run_any(dir, sock, &cmd);
    assert!(
        matches!(code, Some(0 | 1)),
        "{cmd:?}: {code:?} {err}\n{out}"
    );
    let mut by_node: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut node = String::new();
    for line in out.lines() {
        if let Some(rest) = line.strip_prefix("Errors for ") {
            node = rest.split('"').nth(1).unwrap_or_default().to_string();
        } else if line.trim_start().starts_with("GUID ") {
            by_node
                .entry(node.clone())
                .or_default()
                .push(line.trim().to_string());
        }
    }
    let summary = out
        .lines()
        .filter(|l| l.starts_with("## Summary") || l.starts_with("##  "));
    (summary.collect::<Vec<_>>().join("\n"), by_node)
}

const CLEAN: &str = "## Summary: 6 nodes checked, 0 bad nodes found\n\
                     ##          20 ports checked, 0 ports have errors beyond threshold";

/// Every check of the module docs on the fabric `server` serves, its SM configured.
fn check(d: &Path, server: &mut Server, who: &str) {
    let sock = server.sock.clone();
    let l = links(&diag(d, &sock, "Hca3", &["iblinkinfo"]));
    assert_eq!(l.active, cables(), "{who}: {l:#?}");
    assert!(l.training.is_empty(), "{who}: {l:#?}");
    let mut down = BTreeSet::new();
    for sw in ["Switch1", "Switch2"] {
        for p in [4, 6, 7, 8] {
            down.insert((sw.to_string(), p));
        }
    }
    assert_eq!(l.down, down, "{who}");
    assert_eq!(l.lids.len(), 6, "{who}: {l:#?}");

    // ibswitches: `Switch\t: 0x... ports 8 "Switch2" base port 0 lid 3 lmc 0`.
    let sw = diag(d, &sock, "Hca3", &["ibswitches"]);
    let mut seen = BTreeSet::new();
    for line in sw.lines() {
        let name = line.split('"').nth(1).unwrap_or_default();
        let lid = line.split(" lid ").nth(1).and_then(|r| r.split(' ').next());
        assert!(line.contains("ports 8 "), "{who}: {sw}");
        assert_eq!(
            lid.and_then(|v| v.parse().ok()),
            l.lids.get(name).copied(),
            "{sw}"
        );
        seen.insert(name.to_string());
    }
    assert_eq!(
        seen,
        BTreeSet::from(["Switch1".into(), "Switch2".into()]),
        "{sw}"
    );
    let hosts = diag(d, &sock, "Hca3", &["ibhosts"]);
    let names: BTreeSet<String> = hosts
        .lines()
        .inspect(|l| {
            assert!(
                l.starts_with("Ca\t: 0x") && l.contains("ports 2 "),
                "{hosts}"
            )
        })
        .filter_map(|l| l.split('"').nth(1).map(str::to_string))
        .collect();
    let want: BTreeSet<String> = (1..=4).map(|i| format!("Hca{i}")).collect();
    assert_eq!(names, want, "{who}: {hosts}");

    // dump_lfts: every LID routed, by the cables.
    let t = lfts(&diag(d, &sock, "Hca3", &["dump_lfts"]));
    for (sw, mine, other) in [
        (
            "Switch1",
            [("Hca1", 1), ("Hca3", 2)],
            ["Hca2", "Hca4", "Switch2"],
        ),
        (
            "Switch2",
            [("Hca2", 1), ("Hca4", 2)],
            ["Hca1", "Hca3", "Switch1"],
        ),
    ] {
        let lft = &t[sw];
        assert_eq!(lft.len(), 6, "{who} {sw}: {lft:?}");
        assert_eq!(lft[sw], 0, "{who} {sw}: {lft:?}");
        for (h, p) in mine {
            assert_eq!(lft[h], p, "{who} {sw}: {lft:?}");
        }
        for o in other {
            assert!(matches!(lft[o], 3 | 5), "{who} {sw}: {lft:?}");
        }
    }

    // ibtracert, unicast and through the broadcast group's MFT entries.
    let (from, to) = (l.lids["Hca3"].to_string(), l.lids["Hca2"].to_string());
    let path = ["Hca3", "Switch1", "Switch2", "Hca2"]
        .map(String::from)
        .to_vec();
    let uni = diag(d, &sock, "Hca3", &["ibtracert", &from, &to]);
    let (names, outs) = hops(&uni);
    assert_eq!(names, path, "{who}: {uni}");
    assert_eq!(outs.get(1), Some(&t["Switch1"]["Hca2"]), "{who}: {uni}");
    let multi = diag(d, &sock, "Hca3", &["ibtracert", "-m", "0xc000", &from, &to]);
    assert_eq!(hops(&multi).0, path, "{who}: {multi}");

    // ibqueryerrors: the bring-up left PortRcvSwitchRelayErrors alone (docs/DIAGS.md: a
    // multicast packet reaches a switch before its MFT carries the group, at a host port or,
    // forwarded by the other switch, at an inter-switch port); once `-k` cleared the error
    // counters (`-K` the data counters), the idle fabric has no error; then a cable is pulled
    // and plugged back.
    let (_, boot) = errors(d, &sock, &[]);
    for (node, lines) in &boot {
        for l in lines {
            let relay_only = l.matches('[').count() == 1 && l.contains("[PortRcvSwitchRelayErrors");
            assert!(relay_only, "{who} {node}: {boot:#?}");
        }
    }
    errors(d, &sock, &["-k", "-K"]);
    assert_eq!(
        errors(d, &sock, &[]),
        (CLEAN.to_string(), BTreeMap::new()),
        "{who}"
    );
    server.unlink_switch1(5);
    server.relink_switch1(5);
    let active = wait_for(60, || {
        links(&diag(d, &sock, "Hca3", &["iblinkinfo"])).active == cables()
    });
    assert!(active, "{who}: Switch1[5] not Active again");
    let (_, bad) = errors(d, &sock, &[]);
    for sw in ["Switch1", "Switch2"] {
        let lines = bad.get(sw).cloned().unwrap_or_default();
        let port5 = lines.iter().find(|l| l.contains(" port 5: "));
        assert!(
            port5.is_some_and(|l| l.contains("[LinkDownedCounter == 1]")),
            "{who} {sw}: {bad:#?}"
        );
    }
    let (_, data) = errors(d, &sock, &["--data"]);
    assert!(
        data["Switch1"]
            .iter()
            .any(|l| l.contains("[PortXmitPkts == ")),
        "{data:#?}"
    );
    errors(d, &sock, &["-k", "-K"]);
    assert_eq!(
        errors(d, &sock, &[]),
        (CLEAN.to_string(), BTreeMap::new()),
        "{who}"
    );

    // A class the switch has no agent for: status 0x000C, not a timeout.
    let s1 = l.lids["Switch1"].to_string();
    let (code, _, err) = run_any(d, &sock, &["ibccquery", "-d", "CongestionInfo", &s1]);
    assert_ne!(code, Some(0), "{who}: {err}");
    assert!(
        err.contains("MAD completed with error status 0xc"),
        "{who}: {err}"
    );
    assert!(!err.contains("timeout"), "{who}: {err}");
}

const TOOLS: &[&str] = &[
    "ibsim-run",
    "opensm",
    "iblinkinfo",
    "ibswitches",
    "ibhosts",
    "dump_lfts",
    "ibtracert",
    "ibqueryerrors",
    "ibccquery",
];

#[test]
fn diags_read_our_fabric_under_opensm() {
    if !all_installed(TOOLS) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (net, _) = net_2sw2path4hca(d);
    let parts = partitions(d);
    let mut server = Server::start(d, "diags-osm", &["--topology", &net], &parts);
    let osm = OpenSm::start(d, &server, "Hca1", &parts);
    assert!(
        osm.wait_count("SUBNET UP", 1, 30),
        "{}",
        osm.explain(&server)
    );
    server.all_pings_answered(4, 60);
    check(d, &mut server, "OpenSM");
    assert!(osm.errors().is_empty(), "{}", osm.explain(&server));
}

#[test]
fn diags_read_our_fabric_under_our_sm() {
    if !all_installed(TOOLS) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (net, _) = net_2sw2path4hca(d);
    let parts = partitions(d);
    let mut server = Server::start_sm(d, "diags-ours", &["--topology", &net], &parts, "ours");
    server.all_pings_answered(4, 60);
    check(d, &mut server, "our SM");
}

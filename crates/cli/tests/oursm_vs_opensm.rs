//! Our SM against the real OpenSM on the same fabric: `ipoib ibsim-server` on a topology, once with
//! `--sm ours` (our SM and SA on the first host configure it by SMPs) and once with `--sm none` and
//! `ibsim-run opensm` on that same host. In each, infiniband-diags under `ibsim-run` read the
//! subnet from another host: `ibnetdiscover`, `saquery` (NodeRecords, by LID too, PortInfoRecords,
//! LinkRecords, groups and members, the SM's port, SLtoVLMappingTable and VLArbitrationTable
//! records of every node and cabled switch port, SwitchInfoRecords and MulticastForwardingTable
//! records (all, by LID, by LID/position/block) of every switch,
//! P_KeyTableRecords of every cabled switch port,
//! PathRecords between the asking host and every switch), `smpquery` (NodeInfo, PortInfo, SwitchInfo,
//! P_Key tables of every node and cabled port) and `sminfo` (by directed route too). What an SM is free to choose (LID
//! numbering, timestamps, the SM's activity counter, ...) is normalised, the rest must be equal;
//! every field still ignored is listed, with its reason, in docs/OPENSM-NOTES.md "Our SM against
//! OpenSM". Then, with our SM alone, every host pings every other, and pulling the cable Switch1
//! routes through (console `Unlink`) makes our SM sweep again on trap 128 (IBA 1 §14.2.5.1) and
//! route over the other cable; `ReLink` brings both ends back to Active. Skipped, with a message,
//! where ibsim-run, opensm or infiniband-diags are not installed. The processes are those of
//! `osm/mod.rs`, stopped on every exit path.

mod osm;

use osm::*;
use std::collections::BTreeMap;
use std::path::Path;

/// What the diags printed, per question, normalised: query name -> lines.
type Snapshot = BTreeMap<String, Vec<String>>;

/// LID -> node name, from ibnetdiscover's `# lid N` comments: a switch header `Switch\t8
/// "S-<guid>"\t\t# "Switch1" base port 0 lid 2 lmc 0`, a CA port line `[1](<guid>) ... # lid 3
/// lmc 0 "Switch1" lid 2 4xSDR`.
fn lid_names(discovered: &str) -> BTreeMap<u16, String> {
    let mut names = BTreeMap::new();
    let mut ca: Option<String> = None;
    for l in discovered.lines() {
        let desc = l.split('"').nth(3).map(str::to_string);
        if l.starts_with("Switch") {
            let lid = l.split(" lid ").nth(1).and_then(|r| r.split(' ').next());
            if let (Some(lid), Some(d)) = (lid.and_then(|x| x.parse().ok()), desc) {
                names.insert(lid, d);
            }
        } else if l.starts_with("Ca") {
            ca = desc;
        } else if let Some(rest) = l.strip_prefix('[') {
            if let Some(c) = &ca {
                let lid = l.split("# lid ").nth(1).and_then(|r| r.split(' ').next());
                let port = rest.split(']').next().unwrap_or("?");
                if let Some(lid) = lid.and_then(|x| x.parse().ok()) {
                    names.insert(lid, format!("{c}[{port}]"));
                }
            }
        } else if l.trim().is_empty() {
            ca = None;
        }
    }
    names
}

/// Keys whose values are LIDs (smpquery and saquery spellings).
const LID_KEYS: &[&str] = &[
    "Lid",
    "SMLid",
    "lid",
    "base_lid",
    "master_sm_base_lid",
    "EndportLid",
    "EndPortLid",
    "FromLID",
    "ToLID",
    "LID",
    "RID.LID",
    "slid",
    "dlid",
];

/// Fields dropped before comparing, as (question prefix, key): what an SM chooses freely
/// (docs/OPENSM-NOTES.md "Our SM against OpenSM" gives the reason for each): SMInfo's ActCount
/// counts the SMPs each SM sent; saquery prints SWIR's MulticastFDBTop only when the SA's
/// ClassPortInfo announces it, which OpenSM's does and ours not. (LinearFDBTop, once dropped, is
/// the highest LID routed with either SM since an LFT block no longer moves it.)
const IGNORED: &[(&str, &str)] = &[
    ("saquery SMIR", "ActCount"),
    ("saquery SWIR", "MulticastFDBTop"),
];

/// Fields dropped from the answers about a switch, as (question prefix, key): LocalPort is the
/// port the SMP entered by, which the LFTs choose where two cables join the switches; port 0's
/// PortState is the SM's choice (OpenSM leaves it Init; a switch's first PortInfoRecord is port
/// 0's).
const IGNORED_SWITCH: &[(&str, &str)] = &[
    ("", "LocalPort"),
    ("smpquery portinfo", "LinkState"),
    ("saquery PIR", "LinkState"),
];

/// `out` normalised: `# ...` comments and blank lines dropped, `Key:....value` and
/// `\t\tkey....value` lines as `key = value` with LIDs replaced by node names, free fields
/// dropped, `lid N` inside other lines (ibnetdiscover) named too.
fn normalise(query: &str, out: &str, names: &BTreeMap<u16, String>) -> Vec<String> {
    // `smpquery portinfo sw0 1`, `saquery NR Switch1`: about a switch (CA names carry a port).
    let switch = query
        .split(' ')
        .nth(2)
        .is_some_and(|n| !n.contains('[') && names.values().any(|v| v == n));
    let ignored = |k: &str| {
        IGNORED.iter().any(|(q, i)| query.starts_with(q) && *i == k)
            || (switch
                && IGNORED_SWITCH
                    .iter()
                    .any(|(q, i)| query.starts_with(q) && *i == k))
    };
    let sa = query.starts_with("saquery");
    let name = |v: &str| -> String {
        let n = v
            .strip_prefix("0x")
            .map(|h| u16::from_str_radix(h, 16).ok())
            .unwrap_or_else(|| v.parse().ok());
        match n.and_then(|n| names.get(&n)) {
            Some(s) => format!("<{s}>"),
            None => v.to_string(),
        }
    };
    let mut lines = Vec::new();
    let mut records = 0;
    for l in out.lines() {
        let t = l.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        // saquery: the first record only; under ibsim OpenSM's GetTableResp says PayloadLength
        // 0 and the rest of the MAD is what its buffer held (docs/OPENSM-NOTES.md "Subnet
        // records (SA)"). A record starts at `... dump:` in the first column (`\tPortInfo
        // dump:` inside a PortInfoRecord is part of it).
        if sa && t.ends_with("dump:") && !l.starts_with(char::is_whitespace) {
            records += 1;
        }
        if records > 1 {
            break;
        }
        // saquery's capability names under CapMask (the mask itself is compared or ignored).
        if sa && t.starts_with("Is") && !t.contains('.') {
            continue;
        }
        let kv = t.find("..").map(|i| {
            let k = t[..i].trim_end_matches(':').trim();
            (k, t[i..].trim_start_matches('.').trim())
        });
        match kv {
            Some((k, _)) if ignored(k) => {}
            Some((k, v)) if LID_KEYS.contains(&k) => lines.push(format!("{k} = {}", name(v))),
            Some((k, v)) => lines.push(format!("{k} = {v}")),
            None => {
                // ibnetdiscover's `# lid 3 lmc 0` comments; sminfo's `sm lid 1 sm guid ...,
                // activity count 69 ...` (the count of SMPs the SM sent: its own).
                let mut words: Vec<String> = t.split_whitespace().map(str::to_string).collect();
                for i in 1..words.len() {
                    if words[i - 1] == "lid" {
                        words[i] = name(words[i].trim_end_matches(','));
                    } else if words[i - 1] == "count" && query.starts_with("sminfo") {
                        words[i] = "<n>".into();
                    }
                }
                lines.push(words.join(" "));
            }
        }
    }
    lines
}

/// Which SM configures the fabric.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Sm {
    Ours,
    OpenSm,
}

/// A running subnet managed by `sm`, every host having answered every ping.
struct Managed {
    server: Server,
    _osm: Option<OpenSm>,
    /// Host 0, where the SM runs.
    sm_host: String,
}

fn managed(d: &Path, test: &str, topology: &[&str], sm: Sm) -> Managed {
    let parts = partitions(d);
    let name = format!("{test}-{sm:?}");
    let arg = if sm == Sm::Ours { "ours" } else { "none" };
    let mut server = Server::start_sm(d, &name, topology, &parts, arg);
    let sm_host = server.lines[0]
        .split_whitespace()
        .nth(1)
        .expect("host 0's name")
        .to_string();
    let osm = (sm == Sm::OpenSm).then(|| {
        let osm = OpenSm::start(d, &server, &sm_host, &parts);
        assert!(
            osm.wait_count("SUBNET UP", 1, 30),
            "no SUBNET UP:\n{}",
            osm.explain(&server)
        );
        osm
    });
    let hosts = server
        .lines
        .iter()
        .filter(|l| l.starts_with("host "))
        .count();
    let all = hosts * (hosts - 1) * 2;
    let (r, round) = server.ping_round(60);
    assert_eq!(
        r,
        Some(format!("pings: {all} of {all} answered")),
        "{sm:?}: {round:#?}"
    );
    Managed {
        server,
        _osm: osm,
        sm_host,
    }
}

/// Every question asked of `m`'s subnet from `host`, normalised.
fn snapshot(d: &Path, m: &Managed, host: &str) -> Snapshot {
    let sock = &m.server.sock;
    let run = |args: &[&str]| diag(d, sock, host, args);
    let discovered = run(&["ibnetdiscover"]);
    let names = lid_names(&discovered);
    let mut s = Snapshot::new();
    let mut put = |key: String, out: &str| {
        let lines = normalise(&key, out, &names);
        s.insert(key, lines);
    };
    put("ibnetdiscover".into(), &discovered);
    for q in [
        &[][..],
        &["-g"],
        &["-s"],
        &["LR"],
        &["--smkey", "1", "-m"],
        &["SMIR"],
        &["MFTR"],
    ] {
        put(
            format!("saquery {}", q.join(" ")),
            &run(&[&["saquery"], q].concat()),
        );
    }
    let topo_nodes: Vec<(u16, String)> = names.iter().map(|(&l, n)| (l, n.clone())).collect();
    let host_lid = names
        .iter()
        .find(|(_, n)| n.starts_with(&format!("{host}[")))
        .map(|(l, _)| l.to_string())
        .expect("the asking host's LID");
    for (lid, node) in &topo_nodes {
        let l = lid.to_string();
        let switch = !node.contains('[');
        put(format!("saquery NR {node}"), &run(&["saquery", "NR", &l]));
        put(format!("saquery PIR {node}"), &run(&["saquery", "PIR", &l]));
        put(
            format!("saquery SL2VL {node}"),
            &run(&["saquery", "SL2VL", &l]),
        );
        put(
            format!("saquery VLAR {node}"),
            &run(&["saquery", "VLAR", &l]),
        );
        if switch {
            put(
                format!("saquery SWIR {node}"),
                &run(&["saquery", "SWIR", &l]),
            );
            // The switch's MFT: block 0 position 0 first, then that block alone.
            put(
                format!("saquery MFTR {node}"),
                &run(&["saquery", "MFTR", &l]),
            );
            put(
                format!("saquery MFTR {node} 0 0"),
                &run(&["saquery", "MFTR", &format!("{l}/0/0")]),
            );
        }
        put(
            format!("smpquery nodeinfo {node}"),
            &run(&["smpquery", "nodeinfo", &l]),
        );
        let ports: Vec<String> = if switch {
            put(
                format!("smpquery switchinfo {node}"),
                &run(&["smpquery", "switchinfo", &l]),
            );
            let cabled = discovered
                .split("\n\n")
                .find(|b| b.contains(&format!("\"{node}\"")) && b.contains("Switch"))
                .map(|b| {
                    b.lines()
                        .filter_map(|x| x.strip_prefix('['))
                        .filter_map(|x| x.split(']').next())
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default();
            [vec!["0".to_string()], cabled].concat()
        } else {
            vec![node
                .split('[')
                .nth(1)
                .unwrap_or("1]")
                .trim_end_matches(']')
                .to_string()]
        };
        for p in &ports {
            put(
                format!("smpquery portinfo {node} {p}"),
                &run(&["smpquery", "portinfo", &l, p]),
            );
            put(
                format!("smpquery pkeys {node} {p}"),
                &run(&["smpquery", "pkeys", &l, p]),
            );
            if switch {
                // The tables into and out of every cabled switch port (the first record: input
                // port p to port 0; port p's block 1).
                let at = format!("{l}/{p}");
                put(
                    format!("saquery SL2VL {node} {p}"),
                    &run(&["saquery", "SL2VL", &at]),
                );
                put(
                    format!("saquery VLAR {node} {p}"),
                    &run(&["saquery", "VLAR", &at]),
                );
            }
            if switch {
                // Every cabled switch port's table, those between switches too.
                put(
                    format!("saquery PKTR {node} {p}"),
                    &run(&["saquery", "--smkey", "1", "PKTR", &format!("{l}/{p}")]),
                );
            }
        }
        if switch {
            // A switch's port 0 is an end port: paths to it and from it.
            put(
                format!("saquery PR {node} from {host}"),
                &run(&["saquery", "PR", "--slid", &host_lid, "--dlid", &l]),
            );
            put(
                format!("saquery PR {node} to {host}"),
                &run(&["saquery", "PR", "--slid", &l, "--dlid", &host_lid]),
            );
        }
    }
    let sm_lid = names
        .iter()
        .find(|(_, n)| n.starts_with(&format!("{}[", m.sm_host)))
        .map(|(l, _)| l.to_string())
        .expect("the SM host's LID");
    put("sminfo".into(), &run(&["sminfo", &sm_lid]));
    if let Some(path) = dr_path(&discovered, host, &m.sm_host) {
        put("sminfo -D".into(), &run(&["sminfo", "-D", &path]));
    }
    s
}

/// The directed route (`0,<port>,<switch port>`) from CA `from` to CA `to` when both are cabled
/// to one switch, from ibnetdiscover's CA blocks: a header `Ca\t1 "H-<guid>"\t\t# "h0"`, a port
/// line `[1](<guid>) \t"S-<guid>"[3]\t\t# lid 3 lmc 0 "sw0" lid 2 4xSDR`.
fn dr_path(discovered: &str, from: &str, to: &str) -> Option<String> {
    let mut ca = None;
    let mut ends = BTreeMap::new();
    for l in discovered.lines() {
        let parts: Vec<&str> = l.split('"').collect();
        if l.starts_with("Ca") {
            ca = parts.get(3).map(|d| d.to_string());
        } else if let (Some(c), true) = (&ca, l.starts_with('[') && parts.len() >= 4) {
            let num = |x: &str| {
                x.trim_start_matches('[')
                    .split(']')
                    .next()
                    .map(str::to_string)
            };
            ends.insert(
                c.clone(),
                (num(parts[0])?, num(parts[2])?, parts[3].to_string()),
            );
        }
    }
    let (a, b) = (ends.get(from)?, ends.get(to)?);
    (a.2 == b.2).then(|| format!("0,{},{}", a.0, b.1))
}

/// Asserts the two snapshots equal, showing every question whose answers differ.
fn assert_same(ours: &Snapshot, osm: &Snapshot) {
    let mut diffs = Vec::new();
    for (q, a) in ours {
        let Some(b) = osm.get(q) else {
            diffs.push(format!("{q}: only with our SM"));
            continue;
        };
        if a != b {
            let only_a: Vec<&String> = a.iter().filter(|x| !b.contains(x)).collect();
            let only_b: Vec<&String> = b.iter().filter(|x| !a.contains(x)).collect();
            diffs.push(format!("{q}:\n  ours:   {only_a:?}\n  OpenSM: {only_b:?}"));
        }
    }
    for q in osm.keys().filter(|q| !ours.contains_key(*q)) {
        diffs.push(format!("{q}: only with OpenSM"));
    }
    assert!(diffs.is_empty(), "{}", diffs.join("\n"));
}

fn compare(test: &str, topology: &[&str], from: &str) {
    let ours = {
        let dir = tempfile::tempdir().unwrap();
        let m = managed(dir.path(), test, topology, Sm::Ours);
        snapshot(dir.path(), &m, from)
    };
    let osm = {
        let dir = tempfile::tempdir().unwrap();
        let m = managed(dir.path(), test, topology, Sm::OpenSm);
        snapshot(dir.path(), &m, from)
    };
    // Every question got an answer with content, and both SMs were asked the same ones.
    for (q, a) in ours.iter().chain(&osm) {
        assert!(!a.is_empty(), "{q}: nothing");
    }
    assert!(ours.len() >= 20, "{:?}", ours.keys());
    assert_same(&ours, &osm);
}

const DIAGS: &[&str] = &[
    "ibsim-run",
    "opensm",
    "ibnetdiscover",
    "saquery",
    "smpquery",
    "sminfo",
];

#[test]
fn our_sm_answers_as_opensm_on_one_switch() {
    if !all_installed(DIAGS) {
        return;
    }
    compare(
        "sm1sw",
        &["--topology", "single-switch", "--hosts", "3"],
        "h1",
    );
}

#[test]
fn our_sm_answers_as_opensm_on_two_switches() {
    if !all_installed(DIAGS) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (net, _) = net_2sw2path4hca(dir.path());
    compare("sm2sw", &["--topology", &net], "Hca3");
}

/// Switch1's port `port` by smpquery over the directed route 0,1 from Hca3: `LinkState` and
/// `PhysLinkState`.
fn switch1_port_state(d: &Path, sock: &str, port: u8) -> (String, String) {
    let out = diag(
        d,
        sock,
        "Hca3",
        &["smpquery", "-D", "portinfo", "0,1", &port.to_string()],
    );
    let get = |k: &str| values_colon(&out, k).unwrap_or_else(|| panic!("no {k} in\n{out}"));
    (get("LinkState"), get("PhysLinkState"))
}

/// The value of `key` in smpquery's `Key:.....value` lines.
fn values_colon(out: &str, key: &str) -> Option<String> {
    out.lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))
        .map(|v| v.trim_start_matches('.').trim().to_string())
}

#[test]
fn our_sm_reroutes_around_a_pulled_cable() {
    if !all_installed(&["ibsim-run", "ibroute", "smpquery"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (net, topo) = net_2sw2path4hca(d);
    let mut m = managed(d, "smunplug", &["--topology", &net], Sm::Ours);
    let sock = m.server.sock.clone();
    let used = out_port(d, &sock, "Hca2");
    assert!(used == 3 || used == 5, "Hca2 through port {used}");
    let other = 8 - used;
    assert_eq!(
        switch1_port_state(d, &sock, used),
        ("Active".into(), "LinkUp".into())
    );

    // Pulled: both ends Down; Switch1's trap 128 reaches our SM, which sweeps and routes Hca2
    // through the other cable; every host pings every other again.
    m.server.unlink_switch1(used);
    assert!(
        wait_for(30, || out_port(d, &sock, "Hca2") == other),
        "Hca2 still through port {used}: {}",
        m.server.stderr()
    );
    m.server.send("pingall");
    let (r, round) = m.server.ping_round(60);
    assert_eq!(r.as_deref(), Some("pings: 24 of 24 answered"), "{round:#?}");
    let pulled = links_at(&topo, "Switch1", used);
    let discovered = diag(d, &sock, "Hca3", &["ibnetdiscover"]);
    assert_eq!(
        Fabric::from_ibnetdiscover(&discovered),
        Fabric::of_topology(&topo, &pulled),
        "{discovered}"
    );

    // Plugged back: Init/LinkUp, another trap and sweep, both ends Active again and the whole
    // topology discovered.
    m.server.relink_switch1(used);
    let active = ("Active".to_string(), "LinkUp".to_string());
    assert!(
        wait_for(30, || switch1_port_state(d, &sock, used) == active),
        "Switch1 port {used}: {:?}",
        switch1_port_state(d, &sock, used)
    );
    let discovered = diag(d, &sock, "Hca3", &["ibnetdiscover"]);
    assert_eq!(
        Fabric::from_ibnetdiscover(&discovered),
        Fabric::of_topology(&topo, &[]),
        "{discovered}"
    );
    m.server.send("pingall");
    let (r, round) = m.server.ping_round(60);
    assert_eq!(r.as_deref(), Some("pings: 24 of 24 answered"), "{round:#?}");
}

//! `ipoib demo` and `ipoib sim` on net files with multi-port HCAs, run as a program: ibsim's own
//! `net` example (Hca2 cabled only on its port 2) runs both hosts and `--hosts` must match them
//! with a clear message; `net.2sw2path4hca2port` shows every cabled port with its own LID and GID;
//! a host with its two ports on different switches is reachable. The net files are shared with
//! the other crates' tests (`ipoib_fabric::testing::nets`; ibsim-utils' examples among them, so
//! the tests do not need the package).

mod common;

use common::ipoib_output;
use ipoib_fabric::testing::nets::{B2B, DUAL_HOMED, ISO, NET, NET_2PORT};
use serde_json::Value as Json;
use std::collections::BTreeSet;
use std::path::Path;
use std::process::Output;

fn out(o: &Output) -> String {
    format!(
        "{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn net_file(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.to_str().unwrap().to_string()
}

// ibsim's `net` has two hosts (Hca2 cabled on its port 2 only): both run, and `--hosts` must say
// how many there are (it once ran "1 host", refused `--hosts 1` and accepted `--hosts 2`).
#[test]
fn net_example_runs_both_hosts_and_hosts_must_match() {
    let dir = tempfile::tempdir().unwrap();
    let net = net_file(dir.path(), "net", NET);
    for hosts in [None, Some("2")] {
        let mut args = vec!["demo", "--topology", &net];
        if let Some(h) = hosts {
            args.extend(["--hosts", h]);
        }
        let o = ipoib_output(dir.path(), &args);
        let t = out(&o);
        assert!(o.status.success(), "{args:?}: {t}");
        for want in [
            "ipoib demo: 2 hosts",
            // Hca2 runs on its port 2, the one cabled.
            "Hca2  2     3    0x000048  10.0.0.2/8",
            "HCA ports (each port the SM reaches has its own LID and GID; IPoIB runs on the first one)",
            "Hca2  1     -    fe80::10:4  Down (no cable)  -",
            "Hca2  2     3    fe80::10:5  Active           yes",
            "IPv4 ping, all 2 pairs: 2 answered",
            "Result: OK (2/2 hosts up",
        ] {
            assert!(t.contains(want), "{args:?}: missing {want:?} in:\n{t}");
        }
    }
    for cmd in ["demo", "sim"] {
        let o = ipoib_output(dir.path(), &[cmd, "--topology", &net, "--hosts", "1"]);
        assert_eq!(o.status.code(), Some(2), "{}", out(&o));
        let want = "--hosts 1, but ";
        let t = out(&o);
        assert!(t.contains(want), "{t}");
        assert!(
            t.contains("has 2 hosts (channel adapters with a cabled port: Hca1, Hca2)"),
            "{t}"
        );
        assert!(t.contains("leave --hosts out, or give --hosts 2"), "{t}");
    }
    let o = ipoib_output(dir.path(), &["sim", "--topology", &net]);
    let t = out(&o);
    assert!(o.status.success(), "{t}");
    assert!(t.contains("subnet: 2 hosts"), "{t}");
    assert!(
        t.contains("hosts with a LID: 2/2; joined the broadcast group: 2/2"),
        "{t}"
    );
    assert!(t.contains("CA ports with a LID: 2/2 cabled"), "{t}");
}

// IBA 1 §4.1.1: each CA port its own LID and port GUID (so its own GID), the node GUID shared.
#[test]
fn two_port_hcas_show_every_port_with_its_lid_and_gid() {
    let dir = tempfile::tempdir().unwrap();
    let net = net_file(dir.path(), "net.2sw2path4hca2port", NET_2PORT);
    let o = ipoib_output(dir.path(), &["demo", "--topology", &net]);
    let t = out(&o);
    assert!(o.status.success(), "{t}");
    for want in [
        "Hca1  1     1    fe80::10:1  Active  yes",
        "Hca1  2     2    fe80::10:2  Active  -",
        "Hca2  1     5    fe80::10:4  Active  yes",
        "Hca2  2     6    fe80::10:5  Active  -",
        "Result: OK (2/2 hosts up; 2/2 IPv4 and 2/2 IPv6 ping pairs answered",
    ] {
        assert!(t.contains(want), "missing {want:?} in:\n{t}");
    }
    let o = ipoib_output(dir.path(), &["demo", "--topology", &net, "--json"]);
    assert!(o.status.success(), "{}", out(&o));
    let j: Json = serde_json::from_slice(&o.stdout).expect("JSON");
    let mut lids = BTreeSet::new();
    let mut gids = BTreeSet::new();
    for h in j["host_list"].as_array().unwrap() {
        assert_eq!(h["port"], 1, "{h}");
        let ports = h["ports"].as_array().unwrap();
        assert_eq!(ports.len(), 2, "{h}");
        for p in ports {
            assert_eq!(
                (&p["state"], &p["cabled"]),
                (&Json::from("Active"), &Json::from(true))
            );
            assert_eq!(p["ipoib"], p["port"] == 1, "{p}");
            lids.insert(p["lid"].as_u64().unwrap());
            gids.insert(p["gid"].as_str().unwrap().to_string());
        }
    }
    assert_eq!(lids.len(), 4, "{lids:?}");
    assert!(!lids.contains(&0));
    let want: BTreeSet<String> = ["fe80::10:1", "fe80::10:2", "fe80::10:4", "fe80::10:5"]
        .map(String::from)
        .into();
    assert_eq!(gids, want, "port GUIDs as ibsim gives them");

    let o = ipoib_output(dir.path(), &["sim", "--topology", &net, "--json"]);
    assert!(o.status.success(), "{}", out(&o));
    let j: Json = serde_json::from_slice(&o.stdout).expect("JSON");
    assert_eq!(
        (&j["hosts"], &j["joined"]),
        (&Json::from(2), &Json::from(2))
    );
    assert_eq!(
        (&j["ca_ports"], &j["ca_ports_with_lid"]),
        (&Json::from(4), &Json::from(4))
    );
}

#[test]
fn dual_homed_host_is_reachable_and_an_uncabled_ca_is_no_host() {
    let dir = tempfile::tempdir().unwrap();
    // The dual-homed net and a CA with no cable at all.
    let dual = format!("{DUAL_HOMED}\nHca 1 \"Spare\"\n");
    let net = net_file(dir.path(), "dual.net", &dual);
    let o = ipoib_output(dir.path(), &["demo", "--topology", &net]);
    let t = out(&o);
    assert!(o.status.success(), "{t}");
    for want in [
        "ipoib demo: 3 hosts",
        "Dual  1     3    fe80::10:3  Active  yes",
        "Dual  2     4    fe80::10:4  Active  -",
        "IPv4 ping, all 6 pairs: 6 answered",
        "Result: OK (3/3 hosts up",
    ] {
        assert!(t.contains(want), "missing {want:?} in:\n{t}");
    }
    let o = ipoib_output(dir.path(), &["sim", "--topology", &net, "--hosts", "4"]);
    assert_eq!(o.status.code(), Some(2), "{}", out(&o));
    assert!(
        out(&o).contains("; not hosts, no port cabled: Spare"),
        "{}",
        out(&o)
    );
}

// The help says what happens with multi-port HCAs.
#[test]
fn help_explains_multi_port_hcas() {
    let dir = tempfile::tempdir().unwrap();
    for (cmd, want) in [
        ("demo", "IPoIB runs on a host's first port the SM reaches"),
        ("sim", "a host joins on its first port the SM reaches"),
    ] {
        let o = ipoib_output(dir.path(), &[cmd, "--help"]);
        // Wrapped or not, the words in order.
        let t = out(&o).split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(o.status.success(), "{t}");
        assert!(
            t.contains("every cabled port gets its own LID and GID"),
            "{t}"
        );
        assert!(t.contains(want), "{t}");
        assert!(t.contains("channel adapters with a cabled port"), "{t}");
    }
}

const BEHIND: &str = "reachable only through a channel adapter, which does not forward SMPs \
                      (IBA 1 §14.2.2)";

// IBA 1 §14.2.2: a CA does not forward directed-route SMPs. H2 runs on port 2, the port the SM
// reaches, and comes up; its port 1 and S2 get no LID and both commands say so.
#[test]
fn ports_behind_a_ca_are_named_and_the_host_runs_on_its_reached_port() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("iso.net"), ISO).unwrap();
    let o = ipoib_output(dir.path(), &["demo", "--topology", "iso.net"]);
    let t = out(&o);
    assert!(o.status.success(), "{t}");
    assert!(t.contains(BEHIND), "{t}");
    assert!(t.contains("stay down: switch S2, H2 port 1"), "{t}");
    let h2 = t
        .lines()
        .find(|l| l.trim_start().starts_with("H2    2"))
        .unwrap_or("");
    assert!(h2.contains("up"), "H2 on port 2 with carrier:\n{t}");
    let o = ipoib_output(dir.path(), &["sim", "--topology", "iso.net", "--json"]);
    let t = out(&o);
    assert!(o.status.success(), "{t}");
    assert!(t.contains(BEHIND), "{t}");
}

// H3, back to back with H2's port 1, is not reached: no LID, and the reason is given.
#[test]
fn ca_back_to_back_to_another_host_is_named_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("b2b.net"), B2B).unwrap();
    for cmd in ["demo", "sim"] {
        let o = ipoib_output(dir.path(), &[cmd, "--topology", "b2b.net"]);
        let t = out(&o);
        assert_eq!(o.status.code(), Some(1), "{cmd}: {t}");
        assert!(
            t.contains(&format!("H3 (LID 0): {BEHIND}: it got no LID")),
            "{cmd}: {t}"
        );
        assert!(t.contains("stay down: H2 port 1, H3 port 1"), "{cmd}: {t}");
        assert!(!t.contains("BadDlid"), "{cmd}: {t}");
    }
}

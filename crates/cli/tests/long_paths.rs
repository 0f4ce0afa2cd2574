//! Long chains of switches, as `ipoib sim` and `ipoib demo` see them. On a chain of 64 switches
//! `demo`'s pings failed with no reason and `sim` said every host joined. The limit is the
//! directed route's 63 hops (IBA 1 §14.2.2): the subnet manager cannot reach, and so does not
//! configure, a node further from its port, as OpenSM does not (docs/OPENSM-NOTES.md "Directed
//! routes"). Both commands now say which nodes were out of reach and why; a route longer than 64
//! links between two reachable hosts (the SM in the middle) works.

use serde_json::Value as Json;
use std::process::{Command, Output};

fn ipoib(dir: &std::path::Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ipoib"))
        .current_dir(dir)
        .args(args)
        .output()
        .expect("run ipoib")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// An ibsim net file: `n` switches `S0`.. in a line (port 2 to the previous, 3 to the next), `HA`
/// on `S0` port 1, `HB` on the last switch's port 1, and, when `middle`, `HM` on the middle
/// switch's port 4. The first CA of the file runs the SM: `HM` when there is one, else `HA`.
fn chain(n: usize, middle: bool) -> String {
    let m = n / 2;
    let mut s = String::new();
    if middle {
        s += &format!("Hca 1 \"HM\"\n[1] \"S{m}\"[4]\n\n");
    }
    s += &format!(
        "Hca 1 \"HA\"\n[1] \"S0\"[1]\n\nHca 1 \"HB\"\n[1] \"S{}\"[1]\n\n",
        n - 1
    );
    for i in 0..n {
        s += &format!("Switch 4 \"S{i}\"\n");
        if i == 0 {
            s += "[1] \"HA\"[1]\n";
        }
        if i == n - 1 {
            s += "[1] \"HB\"[1]\n";
        }
        if middle && i == m {
            s += "[4] \"HM\"[1]\n";
        }
        if i > 0 {
            s += &format!("[2] \"S{}\"[3]\n", i - 1);
        }
        if i + 1 < n {
            s += &format!("[3] \"S{}\"[2]\n", i + 1);
        }
        s += "\n";
    }
    s
}

fn write_chain(dir: &tempfile::TempDir, n: usize, middle: bool) -> String {
    let p = dir.path().join(format!("chain{n}-{middle}.net"));
    std::fs::write(&p, chain(n, middle)).unwrap();
    p.to_str().unwrap().to_string()
}

// IBA 1 §14.2.2 (directed routes, at most 63 hops); OpenSM "ERR 0F08: DR path with hop count 64
// couldn't be extended".
#[test]
fn sim_names_the_hosts_beyond_the_directed_route_limit() {
    let dir = tempfile::tempdir().unwrap();
    // 62 switches: HB is 63 cables from the SM's port, within reach.
    let net = write_chain(&dir, 62, false);
    let o = ipoib(dir.path(), &["sim", "--topology", &net, "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let j: Json = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        (j["hosts_with_lid"].as_u64(), j["joined"].as_u64()),
        (Some(2), Some(2))
    );
    // 64 switches: S63 (64 hops) and HB (65) are out of reach.
    let net = write_chain(&dir, 64, false);
    let o = ipoib(
        dir.path(),
        &["sim", "--topology", &net, "--deadline", "2", "--json"],
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let j: Json = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        (j["hosts_with_lid"].as_u64(), j["joined"].as_u64()),
        (Some(1), Some(1))
    );
    let e = stderr(&o);
    assert!(
        e.contains(
            "warning: the subnet manager cannot reach 2 node(s): they are more than 63 hops"
        ) && e.contains("HB (65 hops), S63 (64 hops)"),
        "{e}"
    );
    assert!(
        e.contains(
            "HB (LID 0): 65 hops from the SM's port, and the subnet manager reaches 63 at most"
        ),
        "{e}"
    );
    assert!(j["not_joined"][0].as_str().unwrap().contains("65 hops"));
}

#[test]
fn demo_says_why_a_far_host_has_no_carrier() {
    let dir = tempfile::tempdir().unwrap();
    let net = write_chain(&dir, 64, false);
    let o = ipoib(dir.path(), &["demo", "--topology", &net, "--json"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let j: Json = serde_json::from_slice(&o.stdout).unwrap();
    let failures: Vec<&str> = j["failures"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Json::as_str)
        .collect();
    assert!(
        failures
            .iter()
            .any(|f| f.starts_with("HB (LID 0): 65 hops from the SM's port")),
        "{failures:?}"
    );
    assert!(
        failures
            .iter()
            .any(|f| f.contains("cannot reach 2 node(s)")),
        "{failures:?}"
    );
}

// IBA 1 §7.7: LID routes have no hop limit. With the SM in the middle of 100 switches both ends are
// within reach, and the 101-link route between them carries pings (the SA's route walk used to
// stop at 64 links, so its PathRecord query found nothing).
#[test]
fn demo_pings_across_a_route_of_101_links() {
    let dir = tempfile::tempdir().unwrap();
    let net = write_chain(&dir, 100, true);
    let o = ipoib(dir.path(), &["demo", "--topology", &net, "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let j: Json = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(j["carrier"], 3);
    assert!(j["failures"].as_array().unwrap().is_empty());
}

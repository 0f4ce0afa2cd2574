//! `ipoib demo` on bigger subnets, as a person runs it: stopped with Ctrl-C (SIGINT) or `kill`
//! (SIGTERM) it prints what it found so far and exits 128 + the signal, with a readable capture;
//! a progress line shows on a terminal (checked under `script`, which gives the program one) and,
//! asked for, as plain lines in a log; beyond 505 hosts the hosts do not announce themselves with
//! a gratuitous ARP, whose cost is the square of the hosts.

use ipoib_wire::pcap::CaptureReader;
use serde_json::Value as Json;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

fn ipoib() -> Command {
    Command::new(env!("CARGO_BIN_EXE_ipoib"))
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Starts a demo of `hosts` hosts with a progress line a second on standard error, waits for
/// its first progress line (the run is under way, its handlers installed), sends `signal` and
/// waits for the end: (exit status, standard output, standard error).
fn interrupted_run(dir: &Path, hosts: &str, json: bool, signal: &str) -> (Option<i32>, String) {
    let mut args = vec![
        "demo",
        "--hosts",
        hosts,
        "--topology",
        "fat-tree",
        "--progress",
        "always",
        "--pcap",
        "x.pcap",
    ];
    if json {
        args.push("--json");
    }
    let mut child: Child = ipoib()
        .current_dir(dir)
        .args(&args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run ipoib");
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut first = String::new();
    err.read_line(&mut first).unwrap();
    assert!(
        first.starts_with("ipoib demo: bring-up: "),
        "first progress line: {first:?}"
    );
    let kill = Command::new("kill")
        .args([signal, &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(kill.success());
    let mut out = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    let mut rest = String::new();
    err.read_to_string(&mut rest).unwrap();
    let status = child.wait().unwrap();
    assert!(!rest.contains("panicked"), "{rest}");
    (status.code(), out)
}

/// Every record of the capture reads back (none is cut).
fn capture_records(path: &Path) -> usize {
    let file = std::fs::File::open(path).expect("the capture so far");
    CaptureReader::read_all(file)
        .expect("a pcap whose records all read")
        .len()
}

// Ctrl-C: the partial report (hosts, what ran, what did not), exit status 130, the capture so
// far readable to its last record.
#[test]
fn sigint_stops_the_run_with_a_partial_report() {
    let dir = tempfile::tempdir().unwrap();
    let (code, out) = interrupted_run(dir.path(), "2000", false, "-INT");
    assert_eq!(code, Some(130), "{out}");
    for want in [
        "ipoib demo: 2000 hosts (fat-tree), seed 1",
        "Subnet\n",
        "Hosts\n",
        // h0's row; its LID is 1 once the SM's SMPs reached it, 0 if interrupted before.
        "\n  h0    ",
        "Result: INTERRUPTED by SIGINT during ",
        ": a partial report, of what was known then",
        "Multicast: not run (interrupted before it)",
    ] {
        assert!(out.contains(want), "missing {want:?} in:\n{out}");
    }
    assert!(!out.contains("Result: OK"), "{out}");
    assert!(!out.contains("Result: FAILED"), "{out}");
    let packets = capture_records(&dir.path().join("x.pcap"));
    assert!(
        out.contains(&format!("Capture: {packets} packets written to x.pcap")),
        "{packets} packets in the file:\n{out}"
    );
}

// `kill` (SIGTERM) with --json: one JSON document that says so, exit status 143.
#[test]
fn sigterm_gives_a_partial_json_report() {
    let dir = tempfile::tempdir().unwrap();
    let (code, out) = interrupted_run(dir.path(), "1000", true, "-TERM");
    assert_eq!(code, Some(143), "{out}");
    let j: Json = serde_json::from_str(&out).expect("one JSON document");
    assert_eq!(j["ok"], false);
    assert_eq!(j["interrupted"]["signal"], "SIGTERM");
    let phase = j["interrupted"]["phase"].as_str().unwrap();
    assert!(
        [
            "bring-up",
            "ipv4-first",
            "ipv4-then",
            "ipv6-dad",
            "ipv6-first",
            "ipv6-then",
            "multicast"
        ]
        .contains(&phase),
        "{phase}"
    );
    assert_eq!(j["host_list"].as_array().unwrap().len(), 1000);
    assert_eq!(j["multicast"], Json::Null);
    let packets = capture_records(&dir.path().join("x.pcap"));
    assert_eq!(j["packets"].as_u64(), Some(packets as u64));
}

fn script() -> Option<PathBuf> {
    ["/usr/bin/script", "/bin/script"]
        .into_iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
}

// A terminal (`script` gives the program one): the progress line is redrawn in place with `\r`
// on standard error, and ended before the report.
#[test]
fn progress_line_on_a_terminal() {
    let Some(script) = script() else {
        eprintln!("skipping progress_line_on_a_terminal: `script` (util-linux) is not installed");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let cmd = format!(
        "'{}' demo --hosts 40 --topology fat-tree --progress always --pcap x.pcap",
        env!("CARGO_BIN_EXE_ipoib")
    );
    let o: Output = Command::new(script)
        .current_dir(dir.path())
        .args(["-qec", &cmd, "/dev/null"])
        .stdin(Stdio::null())
        .output()
        .expect("run script");
    let t = text(&o.stdout);
    assert!(o.status.success(), "{t}\n{}", text(&o.stderr));
    assert!(t.contains("\ripoib demo: bring-up: "), "{t:?}");
    let report = t
        .find("ipoib demo: 40 hosts (fat-tree)")
        .expect("the report");
    let last_progress = t.rfind("\ripoib demo: ").unwrap();
    assert!(last_progress < report);
    assert!(
        t[last_progress..report].contains('\n'),
        "the report starts on a line of its own: {:?}",
        &t[last_progress..report]
    );
    assert!(t.contains("Result: OK (40/40 hosts up"), "{t}");
}

// Not a terminal: `--progress always` writes plain lines (for a log); by default nothing, as
// `ipoib sim` does.
#[test]
fn progress_lines_in_a_log_and_none_by_default() {
    let dir = tempfile::tempdir().unwrap();
    let run = |extra: &[&str]| {
        let o = ipoib()
            .current_dir(dir.path())
            .args(["demo", "--hosts", "40", "--topology", "fat-tree"])
            .args(extra)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", text(&o.stderr));
        text(&o.stderr)
    };
    let log = run(&["--progress", "always"]);
    assert!(
        log.starts_with("ipoib demo: bring-up: 0/40 hosts with carrier"),
        "{log}"
    );
    assert!(log.lines().all(|l| l.starts_with("ipoib demo: ")), "{log}");
    assert!(!log.contains('\r'), "{log:?}");
    assert_eq!(run(&[]), "", "no progress by default off a terminal");
    assert_eq!(run(&["--progress", "never"]), "");
}

// Beyond 505 hosts no gratuitous ARP at carrier up (BROADCAST_BUDGET): the only ARP requests
// are those of the pings, two per pair: the first ping's broadcast request, and the unicast probe
// that later confirms the entry its target learned from that request (RFC 4861 §7.3.3 as Linux
// applies it to ARP; the 4-host demo sends 4 gratuitous + 12 + 12). Before, 506 more.
#[test]
fn no_gratuitous_arp_storm_on_a_big_subnet() {
    let dir = tempfile::tempdir().unwrap();
    let o = ipoib()
        .current_dir(dir.path())
        .args(["demo", "--hosts", "506", "--topology", "fat-tree", "--json"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    let j: Json = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(j["ok"], true);
    assert_eq!(j["sent"]["gratuitous_arp"], false);
    let pairs = j["ping"]["ipv4"]["pairs"].as_array().unwrap().len();
    assert_eq!(pairs, 256);
    assert_eq!(j["sent"]["arp_requests"].as_u64(), Some(2 * pairs as u64));
}

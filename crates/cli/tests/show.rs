//! `ipoib show` against a control socket: nothing running (no socket, a stale one), and a test
//! server in this process that answers from a simulated two-host subnet, as a lab does.

use ipoib_fabric::hw::topology::Topology;
use ipoib_fabric::testing::{options, ping_pairs, up, v4};
use ipoib_runtime::control::{ControlServer, Request};
use ipoib_runtime::show::from_subnet;
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

fn ipoib(run_dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ipoib"))
        .env("IPOIB_RUN_DIR", run_dir)
        .arg("show")
        .args(args)
        .output()
        .expect("run ipoib")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn lab_socket(run: &Path) -> PathBuf {
    run.join("lab").join("control.sock")
}

#[test]
fn without_a_lab_it_says_so_and_exits_1() {
    let run = tempfile::tempdir().unwrap();
    let o = ipoib(run.path(), &["neigh"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(o.stdout.is_empty());
    let sock = lab_socket(run.path());
    assert_eq!(
        stderr(&o),
        format!(
            "no lab running: {} not found; start one with `sudo ipoib lab --hosts N &`\n",
            sock.display()
        )
    );
    let o = ipoib(run.path(), &["--dev", "ib0", "counters", "--json"]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        stderr(&o),
        format!(
            "no attach running for ib0: {} not found\n",
            run.path().join("attach-ib0.sock").display()
        )
    );
}

#[test]
fn a_stale_lab_socket_is_named_stale() {
    let run = tempfile::tempdir().unwrap();
    let sock = lab_socket(run.path());
    std::fs::create_dir(sock.parent().unwrap()).unwrap();
    drop(UnixListener::bind(&sock).unwrap());
    let o = ipoib(run.path(), &["paths"]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        stderr(&o),
        format!(
            "no lab running: {} is stale (nothing listens on it); `sudo ipoib lab down` removes \
             what the dead lab left\n",
            sock.display()
        )
    );
}

/// `--socket` naming a regular file or a directory: connect(2) refuses it as it refuses a stale
/// socket, but nothing ever listened there, so it is named as no socket.
#[test]
fn a_path_that_is_no_socket_is_named_so() {
    let run = tempfile::tempdir().unwrap();
    let file = run.path().join("notes.txt");
    std::fs::write(&file, "not a socket\n").unwrap();
    for path in [file.as_path(), run.path()] {
        let o = ipoib(run.path(), &["--socket", path.to_str().unwrap(), "neigh"]);
        assert_eq!(o.status.code(), Some(1));
        assert_eq!(
            stderr(&o),
            format!("nothing running: {} is not a socket\n", path.display())
        );
    }
}

/// `--dev ib0` without `--netns` while the only attach process of ib0 serves in a namespace's
/// directory (`ipoib attach --netns NS`): not found, and the namespace is named.
#[test]
fn a_device_in_a_namespace_is_hinted() {
    let run = tempfile::tempdir().unwrap();
    let dir = run.path().join("netns").join("h3");
    std::fs::create_dir_all(&dir).unwrap();
    let _listener = UnixListener::bind(dir.join("attach-ib0.sock")).unwrap();
    let o = ipoib(run.path(), &["--dev", "ib0", "neigh"]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        stderr(&o),
        format!(
            "no attach running for ib0: {} not found (one runs in namespace h3: add --netns h3)\n",
            run.path().join("attach-ib0.sock").display()
        )
    );
    // Another device gets no hint.
    let o = ipoib(run.path(), &["--dev", "ib1", "neigh"]);
    assert!(!stderr(&o).contains("namespace"), "{}", stderr(&o));
}

/// Two fabrics: `--fabric` alone names the way to pick one as it parses (`--fabric=PORT`; a
/// separate `--fabric PORT` would take PORT for the view), and their ports to pick from (it named
/// none).
#[test]
fn two_fabrics_name_the_way_to_pick_one() {
    let run = tempfile::tempdir().unwrap();
    let _a = UnixListener::bind(run.path().join("fabric-4791.sock")).unwrap();
    let _b = UnixListener::bind(run.path().join("fabric-4792.sock")).unwrap();
    let o = ipoib(run.path(), &["--fabric", "hosts"]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        stderr(&o),
        "ipoib show: 2 fabrics running (ports 4791, 4792): name one with --fabric=PORT\n"
    );
}

// `--fabric=0` picks the only fabric running, as `--fabric` does; the help said so only of
// `--fabric` without PORT.
#[test]
fn help_says_fabric_0_is_the_only_fabric() {
    let run = tempfile::tempdir().unwrap();
    let o = ipoib(run.path(), &["--help"]);
    assert!(o.status.success(), "{}", stderr(&o));
    // Wrapped or not, the words in order.
    let t = String::from_utf8_lossy(&o.stdout)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(
        t.contains("without PORT, or with `--fabric=0`, the only fabric running"),
        "{t}"
    );
    // And it does: with two fabrics running, `--fabric=0` asks neither, as `--fabric` does.
    let _a = UnixListener::bind(run.path().join("fabric-4791.sock")).unwrap();
    let _b = UnixListener::bind(run.path().join("fabric-4792.sock")).unwrap();
    let o = ipoib(run.path(), &["--fabric=0", "hosts"]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        stderr(&o),
        "ipoib show: 2 fabrics running (ports 4791, 4792): name one with --fabric=PORT\n"
    );
}

#[test]
fn bad_arguments_exit_2() {
    let run = tempfile::tempdir().unwrap();
    for args in [
        &["routes"][..],
        &["--host", "a/b", "neigh"],
        &["--host", "json", "neigh"],
        &["--dev", "../x", "neigh"],
        &["--lab", "--socket", "/tmp/x", "neigh"],
        // Views the process has not: a fabric's neighbours, a lab's or a host's slots.
        &["--fabric", "neigh"],
        &["--fabric=4791", "conns"],
        &["hosts"],
        &["--dev", "ib0", "hosts"],
    ] {
        let o = ipoib(run.path(), args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
    }
}

/// A lab stand-in: two simulated hosts that pinged each other, served on `sock` until `stop`.
fn serve_subnet(sock: PathBuf, stop: Arc<AtomicBool>) -> thread::JoinHandle<()> {
    let mut server = ControlServer::bind(sock).unwrap();
    thread::spawn(move || {
        let mut net = up(options(Topology::single_switch(2).unwrap(), 3), false);
        let s = ping_pairs(&mut net, &[(0, 1)], v4, Duration::from_secs(2));
        assert!(ipoib_fabric::testing::rtt(&net, s[0]).is_some());
        while !stop.load(Ordering::Relaxed) {
            server.poll(&mut |req: &Request| from_subnet(&net, req));
            thread::sleep(Duration::from_millis(5));
        }
    })
}

#[test]
fn shows_a_running_labs_views() {
    let run = tempfile::tempdir().unwrap();
    let sock = lab_socket(run.path());
    std::fs::create_dir(sock.parent().unwrap()).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let t = serve_subnet(sock.clone(), stop.clone());

    let o = ipoib(run.path(), &["--host", "h1", "neigh"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8(o.stdout).unwrap();
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2, "{out}");
    assert!(lines[0].starts_with("HOST  DST       LLADDR"), "{out}");
    let cols: Vec<&str> = lines[1].split_whitespace().collect();
    assert_eq!(cols[..2], ["h1", "10.0.0.2"], "{out}");
    // The 20-byte IPoIB address as Linux prints it: flags, QPN, GID (fe80::...).
    assert_eq!(cols[2].split(':').count(), 20, "{out}");
    assert!(cols[2][12..].starts_with("fe:80:"), "{out}");
    assert_eq!(cols[3], "REACHABLE");

    let o = ipoib(run.path(), &["--lab", "paths", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let rows = v.as_array().unwrap();
    assert_eq!(rows.len(), 2, "{v}");
    assert_eq!(
        (rows[0]["host"].as_str(), rows[1]["host"].as_str()),
        (Some("h1"), Some("h2"))
    );

    let o = ipoib(
        run.path(),
        &["--socket", sock.to_str().unwrap(), "counters"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8(o.stdout).unwrap();
    assert!(out.contains("h2 interface:\n    carrier    1\n"), "{out}");
    assert!(out.contains("control:\n"), "{out}");

    let o = ipoib(run.path(), &["--host", "h9", "mcast"]);
    assert_eq!(o.status.code(), Some(1));
    // The lab's names are listed (it said only `no host "h9"`).
    assert_eq!(stderr(&o), "ipoib show: no host \"h9\" (hosts: h1, h2)\n");

    stop.store(true, Ordering::Relaxed);
    t.join().unwrap();
}

/// A lab that runs and has no control socket yet (it binds it once its namespaces are made,
/// seconds for many hosts) was "no lab running: ... not found; start one". Its state file, which
/// it writes before the namespaces, says it runs: `show` says it is starting. (This test's own
/// process stands in for the lab: a state file with its pid and start time.)
#[test]
fn a_lab_that_is_starting_is_named_so() {
    let run = tempfile::tempdir().unwrap();
    let pid = std::process::id();
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    let start: u64 = stat[stat.rfind(')').unwrap() + 1..]
        .split_whitespace()
        .nth(19)
        .unwrap()
        .parse()
        .unwrap();
    std::fs::create_dir(run.path().join("lab")).unwrap();
    let state =
        serde_json::json!({"pid": pid, "start_time": start, "mode": "datagram", "hosts": []});
    std::fs::write(run.path().join("lab").join("lab.json"), state.to_string()).unwrap();
    let o = ipoib(run.path(), &["neigh"]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        stderr(&o),
        format!(
            "ipoib show: the lab of pid {pid} is starting: {} is not there yet; try again in a \
             moment\n",
            lab_socket(run.path()).display()
        )
    );
}

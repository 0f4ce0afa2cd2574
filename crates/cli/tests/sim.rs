//! `ipoib sim` run as a program: a 16-host fat tree comes up (every host has a LID and joined the
//! broadcast group, packets were sent), its capture decodes with `ipoib decode`, and bad arguments
//! get clear errors with exit status 2.

use serde_json::Value as Json;
use std::process::{Command, Output};

fn ipoib(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ipoib"))
        .args(args)
        .output()
        .expect("run ipoib")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

// `ipoib sim --hosts N` brings up a subnet of that size; every host gets a LID and joins the
// broadcast group; it prints wall time, simulated time, packets and peak memory.
#[test]
fn sim_16_hosts_json_and_capture_decodes() {
    let dir = tempfile::tempdir().unwrap();
    let pcap = dir.path().join("sim.pcap");
    let pcap = pcap.to_str().unwrap();
    let o = ipoib(&["sim", "--hosts", "16", "--json", "--pcap", pcap]);
    assert!(o.status.success(), "{}", stderr(&o));
    let j: Json = serde_json::from_slice(&o.stdout).expect("one JSON object");
    assert_eq!(j["hosts"], 16);
    assert_eq!(j["hosts_with_lid"], 16);
    assert_eq!(j["joined"], 16);
    let packets = j["packets"].as_u64().unwrap();
    assert!(
        packets >= 2 * 15,
        "a join and its answer per host off the SM: {packets}"
    );
    assert!(j["bytes"].as_u64().unwrap() > packets * 100);
    assert!(j["events"].as_u64().unwrap() > packets);
    assert!(j["wall_ns"].as_u64().unwrap() > 0);
    assert!(j["sim_last_join_ns"].as_u64().unwrap() > 0);
    assert!(j["sa_requests"].as_u64().unwrap() >= 16);
    if cfg!(target_os = "linux") {
        assert!(j["peak_memory_kib"].as_u64().unwrap() > 0);
    }
    let groups = j["groups"].as_array().unwrap();
    assert_eq!(groups.len(), 1);
    assert_eq!(groups[0]["mgid"], "ff12:401b:ffff::ffff:ffff");
    assert_eq!(groups[0]["members"], 16);
    assert_eq!(groups[0]["qkey"], 0x0b1b);
    // The capture holds every packet and `ipoib decode` reads all of them.
    let d = ipoib(&["decode", "--json", pcap]);
    assert!(d.status.success(), "{}", stderr(&d));
    let lines = String::from_utf8(d.stdout).unwrap();
    assert_eq!(lines.lines().count() as u64, packets);
    assert!(
        lines.contains("MCMemberRecord"),
        "the joins are in the capture"
    );
    // So is the SM's sweep (IBA 1 §14.2.2): directed-route SMPs, named in text.
    let t = ipoib(&["decode", pcap]);
    let text = String::from_utf8(t.stdout).unwrap();
    for want in [
        "SubnDirectedRoute Get NodeInfo",
        "SubnDirectedRoute Get PortInfo",
        "SubnDirectedRoute Set P_KeyTable",
        "SubnDirectedRoute GetResp LinearForwardingTable",
        "SubnDirectedRoute Set PortInfo lid 0x0002 Armed",
        "SubnDirectedRoute GetResp PortInfo lid 0x0002 Active",
    ] {
        assert!(text.contains(want), "{want:?} in the decoded capture");
    }
}

#[test]
fn sim_text_output_names_the_figures() {
    let o = ipoib(&[
        "sim",
        "--hosts",
        "4",
        "--topology",
        "single-switch",
        "--seed",
        "9",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let t = String::from_utf8(o.stdout).unwrap();
    for want in [
        "joined the broadcast group: 4/4",
        "wall time:",
        "simulated time:",
        "packets:",
        "peak memory:",
        "ff12:401b:ffff::ffff:ffff",
    ] {
        assert!(t.contains(want), "missing {want:?} in\n{t}");
    }
}

#[test]
fn sim_bad_arguments_are_explained() {
    let o = ipoib(&["sim", "--hosts", "0"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("--hosts must be at least 1"),
        "{}",
        stderr(&o)
    );
    let o = ipoib(&["sim"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--hosts"), "{}", stderr(&o));
    let o = ipoib(&["sim", "--hosts", "300", "--topology", "single-switch"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("254"), "{}", stderr(&o));
    // A deadline of 0 ran nothing and blamed the SM for every host (exit 1).
    let o = ipoib(&["sim", "--hosts", "2", "--deadline", "0"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--deadline"), "{}", stderr(&o));

    let dir = tempfile::tempdir().unwrap();
    let net = dir.path().join("bad.net");
    std::fs::write(
        &net,
        "Switch 2 \"S\"\n[1] \"H\"[1]\n\nHca 1 \"H\"\n[1] \"S\"[7]\n",
    )
    .unwrap();
    let o = ipoib(&["sim", "--topology", net.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("line 2"), "{}", stderr(&o));
    let o = ipoib(&["sim", "--topology", "/nonexistent/net"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("/nonexistent/net"), "{}", stderr(&o));

    let parts = dir.path().join("partitions.conf");
    std::fs::write(
        &parts,
        "Default=0x7fff : ALL=full ;\nBroken=0xzz : ALL=full ;\n",
    )
    .unwrap();
    let o = ipoib(&[
        "sim",
        "--hosts",
        "4",
        "--partitions",
        parts.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("line 2, column 8"), "{}", stderr(&o));
}

// A subnet where nobody can join in time exits 1 and says who is missing.
#[test]
fn sim_reports_hosts_that_did_not_join() {
    let dir = tempfile::tempdir().unwrap();
    let parts = dir.path().join("partitions.conf");
    // A broadcast group at 120 Gb/s (rate code 10) that 40 Gb/s ports cannot join (OpenSM:
    // ERR_REQ_INVALID when the port's rate is below the group's).
    std::fs::write(&parts, "Default=0x7fff, ipoib, rate=10 : ALL=full ;\n").unwrap();
    let o = ipoib(&[
        "sim",
        "--hosts",
        "4",
        "--deadline",
        "2",
        "--partitions",
        parts.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("only 0 of 4 hosts joined"),
        "{}",
        stderr(&o)
    );
    assert!(stderr(&o).contains("h0"), "{}", stderr(&o));
}

fn write(dir: &tempfile::TempDir, name: &str, text: &str) -> String {
    let p = dir.path().join(name);
    std::fs::write(&p, text).unwrap();
    p.to_str().unwrap().to_string()
}

// OpenSM 3.3.23: a partitions.conf without a definition is "in error; retrying with default
// config" (docs/OPENSM-NOTES.md). It used to say "joined the broadcast group: 8/8" with no group
// in the SA; now the default configuration is used, said so, and the joins are real.
#[test]
fn sim_empty_partitions_file_means_the_default_configuration() {
    let dir = tempfile::tempdir().unwrap();
    for text in ["", "# nothing but a comment\n\n"] {
        let parts = write(&dir, "e.conf", text);
        let o = ipoib(&["sim", "--hosts", "8", "--partitions", &parts, "--json"]);
        assert!(o.status.success(), "{}", stderr(&o));
        assert!(
            stderr(&o).contains("warning: no partition definition"),
            "{}",
            stderr(&o)
        );
        let j: Json = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(j["joined"], 8);
        let groups = j["groups"].as_array().unwrap();
        assert_eq!(groups.len(), 1, "{j}");
        assert_eq!(groups[0]["mgid"], "ff12:401b:ffff::ffff:ffff");
        assert_eq!(groups[0]["members"], 8);
    }
}

// A success is what the SA's member records say: partitions without the `ipoib` flag leave the
// SA without a broadcast group, so nobody joined, whatever the hosts think, and the reason is
// given.
#[test]
fn sim_without_a_broadcast_group_fails_and_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let parts = write(&dir, "p.conf", "Default=0x7fff : ALL=full ;\n");
    let o = ipoib(&["sim", "--hosts", "8", "--partitions", &parts, "--json"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let j: Json = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(j["joined"], 0);
    assert_eq!(j["groups"].as_array().unwrap().len(), 0);
    assert!(j["not_joined"][0]
        .as_str()
        .unwrap()
        .contains("no IPoIB broadcast group"));
    let e = stderr(&o);
    assert!(e.contains("only 0 of 8 hosts joined"), "{e}");
    assert!(
        e.contains("h0 (LID 1): the SA has no IPoIB broadcast group for its P_Keys (0xffff)"),
        "{e}"
    );
    assert!(e.contains("... and 3 more"), "{e}");
}

// OpenSM 3.3.23 on ibsim (docs/OPENSM-NOTES.md "partitions.conf"): sl=99, scope=99 and an unknown
// membership are PARSE WARNs; a repeated P_Key merges, a repeated name makes a second partition.
// All used to pass without a word; each is now a warning with its line and column.
#[test]
fn sim_partitions_warnings_name_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let parts = write(
        &dir,
        "w.conf",
        "Default=0x7fff, ipoib, rate=3, sl=99, scope=99 : ALL=sideways ;\n\
         A=0x10, ipoib : ALL=full ;\n  B=0x10 : ALL=full ;\nA=0x20 : ALL=full ;\n",
    );
    let o = ipoib(&["sim", "--hosts", "4", "--partitions", &parts]);
    assert!(o.status.success(), "{}", stderr(&o));
    let e = stderr(&o);
    for want in [
        "w.conf: warning: line 1, column 35: flag 'sl' requires valid value - skipped",
        "w.conf: warning: line 1, column 45: flag 'scope' requires valid value - skipped",
        "w.conf: warning: line 1, column 54: unrecognized port flag 'sideways'",
        "w.conf: warning: line 3, column 3: P_Key 0x0010 of 'B' is already partition 'A' (line 2)",
        "w.conf: warning: line 4, column 1: partition name 'A' is already P_Key 0x0010 (line 2)",
    ] {
        assert!(e.contains(want), "missing {want:?} in\n{e}");
    }
}

// OpenSM takes mtu=99 and rate=77 silently and then creates no group, or the largest the ports
// allow: refused here, with the position.
#[test]
fn sim_partitions_mtu_and_rate_out_of_range_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    for (text, want) in [
        (
            "Default=0x7fff, ipoib, mtu=99 : ALL=full ;\n",
            "line 1, column 28: mtu=99: not an MTU code",
        ),
        (
            "A=0x10, ipoib : ALL=full ;\nDefault=0x7fff, ipoib, rate=77 : ALL=full ;\n",
            "line 2, column 29: rate=77: not a rate code",
        ),
    ] {
        let parts = write(&dir, "m.conf", text);
        let o = ipoib(&["sim", "--hosts", "4", "--partitions", &parts]);
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        assert!(stderr(&o).contains(want), "{}", stderr(&o));
    }
}

// 600 partitions: the SM's own host never joined and the only word was "not joined: h0 (LID 1,
// port Active)". A port's P_Key table holds 128 entries (the HCA's PartitionCap); OpenSM leaves
// the rest out (ERR 0512), and so does our SM now, saying so. Every host then joins the groups of
// the partitions its table holds.
#[test]
fn sim_600_partitions_hit_the_pkey_table_size_and_say_so() {
    let dir = tempfile::tempdir().unwrap();
    let mut text = String::from("Default=0x7fff, ipoib : ALL=full ;\n");
    for k in 1..=600 {
        text += &format!("P{k}={k:#x}, ipoib : ALL=full ;\n");
    }
    let parts = write(&dir, "p600.conf", &text);
    let o = ipoib(&["sim", "--hosts", "4", "--partitions", &parts, "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains(
            "4 host port(s) belong to more partitions than their P_Key table holds (128 entries"
        ),
        "{e}"
    );
    assert!(e.contains("h0 (473 left out, 0x0080 first)"), "{e}");
    let j: Json = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(j["joined"], 4);
    let members = |mgid: &str| {
        j["groups"]
            .as_array()
            .unwrap()
            .iter()
            .find(|g| g["mgid"] == mgid)
            .map(|g| g["members"].as_u64().unwrap())
    };
    assert_eq!(
        members("ff12:401b:807f::ffff:ffff"),
        Some(4),
        "in the tables"
    );
    assert_eq!(members("ff12:401b:8080::ffff:ffff"), Some(0), "left out");
}

// The help said "two-level, any size" while the fat tree stops at 32,258 hosts, and did not say
// that --hosts is required; a port count too big for an integer read as "missing port count".
#[test]
fn sim_help_and_limits_say_what_the_program_does() {
    let o = ipoib(&["sim", "--help"]);
    assert!(o.status.success());
    let h = String::from_utf8(o.stdout).unwrap();
    assert!(!h.contains("any size"), "{h}");
    assert!(h.contains("two-level, up to 32,258 hosts"), "{h}");
    assert!(h.contains("required with `fat-tree` (the default)"), "{h}");

    let o = ipoib(&["sim", "--hosts", "32259"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("a two-level fat tree holds 1 to 32258 hosts"),
        "{}",
        stderr(&o)
    );

    let dir = tempfile::tempdir().unwrap();
    let net = write(
        &dir,
        "big.net",
        "# a switch with too many ports\nSwitch 99999999999 \"S\"\n[1] \"H\"[1]\n\nHca 1 \"H\"\n[1] \"S\"[1]\n",
    );
    let o = ipoib(&["sim", "--topology", &net]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("line 2: port count 99999999999 out of range: 1..=254"),
        "{}",
        stderr(&o)
    );
}

// Warnings go to standard error; when nobody reads it (`2>&1 >/dev/null | true` closes it), the
// run still finishes with its own verdict instead of panicking on the write (exit 101).
#[test]
fn sim_with_a_closed_standard_error_does_not_panic() {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("empty.conf");
    std::fs::write(&conf, "").unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_ipoib"))
        .args([
            "sim",
            "--hosts",
            "4",
            "--partitions",
            conf.to_str().unwrap(),
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stderr.take());
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&o.stdout).contains("joined the broadcast group: 4/4"));
}

// The partitions file is read the same way by sim, lab, fabric and ibsim-server. A missing one
// used to be "ipoib sim: /x/p.conf: No such file or directory", not saying which option named
// it; its warnings came out as "ipoib sim: ..." under lab and fabric, and not at all under
// ibsim-server. Now the error names `--partitions` and the warnings the command that reads them.
#[test]
fn partitions_file_errors_name_the_option_and_warnings_the_command() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("none").join("p.conf");
    let missing = missing.to_str().unwrap();
    let o = ipoib(&["sim", "--hosts", "2", "--partitions", missing]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let want = format!("ipoib sim: --partitions {missing}: No such file");
    assert!(stderr(&o).contains(&want), "{}", stderr(&o));

    let parts = write(
        &dir,
        "w.conf",
        "Default=0x7fff, ipoib, bogus=1 : ALL=full ;\n",
    );
    let warning = "w.conf: warning: line 1, column 24: unrecognized partition flag 'bogus'";
    // The fabric reads the file before it checks --timeout-ms, which then stops it.
    let o = ipoib(&[
        "fabric",
        "--listen",
        "udp:127.0.0.1:0",
        "--partitions",
        &parts,
        "--timeout-ms",
        "10",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(!e.contains("ipoib sim"), "{e}");
    let line = e.lines().find(|l| l.contains(warning)).unwrap_or_default();
    assert!(line.starts_with("ipoib fabric: "), "{e}");

    // The ibsim server stops at the console's Quit.
    let mut child = Command::new(env!("CARGO_BIN_EXE_ipoib"))
        .args([
            "ibsim-server",
            "--topology",
            "single-switch",
            "--hosts",
            "2",
        ])
        .args(["--partitions", &parts, "--sockname"])
        .arg(format!("ipoib-test-parts-{}", std::process::id()))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run ipoib");
    {
        use std::io::Write as _;
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(b"Quit\n").unwrap();
    }
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let e = stderr(&o);
    let line = e.lines().find(|l| l.contains(warning)).unwrap_or_default();
    assert!(line.starts_with("ipoib ibsim-server: "), "{e}");
}

// An unwritable --pcap was found only once the run was over (minutes on a big subnet), and the
// run's report was thrown away with it; the error did not say which option named the path. It
// is now refused before the subnet is built: one line naming --pcap, and no report.
#[test]
fn sim_refuses_an_unwritable_pcap_before_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("none").join("x.pcap");
    let bad = bad.to_str().unwrap();
    let o = ipoib(&["sim", "--hosts", "4", "--pcap", bad]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(o.stdout.is_empty());
    let want = format!("ipoib sim: --pcap {bad}: No such file or directory");
    let e = stderr(&o);
    assert!(e.lines().count() == 1 && e.starts_with(&want), "{e}");
}

// A capture the disk cannot take (/dev/full, as a disk that fills up): the run's report was
// thrown away for the write error. It is printed, says the capture was not written, and the
// exit status is 2.
#[test]
fn sim_capture_that_cannot_be_written_keeps_the_report() {
    if !std::path::Path::new("/dev/full").exists() {
        eprintln!("skipped: no /dev/full");
        return;
    }
    let o = ipoib(&["sim", "--hosts", "4", "--pcap", "/dev/full"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let t = String::from_utf8_lossy(&o.stdout);
    assert!(t.contains("joined the broadcast group: 4/4"), "{t}");
    assert!(
        t.contains("capture: NOT written: --pcap /dev/full: No space left on device"),
        "{t}"
    );
    let o = ipoib(&["sim", "--hosts", "4", "--pcap", "/dev/full", "--json"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let j: Json = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(j["joined"], 4);
    assert!(j["pcap_error"]
        .as_str()
        .unwrap()
        .starts_with("--pcap /dev/full: "));
}

// `--pcap` naming a file that exists, in `ipoib sim` and `ipoib rping` (both write their capture
// when the run is over): the file was emptied when the run began, so a run stopped with Ctrl-C
// destroyed it. It is now emptied only when the capture is written: a stopped run leaves it as
// it was, a finished one replaces all of it (a longer old file leaves no tail behind).
#[test]
fn pcap_over_an_existing_file_is_replaced_only_by_a_finished_run() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.erf");
    let p = path.to_str().unwrap();
    let old = vec![0x5a_u8; 4 << 20];
    // Runs of seconds in a debug build: time to stop them once the file is open.
    for long in [
        ["sim", "--hosts", "4000", "--pcap", p],
        ["rping", "--size", "64M", "--pcap", p],
    ] {
        std::fs::write(&path, &old).unwrap();
        interrupt_once_open(&long, &path);
        assert!(std::fs::read(&path).unwrap() == old, "{long:?} changed {p}");
    }
    for short in [
        ["sim", "--hosts", "4", "--pcap", p],
        ["rping", "--size", "4K", "--pcap", p],
    ] {
        std::fs::write(&path, &old).unwrap();
        let o = ipoib(&short);
        assert_eq!(o.status.code(), Some(0), "{short:?}: {}", stderr(&o));
        let erf = std::fs::read(&path).unwrap();
        assert!(
            erf.len() < old.len() && !erf.ends_with(&[0x5a; 16]),
            "{short:?}"
        );
        let d = ipoib(&["decode", "--json", p]);
        assert_eq!(d.status.code(), Some(0), "{short:?}: {}", stderr(&d));
    }
}

/// Runs `ipoib ARGS` and sends it SIGINT once it holds `path` open; it must end unsuccessfully.
fn interrupt_once_open(args: &[&str], path: &std::path::Path) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_ipoib"))
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("run ipoib");
    let fds = format!("/proc/{}/fd", child.id());
    let holds = || {
        let fds = std::fs::read_dir(&fds).into_iter().flatten().flatten();
        fds.into_iter()
            .any(|e| std::fs::read_link(e.path()).is_ok_and(|l| l == path))
    };
    let open = (0..5_000).any(|_| {
        let h = holds();
        if !h {
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        h
    });
    let kill = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill");
    let status = child.wait().unwrap();
    assert!(open, "{args:?} never opened {}", path.display());
    assert!(kill.success() && !status.success(), "{args:?}: {status}");
}

// The group the SM makes at its start says where it came from: without --partitions the default
// partition with IPoIB's default parameters (it was labelled "partitions.conf", a file nobody
// gave), with one the file's name.
#[test]
fn sim_names_where_the_broadcast_group_came_from() {
    let o = ipoib(&["sim", "--hosts", "4"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    let line = text
        .lines()
        .find(|l| l.contains("ff12:401b:ffff::ffff:ffff"))
        .unwrap_or_else(|| panic!("no broadcast group line: {text}"));
    assert!(!line.contains("partitions.conf"), "{line}");
    assert!(line.contains("the default partition"), "{line}");
    assert!(line.contains("no --partitions file"), "{line}");

    let dir = tempfile::tempdir().unwrap();
    let parts = write(&dir, "mine.conf", "Default=0x7fff, ipoib : ALL=full ;\n");
    let o = ipoib(&["sim", "--hosts", "4", "--partitions", &parts]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains(&format!("(made by the SM from --partitions {parts})")),
        "{text}"
    );
}

/// `ipoib` under a 1 GiB address-space limit (`ulimit -v`, POSIX `sh`): a run that would grow
/// without bound fails there instead of taking the machine's memory.
fn ipoib_within_1_gib(args: &[&str]) -> Output {
    Command::new("sh")
        .arg("-c")
        .arg("ulimit -v 1048576 && exec \"$0\" \"$@\"")
        .arg(env!("CARGO_BIN_EXE_ipoib"))
        .args(args)
        .output()
        .expect("run sh")
}

/// A `--topology` or `--partitions` that never ends (a device, a pipe that keeps writing) was read
/// until the OOM killer ended the process (22 GB); it is refused after a bound, with exit status
/// 2, and a net file through a pipe still loads.
#[test]
fn endless_topology_or_partitions_input_is_refused_not_read_forever() {
    for args in [
        &["sim", "--topology", "/dev/zero"][..],
        &["sim", "--hosts", "2", "--partitions", "/dev/zero"][..],
        &["demo", "--topology", "/dev/zero"][..],
    ] {
        let o = ipoib_within_1_gib(args);
        let flag = args[args.len() - 2];
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert_eq!(
            stderr(&o),
            format!(
                "ipoib {}: {flag} /dev/zero: more than 64 MiB, far more than any such file (is \
                 it the right one?)\n",
                args[0]
            ),
            "{args:?}"
        );
        assert!(o.stdout.is_empty(), "{args:?}");
    }
    let net = "Switch 2 \"S\"\n[1] \"H1\"[1]\n[2] \"H2\"[1]\n\nHca 1 \"H1\"\n[1] \"S\"[1]\n\n\
               Hca 1 \"H2\"\n[1] \"S\"[2]\n";
    let mut child = Command::new(env!("CARGO_BIN_EXE_ipoib"))
        .args(["sim", "--topology", "/dev/stdin", "--json"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write as _;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(net.as_bytes())
        .unwrap();
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let j: Json = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(j["joined"], 2);
}

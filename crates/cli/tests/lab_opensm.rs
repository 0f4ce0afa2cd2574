//! `ipoib lab --sm opensm` as root: the lab runs OpenSM under ibsim-run itself, OpenSM configures
//! the fabric through our SMAs (docs/OPENSM-NOTES.md "OpenSM managing our fabric"), the hosts'
//! `ib0` come up through its SA, and `ping -4` and `ping -6` work between the hosts; `ipoib lab
//! down` then leaves no namespace, state file, lab process or OpenSM. An OpenSM that dies while
//! the lab is up is reported, and the hosts still ping through the tables it wrote. A lab killed outright
//! leaves its OpenSM running, and `ipoib lab down` ends it. Without ibsim-run the lab says so and
//! exits 2, making nothing. Skipped with a message when not root, without /dev/net/tun, ping,
//! opensm or ibsim-run, or while another lab runs. Every wait has a timeout; a guard removes the
//! lab however a test ends.

mod common;

use common::{ipoib, leftovers, serial, show_json, skip_reason, Lab, BIN, LAB_STATE};
use std::process::Command;
use std::time::{Duration, Instant};

const NEEDS: [&str; 3] = ["ping", "opensm", "ibsim-run"];

/// OpenSM's pid and log from the lab's line `OpenSM (pid N) manages the fabric; its log: PATH`.
fn opensm_of(table: &str) -> (u32, String) {
    let line = table
        .lines()
        .find(|l| l.starts_with("OpenSM (pid "))
        .unwrap_or_else(|| panic!("no OpenSM line in\n{table}"));
    let pid = line["OpenSM (pid ".len()..]
        .split(')')
        .next()
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("{line}"));
    let log = line
        .split("its log: ")
        .nth(1)
        .unwrap_or_default()
        .to_string();
    (pid, log)
}

fn cmdline(pid: u32) -> String {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|b| String::from_utf8_lossy(&b).replace('\0', " "))
        .unwrap_or_default()
}

/// Whether process `pid` ends within `secs` seconds.
fn gone_within(pid: u32, secs: u64) -> bool {
    let end = Instant::now() + Duration::from_secs(secs);
    while Instant::now() < end {
        // Gone, or a zombie its parent (this test, for the lab) has not reaped yet.
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let state = stat
            .rsplit(')')
            .next()
            .and_then(|r| r.split_whitespace().next());
        if matches!(state, None | Some("Z" | "X")) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

#[test]
fn opensm_lab_pings_both_families_and_leaves_nothing() {
    let _one = serial();
    if let Some(why) = skip_reason(&NEEDS) {
        eprintln!("SKIP: {why}");
        return;
    }
    let errs = tempfile::NamedTempFile::new().unwrap();
    let lab = Lab::start_to(&["--hosts", "3", "--sm", "opensm"], errs.reopen().unwrap());
    let table = lab.table.clone();
    assert!(table.contains("3 hosts up"), "{table}");
    let (osm, log) = opensm_of(&table);
    assert!(
        cmdline(osm).contains("opensm"),
        "pid {osm}: {}",
        cmdline(osm)
    );
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(text.contains("SUBNET UP"), "{log}:\n{text}");
    // No error but the documented refusal of the send-only join to ff02::2 that the hosts' router
    // solicitations cause (docs/IPOIB-JOINS.md, README "`ipoib fabric` and `ipoib attach`"),
    // logged before or after the hosts are up, as Linux's solicitation delay falls.
    let errors: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("ERR "))
        .filter(|l| !(l.contains("ERR 1B10") && l.contains("MGID: ff12:601b:ffff::2 ")))
        .collect();
    assert!(errors.is_empty(), "{log}:\n{text}");
    // OpenSM gave the LIDs: its own port 1, the switch 2, the others after.
    assert!(table.contains("\nh1   ipoib-h1       1 "), "{table}");

    for (from, to) in [("h1", "h2"), ("h3", "h1"), ("h2", "h3")] {
        for (family, addr) in [("-4", "10.0.0."), ("-6", "fd00::")] {
            let args = [
                "lab", "exec", from, "--", "ping", family, "-c", "2", "-i", "0.2", "-W", "5", to,
            ];
            let (st, out) = ipoib(&args, Duration::from_secs(30)).expect("ping within 30 s");
            assert!(st.success(), "{from}: ping {family} {to}: {st}\n{out}");
            assert!(out.contains("2 received") && out.contains(addr), "{out}");
        }
    }

    // The ibsim server that serves OpenSM shows its counters with the lab's (section `ibsim`,
    // as `ipoib fabric --ibsim`): OpenSM's client connected, its MADs went in and out. Before,
    // the lab showed none of them.
    let rows = show_json(&["show", "counters"]);
    let ibsim = rows
        .iter()
        .find(|r| r["section"] == "ibsim")
        .unwrap_or_else(|| panic!("no section ibsim in {rows:#?}"));
    let c = &ibsim["counters"];
    assert!(c["connects"].as_u64() >= Some(1), "{ibsim:#}");
    assert!(c["mads_in"].as_u64() > Some(0), "{ibsim:#}");
    assert_eq!(c["undelivered"].as_u64(), Some(0), "{ibsim:#}");

    // OpenSM dies while the lab is up: the lab says so, and the hosts still reach each other
    // through the tables OpenSM wrote.
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(osm as i32),
        nix::sys::signal::Signal::SIGKILL,
    );
    let end = Instant::now() + Duration::from_secs(10);
    let said = || std::fs::read_to_string(errs.path()).unwrap_or_default();
    while !said().contains("OpenSM ended") && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(said().contains("ipoib lab: OpenSM ended"), "{}", said());
    let (st, out) = ipoib(
        &[
            "lab", "exec", "h1", "--", "ping", "-c", "1", "-W", "5", "h3",
        ],
        Duration::from_secs(30),
    )
    .expect("ping within 30 s");
    assert!(st.success() && out.contains("1 received"), "{st}\n{out}");

    let pid = lab.pid();
    let (st, out) = ipoib(&["lab", "down"], Duration::from_secs(30)).expect("down within 30 s");
    assert!(st.success(), "lab down: {st} {out}");
    drop(lab);
    assert!(gone_within(osm, 10), "OpenSM {osm} still runs");
    assert_eq!(leftovers(3, &[pid, osm]), Vec::<String>::new());
}

#[test]
fn killed_opensm_lab_leaves_opensm_to_lab_down() {
    let _one = serial();
    if let Some(why) = skip_reason(&NEEDS) {
        eprintln!("SKIP: {why}");
        return;
    }
    let lab = Lab::start(&["--hosts", "2", "--sm", "opensm"]);
    let (osm, _) = opensm_of(&lab.table);
    let pid = lab.pid();
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid as i32),
        nix::sys::signal::Signal::SIGKILL,
    );
    assert!(gone_within(pid, 10), "lab {pid} still runs after SIGKILL");
    assert!(
        cmdline(osm).contains("opensm"),
        "OpenSM {osm} went with the lab"
    );
    assert!(std::path::Path::new(LAB_STATE).exists());
    let (st, out) = ipoib(&["lab", "down"], Duration::from_secs(30)).expect("down within 30 s");
    assert!(st.success(), "lab down: {st} {out}");
    assert!(
        out.contains(") had already ended (killed or crashed); removed the 2 network namespaces"),
        "{out}"
    );
    assert!(
        gone_within(osm, 10),
        "OpenSM {osm} still runs after lab down"
    );
    drop(lab);
    // The orphan's zombie is reaped by init, in its own time.
    let end = Instant::now() + Duration::from_secs(10);
    while Instant::now() < end && std::path::Path::new(&format!("/proc/{osm}")).exists() {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(leftovers(2, &[pid, osm]), Vec::<String>::new());
}

#[test]
fn without_ibsim_run_the_lab_says_so_and_makes_nothing() {
    let _one = serial();
    if let Some(why) = skip_reason(&[]) {
        eprintln!("SKIP: {why}");
        return;
    }
    // ibsim-run is in /usr/bin: with PATH empty only /usr/sbin and /sbin are looked in.
    let empty = tempfile::tempdir().unwrap();
    let o = Command::new(BIN)
        .args(["lab", "--hosts", "2", "--sm", "opensm"])
        .env("PATH", empty.path())
        .output()
        .expect("run the lab");
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains(
            "--sm opensm runs OpenSM under ibsim-run, and ibsim-run (Debian package ibsim-utils)"
        ),
        "{err}"
    );
    assert_eq!(leftovers(2, &[]), Vec::<String>::new());
}

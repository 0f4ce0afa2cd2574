//! The real OpenSM manages our fabric: `ipoib ibsim-server --sm none` serves a subnet with no SM of
//! ours (ports up to Init), `ibsim-run opensm` attaches to host h0 and configures every port, LFT
//! and MFT through our SMAs by SMPs (docs/OPENSM-NOTES.md "OpenSM managing our fabric"); our hosts'
//! IPoIB interfaces find OpenSM's SA through the SM LID it wrote and join its broadcast group, and
//! ping each other over IPv4 and IPv6 through the tables OpenSM programmed. Checked with
//! infiniband-diags under `ibsim-run`: `ibnetdiscover` sees our topology, `saquery` lists our hosts
//! as full members of the broadcast group, `perfquery` reads a host's PMA. Skipped, with a message,
//! where ibsim-run, opensm, ibnetdiscover or saquery is not installed.
//!
//! Every process is started by this test and stopped by its PID (SIGTERM, then reaped) when its
//! guard drops, on every exit path, an assertion failure included.

use ipoib_fabric::hw::topology::{NodeKind, Topology};
use std::io::{BufRead, BufReader};
use std::net::Ipv6Addr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// An IPoIB partition (the default one) with its broadcast group, every port a full member.
const PARTITIONS: &str = "Default=0x7fff, ipoib : ALL=full ;\n";
const HOSTS: usize = 3;

fn installed(exe: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(exe).is_file()))
        || ["/usr/sbin", "/usr/bin"]
            .iter()
            .any(|d| Path::new(d).join(exe).is_file())
}

/// A child process, stopped by its PID with SIGTERM and reaped when dropped.
struct Guard(Child);

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.0.id().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.0.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Runs `args` under `ibsim-run` attached to `host`, at most 20 s; its standard output.
fn diag(dir: &Path, sock: &str, host: &str, args: &[&str]) -> String {
    let mut c = Command::new("timeout");
    c.arg("20")
        .arg("ibsim-run")
        .args(args)
        .current_dir(dir)
        .env("IBSIM_SOCKNAME", sock)
        .env("SIM_HOST", host)
        .env_remove("IBSIM_SERVER_NAME");
    let o = c.output().expect("run ibsim-run");
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        o.status.success(),
        "{args:?} failed ({}): {}\n{out}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
    out
}

/// Waits until `f` holds, at most `secs` seconds.
fn wait_for(secs: u64, mut f: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while Instant::now() < deadline {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    f()
}

/// The values of `key` in saquery's dump lines (`\t\tPortGid.........fe80::...`).
fn values(out: &str, key: &str) -> Vec<String> {
    out.lines()
        .filter_map(|l| {
            let rest = l.trim_start().strip_prefix(key)?;
            rest.starts_with('.')
                .then(|| rest.trim_start_matches('.').trim().to_string())
        })
        .collect()
}

#[test]
fn opensm_manages_our_fabric() {
    for exe in ["ibsim-run", "opensm", "ibnetdiscover", "saquery"] {
        if !installed(exe) {
            eprintln!(
                "SKIP: {exe} is not installed (Debian opensm, ibsim-utils, infiniband-diags)"
            );
            return;
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let parts = dir.path().join("partitions.conf");
    std::fs::write(&parts, PARTITIONS).unwrap();
    let sock = format!("ipoib-osm-test-{}", std::process::id());
    let mut server = Command::new(env!("CARGO_BIN_EXE_ipoib"))
        .args(["ibsim-server", "--topology", "single-switch", "--hosts"])
        .arg(HOSTS.to_string())
        .args(["--sm", "none", "--ip", "--ping-all", "--sockname", &sock])
        .arg("--partitions")
        .arg(&parts)
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(dir.path().join("server.err")).unwrap())
        .spawn()
        .expect("start ipoib ibsim-server");
    let stdout = server.stdout.take().unwrap();
    let _server = Guard(server);
    // The server's lines, read by a thread (it ends when the server closes its output).
    let (tx, rx) = mpsc::channel::<String>();
    std::thread::spawn(move || {
        for l in BufReader::new(stdout).lines() {
            let Ok(l) = l else { break };
            if tx.send(l).is_err() {
                break;
            }
        }
    });
    let mut lines = Vec::new();
    let next_line = |secs: u64| rx.recv_timeout(Duration::from_secs(secs)).ok();
    while let Some(l) = next_line(30) {
        let ready = l == "ready";
        lines.push(l);
        if ready {
            break;
        }
    }
    assert_eq!(lines.last().map(String::as_str), Some("ready"), "{lines:?}");
    // No SM of ours: nobody has a LID yet.
    for i in 0..HOSTS {
        assert_eq!(lines[i], format!("host h{i} lid 0 port 1"), "{lines:?}");
    }

    // -D 0x03: errors and info (SUBNET UP); -d 2: the log flushed after every line, so that it
    // can be read while OpenSM runs.
    let log = dir.path().join("opensm.log");
    let osm = Command::new("ibsim-run")
        .arg("opensm")
        .args(["-F", "/dev/null", "-D", "0x03", "-d", "2", "-f"])
        .arg(&log)
        .arg("--dump_files_dir")
        .arg(dir.path())
        .arg("-P")
        .arg(&parts)
        .current_dir(dir.path())
        .env("IBSIM_SOCKNAME", &sock)
        .env("SIM_HOST", "h0")
        .env("OSM_CACHE_DIR", dir.path())
        .env("OSM_TMP_DIR", dir.path())
        .env_remove("IBSIM_SERVER_NAME")
        .stdout(std::fs::File::create(dir.path().join("opensm.out")).unwrap())
        .stderr(Stdio::null())
        .spawn()
        .expect("start ibsim-run opensm");
    let _osm = Guard(osm);
    let read_log = || std::fs::read_to_string(&log).unwrap_or_default();
    let up = wait_for(30, || read_log().contains("SUBNET UP"));
    let text = read_log();
    let server_err = || std::fs::read_to_string(dir.path().join("server.err")).unwrap_or_default();
    assert!(
        up,
        "OpenSM did not reach SUBNET UP:\n{text}\nits output: {}\nserver: {}",
        std::fs::read_to_string(dir.path().join("opensm.out")).unwrap_or_default(),
        server_err()
    );
    let errors: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("ERR ") || l.contains("ERRORS DURING INITIALIZATION"))
        .collect();
    assert!(errors.is_empty(), "OpenSM errors: {errors:#?}");

    // Our hosts ping each other over IPv4 and IPv6 (every ordered pair, both families), through
    // the LFTs and the broadcast group's MFT OpenSM wrote.
    let mut result = None;
    while let Some(l) = next_line(60) {
        if l.starts_with("pings: ") {
            result = Some(l.clone());
        }
        lines.push(l);
        if result.is_some() {
            break;
        }
    }
    let want = HOSTS * (HOSTS - 1) * 2;
    assert_eq!(
        result.as_deref(),
        Some(format!("pings: {want} of {want} answered").as_str()),
        "{lines:#?}"
    );
    let count = |family: &str| {
        lines
            .iter()
            .filter(|l| l.starts_with("ping h") && l.contains(family) && l.ends_with(": reply"))
            .count()
    };
    assert_eq!(count(" 10.0.0."), HOSTS * (HOSTS - 1), "{lines:#?}");
    assert_eq!(count(" fe80::"), HOSTS * (HOSTS - 1), "{lines:#?}");

    // ibnetdiscover (from h1) sees our topology: every node by GUID and description, every
    // cable between the same ports.
    let topo = Topology::single_switch(HOSTS).unwrap();
    let out = diag(dir.path(), &sock, "h1", &["ibnetdiscover"]);
    let tag = |n: usize| {
        let node = &topo.nodes()[n];
        let prefix = if node.kind == NodeKind::Switch {
            "S"
        } else {
            "H"
        };
        format!("\"{prefix}-{:016x}\"", node.guid.0)
    };
    for (n, node) in topo.nodes().iter().enumerate() {
        let kind = if node.kind == NodeKind::Switch {
            "Switch"
        } else {
            "Ca"
        };
        let header = format!("{kind}\t{} {}", node.ports, tag(n));
        assert!(
            out.lines()
                .any(|l| l.starts_with(&header) && l.contains(&format!("\"{}\"", node.desc))),
            "no {header} ({}) in\n{out}",
            node.desc
        );
    }
    for link in topo.links() {
        for (a, b) in [(link.a, link.b), (link.b, link.a)] {
            let line = format!("[{}]", a.port);
            let peer = format!("{}[{}]", tag(b.node), b.port);
            assert!(
                out.lines()
                    .any(|l| l.starts_with(&line) && l.contains(&peer)),
                "no cable {line} -> {peer} in\n{out}"
            );
        }
    }
    let switches = out.lines().filter(|l| l.starts_with("Switch")).count();
    let cas = out.lines().filter(|l| l.starts_with("Ca")).count();
    assert_eq!((switches, cas), (1, HOSTS), "{out}");

    // saquery (from h2, trusted: SM_Key 1, OpenSM's default): the members of the broadcast
    // group are our hosts' ports, each a full member (JoinState 0x1).
    let out = diag(
        dir.path(),
        &sock,
        "h2",
        &[
            "saquery",
            "--smkey",
            "1",
            "MCMR",
            "--mgid",
            "ff12:401b:ffff::ffff:ffff",
        ],
    );
    let mut got = values(&out, "PortGid");
    got.sort();
    let mut want: Vec<String> = topo
        .cas()
        .map(|n| {
            let g = topo.nodes()[n].port_guid(1).0;
            Ipv6Addr::from((0xfe80u128 << 112) | u128::from(g)).to_string()
        })
        .collect();
    want.sort();
    assert_eq!(got, want, "{out}");
    assert_eq!(values(&out, "JoinState"), vec!["0x1"; HOSTS], "{out}");
    assert_eq!(values(&out, "pkey"), vec!["0xffff"; HOSTS], "{out}");

    // perfquery (from h1, its own port by the LID OpenSM gave it): the PMA's ClassPortInfo, then
    // the extended counters, which count at least the pings above.
    if installed("perfquery") {
        let out = diag(dir.path(), &sock, "h1", &["perfquery", "-x"]);
        assert!(
            out.starts_with("# Port extended counters: Lid ") && out.contains("(CapMask: 0x200"),
            "{out}"
        );
        // `PortXmitPkts:....................61`
        let pkts: Vec<u64> = out
            .lines()
            .filter_map(|l| l.strip_prefix("PortXmitPkts:"))
            .filter_map(|v| v.trim_start_matches('.').trim().parse().ok())
            .collect();
        assert!(matches!(pkts[..], [n] if n >= 4), "{out}");
    }
}

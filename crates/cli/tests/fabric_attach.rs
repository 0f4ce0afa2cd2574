//! `ipoib fabric` and two `ipoib attach` processes over loopback UDP (docs/UDP-FABRIC.md): both
//! hosts get an identity and carrier, SIGINT makes a host detach (the fabric sees it leave) and
//! stops the fabric with its counters; every process exits 0. And what a user gets wrong: a
//! timeout below the keepalives, a fabric with no slot, `--sm none` without `--ibsim` or with
//! `--guid2lid`, a guid2lid file in no directory, a host
//! whose fabric never answers, a device name taken by another device, a device another attach
//! process serves.

mod common;

use common::Talker;
use std::process::Command;

#[test]
fn fabric_and_two_attached_hosts() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path();
    let (mut fabric, l) = Talker::fabric_udp(&[], run);
    assert!(l.contains("2 CAs for hosts"), "{l}");
    let addr = common::listen_addr(&l);
    let mut a = Talker::attach_no_tun(&addr, "10.0.0.2/24", &[], run);
    let mut b = Talker::attach_no_tun(
        &addr,
        "10.0.0.3/24",
        &["--dev", "ib1", "--mode", "connected"],
        run,
    );
    a.expect("ib0: attached as CA");
    b.expect("ib1: attached as CA");
    let la = a.expect("ib0: carrier up (LID ");
    let lb = b.expect("ib1: carrier up (LID ");
    assert_ne!(la.split("LID ").nth(1), lb.split("LID ").nth(1), "two LIDs");
    fabric.expect("attached as CA 1");
    fabric.expect("attached as CA 2");

    // `ipoib show --dev ib0` reads the attach process's tables over its control socket.
    let o = Command::new(env!("CARGO_BIN_EXE_ipoib"))
        .args(["show", "--dev", "ib0", "counters"])
        .env("IPOIB_RUN_DIR", run)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{out} {}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        out.contains("attach") && out.contains("keepalives"),
        "{out}"
    );
    // `ipoib show --fabric` reads the fabric's slots (the only fabric of the run directory) and,
    // with its port, its counters.
    let show = |args: &[&str]| {
        let o = Command::new(env!("CARGO_BIN_EXE_ipoib"))
            .arg("show")
            .args(args)
            .env("IPOIB_RUN_DIR", run)
            .output()
            .unwrap();
        let out = String::from_utf8_lossy(&o.stdout).into_owned();
        assert!(
            o.status.success(),
            "{out} {}",
            String::from_utf8_lossy(&o.stderr)
        );
        out
    };
    let hosts = show(&["--fabric", "hosts"]);
    assert!(hosts.starts_with("HOST"), "{hosts}");
    assert_eq!(hosts.matches(" attached ").count(), 2, "{hosts}");
    assert!(hosts.contains("ca1 ") && hosts.contains("ca2 "), "{hosts}");
    let port = addr.rsplit(':').next().unwrap();
    let counters = show(&[&format!("--fabric={port}"), "counters"]);
    assert!(
        counters.contains("fabric:") && counters.contains("unknown_session"),
        "{counters}"
    );
    assert!(counters.contains("ca1 slot:"), "{counters}");
    // The fabric's own log names the CAs by topology node (`h1`), its slots are `ca1`...: a
    // wrong name lists the right ones (it said only `no host "h1"`).
    let o = Command::new(env!("CARGO_BIN_EXE_ipoib"))
        .args(["show", "--fabric", "--host", "h1", "hosts"])
        .env("IPOIB_RUN_DIR", run)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&o.stderr),
        "ipoib show: no host \"h1\" (hosts: ca1, ca2)\n"
    );
    // So does an attach process, whose one host is its device.
    let o = Command::new(env!("CARGO_BIN_EXE_ipoib"))
        .args(["show", "--dev", "ib0", "--host", "h1", "neigh"])
        .env("IPOIB_RUN_DIR", run)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&o.stderr),
        "ipoib show: no host \"h1\" (hosts: ib0)\n"
    );

    assert_eq!(b.interrupt_and_wait(), 0);
    assert!(
        b.seen.iter().any(|l| l.contains("ib1: detached")),
        "{:?}",
        b.seen
    );
    fabric.expect(" left CA ");

    assert_eq!(fabric.interrupt_and_wait(), 0);
    let summary = fabric.expect("ipoib fabric: stopped");
    assert!(summary.contains("attached 2, detached 1"), "{summary}");
    // Each host attached through a challenge; none sent a wrong cookie or version.
    assert!(
        summary.contains("bad version 0") && summary.contains("bad cookie 0)"),
        "{summary}"
    );
    assert_eq!(a.interrupt_and_wait(), 0);
}

/// `ipoib fabric --pcap FILE --pcap-limit N` records the fabric's links as a capture that
/// `ipoib decode` reads with every CRC good (and tshark too, where installed), and the file stays
/// within N bytes however long the fabric runs.
#[test]
fn fabric_pcap_is_a_capture_within_its_limit() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path();
    let cap = |name: &str, limit: &str| {
        let pcap = run.join(name);
        let (mut fabric, l) = Talker::fabric_udp(
            &["--pcap", pcap.to_str().unwrap(), "--pcap-limit", limit],
            run,
        );
        let addr = common::listen_addr(&l);
        let mut a = Talker::attach_no_tun(&addr, "10.0.0.2/24", &[], run);
        a.expect("ib0: carrier up (LID ");
        assert_eq!(a.interrupt_and_wait(), 0);
        fabric.expect(" left CA ");
        assert_eq!(fabric.interrupt_and_wait(), 0);
        pcap
    };
    // Unbounded enough for the whole run, then a limit it reaches.
    let secs = || common::unix_secs() as u64;
    let began = secs();
    let whole = cap("whole.pcap", "100000000");
    // Time-stamped by the wall clock: the first packet within the run.
    let bytes = std::fs::read(&whole).unwrap();
    let first = u64::from(u32::from_le_bytes(bytes[24..28].try_into().unwrap()));
    assert!((began..=secs()).contains(&first), "first packet at {first}");
    let whole_len = std::fs::metadata(&whole).unwrap().len();
    let cut = cap("cut.pcap", "2000");
    let cut_len = std::fs::metadata(&cut).unwrap().len();
    assert!(
        whole_len > 2000,
        "the whole run's capture: {whole_len} bytes"
    );
    assert!(
        cut_len <= 2000,
        "the capture passed its limit: {cut_len} bytes"
    );
    for (p, at_least) in [(&whole, 10), (&cut, 1)] {
        let o = Command::new(env!("CARGO_BIN_EXE_ipoib"))
            .args(["decode", p.to_str().unwrap()])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        let summary = err.lines().last().unwrap_or("");
        assert_eq!(o.status.code(), Some(0), "{summary}");
        let n: u64 = summary
            .strip_prefix("ipoib decode: ")
            .and_then(|r| r.split(' ').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        assert!(n >= at_least, "{}: {summary}", p.display());
        assert!(
            summary.contains("0 malformed packets, 0 bad ICRC, 0 bad VCRC"),
            "{summary}"
        );
    }
    if Command::new("tshark").arg("-v").output().is_ok() {
        let o = Command::new("tshark")
            .args(["-r", whole.to_str().unwrap(), "-Y", "infiniband"])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let lines = String::from_utf8_lossy(&o.stdout).lines().count();
        assert!(lines >= 10, "tshark read {lines} InfiniBand packets");
    }
}

/// `ipoib attach --pcap FILE` records its own host's cable, both ways, from the first packet
/// on: the broadcast join and the host's other SA traffic (no SMPs: the fabric answers them for
/// a remote host, docs/UDP-FABRIC.md "PortConfig carries what the SMA set"), as `ipoib decode` reads
/// them with every CRC good; the host says on its way out how many packets the file holds; time
/// stamps are the wall clock's.
#[test]
fn attach_pcap_records_the_hosts_cable_both_ways() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path();
    let pcap = run.join("host.pcap");
    let (mut fabric, l) = Talker::fabric_udp(&[], run);
    let addr = common::listen_addr(&l);
    let began = common::unix_secs() as u64;
    let mut a = Talker::attach_no_tun(
        &addr,
        "10.0.0.2/24",
        &["--pcap", pcap.to_str().unwrap()],
        run,
    );
    let up = a.expect("ib0: carrier up (LID ");
    let lid: u16 = up
        .split("(LID ")
        .nth(1)
        .and_then(|r| r.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{up}"));
    assert_eq!(a.interrupt_and_wait(), 0);
    let said = format!("ipoib attach: --pcap {}: ", pcap.display());
    let (line, packets) = common::pcap_said(&a.expect(&said), "ipoib attach", &pcap);
    let packets = packets as usize;
    assert_eq!(fabric.interrupt_and_wait(), 0);
    let bytes = std::fs::read(&pcap).unwrap();
    let all = ipoib_wire::pcap::CaptureReader::read_all(&bytes[..]).unwrap();
    assert_eq!(all.len(), packets, "{line}");
    let from = all
        .iter()
        .filter(|p| u16::from_be_bytes([p.data[6], p.data[7]]) == lid)
        .count();
    assert!(
        from > 0 && from < packets,
        "{from} of {packets} from LID {lid}"
    );
    let first = all[0].ts_ns.unwrap() / 1_000_000_000;
    assert!(
        first >= began,
        "first packet at {first}, the test began at {began}"
    );
    common::assert_decodes(&pcap, packets as u64);
}

/// `--timeout-ms` shorter than two of the hosts' 1 s keepalives is refused: the fabric would drop
/// every idle host between its keepalives, and the host attach again, over and over.
#[test]
fn a_timeout_below_the_keepalives_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "fabric",
        "--listen",
        "udp:127.0.0.1:0",
        "--timeout-ms",
        "500",
    ];
    let l = refused(&args, dir.path(), "--timeout-ms 500: at least 2000");
    assert!(l.starts_with("ipoib fabric: "), "{l}");
}

/// A fabric with no CA for hosts (`--hosts 1`: the SM's own) is refused, not served empty.
#[test]
fn a_fabric_without_slots_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let args = ["fabric", "--listen", "udp:127.0.0.1:0", "--hosts", "1"];
    let l = refused(&args, dir.path(), "no channel adapter left for hosts");
    assert!(
        l.starts_with("ipoib fabric: --topology single-switch: "),
        "{l}"
    );
}

/// `--sm none` runs no SM of ours: without `--ibsim` nothing could manage the fabric, and our
/// SM's LID table (`--guid2lid`) has no SM to keep it (OpenSM keeps its own): both refused.
#[test]
fn sm_none_needs_ibsim_and_takes_no_guid2lid() {
    let dir = tempfile::tempdir().unwrap();
    let args = ["fabric", "--listen", "udp:127.0.0.1:0", "--sm", "none"];
    refused(&args, dir.path(), "--ibsim <NAME>");
    let table = dir.path().join("guid2lid");
    let mut args = args.to_vec();
    args.extend([
        "--ibsim",
        "ipoib-no-sm",
        "--guid2lid",
        table.to_str().unwrap(),
    ]);
    let l = refused(&args, dir.path(), "--guid2lid is our SM's table");
    assert!(l.starts_with("ipoib fabric: "), "{l}");
    assert!(!table.exists());
}

/// A host whose fabric never answers says so after 3 s and keeps trying; stopped, it does not
/// claim to have detached from a session it never had.
#[test]
fn a_host_without_a_fabric_says_so() {
    let dir = tempfile::tempdir().unwrap();
    // A UDP port nobody listens on: bound here, never read.
    let quiet = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let addr = format!("udp:{}", quiet.local_addr().unwrap());
    let mut a = Talker::attach_no_tun(&addr, "10.0.0.2/24", &[], dir.path());
    a.expect(&format!("ib0: no answer from {addr} for 3 s"));
    let (_, lines) = a.terminate(std::time::Duration::from_secs(10));
    assert!(!lines.iter().any(|l| l.contains("detached")), "{lines:?}");
    assert!(
        lines
            .iter()
            .any(|l| l.contains("stopped while not attached")),
        "{lines:?}"
    );
}

/// As root, a TUN device that cannot be made because a device of that name is no TUN device
/// (`lo`) is named so, without the hint that root is needed; nothing is made.
#[test]
fn a_device_name_taken_by_another_device_is_named() {
    if !nix::unistd::geteuid().is_root() || !std::path::Path::new("/dev/net/tun").exists() {
        eprintln!("skipped: needs root and /dev/net/tun");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let quiet = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let addr = format!("udp:{}", quiet.local_addr().unwrap());
    let args = [
        "attach",
        "--fabric",
        &addr,
        "--ip",
        "10.0.0.2/24",
        "--dev",
        "lo",
    ];
    let mut a = Talker::ipoib(&args, dir.path());
    let l = a.expect("TUN device lo: ");
    assert!(l.contains("is there a device lo already?"), "{l}");
    assert!(!l.contains("root is needed"), "{l}");
}

/// `--guid2lid` in a directory that does not exist is refused at the start: the file could never
/// be written, and the LIDs would not survive a restart as asked.
#[test]
fn a_guid2lid_file_in_no_directory_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("no-such-dir").join("guid2lid");
    let args = [
        "fabric",
        "--listen",
        "udp:127.0.0.1:0",
        "--guid2lid",
        file.to_str().unwrap(),
    ];
    let l = refused(&args, dir.path(), "no directory");
    assert!(l.starts_with("ipoib fabric: --guid2lid "), "{l}");
}

/// An unwritable `--pcap` is refused naming the option (it was "ipoib fabric: PATH: No such file
/// or directory", as if the path were the fabric's own).
#[test]
fn an_unwritable_pcap_is_refused_naming_the_option() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("no-such-dir").join("x.pcap");
    let args = [
        "fabric",
        "--listen",
        "udp:127.0.0.1:0",
        "--pcap",
        file.to_str().unwrap(),
    ];
    let l = refused(&args, dir.path(), "No such file");
    assert!(l.starts_with("ipoib fabric: --pcap "), "{l}");
}

/// A `--pcap-limit` below the pcap file's 24-byte header left an empty file, no capture at all,
/// and said nothing: refused. A limit reached is said when it is.
#[test]
fn a_pcap_limit_below_the_header_is_refused_and_one_reached_is_said() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("x.pcap");
    let args = [
        "fabric",
        "--listen",
        "udp:127.0.0.1:0",
        "--pcap",
        file.to_str().unwrap(),
        "--pcap-limit",
        "10",
    ];
    let l = refused(&args, dir.path(), "--pcap-limit 10: at least 24 bytes");
    assert!(l.starts_with("ipoib fabric: "), "{l}");
    assert!(!file.exists());
    // Room for the header and no record (the SM's first SMPs pass it at once): the fabric says
    // that the recording stopped; it used to stop without a word.
    let limit = dir.path().join("y.pcap");
    let (mut fabric, _) = Talker::fabric_udp(
        &["--pcap", limit.to_str().unwrap(), "--pcap-limit", "100"],
        dir.path(),
    );
    let l = fabric.expect("recording stopped at --pcap-limit 100 (24 bytes written)");
    assert!(l.starts_with("ipoib fabric: --pcap "), "{l}");
}

/// A capture the disk cannot take (here a file size limit of a few KiB, `ulimit -f`, with
/// SIGXFSZ ignored so that the write fails as on a full disk): the fabric exited 1 with "File
/// too large", taking every host's fabric down. It now stops recording, says so, and serves on.
#[test]
fn a_capture_the_disk_cannot_take_stops_and_the_fabric_serves_on() {
    let dir = tempfile::tempdir().unwrap();
    let pcap = dir.path().join("x.pcap");
    let mut fabric = Talker::spawn_stderr(
        Command::new("sh")
            .arg("-c")
            .arg(r#"trap '' XFSZ; ulimit -f 8; exec "$@""#)
            .arg("sh")
            .arg(common::BIN)
            .args(["fabric", "--listen", "udp:127.0.0.1:0", "--hosts", "3"])
            .arg("--pcap")
            .arg(&pcap)
            .env("IPOIB_RUN_DIR", dir.path()),
    );
    let l = fabric.expect("recording stopped, the fabric serves on");
    assert!(l.starts_with("ipoib fabric: --pcap "), "{l}");
    let l = fabric.expect("listening on udp:");
    let addr = common::listen_addr(&l);
    let mut a = Talker::attach_no_tun(&addr, "10.0.0.2/24", &[], dir.path());
    a.expect("ib0: carrier up");
    assert_eq!(fabric.interrupt_and_wait(), 0, "{:?}", fabric.seen);
}

/// A host the fabric refuses (no free slot: `--hosts 3` has two) says so once, not at every
/// retry, and is not told the fabric is silent: it answered.
#[test]
fn a_refused_host_says_so_once() {
    let dir = tempfile::tempdir().unwrap();
    let (_fabric, l) = Talker::fabric_udp(&[], dir.path());
    let addr = common::listen_addr(&l);
    let mut a = Talker::attach_no_tun(&addr, "10.0.0.2/24", &[], dir.path());
    a.expect("ib0: carrier up");
    let mut c = Talker::attach_no_tun(&addr, "10.0.0.4/24", &["--dev", "ib2"], dir.path());
    c.expect("ib2: carrier up");
    let mut b = Talker::attach_no_tun(&addr, "10.0.0.3/24", &["--dev", "ib1"], dir.path());
    b.expect("ib1: refused: no free slot");
    // Past the 3 s after which a silent fabric would be named, with 6 retries refused meanwhile.
    let silent = b.wait_for("no answer", std::time::Duration::from_millis(3500));
    assert!(silent.is_none(), "{silent:?}");
    let (_, lines) = b.terminate(std::time::Duration::from_secs(10));
    let refusals = lines.iter().filter(|l| l.contains("refused")).count();
    assert_eq!(refusals, 1, "{lines:?}");
}

/// A host whose fabric is of another build, speaking version 1 of the protocol (no attach
/// cookie), is answered a reject "bad version" in version 1's header at each request: the host
/// says so once, naming both versions, and is not told the fabric is silent. Before, a host
/// could not read a reject in another version than its own: counted as malformed, it said only
/// that the fabric did not answer.
#[test]
fn a_host_of_another_version_says_so_once() {
    let dir = tempfile::tempdir().unwrap();
    // A fabric of version 1: every datagram answered with its reject "bad version" (magic,
    // version 1, AttachReject, session 0, reason 2; docs/UDP-FABRIC.md "Datagrams").
    let old = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let addr = format!("udp:{}", old.local_addr().unwrap());
    old.set_read_timeout(Some(std::time::Duration::from_millis(100)))
        .unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let s = stop.clone();
    let answer = std::thread::spawn(move || {
        let mut buf = [0u8; 2048];
        while !s.load(std::sync::atomic::Ordering::Relaxed) {
            if let Ok((_, from)) = old.recv_from(&mut buf) {
                let reject = [0x49, 0x42, 1, 3, 0, 0, 0, 0, 0, 0, 0, 0, 2];
                let _ = old.send_to(&reject, from);
            }
        }
    });
    let mut a = Talker::attach_no_tun(&addr, "10.0.0.2/24", &[], dir.path());
    let l = a.expect("ib0: refused: bad version");
    assert!(
        l.contains("speaks version 1 of the protocol, this ipoib version 2"),
        "{l}"
    );
    let silent = a.wait_for("no answer", std::time::Duration::from_millis(3500));
    assert!(silent.is_none(), "{silent:?}");
    let (_, lines) = a.terminate(std::time::Duration::from_secs(10));
    let refusals = lines.iter().filter(|l| l.contains("refused")).count();
    assert_eq!(refusals, 1, "{lines:?}");
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    answer.join().unwrap();
}

/// A host whose port is up but whose interface never gets carrier said nothing of why: with a
/// `--pkey` the port's P_Key table lacks (IBA 1 §10.9.2), or a fabric whose partitions have no
/// IPoIB broadcast group, it sat attached and silent. It now says why, once.
#[test]
fn a_host_without_carrier_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let (_fabric, l) = Talker::fabric_udp(&[], dir.path());
    let addr = common::listen_addr(&l);
    let mut a = Talker::attach_no_tun(&addr, "10.0.0.2/24", &["--pkey", "0x8001"], dir.path());
    a.expect("ib0: no carrier: --pkey 0x8001 is not in the port's P_Key table (0xffff)");
    let (_, lines) = a.terminate(std::time::Duration::from_secs(10));
    let said = lines.iter().filter(|l| l.contains("no carrier")).count();
    assert_eq!(said, 1, "{lines:?}");

    // A partition without the `ipoib` flag: the SA has no broadcast group to join (§5).
    let parts = dir.path().join("p.conf");
    std::fs::write(&parts, "Default=0x7fff : ALL=full ;\n").unwrap();
    let (_fabric, l) = Talker::fabric_udp(&["--partitions", parts.to_str().unwrap()], dir.path());
    let addr = common::listen_addr(&l);
    let mut b = Talker::attach_no_tun(&addr, "10.0.0.3/24", &["--dev", "ib1"], dir.path());
    b.expect("ib1: multicast join ff12:401b:ffff::ffff:ffff (join state 0x1) failed: SA status");
    // And, the port being up with the P_Key, what to do about it.
    let l =
        b.expect("ib1: no carrier after 3 s: the broadcast group of P_Key 0xffff is not joined");
    assert!(
        l.contains("(the port's P_Keys: 0xffff; --pkey chooses"),
        "{l}"
    );
}

/// A run directory the process cannot use (a user without root cannot write /run/ipoib; here a
/// file stands in its place): the fabric and the host run on without a control socket, and say
/// that `ipoib show` cannot reach them and how to give them one. It was "control socket (ipoib
/// show): PATH: Permission denied", with no way out.
#[test]
fn no_control_socket_says_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("not-a-dir");
    std::fs::write(&run, "").unwrap();
    let (mut fabric, l) = Talker::fabric_udp(&[], &run);
    let want = "no control socket, so `ipoib show` cannot read this process";
    let hint = "(set IPOIB_RUN_DIR to a directory you can write";
    let line = fabric.expect(want);
    assert!(
        line.starts_with("ipoib fabric: ") && line.contains(hint),
        "{line}"
    );
    let addr = common::listen_addr(&l);
    let mut a = Talker::attach_no_tun(&addr, "10.0.0.2/24", &[], &run);
    let line = a.expect(want);
    assert!(
        line.starts_with("ipoib attach: ") && line.contains(hint),
        "{line}"
    );
    a.expect("ib0: carrier up");
}

/// `--hosts` with a net file must match its hosts, as `ipoib sim` and the lab ask; it was
/// ignored, and the fabric served the file's hosts whatever number was given.
#[test]
fn hosts_must_match_a_net_file() {
    let dir = tempfile::tempdir().unwrap();
    let net = dir.path().join("two.net");
    std::fs::write(
        &net,
        "Switch 2 \"S1\"\n[1] \"H1\"[1]\n[2] \"H2\"[1]\n\
         Hca 1 \"H1\"\n[1] \"S1\"[1]\nHca 1 \"H2\"\n[1] \"S1\"[2]\n",
    )
    .unwrap();
    let args = [
        "fabric",
        "--listen",
        "udp:127.0.0.1:0",
        "--topology",
        net.to_str().unwrap(),
        "--hosts",
        "7",
    ];
    let l = refused(&args, dir.path(), "--hosts 7, but");
    assert!(l.contains("has 2 hosts"), "{l}");
    // Without --hosts, the file's: one CA for hosts beside the SM's.
    let mut fabric = Talker::ipoib(&args[..5], dir.path());
    let l = fabric.expect("listening on udp:");
    assert!(l.contains(", 1 CAs for hosts"), "{l}");
}

/// A second attach process with the device of a running one is refused (status 2, the device and
/// the socket named) instead of running on while `ipoib show --dev` reaches the first; a stale
/// socket (nobody listens) is replaced as before.
#[test]
fn a_device_another_attach_serves_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (_fabric, l) = Talker::fabric_udp(&[], dir.path());
    let addr = common::listen_addr(&l);
    let mut a = Talker::attach_no_tun(&addr, "10.0.0.2/24", &[], dir.path());
    a.expect("ib0: carrier up");
    let args = [
        "attach",
        "--no-tun",
        "--fabric",
        &addr,
        "--ip",
        "10.0.0.3/24",
    ];
    let l = refused(
        &args,
        dir.path(),
        "another process serves its control socket",
    );
    let socket = dir.path().join("attach-ib0.sock");
    assert!(l.starts_with("ipoib attach: ib0: "), "{l}");
    assert!(l.contains(socket.to_str().unwrap()), "{l}");
    // The first one still answers on it.
    let view = common::show_json_in(Some(dir.path()), &["show", "--dev", "ib0", "counters"]);
    assert!(!view.is_empty(), "ib0 answers");
    drop(a);
    // A socket file left by a process that died: replaced.
    let stale = dir.path().join("attach-ib1.sock");
    drop(std::os::unix::net::UnixListener::bind(&stale).unwrap());
    assert!(stale.exists());
    let mut b = Talker::attach_no_tun(&addr, "10.0.0.3/24", &["--dev", "ib1"], dir.path());
    b.expect("ib1: carrier up");
    let view = common::show_json_in(Some(dir.path()), &["show", "--dev", "ib1", "counters"]);
    assert!(!view.is_empty(), "ib1 answers on the replaced socket");
}

/// Runs `ipoib ARGS`, which must refuse them: the line saying why contains `why`, and the exit
/// status is 2 (a second run, to read the status). The line is returned.
fn refused(args: &[&str], dir: &std::path::Path, why: &str) -> String {
    let mut fabric = Talker::ipoib(args, dir);
    let l = fabric.expect(why);
    drop(fabric);
    let ran = common::run(
        Command::new(common::BIN)
            .args(args)
            .env("IPOIB_RUN_DIR", dir),
        std::time::Duration::from_secs(10),
    );
    assert_eq!(ran.and_then(|(s, _)| s.code()), Some(2), "{args:?}");
    l
}

/// A SIGINT while the fabric is built (a fat tree of 16384 CAs: over a second in a debug build)
/// is not lost when the fabric began with SIGINT ignored, as a script's `ipoib fabric ... &`
/// does: it stops before listening, status 0. It used to be discarded (the handler came after
/// the fabric was built), and the fabric then served until killed.
#[test]
fn sigint_while_the_fabric_is_built_stops_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut fabric = Talker::with_sigint_ignored(
        &[
            "fabric",
            "--listen",
            "udp:127.0.0.1:0",
            "--topology",
            "fat-tree",
            "--hosts",
            "16384",
        ],
        Some(dir.path()),
    );
    // A handler: the first thing the process makes, in milliseconds, later on a busy machine.
    // Code that made it after the build (or never) is still caught: the SIGINT then finds the
    // fabric listening, or is lost.
    fabric.until_it_catches_sigint(std::time::Duration::from_secs(10));
    assert_eq!(fabric.interrupt_and_wait(), 0, "{:?}", fabric.seen);
    assert!(
        fabric
            .seen
            .iter()
            .any(|l| l.contains("SIGINT while the fabric was built: stopped")),
        "{:?}",
        fabric.seen
    );
    assert!(
        !fabric.seen.iter().any(|l| l.contains("listening on")),
        "{:?}",
        fabric.seen
    );
}

/// A CA cabled only through another host's second port (a CA does not forward SMPs): `lab` and
/// `ibsim-server` warned about it at the start, the fabric did not, and a host attached to that
/// slot waited without carrier and without a word.
#[test]
fn ports_the_sm_cannot_reach_are_warned_about_at_the_start() {
    let dir = tempfile::tempdir().unwrap();
    let net = dir.path().join("split.net");
    std::fs::write(&net, common::SPLIT_NET).unwrap();
    let args = [
        "fabric",
        "--listen",
        "udp:127.0.0.1:0",
        "--topology",
        net.to_str().unwrap(),
    ];
    let mut fabric = Talker::ipoib(&args, dir.path());
    let l = fabric.expect("warning: the subnet manager cannot reach");
    assert!(l.starts_with("ipoib fabric: warning: "), "{l}");
    assert!(
        l.contains("cannot reach 2 CA port(s) and 0 switch(es)"),
        "{l}"
    );
    assert!(l.contains("H2 port 2, H3 port 1"), "{l}");
    fabric.expect("listening on udp:");
    assert_eq!(fabric.interrupt_and_wait(), 0, "{:?}", fabric.seen);
}

/// `--ibsim`: a client the ibsim server refuses learns no reason (only "connect failed"), so the
/// fabric says why on standard error, as `ipoib ibsim-server` does. Before, it said nothing.
#[test]
fn the_ibsim_server_of_a_fabric_tells_its_refusals() {
    use ipoib_runtime::ibsim::msg::{ClientInfo, CtlType, SimCtl};
    use std::os::linux::net::SocketAddrExt;
    use std::os::unix::net::{SocketAddr, UnixDatagram};
    let dir = tempfile::tempdir().unwrap();
    let name = format!("ipoib-fabric-told-{}", std::process::id());
    let args = [
        "fabric",
        "--listen",
        "udp:127.0.0.1:0",
        "--sm",
        "none",
        "--ibsim",
        &name,
    ];
    let mut fabric = Talker::ipoib(&args, dir.path());
    fabric.expect("listening on udp:");
    // ibsim's CONNECT (`sim_ctl` with `sim_client_info`, docs/IBSIM.md) for a node that does
    // not exist, from a control socket named as umad2sim names it (the names end in one NUL).
    let tag = std::process::id();
    let abs = |s: String| SocketAddr::from_abstract_name(format!("{s}\0")).unwrap();
    let ctl = UnixDatagram::bind_addr(&abs(format!("{name}:ctl{tag}"))).unwrap();
    ctl.connect_addr(&abs(format!("{name}:ctl"))).unwrap();
    let info = ClientInfo {
        id: tag,
        qp: 0,
        issm: 0,
        node_id: "nope".to_string(),
    };
    ctl.send(&SimCtl::new(0, CtlType::Connect, &info.to_bytes()).to_bytes())
        .unwrap();
    let l = fabric.expect("ibsim server: refused client");
    assert!(
        l.starts_with("ipoib fabric: ibsim server: refused client "),
        "{l}"
    );
    assert!(l.ends_with(" (node \"nope\"): no such node"), "{l}");
    // A CA of the topology whose host would run in an `ipoib attach` process (README's
    // `SIM_HOST=h1` for `ipoib ibsim-server`): not "no such node".
    let ctl2 = UnixDatagram::bind_addr(&abs(format!("{name}:ctl{}", tag + 1))).unwrap();
    ctl2.connect_addr(&abs(format!("{name}:ctl"))).unwrap();
    let info = ClientInfo {
        id: tag + 1,
        node_id: "h1".to_string(),
        ..info
    };
    ctl2.send(&SimCtl::new(0, CtlType::Connect, &info.to_bytes()).to_bytes())
        .unwrap();
    let l = fabric.expect_nth("ibsim server: refused client", 2);
    assert!(
        l.ends_with(
            " (node \"h1\"): not a CA this server attaches clients to (a switch, or a CA whose \
             host runs in an `ipoib attach` process)"
        ),
        "{l}"
    );
    assert_eq!(fabric.interrupt_and_wait(), 0, "{:?}", fabric.seen);
}

//! `ipoib demo` run as a program (`cargo run --release -- demo` on a fresh clone
//! succeeds, and tshark reads its pcap with no malformed packet, ARP with hardware type 32 and
//! 20-byte addresses, and matching ICMP echo pairs): the default run and its
//! JSON succeed with every figure in place, the same seed gives the same pcap, a subnet where some
//! host cannot come up exits 1, bad arguments exit 2, and tshark checks the pcap (skipped, with a
//! message, only when tshark is not installed).

mod common;

use common::ipoib_output;
use serde_json::Value as Json;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

// The README's main command with no arguments: 4 hosts on one switch, pcap in the current
// directory, text for people.
#[test]
fn default_demo_succeeds_and_shows_everything() {
    let dir = tempfile::tempdir().unwrap();
    let o = ipoib_output(dir.path(), &["demo"]);
    assert!(o.status.success(), "{}\n{}", stdout(&o), stderr(&o));
    let t = stdout(&o);
    for want in [
        "ipoib demo: 4 hosts (single-switch), seed 1",
        "Broadcast group ff12:401b:ffff::ffff:ffff: MLID 0xc000, Q_Key 0x0b1b, MTU 2048, so the IPoIB MTU is 2044",
        "Carrier on 4/4 hosts",
        // The hosts table: LID, QPN, addresses, GID; the 20-byte link-layer addresses.
        "h0    1    0x000048  10.0.0.1/8  fe80::200:0:10:1  fe80::10:1  up",
        "h3  00:00:00:48:fe:80:00:00:00:00:00:00:00:00:00:00:00:10:00:07",
        "ARP reply",
        "neighbor advert",
        "IPv4 ping, all 12 pairs: 12 answered",
        "IPv6 ping, all 12 pairs: 12 answered",
        "h0    h1  10.0.0.1  10.0.0.2",
        "fe80::200:0:10:1  fe80::200:0:10:3",
        "Multicast 239.1.1.1 (MGID ff12:401b:ffff::f01:101",
        "FullMember joins: h1, h3",
        "it joined SendOnlyNonMember, then sent \"hello from h0\" to UDP port 5001",
        "Received by: h1, h3 (each member once, nobody else)",
        "SA multicast groups",
        "ff12:401b:ffff::ffff:ffff  broadcast",
        "239.1.1.1",
        "3 (2 full, 1 send-only)",
        // The SM's own group came from the default partition: no partitions file was given.
        "4 (4 full), default partition",
        "(default partition: the broadcast group the SM makes at its start for P_Key 0xffff",
        "wireshark ipoib-demo.pcap",
        "tshark -r ipoib-demo.pcap -V",
        "Result: OK (4/4 hosts up; 12/12 IPv4 and 12/12 IPv6 ping pairs answered; multicast reached 2/2 members and nobody else)",
    ] {
        assert!(t.contains(want), "missing {want:?} in:\n{t}");
    }
    assert!(!t.contains("no reply"), "{t}");
    assert!(!t.contains("partitions.conf"), "no file was given:\n{t}");
    assert!(
        !t.contains("Debug") && !t.contains("{ "),
        "no debug dumps:\n{t}"
    );
    let pcap = dir.path().join("ipoib-demo.pcap");
    let bytes = std::fs::read(&pcap).expect("default pcap in the current directory");
    assert!(bytes.len() > 10_000);
}

fn json_run(dir: &Path, args: &[&str]) -> Json {
    let o = ipoib_output(dir, args);
    assert!(o.status.success(), "{}", stderr(&o));
    serde_json::from_slice(&o.stdout).expect("one JSON document")
}

#[test]
fn json_has_every_figure() {
    let dir = tempfile::tempdir().unwrap();
    let j = json_run(dir.path(), &["demo", "--json", "--pcap", "x.pcap"]);
    assert_eq!(j["ok"], true);
    assert_eq!(j["hosts"], 4);
    assert_eq!(j["carrier"], 4);
    assert_eq!(j["broadcast"]["qkey"], 0x0b1b);
    assert_eq!(j["broadcast"]["ipoib_mtu"], 2044);
    let hosts = j["host_list"].as_array().unwrap();
    assert_eq!(hosts.len(), 4);
    let lids: BTreeSet<u64> = hosts.iter().map(|h| h["lid"].as_u64().unwrap()).collect();
    assert_eq!(lids.len(), 4, "distinct LIDs");
    for h in hosts {
        assert_eq!(h["carrier"], true);
        assert_eq!(h["hwaddr"].as_str().unwrap().len(), 20 * 3 - 1, "20 bytes");
        assert!(h["ipv6"].as_str().unwrap().starts_with("fe80::"));
    }
    for fam in ["ipv4", "ipv6"] {
        let p = &j["ping"][fam];
        assert_eq!(p["answered"], 12, "{fam}");
        for pair in p["pairs"].as_array().unwrap() {
            let first = pair["first_rtt_ns"].as_u64().unwrap();
            let then = pair["rtt_ns"].as_u64().unwrap();
            assert!(
                then > 0 && first > then,
                "{fam}: resolution makes the first slower"
            );
        }
    }
    assert_eq!(j["ping"]["sampled"], false);
    let kinds: BTreeSet<&str> = j["resolutions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, BTreeSet::from(["arp", "nd"]));
    let m = &j["multicast"];
    assert_eq!(m["ok"], true);
    assert_eq!(m["members"], m["received_by"]);
    assert_eq!(m["sender"], "h0");
    assert_eq!(m["sender_join_state"], 4, "SendOnlyNonMember");
    let groups = j["groups"].as_array().unwrap();
    let b = groups
        .iter()
        .find(|g| g["ip_group"] == "broadcast")
        .unwrap();
    assert_eq!(
        (b["members"].as_u64(), b["well_known"].as_bool()),
        (Some(4), Some(true))
    );
    assert_eq!(
        j["sent"]["gratuitous_arp"], true,
        "4 hosts announce themselves"
    );
    assert_eq!(j["interrupted"], Json::Null);
    assert!(j["peak_memory_kib"].as_u64().is_some_and(|k| k > 0));
    assert!(j["packets"].as_u64().unwrap() > 100);
    assert_eq!(j["packets_not_kept"], 0);
    assert_eq!(j["failures"].as_array().unwrap().len(), 0);
    assert!(dir.path().join("x.pcap").exists());
}

// `--seed N` makes a run repeatable.
#[test]
fn same_seed_same_pcap_and_bigger_subnets_sample_pings() {
    let dir = tempfile::tempdir().unwrap();
    let args = |p: &str| {
        [
            "demo",
            "--hosts",
            "24",
            "--topology",
            "fat-tree",
            "--seed",
            "5",
            "--json",
            "--pcap",
        ]
        .iter()
        .map(|s| s.to_string())
        .chain([p.to_string()])
        .collect::<Vec<_>>()
    };
    let a = args("a.pcap");
    let b = args("b.pcap");
    let ja = json_run(
        dir.path(),
        &a.iter().map(String::as_str).collect::<Vec<_>>(),
    );
    let jb = json_run(
        dir.path(),
        &b.iter().map(String::as_str).collect::<Vec<_>>(),
    );
    let pa = std::fs::read(dir.path().join("a.pcap")).unwrap();
    let pb = std::fs::read(dir.path().join("b.pcap")).unwrap();
    assert!(pa == pb, "same seed, same bytes");
    assert_eq!(ja["ping"], jb["ping"]);
    assert_eq!(ja["ok"], true);
    assert_eq!(ja["ping"]["sampled"], true, "24 hosts: 552 pairs, a sample");
    assert_eq!(ja["ping"]["pairs_total"], 24 * 23);
    let n = ja["ping"]["ipv4"]["pairs"].as_array().unwrap().len();
    assert!((24..=256).contains(&n), "{n}");
    assert_eq!(ja["ping"]["ipv4"]["answered"], n);
    assert_eq!(ja["ping"]["ipv6"]["answered"], n);
}

/// A net file with two switches that are not cabled to each other: the SM (on the first CA)
/// reaches only its own switch.
const SPLIT: &str = r#"
Switch 4 "sw0"
[1] "a0"[1]
[2] "a1"[1]

Switch 4 "sw1"
[1] "b0"[1]
[2] "b1"[1]

Hca 1 "a0"
[1] "sw0"[1]

Hca 1 "a1"
[1] "sw0"[2]

Hca 1 "b0"
[1] "sw1"[1]

Hca 1 "b1"
[1] "sw1"[2]
"#;

// A non-zero exit status if anything failed.
#[test]
fn hosts_that_cannot_come_up_make_it_fail() {
    let dir = tempfile::tempdir().unwrap();
    let net = dir.path().join("split.net");
    std::fs::write(&net, SPLIT).unwrap();
    let o = ipoib_output(dir.path(), &["demo", "--topology", net.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1), "{}\n{}", stdout(&o), stderr(&o));
    let t = stdout(&o);
    assert!(t.contains("Result: FAILED"), "{t}");
    assert!(t.contains("only 2 of 4 hosts got carrier"), "{t}");
    assert!(t.contains("DOWN"), "{t}");
}

#[test]
fn bad_arguments_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    for args in [
        &["demo", "--hosts", "0"][..],
        &["demo", "--hosts", "300"][..],
        &["demo", "--topology", "no-such-file.net"][..],
        &["demo", "--pcap", "/no/such/dir/x.pcap"][..],
        // No second host to send to: it said "Result: OK" and transferred nothing.
        &["demo", "--hosts", "1", "--bulk-bytes", "1M"][..],
    ] {
        let o = ipoib_output(dir.path(), args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(
            stderr(&o).starts_with("ipoib demo: "),
            "{args:?}: {}",
            stderr(&o)
        );
    }
    // The path's error names the option (it was "ipoib demo: /no/such/dir/x.pcap: No such file").
    let o = ipoib_output(dir.path(), &["demo", "--pcap", "/no/such/dir/x.pcap"]);
    assert!(
        stderr(&o).starts_with("ipoib demo: --pcap /no/such/dir/x.pcap: "),
        "{}",
        stderr(&o)
    );
}

fn tshark() -> Option<PathBuf> {
    let dirs = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&dirs)
        .chain([PathBuf::from("/usr/bin")])
        .map(|d| d.join("tshark"))
        .find(|p| p.is_file())
}

/// tshark's `-T fields` lines for `filter`, checksums verified, no name resolution.
fn fields(tshark: &Path, pcap: &Path, filter: &str, fields: &[&str]) -> Vec<Vec<String>> {
    let mut cmd = Command::new(tshark);
    cmd.arg("-n")
        .arg("-r")
        .arg(pcap)
        .args([
            "-o",
            "ip.check_checksum:TRUE",
            "-o",
            "udp.check_checksum:TRUE",
        ])
        .args([
            "-Y",
            filter,
            "-T",
            "fields",
            "-E",
            "occurrence=a",
            "-E",
            "aggregator=|",
        ])
        .env("HOME", std::env::temp_dir());
    for f in fields {
        cmd.args(["-e", f]);
    }
    let out = cmd.output().expect("tshark runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| l.split('\t').map(str::to_string).collect())
        .collect()
}

/// Every echo request (src, dst, id, seq) has a reply (dst, src, id, seq); returns the number of
/// distinct requests.
fn echo_pairs(tshark: &Path, pcap: &Path, v6: bool) -> usize {
    let (filter, f) = if v6 {
        (
            "icmpv6.type == 128 || icmpv6.type == 129",
            [
                "ipv6.src",
                "ipv6.dst",
                "icmpv6.type",
                "icmpv6.echo.identifier",
                "icmpv6.echo.sequence_number",
            ],
        )
    } else {
        (
            "icmp.type == 8 || icmp.type == 0",
            ["ip.src", "ip.dst", "icmp.type", "icmp.ident", "icmp.seq"],
        )
    };
    let request = if v6 { "128" } else { "8" };
    let mut requests = BTreeSet::new();
    let mut replies = BTreeSet::new();
    for l in fields(tshark, pcap, filter, &f) {
        let key = (l[0].clone(), l[1].clone(), l[3].clone(), l[4].clone());
        if l[2] == request {
            requests.insert(key);
        } else {
            replies.insert((key.1, key.0, key.2, key.3));
        }
    }
    let unanswered: Vec<_> = requests.difference(&replies).collect();
    assert!(
        unanswered.is_empty(),
        "unanswered echo requests: {unanswered:?}"
    );
    assert_eq!(requests, replies, "every reply answers a request");
    requests.len()
}

// tshark reads the demo's pcap with no malformed packet, ARP with hardware
// type 32 and 20-byte addresses (draft-ietf-ipoib-ip-over-infiniband-06 §9.2), and matching ICMP
// echo pairs, IPv4 and ICMPv6.
#[test]
fn tshark_reads_the_demo_pcap() {
    let Some(tshark) = tshark() else {
        eprintln!("skipping tshark_reads_the_demo_pcap: tshark is not installed (Debian package `tshark`)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let o = ipoib_output(dir.path(), &["demo"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let pcap = dir.path().join("ipoib-demo.pcap");
    let flagged = fields(
        &tshark,
        &pcap,
        "_ws.malformed || _ws.expert.severity == error",
        &["frame.number", "_ws.expert.message"],
    );
    assert!(flagged.is_empty(), "tshark flags: {flagged:?}");
    let arp = fields(
        &tshark,
        &pcap,
        "arp",
        &["arp.hw.type", "arp.hw.size", "arp.opcode"],
    );
    assert!(
        arp.len() >= 16,
        "gratuitous ARPs, requests and replies: {}",
        arp.len()
    );
    assert!(arp.iter().all(|l| l[0] == "32" && l[1] == "20"), "{arp:?}");
    assert!(arp.iter().any(|l| l[2] == "1") && arp.iter().any(|l| l[2] == "2"));
    assert_eq!(
        echo_pairs(&tshark, &pcap, false),
        24,
        "12 pairs, 2 pings each"
    );
    assert_eq!(echo_pairs(&tshark, &pcap, true), 24);
    // The multicast datagram: UDP checksum verified by tshark.
    let udp = fields(
        &tshark,
        &pcap,
        "udp.dstport == 5001",
        &["ip.dst", "udp.checksum.status"],
    );
    assert!(!udp.is_empty());
    assert!(
        udp.iter().all(|l| l[0] == "239.1.1.1" && l[1] == "1"),
        "{udp:?}"
    );
}

/// ibsim's `net.2sw2path4hca`: two switches, the multicast sender's switch holds no member.
const TWO_SWITCHES: &str = r#"
Switch 8 "Switch1"
[1] "Hca1"[1]
[2] "Hca3"[1]
[3] "Switch2"[3]
[5] "Switch2"[5]

Switch 8 "Switch2"
[1] "Hca2"[1]
[2] "Hca4"[1]
[3] "Switch1"[3]
[5] "Switch1"[5]

Hca 1 "Hca1"
[1] "Switch1"[1]

Hca 1 "Hca2"
[1] "Switch2"[1]

Hca 1 "Hca3"
[1] "Switch1"[2]

Hca 1 "Hca4"
[1] "Switch2"[2]
"#;

// draft-ietf-ipoib-ip-over-infiniband-06 §11: the non-member sender's first datagram reaches the members on the other switch
// (the SM writes a lone join's MFT entries before the SA's answer leaves), and no first IPv6
// ping waits for a resent neighbour solicitation.
#[test]
fn two_switch_demo_delivers_the_first_multicast_datagram() {
    let dir = tempfile::tempdir().unwrap();
    let net = dir.path().join("2sw.net");
    std::fs::write(&net, TWO_SWITCHES).unwrap();
    let o = ipoib_output(dir.path(), &["demo", "--topology", net.to_str().unwrap()]);
    let t = stdout(&o);
    assert!(o.status.success(), "{t}\n{}", stderr(&o));
    assert!(
        t.contains("Received by: Hca2, Hca4 (each member once"),
        "{t}"
    );
    assert!(
        !t.contains("1.000 s "),
        "a first ping waited for a resend: {t}"
    );
}

// A capture the disk cannot take (here /dev/full, as a disk that fills up minutes into a big
// run): the report was thrown away for the write error. It is printed, says the capture was not
// written, and the exit status is still 2 (README: an unwritable pcap).
#[test]
fn a_capture_that_cannot_be_written_keeps_the_report() {
    if !Path::new("/dev/full").exists() {
        eprintln!("skipped: no /dev/full");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let o = ipoib_output(dir.path(), &["demo", "--hosts", "2", "--pcap", "/dev/full"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let t = stdout(&o);
    assert!(
        t.contains("Capture: NOT written: --pcap /dev/full: No space left on device"),
        "{t}"
    );
    assert!(t.contains("IPv4 ping, all 2 pairs: 2 answered"), "{t}");
    assert!(
        stderr(&o).starts_with("ipoib demo: --pcap /dev/full: "),
        "{}",
        stderr(&o)
    );
}

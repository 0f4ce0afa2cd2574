//! `ipoib rping` run as a program: librdmacm's rping over the RDMA IP CM service (Annex A11) on
//! two emulated hosts, over IPv4 and IPv6, small sizes; its JSON, its capture read back by
//! `ipoib decode`, and bad arguments (exit status 2).

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

// Annex A11 §A11.4: the client connects to the server's IPv4 address and TCP port 7174; the
// ping-pong messages come back intact; the WRITE lands in the server's region and the READ brings
// it back; the connection is released. Simulated throughput stays under the 32 Gb/s link.
#[test]
fn rping_ipv4_json() {
    let o = ipoib(&["rping", "--size", "300K", "--count", "5", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let j: Json = serde_json::from_slice(&o.stdout).expect("one JSON object");
    assert_eq!(j["verified"], true);
    assert_eq!(j["error"], Json::Null);
    assert_eq!(j["protocol"], 6);
    assert_eq!(j["server"], "10.0.0.1:7174");
    let client = j["client"].as_str().unwrap();
    assert!(client.starts_with("10.0.0.2:"), "{client}");
    let port: u16 = client.rsplit(':').next().unwrap().parse().unwrap();
    assert!((32768..=60999).contains(&port), "an ephemeral port: {port}");
    assert_eq!(j["pingpong"]["messages"], 5);
    assert_eq!(j["pingpong"]["verified"], 5);
    assert!(j["pingpong"]["rtt_avg_ns"].as_u64().unwrap() > 0);
    assert_eq!(j["size"], 300 * 1024);
    for phase in ["write", "read"] {
        let p = &j[phase];
        assert_eq!(p["bytes"], 300 * 1024, "{phase}");
        assert!(p["sim_ns"].as_u64().unwrap() > 0, "{phase}");
        assert!(p["wall_ns"].as_u64().unwrap() > 0, "{phase}");
        let g = p["sim_gbps"].as_f64().unwrap();
        assert!(g > 0.0 && g <= 4.0, "{phase}: {g} GB/s over a 4 GB/s link");
    }
    assert_eq!(j["write_verified"], true);
    assert_eq!(j["read_verified"], true);
    assert_eq!(j["disconnected"], true);
    assert!(j["connect"]["sim_ns"].as_u64().unwrap() > 0);
    assert_eq!(j["pcap"], Json::Null);
    assert!(j.get("memcpy").is_none(), "the anchor only on request");
}

// The same over IPv6 link-local addresses, as text.
#[test]
fn rping_ipv6_text() {
    let o = ipoib(&["rping", "--ipv6", "--size", "64K", "--count", "2"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8(o.stdout).unwrap();
    assert!(out.contains("server [fe80::"), "{out}");
    assert!(out.contains("ping-pong 2/2 messages verified"), "{out}");
    assert!(
        out.contains("server region matches the source: yes"),
        "{out}"
    );
    assert!(
        out.contains("read-back copy matches the source: yes"),
        "{out}"
    );
    assert!(out.contains("disconnected: yes"), "{out}");
    assert!(out.trim_end().ends_with("verified: yes"), "{out}");
}

// --pcap writes every packet; `ipoib decode` reads all of them and finds the IP CM REQ with the
// service ID of TCP port 7174 (Annex A11 CA11-6: 0x0000000001 ‖ 0x06 ‖ 0x1c06), RDMA WRITE and
// READ packets, and the DREQ.
#[test]
fn rping_pcap_decodes() {
    let dir = tempfile::tempdir().unwrap();
    let pcap = dir.path().join("rping.pcap");
    let pcap = pcap.to_str().unwrap();
    let o = ipoib(&[
        "rping", "--size", "20000", "--count", "1", "--json", "--pcap", pcap,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let j: Json = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(j["pcap"], pcap);
    let packets = j["packets"].as_u64().unwrap();
    let d = ipoib(&["decode", "--json", pcap]);
    assert!(d.status.success(), "{}", stderr(&d));
    let lines = String::from_utf8(d.stdout).unwrap();
    assert_eq!(lines.lines().count() as u64, packets);
    let has = |s: &str| lines.lines().any(|l| l.contains(s));
    assert!(has("\"service_id\":\"0x0000000001061c06\""), "the REQ");
    assert!(has("ip_cm"), "its private data read as Annex A11");
    assert!(has("RC RDMA Write"), "the WRITE");
    assert!(has("RC RDMA Read Request"), "the READ");
    assert!(has("DREQ"), "the release");
}

#[test]
fn bad_arguments_exit_2() {
    for args in [
        &["rping", "--size", "2G"][..],
        &["rping", "--size", "lots"],
        &["rping", "--hosts", "1"],
        &["rping", "--chunk", "0"],
        // Over 2^18 work requests each way (here 349526; 1G in 1-byte pieces ran for hours).
        &["rping", "--size", "1M", "--chunk", "3"],
        &["rping", "--size", "1G", "--chunk", "1"],
        &["rping", "--port", "0"],
        &["rping", "--window", "0"],
        // An unwritable pcap is refused before the run, not noted after a run that exits 0.
        &[
            "rping",
            "--size",
            "0",
            "--pcap",
            "/nonexistent-dir/rping.pcap",
        ],
    ] {
        let o = ipoib(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(o.stdout.is_empty(), "{args:?}");
        assert!(!stderr(&o).is_empty(), "{args:?}");
    }
}

// A capture the disk cannot take (/dev/full): the transfer verified and the run said
// "verified: yes" with exit status 0, the write error only on standard error. The report now
// says the capture was not written, and the exit status is 2 (README).
#[test]
fn rping_capture_that_cannot_be_written_is_said_and_exits_2() {
    if !std::path::Path::new("/dev/full").exists() {
        eprintln!("skipped: no /dev/full");
        return;
    }
    let o = ipoib(&["rping", "--size", "64K", "--pcap", "/dev/full"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let t = String::from_utf8_lossy(&o.stdout);
    assert!(
        t.contains("capture: NOT written: --pcap /dev/full: No space left on device"),
        "{t}"
    );
    let o = ipoib(&["rping", "--size", "64K", "--pcap", "/dev/full", "--json"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let j: Json = serde_json::from_slice(&o.stdout).unwrap();
    assert!(j["pcap_error"]
        .as_str()
        .unwrap()
        .starts_with("--pcap /dev/full: "));
    assert_eq!(j["pcap"], Json::Null);
}

// `--size 1G --chunk 1` is a billion work requests each way: refused at once, naming both options
// and a chunk that would do.
#[test]
fn rping_refuses_more_work_requests_than_it_can_run() {
    let o = ipoib(&["rping", "--size", "1G", "--chunk", "1"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(e.contains("--size 1073741824 in --chunk 1 pieces"), "{e}");
    assert!(e.contains("at most 262144"), "{e}");
    assert!(e.contains("a larger --chunk (at least 4096)"), "{e}");
}

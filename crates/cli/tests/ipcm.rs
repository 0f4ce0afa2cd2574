//! `ipoib ipcm check` run as a program: REQ private data written out by hand (Annex A11 Table 1),
//! the verdicts our IP CM server gives, as text and JSON, and the inputs that are no REQ.

use serde_json::Value as Json;
use std::process::{Command, Output};

fn ipoib(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ipoib"))
        .args(args)
        .output()
        .expect("run ipoib")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// iSER over TCP, port 3260 (Annex A11 §A11.5's example).
const SID: &str = "0x0000000001060cbc";

/// MajV|MinV, IPV|Res, source port 49152, 10.0.0.1 -> 10.0.0.2 (12 zero bytes before each),
/// consumer data `de ad be ef`.
fn v4_req(version: &str, ipv: &str) -> String {
    format!(
        "{version}{ipv}c000{}0a000001{}0a000002deadbeef",
        "00".repeat(12),
        "00".repeat(12)
    )
}

/// The same from fd00::1 to fd00::2, with spaces between the fields.
const V6_REQ: &str = "00 60 c0 00 fd00 0000 0000 0000 0000 0000 0000 0001 \
                      fd00 0000 0000 0000 0000 0000 0000 0002 de ad be ef";

fn check_json(pd: &str, local: &[&str]) -> Json {
    let mut args = vec![
        "ipcm",
        "check",
        "--service-id",
        SID,
        "--private-data",
        pd,
        "--json",
    ];
    for l in local {
        args.extend(["--local-ip", l]);
    }
    let o = ipoib(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    serde_json::from_slice(&o.stdout).expect("one JSON object")
}

// A good header to one of the local addresses: accepted; the fields as Table 1 puts them.
#[test]
fn accept_v4_and_v6() {
    let j = check_json(&v4_req("00", "40"), &["10.0.0.2"]);
    assert_eq!(j["verdict"], "accept");
    assert_eq!(j["protocol"], 6);
    assert_eq!(j["port"], 3260);
    assert_eq!(j["ip_version"], 4);
    assert_eq!(j["source_port"], 49152);
    assert_eq!(j["source_ip"], "10.0.0.1");
    assert_eq!(j["destination_ip"], "10.0.0.2");
    assert!(j["consumer_private_data"]
        .as_str()
        .unwrap()
        .starts_with("deadbeef"));
    assert!(j.get("ari").is_none());
    let j = check_json(V6_REQ, &["10.0.0.2", "fd00::2"]);
    assert_eq!(j["verdict"], "accept");
    assert_eq!(j["ip_version"], 6);
    assert_eq!(j["source_ip"], "fd00::1");
    assert_eq!(j["destination_ip"], "fd00::2");
    // Text: the fields, the verdict and what it means.
    let o = ipoib(&[
        "ipcm",
        "check",
        "--service-id",
        SID,
        "--private-data",
        V6_REQ,
        "--local-ip",
        "fd00::2",
    ]);
    assert!(o.status.success());
    let t = stdout(&o);
    assert!(t.contains("verdict: accept"), "{t}");
    assert!(t.contains("destination_ip: fd00::2"), "{t}");
    assert!(t.contains("meaning: "), "{t}");
}

// Each refusal: REJ 28 with the A11 ARI, layer 0, the Table 5 code, its meaning and the
// suggested value; exit status 0.
#[test]
fn reject_verdicts_carry_the_ari() {
    let cases = [
        (v4_req("10", "40"), 1, "00"), // MajV 1
        (v4_req("01", "40"), 2, "00"), // MinV 1
        (v4_req("00", "50"), 3, "04"), // IPV 5
        (v4_req("00", "40"), 6, ""),   // 10.0.0.2 is not ours
    ];
    for (pd, code, suggested) in cases {
        let j = check_json(&pd, &["10.0.0.9"]);
        assert_eq!(j["verdict"], "reject", "{pd}");
        assert_eq!(j["reason"], 28);
        assert_eq!(j["ari"]["layer"], 0);
        assert_eq!(j["ari"]["code"], code, "{pd}");
        assert_eq!(j["ari"]["suggested"], suggested);
        assert!(!j["ari"]["meaning"].as_str().unwrap().is_empty());
    }
    // Bits set above an IPv4 address (Annex A11 CA11-5): code 4, no suggested value.
    let mut pd = v4_req("00", "40");
    pd.replace_range(8..10, "01");
    let j = check_json(&pd, &["10.0.0.2"]);
    assert_eq!(j["ari"]["code"], 4);
    assert_eq!(j["ari"]["code_name"], "SourceIpAddress");
    assert_eq!(j["ari"]["bytes"], "00040000");
    // A source no interface has (224.0.0.1 here): code 0 "for security or any other reason"
    // (Annex A11 §A11.7), as Linux refuses such IPv4 sources.
    let mut pd = v4_req("00", "40");
    pd.replace_range(32..34, "e0");
    let j = check_json(&pd, &["10.0.0.2"]);
    assert_eq!(j["verdict"], "reject", "{pd}");
    assert_eq!(j["ari"]["code"], 0);
    assert_eq!(j["ari"]["code_name"], "Unspecified");
    assert_eq!(j["ari"]["bytes"], "00000000");
    // Versions first (CA11-11): a bad major version and a bad IPV report the version.
    let j = check_json(&v4_req("20", "f0"), &["10.0.0.9"]);
    assert_eq!(j["ari"]["code"], 1);
    // Text.
    let o = ipoib(&[
        "ipcm",
        "check",
        "--service-id",
        SID,
        "--private-data",
        &v4_req("00", "40"),
        "--local-ip",
        "10.0.0.9",
    ]);
    assert!(o.status.success());
    let t = stdout(&o);
    assert!(t.contains("verdict: reject"), "{t}");
    assert!(t.contains("UnknownIpAddress"), "{t}");
    assert!(t.contains("does not match the server IP Address"), "{t}");
}

// Input that is no REQ of the service: exit status 2 and a message naming the problem.
#[test]
fn not_a_req_exits_2() {
    let good = v4_req("00", "40");
    let too_long = format!("{good}{}", "00".repeat(92 - 40 + 1));
    let cases: [(&str, &str, &str); 5] = [
        (SID, "00 4g", "not a hexadecimal digit"),
        (SID, "004", "odd number"),
        (SID, "0040c000", "shorter than the 36-byte"),
        (SID, &too_long, "longer than a REQ's 92-byte"),
        ("0x1000000000000048", &good, "outside the Annex A11 range"),
    ];
    for (sid, pd, msg) in cases {
        let o = ipoib(&[
            "ipcm",
            "check",
            "--service-id",
            sid,
            "--private-data",
            pd,
            "--local-ip",
            "10.0.0.2",
        ]);
        assert_eq!(o.status.code(), Some(2), "{pd}");
        assert!(stderr(&o).contains(msg), "{}", stderr(&o));
        assert!(o.stdout.is_empty());
    }
    // The longest REQ private data is fine.
    let full = format!("{good}{}", "00".repeat(92 - 40));
    assert_eq!(check_json(&full, &["10.0.0.2"])["verdict"], "accept");
    // Arguments clap refuses: no local address, a service ID that is no number.
    let o = ipoib(&[
        "ipcm",
        "check",
        "--service-id",
        SID,
        "--private-data",
        &good,
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--local-ip"));
    let o = ipoib(&[
        "ipcm",
        "check",
        "--service-id",
        "iser",
        "--private-data",
        &good,
        "--local-ip",
        "10.0.0.2",
    ]);
    assert_eq!(o.status.code(), Some(2));
}

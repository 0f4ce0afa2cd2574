//! `ipoib demo --mode connected` (RFC 4755 on every host) run as a program: the connection table,
//! the CM exchange counted in the capture, the bulk transfer in both modes with every datagram
//! delivered; `ipoib decode` and tshark read the capture's REQs as IPoIB-CM (service ID
//! 0x10000000_00QQQQQQ, private data 00QQQQQQ 0000FFF4); `--mode datagram` is the demo as it
//! was, byte for byte, and `--bulk-bytes` is checked.

mod common;

use common::{ipoib_output, text};
use serde_json::Value as Json;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Small enough for a debug build (31 connected-mode datagrams, 993 datagram-mode ones).
const BULK: &str = "2000000";

/// `ipoib demo --mode connected --bulk-bytes BULK` and `extra`.
fn connected_demo<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec!["demo", "--mode", "connected", "--bulk-bytes", BULK];
    args.extend_from_slice(extra);
    args
}

fn json_run(dir: &Path, args: &[&str]) -> Json {
    let o = ipoib_output(dir, args);
    assert!(
        o.status.success(),
        "{}\n{}",
        text(&o.stdout),
        text(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).expect("one JSON document")
}

// RFC 4755 §3.1-§3.5 and §5.1 as the report shows them: every host's connections (QPNs, the
// service ID of the listener's UD QPN, the 65520 MTU), the REQ/REP/RTU that made them and the
// DREQ/DREP of the switch back to datagram mode, and the bulk figures of both modes.
#[test]
fn connected_demo_shows_connections_cm_exchange_and_bulk() {
    let dir = tempfile::tempdir().unwrap();
    let o = ipoib_output(dir.path(), &connected_demo(&[]));
    let t = text(&o.stdout);
    assert!(o.status.success(), "{t}\n{}", text(&o.stderr));
    for want in [
        "ipoib demo: 4 hosts (single-switch), seed 1, connected mode (RFC 4755)",
        "Connected mode (RFC 4755): every interface offers RC",
        // The RC flag (0x80) in the link-layer address, RFC 4755 §3.1.
        "h0  80:00:00:48:fe:80:00:00:00:00:00:00:00:00:00:00:00:10:00:01",
        "Connections (RFC 4755 §3), as every host holds them after the connected-mode bulk transfer",
        "host  peer  side        QPN       peer QPN  service ID          MTU    state",
        "h0    h1    active RC   0x000049  0x000049  0x1000000000000048  65520  up",
        "CM exchange in the capture (IBA 1 §12.6, MADs on QP1):",
        "The first REQ, h0 -> h1: service ID 0x1000000000000048",
        "private data 00000048 0000fff4 (the sender's UD QPN 0x000048, receive MTU 65524; §6)",
        "Then h0 went back to datagram mode",
        "released with DREQ and DREP (§3.4), its MTU 65520 -> 2044.",
        "Bulk transfer h0 -> h1: 2000000 bytes to UDP port 5002",
        "the capture was off",
        "connected  65520      31         31         2000000",
        "datagram   2044       993        993        2000000",
        "(the bulk transfers ran with the capture off: their",
        "; connected bulk 31/31 datagrams; datagram bulk 993/993 datagrams)",
    ] {
        assert!(t.contains(want), "missing {want:?} in:\n{t}");
    }
    assert!(t.contains("Result: OK"), "{t}");
}

#[test]
fn connected_demo_json_every_datagram_and_the_cm_messages() {
    let dir = tempfile::tempdir().unwrap();
    let j = json_run(dir.path(), &connected_demo(&["--json", "--pcap", "c.pcap"]));
    assert_eq!(j["ok"], true, "{:?}", j["failures"]);
    assert_eq!(j["mode"], "connected");
    assert_eq!(j["connected_mtu"], 65520);
    assert_eq!(j["ud_mtu"], 2044);
    let bulk = j["bulk"].as_array().unwrap();
    assert_eq!(bulk.len(), 2);
    let (c, d) = (&bulk[0], &bulk[1]);
    assert_eq!(c["mode"], "connected");
    assert_eq!(d["mode"], "datagram");
    // The largest packet of each mode: 65520 (RFC 4755 §5.1: 65524 receive MTU less the
    // 4-octet header) carrying 65492 bytes of UDP over IPv4; 2044 (draft-ietf-ipoib-ip-over-
    // infiniband-06 §7) carrying 2016.
    assert_eq!(
        (c["packet_len"].as_u64(), c["payload_len"].as_u64()),
        (Some(65520), Some(65492))
    );
    assert_eq!(
        (d["packet_len"].as_u64(), d["payload_len"].as_u64()),
        (Some(2044), Some(2016))
    );
    for b in bulk {
        assert_eq!(b["bytes"], 2_000_000);
        assert_eq!(b["bytes_delivered"], b["bytes"], "{b}");
        assert_eq!(b["delivered"], b["datagrams"], "{b}");
        assert_eq!(b["sent"], b["datagrams"], "{b}");
        assert_eq!(b["duplicates"], 0);
        assert_eq!(b["ok"], true);
        assert!(b["sim_ns"].as_u64().unwrap() > 0);
    }
    assert_eq!(c["datagrams"], 31);
    assert_eq!(d["datagrams"], 993);
    // In simulated time. The emulated hosts spend no time per packet and both transfers keep the
    // same 32 Gb/s link busy, so connected mode wins by its header bytes alone (26 per 4096-byte
    // RC packet against 66 per 2016 bytes of UD datagram), by a few percent and not by a
    // multiple: per-packet work, which the model does not charge, is what the 32x fewer IP
    // packets would save.
    let (cg, dg) = (
        c["sim_gbps"].as_f64().unwrap(),
        d["sim_gbps"].as_f64().unwrap(),
    );
    assert!(cg > dg * 1.01, "connected {cg} Gb/s, datagram {dg} Gb/s");
    assert!(
        dg > 25.0 && cg < 32.0,
        "both fill the 32 Gb/s link: {cg}, {dg}"
    );
    assert!(d["datagrams"].as_u64().unwrap() >= 30 * c["datagrams"].as_u64().unwrap());
    // The bulk transfer went over h0's connection to h1 (RFC 4755 §3: unicast over it).
    let conns = j["connections"].as_array().unwrap();
    let carried: u64 = conns
        .iter()
        .filter(|x| x["host"] == "h0" && x["peer"] == "h1" && x["sends"] == true)
        .map(|x| x["tx_packets"].as_u64().unwrap())
        .sum();
    assert!(carried >= 31, "{conns:?}");
    for x in conns.iter().filter(|x| x["state"] == "up") {
        assert_eq!(x["mtu"], 65520, "{x}");
        assert_eq!(x["service_id"], "0x1000000000000048", "{x}");
        assert_eq!(x["transport"], "RC");
    }
    // IBA 1 §12.6: each connection a REQ, a REP (or a REJ, the crossing rule) and an RTU; h0's
    // switch to datagram mode releases its connections with one DREQ and one DREP each.
    let m = &j["cm_messages"];
    let n = |k: &str| m[k].as_u64().unwrap_or(0);
    let released = j["mode_switch"]["released"].as_u64().unwrap();
    assert!(released >= 1);
    assert_eq!(j["mode_switch"]["settled"], true);
    assert_eq!((n("DREQ"), n("DREP")), (released, released), "{m}");
    assert_eq!(n("REQ"), n("REP") + n("REJ"), "{m}");
    assert_eq!(n("RTU"), n("REP"), "{m}");
    let up = conns.iter().filter(|x| x["state"] == "up").count() as u64;
    assert_eq!(
        2 * n("REP"),
        up,
        "both ends of every accepted connection are up"
    );
    assert!(
        j["cm_frames"].as_u64().unwrap() >= 2 * n("REQ"),
        "two links each"
    );
    let r = &j["first_req"];
    assert_eq!(r["service_id"], "0x1000000000000048");
    assert_eq!(r["private_data"], "000000480000fff4");
    assert_eq!(
        (r["ud_qpn"].as_u64(), r["receive_mtu"].as_u64()),
        (Some(0x48), Some(65524))
    );
    assert!(dir.path().join("c.pcap").exists());
}

// RFC 4755 §3.5 and §6 as `ipoib decode` reads the demo's capture: the REQ's service ID names
// the listener's UD QPN, its private data the sender's UD QPN and receive MTU 65524.
#[test]
fn decode_reads_the_demo_req_as_ipoib_cm() {
    let dir = tempfile::tempdir().unwrap();
    let o = ipoib_output(
        dir.path(),
        &["demo", "--mode", "connected", "--bulk-bytes", "0"],
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    let o = ipoib_output(dir.path(), &["decode", "--json", "ipoib-demo.pcap"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let packets: Vec<Json> = text(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let kind = |p: &Json| p["cm"]["message_type_name"].as_str().map(str::to_string);
    let reqs: Vec<&Json> = packets
        .iter()
        .filter(|p| kind(p).as_deref() == Some("REQ"))
        .collect();
    assert!(!reqs.is_empty());
    for p in &reqs {
        assert_eq!(p["cm"]["service_id"], "0x1000000000000048", "{p}");
        assert_eq!(p["service"]["kind"], "ipoib_cm");
        assert_eq!(p["service"]["qpn"], "0x000048");
        assert_eq!(p["ipoib_cm"]["ud_qpn"], "0x000048");
        assert_eq!(p["ipoib_cm"]["receive_mtu"], 65524);
        assert!(p["cm"]["private_data"]
            .as_str()
            .unwrap()
            .starts_with("000000480000fff4"));
    }
    // The REPs carry the same private data (RFC 4755 §3.2), read by the REQ they answer.
    let reps: Vec<&Json> = packets
        .iter()
        .filter(|p| kind(p).as_deref() == Some("REP"))
        .collect();
    assert!(!reps.is_empty());
    assert!(reps.iter().all(|p| p["ipoib_cm"]["receive_mtu"] == 65524));
    assert!(packets.iter().any(|p| kind(p).as_deref() == Some("RTU")));
    // The text form, as a person reads it.
    let o = ipoib_output(dir.path(), &["decode", "ipoib-demo.pcap"]);
    let t = text(&o.stdout);
    let req = t
        .split("\n\n")
        .find(|b| {
            b.lines()
                .next()
                .is_some_and(|l| l.contains(" REQ service "))
        })
        .expect("a REQ");
    for want in [
        "ComMgt Send REQ service 0x1000000000000048 (ipoib_cm)",
        "service_id: 0x1000000000000048",
        "000000480000fff4",
        "kind: ipoib_cm",
        "ud_qpn: 0x000048",
        "receive_mtu: 65524",
    ] {
        assert!(req.contains(want), "missing {want:?} in:\n{req}");
    }
}

fn tshark() -> Option<PathBuf> {
    let dirs = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&dirs)
        .chain([PathBuf::from("/usr/bin")])
        .map(|d| d.join("tshark"))
        .find(|p| p.is_file())
}

/// tshark's `-T fields` lines for `filter`.
fn fields(tshark: &Path, pcap: &Path, filter: &str, fields: &[&str]) -> Vec<Vec<String>> {
    let mut cmd = Command::new(tshark);
    cmd.arg("-n")
        .arg("-r")
        .arg(pcap)
        .args(["-Y", filter, "-T", "fields", "-E", "occurrence=f"])
        .env("HOME", std::env::temp_dir());
    for f in fields {
        cmd.args(["-e", f]);
    }
    let out = cmd.output().expect("tshark runs");
    assert!(out.status.success(), "{}", text(&out.stderr));
    text(&out.stdout)
        .lines()
        .map(|l| l.split('\t').map(str::to_string).collect())
        .collect()
}

// tshark, an independent dissector, reads the demo's CM MADs as REQ, REP and RTU (and the
// DREQ/DREP of the switch back to datagram mode), the REQs with the same service ID and private
// data as ours, the REPs with the same private data, and flags nothing.
#[test]
fn tshark_reads_the_connected_demo_cm_exchange() {
    let Some(tshark) = tshark() else {
        eprintln!(
            "skipping tshark_reads_the_connected_demo_cm_exchange: tshark is not installed (Debian package `tshark`)"
        );
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let j = json_run(
        dir.path(),
        &[
            "demo",
            "--mode",
            "connected",
            "--bulk-bytes",
            "100000",
            "--json",
        ],
    );
    let pcap = dir.path().join("ipoib-demo.pcap");
    let flagged = fields(
        &tshark,
        &pcap,
        "_ws.malformed || _ws.expert.severity >= 8388608",
        &["frame.number"],
    );
    assert!(flagged.is_empty(), "tshark flags frames {flagged:?}");
    let rows = fields(
        &tshark,
        &pcap,
        "infiniband.mad.mgmtclass == 0x07",
        &[
            "infiniband.mad.attributeid",
            "infiniband.cm.req.serviceid",
            "infiniband.cm.req.private",
            "infiniband.cm.rep.private",
        ],
    );
    let count = |attr: &str| rows.iter().filter(|r| r[0] == attr).count() as u64;
    assert_eq!(
        rows.len() as u64,
        j["cm_frames"].as_u64().unwrap(),
        "tshark sees every CM frame"
    );
    let m = &j["cm_messages"];
    for (attr, name) in [
        ("0x0010", "REQ"),
        ("0x0013", "REP"),
        ("0x0014", "RTU"),
        ("0x0015", "DREQ"),
        ("0x0016", "DREP"),
    ] {
        let ours = m[name].as_u64().unwrap_or(0);
        assert!(ours > 0, "{name}");
        // The capture holds each message once per link: two on one switch.
        assert_eq!(count(attr), 2 * ours, "{name}");
    }
    for r in rows.iter().filter(|r| r[0] == "0x0010") {
        assert_eq!(r[1], "0x1000000000000048", "{r:?}");
        assert!(r[2].starts_with("000000480000fff4"), "{r:?}");
        assert_eq!(r[2].len(), 92 * 2, "92 bytes of REQ private data");
    }
    for r in rows.iter().filter(|r| r[0] == "0x0013") {
        assert!(r[3].starts_with("000000480000fff4"), "{r:?}");
    }
}

// The default mode is datagram, and naming it changes nothing: the same output and the same
// capture, byte for byte.
#[test]
fn datagram_mode_is_the_default_demo() {
    let dir = tempfile::tempdir().unwrap();
    let a = ipoib_output(dir.path(), &["demo", "--pcap", "a.pcap"]);
    let b = ipoib_output(
        dir.path(),
        &["demo", "--mode", "datagram", "--pcap", "a2.pcap"],
    );
    assert!(a.status.success() && b.status.success());
    let strip = |o: &Output| -> Vec<String> {
        text(&o.stdout)
            .lines()
            .filter(|l| !l.starts_with("Time: "))
            .map(|l| l.replace("a2.pcap", "a.pcap"))
            .collect()
    };
    assert_eq!(strip(&a), strip(&b));
    let pa = std::fs::read(dir.path().join("a.pcap")).unwrap();
    let pb = std::fs::read(dir.path().join("a2.pcap")).unwrap();
    assert!(pa == pb, "same capture");
    let t = text(&a.stdout);
    assert!(
        !t.contains("Connections") && !t.contains("Bulk transfer"),
        "{t}"
    );
    assert!(t.contains("h0  00:00:00:48:fe:80"), "no RC flag: {t}");
}

// Datagram mode runs the bulk transfer when asked, over UD only.
#[test]
fn datagram_bulk_on_request() {
    let dir = tempfile::tempdir().unwrap();
    let j = json_run(dir.path(), &["demo", "--bulk-bytes", "50000", "--json"]);
    assert_eq!(j["ok"], true);
    assert!(j.get("mode").is_none() && j.get("connections").is_none());
    let bulk = j["bulk"].as_array().unwrap();
    assert_eq!(bulk.len(), 1);
    assert_eq!(bulk[0]["mode"], "datagram");
    assert_eq!(
        bulk[0]["datagrams"], 25,
        "50000 bytes in 2016-byte datagrams"
    );
    assert_eq!(bulk[0]["bytes_delivered"], 50_000);
    // A size with a suffix, as `ipoib rping --size` takes: 64K is 65,536 bytes.
    let j = json_run(dir.path(), &["demo", "--bulk-bytes", "64K", "--json"]);
    assert_eq!(j["bulk"][0]["bytes_delivered"], 65_536);
}

#[test]
fn bad_mode_or_bulk_size_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    for args in [
        &["demo", "--mode", "reliable"][..],
        &["demo", "--bulk-bytes", "2000000000"][..],
        &["demo", "--bulk-bytes", "2G"][..],
        &["demo", "--bulk-bytes", "lots"][..],
        &["demo", "--bulk-bytes", "-1"][..],
        &["demo", "--packet-cost-ns", "-1"][..],
        &["demo", "--packet-cost-ns", "1000000001"][..],
        &["demo", "--packet-cost-ns", "3us"][..],
    ] {
        let o = ipoib_output(dir.path(), args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o.stderr));
    }
}

// With a cost per IP packet on every host, datagram mode is bound by the hosts' per-packet work
// (2,016 bytes of payload per 3 µs at most) while connected mode still fills the 32 Gb/s link:
// connected mode moves at least 4 times as much in simulated time, and the report says why.
#[test]
fn packet_cost_makes_connected_mode_outpace_datagram_mode() {
    let dir = tempfile::tempdir().unwrap();
    let args = connected_demo(&["--packet-cost-ns", "3000"]);
    let mut with_json = args.clone();
    with_json.push("--json");
    let j = json_run(dir.path(), &with_json);
    assert_eq!(j["ok"], true, "{:?}", j["failures"]);
    let bulk = j["bulk"].as_array().unwrap();
    let rate = |b: &Json| b["sim_gbps"].as_f64().unwrap();
    for b in bulk {
        assert_eq!(b["packet_cost_ns"], 3000, "{b}");
        assert_eq!(b["delivered"], b["datagrams"], "{b}");
    }
    let (c, d) = (rate(&bulk[0]), rate(&bulk[1]));
    assert!(d <= 2016.0 * 8.0 / 3000.0 * 1.001, "datagram {d} Gb/s");
    assert!(c >= 4.0 * d, "connected {c} Gb/s, datagram {d} Gb/s");
    let o = ipoib_output(dir.path(), &args);
    let t = text(&o.stdout);
    assert!(o.status.success(), "{t}");
    assert!(
        t.contains("Each host spends 3.000 µs on every IP packet it sends or receives"),
        "{t}"
    );
}

// What bounds each mode depends on the cost: at 100 ns a packet a host moves 161 Gb/s of
// datagram-mode payload, so both modes fill the 32 Gb/s link; at 50 µs even connected mode's
// 65,492 bytes a packet are only 10.5 Gb/s, so both are bound by the hosts. The report says so.
#[test]
fn the_report_names_what_bounds_each_mode() {
    let dir = tempfile::tempdir().unwrap();
    for (cost, datagram, connected) in [
        ("100", "the link", "the link"),
        (
            "50000",
            "its hosts' per-packet work",
            "its hosts' per-packet work",
        ),
    ] {
        let o = ipoib_output(dir.path(), &connected_demo(&["--packet-cost-ns", cost]));
        let t = text(&o.stdout);
        assert!(o.status.success(), "{cost}: {t}");
        let said: String = t
            .lines()
            .skip_while(|l| !l.contains("on every IP packet it sends or receives"))
            .take(3)
            .map(str::trim)
            .collect::<Vec<_>>()
            .join(" ");
        let want =
            format!("in simulated time datagram mode is bound by {datagram} and connected mode by {connected}.");
        assert!(said.contains(&want), "{cost}: want {want:?} in:\n{t}");
    }
}

//! `ipoib decode` against tshark, field by field, on every kind of packet the product makes: the
//! captures of `ipoib sim --hosts 16` (and with two partitions), `ipoib demo` (datagram, connected, and the legacy IPv6
//! profile), `ipoib rping` over IPv4 and IPv6 (Annex A11 REQ/REP with the IP CM header, RDMA,
//! DREQ/DREP), and the wire crate's samples (traps and notices, InformInfo, ClassPortInfo,
//! PerfMgt counters, SMInfo, RMPP, every CM message, iWarp Hello, malformed packets aside).
//!
//! For each packet, every field of `decode_tshark/fields.rs` that both show must agree: tshark's
//! value (any of its occurrences in the packet) equals ours. Both must also count the same
//! packets and find the same layers in each (MAD, IPoIB header, ARP, IPv4, IPv6, ICMP, ICMPv6,
//! UDP; `LAYERS`). A row of the table that no packet of any capture compared is an error too, so that a
//! renamed field cannot silently stop being compared. Skips, saying so, when tshark is not
//! installed. `KEEP_PCAP=1` keeps the captures and prints where.

mod common;
#[path = "decode_tshark/fields.rs"]
mod fields;

use common::BIN;
use ipoib_wire::pcap::{LinkType, PcapWriter};
use serde_json::Value as Json;
use std::collections::{BTreeMap, BTreeSet};
use std::net::Ipv6Addr;
use std::path::Path;
use std::process::Command;

/// One compared field: decode's key, tshark's field, how to compare, and for CM rows the
/// message type they belong to.
#[derive(Debug, Clone)]
struct Row {
    decode: String,
    tshark: String,
    kind: char,
    cm_type: Option<u64>,
}

/// Expands `name[=tshark][:kind]` words under a decode group and a tshark prefix.
fn expand(group: &str, prefix: &str, words: &str, cm_type: Option<u64>, out: &mut Vec<Row>) {
    for w in words.split_whitespace() {
        let (w, kind) = w.split_once(':').unwrap_or((w, "n"));
        let (name, ts) = match w.split_once('=') {
            Some((n, ".")) => (n, prefix.trim_end_matches('.').to_string()),
            Some((n, t)) => (n, format!("{prefix}{t}")),
            None => (w, format!("{prefix}{}", w.replace('_', ""))),
        };
        let decode = if group.is_empty() {
            name.to_string()
        } else {
            format!("{group}.{name}")
        };
        let kind = kind.chars().next().unwrap();
        out.push(Row {
            decode,
            tshark: ts,
            kind,
            cm_type,
        });
    }
}

fn rows() -> Vec<Row> {
    let mut v = Vec::new();
    for (group, prefix, words) in fields::GROUPS {
        expand(group, prefix, words, None, &mut v);
    }
    for (ty, name) in fields::CM_TYPES {
        let words = fields::CM_FIELDS.iter().find(|(n, _)| n == name).unwrap().1;
        expand(
            "cm",
            &format!("infiniband.cm.{name}."),
            words,
            Some(*ty),
            &mut v,
        );
    }
    expand(
        "ip_cm",
        "infiniband.cm.req.ip_cm.",
        fields::IP_CM,
        Some(0x10),
        &mut v,
    );
    v
}

/// Flattens decode's JSON object into `a.b.c` keys with values as text (booleans as 1/0).
fn flatten(prefix: &str, v: &Json, out: &mut BTreeMap<String, String>) {
    match v {
        Json::Object(m) => {
            for (k, v) in m {
                let key = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                flatten(&key, v, out);
            }
        }
        Json::Bool(b) => {
            out.insert(prefix.to_string(), u8::from(*b).to_string());
        }
        Json::String(s) => {
            out.insert(prefix.to_string(), s.clone());
        }
        other => {
            out.insert(prefix.to_string(), other.to_string());
        }
    }
}

/// A number as either side prints it: decimal, `0x` hex, or a boolean.
fn number(s: &str) -> Option<u64> {
    match s {
        "true" | "True" => Some(1),
        "false" | "False" => Some(0),
        _ => match s.strip_prefix("0x") {
            Some(h) => u64::from_str_radix(h, 16).ok(),
            None => s.parse().ok(),
        },
    }
}

/// A GID or IPv6 address, as text or as 16 bytes in hex (tshark shows a zero CM GID so).
fn gid(s: &str) -> Option<Ipv6Addr> {
    if let Ok(a) = s.parse() {
        return Some(a);
    }
    let h = bytes(s);
    let n = u128::from_str_radix(&h, 16).ok()?;
    (h.len() == 32).then(|| Ipv6Addr::from(n))
}

fn bytes(s: &str) -> String {
    s.chars()
        .filter(|c| *c != ':')
        .collect::<String>()
        .to_lowercase()
}

/// Whether decode's value `ours` is what tshark showed as `theirs`.
fn same(kind: char, ours: &str, theirs: &str) -> bool {
    match kind {
        'n' => number(ours).is_some() && number(ours) == number(theirs),
        't' => ours == theirs,
        'g' => gid(ours).is_some() && gid(ours) == gid(theirs),
        'b' => bytes(ours) == bytes(theirs),
        // A directed-route path: ours up to the hop count, tshark's all 64 bytes.
        'p' => !ours.is_empty() && bytes(theirs).starts_with(&bytes(ours)),
        'c' => {
            // IBA 1 §7.8: CRCs go least significant byte first; tshark reads them big-endian.
            let (Some(o), Some(t)) = (number(ours), number(theirs)) else {
                return false;
            };
            let width = ours.len() - 2;
            match width {
                8 => (o as u32).swap_bytes() as u64 == t,
                4 => (o as u16).swap_bytes() as u64 == t,
                _ => false,
            }
        }
        's' => {
            // tshark's epoch time in seconds with nine decimals; ours in nanoseconds.
            let (sec, frac) = theirs.split_once('.').unwrap_or((theirs, "0"));
            let frac = format!("{frac:0<9}");
            let t = sec.parse::<u64>().ok().zip(frac[..9].parse::<u64>().ok());
            t.is_some_and(|(s, n)| number(ours) == Some(s * 1_000_000_000 + n))
        }
        _ => unreachable!("kind {kind}"),
    }
}

/// Keys decode shows in parts that tshark shows whole: the SMP status with the D bit (IBA 1
/// §14.2.1.2), the ARP hardware addresses and ND link-layer options (20 bytes, RFC 4391 §9.1.1);
/// and the P_KeyTable in the
/// two parts tshark shows of each entry.
fn derive(d: &mut BTreeMap<String, String>) {
    if let (Some(s), Some(dir)) = (d.get("smp.status"), d.get("smp.direction")) {
        let v = number(s).unwrap() | number(dir).unwrap() << 15;
        d.insert("smp.status_d".into(), v.to_string());
    }
    if let Some(t) = d.get("p_key_table.pkeys").cloned() {
        // tshark splits each P_Key into its membership bit and its base (IBA 1 §10.9.1).
        let keys: Vec<u16> = (0..t.len() / 4)
            .map(|i| u16::from_str_radix(&t[4 * i..4 * i + 4], 16).unwrap())
            .collect();
        let members = keys.iter().map(|k| format!("{:02x}", k >> 15)).collect();
        let bases = keys.iter().map(|k| format!("{:04x}", k & 0x7fff)).collect();
        d.insert("p_key_table.members".into(), members);
        d.insert("p_key_table.bases".into(), bases);
    }
    // The ND link-layer address option of RFC 4391 §9.1.1 (draft-ietf-ipoib-ip-over-infiniband-06
    // §9.1.1): two pad bytes, then the 20-byte address; tshark shows the 22 bytes.
    for n in 0..3 {
        let get = |f: &str| d.get(&format!("icmpv6.option_{n}.link_addr.{f}")).cloned();
        if let (Some(fl), Some(qpn), Some(g)) = (get("flags"), get("qpn"), get("gid")) {
            let gid: Ipv6Addr = g.parse().unwrap();
            let v = format!(
                "0000{:02x}{:06x}{:032x}",
                number(&fl).unwrap(),
                number(&qpn).unwrap(),
                u128::from(gid)
            );
            d.insert(format!("icmpv6.option_{n}.lla"), v);
        }
    }
    for side in ["src_hw", "dst_hw"] {
        let get = |f: &str| d.get(&format!("arp.{side}.{f}")).cloned();
        if let (Some(fl), Some(qpn), Some(g)) = (get("flags"), get("qpn"), get("gid")) {
            let gid: Ipv6Addr = g.parse().unwrap();
            let v = format!(
                "{:02x}{:06x}{:032x}",
                number(&fl).unwrap(),
                number(&qpn).unwrap(),
                u128::from(gid)
            );
            d.insert(format!("arp.{side}"), v);
        }
    }
}

/// The layers a packet holds, as decode's key and tshark's field that show each: both must find
/// the same layers in every packet, so that neither reads a payload as something the other does
/// not (a field comparison alone would miss it: it compares only what both show).
const LAYERS: &[(&str, &str)] = &[
    ("mad.mgmt_class", "infiniband.mad.mgmtclass"),
    ("ipoib.type", "infiniband.rwh.etype"),
    ("arp.opcode", "arp.opcode"),
    ("ip.ttl", "ip.ttl"),
    ("ipv6.version", "ipv6.version"),
    ("icmp.type", "icmp.type"),
    ("icmpv6.type", "icmpv6.type"),
    ("udp.src_port", "udp.srcport"),
];

/// Why the layers of one packet differ, if they do. Two cases are let through, where we read
/// differently on purpose: a legacy-profile datagram (draft-kashyap-ipoib-ipv6-01 §7, IPv6 with
/// no IPoIB header, for which tshark 4.0 has no dissector: it shows bytes), and the first packet
/// of a multi-packet IPoIB-CM message (RFC 4755 §4), whose start of a datagram we show as bytes
/// and tshark dissects as a whole datagram, flagged as cut short.
fn layers_differ(
    d: &BTreeMap<String, String>,
    t: &BTreeMap<String, Vec<String>>,
) -> Option<String> {
    if d.contains_key("ipoib_legacy_ipv6") || d.contains_key("message_start") {
        return None;
    }
    LAYERS.iter().find_map(|(ours, theirs)| {
        let (o, s) = (d.contains_key(*ours), t.contains_key(*theirs));
        (o != s).then(|| {
            format!(
                "{} shows the layer of {ours}, {} shows {theirs} ({})",
                if o { "decode" } else { "decode never" },
                if s { "tshark" } else { "tshark never" },
                d.get("summary").map_or("", String::as_str)
            )
        })
    })
}

/// What `ipoib decode --json` shows of each packet of `pcap`.
fn decode(pcap: &Path) -> Vec<BTreeMap<String, String>> {
    let out = Command::new(BIN)
        .args(["decode", "--json"])
        .arg(pcap)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "ipoib decode {}: {err}",
        pcap.display()
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let mut m = BTreeMap::new();
            flatten("", &serde_json::from_str(l).unwrap(), &mut m);
            derive(&mut m);
            m
        })
        .collect()
}

/// tshark's occurrences of each of `names` in each packet of `pcap`.
fn tshark(pcap: &Path, names: &[&str]) -> Vec<BTreeMap<String, Vec<String>>> {
    let mut cmd = Command::new("tshark");
    cmd.arg("-n").arg("-r").arg(pcap);
    cmd.args(["-T", "fields", "-E", "header=n", "-E", "separator=/t"]);
    cmd.args(["-E", "occurrence=a", "-E", "aggregator=|"]);
    for n in names {
        cmd.args(["-e", n]);
    }
    let out = cmd.env("HOME", std::env::temp_dir()).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "tshark {}: {err}", pcap.display());
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|line| {
            let cols: Vec<&str> = line.split('\t').collect();
            assert_eq!(cols.len(), names.len(), "tshark line {line}");
            names
                .iter()
                .zip(cols)
                .filter(|(_, c)| !c.is_empty())
                .map(|(n, c)| (n.to_string(), c.split('|').map(String::from).collect()))
                .collect()
        })
        .collect()
}

/// The captures to compare, made in `dir`: `(name, path)`.
fn captures(dir: &Path) -> Vec<(String, std::path::PathBuf)> {
    // Two partitions, one with a limited member (port GUIDs of h1 and h2): P_Key tables with both
    // membership bits, a second IPoIB broadcast group on P_Key 0x8005.
    std::fs::write(
        dir.join("partitions.conf"),
        "Default=0x7fff, ipoib : ALL=full ;\n\
         storage=0x0005, ipoib : 0x0000000000100003=full, 0x0000000000100005=limited ;\n",
    )
    .unwrap();
    let runs: &[(&str, &[&str])] = &[
        ("sim", &["sim", "--hosts", "16"]),
        (
            "partitions",
            &["sim", "--hosts", "8", "--partitions", "partitions.conf"],
        ),
        ("demo", &["demo"]),
        (
            "connected",
            &["demo", "--mode", "connected", "--bulk-bytes", "0"],
        ),
        ("legacy", &["demo", "--ipv6-profile", "legacy"]),
        ("rping", &["rping", "--count", "2", "--size", "64K"]),
        (
            "rping6",
            &["rping", "--ipv6", "--count", "1", "--size", "4K"],
        ),
    ];
    let mut v = Vec::new();
    for (name, args) in runs {
        let path = dir.join(format!("{name}.pcap"));
        let out = Command::new(BIN)
            .args(*args)
            .arg("--pcap")
            .arg(&path)
            .current_dir(dir)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "ipoib {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        v.push((name.to_string(), path));
    }
    // The samples: what the runs above do not make (traps, PerfMgt, InformInfo, RMPP, MRA, LAP,
    // SIDR, iWarp Hello, ...), one packet of each kind.
    let path = dir.join("samples.pcap");
    let mut w = PcapWriter::new(Vec::new(), LinkType::Erf).unwrap();
    for (i, s) in ipoib_wire::samples::all().iter().enumerate() {
        w.write_packet(1_700_000_000_000_000_000 + 1000 * i as u64, &s.bytes)
            .unwrap();
    }
    std::fs::write(&path, w.into_inner().unwrap()).unwrap();
    v.push(("samples".into(), path));
    v
}

#[test]
fn decode_agrees_with_tshark_on_every_capture() {
    if !common::installed("tshark") {
        eprintln!("skipping decode_agrees_with_tshark_on_every_capture: tshark is not installed (Debian package `tshark`)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let rows = rows();
    let mut names: Vec<&str> = rows.iter().map(|r| r.tshark.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    let mut used = BTreeSet::new();
    let mut wrong = Vec::new();
    for (name, pcap) in captures(dir.path()) {
        let ours = decode(&pcap);
        let theirs = tshark(&pcap, &names);
        assert_eq!(
            ours.len(),
            theirs.len(),
            "{name}: packets, ours and tshark's"
        );
        let mut compared = 0;
        for (i, (d, t)) in ours.iter().zip(&theirs).enumerate() {
            let cm_type = d.get("cm.message_type").and_then(|s| number(s));
            for (k, r) in rows.iter().enumerate() {
                if r.cm_type.is_some() && r.cm_type != cm_type {
                    continue;
                }
                let (Some(o), Some(ts)) = (d.get(&r.decode), t.get(&r.tshark)) else {
                    continue;
                };
                used.insert(k);
                compared += 1;
                let agree = if r.kind == 'j' {
                    // A table tshark shows entry by entry: its entries, in order, start ours.
                    let joined: String = ts.iter().map(|x| x.trim_start_matches("0x")).collect();
                    !joined.is_empty() && bytes(o).starts_with(&joined)
                } else {
                    ts.iter().any(|x| same(r.kind, o, x))
                };
                if !agree {
                    wrong.push(format!(
                        "{name} packet {}: {} = {o}, tshark {} = {ts:?}",
                        i + 1,
                        r.decode,
                        r.tshark
                    ));
                }
            }
        }
        for (i, (d, t)) in ours.iter().zip(&theirs).enumerate() {
            if let Some(why) = layers_differ(d, t) {
                wrong.push(format!("{name} packet {}: {why}", i + 1));
            }
        }
        eprintln!("{name}: {} packets, {compared} fields compared", ours.len());
    }
    if std::env::var_os("KEEP_PCAP").is_some() {
        eprintln!("captures kept in {}", dir.keep().display());
    }
    assert!(
        wrong.is_empty(),
        "{} differences:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
    let never: Vec<String> = (0..rows.len())
        .filter(|k| !used.contains(k))
        .map(|k| format!("{} / {}", rows[k].decode, rows[k].tshark))
        .collect();
    assert!(never.is_empty(), "rows never compared: {never:#?}");
}

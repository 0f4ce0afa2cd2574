//! The views of `ipoib show` (`ipoib_runtime::show`): the exact text and JSON of each view for
//! fixed data, and what the views hold for a small simulated subnet in connected mode (two hosts
//! that pinged each other over IPv4 and IPv6, one of them in a multicast group).

use ipoib_fabric::hw::topology::Topology;
use ipoib_fabric::node::subnet::Subnet;
use ipoib_fabric::testing::*;
use ipoib_proto::ipoib::{ConnState, ConnectedConfig, InterfaceConfig};
use ipoib_proto::sa::SaStats;
use ipoib_runtime::control::{AnswerError, Request, View};
use ipoib_runtime::show::{
    from_lab, from_subnet, ip_group, lab_host_index, lab_host_name, sa_section, Answer, ConnEntry,
    CounterSection, HostShow, McastEntry, NeighEntry, NeighState, PathEntry,
};
use ipoib_runtime::tun::TunCounters;
use ipoib_wire::cm::TransportServiceType;
use ipoib_wire::ipoib::{broadcast_mgid, ipv4_mgid, ipv6_mgid, HwAddr, HwAddrFlags, Scope};
use ipoib_wire::keys::PKey;
use ipoib_wire::sa::{JoinState, Rate};
use ipoib_wire::Gid;
use serde_json::{json, Value};
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

fn gid(id: u64) -> Gid {
    Gid::new(Gid::DEFAULT_SUBNET_PREFIX, id)
}

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

/// Fixed data for every view: host `h1` with two neighbours, a path, two groups, a connection
/// and a counter section; a process-wide section.
fn fixed() -> Answer {
    let peer = HwAddr::new(HwAddrFlags::RC, 0x48, gid(0x0002_c903_0000_0002));
    let mut h = HostShow::new("h1");
    h.neigh = vec![
        NeighEntry {
            dst: ip("10.0.0.2"),
            lladdr: Some(peer),
            state: NeighState::Reachable,
        },
        NeighEntry {
            dst: ip("10.0.0.3"),
            lladdr: None,
            state: NeighState::Incomplete,
        },
    ];
    h.paths = vec![PathEntry {
        dgid: peer.gid,
        dlid: 2,
        sl: 0,
        mtu: Some(2048),
        rate: Rate::Gbps10,
        age: Some(Duration::from_millis(12_500)),
    }];
    let bcast = broadcast_mgid(PKey(0xffff), Scope::LinkLocal);
    h.mcast = vec![
        McastEntry {
            mgid: bcast,
            group: ip_group(&bcast),
            join: JoinState::FULL_MEMBER,
            mlid: 0xc000,
            attached: true,
        },
        McastEntry {
            mgid: ipv6_mgid(
                "ff02::1:ff00:2".parse().unwrap(),
                PKey(0xffff),
                Scope::LinkLocal,
            ),
            group: Some(ip("ff02::1:ff00:2")),
            join: JoinState::SEND_ONLY_NON_MEMBER,
            mlid: 0xc001,
            attached: false,
        },
    ];
    h.conns = vec![ConnEntry {
        peer,
        qpn: Some(0x49),
        peer_qpn: None,
        service_id: 0x1000_0000_0000_0048,
        mtu: 65520,
        state: ConnState::Connecting,
        mode: TransportServiceType::Rc,
        active: true,
        sends: true,
        tx_packets: 0,
        rx_packets: 0,
    }];
    let mut s = CounterSection::new("interface");
    s.push("tx_frames", 12).push("drop_no_route", 1);
    h.counters = vec![s];
    let mut f = CounterSection::new("fabric");
    f.push("garbage_datagrams", 3);
    Answer {
        hosts: vec![h],
        sections: vec![f],
    }
}

// The text form, column for column.
#[test]
fn text_of_each_view() {
    let a = fixed();
    assert_eq!(
        a.render(View::Neigh, false),
        "\
HOST  DST       LLADDR                                                       STATE
h1    10.0.0.2  80:00:00:48:fe:80:00:00:00:00:00:00:00:02:c9:03:00:00:00:02  REACHABLE
h1    10.0.0.3  -                                                            INCOMPLETE
"
    );
    assert_eq!(
        a.render(View::Paths, false),
        "\
HOST  DGID              DLID  SL  MTU   RATE     AGE
h1    fe80::2:c903:0:2  2     0   2048  10 Gb/s  12s
"
    );
    assert_eq!(
        a.render(View::Mcast, false),
        "\
HOST  MGID                       GROUP            JOIN       MLID    ATTACHED
h1    ff12:401b:ffff::ffff:ffff  255.255.255.255  full       0xc000  yes
h1    ff12:601b:ffff::1:ff00:2   ff02::1:ff00:2   send-only  0xc001  no
"
    );
    assert_eq!(
        a.render(View::Conns, false),
        "\
HOST  PEER              QPN       PEER_QPN  SERVICE_ID          MTU    STATE       MODE  DIR     TX  RX
h1    fe80::2:c903:0:2  0x000049  -         0x1000000000000048  65520  connecting  RC    active  0   0
"
    );
    assert_eq!(
        a.render(View::Counters, false),
        "\
h1 interface:
    tx_frames      12
    drop_no_route  1
fabric:
    garbage_datagrams  3
"
    );
}

// An empty answer prints the header only (the request worked; there is nothing to show).
#[test]
fn text_of_nothing_is_the_header() {
    let a = Answer::default();
    assert_eq!(a.render(View::Neigh, false), "HOST  DST  LLADDR  STATE\n");
    assert_eq!(a.render(View::Counters, false), "");
    assert_eq!(a.render(View::Conns, true), "[]\n");
}

// The JSON form: the documented field names and types.
#[test]
fn json_of_each_view() {
    let a = fixed();
    let j = |v| -> Value { serde_json::from_str(&a.render(v, true)).unwrap() };
    let lladdr = "80:00:00:48:fe:80:00:00:00:00:00:00:00:02:c9:03:00:00:00:02";
    assert_eq!(
        j(View::Neigh),
        json!([
            {"host": "h1", "dst": "10.0.0.2", "lladdr": lladdr, "state": "REACHABLE"},
            {"host": "h1", "dst": "10.0.0.3", "lladdr": null, "state": "INCOMPLETE"},
        ])
    );
    assert_eq!(
        j(View::Paths),
        json!([{"host": "h1", "dgid": "fe80::2:c903:0:2", "dlid": 2, "sl": 0, "mtu": 2048,
                "rate": "10 Gb/s", "rate_mbps": 10000, "age_ms": 12500}])
    );
    assert_eq!(
        j(View::Mcast),
        json!([
            {"host": "h1", "mgid": "ff12:401b:ffff::ffff:ffff", "group": "255.255.255.255",
             "join": ["full"], "mlid": 49152, "attached": true},
            {"host": "h1", "mgid": "ff12:601b:ffff::1:ff00:2", "group": "ff02::1:ff00:2",
             "join": ["send-only"], "mlid": 49153, "attached": false},
        ])
    );
    assert_eq!(
        j(View::Conns),
        json!([{"host": "h1", "peer": lladdr, "peer_gid": "fe80::2:c903:0:2", "qpn": 73,
                "peer_qpn": null, "service_id": "0x1000000000000048", "mtu": 65520,
                "state": "connecting", "mode": "RC", "active": true, "sends": true,
                "tx_packets": 0, "rx_packets": 0}])
    );
    assert_eq!(
        j(View::Counters),
        json!([
            {"host": "h1", "section": "interface",
             "counters": {"tx_frames": 12, "drop_no_route": 1}},
            {"host": null, "section": "fabric", "counters": {"garbage_datagrams": 3}},
        ])
    );
}

// draft-ietf-ipoib-ip-over-infiniband-06 §4: an MGID back to its IP group.
#[test]
fn ip_groups_of_mgids() {
    let p = PKey(0xffff);
    let v4 = ipv4_mgid("239.1.2.3".parse().unwrap(), p, Scope::SiteLocal);
    assert_eq!(ip_group(&v4), Some(ip("239.1.2.3")));
    let v6 = ipv6_mgid("ff05::1:3".parse().unwrap(), p, Scope::SiteLocal);
    assert_eq!(ip_group(&v6), Some(ip("ff05::1:3")));
    assert_eq!(ip_group(&gid(1)), None, "not multicast");
}

#[test]
fn lab_host_names_round_trip() {
    assert_eq!(lab_host_name(0), "h1");
    assert_eq!(lab_host_index("h1", 2), Some(0));
    assert_eq!(lab_host_index("h2", 2), Some(1));
    for bad in ["h0", "h3", "h01", "1", "h", "hx", "h-1"] {
        assert_eq!(lab_host_index(bad, 2), None, "{bad}");
    }
}

fn connected(_i: usize, c: &mut InterfaceConfig) {
    c.connected = Some(ConnectedConfig::rc());
}

/// Two hosts in connected mode that pinged each other (IPv4 and IPv6); host 1 joined 224.1.2.3.
fn subnet() -> Subnet {
    let mut o = options(Topology::single_switch(2).unwrap(), 7);
    o.ipoib.as_mut().unwrap().configure = Some(connected);
    let mut net = up(o, true);
    for addr in [v4, v6] {
        let s = ping_pairs(&mut net, &[(0, 1)], addr, Duration::from_secs(2));
        assert!(rtt(&net, s[0]).is_some(), "ping answered");
    }
    net.with_ipoib(1, |a, _| a.join_group(ip("224.1.2.3")));
    let d = net.sim().now() + Duration::from_secs(1);
    net.run_until_with(d, |_| false);
    net
}

fn view(net: &Subnet, v: View, host: &str) -> Answer {
    let req = Request {
        view: v,
        host: Some(host.into()),
        json: false,
    };
    from_subnet(net, &req).unwrap()
}

// What each view of the simulated subnet holds, and how it prints.
#[test]
fn views_of_a_simulated_subnet() {
    let net = subnet();
    let h2 = net.interface(1).unwrap();
    let (hw2, lid2) = (h2.hw_addr(), net.lid(1));

    let all = from_subnet(&net, &Request::new(View::Neigh)).unwrap();
    let names: Vec<&str> = all.hosts.iter().map(|h| h.host.as_str()).collect();
    assert_eq!(names, ["h1", "h2"]);

    let a = view(&net, View::Neigh, "h1");
    assert_eq!(a.hosts.len(), 1);
    let n = &a.hosts[0].neigh;
    assert_eq!(n.len(), 2, "{n:?}");
    assert_eq!(
        (n[0].dst, n[0].lladdr, n[0].state),
        (ip("10.0.0.2"), Some(hw2), NeighState::Reachable)
    );
    assert!(n[1].dst.is_ipv6() && n[1].lladdr == Some(hw2));
    assert!(a
        .render(View::Neigh, false)
        .contains(&format!("h1    10.0.0.2          {hw2}  REACHABLE\n")));

    let p = &view(&net, View::Paths, "h1").hosts[0].paths;
    assert_eq!(p.len(), 1);
    assert_eq!((p[0].dgid, p[0].dlid), (hw2.gid, lid2));
    assert_eq!(p[0].mtu, Some(4096));

    let m = &view(&net, View::Mcast, "h2").hosts[0].mcast;
    let bcast = broadcast_mgid(PKey(0xffff), Scope::LinkLocal);
    let b = m.iter().find(|g| g.mgid == bcast).expect("broadcast group");
    assert_eq!(b.group, Some(ip("255.255.255.255")));
    assert!(b.attached && b.join == JoinState::FULL_MEMBER && b.mlid >= 0xc000);
    let g = m
        .iter()
        .find(|g| g.group == Some(ip("224.1.2.3")))
        .expect("joined group");
    assert!(g.attached && g.join == JoinState::FULL_MEMBER);
    let all_nodes = m.iter().find(|g| g.group == Some(ip("ff02::1")));
    assert!(all_nodes.is_some_and(|g| g.attached), "{m:?}");

    let c = &view(&net, View::Conns, "h1").hosts[0].conns;
    let active: Vec<_> = c.iter().filter(|c| c.active).collect();
    assert_eq!(active.len(), 1, "{c:?}");
    let c = active[0];
    assert_eq!(c.peer.gid, hw2.gid);
    assert_eq!(
        (c.state, c.mode, c.mtu),
        (ConnState::Up, TransportServiceType::Rc, 65520)
    );
    assert!(c.qpn.is_some() && c.peer_qpn.is_some() && c.sends && c.tx_packets >= 1);
    assert_eq!(c.service_id >> 56, 0x10, "RFC 4755 §3.5 (Linux spelling)");

    let k = &view(&net, View::Counters, "h1").hosts[0].counters;
    let names: Vec<&str> = k.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["interface", "adapter", "tx", "rx", "connected"]);
    let iface = &k[0].counters;
    let c1 = net.interface(0).unwrap().counters();
    assert!(iface.contains(&("tx_frames".into(), c1.tx_frames)));
    assert!(iface.contains(&("delivered".into(), c1.delivered)));
    assert!(iface.contains(&("carrier".into(), 1)));
    let tx = &k[2].counters;
    assert!(tx.contains(&("frames".into(), app(&net, 0).tx_stats().frames)));
}

#[test]
fn unknown_hosts_are_refused() {
    let net = subnet();
    for h in ["h3", "h0", "ib0"] {
        let req = Request {
            view: View::Neigh,
            host: Some(h.into()),
            json: false,
        };
        // The lab's names are listed, so that `h0` (the sim's naming) shows the lab's.
        assert_eq!(
            from_subnet(&net, &req),
            Err(AnswerError::Unavailable(format!(
                "no host {h:?} (hosts: h1, h2)"
            )))
        );
    }
}

/// Counters of a TUN device whose every counter holds its own value: `base`, `base + 1`, ... in
/// the order of the fields of [`TunCounters`].
fn tun_counters(base: u64) -> Arc<TunCounters> {
    let c = TunCounters::default();
    let fields: [&AtomicU64; 8] = [
        &c.from_os,
        &c.from_os_bytes,
        &c.to_os,
        &c.to_os_bytes,
        &c.write_errors,
        &c.from_os_gso,
        &c.offload_errors,
        &c.to_os_gso,
    ];
    for (i, f) in fields.into_iter().enumerate() {
        f.store(base + i as u64, Ordering::Relaxed);
    }
    Arc::new(c)
}

// A lab's hosts show their TUN devices' counters (section `tun`, after the interface's), as
// `ip -s link` shows a NIC's; the other views are the subnet's alone.
#[test]
fn a_labs_hosts_show_their_tun_devices_counters() {
    let net = subnet();
    let tuns = [tun_counters(10), tun_counters(20)];
    let expect = |b: u64| -> Vec<(String, u64)> {
        [
            ("from_os", b),
            ("from_os_bytes", b + 1),
            ("from_os_gso", b + 5),
            ("offload_errors", b + 6),
            ("to_os", b + 2),
            ("to_os_bytes", b + 3),
            ("to_os_gso", b + 7),
            ("write_errors", b + 4),
        ]
        .into_iter()
        .map(|(n, v)| (n.to_string(), v))
        .collect()
    };
    let all = from_lab(&net, &Request::new(View::Counters), &tuns).unwrap();
    for (h, base) in all.hosts.iter().zip([10, 20]) {
        let names: Vec<&str> = h.counters.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(
            names,
            ["interface", "adapter", "tx", "rx", "connected", "tun"],
            "{}",
            h.host
        );
        assert_eq!(h.counters[5].counters, expect(base), "{}", h.host);
    }
    let req = Request {
        view: View::Counters,
        host: Some("h2".into()),
        json: true,
    };
    let one = from_lab(&net, &req, &tuns).unwrap();
    assert_eq!(one.hosts.len(), 1);
    let rows: Value = serde_json::from_str(&one.render(View::Counters, true)).unwrap();
    let tun = rows
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["section"] == "tun")
        .expect("a tun row");
    assert_eq!(
        tun,
        &json!({"host": "h2", "section": "tun", "counters": {
            "from_os": 20, "from_os_bytes": 21, "from_os_gso": 25, "offload_errors": 26,
            "to_os": 22, "to_os_bytes": 23, "to_os_gso": 27, "write_errors": 24,
        }})
    );
    let text = one.render(View::Counters, false);
    assert!(
        text.contains("h2 tun:\n    from_os         20\n    from_os_bytes   21\n"),
        "{text}"
    );
    assert!(text.contains("    write_errors    24\n"), "{text}");
    // Only the counters view has it.
    let neigh = Request::new(View::Neigh);
    assert_eq!(from_lab(&net, &neigh, &tuns), from_subnet(&net, &neigh));
}

/// The value of counter `name` in `s`.
fn value(s: &CounterSection, name: &str) -> u64 {
    s.counters
        .iter()
        .find(|(n, _)| n == name)
        .unwrap_or_else(|| panic!("no {name} in {s:?}"))
        .1
}

// The process that runs our SM and SA (a lab) shows their counters as sections of its own
// (`sm`, `sa`), equal to what the SM and SA count; a one-host request has none.
#[test]
fn a_subnets_sm_and_sa_show_their_counters() {
    let net = subnet();
    let all = from_subnet(&net, &Request::new(View::Counters)).unwrap();
    let names: Vec<&str> = all.sections.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["sm", "sa"]);
    let (sm, sa) = (&all.sections[0], &all.sections[1]);
    let smp = net.smp_sm().unwrap();
    // Two CAs and a switch, found by one sweep at least, every SMP of it answered.
    assert_eq!(value(sm, "nodes"), 3);
    assert!(value(sm, "sweeps") >= 1);
    assert_eq!(value(sm, "sweeps"), smp.stats().sweeps);
    assert_eq!(value(sm, "smps_sent"), smp.smp_counters().sent);
    assert!(value(sm, "smps_answered") > 0);
    assert_eq!(value(sm, "smps_failed"), 0);
    assert_eq!(value(sm, "trees"), net.sm().stats().trees);
    // The hosts joined groups and asked for paths: the SA counted each request.
    let stats = net.sa().stats();
    assert!(stats.requests > 0);
    assert_eq!(value(sa, "requests"), stats.requests);
    assert_eq!(value(sa, "rmpp_refused"), 0);
    assert_eq!(value(sa, "informs_refused"), stats.informs_refused);
    assert_eq!(value(sa, "services_refused"), stats.services_refused);
    let text = all.render(View::Counters, false);
    assert!(text.contains("sm:\n"), "{text}");
    assert!(text.contains("sa:\n    requests "), "{text}");
    let rows: Value = serde_json::from_str(&all.render(View::Counters, true)).unwrap();
    let row = rows
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["section"] == "sa")
        .expect("an sa row");
    assert!(row["host"].is_null());
    assert_eq!(row["counters"]["requests"], stats.requests);
    // A host's request: that host's sections only.
    assert!(view(&net, View::Counters, "h1").sections.is_empty());
}

// The SA gives its reasons for dropping a MAD as sentences (`SaServer`'s, as written in
// crates/proto/src/sa/server/mod.rs); the section `sa` names each counter as one word,
// `dropped_` and the reason in snake case, so that every `name  value` line of the text view is
// two words and the JSON keys are names like the other counters'.
#[test]
fn the_sas_drop_reasons_are_one_word_counter_names() {
    let mut s = SaStats::default();
    s.dropped.insert("SM_Key neither 0 nor the SA's", 2);
    s.dropped
        .insert("SMInfoRecord: requester shares no P_Key with the SM", 1);
    s.dropped.insert("method unsupported", 3);
    let sa = sa_section(&s);
    assert_eq!(value(&sa, "dropped_sm_key_neither_0_nor_the_sas"), 2);
    assert_eq!(
        value(
            &sa,
            "dropped_sminforecord_requester_shares_no_p_key_with_the_sm"
        ),
        1
    );
    assert_eq!(value(&sa, "dropped_method_unsupported"), 3);
    for (n, _) in &sa.counters {
        let word = n
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
        assert!(word, "{n:?}");
    }
    let text = Answer {
        hosts: Vec::new(),
        sections: vec![sa],
    }
    .render(View::Counters, false);
    for line in text.lines().skip(1) {
        assert_eq!(line.split_whitespace().count(), 2, "{line:?}");
    }
}

// IBA 1 §14.4: with a second SM of ours of greater Priority on host h2, h2's SM is the master
// and programs the subnet, host 0's is Standby: the process's `sm` and `sa` sections are the
// master's (h2's), labeled `host 2`, `master 1`; host 0's follow as `sm_h1` and `sa_h1`.
#[test]
fn the_sm_section_is_the_masters() {
    use ipoib_fabric::node::sm::ElectionSettings;
    use ipoib_wire::smp::SmState;
    let o = options(Topology::single_switch(2).unwrap(), 7);
    let mut net = Subnet::build(o).unwrap();
    let greater = ElectionSettings {
        priority: 5,
        ..ElectionSettings::default()
    };
    let app = net.add_sm(1, greater).unwrap();
    assert!(net.run_until_joined(at(5)), "every host has carrier");
    let (first, second) = (net.smp_sm().unwrap(), net.smp_sm_on(1, app).unwrap());
    assert_eq!(first.election().state(), SmState::Standby);
    assert_eq!(second.election().state(), SmState::Master);
    let all = from_subnet(&net, &Request::new(View::Counters)).unwrap();
    let names: Vec<&str> = all.sections.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["sm", "sa", "sm_h1", "sa_h1"]);
    let (sm, sa, standby) = (&all.sections[0], &all.sections[1], &all.sections[2]);
    assert_eq!((value(sm, "host"), value(sm, "master")), (2, 1));
    assert_eq!((value(standby, "host"), value(standby, "master")), (1, 0));
    // The master programmed the subnet; the standby set nothing.
    assert_eq!(value(sm, "sets"), second.stats().sets);
    assert!(value(sm, "sets") > 0);
    assert_eq!(value(standby, "sets"), first.stats().sets);
    assert_eq!(value(sm, "smps_sent"), second.smp_counters().sent);
    let master_sa = net.sa_on(1, app).unwrap().stats();
    assert_eq!(value(sa, "requests"), master_sa.requests);
    assert_eq!(
        value(&all.sections[3], "requests"),
        net.sa().stats().requests
    );
    let text = all.render(View::Counters, false);
    assert!(text.contains("sm:\n    host "), "{text}");
    assert!(text.contains("sm_h1:\n"), "{text}");
}

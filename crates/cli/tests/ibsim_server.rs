//! `ipoib ibsim-server` against the real infiniband-diags under `ibsim-run` (Debian ibsim-utils:
//! libumad2sim preloaded): `saquery` attaches to a host of our subnet by name and reads our SA
//! (groups and members, PathRecords, and the subnet's NodeRecords, PortInfoRecords, LinkRecords,
//! P_KeyTableRecords, GUIDInfoRecords and LinearForwardingTableRecords).
//! What it prints is compared with the SA of the same subnet built in this process (same topology,
//! partitions and seed: the same subnet, docs/ARCHITECTURE.md "Rules"). Skipped, with a message,
//! where ibsim-run or saquery is not installed.

mod common;
mod osm;

use ipoib_fabric::hw::topology::Topology;
use ipoib_fabric::node::subnet::{Subnet, SubnetOptions};
use ipoib_fabric::Instant;
use ipoib_proto::partitions;
use osm::{all_installed, diag, values, Server};
use std::net::Ipv6Addr;
use std::path::Path;
use std::time::Duration;

const PARTITIONS: &str = "Default=0x7fff, ipoib : ALL=full ;\nLab=0x0123, ipoib : ALL=full ;\n";

/// Runs `saquery ARGS` attached to `host`.
fn saquery(dir: &Path, sock: &str, host: &str, args: &[&str]) -> String {
    let mut a = vec!["saquery"];
    a.extend_from_slice(args);
    diag(dir, sock, host, &a)
}

fn gid_text(g: &ipoib_wire::Gid) -> String {
    Ipv6Addr::from(g.0).to_string()
}

#[test]
fn saquery_reads_our_sa() {
    if !all_installed(&["ibsim-run", "saquery"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let parts_file = dir.path().join("partitions.conf");
    std::fs::write(&parts_file, PARTITIONS).unwrap();
    let server = Server::spawn(dir.path(), "cli-test", |c| {
        c.args(["--topology", "single-switch", "--hosts", "3"])
            .args(["--seed", "5", "--partitions"])
            .arg(&parts_file);
    });
    let sock = server.sock.clone();
    let lines = server.before_ready().to_vec();
    assert_eq!(lines.len(), 3, "one line per host: {lines:?}");

    // The same subnet here.
    let mut opts = SubnetOptions::new(Topology::single_switch(3).unwrap(), 5);
    opts.partitions = Some(partitions::parse(PARTITIONS).unwrap());
    let mut net = Subnet::build(opts).unwrap();
    assert!(net.run_until_joined(Instant::ZERO + Duration::from_secs(60)));
    for (i, l) in lines.iter().enumerate() {
        assert!(
            l.starts_with(&format!("host h{i} lid {} ", net.lid(i))),
            "{l}"
        );
    }
    let groups = net.sa().groups();
    assert_eq!(groups.len(), 2, "a broadcast group per partition");

    // Groups (untrusted GetTable: one record per group).
    let out = saquery(dir.path(), &sock, "h1", &["-g"]);
    let mut mgids = values(&out, "MGID");
    mgids.sort();
    let mut want: Vec<String> = groups.iter().map(|g| gid_text(&g.record.mgid)).collect();
    want.sort();
    assert_eq!(mgids, want, "{out}");
    let mut mlids = values(&out, "Mlid");
    mlids.sort();
    let mut want: Vec<String> = groups
        .iter()
        .map(|g| format!("0x{:X}", g.record.mlid))
        .collect();
    want.sort();
    assert_eq!(mlids, want, "{out}");

    // Members of each group (trusted, SM_Key 1: every member's record).
    for g in &groups {
        let mgid = gid_text(&g.record.mgid);
        let out = saquery(
            dir.path(),
            &sock,
            "h2",
            &["--smkey", "1", "MCMR", "--mgid", &mgid],
        );
        let mut got = values(&out, "PortGid");
        got.sort();
        let mut want: Vec<String> = g.members.iter().map(|(gid, _)| gid_text(gid)).collect();
        want.sort();
        assert_eq!(got, want, "members of {mgid}: {out}");
        assert_eq!(want.len(), 3);
    }

    // A PathRecord between two hosts.
    let (s, d) = (net.lid(1), net.lid(2));
    let out = saquery(
        dir.path(),
        &sock,
        "h1",
        &["PR", "--slid", &s.to_string(), "--dlid", &d.to_string()],
    );
    assert_eq!(values(&out, "slid"), vec![s.to_string()], "{out}");
    assert_eq!(values(&out, "dlid"), vec![d.to_string()], "{out}");
    assert_eq!(values(&out, "sgid"), vec![gid_text(&net.gid(1))], "{out}");
    assert_eq!(values(&out, "dgid"), vec![gid_text(&net.gid(2))], "{out}");

    // NodeRecords (IBA 1 §15.2.5.2). Plain `saquery` asks for all of them; libumad2sim hands the
    // client only the first MAD of the RMPP answer, which holds one 112-byte record: the first
    // node in GUID order, h0 (docs/IBSIM.md "ibsim (server side)").
    let out = saquery(dir.path(), &sock, "h1", &[]);
    assert_eq!(values(&out, "NodeDescription"), ["h0"], "{out}");
    assert_eq!(values(&out, "lid"), [net.lid(0).to_string()], "{out}");
    // One by LID: every host, its node and port GUIDs.
    for i in 0..3 {
        let out = saquery(dir.path(), &sock, "h2", &[&net.lid(i).to_string()]);
        assert_eq!(values(&out, "NodeDescription"), [format!("h{i}")], "{out}");
        assert_eq!(values(&out, "node_type"), ["Channel Adapter"], "{out}");
        let port_guid = net.gid(i).interface_id();
        assert_eq!(
            values(&out, "port_guid"),
            [format!("0x{port_guid:016x}")],
            "{out}"
        );
    }
    // `saquery -m`: the groups' members with their node descriptions (trusted, so that every
    // member's PortGID shows; h0's description comes from the one NodeRecord that fits a MAD).
    let out = saquery(dir.path(), &sock, "h1", &["--smkey", "1", "-m"]);
    let mut members = values(&out, "PortGid");
    members.sort();
    members.dedup();
    let mut want: Vec<String> = (0..3).map(|i| gid_text(&net.gid(i))).collect();
    want.sort();
    assert_eq!(members, want, "{out}");
    assert!(
        values(&out, "NodeDescription").contains(&"h0".to_string()),
        "{out}"
    );
    let out = saquery(dir.path(), &sock, "h1", &["-m"]);
    assert_eq!(
        values(&out, "MGID").len(),
        2,
        "one untrusted record per group: {out}"
    );
    // `saquery -s`: the port with IsSM, h0's (PortInfoRecord, CapabilityMask matched bitwise).
    let out = saquery(dir.path(), &sock, "h2", &["-s"]);
    assert_eq!(values(&out, "base_lid"), [net.lid(0).to_string()], "{out}");
    // `saquery LR`: both directions of the three cables, in one MAD.
    let out = saquery(dir.path(), &sock, "h2", &["LR"]);
    let mut from = values(&out, "FromLID");
    from.sort();
    assert_eq!(from.len(), 6, "{out}");
    for i in 0..3 {
        assert!(from.contains(&net.lid(i).to_string()), "{out}");
    }
    // `saquery --smkey 1 PKTR LID`: the P_Key table of h2's port, both partitions.
    let out = saquery(
        dir.path(),
        &sock,
        "h1",
        &["--smkey", "1", "PKTR", &net.lid(2).to_string()],
    );
    assert!(out.contains("0xffff"), "{out}");
    assert!(out.contains("0x8123"), "{out}");

    // `saquery GIR`: block 0 of the GUIDInfo of h1's port holds its port GUID (one GUID, GUIDCap 1).
    let out = saquery(dir.path(), &sock, "h1", &["GIR", &net.lid(1).to_string()]);
    let port_guid = format!("0x{:016x}", net.gid(1).interface_id());
    assert!(out.contains(&port_guid), "{out}");
    // `saquery LFTR`: the switch's LFT sends each host's LID to a port.
    let out = saquery(dir.path(), &sock, "h2", &["LFTR"]);
    assert!(out.contains("LFT Record dump"), "{out}");

    // SIGTERM stops it with status 0 and its summary: all the clients came and went.
    let (status, err) = server.stop();
    assert!(status.success(), "{status}: {err}");
    assert!(err.contains("15 connects, 0 refused"), "{err}");
}

/// `--no-join`: bare HCAs, as ibsim's. The hosts come up (LIDs from our SM) but no IPoIB
/// interface joins: our SA holds the default partition's broadcast group with no member.
#[test]
fn no_join_leaves_the_broadcast_group_empty() {
    if !all_installed(&["ibsim-run", "saquery"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let server = Server::spawn(dir.path(), "cli-nojoin", |c| {
        c.args(["--topology", "single-switch", "--hosts", "3"])
            .arg("--no-join");
    });
    let sock = server.sock.clone();
    let lines = server.before_ready().to_vec();
    assert_eq!(lines.len(), 3, "one line per host: {lines:?}");
    assert!(
        lines.iter().all(|l| !l.contains(" lid 0 ")),
        "our SM gave every host a LID: {lines:?}"
    );
    let out = saquery(dir.path(), &sock, "h1", &["-g"]);
    let mgids = values(&out, "MGID");
    assert_eq!(mgids, ["ff12:401b:ffff::ffff:ffff"], "{out}");
    let out = saquery(
        dir.path(),
        &sock,
        "h2",
        &["--smkey", "1", "MCMR", "--mgid", &mgids[0]],
    );
    assert!(values(&out, "PortGid").is_empty(), "no member: {out}");
    let (status, err) = server.stop();
    assert!(status.success(), "{status}: {err}");
}

/// `--pcap`: what the subnet carried while it served is in the file, time-stamped by the wall
/// clock: `saquery -g` from h1 after the server slept is there as h1's SubnAdmGetTable of
/// MCMemberRecords and the SA's answer, each on both links of its path, between the times the
/// test saw before and after it (a MAD that wakes the server enters at the present); the server
/// says on its way out how many packets the file holds, and `ipoib decode` reads as many.
#[test]
fn pcap_holds_a_clients_query_at_its_time() {
    if !all_installed(&["ibsim-run", "saquery", "tshark"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let pcap = dir.path().join("served.pcap");
    let server = Server::spawn(dir.path(), "cli-pcap", |c| {
        c.args(["--topology", "single-switch", "--hosts", "3", "--pcap"])
            .arg(&pcap);
    });
    let sock = server.sock.clone();
    server.before_ready();
    // Longer than the serving loop's longest sleep (100 ms).
    std::thread::sleep(Duration::from_millis(300));
    let before = common::unix_secs();
    let out = saquery(dir.path(), &sock, "h1", &["-g"]);
    let after = common::unix_secs();
    assert_eq!(values(&out, "MGID"), ["ff12:401b:ffff::ffff:ffff"], "{out}");
    let (status, err) = server.stop();
    assert!(status.success(), "{status}: {err}");
    let (_, packets) = common::pcap_said(&err, "ipoib ibsim-server", &pcap);
    common::assert_decodes(&pcap, packets);
    // MCMemberRecord (0x0038) GetTable (0x12) and GetTableResp (0x92), IBA 1 §15.2.5.17.
    for method in ["0x12", "0x92"] {
        let filter =
            format!("infiniband.mad.method == {method} && infiniband.mad.attributeid == 0x0038");
        let o = std::process::Command::new("tshark")
            .args(["-r", pcap.to_str().unwrap(), "-Y", &filter])
            .args(["-T", "fields", "-e", "frame.time_epoch"])
            .output()
            .unwrap();
        let times: Vec<f64> = String::from_utf8_lossy(&o.stdout)
            .lines()
            .filter_map(|l| l.trim().parse().ok())
            .collect();
        assert!(times.len() >= 2, "{method}: {times:?}");
        for t in times {
            assert!(
                (before..=after).contains(&t),
                "{method} at {t}, saquery ran from {before} to {after}"
            );
        }
    }
}

/// A refused CONNECT is told on standard error at once, naming the node asked for and why
/// (the client learns only that it was refused): an unknown node, a full server. After the first
/// ten, one line says the rest are only counted; the summary at exit counts them all.
#[test]
fn refusals_are_told_with_their_reason() {
    use ipoib_runtime::ibsim::{Endpoint, IbsimClient};
    let dir = tempfile::tempdir().unwrap();
    let server = Server::spawn(dir.path(), "cli-refuse", |c| {
        c.args(["--topology", "single-switch", "--hosts", "2"])
            .args(["--max-clients", "1"]);
    });
    let ep = Endpoint::unix(&server.sock);
    assert!(IbsimClient::connect_to(&ep, Some("h9"), 0, false).is_err());
    let told = |s: &Server, what: &str| osm::wait_for(10, || s.stderr().contains(what));
    assert!(
        told(&server, "(node \"h9\"): no such node"),
        "told while it runs: {}",
        server.stderr()
    );
    let _h1 = IbsimClient::connect_to(&ep, Some("h1"), 0, false).unwrap();
    assert!(IbsimClient::connect_to(&ep, Some("h0"), 0, false).is_err());
    assert!(
        told(&server, "(node \"h0\"): too many clients (1 attached)"),
        "{}",
        server.stderr()
    );
    for _ in 0..12 {
        assert!(IbsimClient::connect_to(&ep, Some("h9"), 0, false).is_err());
    }
    assert!(
        told(&server, "further ones only counted"),
        "{}",
        server.stderr()
    );
    let (status, err) = server.stop();
    assert!(status.success(), "{status}: {err}");
    let lines = err.lines().filter(|l| l.contains("refused client")).count();
    assert_eq!(lines, 10, "the first ten only: {err}");
    assert!(err.contains("1 connects, 14 refused"), "{err}");
}

/// Nothing the server loses goes untold: a client that does not read while its answers come
/// loses those its socket cannot hold (a Unix datagram socket's receive buffer,
/// `net.core.rmem_default`, 212,992 bytes here: about 170 of the server's 288-byte datagrams);
/// the summary at exit counts them (beside the MADs handed back undelivered), and what was read
/// plus what was lost is what was answered.
#[test]
fn mads_lost_to_a_full_client_socket_are_counted_at_exit() {
    use ipoib_runtime::ibsim::{Endpoint, IbsimClient};
    use ipoib_wire::mad::attr::smp::NODE_INFO;
    use ipoib_wire::smp::SmpMadRepr;
    const SENT: u64 = 2000;
    let dir = tempfile::tempdir().unwrap();
    let server = Server::spawn(dir.path(), "cli-lost", |c| {
        c.args(["--topology", "single-switch", "--hosts", "2"]);
    });
    let lid: u16 = server.before_ready()[0]
        .split_whitespace()
        .nth(3)
        .and_then(|l| l.parse().ok())
        .expect("host h0 lid N");
    let ep = Endpoint::unix(&server.sock);
    let c = IbsimClient::connect_to(&ep, Some("h1"), 0, false).unwrap();
    for tid in 0..SENT {
        let get = SmpMadRepr::lid_routed_get(0x10_0000 + tid, NODE_INFO, 0);
        c.send_mad(lid, 0, &get.to_bytes()).unwrap();
    }
    std::thread::sleep(Duration::from_secs(2));
    let mut read = 0;
    while c.recv(Duration::from_millis(500)).unwrap().is_some() {
        read += 1;
    }
    let (status, err) = server.stop();
    assert!(status.success(), "{status}: {err}");
    assert!(read > 0 && read < SENT, "{read} of {SENT} read: {err}");
    assert!(
        err.contains(&format!(
            "{SENT} MADs in, {read} out, 0 handed back undelivered, {} lost to a client's full socket",
            SENT - read
        )),
        "{read} of {SENT} read: {err}"
    );
}

/// A SIGINT that comes while the subnet comes up is not lost when the server starts with SIGINT
/// ignored, as a command started with `&` in a script does (docs/IBSIM.md "ibsim (server
/// side)"): it stops before serving (no `ready`), status 0. It used to be discarded: the
/// handler came after the bring-up, and the server then served until killed.
#[test]
fn sigint_during_bring_up_stops_the_server() {
    let sock = format!("cli-earlyint{}", std::process::id());
    let args = [
        "ibsim-server",
        "--topology",
        "fat-tree",
        "--hosts",
        "1024",
        "--sockname",
        &sock,
    ];
    let mut server = common::Talker::with_sigint_ignored(&args, None);
    // A handler: the first thing the server makes, in milliseconds, later on a busy machine.
    // Code that made it after the bring-up (or never) is still caught: the SIGINT then finds it
    // serving, or is lost.
    server.until_it_catches_sigint(Duration::from_secs(10));
    assert_eq!(server.interrupt_and_wait(), 0, "{:?}", server.seen);
    let told = |what: &str| server.seen.iter().any(|l| l.contains(what));
    assert!(told("SIGINT"), "{:?}", server.seen);
    // The summary of what it served comes only after serving.
    assert!(!told(" connects, "), "served: {:?}", server.seen);
}

/// `ibping` (infiniband-diags) across our subnet: `ibping -S` on h1, started with
/// `SIM_SET_ISSM=1` since ibsim hands a port's vendor-class requests (0x32) to its SM client
/// alone (docs/IBSIM.md "ibsim (server side)", measured the same against ibsim 0.10), answers
/// pings by LID and by port GUID (resolved through our SA's PathRecord) from h2. Before, the
/// server on h1 never got them: every ping was answered "status 0xc" by h1's host.
#[test]
fn ibping_across_our_subnet() {
    use std::process::{Command, Stdio};
    if !all_installed(&["ibsim-run", "ibping", "smpquery"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let server = Server::spawn(dir.path(), "cli-ibping", |c| {
        c.args(["--topology", "single-switch", "--hosts", "3"]);
    });
    let sock = server.sock.clone();
    let lines = server.before_ready().to_vec();
    let lid = lines[1].split(' ').nth(3).unwrap().to_string();
    assert!(lines[1].starts_with("host h1 lid "), "{lines:?}");
    let pong = osm::Guard(
        Command::new("ibsim-run")
            .args(["ibping", "-S"])
            .current_dir(dir.path())
            .env("IBSIM_SOCKNAME", &sock)
            .env("SIM_HOST", "h1")
            .env("SIM_SET_ISSM", "1")
            .env_remove("IBSIM_SERVER_NAME")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let ni = diag(
        dir.path(),
        &sock,
        "h1",
        &["smpquery", "nodeinfo", "-D", "0"],
    );
    let guid = values(&ni, "PortGuid:");
    assert_eq!(guid.len(), 1, "{ni}");
    // The server registers its class a moment after it starts (later on a busy machine): pings
    // until one is answered, for 20 s at most.
    let answered = |args: &[&str]| {
        let mut a = vec!["ibping", "-c", "1"];
        a.extend_from_slice(args);
        let mut got = None;
        osm::wait_for(20, || {
            let (_, out, _) = osm::diag_any(dir.path(), &sock, "h2", &a);
            got = out.contains("1 received").then_some(out);
            got.is_some()
        });
        got
    };
    let out = answered(&[&lid]).expect("a ping by LID answered");
    assert!(out.contains(&format!("(Lid {lid})")), "{out}");
    let out = answered(&["-G", &guid[0]]).expect("a ping by GUID answered");
    assert!(out.contains("Pong from"), "{out}");
    drop(pong);
    let (status, err) = server.stop();
    assert!(status.success(), "{status}: {err}");
}

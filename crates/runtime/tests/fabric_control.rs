//! The fabric process's control socket (`ipoib show --fabric`): a hostile peer sends garbage,
//! a datagram of another version, a Keepalive of a session it does not have, then attaches and
//! sends packets claiming a LID that is not its slot's (IBA 1 §7.11.1) and bytes that are no
//! packet; every one is counted, per slot where it belongs, and readable through the socket
//! (docs/UDP-FABRIC.md "Protocol"). The other way, an attach process counts an answer without
//! its attach's nonce (section `attach`).

use ipoib_fabric::hw::topology::Topology;
use ipoib_fabric::node::remote::FabricOptions;
use ipoib_fabric::node::subnet::SubnetOptions;
use ipoib_runtime::control::{query, Request, View};
use ipoib_runtime::udp_fabric::{AttachOptions, AttachProcess, FabricProcess};
use ipoib_wire::packet::fill_crcs;
use ipoib_wire::udp_fabric::{AttachAccept, DatagramRepr, MessageRepr, PortStateCode};
use ipoib_wire::Guid;
use serde_json::Value;
use std::net::UdpSocket;
use std::path::Path;
use std::time::{Duration, Instant};

const TURN: Duration = Duration::from_millis(2);
/// How long the test waits for what must happen: long enough for a loaded machine (2 cores
/// shared by parallel tests); only a failing test waits this long.
const LONG: Duration = Duration::from_secs(30);

/// Turns the fabric while another thread asks its control socket.
fn ask(f: &mut FabricProcess, path: &Path, view: View) -> Value {
    let path = path.to_path_buf();
    let req = Request {
        view,
        host: None,
        json: true,
    };
    let t = std::thread::spawn(move || query(&path, &req, LONG));
    while !t.is_finished() {
        f.turn(TURN).unwrap();
    }
    let text = t.join().unwrap().expect("an answer");
    serde_json::from_str(&text).expect("JSON")
}

/// The counter `name` of section `section` (of host `host`, or of the process for `None`).
fn counter(rows: &Value, host: Option<&str>, section: &str, name: &str) -> u64 {
    rows.as_array()
        .unwrap()
        .iter()
        .find(|r| r["section"] == section && r["host"].as_str() == host)
        .and_then(|r| r["counters"][name].as_u64())
        .unwrap_or_else(|| panic!("no {section}.{name} of {host:?} in {rows}"))
}

/// A UD SEND of 4 bytes from `slid` (LRH, BTH, DETH, payload, ICRC, VCRC; IBA 1 §7.7, §9.2).
fn ud_packet(slid: u16, dlid: u16) -> Vec<u8> {
    let mut p = vec![0u8; 38];
    p[1] = 0x02; // SL 0, LNH IBA local: a BTH follows
    p[2..4].copy_from_slice(&dlid.to_be_bytes());
    p[4..6].copy_from_slice(&9u16.to_be_bytes()); // LRH to ICRC: 36 bytes, 9 words
    p[6..8].copy_from_slice(&slid.to_be_bytes());
    p[8] = 0x64; // UD SEND Only
    p[10..12].copy_from_slice(&0xffffu16.to_be_bytes());
    p[13..16].copy_from_slice(&[0, 0, 1]);
    p[20..24].copy_from_slice(&0x8001_0000u32.to_be_bytes());
    p[25..28].copy_from_slice(&[0, 0, 2]);
    fill_crcs(&mut p).unwrap();
    p
}

fn send(s: &UdpSocket, session: u64, m: MessageRepr<'_>) {
    let d = DatagramRepr {
        session,
        message: m,
    };
    s.send(&d.to_vec().unwrap()).unwrap();
}

/// Asks `f` from `s` for an identity: a request without a cookie, then, once the challenge
/// came (echoing the request's nonce), with its cookie (docs/UDP-FABRIC.md "Protocol").
/// Leaves `s` non-blocking.
fn attach(f: &mut FabricProcess, s: &UdpSocket) {
    s.set_nonblocking(true).unwrap();
    let request = |cookie| MessageRepr::AttachRequest {
        hint: Guid(0),
        cookie,
        nonce: 0x5eed,
    };
    send(s, 0, request(0));
    let end = Instant::now() + LONG;
    let mut buf = [0u8; 64];
    loop {
        assert!(Instant::now() < end, "no challenge");
        f.turn(TURN).unwrap();
        if let Ok(n) = s.recv(&mut buf) {
            if let Ok(DatagramRepr {
                message: MessageRepr::AttachChallenge { cookie, nonce },
                ..
            }) = DatagramRepr::parse(&buf[..n])
            {
                assert_eq!(nonce, 0x5eed, "the request's nonce");
                send(s, 0, request(cookie));
                return;
            }
        }
    }
}

/// A fabric of one switch and three CAs on loopback, serving its control socket in `dir`, whose
/// sessions do not time out however slowly the test runs (the peers send no Keepalives).
fn fabric_with_control(dir: &std::path::Path) -> (FabricProcess, std::path::PathBuf) {
    let path = dir.join("fabric-test.sock");
    let mut opts = FabricOptions::new(SubnetOptions::new(Topology::single_switch(3).unwrap(), 7));
    opts.timeout = LONG * 10;
    let mut f = FabricProcess::bind("127.0.0.1:0".parse().unwrap(), opts).unwrap();
    f.serve_control(Some(&path)).unwrap();
    (f, path)
}

#[test]
fn garbage_and_spoofing_are_counted_and_shown() {
    let dir = tempfile::tempdir().unwrap();
    let (mut f, path) = fabric_with_control(dir.path());
    assert_eq!(f.control_path(), Some(path.as_path()));
    let evil = UdpSocket::bind("127.0.0.1:0").unwrap();
    evil.connect(f.local_addr().unwrap()).unwrap();
    evil.set_nonblocking(true).unwrap();

    // Garbage, another version, a session nobody has.
    evil.send(b"not a datagram of ours").unwrap();
    let mut v1 = DatagramRepr {
        session: 0,
        message: MessageRepr::Detach,
    }
    .to_vec()
    .unwrap();
    v1[2] = 1;
    evil.send(&v1).unwrap();
    send(&evil, 0x1234, MessageRepr::Keepalive { seq: 1 });

    // Then it attaches, like any host, and learns its session and LID, and waits for its port
    // to be Active: the fabric drops a data packet from a port that is not (IBA 1 §7.2).
    attach(&mut f, &evil);
    let (mut session, mut lid, mut active) = (0u64, 0u16, false);
    let end = Instant::now() + LONG;
    let mut buf = [0u8; 8192];
    while (session == 0 || lid == 0 || !active) && Instant::now() < end {
        f.turn(TURN).unwrap();
        while let Ok(n) = evil.recv(&mut buf) {
            let Ok(d) = DatagramRepr::parse(&buf[..n]) else {
                continue;
            };
            match d.message {
                MessageRepr::AttachAccept { .. } => session = d.session,
                MessageRepr::PortConfig(c) => {
                    lid = c.lid;
                    active = c.state == PortStateCode::Active;
                }
                _ => {}
            }
        }
    }
    assert!(
        session != 0 && lid != 0 && active,
        "attached: session {session:#x}, LID {lid}, Active {active}"
    );
    let slot = f.server().slot_of(&evil.local_addr().unwrap()).unwrap();
    let name = ipoib_runtime::udp_fabric::slot_name(f.server().slot_topo_node(slot).unwrap());

    // Packets claiming another LID, and bytes that are no packet.
    for _ in 0..3 {
        let p = ud_packet(lid.wrapping_add(40), 1);
        send(&evil, session, MessageRepr::Packet(&p));
    }
    send(&evil, session, MessageRepr::Packet(&[0xde, 0xad]));
    // An honest packet passes the checks.
    let p = ud_packet(lid, 1);
    send(&evil, session, MessageRepr::Packet(&p));

    let rows = ask(&mut f, &path, View::Counters);
    assert_eq!(counter(&rows, None, "fabric", "malformed"), 1, "{rows}");
    assert_eq!(counter(&rows, None, "fabric", "bad_version"), 1);
    assert_eq!(counter(&rows, None, "fabric", "no_cookie"), 1);
    assert_eq!(counter(&rows, None, "fabric", "bad_cookie"), 0);
    assert_eq!(counter(&rows, None, "fabric", "unknown_session"), 1);
    assert_eq!(counter(&rows, None, "fabric", "attached"), 1);
    // The request without a cookie counts too.
    assert_eq!(counter(&rows, None, "fabric", "datagrams"), 10);
    assert!(counter(&rows, None, "udp", "received") >= 10);
    assert_eq!(counter(&rows, Some(&name), "slot", "spoofed_lid"), 3);
    assert_eq!(counter(&rows, Some(&name), "slot", "malformed"), 1);
    assert_eq!(counter(&rows, Some(&name), "slot", "port_not_active"), 0);
    assert_eq!(counter(&rows, Some(&name), "slot", "link_down"), 0);
    assert_eq!(counter(&rows, Some(&name), "slot", "from_host"), 1);
    assert_eq!(counter(&rows, Some(&name), "slot", "attached"), 1);
    // The fabric's SM and SA: a switch and the two CAs whose ports are up (the SM's, the attached one) swept by SMPs, every SMP answered; the SA's
    // counters as the SA keeps them.
    assert_eq!(counter(&rows, None, "sm", "nodes"), 3, "{rows}");
    assert!(counter(&rows, None, "sm", "sweeps") >= 1);
    assert!(counter(&rows, None, "sm", "smps_answered") > 0);
    assert_eq!(counter(&rows, None, "sm", "smps_failed"), 0);
    let sa = f.server().sa().unwrap().stats();
    assert_eq!(counter(&rows, None, "sa", "requests"), sa.requests);
    assert_eq!(counter(&rows, None, "sa", "rmpp_refused"), 0);
    // One section of the control socket's own, after the others.
    let sections: Vec<&str> = rows
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["host"].is_null())
        .map(|r| r["section"].as_str().unwrap())
        .collect();
    assert_eq!(sections, ["fabric", "udp", "sm", "sa", "control"], "{rows}");

    // The hosts view: one slot held by the peer, the other free.
    let rows = ask(&mut f, &path, View::Hosts);
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), 2, "{rows:?}");
    let me = rows.iter().find(|r| r["host"] == name.as_str()).unwrap();
    assert_eq!(me["state"], "attached");
    assert_eq!(me["lid"], u64::from(lid));
    assert_eq!(me["peer"], evil.local_addr().unwrap().to_string());
    assert_eq!(me["dropped"], 4);
    let other = rows.iter().find(|r| r["host"] != name.as_str()).unwrap();
    assert_eq!(other["state"], "free");
    assert!(other["peer"].is_null());

    // Detach: counted, and the slot is free again.
    send(&evil, session, MessageRepr::Detach);
    let rows = ask(&mut f, &path, View::Counters);
    assert_eq!(counter(&rows, None, "fabric", "detached"), 1);
    assert_eq!(counter(&rows, Some(&name), "slot", "attached"), 0);
}

// docs/UDP-FABRIC.md "Reliable configuration", over loopback UDP: a host that says it takes
// sequenced configuration (ControlAck 0 after the accept) is sent its port's configuration as
// SeqPortConfig, numbered from 1, and sent it again while it does not acknowledge; acknowledged,
// nothing waits. The counters show it through the control socket.
#[test]
fn a_host_that_acknowledges_late_is_sent_its_configuration_again() {
    let dir = tempfile::tempdir().unwrap();
    let (mut f, path) = fabric_with_control(dir.path());
    let host = UdpSocket::bind("127.0.0.1:0").unwrap();
    host.connect(f.local_addr().unwrap()).unwrap();
    host.set_nonblocking(true).unwrap();
    attach(&mut f, &host);
    let (mut session, mut copies) = (0u64, std::collections::BTreeMap::<u32, u32>::new());
    let mut buf = [0u8; 8192];
    let end = Instant::now() + LONG;
    // Not acknowledged: the first numbered message comes again.
    while copies.get(&1).is_none_or(|&n| n < 2) && Instant::now() < end {
        f.turn(TURN).unwrap();
        while let Ok(n) = host.recv(&mut buf) {
            let Ok(d) = DatagramRepr::parse(&buf[..n]) else {
                continue;
            };
            match d.message {
                MessageRepr::AttachAccept { .. } => {
                    session = d.session;
                    send(&host, session, MessageRepr::ControlAck { seq: 0 });
                }
                MessageRepr::SeqPortConfig { seq, .. }
                | MessageRepr::SeqClientReregister { seq, .. } => {
                    *copies.entry(seq).or_default() += 1;
                }
                _ => {}
            }
        }
    }
    assert_eq!(copies.get(&1), Some(&2), "sent again: {copies:?}");
    let slot = f.server().slot_of(&host.local_addr().unwrap()).unwrap();
    // Acknowledged up to the latest number: nothing waits.
    while f.server().unacked(slot) != Some(0) && Instant::now() < end {
        let latest = *copies.keys().last().unwrap();
        send(&host, session, MessageRepr::ControlAck { seq: latest });
        f.turn(TURN).unwrap();
        while let Ok(n) = host.recv(&mut buf) {
            if let Ok(DatagramRepr {
                message:
                    MessageRepr::SeqPortConfig { seq, .. }
                    | MessageRepr::SeqClientReregister { seq, .. },
                ..
            }) = DatagramRepr::parse(&buf[..n])
            {
                *copies.entry(seq).or_default() += 1;
            }
        }
    }
    assert_eq!(f.server().unacked(slot), Some(0));
    let rows = ask(&mut f, &path, View::Counters);
    assert_eq!(
        counter(&rows, None, "fabric", "sequenced_sessions"),
        1,
        "{rows}"
    );
    assert!(
        counter(&rows, None, "fabric", "control_acks") >= 2,
        "{rows}"
    );
    assert!(
        counter(&rows, None, "fabric", "control_resent") >= 1,
        "{rows}"
    );
    assert_eq!(
        counter(&rows, None, "fabric", "control_dropped"),
        0,
        "{rows}"
    );
    assert_eq!(counter(&rows, None, "fabric", "unexpected"), 0, "{rows}");
}

// `ipoib fabric --ibsim NAME` (docs/UDP-FABRIC.md "An external SM"): what ibsim clients send
// its ibsim server is counted there and shown with the fabric's counters, section `ibsim`: a
// control datagram that is no `sim_ctl`, a request naming a client nobody connected, a CONNECT
// for a node the topology does not have. Before, those counts stayed inside the server, and
// `ipoib show --fabric counters` had no section `ibsim`.
#[test]
fn what_ibsim_clients_send_the_fabric_is_counted_and_shown() {
    use ipoib_runtime::ibsim::msg::{ClientInfo, CtlType, SimCtl};
    use ipoib_runtime::ibsim_server::ServerConfig;
    use std::os::linux::net::SocketAddrExt;
    use std::os::unix::net::{SocketAddr as UnixAddr, UnixDatagram};

    let dir = tempfile::tempdir().unwrap();
    let (mut f, path) = fabric_with_control(dir.path());
    let name = format!("ipoib-test-fabric-ibsim-{}", std::process::id());
    f.serve_ibsim(ServerConfig::unix(&name), Box::new(|_| {}))
        .unwrap();
    let ctl = UnixAddr::from_abstract_name(format!("{name}:ctl\0")).unwrap();
    let client = UnixDatagram::unbound().unwrap();
    client.send_to_addr(b"not a sim_ctl", &ctl).unwrap();
    let foreign = SimCtl::new(7, CtlType::GetNodeInfo, &[]);
    client.send_to_addr(&foreign.to_bytes(), &ctl).unwrap();
    let info = ClientInfo {
        id: 1,
        qp: 0,
        issm: 0,
        node_id: "no-such-node".into(),
    };
    let connect = SimCtl::new(0, CtlType::Connect, &info.to_bytes());
    client.send_to_addr(&connect.to_bytes(), &ctl).unwrap();
    let end = Instant::now() + LONG;
    loop {
        let rows = ask(&mut f, &path, View::Counters);
        let c = |n| counter(&rows, None, "ibsim", n);
        if (c("bad_ctl"), c("foreign_ctl"), c("refused")) == (1, 1, 1) {
            break;
        }
        assert!(Instant::now() < end, "{rows}");
    }
}

// IBA 1 §14.2.4: an SMP whose M_Key is wrong where the protection level refuses it is a
// violation, counted in the port's PortInfo:M_KeyViolations (§14.2.5.6). The fabric shows it
// per slot (`mkey_violations`, the slot's SMA on the host's port) and for its switches
// (`switch_mkey_violations`, section `fabric`). Here a SubnSet(PortInfo) gives the attached
// slot's port an M_Key at protection level 2 (Gets refused too), then a SubnGet without it
// comes, as an ibsim client's diag might send: one violation. Before, neither count was shown.
#[test]
fn m_key_violations_at_a_slot_are_counted_and_shown() {
    use ipoib_fabric::hw::sim::Device;
    use ipoib_fabric::node::remote::Remote;
    use ipoib_wire::mad::{attr::smp::PORT_INFO, Method};
    use ipoib_wire::smp::{SmpAttribute, SmpMadRepr};
    let dir = tempfile::tempdir().unwrap();
    let (mut f, path) = fabric_with_control(dir.path());
    let host = UdpSocket::bind("127.0.0.1:0").unwrap();
    host.connect(f.local_addr().unwrap()).unwrap();
    attach(&mut f, &host);
    let end = Instant::now() + LONG;
    while f.server().slot(0).unwrap().lid() == 0 {
        assert!(Instant::now() < end, "slot 0 got no LID");
        f.turn(TURN).unwrap();
    }
    let name = ipoib_runtime::udp_fabric::slot_name(f.server().slot_topo_node(0).unwrap());
    let slot = f.server().slot(0).unwrap();
    let (lid, port) = (slot.lid(), slot.port());
    let mut pi = slot.sma().port_info(port).unwrap();
    (pi.mkey, pi.mkey_protect_bits) = (0x5eed, 2);
    let smp = |method, mkey, pi| {
        let mut s = SmpMadRepr::lid_routed_get(7, PORT_INFO, u32::from(port));
        s.header.method = method;
        s.mkey = mkey;
        s.attribute = SmpAttribute::PortInfo(pi);
        ipoib_fabric::hw::sma::smp_packet(1, lid, 0, &s.to_bytes())
    };
    let set = smp(Method::Set, 0, pi);
    let get = smp(Method::Get, 0, Default::default());
    let server = f.server_mut();
    let node = server.built().nodes[server.slot_topo_node(0).unwrap()];
    for p in [set, get] {
        server
            .sim_mut()
            .with_node::<Remote, _>(node, |r, now, tx| r.receive(now, port, p, tx))
            .unwrap();
    }
    let rows = ask(&mut f, &path, View::Counters);
    // The SM's own SMPs to the port, should a sweep come meanwhile, are violations too.
    assert!(
        counter(&rows, Some(&name), "slot", "mkey_violations") >= 1,
        "{rows}"
    );
    assert_eq!(counter(&rows, None, "fabric", "switch_mkey_violations"), 0);
}

// docs/UDP-FABRIC.md "Limits": an `ipoib attach` process takes an answer only with its
// attach's nonce: an accept from the fabric's address without it is ignored and counted
// (`bad_nonce`, section `attach` of `ipoib show counters`), the one with it attaches the host.
// The nonce key comes from the operating system: two processes of the same seed draw
// different nonces.
#[test]
fn an_attach_process_takes_only_answers_with_its_nonce() {
    let fabric = UdpSocket::bind("127.0.0.1:0").unwrap();
    fabric.set_nonblocking(true).unwrap();
    let mut opts = AttachOptions::new(fabric.local_addr().unwrap());
    opts.seed = 1;
    let mut hosts = [0, 1].map(|_| AttachProcess::connect(&opts).unwrap());
    let mut requests = std::collections::BTreeMap::new();
    let mut buf = [0u8; 2048];
    let end = Instant::now() + LONG;
    while requests.len() < 2 {
        assert!(Instant::now() < end, "no requests: {requests:?}");
        for h in &mut hosts {
            h.turn(TURN).unwrap();
        }
        while let Ok((n, from)) = fabric.recv_from(&mut buf) {
            if let Ok(MessageRepr::AttachRequest { nonce, .. }) =
                DatagramRepr::parse(&buf[..n]).map(|d| d.message)
            {
                requests.insert(from, nonce);
            }
        }
    }
    let nonces: Vec<u64> = requests.values().copied().collect();
    assert_ne!(nonces[0], nonces[1], "the same seed, other keys");
    let accept = |nonce| {
        let accept = AttachAccept {
            slot: 1,
            port: 1,
            timeout_ms: 3000,
            node_guid: Guid(0x10),
            port_guids: vec![Guid(0x11)],
        };
        let message = MessageRepr::AttachAccept { nonce, accept };
        DatagramRepr {
            session: 9,
            message,
        }
        .to_vec()
        .unwrap()
    };
    for (to, nonce) in &requests {
        fabric.send_to(&accept(nonce ^ 1), to).unwrap();
    }
    let (to, nonce) = requests.iter().next().unwrap();
    fabric.send_to(&accept(*nonce), to).unwrap();
    let counters = Request::new(View::Counters);
    let bad_nonce = |h: &AttachProcess| {
        let a = h.emu().answer("ib0", &counters).ok()?;
        let s = a.sections.iter().find(|s| s.name == "attach")?;
        s.counters
            .iter()
            .find(|(n, _)| n == "bad_nonce")
            .map(|&(_, v)| v)
    };
    let end = Instant::now() + LONG;
    while hosts.iter().all(|h| bad_nonce(h).is_none()) {
        assert!(Instant::now() < end, "no host attached");
        for h in &mut hosts {
            h.turn(TURN).unwrap();
        }
    }
    // The other host's forged accept came before: a few more turns to be sure it was read.
    for _ in 0..5 {
        for h in &mut hosts {
            h.turn(TURN).unwrap();
        }
    }
    let attached: Vec<bool> = hosts
        .iter()
        .map(|h| h.emu().host().link().is_attached())
        .collect();
    assert_eq!(attached.iter().filter(|&&a| a).count(), 1, "{attached:?}");
    let a = attached.iter().position(|&a| a).unwrap();
    assert_eq!(bad_nonce(&hosts[a]), Some(1));
    let other = hosts[1 - a].emu().host().link().counters();
    assert_eq!(other.bad_nonce, 1, "{other:?}");
}

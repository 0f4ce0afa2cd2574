//! Several umad2sim agents of one client, and several clients of one host, with requests
//! outstanding at once: each response reaches the agent and the client whose request it answers
//! (docs/IBSIM.md "ibsim (server side)": libumad2sim puts its agent's number in bits 32..47 of a
//! request's TID and hands a response to the agent those bits name; ibsim routes it to the client
//! its top 16 bits name).

use super::*;

/// Reads `n` datagrams of `c`'s, the TIDs of their MADs in order.
fn read_tids(c: &Raw, n: usize) -> Vec<u64> {
    (0..n)
        .map(|_| {
            let mut b = [0u8; SIM_REQUEST_LEN];
            let len = c.data.recv(&mut b).unwrap();
            let r = SimRequest::parse(&b[..len]).unwrap();
            MadHeaderRepr::parse_bytes(&r.mad).unwrap().transaction_id
        })
        .collect()
}

/// Two umad2sim agents (numbers 0 and 1 in bits 32..47) of one client send requests with the same
/// low 32 bits, both outstanding at once, and another client of the same host sends the same
/// TID: each response comes back with its own request's TID (the client id in the top 16 bits,
/// as ibsim's `update_trid` puts it), so each reaches its own agent, and nothing of one client's
/// reaches the other. Before, the server's one agent per client kept the high bits by the low
/// 32: both of the first client's requests left with one TID, and both responses came back
/// with agent 1's number.
#[test]
fn two_agents_of_a_client_with_the_same_low_bits_each_get_their_response() {
    let srv = Running::start();
    let c = Raw::connect(&srv.base, "h1").unwrap();
    let d = Raw::connect(&srv.base, "h1").unwrap();
    let (a0, a1) = (0x0000_0000_0000_0abc_u64, 0x0000_0001_0000_0abc_u64);
    {
        // Parked, the server reads all three in one turn: all outstanding at once.
        let _paused = srv.pause();
        for r in [cpi_request(a0), cpi_request(a1)] {
            c.data.send(&r.to_bytes()).unwrap();
        }
        d.data.send(&cpi_request(a0).to_bytes()).unwrap();
    }
    let mut got = read_tids(&c, 2);
    got.sort_unstable();
    let slot = |r: &Raw| u64::from(r.id) << 48;
    assert_eq!(got, vec![slot(&c) | a0, slot(&c) | a1]);
    assert_eq!(read_tids(&d, 1), vec![slot(&d) | a0]);
    d.data
        .set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let mut b = [0u8; SIM_REQUEST_LEN];
    assert!(
        d.data.recv(&mut b).is_err(),
        "nothing more for the other client"
    );
    let (counters, _) = srv.stop();
    assert_eq!((counters.mads_in, counters.mads_out), (3, 3));
}

/// `ibping` (infiniband-diags `ibping.c`): a Get of the vendor class 0x32 to QP1 of another
/// port, answered by `ibping -S` there, which registers the class in its libumad2sim alone.
/// ibsim hands such a request to its port's SM client (`ibsim.c` `find_client`; docs/IBSIM.md
/// "ibsim (server side)"), so a server started with `SIM_SET_ISSM=1` gets it; without one our
/// host answers it as Linux answers what nobody serves (status 0x000C). The server's GetResp
/// reaches the pinger with the pinger's TID. Before, the SM client registered the SA's and the
/// SMPs' classes only, and the ping was answered 0x000C with the server attached.
#[test]
fn a_vendor_class_request_reaches_the_sm_client_of_its_port() {
    let ping = |tid: u64| {
        let mut m = [0u8; MAD_LEN];
        MadHeaderRepr {
            base_version: 1,
            mgmt_class: MgmtClass::from(0x32),
            class_version: 1,
            method: Method::Get,
            status: ipoib_wire::mad::MadStatus::SUCCESS,
            class_specific: 0,
            transaction_id: tid,
            attribute_id: 0,
            attribute_modifier: 0,
        }
        .emit(&mut m);
        m
    };
    let srv = Running::start();
    let pinger = IbsimClient::connect_to(&srv.endpoint(), Some("h2"), 0, false).unwrap();
    let plain = IbsimClient::connect_to(&srv.endpoint(), Some("h1"), 0, false).unwrap();
    let lid = plain.port_info().unwrap().lid;
    let r = pinger
        .request(lid, 1, &ping(0x0000_0003_0000_0101), LONG)
        .unwrap();
    let h = MadHeaderRepr::parse_bytes(&r).unwrap();
    assert_eq!(
        h.status,
        ipoib_wire::mad::MadStatus::METHOD_ATTR_UNSUPPORTED
    );
    assert!(plain.recv(Duration::from_millis(100)).unwrap().is_none());
    drop(plain);

    let server = IbsimClient::connect_to(&srv.endpoint(), Some("h1"), 0, true).unwrap();
    let pong = std::thread::spawn(move || {
        let (slid, sqp, mad) = server.recv_mad(LONG).unwrap().expect("the ping reaches -S");
        let h = MadHeaderRepr::parse_bytes(&mad).unwrap();
        assert_eq!((u8::from(h.mgmt_class), h.method), (0x32, Method::Get));
        // `mad_respond_via`: the request made a GetResp, the TID kept, data written.
        let mut resp: [u8; MAD_LEN] = mad.try_into().unwrap();
        h.response(Method::GetResp, ipoib_wire::mad::MadStatus::SUCCESS)
            .emit(&mut resp);
        resp[40..44].copy_from_slice(b"pong");
        server.send_mad(slid, sqp, &resp).unwrap();
        server
    });
    let tid = 0x0000_0003_0000_0102;
    let r = pinger.request(lid, 1, &ping(tid), LONG).unwrap();
    let h = MadHeaderRepr::parse_bytes(&r).unwrap();
    assert_eq!(
        (h.method, h.status),
        (Method::GetResp, ipoib_wire::mad::MadStatus::SUCCESS)
    );
    assert_eq!(h.transaction_id & 0xffff_ffff_ffff, tid);
    assert_eq!(h.transaction_id >> 48, u64::from(pinger.client_id()));
    assert_eq!(&r[40..44], b"pong");
    let server = pong.join().unwrap();
    drop((server, pinger));
    let (counters, left) = srv.stop();
    assert_eq!((counters.undelivered, left), (0, 0));
}

/// An SM client that vanished without DISCONNECT (OpenSM killed with SIGKILL) gives way at once
/// to the client that asks for the SM role next on its host, before any probe found it gone:
/// SET_ISSM succeeds and the SA's requests to the port reach the new SM. Before, SET_ISSM was
/// refused until the probe (every 2 s) dropped the old client, and nothing asked again: an
/// OpenSM restarted within that time ran without the SA's requests, which the host answered
/// status 0x000C, so hosts asked to register again found no SA (docs/UDP-FABRIC.md "An
/// external SM"; crates/cli/tests/fabric_opensm.rs).
#[test]
fn a_vanished_sm_client_gives_way_to_the_next_at_once() {
    let base = unique_base();
    let opts = ServeOptions {
        max_sleep: Duration::from_millis(10),
        // No probe within the test: only the request for the role finds the old SM gone.
        probe_every: Duration::from_secs(3600),
    };
    let srv = Running::start_with(base.clone(), ServerConfig::unix(&base), opts);
    let on = 1i32.to_ne_bytes();
    let old = Raw::connect(&srv.base, "h1").unwrap();
    assert_eq!(old.ctl(CtlType::SetIssm, &on).ctl_type, CtlType::SetIssm);
    // A second SM beside a live one is still refused (one SM per node).
    let second = Raw::connect(&srv.base, "h1").unwrap();
    assert_eq!(second.ctl(CtlType::SetIssm, &on).ctl_type, CtlType::Error);
    drop(second);
    drop(old);
    let new = Raw::connect(&srv.base, "h1").unwrap();
    assert_eq!(new.ctl(CtlType::SetIssm, &on).ctl_type, CtlType::SetIssm);
    // An SA request to h1's port reaches the new SM client.
    sa_request_reaches_sm(&srv.endpoint(), 0x0777, |b| new.data.recv(b));
    drop(new);
    let (counters, _) = srv.stop();
    assert_eq!(
        counters.vanished, 1,
        "the old SM, found gone by the request"
    );
    assert_eq!(counters.sm_role_refused, 1, "the second beside a live one");
}

/// IBA 1 §13.4.9: the SM client's TrapRepress reaches the client whose trap it answers, with
/// that client's TID, as a response does (an OpenSM entering Standby sends trap 144 to the
/// master, whose OpenSM represses it), although libumad2sim wrote its agent's number over bits
/// 32..47 of the TID. Before, the server took a TrapRepress for a request and wrote the SM
/// client's id over its TID's top 16 bits, and the HCA's SMA swallowed it: the standby OpenSM
/// kept its trap outstanding and, made master by a HANDOVER, never ended a sweep (ibsim drops
/// every TrapRepress, `sim_mad.c` `process_packet`; docs/IBSIM.md).
#[test]
fn a_trap_repress_reaches_the_client_whose_trap_it_answers() {
    let srv = Running::start();
    let master = IbsimClient::connect_to(&srv.endpoint(), Some("h1"), 0, true).unwrap();
    let standby = IbsimClient::connect_to(&srv.endpoint(), Some("h2"), 0, false).unwrap();
    let master_lid = master.port_info().unwrap().lid;
    let mut trap = [0u8; MAD_LEN];
    let tid = 0x0000_0002_0000_0144;
    MadHeaderRepr {
        base_version: 1,
        mgmt_class: MgmtClass::SubnLid,
        class_version: 1,
        method: Method::Trap,
        status: ipoib_wire::mad::MadStatus::SUCCESS,
        class_specific: 0,
        transaction_id: tid,
        attribute_id: 0x0002,
        attribute_modifier: 0,
    }
    .emit(&mut trap);
    standby.send_mad(master_lid, 0, &trap).unwrap();
    let (slid, sqp, got) = master
        .recv_mad(LONG)
        .unwrap()
        .expect("the trap reaches the SM");
    let mut repress: [u8; MAD_LEN] = got.try_into().unwrap();
    repress[3] = u8::from(Method::TrapRepress);
    // As libumad2sim writes it: its agent's number (here 5) over bits 32..47 of the TID.
    repress[10..12].copy_from_slice(&5u16.to_be_bytes());
    master.send_mad(slid, sqp, &repress).unwrap();
    let (_, _, back) = standby
        .recv_mad(LONG)
        .unwrap()
        .expect("the TrapRepress reaches the trap's sender");
    let h = MadHeaderRepr::parse_bytes(&back).unwrap();
    assert_eq!(h.method, Method::TrapRepress);
    assert_eq!(h.transaction_id & 0xffff_ffff_ffff, tid);
    assert_eq!(h.transaction_id >> 48, u64::from(standby.client_id()));
    drop((master, standby));
    let (counters, left) = srv.stop();
    assert_eq!((counters.undelivered, left), (0, 0));
}

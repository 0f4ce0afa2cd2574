//! IPoIB connected mode (RFC 4755) on the emulated subnet, read from the capture: what the hosts
//! put on the wire. The CM messages connected mode sends (REQ, REP, RTU, REJ) with their service
//! IDs and private data, the QPs they name, and the flags octet of the link-layer address in
//! every ARP and ND message.

mod common;

use common::connected::*;
use ipoib_fabric::node::cm::{self, CmAppConfig, SidrOutcome};
use ipoib_fabric::node::subnet::Subnet;
use ipoib_fabric::testing::cm::{cm_app, cm_mads, drop_first_cm, sendings, with_host, CmMad};
use ipoib_fabric::testing::*;
use ipoib_proto::ipoib::{ConnectedConfig, InterfaceConfig, Mode};
use ipoib_proto::mad_agent::MadAddr;
use ipoib_proto::rng::Rng;
use ipoib_wire::cm::{attr, CmMessage, RejReason, SidrStatus, TransportServiceType};
use ipoib_wire::ib::Transport;
use ipoib_wire::ipoib::{ArpOperation, IpPayload, IpoibFrame, IpoibPayload, NdMessage, NdRepr};
use ipoib_wire::packet::Packet;
use ipoib_wire::pcap::CaptureReader;
use ipoib_wire::private_data::ipoib_cm::{IpoibCmPrivateDataRepr, LINUX_RECEIVE_MTU};
use ipoib_wire::private_data::service_id::{ipoib_cm_qpn, ipoib_cm_service_id, IpoibCmSidForm};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

/// The host of `lids` with LID `lid`.
fn host_of(lids: &[u16], lid: u16) -> usize {
    lids.iter().position(|&l| l == lid).expect("a host's LID")
}

/// The LIDs of hosts `0..n`.
fn lids(net: &Subnet, n: usize) -> Vec<u16> {
    (0..n).map(|i| net.lid(i)).collect()
}

/// IPoIB-CM private data as host `i` sends it: its UD QPN, Linux's receive MTU (RFC 4755 §6).
fn ours(ud_qpn: u32) -> IpoibCmPrivateDataRepr {
    IpoibCmPrivateDataRepr {
        ud_qpn,
        receive_mtu: LINUX_RECEIVE_MTU,
    }
}

/// The private data of a REQ, REP, RTU or REJ: the Reserved octet must be zero (RFC 4755 §6, §9).
fn private_data(m: &CmMad) -> Option<IpoibCmPrivateDataRepr> {
    let data: &[u8] = match &m.msg {
        CmMessage::Req(r) => &r.private_data,
        CmMessage::Rep(r) => &r.private_data,
        CmMessage::Rtu(r) => &r.private_data,
        CmMessage::Rej(r) => &r.private_data,
        _ => return None,
    };
    assert_eq!(data[0], 0, "Reserved octet of {m:?}");
    Some(IpoibCmPrivateDataRepr::parse(data).expect("IPoIB-CM private data"))
}

// RFC 4755 §2.2 (one UD QP and one or more connected-mode QPs), §2.3 (the connection is set up
// before IP flows on it; the REQ carries the service ID and the requester's connected-mode QP,
// the REP the peer's), §3.2 and §6 (every REQ, REP and RTU carries the sender's UD QPN and
// receive MTU), §3.5 (the service ID's QPN is the UD QPN address resolution gave; Type and
// Reserved zero), §9 (reserved bits zero on sends), and docs/DEPLOYED.md "Linux IPoIB" (the
// REQ's values: RC, responder resources 4, retry 0, RNR retry 0, CM response timeouts 20, Max
// CM Retries 15). Host 0 connects to hosts 1 and 2, host 1 to host 0.
#[test]
fn setup_messages_carry_the_ud_qpn_and_receive_mtu() {
    let seed = seed(90);
    let _g = SeedGuard(seed);
    let mut net = net(3, seed, long_idle);
    let pairs = [(0, 1), (0, 2), (1, 0)];
    for (a, b) in pairs {
        udp(&mut net, a, b, 3000);
        run(&mut net, Duration::from_millis(100));
        assert_eq!(udp_count(&net, b), 1);
        assert!(sending_to(&net, a, b).is_some(), "{a} -> {b}");
    }
    let lids = lids(&net, 3);
    let ud: Vec<u32> = (0..3).map(|i| app(&net, i).qpn()).collect();
    // §2.2: the UD QP of the link-layer address, and one connected QP per connection.
    let mut conn_qps: Vec<BTreeSet<u32>> = Vec::new();
    for (i, &q) in ud.iter().enumerate() {
        assert_eq!(net.interface(i).unwrap().hw_addr().qpn, q);
        let qps: BTreeSet<u32> = app(&net, i).conn_qps().iter().map(|c| c.1).collect();
        assert_eq!(qps.len(), net.interface(i).unwrap().connections().len());
        assert!(
            !qps.contains(&q),
            "host {i}: its UD QP carries no connection"
        );
        conn_qps.push(qps);
    }
    assert_eq!(
        conn_qps[0].len(),
        3,
        "host 0: two connections opened, one accepted"
    );
    // The peers' UD QPNs as ARP gave them, and the QPNs each active side's records hold.
    let learned = |i: usize, j: usize| {
        let ip = v4(&net, j);
        let n = net.interface(i).unwrap().neighbours();
        n.iter()
            .find(|e| e.ip == ip)
            .and_then(|e| e.hw)
            .expect("resolved")
    };
    let arp_qpn: BTreeMap<(usize, usize), u32> = pairs
        .iter()
        .map(|&(a, b)| ((a, b), learned(a, b).qpn))
        .collect();
    let records: BTreeMap<usize, Vec<(u32, u32)>> = (0..3)
        .map(|i| {
            let c = net.interface(i).unwrap().connections();
            (
                i,
                c.iter()
                    .filter(|c| c.active)
                    .filter_map(|c| c.qpns)
                    .collect(),
            )
        })
        .collect();

    let pcap = net.sim_mut().take_capture().unwrap().into_bytes();
    let all = cm_mads(&pcap);
    let mads = sendings(&all);
    let mut reqs: BTreeMap<u32, (usize, u32)> = BTreeMap::new();
    let mut count: BTreeMap<u16, usize> = BTreeMap::new();
    for m in &mads {
        let Some(pd) = private_data(m) else {
            continue;
        };
        let (from, to) = (host_of(&lids, m.slid), host_of(&lids, m.dlid));
        assert_eq!(pd, ours(ud[from]), "{m:?}");
        *count.entry(m.attr).or_default() += 1;
        match &m.msg {
            CmMessage::Req(r) => {
                assert_eq!(r.service_id, ipoib_cm_service_id(arp_qpn[&(from, to)]));
                assert_eq!(
                    ipoib_cm_qpn(r.service_id),
                    Some((ud[to], IpoibCmSidForm::Linux))
                );
                assert_eq!(r.service_id >> 56, 0x10, "the IETF block, Linux's spelling");
                assert_eq!(
                    r.service_id >> 24 & 0xffff_ffff,
                    0,
                    "Type and Reserved zero"
                );
                assert!(conn_qps[from].contains(&r.local_qpn), "{r:?}");
                assert_eq!(r.transport_service_type, TransportServiceType::Rc);
                let linux = (r.responder_resources, r.retry_count, r.rnr_retry_count);
                assert_eq!(linux, (4, 0, 0));
                let cm = (
                    r.remote_cm_response_timeout,
                    r.local_cm_response_timeout,
                    r.max_cm_retries,
                );
                assert_eq!(cm, (20, 20, 15));
                reqs.insert(r.local_comm_id, (from, r.local_qpn));
            }
            CmMessage::Rep(r) => {
                assert!(conn_qps[from].contains(&r.local_qpn), "{r:?}");
                let (active, req_qpn) = reqs[&r.remote_comm_id];
                assert_eq!(active, to);
                assert!(records[&active].contains(&(req_qpn, r.local_qpn)));
            }
            CmMessage::Rtu(_) => {}
            _ => panic!("no REJ here: {m:?}"),
        }
    }
    let expected = BTreeMap::from([(attr::REQ, 3), (attr::REP, 3), (attr::RTU, 3)]);
    assert_eq!(count, expected);
    // §2.3: nothing goes on a connection before its REP has reached the requester.
    let packets = CaptureReader::read_all(&pcap[..]).unwrap();
    for (a, b) in [(0, 1), (0, 2)] {
        let (la, lb) = (lids[a], lids[b]);
        let rep_at = all
            .iter()
            .filter(|m| m.attr == attr::REP && (m.slid, m.dlid) == (lb, la))
            .map(|m| m.ts_ns)
            .max()
            .expect("a REP");
        let first = packets
            .iter()
            .find_map(|p| {
                let pkt = Packet::parse(&p.data).ok()?;
                let rc = pkt.bth?.opcode.transport() == Transport::Rc;
                (rc && (pkt.lrh.slid, pkt.lrh.dlid) == (la, lb)).then_some(p.ts_ns)
            })
            .flatten()
            .expect("RC packets");
        assert!(
            first > rep_at,
            "{a} -> {b}: first RC packet {first}, REP {rep_at}"
        );
    }
}

// RFC 4755 §3.2: "The IPoIB-UD QPN MUST be included in all REJ messages too." Both REJs
// connected mode sends carry it, with the receive MTU (§6): the Consumer Reject (28) that
// refuses a crossing REQ (§3.3), and the REJ that withdraws a connection not yet established
// (here the REP is lost and the host goes back to datagram mode meanwhile; a Timeout REJ).
#[test]
fn rejs_carry_the_ud_qpn_and_receive_mtu() {
    let seed = seed(91);
    let _g = SeedGuard(seed);
    // Crossing REQs: the larger address rejects the smaller's.
    let mut net = resolved_then_connected(2, seed, connected);
    let (small, lids) = (smaller_of_two(&net), lids(&net, 2));
    let large = 1 - small;
    udp(&mut net, 0, 1, 1000);
    udp(&mut net, 1, 0, 1000);
    run(&mut net, Duration::from_secs(1));
    assert_eq!((udp_count(&net, 0), udp_count(&net, 1)), (1, 1));
    let ud_large = app(&net, large).qpn();
    let pcap = net.sim_mut().take_capture().unwrap().into_bytes();
    let rejs: Vec<CmMad> = sendings(&cm_mads(&pcap))
        .into_iter()
        .filter(|m| m.attr == attr::REJ)
        .collect();
    assert_eq!(rejs.len(), 1, "{rejs:?}");
    assert_eq!((rejs[0].slid, rejs[0].dlid), (lids[large], lids[small]));
    let CmMessage::Rej(r) = rejs[0].msg else {
        unreachable!()
    };
    assert_eq!(r.reason, RejReason::ConsumerDefined);
    assert_eq!(private_data(&rejs[0]), Some(ours(ud_large)));

    // A connection withdrawn before its REP arrived.
    let mut net = resolved_then_connected(2, seed + 1, connected);
    let lids = self::lids(&net, 2);
    net.sim_mut()
        .set_drop_filter(Some(drop_first_cm(attr::REP)));
    udp(&mut net, 0, 1, 1000);
    run(&mut net, Duration::from_millis(100));
    assert!(sending_to(&net, 0, 1).is_none(), "the REP was lost");
    net.with_interface(0, |i, now| i.set_mode(now, Mode::Datagram).unwrap());
    run(&mut net, Duration::from_millis(100));
    assert_eq!(udp_count(&net, 1), 1, "the waiting datagram went over UD");
    let ud0 = app(&net, 0).qpn();
    let pcap = net.sim_mut().take_capture().unwrap().into_bytes();
    let rejs: Vec<CmMad> = sendings(&cm_mads(&pcap))
        .into_iter()
        .filter(|m| m.attr == attr::REJ)
        .collect();
    eprintln!(
        "{:#?}",
        sendings(&cm_mads(&pcap))
            .iter()
            .map(|m| (m.ts_ns, m.attr, m.slid, m.local, m.remote))
            .collect::<Vec<_>>()
    );
    eprintln!("{:?}", rejs);
    assert_eq!(rejs.len(), 1, "{rejs:?}");
    assert_eq!((rejs[0].slid, rejs[0].dlid), (lids[0], lids[1]));
    let CmMessage::Rej(r) = rejs[0].msg else {
        unreachable!()
    };
    // IBA 1 §12.6 Table 108: the Timeout form, the only one the peer can match before our REQ
    // was answered (docs/DEPLOYED.md "Linux ib_cm").
    assert_eq!(r.reason, RejReason::Timeout);
    assert_eq!(private_data(&rejs[0]), Some(ours(ud0)));
}

/// Host 0 RC, 1 UC, 2 RC and UC, 3 without connected mode, 4 RC in datagram mode.
fn flag_hosts(i: usize, c: &mut InterfaceConfig) {
    let mut cc = ConnectedConfig::rc();
    match i {
        1 => (cc.rc, cc.uc) = (false, true),
        2 => cc.uc = true,
        4 => cc.mode = Mode::Datagram,
        _ => {}
    }
    c.connected = (i != 3).then_some(cc);
}

/// The flags octet each host of [`flag_hosts`] must send.
const SENT_FLAGS: [u8; 5] = [0x80, 0x40, 0xc0, 0x00, 0x80];

// RFC 4755 §3.1 (bit 0 RC, bit 1 UC, the other bits 0 on transmit; an implementation without
// IPoIB-CM sends all zeros), §9 (reserved bits zero on sends): every ARP request and reply and
// every Neighbor Solicitation and Advertisement the hosts send carries exactly the flags of the
// modes each host supports, in datagram mode too (Linux keeps its RC flag, docs/DEPLOYED.md).
#[test]
fn flags_octet_sent_in_arp_and_nd() {
    let seed = seed(92);
    let _g = SeedGuard(seed);
    let n = SENT_FLAGS.len();
    let mut net = net(n, seed, flag_hosts);
    assert!(net.run_until_ipv6_ready(net.sim().now() + Duration::from_secs(5)));
    for addr in [v4, v6] {
        let sent = ping_pairs(&mut net, &all_pairs(n), addr, Duration::from_secs(2));
        assert!(
            sent.iter().all(|&s| rtt(&net, s).is_some()),
            "pings answered"
        );
    }
    let lids = lids(&net, n);
    let pcap = net.sim_mut().take_capture().unwrap().into_bytes();
    // Per host: ARP requests, ARP replies, NS with a source address, NA with a target address.
    let mut seen = vec![[0usize; 4]; n];
    for p in CaptureReader::read_all(&pcap[..]).unwrap() {
        let Ok(pkt) = Packet::parse(&p.data) else {
            continue;
        };
        let ud = pkt.ext.deth.is_some() && pkt.bth.is_some_and(|b| b.dest_qp > 1);
        let Some(frame) = ud.then(|| IpoibFrame::parse(pkt.payload).ok()).flatten() else {
            continue;
        };
        let from = host_of(&lids, pkt.lrh.slid);
        let own = |flags: u8, what: &str| {
            assert_eq!(flags, SENT_FLAGS[from], "host {from}: {what}");
        };
        match frame.payload {
            IpoibPayload::Arp(a) => {
                own(a.sender_hw.flags.0, "ARP sender address");
                if a.operation == ArpOperation::Reply {
                    let to = host_of(&lids, pkt.lrh.dlid);
                    assert_eq!(a.target_hw.flags.0, SENT_FLAGS[to], "ARP target address");
                    seen[from][1] += 1;
                } else {
                    seen[from][0] += 1;
                }
            }
            IpoibPayload::Ipv6(d) => {
                let IpPayload::Icmpv6(m) = d.payload else {
                    continue;
                };
                let Ok(nd) = NdRepr::parse_message(&m) else {
                    continue;
                };
                match nd.message {
                    NdMessage::NeighborSolicit { .. } => {
                        if let Some(a) = nd.source_lla() {
                            own(a.flags.0, "NS source link-layer address");
                            seen[from][2] += 1;
                        }
                    }
                    NdMessage::NeighborAdvert { .. } => {
                        let a = nd.target_lla().expect("NA with its address");
                        own(a.flags.0, "NA target link-layer address");
                        seen[from][3] += 1;
                    }
                    _ => {}
                }
            }
            _ => {}
        }
    }
    for (i, s) in seen.iter().enumerate() {
        assert!(s.iter().all(|&k| k > 0), "host {i}: {s:?}");
    }
}

/// Host 1 in connected mode; host 0 datagram only, so its CM class is free for a CM application
/// that asks host 1's CM for service IDs.
fn connected_host_1(i: usize, c: &mut InterfaceConfig) {
    if i == 1 {
        c.connected = Some(ConnectedConfig::rc());
    }
}

// IBA 1 §12.11, §12.6 Table 120: a SIDR_REQ for the service ID of an IPoIB-CM interface (RFC 4755
// §3.5; a service that offers connections only) is answered with one SIDR_REP, status 1
// ("service ID not supported"), with the SIDR_REQ's TID, Request ID and service ID, as the CM
// application answers one for its connection-only listeners; the requester does not resend it.
#[test]
fn sidr_req_for_the_ipoib_cm_service_id_is_answered_unsupported() {
    let seed = seed(93);
    let _g = SeedGuard(seed);
    let mut net = net(2, seed, connected_host_1);
    let sid = ipoib_cm_service_id(app(&net, 1).qpn());
    let to = MadAddr::gsi(net.lid(1));
    let h = with_host(&mut net, 0, |host, _| {
        cm::install(host, CmAppConfig::new(1), Rng::new(seed))
    });
    let id = with_host(&mut net, 0, |host, now| {
        cm::resolve(host, now, h, to, sid, 14).unwrap()
    });
    run(&mut net, Duration::from_millis(100));
    let rep = match cm_app(&net, 0, h).sidr(id) {
        Some(SidrOutcome::Answered { rep, .. }) => **rep,
        other => panic!("SIDR_REQ for {sid:#x} not answered: {other:?}"),
    };
    assert_eq!(rep.status, SidrStatus::Unsupported);
    assert_eq!((rep.request_id, rep.service_id), (id.0, sid));
    let pcap = net.sim_mut().take_capture().unwrap().into_bytes();
    let mads = sendings(&cm_mads(&pcap));
    let of = |a: u16| mads.iter().filter(|m| m.attr == a).collect::<Vec<_>>();
    let (reqs, reps) = (of(attr::SIDR_REQ), of(attr::SIDR_REP));
    assert_eq!((reqs.len(), reps.len()), (1, 1), "{mads:?}");
    assert_eq!(reps[0].tid, reqs[0].tid);
}

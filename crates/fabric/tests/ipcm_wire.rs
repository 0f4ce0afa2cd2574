//! What the RDMA IP CM service puts on the wire, read back by tshark (Debian's 4.0), an
//! independent dissector: every REQ our clients emit carries the Annex A11 service ID (prefix
//! 0x0000000001, the IP protocol, the destination port; CA11-6, §A11.5) and the Table 1 private
//! data (MajV 0, MinV 0, IPV, source port, source and destination addresses, the consumer's
//! bytes; CA11-1, CA11-5), over IPv4 and IPv6, for TCP, UDP and SCTP.

use ipoib_fabric::hw::topology::Topology;
use ipoib_fabric::node::ipcm::AcceptPolicy;
use ipoib_fabric::testing::cm::{cm_mads, num, tshark, tshark_fields, tshark_malformed};
use ipoib_fabric::testing::ipcm::{ipcm_net, IpCmNet};
use ipoib_fabric::testing::{seed, v4, v6, SeedGuard};
use ipoib_proto::cm::{Cm, CmEvent};
use ipoib_proto::ipcm::IpCmEvent;
use ipoib_proto::mad_agent::MadAddr;
use ipoib_wire::cm::{attr, CmMessage, SidrStatus};
use ipoib_wire::private_data::service_id::{ip_cm_protocol_port, ip_cm_service_id};
use ipoib_wire::private_data::{IpCmReqRepr, IpPair};
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

const SERVER: usize = 1;
const CLIENT: usize = 2;

/// (protocol, port, IPv6, consumer private data) of each connection.
const CONNS: [(u8, u16, bool, &[u8]); 4] = [
    (6, 7174, false, b"rping"),
    (17, 4791, true, b"udp over v6"),
    (132, 3260, false, b""),
    (6, 18515, true, &[0xab; 56]),
];

/// Annex A11 CA11-1, CA11-5, CA11-6: tshark reads every REQ of the capture as an IP CM REQ with
/// the service ID's prefix, protocol and port, and the Table 1 fields our own parser reads and
/// the connections were made with; nothing is malformed.
#[test]
fn tshark_reads_every_req_as_annex_a11() {
    let Some(tshark) = tshark() else {
        eprintln!(
            "skipping tshark_reads_every_req_as_annex_a11: tshark is not installed (Debian package `tshark`)"
        );
        return;
    };
    let s = seed(5);
    let _g = SeedGuard(s);
    let mut n = ipcm_net(Topology::single_switch(3).unwrap(), s, true, |_, c| {
        c.accept = AcceptPolicy::Auto(b"ok".to_vec());
    });
    let mut want = Vec::new();
    for (protocol, port, v6_family, pd) in CONNS {
        let addr = if v6_family { v6 } else { v4 };
        let (server, client) = (addr(&n.net, SERVER), addr(&n.net, CLIENT));
        let any = if v6_family {
            IpAddr::V6(std::net::Ipv6Addr::UNSPECIFIED)
        } else {
            IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED)
        };
        n.with_app(SERVER, |a, _| a.listen(protocol, any, port))
            .unwrap();
        let dst = SocketAddr::new(server, port);
        let conn = n
            .with_app(CLIENT, |a, now| a.connect(now, protocol, dst, None, pd))
            .unwrap();
        let up = n.run_until(Duration::from_secs(5), |v| {
            v.app(CLIENT)
                .events()
                .any(|(_, e)| matches!(e, IpCmEvent::Established { conn: c, .. } if *c == conn))
        });
        assert!(up, "connection {protocol}/{port} up");
        let (local, _) = n.app(CLIENT).service().addrs(conn).unwrap();
        assert_eq!(local.ip(), client);
        want.push((protocol, port, local, dst.ip(), pd));
    }
    n.run_for(Duration::from_millis(5));
    let pcap = n.net.sim_mut().take_capture().unwrap().into_bytes();
    // Our own reading: each REQ on the two links it crosses, in the order of the connections.
    let reqs: Vec<_> = cm_mads(&pcap)
        .into_iter()
        .filter_map(|m| match m.msg {
            CmMessage::Req(r) => Some(r),
            _ => None,
        })
        .collect();
    assert_eq!(
        reqs.len(),
        2 * CONNS.len(),
        "one REQ per connection, two links each"
    );
    for (k, r) in reqs.iter().enumerate() {
        let (protocol, port, src, dst, pd) = want[k / 2];
        assert_eq!(ip_cm_protocol_port(r.service_id), Some((protocol, port)));
        let p = IpCmReqRepr::parse(&r.private_data).expect("Table 1 private data");
        assert_eq!((p.major_version, p.minor_version), (0, 0));
        assert_eq!(p.source_port, src.port());
        let (s, d): (IpAddr, IpAddr) = match p.addrs {
            IpPair::V4 { src, dst } => (src.into(), dst.into()),
            IpPair::V6 { src, dst } => (src.into(), dst.into()),
        };
        assert_eq!((s, d), (src.ip(), dst));
        assert_eq!(&p.consumer_private_data[..pd.len()], pd);
    }

    let path = std::env::temp_dir().join(format!("ipoib-ipcm-{}-{s}.pcap", std::process::id()));
    std::fs::write(&path, &pcap).unwrap();
    let rows = tshark_fields(
        &tshark,
        &path,
        &format!(
            "infiniband.mad.mgmtclass == 0x07 && infiniband.mad.attributeid == {:#06x}",
            attr::REQ
        ),
        &[
            "infiniband.cm.req.serviceid",
            "infiniband.cm.req.serviceid.prefix",
            "infiniband.cm.req.serviceid.protocol",
            "infiniband.cm.req.serviceid.dport",
            "infiniband.cm.req.ip_cm.majv",
            "infiniband.cm.req.ip_cm.minv",
            "infiniband.cm.req.ip_cm.ipv",
            "infiniband.cm.req.ip_cm.sport",
            "infiniband.cm.req.ip_cm.sip4",
            "infiniband.cm.req.ip_cm.dip4",
            "infiniband.cm.req.ip_cm.sip6",
            "infiniband.cm.req.ip_cm.dip6",
            "infiniband.cm.req.ip_cm.private",
        ],
    );
    let malformed = tshark_malformed(&tshark, &path);
    let _ = std::fs::remove_file(&path);
    assert!(malformed.is_empty(), "tshark flags frames {malformed:?}");
    assert_eq!(rows.len(), reqs.len(), "tshark sees every REQ: {rows:?}");
    for (k, (row, r)) in rows.iter().zip(&reqs).enumerate() {
        let (protocol, port, src, dst, pd) = want[k / 2];
        assert_eq!(num(&row[0]), r.service_id, "{row:?}");
        assert_eq!(row[1].replace(':', ""), "0000000001", "{row:?}");
        assert_eq!(num(&row[2]), u64::from(protocol), "{row:?}");
        assert_eq!(num(&row[3]), u64::from(port), "{row:?}");
        assert_eq!((num(&row[4]), num(&row[5])), (0, 0), "{row:?}");
        let v6_family = src.is_ipv6();
        assert_eq!(num(&row[6]), if v6_family { 6 } else { 4 }, "{row:?}");
        assert_eq!(num(&row[7]), u64::from(src.port()), "{row:?}");
        let (s, d) = if v6_family {
            (&row[10], &row[11])
        } else {
            (&row[8], &row[9])
        };
        assert_eq!(s.parse::<IpAddr>().ok(), Some(src.ip()), "{row:?}");
        assert_eq!(d.parse::<IpAddr>().ok(), Some(dst), "{row:?}");
        let mut consumer = [0u8; 56];
        consumer[..pd.len()].copy_from_slice(pd);
        let hex: String = consumer.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(row[12].replace(':', ""), hex, "{row:?}");
    }
}

/// The events host `i`'s CM agent still holds once its users took theirs.
fn unclaimed(n: &mut IpCmNet, i: usize) -> Vec<CmEvent> {
    n.with_host(i, |host, h| {
        let cm = host.agent_mut::<Cm>(h.cm).expect("the CM agent");
        std::iter::from_fn(|| cm.poll_event()).collect()
    })
}

// IBA 1 §12.11, §12.6 Table 120: a SIDR_REQ for the service ID of an IP CM listener (Annex A11
// §A11.5; the service offers connections only) is answered with SIDR_REP status 1 ("service ID
// not supported"), with its Request ID and service ID, and leaves no event in the server's
// shared CM agent (no user claimed it: each SIDR_REQ left one event there for good, and no
// answer, so the requester resent it until its Max CM Retries were spent).
#[test]
fn sidr_req_for_an_ip_cm_listener_is_answered_unsupported() {
    let s = seed(6);
    let _g = SeedGuard(s);
    let mut n = ipcm_net(Topology::single_switch(3).unwrap(), s, false, |_, _| {});
    let port = 7174;
    let any = IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED);
    n.with_app(SERVER, |a, _| a.listen(6, any, port)).unwrap();
    n.run_for(Duration::from_millis(1));
    let sid = ip_cm_service_id(6, port);
    let to = MadAddr::gsi(n.net.lid(SERVER));
    let now = n.net.sim().now();
    let id = n.with_host(CLIENT, |host, h| {
        let cm = host.agent_mut::<Cm>(h.cm).expect("the CM agent");
        cm.sidr_request(now, to, sid, 14, &[]).unwrap()
    });
    n.run_for(Duration::from_millis(100));
    let left = unclaimed(&mut n, SERVER);
    assert!(left.is_empty(), "server: {left:?}");
    let got = unclaimed(&mut n, CLIENT);
    let rep = got
        .iter()
        .find_map(|e| match e {
            CmEvent::SidrReply { id: i, rep } if *i == id => Some(*rep),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no SIDR_REP for {sid:#x}: {got:?}"));
    assert_eq!(rep.status, SidrStatus::Unsupported);
    assert_eq!((rep.request_id, rep.service_id), (id.0, sid));
}

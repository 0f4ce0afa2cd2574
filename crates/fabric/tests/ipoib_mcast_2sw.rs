//! IPoIB multicast across two switches (draft-ietf-ipoib-ip-over-infiniband-06 §11 B):
//! a sender that shares no switch with any member joins SendOnlyNonMember and sends at once; the
//! SM writes the MFT entries of a lone join at once (leading-edge coalescing, `SmApp`) and the SA
//! answers only after its processing time (`SA_PROCESSING_DELAY`), so the sender's leaf switch
//! already forwards the FIRST datagram to every member (ibsim `net.2sw2path4hca`: it used to be
//! dropped for want of an MFT entry).

use ipoib_fabric::hw::topology::Topology;
use ipoib_fabric::testing::*;
use ipoib_wire::ipoib::mcast::{ipv4_mgid, Scope};
use ipoib_wire::PKey;
use std::net::{IpAddr, Ipv4Addr};
use std::time::Duration;

const GROUP: Ipv4Addr = Ipv4Addr::new(239, 1, 1, 1);

/// Two switches joined by two cables; a0, a1 on the first, b0, b1 on the second.
const TWO_SWITCHES: &str = r#"
Switch 8 "sw1"
[1] "a0"[1]
[2] "a1"[1]
[3] "sw2"[3]
[5] "sw2"[5]

Switch 8 "sw2"
[1] "b0"[1]
[2] "b1"[1]
[3] "sw1"[3]
[5] "sw1"[5]

Hca 1 "a0"
[1] "sw1"[1]

Hca 1 "a1"
[1] "sw1"[2]

Hca 1 "b0"
[1] "sw2"[1]

Hca 1 "b1"
[1] "sw2"[2]
"#;

fn host(net: &ipoib_fabric::node::subnet::Subnet, name: &str) -> usize {
    (0..net.host_count())
        .find(|&i| net.topology().nodes()[net.host(i).topo_node].name == name)
        .expect("host")
}

// §11 B (send-only join, then send), IBA 1 §14.2.5 (SM programs the MFTs of the group's tree).
#[test]
fn first_datagram_of_a_non_member_on_another_switch_reaches_every_member() {
    let seed = seed(3);
    let _g = SeedGuard(seed);
    let topo = Topology::parse_net(TWO_SWITCHES).unwrap();
    let mut net = up(options(topo, seed), false);
    let members = [host(&net, "b0"), host(&net, "b1")];
    let sender = host(&net, "a1");
    for &m in &members {
        net.with_ipoib(m, |a, _| a.join_group(IpAddr::V4(GROUP)));
    }
    let mgid = ipv4_mgid(GROUP, PKey(0xffff), Scope::LinkLocal);
    assert!(run_until_attached(&mut net, &members, mgid));
    // Send right after the members' tree was written, as the demo does.
    net.with_ipoib(sender, |a, _| {
        a.ip_mut().send_udp(4000, IpAddr::V4(GROUP), 5000, b"first")
    })
    .unwrap()
    .unwrap();
    let deadline = net.sim().now() + Duration::from_millis(50);
    net.run_until_with(deadline, |n| {
        members
            .iter()
            .all(|&m| !app(n, m).ip().udp_received().is_empty())
    });
    for &m in &members {
        let got = app(&net, m).ip().udp_received();
        assert_eq!(got.len(), 1, "member {m} got the first datagram");
        assert_eq!(got[0].payload, b"first");
    }
    // Well before any resend could matter: the datagram was the first and only one.
    assert!(net.sim().now() < ipoib_proto::time::Instant::ZERO + Duration::from_secs(1));
}

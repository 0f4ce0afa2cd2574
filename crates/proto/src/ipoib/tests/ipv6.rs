//! IPv6 over IPoIB: link-local address from the GUID (draft-ietf-ipoib-ip-over-infiniband-06 §8,
//! §8.1), DAD, ND with the IPoIB link-layer option (§9.3), autoconfiguration and the RA MTU rule (§7).

use super::*;
use ipoib_wire::ipoib::addr::link_local_from_guid;
use ipoib_wire::ipoib::{NdMessage, NdOptionRepr, NdProfile, NdRepr, PrefixInfo};

/// Every ND message host `lid` sent: (datagram, IPv6 header, message, option bytes).
fn nds(net: &Net, lid: u16) -> Vec<(UdTransmit, Ipv6Repr, NdMessage, Vec<u8>)> {
    net.sent_by(lid)
        .into_iter()
        .filter(|s| ethertype(&s.t) == 0x86dd)
        .filter_map(|s| {
            let p = Ipv6Packet::new_checked(&s.t.data[4..]).ok()?;
            let ip = Ipv6Repr::parse(&p).ok()?;
            let nd = NdRepr::parse(ip.src_addr, ip.dst_addr, p.payload()).ok()?;
            Some((s.t.clone(), ip, nd.message, nd.options.to_vec()))
        })
        .collect()
}

fn ll(lid: u16) -> Ipv6Addr {
    link_local_from_guid(guid(lid))
}

fn state(net: &mut Net, lid: u16, a: Ipv6Addr) -> Option<AddrState> {
    net.iface(lid)
        .ipv6_addresses()
        .iter()
        .find(|x| x.addr == a)
        .map(|x| x.state)
}

// draft-ietf-ipoib-ip-over-infiniband-06 §8, §8.1: the link-local address is fe80::/64 + the port
// GUID as EUI-64 (U/L inverted); RFC 4862 §5.4.2: DAD sends an NS from :: to the solicited-node
// group (mapped per §4: FF12:601B:<P_Key>::1:FFxx:xxxx) after joining it, without a source
// link-layer option; the address is ready one RetransTimer later.
#[test]
fn link_local_from_guid_and_dad() {
    let mut net = Net::new(2);
    net.up();
    let a = ll(2);
    assert_eq!(a.to_string(), "fe80::202:c903:0:2");
    assert_eq!(net.host(2).ready(), vec![a]);
    assert_eq!(state(&mut net, 2, a), Some(AddrState::Preferred));
    let dad = nds(&net, 2)
        .into_iter()
        .find(|(_, ip, m, _)| {
            ip.src_addr.is_unspecified()
                && matches!(m, NdMessage::NeighborSolicit { target } if *target == a)
        })
        .expect("DAD NS");
    assert_eq!(dad.1.dst_addr.to_string(), "ff02::1:ff00:2");
    assert_eq!(
        dad.0.grh.map(|g| g.gid.to_ipv6().to_string()),
        Some("ff12:601b:ffff::1:ff00:2".into())
    );
    assert!(dad.3.is_empty(), "no source link-layer option in DAD");
    assert_eq!(dad.1.hop_limit, 255);
    // Member of all-nodes and of the solicited-node group.
    let groups: Vec<String> = net
        .iface(2)
        .groups()
        .iter()
        .filter(|g| g.attached)
        .map(|g| g.mgid.to_ipv6().to_string())
        .collect();
    assert!(
        groups.contains(&"ff12:601b:ffff::1".to_string()),
        "{groups:?}"
    );
    assert!(groups.contains(&"ff12:601b:ffff::1:ff00:2".to_string()));
}

// draft-ietf-ipoib-ip-over-infiniband-06 §9.3: NS carries the source link-layer option (type 1,
// length 3, the §9.1.1 address after two zero bytes as Linux), NA the target option (type 2); the
// answer goes unicast; ping over link-local both ways.
#[test]
fn nd_and_ping_link_local() {
    let mut net = Net::new(3);
    net.up();
    net.send(2, &ping6(ll(2), ll(3), true, 1));
    net.run_for(Duration::from_secs(1));
    assert!(net.host(3).delivered.iter().any(|p| is_echo(p, true, 1)));
    assert!(net.host(2).delivered.iter().any(|p| is_echo(p, false, 1)));
    assert!(!net.host(4).delivered.iter().any(|p| is_echo(p, true, 1)));
    let ns = nds(&net, 2)
        .into_iter()
        .find(|(_, ip, m, _)| {
            !ip.src_addr.is_unspecified()
                && matches!(m, NdMessage::NeighborSolicit { target } if *target == ll(3))
        })
        .expect("NS");
    assert_eq!(ns.1.src_addr, ll(2));
    assert_eq!(ns.1.dst_addr.to_string(), "ff02::1:ff00:3");
    let mut want = vec![1u8, 3, 0, 0];
    want.extend_from_slice(&net.iface(2).hw_addr().to_bytes());
    assert_eq!(ns.3, want);
    let na = nds(&net, 3)
        .into_iter()
        .find(|(_, _, m, _)| {
            matches!(m, NdMessage::NeighborAdvert { target, flags } if *target == ll(3) && flags & 0x40 != 0)
        })
        .expect("solicited NA");
    assert_eq!((na.0.dlid, na.0.remote_qpn), (2, qpn(2)));
    assert!(matches!(na.2, NdMessage::NeighborAdvert { flags, .. } if flags == 0x60));
    assert_eq!(&na.3[..2], &[2, 3]);
    assert_eq!(&na.3[4..], &net.iface(3).hw_addr().to_bytes()[..]);
    // Host 3 learned host 2 from the NS (STALE): its reply needed no multicast solicitation, only
    // the unicast probe of RFC 4861 §7.3.3 that confirms a stale entry.
    let ns3: Vec<_> = nds(&net, 3)
        .into_iter()
        .filter(|(_, ip, m, _)| {
            !ip.src_addr.is_unspecified() && matches!(m, NdMessage::NeighborSolicit { .. })
        })
        .collect();
    assert!(ns3
        .iter()
        .all(|(t, ip, _, _)| t.dlid == 2 && ip.dst_addr == ll(2)));
    net.send(3, &ping6(ll(3), ll(2), true, 2));
    net.run_for(Duration::from_secs(1));
    assert!(net.host(3).delivered.iter().any(|p| is_echo(p, false, 2)));
}

// RFC 4862 §5.4.4, §5.4.5 (draft-ietf-ipoib-ip-over-infiniband-06 §8): an address another node
// already holds fails DAD and is not used; the holder keeps it.
#[test]
fn dad_conflict_detected() {
    let dup: Ipv6Addr = "fd00::1".parse().unwrap();
    let mut net = Net::with(2, move |lid, c| {
        if lid == 2 {
            c.ipv6_static = vec![(dup, 64)];
        }
    });
    net.up();
    assert_eq!(state(&mut net, 2, dup), Some(AddrState::Preferred));
    let now = net.now;
    net.iface(3).add_ipv6_address(now, dup, 64);
    net.run_for(Duration::from_secs(3));
    assert_eq!(state(&mut net, 3, dup), Some(AddrState::Duplicate));
    assert!(net.host(3).events.contains(&InterfaceEvent::DadFailed(dup)));
    assert!(net
        .host(3)
        .logs()
        .iter()
        .any(|l| l.contains("duplicate address")));
    assert_eq!(state(&mut net, 2, dup), Some(AddrState::Preferred));
}

// RFC 4862 §5.4.3: a node checking an address that hears another node's DAD probe for it gives it
// up; two nodes configured alike never both use it.
#[test]
fn simultaneous_dad_never_both_preferred() {
    let dup: Ipv6Addr = "fd00::7".parse().unwrap();
    let mut net = Net::with(2, move |_, c| c.ipv6_static = vec![(dup, 64)]);
    net.up();
    let s2 = state(&mut net, 2, dup);
    let s3 = state(&mut net, 3, dup);
    assert!(s2 == Some(AddrState::Duplicate) || s3 == Some(AddrState::Duplicate));
    assert_ne!(
        (s2, s3),
        (Some(AddrState::Preferred), Some(AddrState::Preferred))
    );
    // The link-local addresses were unaffected.
    assert_eq!(state(&mut net, 2, ll(2)), Some(AddrState::Preferred));
}

/// A router advertisement from host `lid`'s link-local address with a prefix and an MTU option.
fn ra(net: &mut Net, lid: u16, prefix: &str, mtu: u32) -> Vec<u8> {
    let src = ll(lid);
    let dst: Ipv6Addr = "ff02::1".parse().unwrap();
    let opts_r = [
        NdOptionRepr::SourceLinkLayerAddr(net.iface(lid).hw_addr()),
        NdOptionRepr::PrefixInformation(PrefixInfo {
            prefix_len: 64,
            on_link: true,
            autonomous: true,
            valid_lifetime: 86400,
            preferred_lifetime: 14400,
            prefix: prefix.parse().unwrap(),
        }),
        NdOptionRepr::Mtu(mtu),
    ];
    let mut opts = Vec::new();
    for o in opts_r {
        let mut b = vec![0u8; o.buffer_len()];
        o.emit(&mut b).unwrap();
        opts.extend(b);
    }
    let nd = NdRepr {
        message: NdMessage::RouterAdvert {
            cur_hop_limit: 64,
            flags: 0,
            router_lifetime: 1800,
            reachable_time: 0,
            retrans_timer: 0,
        },
        options: &opts,
        profile: NdProfile::Rfc4391,
    };
    let mut m = vec![0u8; nd.buffer_len()];
    nd.emit(src, dst, &mut m).unwrap();
    ip6(src, dst, IpProtocol::Icmpv6, 255, &m)
}

// draft-ietf-ipoib-ip-over-infiniband-06 §8 (RFC 4862 §5.5.3): an advertised prefix plus the
// GUID-based identifier gives a global address after DAD; §7: an RA MTU option larger than the
// link MTU is logged and otherwise ignored, a smaller one is taken.
#[test]
fn autoconfiguration_and_ra_mtu() {
    let mut net = Net::new(3);
    net.up();
    let p = ra(&mut net, 4, "2001:db8:1::", 9000);
    net.send(4, &p);
    net.run_for(Duration::from_secs(3));
    let global: Ipv6Addr = "2001:db8:1:0:202:c903:0:2".parse().unwrap();
    assert_eq!(state(&mut net, 2, global), Some(AddrState::Preferred));
    assert!(net.host(2).ready().contains(&global));
    let logs = net.host(2).logs();
    assert!(
        logs.iter()
            .any(|l| l.contains("MTU option 9000 larger than the link MTU 2044")),
        "{logs:?}"
    );
    assert_eq!(net.iface(2).ipv6_mtu(), 2044);
    // The router became a neighbour from the RA's source option.
    assert!(net
        .iface(2)
        .neighbours()
        .iter()
        .any(|n| n.ip == IpAddr::V6(ll(4))));

    let p = ra(&mut net, 4, "2001:db8:1::", 1500);
    net.send(4, &p);
    net.run_for(Duration::from_secs(1));
    assert!(net.host(2).events.contains(&InterfaceEvent::Ipv6Mtu(1500)));
    assert_eq!(net.iface(2).ipv6_mtu(), 1500);
    // Packets above the IPv6 MTU are refused.
    let big = ip6(global, ll(3), IpProtocol::Udp, 64, &[0u8; 1500]);
    net.send(2, &big);
    assert_eq!(net.iface(2).counters().dropped(DropReason::TooBig), 1);

    // Ping between global addresses.
    let g3: Ipv6Addr = "2001:db8:1:0:202:c903:0:3".parse().unwrap();
    net.send(3, &ping6(g3, global, true, 9));
    net.run_for(Duration::from_secs(1));
    assert!(net.host(3).delivered.iter().any(|p| is_echo(p, false, 9)));
}

// RFC 4861 §7.1: ND messages with a hop limit other than 255 are discarded (they could come from
// off-link); a packet with a bad ICMPv6 checksum too.
#[test]
fn nd_validity_checks() {
    let mut net = Net::new(2);
    net.up();
    let mut p = ra(&mut net, 3, "2001:db8:9::", 1400);
    p[7] = 64;
    net.send(3, &p);
    net.run_for(Duration::from_secs(3));
    assert!(!net
        .iface(2)
        .ipv6_addresses()
        .iter()
        .any(|a| a.addr.segments()[2] == 9));
    assert!(net.iface(2).counters().dropped(DropReason::Malformed) >= 1);
}

/// Replaces host `lid`'s interface with a fresh one on a new QPN (a restart of the host's IPoIB
/// process: its link-layer address changes, §9.1.1) and reports the port to it.
fn restart(net: &mut Net, lid: u16, new_qpn: u32, tweak: impl Fn(&mut InterfaceConfig)) {
    let now = net.now;
    let h = net.host(lid);
    let mut c = h.iface.config().clone();
    c.qpn = new_qpn;
    tweak(&mut c);
    h.iface = Interface::new(c, crate::rng::Rng::new(u64::from(new_qpn)));
    h.attached.clear();
    let p = h.port;
    h.iface.handle_port(now, p);
}

fn cached(net: &mut Net, lid: u16, ip: Ipv6Addr) -> Option<HwAddr> {
    net.iface(lid)
        .neighbours()
        .into_iter()
        .find(|n| n.ip == IpAddr::V6(ip))
        .and_then(|n| n.hw)
}

// RFC 4861 §7.2.6: a node whose link-layer address changed (a restart: a new QPN) sends up to
// MAX_NEIGHBOR_ADVERTISEMENT (3) unsolicited NAs to all-nodes, Override set, Solicited clear, with
// the target link-layer option (§9.3), RetransTimer apart, once DAD passed; §7.2.5: a receiver
// with an entry replaces the cached address, one without creates none.
#[test]
fn unsolicited_na_after_restart_updates_peers() {
    let mut net = Net::new(3);
    net.up();
    net.send(2, &ping6(ll(2), ll(3), true, 1));
    net.run_for(Duration::from_secs(1));
    assert!(net.host(2).delivered.iter().any(|p| is_echo(p, false, 1)));
    assert_eq!(cached(&mut net, 2, ll(3)).map(|h| h.qpn), Some(qpn(3)));
    assert_eq!(cached(&mut net, 4, ll(3)), None);
    let before = nds(&net, 3).len();
    restart(&mut net, 3, 0x77, |_| {});
    net.run_for(Duration::from_secs(10));
    let nas: Vec<_> = nds(&net, 3)
        .into_iter()
        .skip(before)
        .filter(|(_, _, m, _)| matches!(m, NdMessage::NeighborAdvert { .. }))
        .collect();
    assert_eq!(nas.len(), 3, "{nas:?}");
    for (t, ip, m, o) in &nas {
        assert_eq!(
            (ip.src_addr, ip.dst_addr),
            (ll(3), "ff02::1".parse().unwrap())
        );
        assert_eq!(ip.hop_limit, 255);
        assert!(t.dlid >= 0xc000, "multicast");
        assert!(matches!(m, NdMessage::NeighborAdvert { flags: 0x20, target } if *target == ll(3)));
        assert_eq!(&o[..2], &[2, 3]);
        assert_eq!(&o[4..], &net.iface(3).hw_addr().to_bytes()[..]);
    }
    // No traffic from host 2 since the restart: the NA alone moved its entry to the new QPN.
    assert_eq!(cached(&mut net, 2, ll(3)).map(|h| h.qpn), Some(0x77));
    assert_eq!(cached(&mut net, 4, ll(3)), None, "§7.2.5: no entry created");
    net.send(2, &ping6(ll(2), ll(3), true, 2));
    net.run_for(Duration::from_secs(1));
    assert!(net.host(2).delivered.iter().any(|p| is_echo(p, false, 2)));
}

// docs/DEPLOYED.md "Linux IPoIB", `ndisc_notify` off (Linux's default): no unsolicited NA, and the
// peer keeps the old QPN until its own unreachability detection notices.
#[test]
fn no_unsolicited_na_without_ndisc_notify() {
    let mut net = Net::new(2);
    net.up();
    net.send(2, &ping6(ll(2), ll(3), true, 1));
    net.run_for(Duration::from_secs(1));
    let before = nds(&net, 3).len();
    restart(&mut net, 3, 0x77, |c| c.ndisc_notify = false);
    net.run_for(Duration::from_secs(10));
    assert!(!nds(&net, 3)
        .into_iter()
        .skip(before)
        .any(|(_, _, m, _)| matches!(m, NdMessage::NeighborAdvert { .. })));
    assert_eq!(cached(&mut net, 2, ll(3)).map(|h| h.qpn), Some(qpn(3)));
}

/// An unsolicited NA from host `lid`'s link-local address to all-nodes naming `hw`.
fn na(lid: u16, flags: u8, hw: HwAddr) -> Vec<u8> {
    let src = ll(lid);
    let dst: Ipv6Addr = "ff02::1".parse().unwrap();
    let o = NdOptionRepr::TargetLinkLayerAddr(hw);
    let mut opts = vec![0u8; o.buffer_len()];
    o.emit(&mut opts).unwrap();
    let nd = NdRepr {
        message: NdMessage::NeighborAdvert { flags, target: src },
        options: &opts,
        profile: NdProfile::Rfc4391,
    };
    let mut m = vec![0u8; nd.buffer_len()];
    nd.emit(src, dst, &mut m).unwrap();
    ip6(src, dst, IpProtocol::Icmpv6, 255, &m)
}

// RFC 4861 §7.2.5: an NA without Override naming another address leaves the cached address (a
// REACHABLE entry becomes STALE); with Override it replaces it.
#[test]
fn na_override_flag_decides_update() {
    let mut net = Net::new(2);
    net.up();
    net.send(2, &ping6(ll(2), ll(3), true, 1));
    net.run_for(Duration::from_secs(1));
    let reachable = |net: &mut Net| {
        net.iface(2)
            .neighbours()
            .into_iter()
            .find(|n| n.ip == IpAddr::V6(ll(3)))
            .map(|n| matches!(n.state, NeighbourState::Reachable { .. }))
    };
    assert_eq!(reachable(&mut net), Some(true));
    let mut other = net.iface(3).hw_addr();
    other.qpn = 0x55;
    let p = na(3, 0, other);
    net.send(3, &p);
    net.run_for(Duration::from_secs(1));
    assert_eq!(cached(&mut net, 2, ll(3)).map(|h| h.qpn), Some(qpn(3)));
    assert_eq!(reachable(&mut net), Some(false), "REACHABLE -> STALE");
    let p = na(3, 0x20, other);
    net.send(3, &p);
    net.run_for(Duration::from_secs(1));
    assert_eq!(cached(&mut net, 2, ll(3)).map(|h| h.qpn), Some(0x55));
}

// RFC 4861 §7.1.1: an NS from the unspecified address (a DAD probe) carrying a source link-layer
// address option is silently discarded, not answered; §7.1.2: an NA to a multicast address with
// the Solicited flag set is silently discarded, not taken (with Override it would replace the
// cached address).
#[test]
fn odd_nd_flags_are_discarded() {
    let mut net = Net::new(2);
    net.up();
    net.send(2, &ping6(ll(2), ll(3), true, 1));
    net.run_for(Duration::from_secs(1));
    let mal = net.iface(2).counters().dropped(DropReason::Malformed);
    let nas = |net: &Net| {
        nds(net, 2)
            .iter()
            .filter(|(_, _, m, _)| matches!(m, NdMessage::NeighborAdvert { .. }))
            .count()
    };
    let na0 = nas(&net);

    // A DAD probe for host 2's address with a source link-layer address option.
    let (src, dst) = (
        Ipv6Addr::UNSPECIFIED,
        super::super::ipv6::solicited_node(ll(2)),
    );
    let o = NdOptionRepr::SourceLinkLayerAddr(net.iface(3).hw_addr());
    let mut opts = vec![0u8; o.buffer_len()];
    o.emit(&mut opts).unwrap();
    let nd = NdRepr {
        message: NdMessage::NeighborSolicit { target: ll(2) },
        options: &opts,
        profile: NdProfile::Rfc4391,
    };
    let mut m = vec![0u8; nd.buffer_len()];
    nd.emit(src, dst, &mut m).unwrap();
    net.send(3, &ip6(src, dst, IpProtocol::Icmpv6, 255, &m));
    net.run_for(Duration::from_secs(1));
    assert_eq!(nas(&net), na0, "no answer to an invalid DAD probe");

    // A solicited NA to all-nodes naming another address, Override set.
    let mut other = net.iface(3).hw_addr();
    other.qpn = 0x55;
    net.send(3, &na(3, 0x40 | 0x20, other));
    net.run_for(Duration::from_secs(1));
    assert_eq!(cached(&mut net, 2, ll(3)).map(|h| h.qpn), Some(qpn(3)));
    assert_eq!(
        net.iface(2).counters().dropped(DropReason::Malformed),
        mal + 2
    );
}

// A link-layer address option naming a multicast GID is refused as in ARP: an NA carrying one,
// Override set, leaves the cached address and counts as malformed.
#[test]
fn nd_link_layer_address_with_a_multicast_gid_is_refused() {
    let mut net = Net::new(2);
    net.up();
    net.send(2, &ping6(ll(2), ll(3), true, 1));
    net.run_for(Duration::from_secs(1));
    let mal = net.iface(2).counters().dropped(DropReason::Malformed);
    let mut bad = net.iface(3).hw_addr();
    bad.gid = Gid::new(0xff12_401b_ffff_0000, 1);
    net.send(3, &na(3, 0x20, bad));
    net.run_for(Duration::from_secs(1));
    assert_eq!(cached(&mut net, 2, ll(3)), Some(net.iface(3).hw_addr()));
    assert_eq!(
        net.iface(2).counters().dropped(DropReason::Malformed),
        mal + 1
    );
}

// RFC 4861 §7.2.4: a unicast NS without a source link-layer address option, from a node we do not
// know, is answered once we have resolved the source ourselves (an NS of ours, its NA), not
// dropped. Host 2 restarts (an empty neighbour table); the NS reaches it from host 3's QP as host
// 3's stack would not send it (that one probes with the option too).
#[test]
fn unicast_ns_without_source_option_is_answered_after_resolving() {
    let mut net = Net::new(2);
    net.up();
    net.send(3, &ping6(ll(3), ll(2), true, 1));
    net.run_for(Duration::from_secs(1));
    let mut t = (net.sent_by(3).into_iter())
        .find(|s| s.t.dlid == 2)
        .expect("host 3 sent to host 2")
        .t
        .clone();
    restart(&mut net, 2, 0x77, |_| {});
    net.run_for(Duration::from_secs(10));
    assert_eq!(cached(&mut net, 2, ll(3)), None, "host 2 forgot host 3");
    let nas_to_3 = |net: &Net| {
        nds(net, 2)
            .iter()
            .filter(|(_, ip, m, _)| {
                ip.dst_addr == ll(3)
                    && matches!(m, NdMessage::NeighborAdvert { flags, target }
                        if *target == ll(2) && flags & 0x40 != 0)
            })
            .count()
    };
    let before = nas_to_3(&net);
    let nd = NdRepr {
        message: NdMessage::NeighborSolicit { target: ll(2) },
        options: &[],
        profile: NdProfile::Rfc4391,
    };
    let mut m = vec![0u8; nd.buffer_len()];
    nd.emit(ll(3), ll(2), &mut m).unwrap();
    let mut data = vec![0x86, 0xdd, 0, 0];
    data.extend(ip6(ll(3), ll(2), IpProtocol::Icmpv6, 255, &m));
    (t.remote_qpn, t.data) = (0x77, data);
    let from = net.idx(3);
    net.deliver_ud(from, t);
    net.run_for(Duration::from_secs(1));
    assert_eq!(nas_to_3(&net), before + 1, "one solicited NA to host 3");
    assert_eq!(cached(&mut net, 2, ll(3)).map(|h| h.qpn), Some(qpn(3)));
}

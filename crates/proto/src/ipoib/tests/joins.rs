//! The join records, field by field and component by component, for each kind of join, on a
//! partition other than the default (P_Key 0x8001): what Linux `ipoib_mcast_join`
//! (drivers/infiniband/ulp/ipoib/ipoib_multicast.c) sends, within
//! draft-ietf-ipoib-ip-over-infiniband-06 §4.1, §5, §11 and §12 (docs/IPOIB-JOINS.md).

use super::*;
use ipoib_wire::ipoib::{broadcast_mgid, ipv4_mgid, ipv6_mgid};
use ipoib_wire::mad::Method;
use ipoib_wire::sa::Selector;
use ipoib_wire::sa::{mcr_mask as m, JoinState, McMemberRecordRepr, SaAttribute, SaMadRepr};

/// MGID, PortGID, P_Key, JoinState: Linux's mask for the broadcast group.
const BROADCAST: u64 = m::MGID | m::PORT_GID | m::P_KEY | m::JOIN_STATE;
/// Linux's mask for every other group: the broadcast one plus Q_Key, MTU (selector and value),
/// TClass, rate (selector and value), SL, FlowLabel and HopLimit.
const OTHER: u64 = BROADCAST
    | m::Q_KEY
    | m::MTU_SELECTOR
    | m::MTU
    | m::TCLASS
    | m::RATE_SELECTOR
    | m::RATE
    | m::SL
    | m::FLOW_LABEL
    | m::HOP_LIMIT;

/// Every SubnAdmSet(MCMemberRecord) host `lid` sent for `mgid`: (component mask, record).
fn sets(net: &Net, lid: u16, mgid: Gid) -> Vec<(u64, McMemberRecordRepr)> {
    net.mads_from(lid)
        .iter()
        .filter_map(|o| {
            let r = SaMadRepr::parse(&o.mad).ok()?;
            match (r.header.method, r.attribute) {
                (Method::Set, SaAttribute::McMemberRecord(rec)) if rec.mgid == mgid => {
                    Some((r.sa.component_mask, rec))
                }
                _ => None,
            }
        })
        .collect()
}

/// Hosts 2 and 3 on partition P1 (0x0001), host 4 a router (§12); host 3's interface is
/// configured with the limited form 0x0001 of the P_Key, which Linux makes full (`priv->pkey |=
/// 0x8000`) and §4.1 item 1 puts into the broadcast GID.
fn p1() -> Net {
    let parts = default_and_p1();
    let mk = |lid: u16, pkey: u16| {
        let mut c = host_config(lid, pkey);
        c.router = lid == 4;
        (lid, c)
    };
    let t = vec![0xffff, 0x8001];
    Net::custom(
        vec![mk(2, 0x8001), mk(3, 0x0001), mk(4, 0x8001)],
        parts,
        &[(2, t.clone()), (3, t.clone()), (4, t)],
    )
}

// §5, §4.1 item 1: the broadcast join carries MGID, PortGID, JoinState FullMember and the
// interface's P_Key with the full-member bit (Linux sets IB_SA_MCMEMBER_REC_PKEY on every join);
// nothing else, so it never creates the group (§5: administrative).
#[test]
fn broadcast_join_carries_the_full_pkey_and_nothing_to_create_with() {
    let mut net = p1();
    net.up();
    let b1 = broadcast_mgid(PKey(0x8001), Scope::LinkLocal);
    for lid in [2, 3, 4] {
        assert!(net.iface(lid).carrier(), "host {lid}");
        let j = sets(&net, lid, b1);
        assert_eq!(j.len(), 1, "host {lid}: one broadcast join");
        let (mask, rec) = j[0];
        assert_eq!(mask, BROADCAST, "host {lid}: mask {mask:#x}");
        let want = McMemberRecordRepr {
            mgid: b1,
            port_gid: net.iface(lid).gid(),
            pkey: PKey(0x8001),
            join_state: JoinState::FULL_MEMBER,
            ..McMemberRecordRepr::default()
        };
        assert_eq!(rec, want, "host {lid}");
    }
}

// §11: every other join MUST carry the broadcast group's P_Key, Q_Key, SL, MTU and HopLimit and
// SHOULD the rest, with the components that let a FullMember join create the group; the P_Key is
// the interface's (Linux `rec.pkey = priv->pkey`), full. The same record for a FullMember join
// (IPv4 all-hosts, IPv6 all-nodes and solicited-node), a SendOnlyNonMember join (§11 B) and a
// router's NonMember join (§12 B); only JoinState differs.
#[test]
fn other_joins_copy_the_broadcast_group_with_the_interfaces_pkey() {
    let mut net = p1();
    net.up();
    let pk = PKey(0x8001);
    let ll = Scope::LinkLocal;
    let all_hosts = ipv4_mgid("224.0.0.1".parse().unwrap(), pk, ll);
    let all_nodes = ipv6_mgid("ff02::1".parse().unwrap(), pk, ll);
    let g: Ipv4Addr = "239.3.3.3".parse().unwrap();
    let mg = ipv4_mgid(g, pk, ll);
    net.join(2, IpAddr::V4(g)).unwrap();
    net.run_for(Duration::from_secs(1));
    net.send(3, &udp4(v4(3), g, b"x"));
    net.run_for(Duration::from_secs(1));
    let b = net.iface(3).link_params().expect("up").record;
    let expect = |net: &mut Net, lid: u16, mgid: Gid, js: JoinState| {
        let j = sets(net, lid, mgid);
        assert_eq!(j.len(), 1, "host {lid} {}: {j:?}", mgid.to_ipv6());
        let (mask, rec) = j[0];
        assert_eq!(mask, OTHER, "host {lid} {}: mask {mask:#x}", mgid.to_ipv6());
        let want = McMemberRecordRepr {
            mgid,
            port_gid: net.iface(lid).gid(),
            qkey: b.qkey,
            mtu_selector: Selector::Exactly,
            mtu: b.mtu,
            tclass: b.tclass,
            pkey: pk,
            rate_selector: Selector::Exactly,
            rate: b.rate,
            sl: b.sl,
            flow_label: b.flow_label,
            hop_limit: b.hop_limit,
            join_state: js,
            ..McMemberRecordRepr::default()
        };
        assert_eq!(rec, want, "host {lid} {}", mgid.to_ipv6());
    };
    let full = JoinState::FULL_MEMBER;
    let sn3 = ipv6_mgid("ff02::1:ff00:3".parse().unwrap(), pk, ll);
    for lid in [2, 3] {
        expect(&mut net, lid, all_hosts, full);
        expect(&mut net, lid, all_nodes, full);
    }
    expect(&mut net, 3, sn3, full);
    expect(&mut net, 2, mg, full);
    expect(&mut net, 3, mg, JoinState::SEND_ONLY_NON_MEMBER);
    expect(&mut net, 4, mg, JoinState::NON_MEMBER);
    // What the SA holds: each group in P1 with the broadcast group's P_Key, Q_Key and MTU.
    for mgid in [all_hosts, all_nodes, sn3, mg] {
        let grp = net
            .sa
            .groups()
            .into_iter()
            .find(|x| x.record.mgid == mgid)
            .expect("group");
        let r = grp.record;
        assert_eq!(
            (r.pkey, r.qkey, r.mtu),
            (pk, b.qkey, b.mtu),
            "{}",
            mgid.to_ipv6()
        );
    }
}

//! The SM's own notices to subscribers: traps 64/65 after a sweep ([`SaServer::new_sweep`];
//! OpenSM `state_mgr_report_new_ports`, `drop_mgr_remove_port`) and who may hear a trap (IBA 1
//! o13-17.1.1, o13-17.1.2; OpenSM `osm_inform.c` `is_access_permitted`).

use super::*;
use ipoib_wire::mad::{InformInfoRepr, Method};
use ipoib_wire::sa::SaAttribute;

/// Port `lid` subscribes to `info`.
fn subscribe(net: &mut Net, lid: u16, info: InformInfoRepr) {
    let r = net.ask(
        lid,
        SaMadRepr::request(Method::Set, 0, 0, SaAttribute::InformInfo(info)),
    );
    assert!(r.is_ok(), "{r:?}");
}

/// The SM's port (both partitions) and hosts with the P_Keys given, LIDs 2.. in order.
fn model(hosts: &[&[u16]]) -> SubnetModel {
    let mut ports = vec![ca(SA_LID, &[0xffff, 0x8002], 4, 7, 1)];
    for (i, pkeys) in hosts.iter().enumerate() {
        ports.push(ca(2 + i as u16, pkeys, 4, 7, i as u8 + 2));
    }
    star(ports)
}

fn net_of(m: SubnetModel) -> Net {
    Net::new(
        m,
        PartitionConfig::default_config(),
        SaServerConfig::default(),
        5,
    )
}

/// IBA 1 §14.2.5.1 Table 130: after a sweep the SM reports each end port out of service (trap
/// 65) and each new one in service (trap 64), the port's GID in DataDetails, to the subscribers
/// of those traps; a sweep that changes nothing reports nothing. Before, our SA sent neither.
#[test]
fn a_sweep_reports_ports_out_of_and_into_service() {
    let all = [0xffffu16];
    let mut net = net_of(model(&[&all, &all, &all]));
    subscribe(&mut net, 2, InformInfoRepr::generic(true, 64, 1));
    subscribe(&mut net, 2, InformInfoRepr::generic(true, 65, 1));
    let now = net.now;
    assert_eq!(net.sa.new_sweep(now, model(&[&all, &all, &all])), (0, 0));
    net.run_for(Duration::from_secs(1));
    assert_eq!(net.reports(2), vec![]);
    let now = net.now;
    assert_eq!(net.sa.new_sweep(now, model(&[&all, &all])), (1, 0));
    net.run_for(Duration::from_secs(1));
    assert_eq!(net.reports(2), vec![(65, gid_of(4))]);
    let now = net.now;
    assert_eq!(net.sa.new_sweep(now, model(&[&all, &all, &all])), (0, 1));
    net.run_for(Duration::from_secs(1));
    assert_eq!(net.reports(2), vec![(65, gid_of(4)), (64, gid_of(4))]);
    assert_eq!(net.sa.stats().reports_lost, 0);
    assert_eq!(net.sa.stats().reports_refused, 0);
}

/// IBA 1 o13-17.1.1: a trap about a port goes only to subscribers sharing a P_Key with it; a
/// subscription by LID range (here the SM's LID, the issuer of traps 64-67) to a source it may
/// not reach is removed (o13-17.1.2), one for all LIDs (0xFFFF) is kept. Before, every matching
/// subscriber heard of every port, whatever its partitions.
#[test]
fn a_port_trap_reaches_only_subscribers_sharing_a_pkey_with_the_port() {
    let (dflt, blue) = ([0xffffu16], [0x8002u16]);
    let mut net = net_of(model(&[&dflt, &blue, &dflt, &dflt]));
    subscribe(
        &mut net,
        2,
        InformInfoRepr {
            lid_range_begin: SA_LID,
            lid_range_end: SA_LID,
            ..InformInfoRepr::generic(true, 65, 1)
        },
    );
    subscribe(&mut net, 4, InformInfoRepr::generic(true, 65, 1));
    // Host 3 (blue only) leaves: neither subscriber shares its partition.
    let without = |lids: &[u16]| {
        let mut m = model(&[&dflt, &blue, &dflt, &dflt]);
        m.ports.retain(|p| !lids.contains(&p.lid));
        m
    };
    let now = net.now;
    assert_eq!(net.sa.new_sweep(now, without(&[3])), (1, 0));
    net.run_for(Duration::from_secs(1));
    assert_eq!(net.reports(2), vec![]);
    assert_eq!(net.reports(4), vec![]);
    assert_eq!(net.sa.stats().reports_refused, 2);
    // Host 5 leaves: host 4 hears it; host 2's subscription by LID range went.
    let now = net.now;
    assert_eq!(net.sa.new_sweep(now, without(&[3, 5])), (1, 0));
    net.run_for(Duration::from_secs(1));
    assert_eq!(net.reports(4), vec![(65, gid_of(5))]);
    assert_eq!(net.reports(2), vec![]);
}

/// IBA 1 o13-17.1.1: trap 66 for a group goes only to subscribers whose port holds the group's
/// P_Key (OpenSM `is_access_permitted`, "do not share same pkey"). Before, a host outside a
/// partition heard of every group made in it.
#[test]
fn a_group_trap_reaches_only_subscribers_in_the_groups_partition() {
    let (m, parts) = blue_partition();
    let mut net = Net::new(m, parts, SaServerConfig::default(), 3);
    for lid in [2, 3, 4] {
        subscribe(&mut net, lid, InformInfoRepr::generic(true, 66, 1));
    }
    let blue = mgid("ff12:401b:8002::ffff:ffff");
    let mut r = join_rec(blue, gid_of(3), JoinState::FULL_MEMBER);
    r.pkey = PKey(0x8002);
    assert!(net.ask(3, join(r, mcr_mask::JOIN)).is_ok());
    net.run_for(Duration::from_secs(1));
    assert_eq!(net.reports(3), vec![(66, blue)]);
    assert_eq!(net.reports(2), vec![]);
    assert_eq!(net.reports(4), vec![]);
    assert_eq!(net.sa.stats().reports_refused, 2);
}

//! IPoIB over UD on the emulated subnet: partitions (draft-ietf-ipoib-ip-over-infiniband-06
//! §5 "an IPoIB subnet per partition", §9.1 e, §14 security). partitions.conf puts hosts 0-2 in
//! partition A (0x8001) and hosts 3-4 in partition B (0x8002), each with its broadcast group; the
//! default partition is limited for all but the SM. Each interface runs on its partition's P_Key:
//! hosts of one partition ping each other, hosts of different partitions cannot even resolve each
//! other (their ARP requests go to another broadcast group), and no frame of one partition reaches
//! the other's IP layer.

use ipoib_fabric::hw::topology::Topology;
use ipoib_fabric::node::subnet::{IpoibOptions, Subnet};
use ipoib_fabric::testing::*;
use ipoib_proto::ipoib::{DropReason, InterfaceConfig};
use ipoib_proto::partitions;
use ipoib_wire::ipoib::mcast::{broadcast_mgid, Scope};
use ipoib_wire::PKey;
use std::time::Duration;

/// Host i of a generated topology has port GUID 0x100001 + 2i.
const CONF: &str = "\
Default=0x7fff : ALL=limited, SELF=full ;
PartA=0x8001, ipoib : 0x100003=full, 0x100005=full ;
PartB=0x8002, ipoib : 0x100007=full, 0x100009=full ;
";

fn pkey_of(i: usize, c: &mut InterfaceConfig) {
    c.pkey = if i <= 2 { PKey(0x8001) } else { PKey(0x8002) };
}

// draft-ietf-ipoib-ip-over-infiniband-06 §5 (one broadcast group per partition), §9.1 e (UD peers
// talk only inside one partition), §14; IBA 1 §10.9.3.
#[test]
fn two_partitions_cannot_ping_across() {
    let seed = seed(31);
    let _g = SeedGuard(seed);
    let mut opts = options(Topology::single_switch(5).unwrap(), seed);
    opts.partitions = Some(partitions::parse(CONF).unwrap());
    opts.ipoib = Some(IpoibOptions {
        configure: Some(pkey_of),
        ..IpoibOptions::default()
    });
    let mut net: Subnet = up(opts, false);
    for i in 0..5 {
        let want = broadcast_mgid(
            if i <= 2 { PKey(0x8001) } else { PKey(0x8002) },
            Scope::LinkLocal,
        );
        let p = net.interface(i).unwrap().link_params().unwrap();
        assert_eq!(
            p.record.mgid, want,
            "host {i} on its partition's broadcast group"
        );
    }
    let inside = [(0, 1), (1, 2), (2, 0), (3, 4), (4, 3)];
    let sent = ping_pairs(&mut net, &inside, v4, Duration::from_secs(1));
    for s in sent {
        assert!(
            rtt(&net, s).is_some(),
            "{} -> {} in one partition",
            s.0,
            s.1
        );
    }
    let answered: Vec<u64> = (0..5)
        .map(|i| app(&net, i).ip().counters().echo_answered)
        .collect();
    let across = [(1, 3), (2, 4), (3, 1), (4, 0)];
    let sent = ping_pairs(&mut net, &across, v4, Duration::from_secs(5));
    for s in sent {
        assert_eq!(rtt(&net, s), None, "{} -> {} across partitions", s.0, s.1);
    }
    for (a, b) in across {
        let failed = net
            .interface(a)
            .unwrap()
            .counters()
            .dropped(DropReason::ResolutionFailed);
        assert!(failed >= 1, "host {a}: resolution of host {b} failed");
        let other = v4(&net, b);
        assert!(
            net.interface(a)
                .unwrap()
                .neighbours()
                .iter()
                .all(|e| e.ip != other || e.hw.is_none()),
            "host {a} never learned host {b}'s address"
        );
    }
    for (i, &before) in answered.iter().enumerate() {
        assert_eq!(
            app(&net, i).ip().counters().echo_answered,
            before,
            "host {i}: no echo request crossed"
        );
        // The HCA and the switch kept the other partition out: nothing reached the agent to be
        // refused for its P_Key (§9.1 e).
        let c = net.interface(i).unwrap().counters();
        assert_eq!(c.dropped(DropReason::PkeyMismatch), 0);
    }
    let a_group = broadcast_mgid(PKey(0x8001), Scope::LinkLocal);
    for i in 3..5 {
        assert!(
            !app(&net, i).attached().iter().any(|(g, _)| *g == a_group),
            "host {i} never attached to partition A's group"
        );
    }
}

//! Corrupted packets are never delivered. The SM host's cable in a 40-host
//! fat tree flips a bit in 30% of the packets in each direction (`Fault::Corrupt`). The switch
//! catches what the SM sends (VCRC, IBA 1 §7.8.2), the SM's HCA what it receives (VCRC/ICRC, IBA 1
//! §7.8); every corrupted packet is accounted for by a CRC drop, and in the receiving port's
//! PortRcvErrors (IBA 1 §16.1.3.5), none is delivered. The joins still
//! complete, through the SA clients' retries, and every host got the same, right answer.

use ipoib_fabric::hw::hca::HcaDropReason;
use ipoib_fabric::hw::link::Fault;
use ipoib_fabric::hw::switch::{self, Switch};
use ipoib_fabric::hw::topology::Topology;
use ipoib_fabric::node::subnet::{Subnet, SubnetOptions};
use ipoib_fabric::testing::{at, seeds, SeedGuard};
use ipoib_fabric::PortRef;
use ipoib_wire::QKey;
use ipoib_wire::{Mtu, Rate};

// IBA 1 §7.8.1 (ICRC), §7.8.2 (VCRC): the receiver's ICRC/VCRC check catches corrupted bytes and
// drops the packet.
#[test]
fn corrupted_packets_are_dropped_and_joins_complete_by_retries() {
    for seed in seeds([31, 32]) {
        let _g = SeedGuard(seed);
        let n = 40;
        let mut net =
            Subnet::build(SubnetOptions::new(Topology::fat_tree(n).unwrap(), seed)).unwrap();
        let sm = PortRef {
            node: net.host(0).node,
            port: 1,
        };
        let link = net.sim().link_of(sm).unwrap();
        net.sim_mut()
            .set_faults(link, None, vec![Fault::Corrupt(0.3)]);
        assert!(
            net.run_until_joined(at(120)),
            "seed {seed}: joins completed"
        );
        let l = net.sim().link(link);
        let from_sm = usize::from(l.ends[0] != sm);
        let (out, into) = (l.dirs[from_sm].stats, l.dirs[1 - from_sm].stats);
        assert!(
            out.corrupted > 0 && into.corrupted > 0,
            "seed {seed}: faults fired"
        );
        // Into the SM: its HCA dropped every corrupted packet on a CRC (or length) check.
        let c = net.host_device(0).hca().counters();
        let crc_drops = c.drops(HcaDropReason::BadVcrc)
            + c.drops(HcaDropReason::BadIcrc)
            + c.drops(HcaDropReason::Malformed);
        assert_eq!(crc_drops, into.corrupted, "seed {seed}: SM HCA");
        // IBA 1 §16.1.3.5: each counts in the receiving port's PortRcvErrors.
        let sm_port = net.host_port(0).unwrap().traffic.rcv_errors;
        assert_eq!(sm_port, into.corrupted, "seed {seed}: SM port");
        // Out of the SM: the leaf switch dropped every corrupted packet.
        let leaf = l.ends[1 - from_sm].node;
        let s = net.sim().node::<Switch>(leaf).unwrap().stats();
        let sw_drops = s.dropped(switch::SwitchDropReason::VcrcBad)
            + s.dropped(switch::SwitchDropReason::Malformed);
        assert_eq!(sw_drops, out.corrupted, "seed {seed}: leaf switch");
        let leaf_port = l.ends[1 - from_sm].port;
        let sw = net.sim().node::<Switch>(leaf).unwrap();
        let rcv_errors = sw.port_traffic(leaf_port).unwrap().rcv_errors;
        assert_eq!(rcv_errors, out.corrupted, "seed {seed}: leaf switch port");
        // No other HCA saw a bad packet, and nothing bad reached an agent.
        for i in 1..n {
            assert_eq!(
                net.host_device(i).hca().counters().total_drops(),
                0,
                "host {i}"
            );
        }
        assert!(
            !net.sa()
                .stats()
                .dropped
                .keys()
                .any(|k| k.contains("unparsable") || k.contains("short")),
            "seed {seed}: SA dropped {:?}",
            net.sa().stats().dropped
        );
        // Every host holds the same, right answer.
        let Some(first) = net.broadcast_joins(0)[0].record else {
            panic!("host 0 not joined")
        };
        let mut retried = 0;
        for i in 0..n {
            let j = net.broadcast_joins(i)[0];
            let (Some(r), Some(r_at)) = (j.record, j.at) else {
                panic!("host {i}: {j:?}")
            };
            assert_eq!(
                (r.mlid, r.qkey, r.mtu, r.rate),
                (first.mlid, QKey(0x0b1b), Mtu::Mtu2048, Rate::Gbps10),
                "host {i}"
            );
            if r_at > at(1) {
                retried += 1;
            }
        }
        assert!(retried > 0, "seed {seed}: some joins needed an SA retry");
    }
}

//! A connection's primary path from a PathRecord (IBA 1 §15.2.5.16), as the REQ carries it (IBA 1
//! §12.6 Table 106), filled the way Linux `cm_format_req` fills it from an `sa_path_rec`.

use super::ConnectParams;
use ipoib_wire::cm::CmPath;
use ipoib_wire::sa::PathRecordRepr;

/// The local ACK timeout of a path (IBA time exponent): two packet lifetimes plus the CA's ACK
/// delay, in the 4.096 µs × 2^n scale, at most 31 (IBA 1 §9.7.6.1.3; Linux `cm_ack_timeout`
/// computes exactly this: 2 × 2^plt is 2^(plt + 1), and adding 2^delay raises the exponent by one
/// when the two are within a factor of two of each other).
pub fn ack_timeout(packet_life_time: u8, ca_ack_delay: u8) -> u8 {
    let two_lifetimes = packet_life_time.saturating_add(1);
    let t = if two_lifetimes >= ca_ack_delay {
        two_lifetimes.saturating_add(u8::from(ca_ack_delay >= two_lifetimes - 1))
    } else {
        ca_ack_delay.saturating_add(u8::from(two_lifetimes >= ca_ack_delay - 1))
    };
    t.min(31)
}

/// The REQ's primary path for `pr`, seen from its source (`pr.slid`, `pr.sgid`): LIDs, GIDs, flow
/// label, rate, traffic class, hop limit and SL copied; Subnet Local set when the hop limit is at
/// most 1 (Linux `cm_format_req`); Local ACK Timeout from [`ack_timeout`] with our CA's ACK delay.
/// The agent connects within one subnet, so the LIDs are always the ports' own (Linux puts the
/// permissive LID in a routed path; no router exists here).
pub fn cm_path(pr: &PathRecordRepr, ca_ack_delay: u8) -> CmPath {
    CmPath {
        local_port_lid: pr.slid,
        remote_port_lid: pr.dlid,
        local_port_gid: pr.sgid,
        remote_port_gid: pr.dgid,
        flow_label: pr.flow_label,
        packet_rate: pr.rate,
        traffic_class: pr.tclass,
        hop_limit: pr.hop_limit,
        sl: pr.sl,
        subnet_local: pr.hop_limit <= 1,
        local_ack_timeout: ack_timeout(pr.packet_life_time, ca_ack_delay),
    }
}

impl ConnectParams {
    /// Linux IPoIB's REQ ([`ConnectParams::linux_ipoib`]) over the path `pr` describes: its
    /// P_Key, MTU and PacketLifeTime, the primary path from [`cm_path`].
    pub fn over_path(
        pr: &PathRecordRepr,
        ca_ack_delay: u8,
        service_id: u64,
        qpn: u32,
        psn: u32,
    ) -> ConnectParams {
        ConnectParams {
            packet_life_time: pr.packet_life_time,
            pkey: pr.pkey,
            mtu: pr.mtu,
            ..ConnectParams::linux_ipoib(cm_path(pr, ca_ack_delay), service_id, qpn, psn)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ipoib_wire::{Gid, Mtu, PKey, Rate};

    // Linux `cm_ack_timeout` values: 2 × 2^plt + 2^delay rounded up to a power of two.
    #[test]
    fn ack_timeout_is_two_lifetimes_plus_ack_delay() {
        assert_eq!(ack_timeout(18, 0), 19); // 2^19 + 1: still 2^19 scale
        assert_eq!(ack_timeout(18, 19), 20); // 2^19 + 2^19 = 2^20
        assert_eq!(ack_timeout(18, 18), 20); // 2^19 + 2^18, rounded up
        assert_eq!(ack_timeout(10, 15), 15); // 2^11 + 2^15: the delay dominates
        assert_eq!(ack_timeout(10, 12), 13); // 2^11 + 2^12, rounded up
        assert_eq!(ack_timeout(0, 0), 2);
        assert_eq!(ack_timeout(40, 0), 31);
        assert_eq!(ack_timeout(255, 255), 31);
    }

    #[test]
    fn path_and_params_from_a_path_record() {
        let pr = PathRecordRepr {
            slid: 3,
            dlid: 9,
            sgid: Gid::new(Gid::DEFAULT_SUBNET_PREFIX, 3),
            dgid: Gid::new(Gid::DEFAULT_SUBNET_PREFIX, 9),
            flow_label: 0x12345,
            tclass: 4,
            hop_limit: 0,
            sl: 2,
            pkey: PKey(0x8001),
            mtu: Mtu::Mtu4096,
            rate: Rate::Gbps40,
            packet_life_time: 14,
            ..PathRecordRepr::default()
        };
        let p = cm_path(&pr, 0);
        assert_eq!((p.local_port_lid, p.remote_port_lid), (3, 9));
        assert_eq!((p.local_port_gid, p.remote_port_gid), (pr.sgid, pr.dgid));
        assert_eq!((p.flow_label, p.traffic_class, p.sl), (0x12345, 4, 2));
        assert_eq!(p.packet_rate, Rate::Gbps40);
        assert!(p.subnet_local);
        assert_eq!(p.local_ack_timeout, 15);
        assert!(!cm_path(&PathRecordRepr { hop_limit: 2, ..pr }, 0).subnet_local);
        let c = ConnectParams::over_path(&pr, 0, 0x10, 0x48, 7);
        assert_eq!(
            (c.pkey, c.mtu, c.packet_life_time),
            (PKey(0x8001), Mtu::Mtu4096, 14)
        );
        assert_eq!((c.qpn, c.psn, c.service_id, c.path), (0x48, 7, 0x10, p));
    }
}

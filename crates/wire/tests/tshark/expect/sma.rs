//! The attributes the SMA and PMA answer (IBA 1 §14.2.5, §16.1.3.5, §16.1.4.11), field by field
//! as tshark 4.0 names them. tshark shows no PortXmitWait in PortCounters.

use super::{Expect, Want};
use ipoib_wire::mad::attr::perf as perf_attr;
use ipoib_wire::mad::{BadKeyTrap, BadMKeyTrap, MadHeaderRepr, NoticeRepr};
use ipoib_wire::perf::{PortCountersExtRepr, PortCountersRepr, PERF_DATA_OFFSET};
use ipoib_wire::smp::{
    NodeDescriptionRepr, PKeyTableRepr, SlToVlTableRepr, SmInfoRepr, VlArbTableRepr,
};

impl Expect {
    fn nums(&mut self, f: &'static str, v: impl IntoIterator<Item = u64>) {
        self.fields.push((f, Want::Nums(v.into_iter().collect())));
    }
}

pub(super) fn node_description(n: &NodeDescriptionRepr, e: &mut Expect) {
    e.text("infiniband.nodedescription.nodestring", n.text());
}

pub(super) fn sm_info(s: &SmInfoRepr, e: &mut Expect) {
    e.num("infiniband.sminfo.guid", s.guid.0);
    e.num("infiniband.sminfo.sm_key", s.sm_key);
    e.num("infiniband.sminfo.actcount", s.act_count);
    e.num("infiniband.sminfo.priority", s.priority);
    e.num("infiniband.sminfo.smstate", u8::from(s.sm_state));
}

/// P_KeyTable: tshark splits each P_Key into MembershipType and P_KeyBase.
pub(super) fn pkey_table(p: &PKeyTableRepr, e: &mut Expect) {
    e.nums(
        "infiniband.p_keytable.membershiptype",
        p.pkeys.iter().map(|k| u64::from(k.0 >> 15)),
    );
    e.nums(
        "infiniband.p_keytable.p_keybase",
        p.pkeys.iter().map(|k| u64::from(k.0 & 0x7fff)),
    );
}

/// SLtoVLMappingTable: even SLs are the high nibbles, odd SLs the low ones.
pub(super) fn sl_to_vl(s: &SlToVlTableRepr, e: &mut Expect) {
    e.nums(
        "infiniband.sltovlmappingtable.sltovlhighbits",
        s.vls.iter().step_by(2).map(|&v| u64::from(v)),
    );
    e.nums(
        "infiniband.sltovlmappingtable.sltovllowbits",
        s.vls.iter().skip(1).step_by(2).map(|&v| u64::from(v)),
    );
}

pub(super) fn vl_arb(v: &VlArbTableRepr, e: &mut Expect) {
    e.nums(
        "infiniband.vlarbitrationtable.vl",
        v.entries.iter().map(|x| u64::from(x.vl)),
    );
    e.nums(
        "infiniband.vlarbitrationtable.weight",
        v.entries.iter().map(|x| u64::from(x.weight)),
    );
}

/// The Notice of a Trap() SMP (no IssuerGID in 64 bytes), with the DataDetails of traps 128,
/// 256, 257 and 258.
pub(super) fn notice(n: &NoticeRepr, e: &mut Expect) {
    e.num("infiniband.notice.isgeneric", n.is_generic);
    e.num("infiniband.notice.type", u8::from(n.notice_type));
    e.num(
        "infiniband.notice.producertypevendorid",
        n.producer_type_or_vendor_id,
    );
    e.num(
        "infiniband.notice.trapnumberdeviceid",
        n.trap_number_or_device_id,
    );
    e.num("infiniband.notice.issuerlid", n.issuer_lid);
    e.num("infiniband.notice.noticecount", n.notice_count);
    if let Some(l) = n.trap_lid_addr() {
        e.num("infiniband.trap.lidaddr", l);
    }
    if let Some(t) = BadMKeyTrap::from_notice(n) {
        e.num("infiniband.trap.lidaddr", t.lid);
        e.num("infiniband.trap.drslid", t.dr_slid);
        e.num("infiniband.trap.method", t.method);
        e.num("infiniband.trap.attributeid", t.attribute_id);
        e.num("infiniband.trap.attributemodifier", t.attribute_modifier);
        e.num("infiniband.trap.mkey", t.mkey);
        e.num("infiniband.trap.drnotice", t.dr_notice);
        e.num("infiniband.trap.drpathtruncated", t.dr_path_truncated);
        e.num("infiniband.trap.drhopcount", t.dr_hop_count);
        e.bytes("infiniband.trap.drnoticereturnpath", &t.dr_return_path);
    }
    if let Some((_, t)) = BadKeyTrap::from_notice(n) {
        e.num("infiniband.trap.lidaddr1", t.lid1);
        e.num("infiniband.trap.lidaddr2", t.lid2);
        e.num("infiniband.trap.key", t.key);
        e.num("infiniband.trap.sl", t.sl);
        e.num("infiniband.trap.qp1", t.qp1);
        e.num("infiniband.trap.qp2", t.qp2);
        e.gid("infiniband.trap.gidaddr1", t.gid1);
        e.gid("infiniband.trap.gidaddr2", t.gid2);
    }
}

/// A PerfMgt MAD's attribute (IBA 1 §16.1.1: the data starts at byte 64).
pub(super) fn perf(h: &MadHeaderRepr, data: &[u8], e: &mut Expect) {
    let body = &data[PERF_DATA_OFFSET..];
    match h.attribute_id {
        perf_attr::PORT_COUNTERS => {
            let r = PortCountersRepr::parse(body).expect("PortCounters");
            e.num("infiniband.portcounters.portselect", r.port_select);
            e.num("infiniband.portcounters.counterselect", r.counter_select);
            e.num(
                "infiniband.portcounters.symbolerrorcounter",
                r.symbol_error_counter,
            );
            e.num("infiniband.portcounters.portrcverrors", r.port_rcv_errors);
            e.num(
                "infiniband.portcounters.portxmitdiscards",
                r.port_xmit_discards,
            );
            e.num("infiniband.portcounters.vl15dropped", r.vl15_dropped);
            e.num("infiniband.portcounters.portxmitdata", r.port_xmit_data);
            e.num("infiniband.portcounters.portrcvdata", r.port_rcv_data);
            e.num("infiniband.portcounters.portxmitpkts", r.port_xmit_pkts);
            e.num("infiniband.portcounters.portrcvpkts", r.port_rcv_pkts);
        }
        perf_attr::PORT_COUNTERS_EXTENDED => {
            let r = PortCountersExtRepr::parse(body).expect("PortCountersExtended");
            e.num("infiniband.portcounters_ext.portselect", r.port_select);
            e.num("infiniband.portcounters_ext.portxmitdata", r.port_xmit_data);
            e.num("infiniband.portcounters_ext.portrcvdata", r.port_rcv_data);
            e.num("infiniband.portcounters_ext.portxmitpkts", r.port_xmit_pkts);
            e.num("infiniband.portcounters_ext.portrcvpkts", r.port_rcv_pkts);
            e.num(
                "infiniband.portcounters_ext.portunicastxmitpkts",
                r.port_unicast_xmit_pkts,
            );
            e.num(
                "infiniband.portcounters_ext.portunicastrcvpkts",
                r.port_unicast_rcv_pkts,
            );
            e.num(
                "infiniband.portcounters_ext.portmulticastxmitpkts",
                r.port_multicast_xmit_pkts,
            );
            e.num(
                "infiniband.portcounters_ext.portmulticastrcvpkts",
                r.port_multicast_rcv_pkts,
            );
        }
        other => panic!("unexpected PerfMgt attribute {other:#x}"),
    }
}

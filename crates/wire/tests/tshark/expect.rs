//! What tshark must show for each sample, field by field, derived from this crate's own reading
//! of the bytes (headers, IPoIB frame, SA MAD, CM message and private data). The known tshark 4.0
//! quirks are left out here, each with the reason (see also the crate test's module docs).

use ipoib_wire::cm::CmMessage;
use ipoib_wire::ib::{Lnh, Opcode, Operation, Position};
use ipoib_wire::ipoib::{
    ArpRepr, IpPayload, IpProtocol, IpoibFrame, IpoibPayload, Ipv4Datagram, Ipv4Packet,
    Ipv6Datagram, NdMessage, NdOptionRepr, NdRepr,
};
use ipoib_wire::mad::{MadHeaderRepr, MgmtClass, MAD_HEADER_LEN};
use ipoib_wire::packet::Packet;
use ipoib_wire::private_data::{classify, IpCmReqRepr, IpPair, ServiceKind};
use ipoib_wire::sa::{McMemberRecordRepr, PathRecordRepr, SaAttribute, SaMadRepr};
use ipoib_wire::smp::{NodeInfoRepr, PortInfoRepr, SmpAttribute, SmpMadRepr, SmpRoute};
use ipoib_wire::types::Gid;

mod sma;

/// An expected field value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Want {
    /// Exactly one occurrence with this number (tshark prints decimal or `0x` hex).
    Num(u64),
    /// One occurrence per number, in order.
    Nums(Vec<u64>),
    /// Exactly one occurrence with this text (addresses, GIDs).
    Text(String),
    /// Exactly one occurrence with these bytes (tshark prints lowercase hex, no separators).
    Bytes(Vec<u8>),
    /// No occurrence.
    Absent,
}

/// The expected fields of one sample.
#[derive(Debug, Default)]
pub struct Expect {
    /// `(tshark field, wanted value)` in wire order.
    pub fields: Vec<(&'static str, Want)>,
}

impl Expect {
    fn num(&mut self, f: &'static str, v: impl Into<u64>) {
        self.fields.push((f, Want::Num(v.into())));
    }
    fn text(&mut self, f: &'static str, v: impl ToString) {
        self.fields.push((f, Want::Text(v.to_string())));
    }
    fn gid(&mut self, f: &'static str, g: Gid) {
        self.text(f, g.to_ipv6());
    }
    fn bytes(&mut self, f: &'static str, b: &[u8]) {
        self.fields.push((f, Want::Bytes(b.to_vec())));
    }
    fn absent(&mut self, f: &'static str) {
        self.fields.push((f, Want::Absent));
    }
}

/// Everything tshark must show of the well-formed packet `bytes`.
pub fn expect(bytes: &[u8]) -> Expect {
    let p = Packet::parse(bytes).expect("samples parse");
    let mut e = Expect::default();
    headers(&p, &mut e);
    let bth = p.bth.expect("samples are IBA packets");
    let qp = bth.dest_qp;
    let mut crc_shown = true;
    if p.ext.deth.is_some() && qp <= 1 {
        crc_shown = mad(p.payload, &mut e);
    } else if p.ext.deth.is_some() || starts_send(bth.opcode) {
        ipoib(p.payload, &mut e);
    }
    if crc_shown {
        // tshark reads the ICRC and VCRC big-endian from the wire, where they go least significant
        // byte first (IBA 1 §7.8): it shows the byte-swapped value.
        e.num(
            "infiniband.invariant.crc",
            p.icrc.expect("IBA packet").swap_bytes(),
        );
        e.num("infiniband.variant.crc", p.vcrc.swap_bytes());
    } else {
        e.absent("infiniband.invariant.crc");
    }
    e
}

/// The first (or only) packet of an RC/UC SEND: it starts an IPoIB-CM frame (RFC 4755 §4).
fn starts_send(op: Opcode) -> bool {
    matches!(op.operation(), Operation::SendFirst | Operation::SendOnly)
        && matches!(op.position(), Some(Position::First | Position::Only))
}

/// LRH, GRH, BTH and the extended transport headers (IBA 1 §7.7, §8.3, §9.2-9.3).
fn headers(p: &Packet<'_>, e: &mut Expect) {
    let l = &p.lrh;
    e.num("infiniband.lrh.vl", l.vl);
    e.num("infiniband.lrh.lver", l.lver);
    e.num("infiniband.lrh.sl", l.sl);
    e.num("infiniband.lrh.lnh", u8::from(l.lnh));
    e.num("infiniband.lrh.dlid", l.dlid);
    e.num("infiniband.lrh.pktlen", l.pkt_len);
    e.num("infiniband.lrh.slid", l.slid);
    match &p.grh {
        Some(g) => {
            assert_eq!(l.lnh, Lnh::IbaGlobal);
            e.num("infiniband.grh.ipver", g.ipver);
            e.num("infiniband.grh.tclass", g.tclass);
            e.num("infiniband.grh.flowlabel", g.flow_label);
            e.num("infiniband.grh.paylen", g.paylen);
            e.num("infiniband.grh.nxthdr", g.nxthdr);
            e.num("infiniband.grh.hoplmt", g.hoplmt);
            e.gid("infiniband.grh.sgid", g.sgid);
            e.gid("infiniband.grh.dgid", g.dgid);
        }
        None => e.absent("infiniband.grh.sgid"),
    }
    let b = p.bth.expect("IBA packet");
    e.num("infiniband.bth.opcode", b.opcode.0);
    e.num("infiniband.bth.se", b.se);
    e.num("infiniband.bth.m", b.m);
    e.num("infiniband.bth.padcnt", b.pad_count);
    e.num("infiniband.bth.tver", b.tver);
    e.num("infiniband.bth.p_key", b.pkey);
    e.num("infiniband.bth.destqp", b.dest_qp);
    e.num("infiniband.bth.a", b.ack_req);
    e.num("infiniband.bth.psn", b.psn);
    match &p.ext.deth {
        Some(d) => {
            e.num("infiniband.deth.q_key", d.qkey);
            e.num("infiniband.deth.srcqp", d.src_qp);
        }
        None => e.absent("infiniband.deth.q_key"),
    }
    match &p.ext.reth {
        Some(r) => {
            e.num("infiniband.reth.va", r.va);
            e.num("infiniband.reth.r_key", r.rkey);
            e.num("infiniband.reth.dmalen", r.dma_len);
        }
        None => e.absent("infiniband.reth.va"),
    }
    match &p.ext.aeth {
        Some(a) => {
            e.num("infiniband.aeth.syndrome", u8::from(a.syndrome));
            e.num("infiniband.aeth.msn", a.msn);
        }
        None => e.absent("infiniband.aeth.syndrome"),
    }
}

/// An IPoIB frame: encapsulation header (draft-ietf-ipoib-ip-over-infiniband-06 §6) and the
/// datagram, which tshark reaches through its EtherType-over-IB heuristic.
fn ipoib(payload: &[u8], e: &mut Expect) {
    let f = IpoibFrame::parse(payload).expect("an IPoIB frame");
    e.num("infiniband.rwh.etype", u16::from(f.header.ethertype));
    match f.payload {
        IpoibPayload::Ipv4(d) => ipv4(&d, e),
        IpoibPayload::Ipv6(d) => ipv6(&d, e),
        IpoibPayload::Arp(a) => arp(&a, e),
        IpoibPayload::Invalid { data, .. } => {
            // The first packet of a multi-packet message: the start of the datagram.
            let v = Ipv4Packet::new_unchecked(data);
            e.num("ip.len", v.total_len());
            e.num("ip.proto", u8::from(v.protocol()));
            e.text("ip.src", v.src_addr());
            e.text("ip.dst", v.dst_addr());
            e.num("icmp.type", data[20]);
        }
        other => panic!("unexpected IPoIB payload {other:?}"),
    }
}

fn ipv4(d: &Ipv4Datagram<'_>, e: &mut Expect) {
    let h = &d.header;
    e.num("ip.version", 4u8);
    e.num("ip.hdr_len", (20 + d.options.len()) as u64);
    e.num("ip.len", d.buffer_len() as u64);
    e.num("ip.id", h.ident);
    e.num("ip.flags.df", h.dont_frag);
    e.num("ip.ttl", h.ttl);
    e.num("ip.proto", u8::from(h.protocol));
    e.num("ip.checksum.status", 1u8); // Good
    e.text("ip.src", h.src_addr);
    e.text("ip.dst", h.dst_addr);
    match (&d.payload, h.protocol) {
        (IpPayload::Icmpv4(m), _) => {
            e.num("icmp.type", u8::from(m.msg_type));
            e.num("icmp.code", m.code);
            e.num("icmp.checksum.status", 1u8);
            if let Some((id, seq)) = m.echo_ident_seq() {
                e.num("icmp.ident", id);
                e.num("icmp.seq", seq);
            }
        }
        (IpPayload::Udp(u), IpProtocol::Udp) => {
            e.num("udp.srcport", u.src_port);
            e.num("udp.dstport", u.dst_port);
            e.num("udp.length", u.buffer_len() as u64);
            let (src, dst) = (h.src_addr.into(), h.dst_addr.into());
            e.num(
                "udp.checksum",
                u.checksum(src, dst).expect("IPv4 addresses"),
            );
            e.num("udp.checksum.status", 1u8);
        }
        other => panic!("unexpected IPv4 payload {other:?}"),
    }
}

fn ipv6(d: &Ipv6Datagram<'_>, e: &mut Expect) {
    let h = &d.header;
    e.num("ipv6.plen", (d.buffer_len() - 40) as u64);
    e.num("ipv6.nxt", u8::from(h.next_header));
    e.num("ipv6.hlim", h.hop_limit);
    e.text("ipv6.src", h.src_addr);
    e.text("ipv6.dst", h.dst_addr);
    let IpPayload::Icmpv6(m) = d.payload else {
        panic!("unexpected IPv6 payload {:?}", d.payload)
    };
    e.num("icmpv6.type", u8::from(m.msg_type));
    e.num("icmpv6.code", m.code);
    e.num("icmpv6.checksum.status", 1u8);
    if let Some((id, seq)) = m.echo_ident_seq() {
        e.num("icmpv6.echo.identifier", id);
        e.num("icmpv6.echo.sequence_number", seq);
    }
    if !m.is_nd() {
        return;
    }
    let nd = NdRepr::parse_message(&m).expect("ND samples parse");
    match nd.message {
        NdMessage::NeighborSolicit { target } => e.text("icmpv6.nd.ns.target_address", target),
        NdMessage::NeighborAdvert { flags, target } => {
            e.text("icmpv6.nd.na.target_address", target);
            e.num("icmpv6.nd.na.flag", u32::from(flags) << 24);
        }
        NdMessage::RouterAdvert {
            cur_hop_limit,
            router_lifetime,
            ..
        } => {
            e.num("icmpv6.nd.ra.cur_hop_limit", cur_hop_limit);
            e.num("icmpv6.nd.ra.router_lifetime", router_lifetime);
        }
        other => panic!("unexpected ND message {other:?}"),
    }
    nd_options(&nd, e);
}

/// ND options: type and length (in 8-byte units) of each; the IPoIB link-layer address option
/// is 2 pad bytes then the 20-byte address (draft-ietf-ipoib-ip-over-infiniband-06 §9.3), which
/// tshark shows whole as the link-layer address.
fn nd_options(nd: &NdRepr<'_>, e: &mut Expect) {
    let mut types = Vec::new();
    let mut lens = Vec::new();
    for o in nd.options() {
        let o = o.expect("options parse");
        types.push(u64::from(u8::from(o.option_type())));
        lens.push((o.buffer_len() / 8) as u64);
        match o {
            NdOptionRepr::SourceLinkLayerAddr(a) | NdOptionRepr::TargetLinkLayerAddr(a) => {
                let mut b = vec![0u8, 0];
                b.extend_from_slice(&a.to_bytes());
                e.bytes("icmpv6.opt.linkaddr", &b);
            }
            NdOptionRepr::Mtu(m) => e.num("icmpv6.opt.mtu", m),
            NdOptionRepr::PrefixInformation(p) => {
                e.text("icmpv6.opt.prefix", p.prefix);
                e.num("icmpv6.opt.prefix.length", p.prefix_len);
            }
            // The samples are read as RFC 4391's (`NdRepr::parse_message`): no legacy option.
            NdOptionRepr::Other { .. } | NdOptionRepr::LegacyLinkLayerAddr(_) => {}
        }
    }
    e.fields.push(("icmpv6.opt.type", Want::Nums(types)));
    e.fields.push(("icmpv6.opt.length", Want::Nums(lens)));
}

/// IPoIB ARP (draft-ietf-ipoib-ip-over-infiniband-06 §9.2): hardware type 32, 20-byte addresses.
fn arp(a: &ArpRepr, e: &mut Expect) {
    e.num("arp.hw.type", 32u16);
    e.num("arp.proto.type", 0x0800u16);
    e.num("arp.hw.size", 20u8);
    e.num("arp.proto.size", 4u8);
    e.num("arp.opcode", u16::from(a.operation));
    e.bytes("arp.src.hw", &a.sender_hw.to_bytes());
    e.text("arp.src.proto_ipv4", a.sender_ip);
    e.bytes("arp.dst.hw", &a.target_hw.to_bytes());
    e.text("arp.dst.proto_ipv4", a.target_ip);
}

/// A MAD on QP0/QP1. Returns whether tshark shows the packet's CRCs (see [`sa`]).
fn mad(data: &[u8], e: &mut Expect) -> bool {
    let h = MadHeaderRepr::parse_bytes(data).expect("MAD header");
    e.num("infiniband.mad.baseversion", h.base_version);
    e.num("infiniband.mad.mgmtclass", u8::from(h.mgmt_class));
    e.num("infiniband.mad.classversion", h.class_version);
    e.num("infiniband.mad.method", u8::from(h.method));
    e.num("infiniband.mad.status", h.status.0);
    e.num("infiniband.mad.classspecific", h.class_specific);
    e.num("infiniband.mad.transactionid", h.transaction_id);
    e.num("infiniband.mad.attributeid", h.attribute_id);
    e.num("infiniband.mad.attributemodifier", h.attribute_modifier);
    match h.mgmt_class {
        MgmtClass::SubnLid | MgmtClass::SubnDirectedRoute => {
            smp(&SmpMadRepr::parse(data).expect("SMP"), e);
            true
        }
        MgmtClass::SubnAdm => sa(&SaMadRepr::parse(data).expect("SA MAD"), e),
        MgmtClass::ComMgt => {
            let m = CmMessage::parse(h.attribute_id, &data[MAD_HEADER_LEN..]).expect("CM");
            cm(&m, e);
            true
        }
        MgmtClass::Perf => {
            // tshark 4.0 shows no ICRC/VCRC after a PerfMgt MAD (see main.rs).
            sma::perf(&h, data, e);
            false
        }
        other => panic!("unexpected class {other:?}"),
    }
}

/// The SMP fields after the common header (IBA 1 §14.2.1) and the attribute. tshark 4.0 shows
/// the M_Key of both forms as `smplid.mkey`; its `smpdirected.d` does not read the D bit (it is
/// part of `smpstatus`), so it is not compared. The data of a SubnGet carries no attribute value:
/// only responses are compared field by field.
fn smp(m: &SmpMadRepr, e: &mut Expect) {
    e.num("infiniband.smplid.mkey", m.mkey);
    match &m.route {
        SmpRoute::Lid => e.absent("infiniband.smpdirected.hopcount"),
        SmpRoute::Directed(r) => {
            e.num("infiniband.smpdirected.smpstatus", m.header.status.0);
            e.num(
                "infiniband.smpdirected.hoppointer",
                m.hop_pointer().expect("DR"),
            );
            e.num(
                "infiniband.smpdirected.hopcount",
                m.hop_count().expect("DR"),
            );
            e.num("infiniband.smpdirected.drslid", r.dr_slid);
            e.num("infiniband.smpdirected.drdlid", r.dr_dlid);
            e.bytes("infiniband.smpdirected.initialpath", &r.initial_path);
            e.bytes("infiniband.smpdirected.returnpath", &r.return_path);
        }
    }
    match &m.attribute {
        SmpAttribute::NodeInfo(n) => node_info(n, e),
        SmpAttribute::PortInfo(p) => port_info(p, e),
        SmpAttribute::NodeDescription(n) => sma::node_description(n, e),
        SmpAttribute::SmInfo(s) => sma::sm_info(s, e),
        SmpAttribute::PKeyTable(p) => sma::pkey_table(p, e),
        SmpAttribute::SlToVlMappingTable(s) => sma::sl_to_vl(s, e),
        SmpAttribute::VlArbitrationTable(v) => sma::vl_arb(v, e),
        SmpAttribute::Notice(n) => sma::notice(n, e),
        SmpAttribute::Raw(_) => {}
        other => panic!("unexpected SMP attribute {other:?}"),
    }
}

/// NodeInfo (IBA 1 §14.2.5.3), every field.
fn node_info(n: &NodeInfoRepr, e: &mut Expect) {
    e.num("infiniband.nodeinfo.baseversion", n.base_version);
    e.num("infiniband.nodeinfo.classversion", n.class_version);
    e.num("infiniband.nodeinfo.nodetype", u8::from(n.node_type));
    e.num("infiniband.nodeinfo.numports", n.num_ports);
    e.num("infiniband.nodeinfo.systemimageguid", n.system_image_guid.0);
    e.num("infiniband.nodeinfo.nodeguid", n.node_guid.0);
    e.num("infiniband.nodeinfo.portguid", n.port_guid.0);
    e.num("infiniband.nodeinfo.partitioncap", n.partition_cap);
    e.num("infiniband.nodeinfo.deviceid", n.device_id);
    e.num("infiniband.nodeinfo.revision", n.revision);
    e.num("infiniband.nodeinfo.localportnum", n.local_port_num);
    e.num("infiniband.nodeinfo.vendorid", n.vendor_id);
}

/// PortInfo (IBA 1 §14.2.5.6): every field tshark 4.0 knows (it stops at LinkRoundTripLatency,
/// has no MulticastPKeyTrapSuppressionEnabled, and names GidPrefix `portinfo.guid`).
fn port_info(p: &PortInfoRepr, e: &mut Expect) {
    e.num("infiniband.portinfo.m_key", p.mkey);
    e.num("infiniband.portinfo.guid", p.gid_prefix);
    e.num("infiniband.portinfo.lid", p.lid);
    e.num("infiniband.portinfo.mastersmlid", p.master_sm_lid);
    e.num("infiniband.portinfo.capabilitymask", p.capability_mask);
    e.num("infiniband.portinfo.diagcode", p.diag_code);
    e.num("infiniband.portinfo.m_keyleaseperiod", p.mkey_lease_period);
    e.num("infiniband.portinfo.localportnum", p.local_port_num);
    e.num("infiniband.portinfo.linkwidthenabled", p.link_width_enabled);
    e.num(
        "infiniband.portinfo.linkwidthsupported",
        p.link_width_supported,
    );
    e.num("infiniband.portinfo.linkwidthactive", p.link_width_active);
    e.num(
        "infiniband.portinfo.linkspeedsupported",
        p.link_speed_supported,
    );
    e.num("infiniband.portinfo.portstate", u8::from(p.port_state));
    e.num(
        "infiniband.portinfo.portphysicalstate",
        u8::from(p.port_phys_state),
    );
    e.num(
        "infiniband.portinfo.linkdowndefaultstate",
        p.link_down_default_state,
    );
    e.num("infiniband.portinfo.m_keyprotectbits", p.mkey_protect_bits);
    e.num("infiniband.portinfo.lmc", p.lmc);
    e.num("infiniband.portinfo.linkspeedactive", p.link_speed_active);
    e.num("infiniband.portinfo.linkspeedenabled", p.link_speed_enabled);
    e.num("infiniband.portinfo.neighbormtu", u8::from(p.neighbor_mtu));
    e.num("infiniband.portinfo.mastersmsl", p.master_sm_sl);
    e.num("infiniband.portinfo.vlcap", p.vl_cap);
    e.num("infiniband.portinfo.inittype", p.init_type);
    e.num("infiniband.portinfo.vlhighlimit", p.vl_high_limit);
    e.num(
        "infiniband.portinfo.vlarbitrationhighcap",
        p.vl_arbitration_high_cap,
    );
    e.num(
        "infiniband.portinfo.vlarbitrationlowcap",
        p.vl_arbitration_low_cap,
    );
    e.num("infiniband.portinfo.inittypereply", p.init_type_reply);
    e.num("infiniband.portinfo.mtucap", u8::from(p.mtu_cap));
    e.num("infiniband.portinfo.vlstallcount", p.vl_stall_count);
    e.num("infiniband.portinfo.hoqlife", p.hoq_life);
    e.num("infiniband.portinfo.operationalvls", p.operational_vls);
    e.num(
        "infiniband.portinfo.partitionenforcementinbound",
        p.partition_enforcement_inbound,
    );
    e.num(
        "infiniband.portinfo.partitionenforcementoutbound",
        p.partition_enforcement_outbound,
    );
    e.num("infiniband.portinfo.filterrawinbound", p.filter_raw_inbound);
    e.num(
        "infiniband.portinfo.filterrawoutbound",
        p.filter_raw_outbound,
    );
    e.num("infiniband.portinfo.m_keyviolations", p.mkey_violations);
    e.num("infiniband.portinfo.p_keyviolations", p.pkey_violations);
    e.num("infiniband.portinfo.q_keyviolations", p.qkey_violations);
    e.num("infiniband.portinfo.guidcap", p.guid_cap);
    e.num("infiniband.portinfo.clientreregister", p.client_reregister);
    e.num("infiniband.portinfo.subnettimeout", p.subnet_timeout);
    e.num("infiniband.portinfo.resptimevalue", p.resp_time_value);
    e.num("infiniband.portinfo.localphyerrors", p.local_phy_errors);
    e.num("infiniband.portinfo.overrunerrors", p.overrun_errors);
    e.num("infiniband.portinfo.maxcredithint", p.max_credit_hint);
    e.num(
        "infiniband.portinfo.linkroundtriplatency",
        p.link_round_trip_latency,
    );
}

/// RMPP and SA headers and the attribute (IBA 1 §13.6.2, §15.2.1). Returns false for
/// MCMemberRecord MADs, whose CRCs tshark 4.0 does not show: its `parse_RID` consumes the MGID
/// and PortGID as the record identifier and moves the offset 32 bytes on, then
/// `parse_SUBA_Attribute` adds the whole 200-byte SA data area, so the offset ends 32 bytes past
/// the MAD and `dissect_infiniband_common` finds no 6 CRC bytes left to show.
fn sa(m: &SaMadRepr, e: &mut Expect) -> bool {
    e.num("infiniband.rmpp.rmppversion", m.rmpp.version);
    e.num("infiniband.rmpp.rmpptype", u8::from(m.rmpp.rmpp_type));
    e.num("infiniband.rmpp.rmppflags", m.rmpp.flags.0);
    if m.rmpp.is_active() {
        e.num("infiniband.rmpp.payloadlength", m.rmpp.payload_length());
    }
    e.num("infiniband.sa.smkey", m.sa.sm_key);
    e.num("infiniband.sa.attributeoffset", m.sa.attribute_offset);
    e.num("infiniband.sa.componentmask", m.sa.component_mask);
    match &m.attribute {
        SaAttribute::McMemberRecord(r) => mcmember(r, e),
        // tshark 4.0 dissects only the first record of a table (`parse_SUBA_Attribute` parses
        // one attribute at the start of the SA data).
        SaAttribute::Raw(_) if m.is_table() => {
            let first = m.records().next().expect("a record").expect("it parses");
            let SaAttribute::McMemberRecord(r) = first else {
                panic!("unexpected table {first:?}")
            };
            mcmember(&r, e);
        }
        SaAttribute::PathRecord(r) => path(r, e),
        SaAttribute::InformInfo(i) => {
            e.gid("infiniband.informinfo.gid", i.gid);
            e.num("infiniband.informinfo.lidrangebegin", i.lid_range_begin);
            e.num("infiniband.informinfo.lidrangeend", i.lid_range_end);
            e.num("infiniband.informinfo.isgeneric", i.is_generic);
            e.num("infiniband.informinfo.subscribe", i.subscribe);
            e.num("infiniband.informinfo.type", i.notice_type);
            e.num(
                "infiniband.informinfo.trapnumberdeviceid",
                i.trap_number_or_device_id,
            );
            e.num("infiniband.informinfo.qpn", i.qpn);
            e.num("infiniband.informinfo.resptimevalue", i.resp_time_value);
            e.num(
                "infiniband.informinfo.producertypevendorid",
                i.producer_type_or_vendor_id,
            );
        }
        SaAttribute::Notice(n) => {
            // tshark 4.0 does not show the IssuerGID (bytes 64-79).
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
            e.num("infiniband.notice.noticetoggle", n.notice_toggle);
            e.num("infiniband.notice.noticecount", n.notice_count);
            e.gid("infiniband.trap.gidaddr", n.trap_gid().expect("a GID trap"));
        }
        // tshark 4.0 dissects an SA ClassPortInfo as a PortInfo: nothing to compare.
        SaAttribute::ClassPortInfo(_) => {}
        other => panic!("unexpected attribute {other:?}"),
    }
    !matches!(m.attribute, SaAttribute::McMemberRecord(_)) && !m.is_table()
}

fn mcmember(r: &McMemberRecordRepr, e: &mut Expect) {
    e.gid("infiniband.mcmemberrecord.mgid", r.mgid);
    e.gid("infiniband.mcmemberrecord.portgid", r.port_gid);
    e.num("infiniband.mcmemberrecord.q_key", r.qkey);
    e.num("infiniband.mcmemberrecord.mlid", r.mlid);
    e.num(
        "infiniband.mcmemberrecord.mtuselector",
        u8::from(r.mtu_selector),
    );
    e.num("infiniband.mcmemberrecord.mtu", u8::from(r.mtu));
    e.num("infiniband.mcmemberrecord.tclass", r.tclass);
    e.num("infiniband.mcmemberrecord.p_key", r.pkey);
    e.num(
        "infiniband.mcmemberrecord.rateselector",
        u8::from(r.rate_selector),
    );
    e.num("infiniband.mcmemberrecord.rate", u8::from(r.rate));
    e.num(
        "infiniband.mcmemberrecord.packetlifetimeselector",
        u8::from(r.packet_life_time_selector),
    );
    e.num(
        "infiniband.mcmemberrecord.packetlifetime",
        r.packet_life_time,
    );
    e.num("infiniband.mcmemberrecord.sl", r.sl);
    e.num("infiniband.mcmemberrecord.flowlabel", r.flow_label);
    e.num("infiniband.mcmemberrecord.hoplimit", r.hop_limit);
    e.num("infiniband.mcmemberrecord.scope", r.scope);
    e.num("infiniband.mcmemberrecord.joinstate", r.join_state.0);
    e.num("infiniband.mcmemberrecord.proxyjoin", r.proxy_join);
}

/// PathRecord; tshark 4.0 shows bytes 0-7 (ServiceID) as reserved, so it is not compared.
fn path(r: &PathRecordRepr, e: &mut Expect) {
    e.gid("infiniband.pathrecord.dgid", r.dgid);
    e.gid("infiniband.pathrecord.sgid", r.sgid);
    e.num("infiniband.pathrecord.dlid", r.dlid);
    e.num("infiniband.pathrecord.slid", r.slid);
    e.num("infiniband.pathrecord.rawtraffic", r.raw_traffic);
    e.num("infiniband.pathrecord.flowlabel", r.flow_label);
    e.num("infiniband.pathrecord.hoplimit", r.hop_limit);
    e.num("infiniband.pathrecord.tclass", r.tclass);
    e.num("infiniband.pathrecord.reversible", r.reversible);
    e.num("infiniband.pathrecord.numbpath", r.numb_path);
    e.num("infiniband.pathrecord.p_key", r.pkey);
    e.num("infiniband.pathrecord.sl", r.sl);
    e.num(
        "infiniband.pathrecord.mtuselector",
        u8::from(r.mtu_selector),
    );
    e.num("infiniband.pathrecord.mtu", u8::from(r.mtu));
    e.num(
        "infiniband.pathrecord.rateselector",
        u8::from(r.rate_selector),
    );
    e.num("infiniband.pathrecord.rate", u8::from(r.rate));
    e.num(
        "infiniband.pathrecord.packetlifetimeselector",
        u8::from(r.packet_life_time_selector),
    );
    e.num("infiniband.pathrecord.packetlifetime", r.packet_life_time);
    e.num("infiniband.pathrecord.preference", r.preference);
}

/// CM messages (IBA 1 §12.6). tshark 4.0 dissects only REQ, REP, RTU, REJ, DREQ and DREP; of the
/// others it shows the MAD header alone.
fn cm(m: &CmMessage, e: &mut Expect) {
    match m {
        CmMessage::Req(r) => {
            e.num("infiniband.cm.req", r.local_comm_id);
            e.num("infiniband.cm.req.serviceid", r.service_id);
            e.num("infiniband.cm.req.localcaguid", r.local_ca_guid.0);
            e.num("infiniband.cm.req.localqkey", r.local_qkey);
            e.num("infiniband.cm.req.localqpn", r.local_qpn);
            e.num("infiniband.cm.req.responderres", r.responder_resources);
            e.num("infiniband.cm.req.localeecn", r.local_eecn);
            e.num("infiniband.cm.req.initdepth", r.initiator_depth);
            e.num("infiniband.cm.req.remoteeecn", r.remote_eecn);
            e.num(
                "infiniband.cm.req.remoteresptout",
                r.remote_cm_response_timeout,
            );
            e.num(
                "infiniband.cm.req.transpsvctype",
                u8::from(r.transport_service_type),
            );
            e.num("infiniband.cm.req.e2eflowctrl", r.end_to_end_flow_control);
            e.num("infiniband.cm.req.startpsn", r.starting_psn);
            e.num(
                "infiniband.cm.req.localresptout",
                r.local_cm_response_timeout,
            );
            e.num("infiniband.cm.req.retrcount", r.retry_count);
            e.num("infiniband.cm.req.pkey", r.partition_key);
            e.num(
                "infiniband.cm.req.pppmtu",
                u8::from(r.path_packet_payload_mtu),
            );
            e.num("infiniband.cm.req.rdcexist", r.rdc_exists);
            e.num("infiniband.cm.req.rnrretrcount", r.rnr_retry_count);
            e.num("infiniband.cm.req.maxcmretr", r.max_cm_retries);
            e.num("infiniband.cm.req.srq", r.srq);
            e.num("infiniband.cm.req.ext_transport", r.extended_transport_type);
            // Not compared: primary/alternate flow label and packet rate, which tshark 4.0 reads
            // from other bits than IBA 1 Table 106 and Linux ibta_vol1_c12.h place them.
            let p = &r.primary_path;
            e.num("infiniband.cm.req.prim_locallid", p.local_port_lid);
            e.num("infiniband.cm.req.prim_remotelid", p.remote_port_lid);
            e.gid("infiniband.cm.req.prim_localgid", p.local_port_gid);
            e.gid("infiniband.cm.req.prim_remotegid", p.remote_port_gid);
            e.num("infiniband.cm.req.prim_tfcclass", p.traffic_class);
            e.num("infiniband.cm.req.prim_hoplim", p.hop_limit);
            e.num("infiniband.cm.req.prim_sl", p.sl);
            e.num("infiniband.cm.req.prim_subnetlocal", p.subnet_local);
            e.num("infiniband.cm.req.prim_localacktout", p.local_ack_timeout);
            e.num(
                "infiniband.cm.req.alt_locallid",
                r.alternate_path.local_port_lid,
            );
            e.num(
                "infiniband.cm.req.alt_remotelid",
                r.alternate_path.remote_port_lid,
            );
            match classify(r.service_id) {
                ServiceKind::IpCm { protocol, port } => {
                    e.num("infiniband.cm.req.serviceid.protocol", protocol);
                    e.num("infiniband.cm.req.serviceid.dport", port);
                    ip_cm(&r.private_data, e);
                }
                _ => e.bytes("infiniband.cm.req.private", &r.private_data),
            }
        }
        CmMessage::Rep(r) => {
            e.num("infiniband.cm.rep", r.local_comm_id);
            e.num("infiniband.cm.rep.remotecommid", r.remote_comm_id);
            e.num("infiniband.cm.rep.localqkey", r.local_qkey);
            e.num("infiniband.cm.rep.localqpn", r.local_qpn);
            e.num("infiniband.cm.rep.localeecn", r.local_ee_context_number);
            e.num("infiniband.cm.rep.startpsn", r.starting_psn);
            e.num("infiniband.cm.rep.respres", r.responder_resources);
            e.num("infiniband.cm.rep.initdepth", r.initiator_depth);
            e.num("infiniband.cm.rep.tgtackdelay", r.target_ack_delay);
            e.num("infiniband.cm.rep.failoveracc", r.failover_accepted);
            e.num("infiniband.cm.rep.e2eflowctrl", r.end_to_end_flow_control);
            e.num("infiniband.cm.rep.rnrretrcount", r.rnr_retry_count);
            e.num("infiniband.cm.rep.srq", r.srq);
            e.num("infiniband.cm.rep.localcaguid", r.local_ca_guid.0);
            e.bytes("infiniband.cm.rep.private", &r.private_data);
        }
        CmMessage::Rtu(r) => {
            e.num("infiniband.cm.rtu.localcommid", r.local_comm_id);
            e.num("infiniband.cm.rtu.remotecommid", r.remote_comm_id);
            e.bytes("infiniband.cm.rtu.private", &r.private_data);
        }
        CmMessage::Rej(r) => {
            e.num("infiniband.cm.rej.localcommid", r.local_comm_id);
            e.num("infiniband.cm.rej.remotecommid", r.remote_comm_id);
            e.num("infiniband.cm.rej.msgrej", u8::from(r.message_rejected));
            e.num("infiniband.cm.rej.rejinfolen", r.reject_info_length);
            e.num("infiniband.cm.rej.reason", u16::from(r.reason));
            e.bytes("infiniband.cm.rej.ari", &r.ari);
            e.bytes("infiniband.cm.rej.private", &r.private_data);
        }
        CmMessage::Dreq(r) => {
            e.num("infiniband.cm.dreq.localcommid", r.local_comm_id);
            e.num("infiniband.cm.dreq.remotecommid", r.remote_comm_id);
            e.num("infiniband.cm.req.remoteqpneecn", r.remote_qpn_eecn);
            e.bytes("infiniband.cm.dreq.private", &r.private_data);
        }
        CmMessage::Drep(r) => {
            e.num("infiniband.cm.drsp.localcommid", r.local_comm_id);
            e.num("infiniband.cm.drsp.remotecommid", r.remote_comm_id);
            e.bytes("infiniband.cm.drsp.private", &r.private_data);
        }
        CmMessage::Mra(_)
        | CmMessage::SidrReq(_)
        | CmMessage::SidrRep(_)
        | CmMessage::Lap(_)
        | CmMessage::Apr(_) => {}
    }
}

/// The Annex A11 header (CA11-1, CA11-5), which tshark shows when the service ID has the
/// 0x0000000001 prefix; it shows the 56 consumer bytes undecoded.
fn ip_cm(pd: &[u8], e: &mut Expect) {
    let h = IpCmReqRepr::parse(pd).expect("A11 header");
    e.num("infiniband.cm.req.ip_cm.majv", h.major_version);
    e.num("infiniband.cm.req.ip_cm.minv", h.minor_version);
    e.num("infiniband.cm.req.ip_cm.ipv", h.addrs.version());
    e.num("infiniband.cm.req.ip_cm.sport", h.source_port);
    match h.addrs {
        IpPair::V4 { src, dst } => {
            e.text("infiniband.cm.req.ip_cm.sip4", src);
            e.text("infiniband.cm.req.ip_cm.dip4", dst);
        }
        IpPair::V6 { src, dst } => {
            e.text("infiniband.cm.req.ip_cm.sip6", src);
            e.text("infiniband.cm.req.ip_cm.dip6", dst);
        }
    }
    e.bytes("infiniband.cm.req.ip_cm.private", h.consumer_private_data);
    e.absent("infiniband.cm.req.private");
}

//! Which field of `ipoib decode --json` is which field of tshark (4.0), for the fields both show.
//!
//! Each group is a decode object, a tshark prefix and its fields written `name[=tshark][:kind]`:
//! `name` is the decode key under the group, the tshark field is the prefix followed by `tshark`
//! (by default `name` without underscores; `.` alone is the prefix without its last dot), and
//! `kind` says how values compare: `n` numbers (the default: decimal or `0x` hex, booleans as
//! 1/0), `t` text, `g` GIDs and IPv6 addresses, `b` bytes, `c` a CRC (tshark shows the wire bytes
//! read big-endian, IBA 1 §7.8 sends them least significant byte first), `s` a time stamp
//! (nanoseconds against tshark's seconds), `p` a directed-route path (ours, up to the hop count,
//! starts tshark's 64 bytes), `j` a table tshark shows
//! entry by entry (its entries, in hex and in order, must start ours: tshark 4.0 shows only the
//! first 16 of a MulticastForwardingTable block's 32 PortMasks, IBA 1 §14.2.5.12).
//!
//! Left out, as tshark shows them differently (crates/wire/tests/tshark/main.rs lists its quirks):
//! a CM REQ path's flow label and packet rate, a PathRecord's ServiceID, PortInfo past
//! LinkRoundTripLatency, records past the first of a GetTableResp. Derived decode keys
//! (`smp.status_d`, `arp.src_hw`, `arp.dst_hw`) are made in `decode_tshark.rs`.

/// `(decode group, tshark prefix, fields)`; a group of `""` names top-level decode keys.
pub const GROUPS: &[(&str, &str, &str)] = &[
    (
        "",
        "",
        "ts_ns=frame.time_epoch:s len=frame.len icrc=infiniband.invariant.crc:c vcrc=infiniband.variant.crc:c",
    ),
    ("lrh", "infiniband.lrh.", "vl lver sl lnh dlid pktlen slid"),
    (
        "grh",
        "infiniband.grh.",
        "ipver tclass flowlabel paylen nxthdr hoplmt sgid:g dgid:g",
    ),
    (
        "bth",
        "infiniband.bth.",
        "opcode se m padcnt tver p_key=p_key destqp a psn",
    ),
    ("deth", "infiniband.deth.", "q_key=q_key srcqp"),
    ("reth", "infiniband.reth.", "va r_key=r_key dmalen"),
    (
        "aeth",
        "infiniband.aeth.",
        "syndrome msn credit_count=syndrome.credit_count timer=syndrome.timer",
    ),
    (
        "mad",
        "infiniband.mad.",
        "base_version mgmt_class class_version method status class_specific transaction_id \
         attribute_id attribute_modifier",
    ),
    (
        "smp",
        "infiniband.",
        "status_d=smpdirected.smpstatus hop_pointer=smpdirected.hoppointer \
         hop_count=smpdirected.hopcount m_key=smplid.mkey dr_slid=smpdirected.drslid \
         dr_dlid=smpdirected.drdlid initial_path=smpdirected.initialpath:p \
         return_path=smpdirected.returnpath:p",
    ),
    (
        "rmpp",
        "infiniband.rmpp.",
        "version=rmppversion type=rmpptype flags=rmppflags resp_time=rresptime \
         status=rmppstatus data1 data2 segment_number payload_length",
    ),
    (
        "sa",
        "infiniband.sa.",
        "sm_key attribute_offset component_mask",
    ),
    (
        "node_info",
        "infiniband.nodeinfo.",
        "base_version class_version node_type num_ports system_image_guid node_guid port_guid \
         partition_cap device_id revision local_port_num vendor_id",
    ),
    (
        "node_description",
        "infiniband.nodedescription.",
        "node_string:t",
    ),
    ("linear_forwarding_table", "infiniband.linearforwardingtable.", "ports=port:j"),
    (
        "multicast_forwarding_table",
        "infiniband.multicastforwardingtable.",
        "port_masks=portmask:j",
    ),
    (
        "p_key_table",
        "infiniband.p_keytable.",
        "members=membershiptype:j bases=p_keybase:j",
    ),
    (
        "switch_info",
        "infiniband.switchinfo.",
        "linear_fdb_cap random_fdb_cap multicast_fdb_cap linear_fdb_top default_port \
         default_multicast_primary_port default_multicast_not_primary_port life_time_value \
         port_state_change optimized_sl_to_vl_mapping_programming lids_per_port \
         partition_enforcement_cap inbound_enforcement_cap outbound_enforcement_cap \
         filter_raw_inbound_cap filter_raw_outbound_cap enhanced_port_zero",
    ),
    (
        "port_info",
        "infiniband.portinfo.",
        "m_key=m_key gid_prefix=guid lid master_sm_lid capability_mask diag_code \
         m_key_lease_period=m_keyleaseperiod local_port_num link_width_enabled \
         link_width_supported link_width_active link_speed_supported port_state \
         port_phys_state=portphysicalstate link_down_default_state \
         m_key_protect_bits=m_keyprotectbits lmc link_speed_active link_speed_enabled \
         neighbor_mtu master_sm_sl vl_cap init_type vl_high_limit vl_arbitration_high_cap \
         vl_arbitration_low_cap init_type_reply mtu_cap vl_stall_count hoq_life operational_vls \
         partition_enforcement_inbound partition_enforcement_outbound filter_raw_inbound \
         filter_raw_outbound m_key_violations=m_keyviolations p_key_violations=p_keyviolations \
         q_key_violations=q_keyviolations guid_cap client_reregister subnet_timeout \
         resp_time_value local_phy_errors overrun_errors max_credit_hint link_round_trip_latency",
    ),
    (
        "sm_info",
        "infiniband.sminfo.",
        "guid sm_key=sm_key priority sm_state act_count",
    ),
    (
        "class_port_info",
        "infiniband.classportinfo.",
        "base_version class_version capability_mask capability_mask2 resp_time_value \
         redirect_gid:g redirect_tc redirect_sl redirect_fl redirect_lid redirect_p_key \
         redirect_qp redirect_q_key trap_gid:g trap_tc trap_sl trap_fl trap_lid trap_p_key \
         trap_qp trap_q_key",
    ),
    (
        "inform_info",
        "infiniband.informinfo.",
        "gid:g lid_range_begin lid_range_end is_generic subscribe type \
         trap_number=trapnumberdeviceid qpn resp_time_value producer_type=producertypevendorid",
    ),
    (
        "notice",
        "infiniband.",
        "is_generic=notice.isgeneric type=notice.type producer_type=notice.producertypevendorid \
         trap_number=notice.trapnumberdeviceid issuer_lid=notice.issuerlid \
         notice_toggle=notice.noticetoggle notice_count=notice.noticecount \
         lid_addr=trap.lidaddr gid=trap.gidaddr:g lid1=trap.lidaddr1 lid2=trap.lidaddr2 \
         gid1=trap.gidaddr1:g gid2=trap.gidaddr2:g key=trap.key m_key=trap.mkey qp1=trap.qp1 \
         qp2=trap.qp2 sl=trap.sl method=trap.method attribute_id=trap.attributeid \
         attribute_modifier=trap.attributemodifier dr_slid=trap.drslid \
         dr_hop_count=trap.drhopcount dr_notice=trap.drnotice \
         dr_path_truncated=trap.drpathtruncated dr_return_path=trap.drnoticereturnpath:b",
    ),
    (
        "port_counters",
        "infiniband.portcounters.",
        "port_select counter_select symbol_error_counter link_error_recovery_counter \
         link_downed_counter port_rcv_errors port_rcv_remote_physical_errors \
         port_rcv_switch_relay_errors port_xmit_discards port_xmit_constraint_errors \
         port_rcv_constraint_errors local_link_integrity_errors excessive_buffer_overrun_errors \
         vl15_dropped port_xmit_data port_rcv_data port_xmit_pkts port_rcv_pkts",
    ),
    (
        "port_counters_ext",
        "infiniband.portcounters_ext.",
        "port_select counter_select port_xmit_data port_rcv_data port_xmit_pkts port_rcv_pkts \
         port_unicast_xmit_pkts port_unicast_rcv_pkts port_multicast_xmit_pkts \
         port_multicast_rcv_pkts",
    ),
    (
        "mc_member_record",
        "infiniband.mcmemberrecord.",
        "mgid:g port_gid:g q_key=q_key mlid mtu_selector mtu tclass p_key=p_key rate_selector rate \
         packet_life_time_selector packet_life_time sl flow_label hop_limit scope join_state \
         proxy_join",
    ),
    (
        "path_record",
        "infiniband.pathrecord.",
        "dgid:g sgid:g dlid slid raw_traffic flow_label hop_limit tclass reversible numb_path \
         p_key=p_key sl mtu_selector mtu rate_selector rate packet_life_time_selector packet_life_time \
         preference",
    ),
    ("ipoib", "infiniband.rwh.", "type=etype"),
    (
        "arp",
        "arp.",
        "hw_type=hw.type proto_type=proto.type hw_size=hw.size proto_size=proto.size opcode \
         src_hw=src.hw:b src_proto_ipv4=src.proto_ipv4:t dst_hw=dst.hw:b \
         dst_proto_ipv4=dst.proto_ipv4:t",
    ),
    (
        "ip",
        "ip.",
        "version hdr_len=hdr_len dscp=dsfield.dscp ecn=dsfield.ecn len id flags_df=flags.df \
         flags_mf=flags.mf frag_offset=frag_offset ttl proto checksum src:t dst:t",
    ),
    (
        "ipv6",
        "ipv6.",
        "version tclass flow plen nxt hlim src:g dst:g",
    ),
    ("icmp", "icmp.", "type code ident seq"),
    (
        "icmpv6",
        "icmpv6.",
        "type code echo_identifier=echo.identifier echo_sequence_number=echo.sequence_number \
         flag_r=nd.na.flag.r flag_s=nd.na.flag.s flag_o=nd.na.flag.o \
         target_address=nd.ns.target_address:g target_address=nd.na.target_address:g \
         cur_hop_limit=nd.ra.cur_hop_limit flag_m=nd.ra.flag.m flag_o=nd.ra.flag.o \
         router_lifetime=nd.ra.router_lifetime reachable_time=nd.ra.reachable_time \
         retrans_timer=nd.ra.retrans_timer option_0.type=opt.type option_0.length=opt.length \
         option_0.lla=opt.linkaddr:b option_1.type=opt.type option_1.length=opt.length \
         option_1.mtu=opt.mtu option_2.type=opt.type option_2.length=opt.length \
         option_2.prefix_len=opt.prefix.length option_2.flag_l=opt.prefix.flag.l \
         option_2.flag_a=opt.prefix.flag.a option_2.valid_lifetime=opt.prefix.valid_lifetime \
         option_2.preferred_lifetime=opt.prefix.preferred_lifetime option_2.prefix=opt.prefix:g",
    ),
    (
        "udp",
        "udp.",
        "src_port=srcport dst_port=dstport length checksum",
    ),
];

/// The CM message types tshark dissects (IBA 1 §12.6, Table 98), by their tshark name.
pub const CM_TYPES: &[(u64, &str)] = &[
    (0x10, "req"),
    (0x12, "rej"),
    (0x13, "rep"),
    (0x14, "rtu"),
    (0x15, "dreq"),
    (0x16, "drsp"),
];

/// CM fields, under decode's `cm` and tshark's `infiniband.cm.<type>.`, by message type.
pub const CM_FIELDS: &[(&str, &str)] = &[
    (
        "req",
        "local_comm_id=. service_id=serviceid local_ca_guid local_q_key local_qpn \
         responder_resources=responderres local_eecn initiator_depth=initdepth remote_eecn \
         remote_cm_response_timeout=remoteresptout transport_service_type=transpsvctype \
         end_to_end_flow_control=e2eflowctrl starting_psn=startpsn \
         local_cm_response_timeout=localresptout retry_count=retrcount partition_key=pkey \
         path_packet_payload_mtu=pppmtu rdc_exists=rdcexist rnr_retry_count=rnrretrcount max_cm_retries=maxcmretr \
         srq extended_transport_type=ext_transport \
         primary_path.local_port_lid=prim_locallid primary_path.remote_port_lid=prim_remotelid \
         primary_path.local_port_gid=prim_localgid:g primary_path.remote_port_gid=prim_remotegid:g \
         primary_path.traffic_class=prim_tfcclass primary_path.hop_limit=prim_hoplim \
         primary_path.sl=prim_sl primary_path.subnet_local=prim_subnetlocal \
         primary_path.local_ack_timeout=prim_localacktout \
         alternate_path.local_port_lid=alt_locallid alternate_path.remote_port_lid=alt_remotelid \
         alternate_path.local_port_gid=alt_localgid:g alternate_path.remote_port_gid=alt_remotegid:g \
         alternate_path.traffic_class=alt_tfcclass alternate_path.hop_limit=alt_hoplim \
         alternate_path.sl=alt_sl alternate_path.subnet_local=alt_subnetlocal \
         alternate_path.local_ack_timeout=alt_localacktout private_data=private:b",
    ),
    (
        "rep",
        "local_comm_id=. remote_comm_id local_q_key local_qpn local_ee_context_number=localeecn starting_psn=startpsn \
         responder_resources=respres initiator_depth=initdepth target_ack_delay=tgtackdelay \
         failover_accepted=failoveracc end_to_end_flow_control=e2eflowctrl rnr_retry_count=rnrretrcount srq \
         local_ca_guid private_data=private:b",
    ),
    ("rtu", "local_comm_id remote_comm_id private_data=private:b"),
    ("dreq", "local_comm_id remote_comm_id private_data=private:b"),
    ("drsp", "local_comm_id remote_comm_id private_data=private:b"),
    (
        "rej",
        "local_comm_id remote_comm_id message_rejected=msgrej reject_info_length=rejinfolen \
         reason ari:b private_data=private:b",
    ),
];

/// The Annex A11 IP CM header of a REQ (decode's `ip_cm`; tshark's `infiniband.cm.req.ip_cm.`).
pub const IP_CM: &str = "majv minv ipv sport sip=sip4:t dip=dip4:t sip=sip6:g dip=dip6:g private:b";

//! The demo's report as one JSON document for machines: every host, resolution and ping pair (no
//! abridging), `null` for what an interrupted run did not reach.

use super::{mode_name, McastReport, PingLine, Report, Rtt};
use crate::demo::{Args, GROUP_PORT};
use ipoib_fabric::node::ipoib::ResolutionKind;
use ipoib_wire::render::escape;
use std::fmt::Write as _;

impl Report {
    pub fn json(&self, args: &Args) -> String {
        let mut o = String::from("{");
        let _ = write!(
            o,
            "\"ok\":{},\"hosts\":{},\"topology\":",
            self.failures.is_empty() && self.stopped.is_none(),
            self.hosts.len()
        );
        escape(&mut o, &args.topology);
        let _ = write!(
            o,
            ",\"seed\":{},\"carrier\":{},\"carrier_last_ns\":{},\"sm_lid\":{}",
            args.seed,
            self.carrier,
            self.carrier_at
                .map_or("null".into(), |d| d.as_nanos().to_string()),
            self.sm_lid
        );
        if let Some((r, mtu)) = &self.bcast {
            o.push_str(",\"broadcast\":{\"mgid\":");
            escape(&mut o, &r.mgid.to_string());
            let _ = write!(
                o,
                ",\"mlid\":{},\"qkey\":{},\"mtu\":{},\"ipoib_mtu\":{}}}",
                r.mlid,
                r.qkey.0,
                r.mtu.bytes().unwrap_or(0),
                mtu
            );
        }
        o.push_str(",\"host_list\":[");
        for (i, h) in self.hosts.iter().enumerate() {
            if i > 0 {
                o.push(',');
            }
            o.push_str("{\"name\":");
            escape(&mut o, &self.names[i]);
            let _ = write!(
                o,
                ",\"port\":{},\"lid\":{},\"qpn\":{},\"gid\":",
                h.port, h.lid, h.qpn
            );
            escape(&mut o, &h.gid);
            o.push_str(",\"hwaddr\":");
            escape(&mut o, &h.hw);
            o.push_str(",\"ipv4\":");
            match h.ipv4 {
                Some((a, p)) => escape(&mut o, &format!("{a}/{p}")),
                None => o.push_str("null"),
            }
            o.push_str(",\"ipv6\":");
            match h.ipv6 {
                Some(a) => escape(&mut o, &a.to_string()),
                None => o.push_str("null"),
            }
            let _ = write!(o, ",\"carrier\":{},\"ports\":[", h.carrier);
            for (k, p) in h.ports.iter().enumerate() {
                if k > 0 {
                    o.push(',');
                }
                let _ = write!(o, "{{\"port\":{},\"lid\":{},\"gid\":", p.num, p.lid);
                escape(&mut o, &p.gid);
                o.push_str(",\"state\":");
                escape(&mut o, &p.state);
                let _ = write!(
                    o,
                    ",\"cabled\":{},\"ipoib\":{}}}",
                    p.cabled,
                    p.num == h.port
                );
            }
            o.push_str("]}");
        }
        o.push_str("],\"resolutions\":[");
        for (i, r) in self.resolutions.iter().enumerate() {
            if i > 0 {
                o.push(',');
            }
            let _ = write!(o, "{{\"at_ns\":{},\"host\":", r.at.as_nanos());
            escape(&mut o, &self.names[r.host]);
            o.push_str(",\"kind\":");
            escape(
                &mut o,
                if r.kind == ResolutionKind::Arp {
                    "arp"
                } else {
                    "nd"
                },
            );
            o.push_str(",\"ip\":");
            escape(&mut o, &r.ip.to_string());
            o.push_str(",\"hwaddr\":");
            escape(&mut o, &r.hw.to_string());
            o.push('}');
        }
        let t = &self.totals;
        let _ = write!(
            o,
            "],\"sent\":{{\"arp_requests\":{},\"arp_replies\":{},\"nd_solicits\":{},\"nd_adverts\":{},\"path_records\":{},\"gratuitous_arp\":{}}}",
            t.arp_requests, t.arp_replies, t.nd_solicits, t.nd_adverts, self.paths, self.announced
        );
        let _ = write!(
            o,
            ",\"ping\":{{\"pairs_total\":{},\"sampled\":{},\"ipv4\":",
            self.pairs_total, self.sampled
        );
        self.json_pings(&mut o, self.v4.as_deref());
        o.push_str(",\"ipv6\":");
        self.json_pings(&mut o, self.v6.as_deref());
        o.push('}');
        o.push_str(",\"multicast\":");
        match &self.mcast {
            None => o.push_str("null"),
            Some(m) => self.json_mcast(&mut o, m),
        }
        o.push_str(",\"groups\":[");
        for (i, g) in self.groups.iter().enumerate() {
            if i > 0 {
                o.push(',');
            }
            o.push_str("{\"mgid\":");
            escape(&mut o, &g.mgid);
            o.push_str(",\"ip_group\":");
            escape(&mut o, &g.ip);
            let _ = write!(
                o,
                ",\"mlid\":{},\"pkey\":{},\"qkey\":{},\"mtu\":{},\"members\":{},\"full\":{},\"send_only\":{},\"well_known\":{}}}",
                g.mlid, g.pkey.0, g.qkey.0, g.mtu, g.members, g.full, g.send_only, g.well_known
            );
        }
        o.push(']');
        self.json_connected(&mut o);
        self.json_bulk(&mut o);
        o.push_str(",\"pcap\":");
        escape(&mut o, &args.pcap);
        o.push_str(",\"pcap_error\":");
        match &self.capture_error {
            Some(e) => escape(&mut o, e),
            None => o.push_str("null"),
        }
        let _ = write!(
            o,
            ",\"packets\":{},\"packets_not_kept\":{},\"sim_ns\":{},\"wall_ns\":{},\"peak_memory_kib\":{},\"interrupted\":",
            self.packets,
            self.packets_skipped,
            self.sim_end.as_nanos(),
            self.wall.as_nanos(),
            self.peak_kib.map_or("null".into(), |k| k.to_string()),
        );
        match self.stopped {
            None => o.push_str("null"),
            Some(s) => {
                o.push_str("{\"signal\":");
                escape(&mut o, s.signal.name());
                o.push_str(",\"phase\":");
                escape(&mut o, s.phase.name());
                o.push('}');
            }
        }
        o.push_str(",\"failures\":[");
        for (i, f) in self.failures.iter().enumerate() {
            if i > 0 {
                o.push(',');
            }
            escape(&mut o, f);
        }
        o.push_str("]}");
        o
    }

    /// Connected mode only (a datagram-mode document is as it always was): the mode, every
    /// host's connections, the CM messages of the capture and the switch back to datagram mode.
    fn json_connected(&self, o: &mut String) {
        let Some(c) = &self.connected else {
            return;
        };
        let _ = write!(
            o,
            ",\"mode\":\"connected\",\"connected_mtu\":{},\"ud_mtu\":{},\"connections\":[",
            c.mtu, c.ud_mtu
        );
        for (i, l) in c.conns.iter().enumerate() {
            if i > 0 {
                o.push(',');
            }
            o.push_str("{\"host\":");
            escape(o, &self.names[l.host]);
            o.push_str(",\"peer\":");
            match l.peer {
                Some(p) => escape(o, &self.names[p]),
                None => o.push_str("null"),
            }
            o.push_str(",\"peer_gid\":");
            escape(o, &l.peer_gid.to_string());
            let (q, pq) = l.qpns.map_or(("null".into(), "null".into()), |(a, b)| {
                (a.to_string(), b.to_string())
            });
            let _ = write!(
                o,
                ",\"active\":{},\"sends\":{},\"qpn\":{q},\"peer_qpn\":{pq},\"service_id\":\"{:#018x}\",\"mtu\":{},\"state\":\"{}\",\"transport\":\"{}\",\"tx_packets\":{},\"rx_packets\":{}}}",
                l.active,
                l.sends,
                l.service_id,
                l.mtu,
                super::connected::state(l.state),
                super::connected::transport(l.transport),
                l.tx_packets,
                l.rx_packets
            );
        }
        o.push_str("],\"cm_messages\":");
        match &c.tally {
            Some(Ok(t)) => {
                o.push('{');
                for (i, (name, k)) in t.messages.iter().enumerate() {
                    if i > 0 {
                        o.push(',');
                    }
                    escape(o, name);
                    let _ = write!(o, ":{k}");
                }
                let _ = write!(o, "}},\"cm_frames\":{},\"first_req\":", t.frames);
                match &t.first_req {
                    None => o.push_str("null"),
                    Some(r) => {
                        let pd: String =
                            r.private_data.iter().map(|b| format!("{b:02x}")).collect();
                        let _ = write!(
                            o,
                            "{{\"slid\":{},\"dlid\":{},\"service_id\":\"{:#018x}\",\"private_data\":\"{pd}\",\"ud_qpn\":{},\"receive_mtu\":{}}}",
                            r.slid, r.dlid, r.service_id, r.cm_data.ud_qpn, r.cm_data.receive_mtu
                        );
                    }
                }
            }
            _ => o.push_str("null,\"cm_frames\":null,\"first_req\":null"),
        }
        o.push_str(",\"mode_switch\":");
        match &c.switch {
            None => o.push_str("null"),
            Some(s) => {
                o.push_str("{\"host\":");
                escape(o, &self.names[s.host]);
                let _ = write!(
                    o,
                    ",\"switched\":{},\"released\":{},\"settled\":{},\"mtu_before\":{},\"mtu_after\":{}}}",
                    s.switched, s.released, s.settled, s.mtu_before, s.mtu_after
                );
            }
        }
    }

    /// The bulk transfers, when any ran.
    fn json_bulk(&self, o: &mut String) {
        if self.bulk.is_empty() {
            return;
        }
        o.push_str(",\"bulk\":[");
        for (i, b) in self.bulk.iter().enumerate() {
            if i > 0 {
                o.push(',');
            }
            o.push_str("{\"mode\":");
            escape(o, mode_name(b.mode));
            o.push_str(",\"from\":");
            escape(o, &self.names[b.from]);
            o.push_str(",\"to\":");
            escape(o, &self.names[b.to]);
            let _ = write!(
                o,
                ",\"packet_len\":{},\"payload_len\":{},\"bytes\":{},\"datagrams\":{},\"sent\":{},\"delivered\":{},\"bytes_delivered\":{},\"duplicates\":{},\"reordered\":{},\"wire_packets\":{},\"sim_ns\":{},\"wall_ns\":{},\"sim_gbps\":{:.3},\"wall_gbps\":{:.3},\"packet_cost_ns\":{},\"ok\":{}}}",
                b.packet_len,
                b.payload_len,
                b.bytes,
                b.datagrams,
                b.sent,
                b.delivered,
                b.bytes_delivered,
                b.duplicates,
                b.reordered,
                b.wire_packets,
                b.sim.as_nanos(),
                b.wall.as_nanos(),
                b.sim_gbps(),
                b.wall_gbps(),
                b.packet_cost.as_nanos(),
                b.ok()
            );
        }
        o.push(']');
    }

    fn json_pings(&self, o: &mut String, list: Option<&[PingLine]>) {
        let Some(list) = list else {
            o.push_str("null");
            return;
        };
        let _ = write!(o, "{{\"answered\":{},\"pairs\":[", Self::answered(list));
        for (i, p) in list.iter().enumerate() {
            if i > 0 {
                o.push(',');
            }
            o.push_str("{\"from\":");
            escape(o, &self.names[p.from]);
            o.push_str(",\"to\":");
            escape(o, &self.names[p.to]);
            let (s, d) = p.addrs.map_or((String::new(), String::new()), |(s, d)| {
                (s.to_string(), d.to_string())
            });
            o.push_str(",\"src\":");
            escape(o, &s);
            o.push_str(",\"dst\":");
            escape(o, &d);
            let ns = |r: Rtt| r.get().map_or("null".into(), |d| d.as_nanos().to_string());
            let _ = write!(
                o,
                ",\"first_rtt_ns\":{},\"rtt_ns\":{}}}",
                ns(p.first),
                ns(p.then)
            );
        }
        o.push_str("]}");
    }

    fn json_mcast(&self, o: &mut String, m: &McastReport) {
        o.push_str("{\"group\":");
        escape(o, &m.group.to_string());
        o.push_str(",\"mgid\":");
        escape(o, &m.mgid);
        let _ = write!(o, ",\"mlid\":{},\"port\":{GROUP_PORT},\"sender\":", m.mlid);
        escape(o, &self.names[m.sender]);
        o.push_str(",\"sender_join_state\":");
        match m.sender_state {
            Some(s) => {
                let _ = write!(o, "{}", s.0);
            }
            None => o.push_str("null"),
        }
        let names = |o: &mut String, v: &mut dyn Iterator<Item = usize>| {
            o.push('[');
            for (i, h) in v.enumerate() {
                if i > 0 {
                    o.push(',');
                }
                escape(o, &self.names[h]);
            }
            o.push(']');
        };
        o.push_str(",\"members\":");
        names(o, &mut m.members.iter().copied());
        o.push_str(",\"received_by\":");
        names(o, &mut m.received.iter().map(|r| r.0));
        let _ = write!(o, ",\"ok\":{}}}", m.ok());
    }
}

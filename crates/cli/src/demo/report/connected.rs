//! The text of what connected mode (RFC 4755) and the bulk transfers add to the demo's report.

use super::{human, mode_name, table, Report, SHOW};
use crate::demo::bulk::{BulkReport, PORT};
use crate::demo::connected::SHOW_HOSTS;
use ipoib_proto::ipoib::{ConnState, Mode};
use ipoib_wire::cm::TransportServiceType;
use std::fmt::Write as _;

fn plural(n: usize, what: &str) -> String {
    format!("{n} {what}{}", if n == 1 { "" } else { "s" })
}

/// The most a transfer's host moves with `--packet-cost-ns`: one packet's payload per packet
/// cost (the sender's processor sends each, the receiver's receives each), in Gb/s.
fn host_bound_gbps(b: &BulkReport) -> f64 {
    let ns = b.packet_cost.as_nanos().max(1) as f64;
    b.payload_len as f64 * 8.0 / ns
}

/// What held a transfer back in simulated time: its hosts, when it reached (nine tenths of)
/// what they move at most, else the link.
fn bound_by(b: &BulkReport) -> &'static str {
    if b.sim_gbps() >= 0.9 * host_bound_gbps(b) {
        "its hosts' per-packet work"
    } else {
        "the link"
    }
}

pub(super) fn state(s: ConnState) -> &'static str {
    match s {
        ConnState::Connecting => "connecting",
        ConnState::Up => "up",
        ConnState::Closing => "closing",
    }
}

pub(super) fn transport(t: TransportServiceType) -> &'static str {
    match t {
        TransportServiceType::Rc => "RC",
        TransportServiceType::Uc => "UC",
        _ => "other",
    }
}

impl Report {
    /// The connections and the CM exchange that made them.
    pub(super) fn text_connected(&self, o: &mut String) {
        let Some(c) = &self.connected else {
            return;
        };
        let n = self.hosts.len();
        if c.conns.is_empty() && n < 2 {
            let _ = writeln!(o, "Connections (RFC 4755 §3): none (one host)\n");
            return;
        }
        let shown: Vec<usize> = if n <= SHOW_HOSTS {
            (0..n).collect()
        } else {
            (0..2).collect()
        };
        let whose = if n <= SHOW_HOSTS {
            "every host holds".to_string()
        } else {
            format!("{} and {} hold", self.names[0], self.names[1])
        };
        let when = if self.bulk.iter().any(|b| b.mode == Mode::Connected) {
            "after the connected-mode bulk transfer"
        } else {
            "after the multicast test"
        };
        let _ = writeln!(o, "Connections (RFC 4755 §3), as {whose} them {when}");
        let mut rows = vec![vec![
            "host".to_string(),
            "peer".into(),
            "side".into(),
            "QPN".into(),
            "peer QPN".into(),
            "service ID".into(),
            "MTU".into(),
            "state".into(),
            "sends".into(),
            "packets out/in".into(),
        ]];
        let lines: Vec<_> = c.conns.iter().filter(|l| shown.contains(&l.host)).collect();
        for l in lines.iter().take(SHOW) {
            let (ours, theirs) = l.qpns.map_or(("-".into(), "-".into()), |(a, b)| {
                (format!("{a:#08x}"), format!("{b:#08x}"))
            });
            rows.push(vec![
                self.names[l.host].clone(),
                l.peer
                    .map_or_else(|| l.peer_gid.to_string(), |p| self.names[p].clone()),
                format!(
                    "{} {}",
                    if l.active { "active" } else { "passive" },
                    transport(l.transport)
                ),
                ours,
                theirs,
                format!("{:#018x}", l.service_id),
                l.mtu.to_string(),
                state(l.state).into(),
                if l.sends { "yes" } else { "no" }.into(),
                format!("{}/{}", l.tx_packets, l.rx_packets),
            ]);
        }
        table(o, "  ", &rows);
        if lines.len() > SHOW {
            let _ = writeln!(o, "  ... and {} more", lines.len() - SHOW);
        }
        let up = c.conns.iter().filter(|l| l.state == ConnState::Up).count();
        let active = c.conns.iter().filter(|l| l.active).count();
        let _ = writeln!(
            o,
            "  {} connection ends on {n} hosts ({up} up; a connection shows at both its ends): {active} active (the host\n  \
             sent the REQ), {} passive (it accepted one); RFC 4755 §3.3 makes a host use its peer's connection when both connect.",
            c.conns.len(),
            c.conns.len() - active
        );
        match &c.tally {
            None => {}
            Some(Err(e)) => {
                let _ = writeln!(o, "  CM exchange: the capture could not be read back: {e}");
            }
            Some(Ok(t)) => {
                let _ = writeln!(
                    o,
                    "  CM exchange in the capture (IBA 1 §12.6, MADs on QP1): {} REQ, {} REP, {} RTU, {} DREQ, {} DREP, {} REJ, {} MRA\n  \
                     (messages: the capture holds each once per link it crosses, {} frames in all)",
                    t.count("REQ"),
                    t.count("REP"),
                    t.count("RTU"),
                    t.count("DREQ"),
                    t.count("DREP"),
                    t.count("REJ"),
                    t.count("MRA"),
                    t.frames
                );
                if let Some(r) = &t.first_req {
                    let host = |lid: u16| {
                        self.hosts
                            .iter()
                            .position(|h| h.lid == lid)
                            .map_or(format!("LID {lid}"), |i| self.names[i].clone())
                    };
                    let pd: Vec<String> = r
                        .private_data
                        .chunks(4)
                        .map(|w| w.iter().map(|b| format!("{b:02x}")).collect())
                        .collect();
                    let _ = writeln!(
                        o,
                        "  The first REQ, {} -> {}: service ID {:#018x} (IPoIB-CM, the listener's UD QPN {:#08x}; §3.5),\n  \
                         private data {} (the sender's UD QPN {:#08x}, receive MTU {}; §6)",
                        host(r.slid),
                        host(r.dlid),
                        r.service_id,
                        r.service_qpn,
                        pd.join(" "),
                        r.cm_data.ud_qpn,
                        r.cm_data.receive_mtu
                    );
                }
            }
        }
        if let Some(s) = &c.switch {
            let _ = writeln!(
                o,
                "  Then {} went back to datagram mode (as `echo datagram > /sys/class/net/ib0/mode`): the {} \
                 it sent on\n  released with DREQ and DREP (§3.4){}, its MTU {} -> {}.",
                self.names[s.host],
                plural(s.released, "connection"),
                if s.settled { "" } else { " (NOT all answered)" },
                s.mtu_before,
                s.mtu_after
            );
        }
        o.push('\n');
    }

    /// The bulk transfers, side by side.
    pub(super) fn text_bulk(&self, o: &mut String) {
        let Some(first) = self.bulk.first() else {
            return;
        };
        let _ = writeln!(
            o,
            "Bulk transfer {} -> {}: {} bytes to UDP port {PORT} in datagrams of the largest size the mode allows\n  \
             (one IP packet each; the capture was off)",
            self.names[first.from], self.names[first.to], first.bytes
        );
        let mut rows = vec![vec![
            "mode".to_string(),
            "IP packet".into(),
            "datagrams".into(),
            "delivered".into(),
            "bytes delivered".into(),
            "wire packets".into(),
            "simulated".into(),
            "throughput".into(),
            "wall".into(),
            "wall rate".into(),
        ]];
        for b in &self.bulk {
            rows.push(vec![
                mode_name(b.mode).into(),
                b.packet_len.to_string(),
                b.datagrams.to_string(),
                b.delivered.to_string(),
                b.bytes_delivered.to_string(),
                b.wire_packets.to_string(),
                human(b.sim),
                format!("{:.2} Gb/s", b.sim_gbps()),
                human(b.wall),
                format!("{:.2} Gb/s", b.wall_gbps()),
            ]);
        }
        table(o, "  ", &rows);
        let _ = writeln!(
            o,
            "  Throughput is UDP payload over simulated time (first datagram sent to last delivered); the wall rate is how\n  \
             fast this machine simulated it."
        );
        if let [c, d] = &self.bulk[..] {
            if c.sim_gbps() > 0.0 && d.sim_gbps() > 0.0 {
                let _ = writeln!(
                    o,
                    "  Connected mode: {:.2}x datagram mode's throughput in simulated time, {:.1}x in wall time, with {:.1}x fewer IP packets.",
                    c.sim_gbps() / d.sim_gbps(),
                    c.wall_gbps() / d.wall_gbps().max(f64::MIN_POSITIVE),
                    d.datagrams as f64 / c.datagrams.max(1) as f64
                );
                let _ = if c.packet_cost.is_zero() {
                    writeln!(
                        o,
                        "  The emulated hosts spend no time per packet, so in simulated time both modes are bound by the link and differ by\n  \
                         their header bytes; the fewer, larger packets save per-packet work, which only the wall time shows\n  \
                         (--packet-cost-ns gives the hosts a cost per packet)."
                    )
                } else {
                    writeln!(
                        o,
                        "  Each host spends {} on every IP packet it sends or receives (--packet-cost-ns), so it moves at most\n  \
                         {:.2} Gb/s of payload in datagram mode and {:.2} Gb/s in connected mode: in simulated time datagram mode\n  \
                         is bound by {} and connected mode by {}.",
                        human(c.packet_cost),
                        host_bound_gbps(d),
                        host_bound_gbps(c),
                        bound_by(d),
                        bound_by(c)
                    )
                };
            }
        }
        for b in &self.bulk {
            if b.duplicates > 0 || b.reordered > 0 {
                let _ = writeln!(
                    o,
                    "  {}: {} duplicate or damaged datagrams, {} out of order",
                    mode_name(b.mode),
                    b.duplicates,
                    b.reordered
                );
            }
        }
        o.push('\n');
    }
}

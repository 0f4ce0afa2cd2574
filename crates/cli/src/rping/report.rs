//! What `ipoib rping` prints: text, or one JSON object (`--json`).

use super::{Args, TCP};
use ipoib_fabric::Instant;
use ipoib_wire::render::escape;
use std::fmt::Write as _;
use std::io::Write as _;
use std::net::SocketAddr;
use std::time::{Duration, Instant as Wall};

/// One phase: bytes moved, simulated and wall time.
#[derive(Debug, Clone, Copy, Default)]
pub struct Phase {
    pub bytes: u64,
    pub sim: Duration,
    pub wall: Duration,
}

impl Phase {
    /// From wall time `t0` and simulated time `s0` to now (`s1`).
    pub fn between(t0: Wall, s0: Instant, s1: Instant, bytes: u64) -> Phase {
        Phase {
            bytes,
            sim: s1.saturating_duration_since(s0),
            wall: t0.elapsed(),
        }
    }

    fn gbps(bytes: u64, t: Duration) -> f64 {
        if t.is_zero() {
            0.0
        } else {
            bytes as f64 / t.as_secs_f64() / 1e9
        }
    }

    /// GB/s (10^9 bytes a second) in simulated time.
    pub fn sim_gbps(&self) -> f64 {
        Phase::gbps(self.bytes, self.sim)
    }

    /// GB/s in wall time.
    pub fn wall_gbps(&self) -> f64 {
        Phase::gbps(self.bytes, self.wall)
    }

    fn json(&self, o: &mut String) {
        let _ = write!(
            o,
            "{{\"bytes\":{},\"sim_ns\":{},\"wall_ns\":{},\"sim_gbps\":{:.3},\"wall_gbps\":{:.3}}}",
            self.bytes,
            self.sim.as_nanos(),
            self.wall.as_nanos(),
            self.sim_gbps(),
            self.wall_gbps()
        );
    }

    fn text(&self, o: &mut String, what: &str) {
        let _ = writeln!(
            o,
            "{what:<9} {:>13} bytes in {:>10.3} ms simulated ({:>7.3} GB/s), {:>10.3} ms wall ({:>7.3} GB/s)",
            self.bytes,
            self.sim.as_secs_f64() * 1e3,
            self.sim_gbps(),
            self.wall.as_secs_f64() * 1e3,
            self.wall_gbps()
        );
    }
}

/// The ping-pong phase.
#[derive(Debug, Clone, Copy, Default)]
pub struct PingPong {
    pub messages: u32,
    pub verified: u32,
    pub rtt_avg: Duration,
    pub phase: Phase,
}

/// Everything the run found.
#[derive(Debug, Default)]
pub struct Report {
    pub hosts: u16,
    pub seed: u64,
    pub size: u64,
    pub server: Option<SocketAddr>,
    pub client: Option<SocketAddr>,
    pub bringup: Phase,
    pub connect: Phase,
    pub pingpong: Option<PingPong>,
    pub write: Option<Phase>,
    pub read: Option<Phase>,
    pub write_verified: Option<bool>,
    pub read_verified: Option<bool>,
    pub disconnected: bool,
    pub memcpy: Option<Duration>,
    pub sim_end: Instant,
    pub packets: u64,
    pub wire_bytes: u64,
    pub pcap: Option<String>,
    /// `--pcap` could not be written (a full disk): what the write said.
    pub pcap_error: Option<String>,
    pub error: Option<String>,
    pub started: Option<Wall>,
}

impl Report {
    pub fn new(args: &Args) -> Report {
        Report {
            hosts: args.hosts,
            seed: args.seed,
            size: args.size,
            started: Some(Wall::now()),
            ..Report::default()
        }
    }

    /// Every ping came back intact, and the transfer (if any) landed and came back intact.
    pub fn verified(&self) -> bool {
        let pings = self.pingpong.is_some_and(|p| p.verified == p.messages);
        let bytes = self.size == 0
            || (self.write_verified == Some(true) && self.read_verified == Some(true));
        pings && bytes && self.error.is_none()
    }

    pub fn print(&self, args: &Args) {
        let out = if args.json { self.json() } else { self.text() };
        let _ = std::io::stdout().write_all(out.as_bytes());
    }

    fn addr(a: Option<SocketAddr>) -> String {
        a.map_or_else(|| "-".into(), |a| a.to_string())
    }

    fn text(&self) -> String {
        let mut o = String::new();
        let _ = writeln!(
            o,
            "rping: {} hosts on one switch, seed {}; server {} (TCP, protocol {TCP}), client {}",
            self.hosts,
            self.seed,
            Report::addr(self.server),
            Report::addr(self.client)
        );
        let _ = writeln!(
            o,
            "connect   {:>10.3} ms simulated (ARP/ND, PathRecord, REQ/REP/RTU), {:.3} ms wall",
            self.connect.sim.as_secs_f64() * 1e3,
            self.connect.wall.as_secs_f64() * 1e3
        );
        if let Some(p) = self.pingpong {
            let _ = writeln!(
                o,
                "ping-pong {}/{} messages verified, average round trip {:.3} µs simulated",
                p.verified,
                p.messages,
                p.rtt_avg.as_secs_f64() * 1e6
            );
        }
        if let Some(w) = &self.write {
            w.text(&mut o, "write");
            let _ = writeln!(
                o,
                "          server region matches the source: {}",
                yes(self.write_verified)
            );
        }
        if let Some(r) = &self.read {
            r.text(&mut o, "read");
            let _ = writeln!(
                o,
                "          read-back copy matches the source: {}",
                yes(self.read_verified)
            );
        }
        if let Some(m) = self.memcpy {
            let p = Phase {
                bytes: self.size,
                sim: Duration::ZERO,
                wall: m,
            };
            let _ = writeln!(
                o,
                "memcpy    {:>13} bytes in {:>10.3} ms wall ({:.3} GB/s)",
                self.size,
                m.as_secs_f64() * 1e3,
                p.wall_gbps()
            );
        }
        let _ =
            writeln!(
            o,
            "disconnected: {}; {} packets, {} bytes on the links; {:.3} s simulated, {:.3} s wall",
            if self.disconnected { "yes" } else { "no" },
            self.packets,
            self.wire_bytes,
            self.sim_end.saturating_duration_since(Instant::ZERO).as_secs_f64(),
            self.started.map_or(0.0, |t| t.elapsed().as_secs_f64())
        );
        if let Some(p) = &self.pcap {
            let _ = writeln!(o, "capture: {p}");
        }
        if let Some(e) = &self.pcap_error {
            let _ = writeln!(o, "capture: NOT written: {e}");
        }
        if let Some(e) = &self.error {
            let _ = writeln!(o, "error: {e}");
        }
        let _ = writeln!(
            o,
            "verified: {}",
            if self.verified() { "yes" } else { "NO" }
        );
        o
    }

    fn json(&self) -> String {
        let mut o = String::from("{");
        let _ = write!(
            o,
            "\"hosts\":{},\"seed\":{},\"protocol\":{TCP},\"server\":",
            self.hosts, self.seed
        );
        escape(&mut o, &Report::addr(self.server));
        o.push_str(",\"client\":");
        escape(&mut o, &Report::addr(self.client));
        o.push_str(",\"connect\":");
        self.connect.json(&mut o);
        o.push_str(",\"pingpong\":");
        match self.pingpong {
            Some(p) => {
                let _ = write!(
                    o,
                    "{{\"messages\":{},\"verified\":{},\"rtt_avg_ns\":{},\"phase\":",
                    p.messages,
                    p.verified,
                    p.rtt_avg.as_nanos()
                );
                p.phase.json(&mut o);
                o.push('}');
            }
            None => o.push_str("null"),
        }
        let _ = write!(o, ",\"size\":{}", self.size);
        for (k, p) in [("write", &self.write), ("read", &self.read)] {
            let _ = write!(o, ",\"{k}\":");
            match p {
                Some(p) => p.json(&mut o),
                None => o.push_str("null"),
            }
        }
        let b = |v: Option<bool>| v.map_or("null".to_string(), |b| b.to_string());
        let _ = write!(
            o,
            ",\"write_verified\":{},\"read_verified\":{},\"disconnected\":{}",
            b(self.write_verified),
            b(self.read_verified),
            self.disconnected
        );
        if let Some(m) = self.memcpy {
            let g = Phase {
                bytes: self.size,
                sim: Duration::ZERO,
                wall: m,
            }
            .wall_gbps();
            let _ = write!(
                o,
                ",\"memcpy\":{{\"bytes\":{},\"wall_ns\":{},\"wall_gbps\":{g:.3}}}",
                self.size,
                m.as_nanos()
            );
        }
        let _ = write!(
            o,
            ",\"packets\":{},\"wire_bytes\":{},\"sim_end_ns\":{},\"wall_ns\":{}",
            self.packets,
            self.wire_bytes,
            self.sim_end
                .saturating_duration_since(Instant::ZERO)
                .as_nanos(),
            self.started.map_or(0, |t| t.elapsed().as_nanos())
        );
        o.push_str(",\"pcap\":");
        match &self.pcap {
            Some(p) => escape(&mut o, p),
            None => o.push_str("null"),
        }
        o.push_str(",\"pcap_error\":");
        match &self.pcap_error {
            Some(e) => escape(&mut o, e),
            None => o.push_str("null"),
        }
        o.push_str(",\"error\":");
        match &self.error {
            Some(e) => escape(&mut o, e),
            None => o.push_str("null"),
        }
        let _ = write!(o, ",\"verified\":{}}}", self.verified());
        o.push('\n');
        o
    }
}

fn yes(v: Option<bool>) -> &'static str {
    match v {
        Some(true) => "yes",
        Some(false) => "NO",
        None => "-",
    }
}

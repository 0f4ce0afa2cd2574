//! `ipoib rping`: librdmacm's `rping` on the emulated fabric, over the RDMA IP CM service (IBTA
//! Annex A11, [`ipoib_fabric::node::ipcm`]).
//!
//! A small subnet (two hosts on one switch unless `--hosts` says more) runs IPoIB on every host
//! and the IP CM service beside it. Host 0 listens on a TCP port (protocol 6: the service ID
//! `0x0000000001 ‖ 06 ‖ port`, Annex A11 CA11-6); host 1 connects to host 0's IPv4 address (or its
//! IPv6 link-local one with `--ipv6`): ARP or ND, a PathRecord, REQ, REP and RTU. Then, as rping
//! does:
//!
//! 1. the server SENDs the address, R_Key and length of a registered region (rping's
//!    `rping_rdma_info`);
//! 2. `--count` ping-pong messages: the client SENDs `rdma-ping-N: ` and rping's rotating
//!    printable pattern, the server SENDs each back, the client checks every byte;
//! 3. the client RDMA WRITEs a `--size` buffer into the server's region and RDMA READs it back into
//!    a second local region, in `--chunk` work requests with a window in flight; both the
//!    server's region and the read-back copy are compared byte for byte with the source;
//! 4. the client disconnects (DREQ/DREP).
//!
//! The report gives throughput in simulated time (the link's rate bounds it) and in wall time,
//! text or `--json`. `--pcap FILE` records every packet (off by default: a 1 GiB transfer is a
//! quarter of a million packets each way).
//!
//! Exit status: 0 when everything arrived and verified; 1 when a connection or transfer failed or
//! a byte differed; 2 on bad arguments or a `--pcap` that could not be written.

mod report;

use ipoib_fabric::hw::topology::Topology;
use ipoib_fabric::hw::verbs::{Access, Completion, MrHandle, WcOpcode, WcStatus};
use ipoib_fabric::node::ipcm::{self, AcceptPolicy, IpCmApp, IpCmAppConfig, IpCmHandle};
use ipoib_fabric::node::subnet::{IpoibOptions, Subnet, SubnetOptions};
use ipoib_fabric::Instant;
use ipoib_proto::ipcm::{IpCmEvent, IpConnId};
use report::{Phase, Report};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::process::ExitCode;
use std::time::{Duration, Instant as Wall};

/// IANA protocol number of TCP: the port space rping's `RDMA_PS_TCP` maps to (Annex A11 Table 2).
pub const TCP: u8 = 6;
/// The server's host.
const SERVER: usize = 0;
/// The client's host.
const CLIENT: usize = 1;
/// The largest `--size`: the client registers the source and the read-back copy, and an HCA may
/// register 2 GiB.
pub const MAX_SIZE: u64 = 1 << 30;
/// The most RDMA WRITE (and as many READ) work requests one run posts, `--size` / `--chunk`
/// rounded up: 1 GiB in 4 KiB pieces, as many as the packets of a 1 GiB transfer at the 4096-byte
/// IB MTU. Each work request costs the emulation about as much as a packet, so that a `--chunk 1`
/// of a large `--size` (a billion work requests, hours) is refused instead of run.
pub const MAX_PIECES: u64 = 1 << 18;
/// Bytes of one ping-pong message (rping's default `-S 64`).
const MSG_LEN: usize = 64;
/// Simulated time any one step may take before the run counts as failed.
const STEP_LIMIT: Duration = Duration::from_secs(30);
/// Work request IDs of the phases.
const WR_INFO: u64 = 1;
const WR_PING: u64 = 1 << 32;
const WR_WRITE: u64 = 2 << 32;
const WR_READ: u64 = 3 << 32;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Hosts on the switch (host 0 serves, host 1 connects; others only run IPoIB).
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u16).range(2..=254))]
    hosts: u16,
    /// The server's TCP port (rping's default 7174).
    #[arg(long, default_value_t = 7174, value_parser = clap::value_parser!(u16).range(1..))]
    port: u16,
    /// Connect to the server's IPv6 link-local address instead of its IPv4 address.
    #[arg(long)]
    ipv6: bool,
    /// Ping-pong messages before the RDMA transfer (rping's `-C`).
    #[arg(long, default_value_t = 10)]
    count: u32,
    /// Bytes RDMA WRITTEN and read back: a number with an optional K, M or G (powers of 1024), up
    /// to 1G; 0 for none.
    #[arg(long, default_value = "1M", value_parser = parse_size)]
    size: u64,
    /// Bytes of each RDMA WRITE and READ work request; `--size` / `--chunk` (the work requests
    /// each way) may be at most 262144 (1G in 4K pieces).
    #[arg(long, default_value = "64K", value_parser = parse_size)]
    chunk: u64,
    /// Work requests kept in flight.
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u32).range(1..=4096))]
    window: u32,
    /// Seed of every random choice (same seed, same packets).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Write every packet into this pcap (ERF records, link type 197: Wireshark, tshark and
    /// `ipoib decode` read it).
    #[arg(long)]
    pcap: Option<String>,
    /// One JSON object instead of text.
    #[arg(long)]
    json: bool,
    /// Also time a plain memcpy of `--size` bytes in this run (the benchmark's anchor).
    #[arg(long, hide = true)]
    memcpy: bool,
}

/// A size: digits, then optionally K, M or G (binary), with an optional `iB` or `B`.
pub(crate) fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let t = t
        .strip_suffix("iB")
        .or_else(|| t.strip_suffix('B'))
        .unwrap_or(t);
    let (digits, shift) = match t.chars().last() {
        Some('k' | 'K') => (&t[..t.len() - 1], 10),
        Some('m' | 'M') => (&t[..t.len() - 1], 20),
        Some('g' | 'G') => (&t[..t.len() - 1], 30),
        _ => (t, 0),
    };
    let n: u64 = digits
        .replace('_', "")
        .parse()
        .map_err(|e| format!("not a size: {e}"))?;
    n.checked_mul(1 << shift)
        .ok_or_else(|| "too large".to_string())
}

/// Refuses a `--size` that `--chunk` cuts into more than [`MAX_PIECES`] work requests each way.
fn check_pieces(size: u64, chunk: u64) -> Result<(), String> {
    let pieces = size.div_ceil(chunk.max(1));
    if pieces <= MAX_PIECES {
        return Ok(());
    }
    Err(format!(
        "--size {size} in --chunk {chunk} pieces is {pieces} RDMA WRITE work requests (and as \
         many READs); at most {MAX_PIECES} (1G in 4K pieces): give a larger --chunk (at least {}) \
         or a smaller --size",
        size.div_ceil(MAX_PIECES)
    ))
}

fn usage(msg: impl std::fmt::Display) -> ExitCode {
    note!("ipoib rping: {msg}");
    ExitCode::from(2)
}

pub fn run(args: &Args) -> ExitCode {
    if args.size > MAX_SIZE {
        return usage(format_args!(
            "--size {} is over {MAX_SIZE} (1 GiB: the client registers the buffer twice, an HCA \
             registers 2 GiB)",
            args.size
        ));
    }
    if args.chunk == 0 || args.chunk > u64::from(u32::MAX >> 1) {
        return usage("--chunk must be 1 to 2^31 - 1 bytes");
    }
    if let Err(e) = check_pieces(args.size, args.chunk) {
        return usage(e);
    }
    // Opened before the run, so that an unwritable path is refused at once (as `ipoib demo` does),
    // not reported after a transfer that then claims success; emptied and written when the run
    // ends (a Ctrl-C before that leaves an existing file as it was).
    let mut pcap = match args.pcap.as_deref().map(crate::pcap_out::open).transpose() {
        Ok(f) => f,
        Err(e) => return usage(e),
    };
    let mut report = Report::new(args);
    let outcome = Rping::start(args, &mut report).and_then(|mut r| {
        let res = r.run(args, &mut report);
        r.finish(args, pcap.as_mut(), &mut report);
        res
    });
    if let Err(e) = &outcome {
        report.error = Some(e.clone());
    }
    if args.memcpy && args.size > 0 {
        report.memcpy = Some(memcpy(args.size));
    }
    report.print(args);
    // The transfer may have verified; the capture asked for is not there (README: exit 2).
    if let (Ok(()), Some(e)) = (&outcome, &report.pcap_error) {
        note!("ipoib rping: {e}");
        return ExitCode::from(2);
    }
    match outcome {
        Ok(()) if report.verified() => ExitCode::SUCCESS,
        Ok(()) => {
            note!("ipoib rping: verification failed");
            ExitCode::from(1)
        }
        Err(e) => {
            note!("ipoib rping: {e}");
            ExitCode::from(1)
        }
    }
}

/// A plain copy of `size` bytes in 1 MiB pieces from one buffer into another whose pages are
/// mapped already (as the transfer's regions are, [`touch`]), timed.
fn memcpy(size: u64) -> Duration {
    let len = size as usize;
    let mut src = vec![0u8; len];
    fill(&mut src, 7);
    let mut dst = vec![0u8; len];
    touch(&mut dst);
    let t = Wall::now();
    for (d, s) in dst.chunks_mut(1 << 20).zip(src.chunks(1 << 20)) {
        d.copy_from_slice(std::hint::black_box(s));
    }
    std::hint::black_box(&mut dst);
    t.elapsed()
}

/// rping's message: `rdma-ping-N: ` then the printable characters from `!` upwards, rotating
/// with N (rping.c `rping_test_client`), `MSG_LEN` bytes.
fn ping_message(n: u32) -> Vec<u8> {
    let mut m = format!("rdma-ping-{n}: ").into_bytes();
    let start = (n % 94) as u8;
    let mut c = start;
    while m.len() < MSG_LEN - 1 {
        m.push(b'!' + c);
        c = (c + 1) % 94;
    }
    m.push(0);
    m.truncate(MSG_LEN);
    m
}

/// The source buffer's bytes: a position-dependent pattern from the seed (splitmix64 of the
/// word index), so a byte written to the wrong place shows.
fn fill(buf: &mut [u8], seed: u64) {
    for (k, w) in buf.chunks_mut(8).enumerate() {
        let mut z = seed.wrapping_add((k as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15));
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        let b = z.to_le_bytes();
        w.copy_from_slice(&b[..w.len()]);
    }
}

/// Writes every page of a fresh region, as `ibv_reg_mr` pins (and so faults in) the pages of a
/// real one: the emulated HCA hands out zeroed pages that the kernel maps only on first write,
/// which would otherwise be paid inside the timed transfer.
fn touch(buf: &mut [u8]) {
    for b in buf.iter_mut().step_by(4096) {
        *b = 0;
    }
}

/// The running subnet, the two services and the connection.
struct Rping {
    net: Subnet,
    h: [IpCmHandle; 2],
    /// The client's and the server's connection.
    conn: [IpConnId; 2],
    /// The server's region.
    remote: MrHandle,
}

impl Rping {
    /// Builds the subnet, brings IPoIB up, installs the service on both hosts and connects.
    fn start(args: &Args, report: &mut Report) -> Result<Rping, String> {
        let topo = Topology::single_switch(usize::from(args.hosts)).map_err(|e| e.to_string())?;
        let mut o = SubnetOptions::new(topo, args.seed);
        o.ipoib = Some(IpoibOptions::default());
        o.capture = args.pcap.is_some();
        let mut net = Subnet::build(o).map_err(|e| e.to_string())?;
        let t0 = Wall::now();
        let deadline = net.sim().now() + Duration::from_secs(10);
        if !net.run_until_joined(deadline) {
            return Err("IPoIB did not come up on every host in 10 s".into());
        }
        if args.ipv6 {
            let deadline = net.sim().now() + Duration::from_secs(5);
            if !net.run_until_ipv6_ready(deadline) {
                return Err("IPv6 link-local addresses not ready in 5 s".into());
            }
        }
        report.bringup = Phase::between(t0, Instant::ZERO, net.sim().now(), 0);
        let mut h = Vec::new();
        for i in [SERVER, CLIENT] {
            let iface = net.ipoib_handle(i).ok_or("no IPoIB interface")?;
            let rng = net.sim().fork_rng(0x7270_0000 + i as u64);
            let mut cfg = IpCmAppConfig {
                accept: AcceptPolicy::Auto(Vec::new()),
                recv_depth: 8,
                recv_capacity: MSG_LEN as u32,
                ..IpCmAppConfig::default()
            };
            // rping asks for the device's limits; 16 RDMA READs outstanding each way.
            cfg.service.responder_resources = 16;
            cfg.service.initiator_depth = 16;
            let handle = net
                .with_host(i, |host, _| ipcm::install(host, iface, cfg, rng))
                .ok_or("no host")?
                .map_err(|e| e.to_string())?;
            h.push(handle);
        }
        let h = [h[0], h[1]];
        let server_ip = ip_of(&net, SERVER, args.ipv6)?;
        ip_of(&net, CLIENT, args.ipv6)?;
        let any = if args.ipv6 {
            IpAddr::V6(Ipv6Addr::UNSPECIFIED)
        } else {
            IpAddr::V4(Ipv4Addr::UNSPECIFIED)
        };
        with_app(&mut net, SERVER, h[0], |a, _| a.listen(TCP, any, args.port))?;
        let dst = SocketAddr::new(server_ip, args.port);
        let (t0, s0) = (Wall::now(), net.sim().now());
        let conn = with_app(&mut net, CLIENT, h[1], |a, now| {
            a.connect(now, TCP, dst, None, b"rping")
        })?;
        let deadline = net.sim().now() + STEP_LIMIT;
        net.run_until_with(deadline, |n| {
            let up = |i, hd| {
                app(n, i, hd)
                    .events()
                    .any(|(_, e)| matches!(e, IpCmEvent::Established { .. }))
            };
            up(CLIENT, h[1]) && up(SERVER, h[0])
                || app(n, CLIENT, h[1]).events().any(|(_, e)| {
                    e.conn() == Some(conn) && !matches!(e, IpCmEvent::Established { .. })
                })
        });
        let client_events: Vec<IpCmEvent> = app(&net, CLIENT, h[1])
            .events()
            .map(|(_, e)| e.clone())
            .collect();
        if !client_events
            .iter()
            .any(|e| matches!(e, IpCmEvent::Established { .. }))
        {
            return Err(format!("connection to {dst} failed: {client_events:?}"));
        }
        let server_conn = app(&net, SERVER, h[0])
            .events()
            .find_map(|(_, e)| match e {
                IpCmEvent::Established { conn, .. } => Some(*conn),
                _ => None,
            })
            .ok_or("the server's side did not come up")?;
        let (local, _) = app(&net, CLIENT, h[1])
            .service()
            .addrs(conn)
            .ok_or("no client address")?;
        report.client = Some(local);
        report.server = Some(dst);
        report.connect = Phase::between(t0, s0, net.sim().now(), 0);
        // The server's region: remote write for the WRITE, remote read for the READ.
        let access = Access::LOCAL_WRITE | Access::REMOTE_WRITE | Access::REMOTE_READ;
        let len = args.size.max(1) as usize;
        let remote = net
            .with_host(SERVER, |host, _| host.hca_mut().reg_mr(len, access))
            .ok_or("no host")?
            .map_err(|e| format!("server region: {e}"))?;
        net.with_host(SERVER, |host, _| {
            host.hca_mut().mr_slice_mut(remote.lkey, 0, len).map(touch)
        })
        .ok_or("no host")?
        .map_err(|e| format!("server region: {e}"))?;
        Ok(Rping {
            net,
            h,
            conn: [conn, server_conn],
            remote,
        })
    }

    fn run(&mut self, args: &Args, report: &mut Report) -> Result<(), String> {
        self.info()?;
        report.pingpong = Some(self.pingpong(args.count)?);
        if args.size > 0 {
            self.transfer(args, report)?;
        }
        Ok(())
    }

    /// The server tells the client its region (rping's `rping_rdma_info`: address, R_Key and
    /// length in network order); the client checks what it received.
    fn info(&mut self) -> Result<(), String> {
        let r = self.remote;
        let mut msg = Vec::with_capacity(16);
        msg.extend_from_slice(&r.addr.to_be_bytes());
        msg.extend_from_slice(&r.rkey.to_be_bytes());
        msg.extend_from_slice(&(r.len as u32).to_be_bytes());
        let (h, conn) = (self.h[0], self.conn[1]);
        self.host(SERVER, |host| {
            ipcm::send(host, h, conn, WR_INFO, msg.clone())
        })?;
        let got = self.wait_recv(CLIENT)?;
        if got.data != msg {
            return Err(format!("the region info arrived as {:?}", got.data));
        }
        Ok(())
    }

    /// `count` ping-pongs: client SEND, server SEND back, client compares.
    fn pingpong(&mut self, count: u32) -> Result<report::PingPong, String> {
        let (t0, s0) = (Wall::now(), self.net.sim().now());
        let mut verified = 0;
        let mut rtt_total = Duration::ZERO;
        for n in 0..count {
            let msg = ping_message(n);
            let sent_at = self.net.sim().now();
            let (hc, cc) = (self.h[1], self.conn[0]);
            self.host(CLIENT, |host| {
                ipcm::send(host, hc, cc, WR_PING + u64::from(n), msg.clone())
            })?;
            let at_server = self.wait_recv(SERVER)?;
            let (hs, sc) = (self.h[0], self.conn[1]);
            let echo = at_server.data.clone();
            self.host(SERVER, |host| {
                ipcm::send(host, hs, sc, WR_PING + u64::from(n), echo.clone())
            })?;
            let back = self.wait_recv(CLIENT)?;
            rtt_total += self.net.sim().now().saturating_duration_since(sent_at);
            if back.data == msg {
                verified += 1;
            }
        }
        let phase = Phase::between(
            t0,
            s0,
            self.net.sim().now(),
            (2 * MSG_LEN as u64) * u64::from(count),
        );
        Ok(report::PingPong {
            messages: count,
            verified,
            rtt_avg: rtt_total.checked_div(count.max(1)).unwrap_or_default(),
            phase,
        })
    }

    /// The RDMA WRITE of the source into the server's region, the READ back, both verified.
    fn transfer(&mut self, args: &Args, report: &mut Report) -> Result<(), String> {
        let len = args.size as usize;
        let seed = args.seed;
        let (src, sink) = self
            .net
            .with_host(CLIENT, |host, _| {
                let hca = host.hca_mut();
                let src = hca.reg_mr(len, Access::NONE)?;
                fill(hca.mr_slice_mut(src.lkey, 0, len)?, seed);
                let sink = hca.reg_mr(len, Access::LOCAL_WRITE)?;
                touch(hca.mr_slice_mut(sink.lkey, 0, len)?);
                Ok::<_, ipoib_fabric::hw::hca::VerbsError>((src, sink))
            })
            .ok_or("no host")?
            .map_err(|e| format!("client regions: {e}"))?;
        report.write = Some(self.bulk(args, true, &src)?);
        let landed = {
            let a = self
                .net
                .host_device(SERVER)
                .hca()
                .mr_read(self.remote.lkey, 0, len);
            let b = self.net.host_device(CLIENT).hca().mr_read(src.lkey, 0, len);
            matches!((a, b), (Ok(a), Ok(b)) if a == b)
        };
        report.write_verified = Some(landed);
        report.read = Some(self.bulk(args, false, &sink)?);
        let back = {
            let a = self
                .net
                .host_device(CLIENT)
                .hca()
                .mr_read(sink.lkey, 0, len);
            let b = self.net.host_device(CLIENT).hca().mr_read(src.lkey, 0, len);
            matches!((a, b), (Ok(a), Ok(b)) if a == b)
        };
        report.read_verified = Some(back);
        Ok(())
    }

    /// RDMA WRITEs from `local` (or READs into it) of `--size` bytes in `--chunk` work requests,
    /// `--window` in flight.
    fn bulk(&mut self, args: &Args, write: bool, local: &MrHandle) -> Result<Phase, String> {
        let (size, chunk) = (args.size, args.chunk);
        let pieces = size.div_ceil(chunk);
        let (h, conn, remote) = (self.h[1], self.conn[0], self.remote);
        let base = if write { WR_WRITE } else { WR_READ };
        let (t0, s0) = (Wall::now(), self.net.sim().now());
        let (mut posted, mut done) = (0u64, 0u64);
        while done < pieces {
            while posted < pieces && posted - done < u64::from(args.window) {
                let off = posted * chunk;
                let n = chunk.min(size - off);
                let (o, l) = (off as usize, n as usize);
                self.host(CLIENT, |host| {
                    if write {
                        ipcm::rdma_write(
                            host,
                            h,
                            conn,
                            base + posted,
                            local,
                            o,
                            l,
                            remote.addr + off,
                            remote.rkey,
                        )
                    } else {
                        ipcm::rdma_read(
                            host,
                            h,
                            conn,
                            base + posted,
                            local,
                            o,
                            n as u32,
                            remote.addr + off,
                            remote.rkey,
                        )
                    }
                })?;
                posted += 1;
            }
            for c in self.wait_completions(CLIENT)? {
                let want = if write {
                    WcOpcode::RdmaWrite
                } else {
                    WcOpcode::RdmaRead
                };
                if c.wr_id & !0xffff_ffff != base || c.opcode != want {
                    continue;
                }
                if c.status != WcStatus::Success {
                    return Err(format!(
                        "RDMA {} completed with {:?}",
                        if write { "WRITE" } else { "READ" },
                        c.status
                    ));
                }
                done += 1;
            }
        }
        Ok(Phase::between(t0, s0, self.net.sim().now(), size))
    }

    /// Releases the connection and writes the capture.
    fn finish(&mut self, args: &Args, pcap: Option<&mut std::fs::File>, report: &mut Report) {
        let (h, conn) = (self.h[1], self.conn[0]);
        if with_app(&mut self.net, CLIENT, h, |a, _| a.disconnect(conn)).is_ok() {
            let deadline = self.net.sim().now() + STEP_LIMIT;
            let hs = self.h;
            self.net.run_until_with(deadline, |n| {
                [(CLIENT, hs[1]), (SERVER, hs[0])].iter().all(|&(i, hd)| {
                    app(n, i, hd)
                        .events()
                        .any(|(_, e)| matches!(e, IpCmEvent::Disconnected { .. }))
                })
            });
            report.disconnected =
                [(CLIENT, self.h[1]), (SERVER, self.h[0])]
                    .iter()
                    .all(|&(i, hd)| {
                        app(&self.net, i, hd)
                            .events()
                            .any(|(_, e)| matches!(e, IpCmEvent::Disconnected { .. }))
                    });
        }
        report.sim_end = self.net.sim().now();
        let stats = self.net.sim().stats();
        report.packets = stats.packets;
        report.wire_bytes = stats.bytes;
        if let (Some(path), Some(file)) = (&args.pcap, pcap) {
            if let Some(c) = self.net.sim_mut().take_capture() {
                match crate::pcap_out::replace(file, &c.into_bytes()) {
                    Ok(()) => report.pcap = Some(path.clone()),
                    Err(e) => report.pcap_error = Some(format!("--pcap {path}: {e}")),
                }
            }
        }
    }

    fn host<R>(
        &mut self,
        i: usize,
        f: impl FnOnce(&mut ipoib_fabric::node::host::Host) -> Result<R, ipcm::IpCmAppError>,
    ) -> Result<R, String> {
        self.net
            .with_host(i, |host, _| f(host))
            .ok_or("no host")?
            .map_err(|e| e.to_string())
    }

    /// Runs until host `i`'s service has completions, and takes them.
    fn wait_completions(&mut self, i: usize) -> Result<Vec<Completion>, String> {
        let hd = self.h[if i == SERVER { 0 } else { 1 }];
        let deadline = self.net.sim().now() + STEP_LIMIT;
        let got = self
            .net
            .run_until_with(deadline, |n| app(n, i, hd).completions().next().is_some());
        if !got {
            return Err(format!(
                "host {i}: no completion in {} s",
                STEP_LIMIT.as_secs()
            ));
        }
        let taken = with_app(&mut self.net, i, hd, |a, _| {
            Ok::<_, String>(a.take_completions())
        })?;
        Ok(taken.into_iter().map(|(_, _, c)| c).collect())
    }

    /// Runs until host `i` received a message; returns it (send completions on the way are
    /// checked for errors).
    fn wait_recv(&mut self, i: usize) -> Result<Completion, String> {
        loop {
            let mut recv = None;
            for c in self.wait_completions(i)? {
                if c.status != WcStatus::Success {
                    return Err(format!(
                        "host {i}: {:?} completed with {:?}",
                        c.opcode, c.status
                    ));
                }
                if c.opcode == WcOpcode::Recv && recv.is_none() {
                    recv = Some(c);
                }
            }
            if let Some(c) = recv {
                return Ok(c);
            }
        }
    }
}

fn app(net: &Subnet, i: usize, h: IpCmHandle) -> &IpCmApp {
    net.host_device(i)
        .app::<IpCmApp>(h.app)
        .expect("the service is installed")
}

fn with_app<R, E: std::fmt::Display>(
    net: &mut Subnet,
    i: usize,
    h: IpCmHandle,
    f: impl FnOnce(&mut IpCmApp, Instant) -> Result<R, E>,
) -> Result<R, String> {
    net.with_host(i, |host, now| match host.app_mut::<IpCmApp>(h.app) {
        Some(a) => f(a, now).map_err(|e| e.to_string()),
        None => Err("the service is not installed".to_string()),
    })
    .ok_or("no host")?
}

/// Host `i`'s IPv4 address, or its IPv6 link-local one.
fn ip_of(net: &Subnet, i: usize, v6: bool) -> Result<IpAddr, String> {
    let a = net.ipoib_app(i).ok_or("no IPoIB interface")?;
    if v6 {
        a.ip()
            .ipv6()
            .first()
            .map(|a| IpAddr::V6(*a))
            .ok_or_else(|| format!("host {i} has no IPv6 address"))
    } else {
        a.ip()
            .ipv4()
            .map(IpAddr::V4)
            .ok_or_else(|| format!("host {i} has no IPv4 address"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("1M"), Ok(1 << 20));
        assert_eq!(parse_size("1GiB"), Ok(1 << 30));
        assert_eq!(parse_size("4k"), Ok(4096));
        assert_eq!(parse_size("1073741824"), Ok(1 << 30));
        assert_eq!(parse_size("0"), Ok(0));
        assert!(parse_size("x").is_err());
        assert!(parse_size("99999999999G").is_err());
    }

    #[test]
    fn work_requests_are_bounded() {
        assert_eq!(check_pieces(1 << 30, 4096), Ok(()));
        assert_eq!(check_pieces(MAX_PIECES, 1), Ok(()));
        assert_eq!(check_pieces(0, 1), Ok(()));
        let e = check_pieces(1 << 30, 1).unwrap_err();
        assert!(e.contains("--size 1073741824 in --chunk 1 pieces"), "{e}");
        assert!(e.contains("1073741824 RDMA WRITE work requests"), "{e}");
        assert!(e.contains("at least 4096"), "{e}");
        assert!(check_pieces(MAX_PIECES + 1, 1).is_err());
        // The larger chunk it names is enough.
        assert_eq!(
            check_pieces(1_000_000_007, 1_000_000_007u64.div_ceil(MAX_PIECES)),
            Ok(())
        );
    }

    #[test]
    fn ping_messages_are_rpings() {
        let m = ping_message(3);
        assert_eq!(m.len(), MSG_LEN);
        assert!(m.starts_with(b"rdma-ping-3: $%&"));
        assert_eq!(m[MSG_LEN - 1], 0);
        assert_ne!(ping_message(4), m);
    }

    #[test]
    fn fill_depends_on_position_and_seed() {
        let (mut a, mut b) = (vec![0u8; 100], vec![0u8; 100]);
        fill(&mut a, 1);
        fill(&mut b, 2);
        assert_ne!(a, b);
        assert_ne!(a[..8], a[8..16]);
    }
}

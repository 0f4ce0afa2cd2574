//! Benchmark: OpenSM's SA answering N FullMember joins of the IPoIB broadcast group, the SA work
//! `ipoib sim --hosts N` does (the comparison docs/benchmarks/subnet.md makes).
//!
//! ```sh
//! cargo run --release -p ipoib-runtime --example opensm_joins -- \
//!     [--hosts N] [--window W] [--timeout SECS] [--json]
//! ```
//!
//! Builds the fat tree of `Topology::fat_tree(N)` as an ibsim net file, starts ibsim (limits
//! raised past its 2,048-node defaults, as scripts/bench-sim.sh does) and OpenSM on `h0` with its
//! defaults (`ipoib_runtime::ibsim::opensm`), and waits for OpenSM's subnet dump to list all N CA
//! ports Active. Then one ibsim client on `h1` sends N SubnAdmSet(MCMemberRecord) joins of the
//! default partition's broadcast group `ff12:401b:ffff::ffff:ffff`, one per CA port, PortGID =
//! that port's GID (subnet prefix + the port GUID from OpenSM's dump), JoinState FullMember,
//! ComponentMask MGID | PortGID | JoinState | P_Key: the request Linux IPoIB sends for the
//! broadcast group (`ipoib_multicast.c` `ipoib_mcast_join`); the interface of `ipoib sim`
//! (`proto::ipoib`, `mcast.rs` `send_join`) sends the same without the P_Key component. Every
//! join but h1's own is a join on behalf of another port, which OpenSM accepts for ports sharing
//! a P_Key (docs/OPENSM-NOTES.md). ibsim takes at most 10 clients, so N hosts cannot each send
//! their own.
//!
//! Requests are pipelined with at most W outstanding and matched to responses by the low 48 bits
//! of the TransactionID (ibsim rewrites the top 16 to route the response back: `IbsimClient`).
//! A request unanswered after 2 s is sent again, at most 3 times. The time reported is from the
//! first request sent to the last response received. Each SUCCESS record is checked: PortGID
//! echoed, FullMember bit set, one MLID for all. OpenSM answers a join before it routes the group,
//! so the program then polls every leaf switch's MFT entry for that MLID (LID-routed SubnGet from
//! a second client) and also reports when all of them carry all their CA ports: the point where
//! `ipoib sim` counts a host as joined (its SM has programmed the tree).
//!
//! Bounded: everything (start, sweep, joins) gives up at `--timeout` (default 300 s), prints what
//! it has and exits with status 2; ibsim and OpenSM are killed on every exit path. Without ibsim
//! or OpenSM installed it prints why and exits 0. Not run by the test suite (benchmark only).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use ipoib_fabric::hw::topology::{NodeKind, Topology};
use ipoib_runtime::ibsim::opensm::{smp_get_on, Fabric, FabricConfig, Setup};
use ipoib_runtime::ibsim::IbsimClient;
use ipoib_wire::ipoib::mcast::{broadcast_mgid, Scope};
use ipoib_wire::mad::attr::smp::MULTICAST_FORWARDING_TABLE;
use ipoib_wire::mad::{MadHeaderRepr, MadStatus, MgmtClass};
use ipoib_wire::sa::{mcr_mask, JoinState, McMemberRecordRepr, SaAttribute, SaMadRepr};
use ipoib_wire::smp::{mft_modifier, MftBlockRepr};
use ipoib_wire::{Gid, PKey};

/// How long one request may stay unanswered before it is sent again.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(2);
/// Sends per request at most (the first and the retries).
const MAX_SENDS: u32 = 4;
/// TIDs are `TID_BASE + index` in the low 48 bits.
const TID_BASE: u64 = 0x4a_0000_0000;

/// OpenSM's SA answering the broadcast joins of every host of a fat tree on ibsim.
#[derive(clap::Parser)]
struct Args {
    /// Hosts of the fat tree (at least 2: the client sits on h1).
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(2..))]
    hosts: u64,
    /// Joins outstanding.
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u64).range(1..))]
    window: u64,
    /// Seconds the whole run may take.
    #[arg(long, default_value_t = 300)]
    timeout: u64,
    /// The report as one JSON line.
    #[arg(long)]
    json: bool,
}

/// `topo` in ibsim's net-file format (the format `Topology::parse_net` reads back).
fn net_file(topo: &Topology) -> String {
    let mut s = String::new();
    for (i, n) in topo.nodes().iter().enumerate() {
        let kind = match n.kind {
            NodeKind::Switch => "Switch",
            NodeKind::Ca => "Hca",
        };
        let _ = writeln!(s, "{kind}\t{} \"{}\"", n.ports, n.name);
        for p in 1..=n.ports {
            if let Some((peer, _)) = topo.peer(i, p) {
                let _ = writeln!(
                    s,
                    "[{p}]\t\"{}\"[{}]",
                    topo.nodes()[peer.node].name,
                    peer.port
                );
            }
        }
        s.push('\n');
    }
    s
}

/// One join in flight or done.
#[derive(Clone, Copy)]
struct Join {
    sends: u32,
    sent_at: Option<Instant>,
    rtt: Option<Duration>,
}

/// What the run measured.
#[derive(Default)]
struct Report {
    hosts: usize,
    window: usize,
    sweep: Option<Duration>,
    first: Option<Instant>,
    first_to_last: Option<Duration>,
    mfts: Option<Duration>,
    /// From the start of the round of MFT reads before the last to the end of the last: the last
    /// leaf was completed within that span (the resolution of `mfts`).
    mft_round: Option<Duration>,
    answered: usize,
    statuses: BTreeMap<String, usize>,
    retries: u64,
    undelivered: u64,
    stray: u64,
    bad_records: u64,
    mlids: Vec<u16>,
    rtt_us: Vec<u64>,
    opensm_rss_kib: Option<u64>,
    error: Option<String>,
}

fn main() -> ExitCode {
    let args = <Args as clap::Parser>::parse();
    let deadline = Instant::now() + Duration::from_secs(args.timeout);
    let mut report = Report {
        hosts: args.hosts as usize,
        window: args.window as usize,
        ..Report::default()
    };
    match run(&args, deadline, &mut report) {
        Ok(true) => {}
        Ok(false) => {
            println!(
                "OpenSM on ibsim: skipped ({})",
                report.error.unwrap_or_default()
            );
            return ExitCode::SUCCESS;
        }
        Err(e) => report.error = Some(e),
    }
    print_report(&report, args.json);
    if report.error.is_some() {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    }
}

/// `Ok(false)`: skipped (reason in `report.error`); `Err`: gave up (the report keeps what was
/// measured).
fn run(args: &Args, deadline: Instant, report: &mut Report) -> Result<bool, String> {
    let n = args.hosts as usize;
    let topo = Topology::fat_tree(n).map_err(|e| format!("fat tree of {n} hosts: {e}"))?;
    let net = net_file(&topo);
    // ibsim's limits, as scripts/bench-sim.sh raises them: nodes, switches, ports, LFT size.
    let ibsim_args = [
        "-N".to_string(),
        (n + 1000).to_string(),
        "-S".into(),
        "1024".into(),
        "-P".into(),
        (n * 4 + 40000).to_string(),
        "-L".into(),
        "49152".into(),
    ];
    let left = deadline.saturating_duration_since(Instant::now());
    let started = Instant::now();
    let cfg = FabricConfig {
        ibsim_args: ibsim_args.to_vec(),
        subnet_up: left,
        ..FabricConfig::new(&net, "h0", "h1")
    };
    let mut fabric = match Fabric::start_with(&cfg).map_err(|e| e.to_string())? {
        Setup::Ready(f) => f,
        Setup::Skip(why) => {
            report.error = Some(why);
            return Ok(false);
        }
    };
    let ports = fabric
        .wait_ca_ports(n, deadline)
        .map_err(|e| format!("{e}\n{}", fabric.logs()))?;
    report.sweep = Some(started.elapsed());
    let client = fabric
        .client("h1")
        .map_err(|e| format!("client on h1: {e}\n{}", fabric.logs()))?;
    let prefix = client
        .port_info()
        .map_err(|e| format!("PortInfo of h1: {e}"))?
        .gid_prefix;
    let gids: Vec<Gid> = ports
        .iter()
        .map(|p| Gid::new(prefix, p.port_guid))
        .collect();
    let result = joins(
        &client,
        fabric.sm_lid,
        &gids,
        args.window as usize,
        deadline,
        report,
    );
    let result = result.and_then(|()| mfts(&fabric, deadline, report));
    report.opensm_rss_kib = fabric.opensm_rss_kib();
    let alive = fabric.check_alive().map_err(|e| e.to_string());
    result.and(alive).map(|()| true)
}

/// Polls every leaf switch's MulticastForwardingTable entry for the group's MLID (LID-routed
/// SubnGet, IBA 1 §14.2.5.12: modifier bits 31-28 the 16-port position, bits 8-0 the 32-entry
/// block; `ipoib_wire::smp::mft_modifier`) until each has the bits of all its CA-facing ports, i.e. OpenSM has programmed the
/// tree every member needs. OpenSM answers a join before it routes the group (`osm_sm_mcgrp_join`
/// only schedules the update), so this is the point `ipoib sim` counts as joined. A leaf found
/// complete is not read again; `report.mfts` is from the first join sent to the round of reads
/// that found the last leaf complete (an upper bound; `report.mft_round` says by how much at most).
fn mfts(fabric: &Fabric, deadline: Instant, report: &mut Report) -> Result<(), String> {
    let (Some(first), [mlid]) = (report.first, report.mlids.as_slice()) else {
        return Err(format!("no single MLID to check: {:x?}", report.mlids));
    };
    if mft_modifier(*mlid, 0).is_none() {
        return Err(format!("MLID {mlid:#x} is not multicast"));
    }
    // Leaf LID -> its ports cabled to a CA.
    let mut leaves: BTreeMap<u16, Vec<u8>> = BTreeMap::new();
    for p in fabric.subnet_dump() {
        if p.kind == "SW" && (p.peer_kind == "CA" || p.peer_kind == "CA-SM") {
            leaves.entry(p.lid).or_default().push(p.port_num);
        }
    }
    let smp = fabric
        .smp_client("h1")
        .map_err(|e| format!("QP0 client on h1: {e}"))?;
    let mut previous_round: Option<Instant> = None;
    while !leaves.is_empty() {
        let round = Instant::now();
        if round >= deadline {
            return Err(format!(
                "gave up at the deadline: {} leaf switches without the group's MFT entries",
                leaves.len()
            ));
        }
        let mut done = Vec::new();
        for (&lid, ports) in &leaves {
            let mut complete = true;
            let max_position = ports.iter().max().copied().unwrap_or(0) / 16;
            for position in 0..=max_position {
                let (m, entry) = mft_modifier(*mlid, position).ok_or_else(|| {
                    format!("MLID {mlid:#x}: no MFT entry at position {position}")
                })?;
                let data = smp_get_on(&smp, lid, MULTICAST_FORWARDING_TABLE, m)
                    .map_err(|e| format!("MFT of LID {lid}: {e}"))?;
                let mask = MftBlockRepr::parse(&data)
                    .map_err(|e| format!("MFT of LID {lid}: {e}"))?
                    .port_masks[entry];
                complete &= ports
                    .iter()
                    .filter(|&&p| p / 16 == position)
                    .all(|&p| mask & (1 << (p % 16)) != 0);
            }
            if complete {
                done.push(lid);
            }
        }
        for lid in done {
            leaves.remove(&lid);
        }
        if leaves.is_empty() {
            report.mfts = Some(first.elapsed());
            report.mft_round = Some(previous_round.unwrap_or(round).elapsed());
        } else {
            previous_round = Some(round);
            std::thread::sleep(Duration::from_millis(5));
        }
    }
    Ok(())
}

/// Sends the joins for `gids` to the SA at `sa_lid`, at most `window` outstanding.
fn joins(
    client: &IbsimClient,
    sa_lid: u16,
    gids: &[Gid],
    window: usize,
    deadline: Instant,
    report: &mut Report,
) -> Result<(), String> {
    let mgid = broadcast_mgid(PKey::DEFAULT, Scope::LinkLocal);
    let request = |i: usize| {
        let rec = McMemberRecordRepr {
            mgid,
            port_gid: gids[i],
            pkey: PKey::DEFAULT,
            join_state: JoinState::FULL_MEMBER,
            ..McMemberRecordRepr::default()
        };
        SaMadRepr::mcmember_join(TID_BASE + i as u64, rec, mcr_mask::JOIN | mcr_mask::P_KEY)
            .to_bytes()
    };
    let mut state = vec![
        Join {
            sends: 0,
            sent_at: None,
            rtt: None,
        };
        gids.len()
    ];
    let mut next = 0usize;
    // Outstanding requests by send time (for timeouts), oldest first.
    let mut outstanding: BTreeMap<(Instant, usize), ()> = BTreeMap::new();
    let mut first: Option<Instant> = None;
    let mut last: Option<Instant> = None;
    let send = |i: usize, state: &mut [Join], out: &mut BTreeMap<(Instant, usize), ()>| {
        client
            .send_mad(sa_lid, 1, &request(i))
            .map_err(|e| format!("sending join {i}: {e}"))?;
        let now = Instant::now();
        state[i].sends += 1;
        state[i].sent_at = Some(now);
        out.insert((now, i), ());
        Ok::<Instant, String>(now)
    };
    while report.answered < gids.len() {
        while outstanding.len() < window && next < gids.len() {
            let t = send(next, &mut state, &mut outstanding)?;
            first.get_or_insert(t);
            report.first = first;
            next += 1;
        }
        let now = Instant::now();
        if now >= deadline {
            report.first_to_last = first.zip(last).map(|(f, l)| l - f);
            return Err(format!(
                "gave up at the deadline: {} of {} joins answered, {} outstanding",
                report.answered,
                gids.len(),
                outstanding.len()
            ));
        }
        // Resend what timed out.
        while let Some((&(at, i), _)) = outstanding.first_key_value() {
            if now.duration_since(at) < REQUEST_TIMEOUT {
                break;
            }
            outstanding.remove(&(at, i));
            if state[i].sends >= MAX_SENDS {
                report.first_to_last = first.zip(last).map(|(f, l)| l - f);
                return Err(format!("join {i} unanswered after {MAX_SENDS} sends"));
            }
            report.retries += 1;
            send(i, &mut state, &mut outstanding)?;
        }
        let wait = outstanding
            .first_key_value()
            .map(|(&(at, _), _)| (at + REQUEST_TIMEOUT).saturating_duration_since(now))
            .unwrap_or(REQUEST_TIMEOUT)
            .min(deadline.saturating_duration_since(now))
            .max(Duration::from_millis(1));
        let Some(m) = client.recv(wait).map_err(|e| format!("receiving: {e}"))? else {
            continue;
        };
        let got = Instant::now();
        let tid = tid48(&m.mad);
        let Some(i) = tid
            .checked_sub(TID_BASE)
            .and_then(|i| usize::try_from(i).ok())
            .filter(|&i| i < gids.len() && state[i].rtt.is_none())
        else {
            report.stray += 1;
            continue;
        };
        if m.head.status != 0 {
            // ibsim handed the request back: leave it to the timeout to resend.
            report.undelivered += 1;
            continue;
        }
        let Ok(hdr) = MadHeaderRepr::parse_bytes(&m.mad) else {
            report.stray += 1;
            continue;
        };
        if !hdr.method.is_response() {
            report.stray += 1;
            continue;
        }
        let Some(sent_at) = state[i].sent_at else {
            report.stray += 1;
            continue;
        };
        outstanding.remove(&(sent_at, i));
        state[i].rtt = Some(got - sent_at);
        report.rtt_us.push((got - sent_at).as_micros() as u64);
        report.answered += 1;
        last = Some(got);
        *report.statuses.entry(status_name(hdr.status)).or_default() += 1;
        if hdr.status.is_success() {
            match SaMadRepr::parse(&m.mad).map(|r| r.attribute) {
                Ok(SaAttribute::McMemberRecord(r))
                    if r.port_gid == gids[i]
                        && r.mgid == mgid
                        && r.join_state.0 & JoinState::FULL_MEMBER.0 != 0 =>
                {
                    if !report.mlids.contains(&r.mlid) {
                        report.mlids.push(r.mlid);
                    }
                }
                _ => report.bad_records += 1,
            }
        }
    }
    report.first_to_last = first.zip(last).map(|(f, l)| l - f);
    Ok(())
}

fn tid48(mad: &[u8]) -> u64 {
    mad.get(8..16)
        .and_then(|b| <[u8; 8]>::try_from(b).ok())
        .map(|b| u64::from_be_bytes(b) & 0x0000_ffff_ffff_ffff)
        .unwrap_or(0)
}

fn status_name(s: MadStatus) -> String {
    if s.is_success() {
        "SUCCESS".into()
    } else {
        format!("{} ({:#06x})", s.name(MgmtClass::SubnAdm), s.0)
    }
}

fn percentile(sorted: &[u64], p: usize) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    sorted[(sorted.len() - 1) * p / 100]
}

fn print_report(r: &Report, json: bool) {
    let mut rtt = r.rtt_us.clone();
    rtt.sort_unstable();
    let ns = |d: Option<Duration>| d.map_or(0, |d| d.as_nanos() as u64);
    let success = r.statuses.get("SUCCESS").copied().unwrap_or(0);
    if json {
        let statuses: Vec<String> = r
            .statuses
            .iter()
            .map(|(k, v)| format!("\"{}\":{v}", k.replace('"', "'")))
            .collect();
        println!(
            "{{\"hosts\":{},\"window\":{},\"sweep_ns\":{},\"first_to_last_ns\":{},\"mfts_ns\":{},\"mft_round_ns\":{},\"answered\":{},\
             \"success\":{},\"statuses\":{{{}}},\"retries\":{},\"undelivered\":{},\"stray\":{},\
             \"bad_records\":{},\"mlids\":{},\"rtt_p50_us\":{},\"rtt_p99_us\":{},\"rtt_max_us\":{},\
             \"opensm_rss_kib\":{},\"error\":{}}}",
            r.hosts,
            r.window,
            ns(r.sweep),
            ns(r.first_to_last),
            ns(r.mfts),
            ns(r.mft_round),
            r.answered,
            success,
            statuses.join(","),
            r.retries,
            r.undelivered,
            r.stray,
            r.bad_records,
            r.mlids.len(),
            percentile(&rtt, 50),
            percentile(&rtt, 99),
            rtt.last().copied().unwrap_or(0),
            r.opensm_rss_kib.unwrap_or(0),
            r.error
                .as_ref()
                .map_or("null".to_string(), |e| format!("{:?}", e.lines().next().unwrap_or(""))),
        );
        if let Some(e) = &r.error {
            eprintln!("{e}");
        }
        return;
    }
    let secs =
        |d: Option<Duration>| d.map_or("n/a".to_string(), |d| format!("{:.3} s", d.as_secs_f64()));
    println!(
        "OpenSM on ibsim, {} hosts: bring-up (ibsim start to a subnet dump with every CA port Active) {}",
        r.hosts,
        secs(r.sweep)
    );
    let rate = r
        .first_to_last
        .filter(|d| !d.is_zero())
        .map_or(0.0, |d| r.answered as f64 / d.as_secs_f64());
    println!(
        "  {} joins through one client, window {}: first request to last response {} \
         ({rate:.0} joins/s), {} answered, {success} SUCCESS",
        r.hosts,
        r.window,
        secs(r.first_to_last),
        r.answered
    );
    println!(
        "  broadcast group in every leaf's MFT (all CA ports): {} after the first request \
         (polled: the last leaf completed within the {} before)",
        secs(r.mfts),
        secs(r.mft_round)
    );
    println!("  statuses: {:?}", r.statuses);
    println!(
        "  round trip p50 {} us, p99 {} us, max {} us; retries {}, undelivered {}, stray {}, \
         bad records {}, MLIDs {:x?}; OpenSM RSS {} KiB",
        percentile(&rtt, 50),
        percentile(&rtt, 99),
        rtt.last().copied().unwrap_or(0),
        r.retries,
        r.undelivered,
        r.stray,
        r.bad_records,
        r.mlids,
        r.opensm_rss_kib
            .map_or("n/a".to_string(), |k| k.to_string())
    );
    if let Some(e) = &r.error {
        println!("  GAVE UP: {e}");
    }
}

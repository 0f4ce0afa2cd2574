//! All but the last packet of a connected-mode message take no round of the receiving host
//! (`Host::receive_frame`, `Hca::took_quietly`: a SEND First or Middle taken in order, IBA 1
//! §9.7.5.2, gives nothing to poll, flush or time), and nothing else changes: the capture, the
//! packets each IP stack gets, the simulator's event and packet counts are those of the same
//! run with a round per packet (`Host::set_quiet_rounds(false)`).

use ipoib_fabric::hw::link::{Fault, LinkId};
use ipoib_fabric::hw::sim::SimStats;
use ipoib_fabric::hw::topology::Topology;
use ipoib_fabric::node::host::Host;
use ipoib_fabric::node::subnet::{IpoibOptions, Subnet};
use ipoib_fabric::testing::*;
use ipoib_proto::ipoib::ConnectedConfig;
use std::net::Ipv4Addr;
use std::time::Duration;

fn a4(i: usize) -> Ipv4Addr {
    Ipv4Addr::new(10, 0, 0, i as u8 + 1)
}

fn host(net: &mut Subnet, i: usize) -> &mut Host {
    let node = net.host(i).node;
    net.sim_mut().node_mut::<Host>(node).expect("host")
}

struct Outcome {
    pcap: Vec<u8>,
    got: [Vec<Vec<u8>>; 2],
    quiet: [u64; 2],
    stats: SimStats,
    /// 65,520-byte packets each host sent.
    big: [u64; 2],
}

/// Two hosts with external IP in connected mode (RFC 4755, MTU 65520): 65,520-byte packets
/// both ways in batches, the other way a small answer after each batch, and one batch whose
/// packets the stack hands over while earlier ones are still on the wire.
fn transfer(seed: u64, quiet: bool) -> Outcome {
    transfer_with(seed, quiet, false, &[])
}

/// [`transfer`] over UC when `uc` (RFC 4755 §4: a UC connection), with `faults` on every link
/// once the subnet is up.
fn transfer_with(seed: u64, quiet: bool, uc: bool, faults: &[Fault]) -> Outcome {
    let mut o = options(Topology::single_switch(2).unwrap(), seed);
    let mut ip = IpoibOptions::external();
    ip.configure = Some(if uc {
        |_, c| {
            let mut cc = ConnectedConfig::rc();
            (cc.uc, cc.prefer_uc) = (true, true);
            c.connected = Some(cc)
        }
    } else {
        |_, c| c.connected = Some(ConnectedConfig::rc())
    });
    o.ipoib = Some(ip);
    let mut net = up(o, false);
    for i in 0..2 {
        host(&mut net, i).set_quiet_rounds(quiet);
    }
    let links: Vec<_> = (0..net.sim().links().len()).map(LinkId).collect();
    for l in links {
        net.sim_mut().set_faults(l, None, faults.to_vec());
    }
    let big = |from: usize, fill: u8| udp4(a4(from), a4(1 - from), 64, &vec![fill; 65_520 - 28]);
    let small = |from: usize| udp4(a4(from), a4(1 - from), 64, b"ack");
    let mut got = [Vec::new(), Vec::new()];
    let mut sent = [0u64; 2];
    // The first packet opens the connection (REQ, REP, RTU) over UD.
    from_os(&mut net, 0, &small(0));
    run_for(&mut net, Duration::from_millis(200));
    for k in 0..6u8 {
        let from = usize::from(k % 3 == 2);
        for j in 0..4u8 {
            from_os(&mut net, from, &big(from, k * 4 + j));
            sent[from] += 1;
        }
        // Half a message's time on the wire, then more while it is still arriving.
        run_for(&mut net, Duration::from_micros(8));
        from_os(&mut net, from, &big(from, 0xee));
        sent[from] += 1;
        run_for(&mut net, Duration::from_millis(1));
        from_os(&mut net, 1 - from, &small(1 - from));
        run_for(&mut net, Duration::from_millis(1));
        for (i, g) in got.iter_mut().enumerate() {
            g.extend(to_os(&mut net, i));
        }
    }
    Outcome {
        quiet: [0, 1].map(|i| host(&mut net, i).counters().quiet_packets),
        stats: net.sim().stats(),
        pcap: net.sim_mut().take_capture().expect("capture").into_bytes(),
        got,
        big: sent,
    }
}

// RFC 4755 §3: a 65,520-byte packet is one RC SEND of 16 packets at the 4,096-byte path MTU
// (IBA 1 §9.7.5.2: SEND First, 14 Middle, Last); all but the Last take no round.
#[test]
fn a_messages_packets_before_its_last_take_no_round_and_change_nothing() {
    let seed = seed(131);
    let _g = SeedGuard(seed);
    let with = transfer(seed, true);
    let without = transfer(seed, false);
    assert_eq!(without.quiet, [0, 0]);
    assert_eq!(
        with.quiet,
        [with.big[1] * 15, with.big[0] * 15],
        "every packet but the last without a round"
    );
    for (i, g) in with.got.iter().enumerate() {
        let big = g.iter().filter(|p| p.len() == 65_520).count() as u64;
        assert_eq!(big, with.big[1 - i], "host {i} got every large packet");
    }
    assert_eq!(with.got, without.got, "the same packets to each stack");
    assert_eq!(with.stats, without.stats, "the same events and packets");
    assert!(with.pcap == without.pcap, "the same capture, byte for byte");
}

// The same with packets dropped, duplicated and reordered on the links (the RC responder's
// NAKs, IBA 1 §9.7.5.2.x, and its silent drops after one), and over UC (IBA 1 §9.8.3: a
// message whose packet was lost is dropped without a word): what each host sends and
// delivers is that of a round per packet.
#[test]
fn with_faults_and_over_uc_a_quiet_packet_changes_nothing() {
    let faults = [
        Fault::Drop(0.01),
        Fault::Duplicate(0.01),
        Fault::Reorder {
            p: 0.01,
            delay: Duration::from_micros(3),
        },
    ];
    for (uc, f) in [(false, &faults[..]), (true, &[][..]), (true, &faults[..])] {
        let seed = seed(137);
        let _g = SeedGuard(seed);
        let with = transfer_with(seed, true, uc, f);
        let without = transfer_with(seed, false, uc, f);
        eprintln!(
            "uc {uc} faults {} quiet {:?} big {:?}",
            f.len(),
            with.quiet,
            with.big
        );
        assert!(with.quiet.iter().sum::<u64>() > 0, "uc {uc}: quiet packets");
        assert_eq!(
            with.got, without.got,
            "uc {uc}: the same packets to each stack"
        );
        assert_eq!(
            with.stats, without.stats,
            "uc {uc}: the same events and packets"
        );
        assert!(
            with.pcap == without.pcap,
            "uc {uc}: the same capture, byte for byte"
        );
    }
}

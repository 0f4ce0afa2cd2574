//! A hostile host and a hostile fabric with well-formed input (docs/UDP-FABRIC.md): the garbage
//! tests of `remote_fabric` rarely pass a parse or a CRC, so these build what does. A host whose
//! InfiniBand packets carry its own SLID, GID and P_Key (the slot's checks pass them, IBA 1
//! §7.11.1, §8.3.1, §10.9.2) but random bytes everywhere else, a fabric that sends a host
//! PortConfig and ClientReregister messages of any field values, and peers sending every message
//! type with right, wrong and no session ids: nothing panics (the tests run in the debug profile,
//! with overflow checks), the honest hosts still talk, and the fabric's sessions stay consistent.

#[path = "common/remote.rs"]
mod remote;

use ipoib_fabric::node::remote::FabricServer;
use ipoib_fabric::testing::udp4;
use ipoib_fabric::Instant;
use ipoib_proto::rng::Rng;
use ipoib_wire::packet::fill_crcs;
use ipoib_wire::udp_fabric::{DatagramRepr, MessageRepr, PortConfigRepr, PortStateCode};
use ipoib_wire::{Guid, Mtu, PKey, Rate};
use remote::{addr, Net};
use std::net::Ipv4Addr;
use std::time::Duration;

const SEC: Duration = Duration::from_secs(1);

/// One of `v`.
fn pick(rng: &mut Rng, v: &[u64]) -> u64 {
    v[(rng.next_u64() % v.len() as u64) as usize]
}

/// Changes a few bytes of `p` (an IBA packet, LRH through VCRC) other than the identity the slot
/// checks (SLID, SGID, P_Key) and VL15, or its length; the CRCs are filled afterwards.
fn mutate(rng: &mut Rng, p: &mut Vec<u8>) {
    let bth = if p[1] & 3 == 3 { 48 } else { 8 };
    if p.len() < bth + 12 + 6 {
        return;
    }
    let kind = rng.next_u64() % 8;
    for _ in 0..1 + rng.next_u64() % 6 {
        match kind {
            // The BTH but its P_Key (opcode, flags, pad count, destination QP, PSN).
            0 | 1 => {
                let i = [0, 1, 4, 5, 6, 7, 8, 9, 10, 11][(rng.next_u64() % 10) as usize];
                p[bth + i] = rng.next_u64() as u8;
            }
            // Extended headers and payload.
            2..=4 => {
                let span = p.len() - 6 - (bth + 12);
                if span > 0 {
                    let i = bth + 12 + (rng.next_u64() as usize % span);
                    p[i] = rng.next_u64() as u8;
                }
            }
            // Any DLID: unicast, multicast, permissive.
            5 => {
                let x = rng.next_u64() & 0xffff;
                let d = pick(rng, &[0, 0xffff, 0xc000, 0xc001, x]) as u16;
                p[2..4].copy_from_slice(&d.to_be_bytes());
            }
            // Shorter or longer by whole words, PktLen to match (IBA 1 §7.7.8).
            6 => {
                let body_end = p.len() - 6;
                let words = (rng.next_u64() % 20) as usize * 4;
                if rng.next_u64().is_multiple_of(2) {
                    let cut = words.min(body_end - (bth + 12)) / 4 * 4;
                    p.drain(body_end - cut..body_end);
                } else {
                    let more: Vec<u8> = (0..words).map(|_| rng.next_u64() as u8).collect();
                    p.splice(body_end..body_end, more);
                }
                let words = (p.len() / 4) as u16;
                let b = u16::from_be_bytes([p[4], p[5]]) & !0x7ff | (words & 0x7ff);
                p[4..6].copy_from_slice(&b.to_be_bytes());
            }
            // LVer, the data VL (never 15), the BTH's pad count and TVer.
            _ => {
                p[0] = (p[0] & 0x70) | (rng.next_u64() as u8 & 0x7f);
                p[bth + 1] ^= (rng.next_u64() as u8) & 0x3f;
            }
        }
    }
}

/// Host 2 of three sends, for a while, every packet of its traffic (ARP, pings or IPoIB-CM,
/// SA queries and joins) with random changes; then it stops, and hosts 0 and 1 still talk.
fn random_content(seed: u64, connected: bool) {
    let mut net = if connected {
        Net::new_external_connected(3, seed)
    } else {
        Net::new(3, seed)
    };
    assert!(
        net.run_until(3 * SEC, |n| (0..3).all(|i| n.carrier(i))),
        "seed {seed}"
    );
    let mut rng = Rng::new(seed ^ 0xdead);
    net.peers[2].tamper = Some(Box::new(move |d: &[u8]| {
        let r = DatagramRepr::parse(d).ok()?;
        let MessageRepr::Packet(p) = r.message else {
            return None;
        };
        let mut p = p.to_vec();
        if rng.next_u64() % 10 < 8 {
            mutate(&mut rng, &mut p);
            fill_crcs(&mut p).ok()?;
        }
        DatagramRepr {
            session: r.session,
            message: MessageRepr::Packet(&p),
        }
        .to_vec()
        .ok()
    }));
    for round in 0..30u8 {
        if connected {
            for dst in [0, 1] {
                let payload = vec![round; 100 + 37 * usize::from(round)];
                net.send_from_os(2, &udp4(addr(2), addr(dst), 64, &payload));
            }
        } else {
            net.ping(2, addr(0));
            net.ping(2, addr(1));
            net.ping(2, Ipv4Addr::new(10, 0, 0, 50 + round));
        }
        net.run_for(Duration::from_millis(50));
        net.take_to_os(0);
        net.take_to_os(1);
    }
    net.peers[2].tamper = None;
    // The changed packets that kept the identity went into the fabric.
    let s = net.fabric.slot(2).unwrap().counters();
    assert!(s.from_host > 0, "seed {seed}: {s:?}");
    net.run_for(SEC);
    if connected {
        let p = udp4(addr(0), addr(1), 64, b"still talking");
        net.send_from_os(0, &p);
        net.run_for(SEC);
        assert!(net.take_to_os(1).contains(&p), "seed {seed}");
    } else {
        assert!(net.ping_and_wait(0, addr(1), 2 * SEC), "seed {seed}");
        assert!(net.ping_and_wait(1, addr(0), 2 * SEC), "seed {seed}");
    }
}

#[test]
fn a_host_sending_valid_packets_of_random_content_harms_no_other() {
    for seed in 1..=12 {
        random_content(seed, seed % 2 == 0);
    }
}

/// A PortConfig of random field values, among them ones no SM writes (LMC 8, LID 0xffff,
/// unknown MTU, rate and state codes, port 0 or 255, 69 P_Keys).
fn random_config(rng: &mut Rng) -> PortConfigRepr {
    let (x, y) = (rng.next_u64() & 0xffff, rng.next_u64() & 0xffff);
    PortConfigRepr {
        port: pick(rng, &[0, 1, 1, 1, 2, 255]) as u8,
        state: PortStateCode::from(pick(rng, &[0, 1, 2, 3, 4, 4, 4, 5, 200]) as u8),
        lmc: pick(rng, &[0, 1, 7, 8, 255]) as u8,
        sm_sl: rng.next_u64() as u8,
        lid: pick(rng, &[0, 1, 2, 0xbfff, 0xc000, 0xfffe, 0xffff, x]) as u16,
        sm_lid: pick(rng, &[0, 1, 0xffff, y]) as u16,
        mtu: Mtu::from(pick(rng, &[0, 1, 2, 3, 4, 5, 6, 15, 255]) as u8),
        rate: Rate::from(pick(rng, &[0, 1, 2, 3, 5, 6, 7, 16, 17, 18, 63, 255]) as u8),
        subnet_prefix: pick(rng, &[0xfe80_0000_0000_0000, 0, u64::MAX]),
        pkeys: (0..rng.next_u64() % 70)
            .map(|_| {
                let x = rng.next_u64() & 0xffff;
                PKey(pick(rng, &[0, 0xffff, 0x7fff, 0x8001, x]) as u16)
            })
            .collect(),
    }
}

/// Host 0 of two is sent configurations of random values, sequenced (the next number or any)
/// and not, and ClientReregisters of any port, while it pings and sends.
fn random_configs(seed: u64, connected: bool) {
    let mut net = if connected {
        Net::new_external_connected(2, seed)
    } else {
        Net::new(2, seed)
    };
    assert!(
        net.run_until(3 * SEC, |n| (0..2).all(|i| n.carrier(i))),
        "seed {seed}"
    );
    let mut rng = Rng::new(seed ^ 0xbeef);
    let session = net.peers[0].host.link().session().unwrap();
    let mut seq = 1000u32;
    for round in 0..40 {
        let config = random_config(&mut rng);
        let message = match round % 5 {
            0 | 2 => {
                seq += 1;
                let any = rng.next_u64().is_multiple_of(4);
                MessageRepr::SeqPortConfig {
                    seq: if any { rng.next_u64() as u32 } else { seq },
                    config,
                }
            }
            1 => MessageRepr::SeqClientReregister {
                seq: rng.next_u64() as u32,
                port: rng.next_u64() as u8,
            },
            3 => MessageRepr::ClientReregister {
                port: rng.next_u64() as u8,
            },
            _ => MessageRepr::PortConfig(config),
        };
        let d = DatagramRepr { session, message }.to_vec().unwrap();
        let now = net.now;
        net.peers[0].host.handle_datagram(now, &d);
        net.ping(0, addr(1));
        if connected {
            net.send_from_os(0, &udp4(addr(0), addr(1), 64, &[1; 3000]));
        }
        net.run_for(Duration::from_millis(30));
        net.take_to_os(0);
        net.take_to_os(1);
    }
    let c = net.peers[0].host.link().counters();
    assert!(c.port_configs > 0, "seed {seed}: {c:?}");
}

#[test]
fn configurations_of_any_values_do_not_panic_a_host() {
    for seed in 1..=16 {
        random_configs(seed, seed % 2 == 0);
    }
}

/// Twelve peers send every message a host sends (AttachRequest with a slot's GUID, another or
/// none as hint and a valid cookie, another peer's, none or any, Keepalive, Detach, ControlAck of any number, Packet) with their session's id,
/// another or none, at random times: every attached slot is held by exactly the peer the
/// fabric maps to it, and no slot's waiting configuration passes its bound.
fn random_peers(seed: u64) {
    let mut f: FabricServer<u8> = FabricServer::build(remote::fabric_opts(4, seed)).unwrap();
    let mut rng = Rng::new(seed);
    let mut now = Instant::ZERO;
    let mut sessions = [0u64; 12];
    let guids: Vec<Guid> = (0..f.slot_count())
        .map(|i| f.slot(i).unwrap().node_guid())
        .collect();
    for _ in 0..1500 {
        now += Duration::from_micros(rng.next_u64() % 400_000);
        let peer = (rng.next_u64() % 12) as u8;
        let session = match rng.next_u64() % 5 {
            0 => rng.next_u64(),
            1 => 0,
            _ => sessions[usize::from(peer)],
        };
        let message = match rng.next_u64() % 7 {
            0 => MessageRepr::AttachRequest {
                hint: match rng.next_u64() % 2 {
                    0 => guids[(rng.next_u64() % guids.len() as u64) as usize],
                    _ => Guid(rng.next_u64() % 3),
                },
                // The peer's own cookie, another peer's, none or any.
                cookie: match rng.next_u64() % 4 {
                    0 | 1 => f.cookie_for(&peer),
                    2 => f.cookie_for(&peer.wrapping_add(1)),
                    _ => rng.next_u64() % 2 * rng.next_u64(),
                },
                nonce: rng.next_u64(),
            },
            1 => MessageRepr::Keepalive {
                seq: rng.next_u64() as u32,
            },
            2 => MessageRepr::Detach,
            3 | 4 => MessageRepr::ControlAck {
                seq: match rng.next_u64() % 2 {
                    0 => (rng.next_u64() % 8) as u32,
                    _ => rng.next_u64() as u32,
                },
            },
            _ => MessageRepr::Packet(&[0; 40]),
        };
        let d = DatagramRepr { session, message }.to_vec().unwrap();
        f.handle_datagram(now, peer, &d);
        f.handle_timeout(now);
        while let Some((to, d)) = f.poll_transmit() {
            let r = DatagramRepr::parse(&d).unwrap();
            if matches!(r.message, MessageRepr::AttachAccept { .. }) {
                sessions[usize::from(to)] = r.session;
            }
        }
        let attached = (0..f.slot_count())
            .filter(|&i| f.slot(i).unwrap().is_attached())
            .count();
        assert_eq!(f.peers().count(), attached, "seed {seed}");
        for (p, i) in f.peers() {
            assert_eq!(f.slot_of(&p), Some(i), "seed {seed}");
            assert!(f.slot(i).unwrap().is_attached(), "seed {seed}");
        }
        for i in 0..f.slot_count() {
            assert!(f.unacked(i).unwrap() <= 4096, "seed {seed}");
        }
    }
    let c = f.counters();
    assert!(c.attached > 0 && c.unknown_session > 0, "{c:?}");
    assert!(c.no_cookie > 0 && c.bad_cookie > 0, "{c:?}");
}

#[test]
fn peers_sending_every_message_keep_the_sessions_consistent() {
    for seed in 1..=3 {
        random_peers(seed);
    }
}

// A host that sends faster than its link carries: what its slot puts on the link waits there
// up to `SLOT_PORT_BUFFER` bytes, and the link discards the rest (counted in the slot's
// `buffer_full`), as a switch's port buffer does. Before, the slot's port had no bound: 10,000
// packets of 4 KiB handed over at one instant (a host sends as fast as its datagrams go)
// waited, all of them, about 41 MB in the fabric's memory, and a host sending faster than the
// link's rate for longer grew it without end.
#[test]
fn a_host_sending_faster_than_its_link_is_held_to_the_ports_buffer() {
    use ipoib_fabric::hw::sim::PortRef;
    use ipoib_fabric::node::remote::SLOT_PORT_BUFFER;
    let mut net = Net::new(2, 21);
    assert!(net.run_until(3 * SEC, |n| (0..2).all(|i| n.carrier(i))));
    let slot = net.fabric.slot(0).unwrap();
    let (lid, port) = (slot.lid(), slot.port());
    let to = net.fabric.slot(1).unwrap().lid();
    let packet = ipoib_fabric::testing::ud_packet(lid, to, 4096, PKey::DEFAULT);
    let session = net.peers[0].host.link().session().unwrap();
    let d = DatagramRepr {
        session,
        message: MessageRepr::Packet(&packet),
    }
    .to_vec()
    .unwrap();
    let now = net.now;
    let before = net.fabric.slot(0).unwrap().counters().from_host;
    for _ in 0..10_000 {
        net.fabric.queue_datagram(now, 0, &d);
    }
    let node = net.fabric.built().nodes[net.fabric.slot_topo_node(0).unwrap()];
    let sim = net.fabric.sim();
    let l = sim.link(sim.link_of(PortRef { node, port }).unwrap());
    let side = usize::from(l.ends[0] != PortRef { node, port });
    let dir = &l.dirs[side];
    let waiting = dir.busy_until.as_nanos() - now.as_nanos();
    let buffer = net.opts.subnet.link.serialisation(SLOT_PORT_BUFFER);
    let one = net.opts.subnet.link.serialisation(packet.len());
    assert!(
        u128::from(waiting) <= (buffer + one).as_nanos(),
        "{waiting} ns of packets wait for the link (buffer {buffer:?})"
    );
    let s = net.fabric.slot(0).unwrap().counters();
    assert!(s.buffer_full > 0, "{s:?}");
    assert_eq!(s.buffer_full, dir.stats.discarded_full);
    assert_eq!(s.from_host - before, 10_000);
    // The honest host still talks once the link drained.
    net.run_for(SEC);
    assert!(net.ping_and_wait(1, addr(0), 2 * SEC));
}

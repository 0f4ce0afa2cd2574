//! The UDP fabric's three processes in one, in memory (tests/common/udp_world.rs): what the
//! runtime's agents do with the OS's packets, deterministically.

#[path = "common/udp_world.rs"]
mod world;

use ipoib_proto::ipoib::IpBuf;
use ipoib_runtime::tun::{OsPort, FRAME_HEADROOM, READ_BUFFER};
use ipoib_runtime::udp_fabric::DatagramPeer;
use std::time::Duration;
use world::{ipv4, World};

/// Both hosts up, and A's first packet to B through (ARP, the IPoIB-CM connection).
fn up() -> World {
    let mut w = World::new(false);
    let carrier = |w: &World| {
        w.a.emu.app().is_some_and(|a| a.carrier()) && w.b.emu.app().is_some_and(|a| a.carrier())
    };
    assert!(w.run(Duration::from_secs(30), carrier), "both hosts up");
    let b0 = w.b.delivered;
    w.send_a(&ipv4(52, 2, 3), 1);
    assert!(w.run(Duration::from_secs(5), |w| w.b.delivered > b0));
    w
}

/// `p` in a read buffer of its own after the headroom, as the TUN endpoint reads it.
fn frame(p: &[u8]) -> Vec<u8> {
    let mut f = vec![0; READ_BUFFER];
    f[FRAME_HEADROOM..FRAME_HEADROOM + p.len()].copy_from_slice(p);
    f.truncate(FRAME_HEADROOM + p.len());
    f
}

// A large packet from the OS is handed to the interface in the buffer it was read into
// (`OsPort::frame_from_os`) and sent from it, with no copy, as in the lab
// (`ipoib_runtime::ipoib_port`): the interface keeps the buffer, and once the message is
// complete its allocation comes back for a later read.
#[test]
fn a_large_packet_from_the_os_is_sent_from_the_buffer_it_was_read_into() {
    let mut w = up();
    let big = ipv4(65_520, 2, 3);
    let first = frame(&big);
    let first_at = first.as_ptr();
    let back = w.a.os.frame_from_os(&mut w.a.emu, first);
    assert!(
        back.is_none_or(|b| b.as_ptr() != first_at),
        "the interface keeps the buffer"
    );
    w.a.os.end_of_batch(&mut w.a.emu);
    let b0 = w.b.delivered;
    assert!(w.run(Duration::from_secs(5), |w| w.b.delivered > b0));
    assert_eq!(w.b.to_os.last().map(|p| p.to_vec()), Some(big.clone()));
    // The message's acknowledgement comes back to A.
    w.run(Duration::from_millis(5), |_| false);
    let back = w.a.os.frame_from_os(&mut w.a.emu, frame(&big));
    assert_eq!(
        back.map(|b| b.as_ptr()),
        Some(first_at),
        "the first packet's buffer, its message complete, for the next read"
    );
}

// The buffers of the datagrams an attach process sent come back to its host
// (`DatagramPeer::recycle`, as `UdpEndpoint::flush` gives them), whose HCA builds its next
// packets in them rather than in new allocations.
#[test]
fn a_hosts_next_packets_are_built_in_the_buffers_of_those_it_sent() {
    let mut w = up();
    let spare = vec![0xee; 4200];
    let at = spare.as_ptr();
    w.a.emu.recycle(spare);
    let b0 = w.b.delivered;
    w.send_a(&ipv4(65_520, 2, 3), 1);
    assert!(
        w.a.sent.iter().any(|o| o.body.as_ptr() == at),
        "a packet built in the buffer given back"
    );
    assert!(w.run(Duration::from_secs(5), |w| w.b.delivered > b0));
}

// A packet given to the OS, once written, comes back to the emulation (`OsPort::recycle_to_os`,
// as `TunEndpoint::flush` gives back the writer thread's batches): its allocation is kept by the
// host (`Simulator::recycle`) for the next datagram it receives, and goes round from there (the
// datagram's copy, then the HCA's next packet built), not freed.
#[test]
fn a_packet_written_to_the_os_comes_back_for_the_hosts_next_packets() {
    let mut w = up();
    let buf = vec![0xee; 4_200];
    let at = buf.as_ptr();
    w.b.os.recycle_to_os(&mut w.b.emu, IpBuf::new(buf, 44));
    let mut seen = false;
    for _ in 0..4 {
        let (a0, b0) = (w.a.delivered, w.b.delivered);
        w.send_a(&ipv4(52, 2, 3), 1);
        assert!(w.run(Duration::from_secs(5), |w| w.b.delivered > b0));
        w.send_b(&ipv4(52, 3, 2));
        seen |= w.b.sent.iter().any(|o| o.body.as_ptr() == at);
        assert!(w.run(Duration::from_secs(5), |w| w.a.delivered > a0));
        seen |= w.b.sent.iter().any(|o| o.body.as_ptr() == at);
    }
    assert!(seen, "a packet of B's built in the allocation given back");
}

//! A byte stream each way under random interleaving: segmentation at the peer's receive size,
//! in-order reassembly, credits that never overrun a receive queue, and no livelock. RC delivers in
//! order and loses nothing, so neither happens here; what is random is which side acts next and
//! how much it writes or reads (seeded, [`crate::rng::Rng`]; a failing seed is printed).

use super::*;
use crate::rng::Rng;

/// Bytes `i` of a direction's stream.
fn byte(dir: u8, i: usize) -> u8 {
    (i as u8)
        .wrapping_mul(31)
        .wrapping_add(dir)
        .wrapping_add((i >> 8) as u8)
}

struct Dir {
    sent: usize,
    got: usize,
}

/// Runs `total` bytes each way with random sizes from `seed`; returns the SENDs that went.
fn run(seed: u64, total: usize, sizes: std::ops::Range<u32>) -> u64 {
    let mut rng = Rng::new(seed);
    let cfg = |rng: &mut Rng| StreamConfig {
        recv_size: sizes.start + rng.below(u64::from(sizes.end - sizes.start)) as u32,
        recv_depth: 4 + rng.below(8) as u16,
        send_buffer: 1 + rng.below(64 * 1024) as usize,
    };
    let client = ClientConfig {
        desired_remote_recv_size: if rng.chance(0.2) {
            0
        } else {
            sizes.start + rng.below(20_000) as u32
        },
        ..client_cfg(FlowControl::Transport, cfg(&mut rng))
    };
    let mut p = Pair::new(&client, &cfg(&mut rng));
    let mut dirs = [Dir { sent: 0, got: 0 }, Dir { sent: 0, got: 0 }];
    let mut buf = vec![0u8; 70_000];
    // Steps since a byte was last delivered: a stuck stream (no credits, no update) shows here.
    let mut idle = 0u32;
    let mut sends = 0u64;
    while dirs.iter().any(|d| d.got < total) {
        idle += 1;
        assert!(idle < 100_000, "seed {seed}: no progress");
        let side = rng.below(2) as usize;
        let me = if side == 0 { &mut p.a } else { &mut p.b };
        match rng.below(5) {
            0 => {
                // The user writes.
                let d = &mut dirs[side];
                let n = (1 + rng.below(40_000) as usize).min(total - d.sent);
                if n > 0 {
                    let chunk: Vec<u8> =
                        (d.sent..d.sent + n).map(|i| byte(side as u8, i)).collect();
                    match me.s.send(&chunk) {
                        Ok(k) => d.sent += k,
                        Err(SendError::Full) => {}
                        Err(e) => panic!("seed {seed}: {e}"),
                    }
                }
            }
            1 => {
                // The user reads into a random-sized buffer.
                let d = &mut dirs[1 - side];
                let want = 1 + rng.below(buf.len() as u64) as usize;
                let n = me.s.recv(&mut buf[..want]);
                for (k, b) in buf[..n].iter().enumerate() {
                    assert_eq!(
                        *b,
                        byte(1 - side as u8, d.got + k),
                        "seed {seed}: byte {}",
                        d.got + k
                    );
                }
                d.got += n;
                if n > 0 {
                    idle = 0;
                }
            }
            2 => {
                // The host posts buffers and the next SEND goes on the wire.
                if p.transmit(side == 0) {
                    sends += 1;
                }
            }
            _ => {
                // The QP delivers the oldest SEND in flight.
                let me = if side == 0 { &mut p.a } else { &mut p.b };
                me.post();
                me.deliver();
            }
        }
        let me = if side == 0 { &mut p.a } else { &mut p.b };
        while let Some(ev) = me.s.poll_event() {
            assert!(!matches!(ev, StreamEvent::Error(_)), "seed {seed}: {ev:?}");
        }
    }
    for e in [&p.a, &p.b] {
        assert_eq!(e.s.stats().bad, 0, "seed {seed}");
        assert_eq!(e.s.error(), None, "seed {seed}");
    }
    assert_eq!(dirs[0].got, total);
    assert_eq!(dirs[1].got, total);
    sends
}

#[test]
fn iw9_one_mib_each_way_segmented_and_reassembled() {
    // iWarp mapping FlowC 0 with SDP's BSDH and credits: 1 MiB each way, receive sizes 256 B to
    // 9 KiB, depths 4 to 11, send buffers 1 B to 64 KiB.
    for seed in 0..4 {
        let sends = run(seed, 1 << 20, 256..9000);
        // At least one SEND per receive-size worth of payload each way.
        assert!(sends >= 2 * (1 << 20) / 9000, "seed {seed}: {sends} SENDs");
    }
}

#[test]
fn iw9_tiny_buffers_one_byte_per_send() {
    // Receive buffers of 17 to 40 bytes: the BSDH plus 1 to 24 bytes per SEND.
    for seed in 100..108 {
        run(seed, 6000, 17..41);
    }
}

//! Property tests of the packet builder and parser: every opcode with its extended headers,
//! with and without GRH, built by `emit` and by `to_vec` alike, parsed back, corrupted.

use super::*;
use proptest::prelude::*;

/// Opcodes with their headers filled from arbitrary values.
fn arb_packet() -> impl Strategy<Value = (Vec<u8>, bool, u8, [u8; 32], u8)> {
    (
        proptest::collection::vec(any::<u8>(), 0..300),
        any::<bool>(),
        prop::sample::select(vec![
            0x00u8, 0x03, 0x04, 0x06, 0x0b, 0x0c, 0x0d, 0x11, 0x12, 0x13, 0x16, 0x24, 0x40, 0x4b,
            0x52, 0x55, 0x64, 0x65, 0x80, 0xc5,
        ]),
        any::<[u8; 32]>(),
        0..16u8,
    )
}

fn build(payload: &[u8], global: bool, op: u8, seed: [u8; 32], vl: u8) -> Vec<u8> {
    use crate::ib::*;
    let w = |i: usize| u32::from_be_bytes([seed[i], seed[i + 1], seed[i + 2], seed[i + 3]]);
    let q = |i: usize| ((w(i) as u64) << 32) | w(i + 4) as u64;
    let set = Opcode(op).ext_headers().unwrap_or(ExtHeaderSet::NONE);
    let pick = |bit: ExtHeaderSet| set.contains(bit) && bit != ExtHeaderSet::NONE;
    let ext = ExtHeaders {
        rdeth: pick(ExtHeaderSet::RDETH).then(|| RdethRepr {
            ee_context: w(0) >> 8,
        }),
        deth: pick(ExtHeaderSet::DETH).then(|| DethRepr {
            qkey: QKey(w(4)),
            src_qp: w(8) >> 8,
        }),
        reth: pick(ExtHeaderSet::RETH).then(|| RethRepr {
            va: q(0),
            rkey: w(8),
            dma_len: w(12),
        }),
        atomic_eth: pick(ExtHeaderSet::ATOMIC_ETH).then(|| AtomicEthRepr {
            va: q(0),
            rkey: w(8),
            swap_add: q(12),
            compare: q(20),
        }),
        aeth: pick(ExtHeaderSet::AETH).then(|| AethRepr {
            syndrome: Syndrome::from(seed[3]),
            msn: w(4) >> 8,
        }),
        atomic_ack_eth: pick(ExtHeaderSet::ATOMIC_ACK_ETH)
            .then(|| AtomicAckEthRepr { orig_rem_dt: q(16) }),
        immdt: pick(ExtHeaderSet::IMMDT).then(|| ImmDtRepr { data: w(24) }),
        ieth: pick(ExtHeaderSet::IETH).then(|| IethRepr { rkey: w(28) }),
    };
    let grh = global.then(|| GrhRepr {
        tclass: seed[0],
        flow_label: w(1) & 0xf_ffff,
        ..GrhRepr::new(
            Gid(seed[..16].try_into().unwrap()),
            Gid(seed[16..].try_into().unwrap()),
            seed[5],
        )
    });
    let r = PacketRepr {
        lrh: LrhRepr {
            vl,
            sl: seed[1] & 15,
            ..lrh(vl, u16::from_be_bytes([seed[2], seed[3]]))
        },
        grh,
        bth: Some(BthRepr {
            resv8a: seed[7],
            se: seed[8] & 1 != 0,
            ..BthRepr::new(Opcode(op), PKey(0x8001), w(9) >> 8, w(13) >> 8)
        }),
        ext,
        payload,
    };
    let mut out = vec![0u8; r.buffer_len()];
    assert_eq!(r.emit(&mut out), Ok(out.len()));
    assert_eq!(r.to_vec().as_ref(), Ok(&out));
    // Over a used buffer's stale bytes (as the emulated HCA builds its packets): every byte is
    // written, reserved bits, pad and CRC fields included; a longer buffer's tail is untouched.
    for fill in [0xffu8, 0xa5, seed[0] | 1] {
        let mut stale = vec![fill; r.buffer_len() + 7];
        assert_eq!(r.emit(&mut stale), Ok(out.len()));
        assert_eq!(&stale[..out.len()], &out[..]);
        assert!(stale[out.len()..].iter().all(|&b| b == fill));
    }
    let p = Packet::parse(&out).unwrap();
    assert!(p.crc_ok());
    assert_eq!(
        p.repr(),
        PacketRepr {
            lrh: LrhRepr {
                lnh: p.lrh.lnh,
                pkt_len: p.lrh.pkt_len,
                ..r.lrh
            },
            grh: p.grh,
            bth: p.bth,
            ..r
        }
    );
    assert_eq!(p.payload, payload);
    out
}

proptest! {
    #[test]
    fn builder_round_trip((payload, global, op, seed, vl) in arb_packet()) {
        let out = build(&payload, global, op, seed, vl);
        // Re-emitting the parsed form gives the same bytes.
        let p = Packet::parse(&out).unwrap();
        let mut again = vec![0u8; p.repr().buffer_len()];
        p.repr().emit(&mut again).unwrap();
        prop_assert_eq!(again, out);
    }

    #[test]
    fn corrupted_packets_never_pass((payload, global, op, seed, vl) in arb_packet(),
                                    pos: prop::sample::Index, flip in 1..=255u8) {
        let mut out = build(&payload, global, op, seed, vl);
        let i = pos.index(out.len());
        out[i] ^= flip;
        if let Ok(p) = Packet::parse(&out) {
            prop_assert!(!p.crc_ok());
        }
    }

    #[test]
    fn parse_never_panics(data in proptest::collection::vec(any::<u8>(), 0..300)) {
        let _ = Packet::parse(&data);
    }

    #[test]
    fn parse_never_panics_on_plausible_lengths(mut data in proptest::collection::vec(any::<u8>(), 8..300)) {
        // Make PktLen agree with the buffer so that parsing goes past the length check.
        let words = (data.len() - 2) / 4;
        data.truncate(words * 4 + 2);
        data[4] = (words >> 8) as u8 & 7;
        data[5] = words as u8;
        let _ = Packet::parse(&data);
        let _ = fill_crcs(&mut data);
    }
}

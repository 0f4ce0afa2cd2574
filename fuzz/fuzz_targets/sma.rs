//! The management agents of the emulated hardware (`ipoib_fabric::hw::switch::Switch`'s SMA and
//! PMA, `ipoib_fabric::hw::hca::Hca`'s on QP0/QP1). The input's first byte picks the arrival port
//! and whether the rest is framed as an SMP (VL15, QP0) or a GMP (QP1), the rest is the MAD (any
//! length). Property: no input panics either device, and each answers with at most one packet,
//! a whole packet with good CRCs (IBA 1 §14.2.2, §14.2.4, §16.1: a bad SMP is dropped, never
//! half-answered).
#![no_main]

use ipoib_fabric::hw::hca::Hca;
use ipoib_fabric::hw::sim::{Device, Tx};
use ipoib_fabric::hw::sma;
use ipoib_fabric::hw::switch::Switch;
use ipoib_proto::time::Instant;
use ipoib_wire::packet::Packet;
use ipoib_wire::{Guid, PKey};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&first, mad)) = data.split_first() else {
        return;
    };
    let port = first & 0x0f;
    let packet = if first & 0x80 != 0 {
        sma::gmp_packet(1, 0xffff, 0, PKey::DEFAULT, 1, mad)
    } else {
        sma::smp_packet(0xffff, 0xffff, 0, mad)
    };
    let mut sw = Switch::new(Guid(1), 8, "fuzz");
    let mut hca = Hca::new(Guid(2), 2);
    hca.link_state(Instant::ZERO, 1, true, &mut Tx::default());
    for dev in [&mut sw as &mut dyn Device, &mut hca] {
        let mut tx = Tx::default();
        dev.receive(Instant::ZERO, port, packet.clone(), &mut tx);
        let out: Vec<_> = tx.drain().collect();
        assert!(out.len() <= 1);
        for (_, p) in out {
            assert!(Packet::parse(&p).is_ok_and(|p| p.crc_ok()));
        }
    }
});

//! The streaming reader on pcapng built by hand (both byte orders, several interfaces and sections,
//! simple packet blocks, unknown blocks, time resolutions and offsets), on classic pcap in both
//! byte orders, on input that arrives in small pieces, and its memory: a fixed buffer whatever the
//! input's size.

use super::*;
use proptest::prelude::*;
use std::cell::Cell;
use std::io::{self, Read};
use std::rc::Rc;

/// A pcapng file built block by block in one byte order (draft-ietf-opsawg-pcapng §3.1: every
/// field of a section is in the byte order of its section header block).
struct Ng {
    out: Vec<u8>,
    big: bool,
}

const SHB: u32 = 0x0a0d_0d0a;
const IDB: u32 = 1;
const SPB: u32 = 3;
const ISB: u32 = 5;
const EPB: u32 = 6;

impl Ng {
    fn new(big: bool) -> Ng {
        Ng {
            out: Vec::new(),
            big,
        }
    }
    fn u16(&self, v: u16) -> [u8; 2] {
        if self.big {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        }
    }
    fn u32(&self, v: u32) -> [u8; 4] {
        if self.big {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        }
    }
    /// A block: type, total length, body padded to 4 bytes, total length again.
    fn block(&mut self, ty: u32, body: &[u8]) -> &mut Self {
        let padded = (body.len() + 3) & !3;
        let total = (12 + padded) as u32;
        let (t, l) = (self.u32(ty), self.u32(total));
        self.out.extend_from_slice(&t);
        self.out.extend_from_slice(&l);
        self.out.extend_from_slice(body);
        self.out.resize(self.out.len() + padded - body.len(), 0);
        self.out.extend_from_slice(&l);
        self
    }
    /// Options: (code, value) each padded to 4 bytes, then opt_endofopt.
    fn options(&self, opts: &[(u16, &[u8])]) -> Vec<u8> {
        let mut b = Vec::new();
        for (code, v) in opts {
            b.extend_from_slice(&self.u16(*code));
            b.extend_from_slice(&self.u16(v.len() as u16));
            b.extend_from_slice(v);
            b.resize((b.len() + 3) & !3, 0);
        }
        if !opts.is_empty() {
            b.extend_from_slice(&[0; 4]);
        }
        b
    }
    fn shb(&mut self) -> &mut Self {
        let mut b = self.u32(0x1a2b_3c4d).to_vec();
        b.extend_from_slice(&self.u16(1));
        b.extend_from_slice(&self.u16(0));
        b.extend_from_slice(&[0xff; 8]); // section length unknown
        let opts = self.options(&[(4, b"ipoib test")]); // shb_userappl
        b.extend_from_slice(&opts);
        self.block(SHB, &b)
    }
    fn idb(&mut self, link: u16, snaplen: u32, opts: &[(u16, &[u8])]) -> &mut Self {
        let mut b = self.u16(link).to_vec();
        b.extend_from_slice(&[0, 0]);
        b.extend_from_slice(&self.u32(snaplen));
        let opts = self.options(opts);
        b.extend_from_slice(&opts);
        self.block(IDB, &b)
    }
    fn epb(&mut self, interface: u32, ts: u64, data: &[u8], orig_len: u32) -> &mut Self {
        let mut b = self.u32(interface).to_vec();
        b.extend_from_slice(&self.u32((ts >> 32) as u32));
        b.extend_from_slice(&self.u32(ts as u32));
        b.extend_from_slice(&self.u32(data.len() as u32));
        b.extend_from_slice(&self.u32(orig_len));
        b.extend_from_slice(data);
        b.resize((b.len() + 3) & !3, 0);
        let opts = self.options(&[(1, b"a comment")]); // opt_comment
        b.extend_from_slice(&opts);
        self.block(EPB, &b)
    }
    fn spb(&mut self, data: &[u8]) -> &mut Self {
        let mut b = self.u32(data.len() as u32).to_vec();
        b.extend_from_slice(data);
        self.block(SPB, &b)
    }
}

/// An ERF type 21 record around `packet`, as the writer makes it.
fn erf_record(ts_ns: u64, packet: &[u8]) -> Vec<u8> {
    let mut b = vec![0u8; ERF_HEADER_LEN];
    ErfHeaderRepr::infiniband(ts_ns, packet.len() as u16, packet.len() as u16)
        .emit(&mut b)
        .unwrap();
    b.extend_from_slice(packet);
    b
}

fn packet(n: u8, len: usize) -> Vec<u8> {
    (0..len).map(|i| n.wrapping_add(i as u8)).collect()
}

/// Two sections, the first little-endian and the second big-endian, each with its own interfaces:
/// section 1 has an ERF interface (nanosecond `if_tsresol` 9) and an INFINIBAND one (default
/// microseconds, `if_tsoffset` 10 s), section 2 an Ethernet one and an INFINIBAND one with binary
/// resolution 2^-10 s. Between them: an interface statistics block and a block of an unknown type,
/// both skipped.
fn two_sections() -> Vec<u8> {
    let mut ng = Ng::new(false);
    ng.shb()
        .idb(197, 65535, &[(9, &[9])])
        .idb(247, 4096, &[(14, &10i64.to_le_bytes())])
        .epb(
            0,
            1_700_000_000_123_456_789,
            &erf_record(1_700_000_000_123_456_789, &packet(1, 30)),
            46,
        )
        .epb(1, 5_000_001, &packet(2, 31), 31)
        .block(ISB, &[0; 12])
        .block(0x0bad_0001, &[1, 2, 3, 4, 5]);
    let mut be = Ng::new(true);
    be.shb()
        .idb(1, 0, &[])
        .idb(247, 0, &[(9, &[0x80 | 10])])
        .epb(0, 7, &packet(3, 60), 60)
        .epb(1, 3 << 10 | 512, &packet(4, 33), 40);
    let mut out = ng.out;
    out.extend_from_slice(&be.out);
    out
}

#[test]
fn pcapng_sections_interfaces_byte_orders() {
    let data = two_sections();
    let mut r = CaptureReader::new(&data[..]).unwrap();
    assert_eq!(r.format(), CaptureFormat::PcapNg);
    let mut got = Vec::new();
    while let Some(p) = r.next_packet() {
        let p = p.unwrap();
        got.push((
            p.ts_ns,
            p.link_type,
            p.interface,
            p.data.to_vec(),
            p.orig_len,
            p.erf.is_some(),
        ));
    }
    assert_eq!(
        got,
        vec![
            // The ERF header's time (same nanosecond), its payload, its wlen.
            (
                Some(1_700_000_000_123_456_789),
                LinkType::Erf,
                0,
                packet(1, 30),
                30,
                true
            ),
            // 5,000,001 µs + 10 s.
            (
                Some(15_000_001_000),
                LinkType::Infiniband,
                1,
                packet(2, 31),
                31,
                false
            ),
            // Another link type: the bytes as they are.
            (
                Some(7_000),
                LinkType::Unknown(1),
                0,
                packet(3, 60),
                60,
                false
            ),
            // 3 s and 512/1024 s.
            (
                Some(3_500_000_000),
                LinkType::Infiniband,
                1,
                packet(4, 33),
                40,
                false
            ),
        ]
    );
}

#[test]
fn pcapng_simple_packets_and_snaplen() {
    let mut ng = Ng::new(true);
    ng.shb()
        .idb(247, 20, &[])
        .spb(&packet(5, 26))
        .spb(&packet(6, 7));
    let got = CaptureReader::read_all(&ng.out[..]).unwrap();
    assert_eq!(got.len(), 2);
    // draft-ietf-opsawg-pcapng §4.4: no time stamp; cut to the interface's snap length; the
    // padding is not data.
    assert_eq!(got[0].ts_ns, None);
    assert_eq!(got[0].data, packet(5, 20));
    assert_eq!(got[0].orig_len, 26);
    assert_eq!(got[1].data, packet(6, 7));
}

#[test]
fn pcapng_errors() {
    let err = |data: &[u8]| -> PcapError {
        let mut r = match CaptureReader::new(data) {
            Ok(r) => r,
            Err(CaptureError::Format(e)) => return e,
            Err(e) => panic!("{e}"),
        };
        loop {
            match r.next_packet() {
                Some(Ok(_)) => {}
                Some(Err(CaptureError::Format(e))) => return e,
                other => panic!("{other:?}"),
            }
        }
    };
    // A packet on interface 2 of a section that described one.
    let mut ng = Ng::new(false);
    ng.shb().idb(247, 0, &[]);
    let at = ng.out.len();
    ng.epb(2, 0, &packet(1, 8), 8);
    assert_eq!(
        err(&ng.out),
        PcapError::UnknownInterface {
            offset: at as u64,
            interface: 2
        }
    );
    // A simple packet before any interface.
    let mut ng = Ng::new(false);
    ng.shb().spb(&packet(1, 8));
    assert!(matches!(
        err(&ng.out),
        PcapError::UnknownInterface { interface: 0, .. }
    ));
    // Interfaces belong to their section: the second section has none.
    let mut a = Ng::new(false);
    a.shb().idb(247, 0, &[]).shb().epb(0, 0, &packet(1, 8), 8);
    assert!(matches!(
        err(&a.out),
        PcapError::UnknownInterface { interface: 0, .. }
    ));
    // if_tsresol 10^20 does not fit in 64 bits.
    let mut ng = Ng::new(false);
    ng.shb().idb(247, 0, &[(9, &[20])]);
    let shb_len = ng.out.len() - 32;
    assert_eq!(
        err(&ng.out),
        PcapError::BadInterface {
            offset: shb_len as u64
        }
    );
    // A section of major version 2.
    let mut ng = Ng::new(false);
    ng.shb();
    ng.out[12] = 2;
    assert_eq!(err(&ng.out), PcapError::UnsupportedVersion(2, 0));
    // Cut in the middle of a block.
    let mut ng = Ng::new(false);
    ng.shb().idb(247, 0, &[]);
    let idb_at = ng.out.len();
    ng.epb(0, 0, &packet(1, 64), 64);
    ng.out.truncate(ng.out.len() - 3);
    assert_eq!(
        err(&ng.out),
        PcapError::TruncatedRecord {
            offset: idb_at as u64
        }
    );
    // Block lengths that disagree.
    let mut ng = Ng::new(false);
    ng.shb().idb(247, 0, &[]);
    let n = ng.out.len();
    ng.out[n - 4] ^= 4;
    assert!(
        matches!(err(&ng.out), PcapError::BadBlock { .. }),
        "{:?}",
        err(&ng.out)
    );
    // Only part of a section header.
    let mut ng = Ng::new(false);
    ng.shb();
    assert_eq!(err(&ng.out[..20]), PcapError::TruncatedHeader);
}

/// Hands out at most `n` bytes per read, as a pipe may.
struct Trickle<'a> {
    data: &'a [u8],
    n: usize,
}

impl Read for Trickle<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let k = buf.len().min(self.n).min(self.data.len());
        buf[..k].copy_from_slice(&self.data[..k]);
        self.data = &self.data[k..];
        Ok(k)
    }
}

// Short reads (a pipe) are not the end of the input: the same packets come out byte by byte.
#[test]
fn short_reads_read_the_same() {
    let data = two_sections();
    let whole = CaptureReader::read_all(&data[..]).unwrap();
    for n in [1, 3, 7] {
        let t = Trickle { data: &data, n };
        assert_eq!(CaptureReader::read_all(t).unwrap(), whole);
    }
}

/// The classic pcap of `packets` (link type 247) in either byte order, written field by field.
fn classic(big: bool, nano: bool, packets: &[Vec<u8>]) -> Vec<u8> {
    let u32b = |v: u32| {
        if big {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        }
    };
    let u16b = |v: u16| {
        if big {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        }
    };
    let mut f = u32b(if nano { MAGIC_NANO } else { MAGIC_MICRO }).to_vec();
    f.extend_from_slice(&u16b(2));
    f.extend_from_slice(&u16b(4));
    f.extend_from_slice(&[0; 8]);
    f.extend_from_slice(&u32b(65535));
    f.extend_from_slice(&u32b(247));
    for (i, p) in packets.iter().enumerate() {
        f.extend_from_slice(&u32b(1_700_000_000 + i as u32));
        f.extend_from_slice(&u32b(999));
        f.extend_from_slice(&u32b(p.len() as u32));
        f.extend_from_slice(&u32b(p.len() as u32 + 1));
        f.extend_from_slice(p);
    }
    f
}

#[test]
fn classic_both_byte_orders_and_resolutions() {
    let pkts = [packet(1, 40), packet(2, 66)];
    for big in [false, true] {
        for nano in [false, true] {
            let got = CaptureReader::read_all(&classic(big, nano, &pkts)[..]).unwrap();
            assert_eq!(got.len(), 2, "big {big} nano {nano}");
            for (i, g) in got.iter().enumerate() {
                assert_eq!(g.data, pkts[i]);
                assert_eq!(g.orig_len, pkts[i].len() as u32 + 1);
                let frac = if nano { 999 } else { 999_000 };
                assert_eq!(
                    g.ts_ns,
                    Some((1_700_000_000 + i as u64) * 1_000_000_000 + frac)
                );
            }
        }
    }
}

/// An endless capture made on the fly: a pcap header, then the same record again and again, up
/// to `total` bytes. Counts the bytes it handed out.
struct Endless {
    record: Vec<u8>,
    header: Vec<u8>,
    pos: u64,
    total: u64,
    handed_out: Rc<Cell<u64>>,
}

impl Read for Endless {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let mut n = 0;
        while n < buf.len() && self.pos < self.total {
            let (src, at) = if self.pos < self.header.len() as u64 {
                (&self.header, self.pos as usize)
            } else {
                let off = (self.pos - self.header.len() as u64) % self.record.len() as u64;
                (&self.record, off as usize)
            };
            let k = (src.len() - at).min(buf.len() - n);
            let k = k.min((self.total - self.pos) as usize);
            buf[n..n + k].copy_from_slice(&src[at..at + k]);
            n += k;
            self.pos += k as u64;
        }
        self.handed_out.set(self.pos);
        Ok(n)
    }
}

// Constant memory, shown by structure rather than by measuring: a 128 MiB capture streams through a
// buffer that never grows past its first size, and the first packet comes out after one buffer of
// input, not after the whole file.
#[test]
fn streams_in_constant_memory() {
    let mut w = PcapWriter::new(Vec::new(), LinkType::Erf).unwrap();
    w.write_packet(0, &packet(9, 2000)).unwrap();
    let file = w.into_inner().unwrap();
    let (header, record) = file.split_at(GLOBAL_HEADER_LEN);
    let total: u64 = 1 << 27;
    let handed_out = Rc::new(Cell::new(0));
    let mut r = CaptureReader::new(Endless {
        record: record.to_vec(),
        header: header.to_vec(),
        pos: 0,
        total: header.len() as u64 + (total / record.len() as u64) * record.len() as u64,
        handed_out: handed_out.clone(),
    })
    .unwrap();
    let mut n = 0u64;
    while let Some(p) = r.next_packet() {
        let p = p.unwrap();
        assert_eq!(p.data.len(), 2000);
        n += 1;
        if n == 1 {
            assert!(handed_out.get() <= (INITIAL_BUFFER + GLOBAL_HEADER_LEN) as u64);
        }
    }
    assert_eq!(n, total / record.len() as u64);
    assert_eq!(r.buffer_capacity(), INITIAL_BUFFER);
}

/// An input that fails after `ok` bytes.
struct Failing<'a> {
    data: &'a [u8],
}

impl Read for Failing<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.data.is_empty() {
            return Err(io::Error::other("the disk is on fire"));
        }
        let k = buf.len().min(self.data.len());
        buf[..k].copy_from_slice(&self.data[..k]);
        self.data = &self.data[k..];
        Ok(k)
    }
}

#[test]
fn read_errors_keep_their_message() {
    let data = two_sections();
    let mut r = CaptureReader::new(Failing { data: &data[..100] }).unwrap();
    let e = loop {
        match r.next_packet() {
            Some(Ok(_)) => {}
            Some(Err(e)) => break e,
            None => panic!("the error was lost"),
        }
    };
    assert!(matches!(e, CaptureError::Io(_)));
    assert!(e.to_string().contains("the disk is on fire"), "{e}");
    assert!(r.next_packet().is_none());
}

#[test]
fn capture_magic() {
    assert!(is_capture(&[0x0a, 0x0d, 0x0d, 0x0a]));
    assert!(is_capture(&[0xd4, 0xc3, 0xb2, 0xa1]));
    assert!(is_capture(&[0xa1, 0xb2, 0xc3, 0xd4]));
    assert!(is_capture(&[0x4d, 0x3c, 0xb2, 0xa1]));
    assert!(is_capture(&[0xa1, 0xb2, 0x3c, 0x4d]));
    assert!(!is_capture(b"f002"));
    assert!(!is_capture(b"0a0d0d0a"));
    assert!(!is_capture(&[0x0a, 0x0d]));
}

proptest! {
    // Any bytes after a valid start, in either byte order: the reader ends (with an error or not)
    // and never panics.
    #[test]
    fn pcapng_never_panics(
        tail in proptest::collection::vec(any::<u8>(), 0..400),
        big in any::<bool>(),
        cut in 0usize..600,
    ) {
        let mut ng = Ng::new(big);
        ng.shb().idb(197, 0, &[]).idb(247, 0, &[]);
        ng.out.extend_from_slice(&tail);
        let mut data = ng.out;
        data.extend_from_slice(&two_sections());
        data.truncate(cut.max(28));
        if let Ok(mut r) = CaptureReader::new(&data[..]) {
            let mut n = 0;
            while let Some(p) = r.next_packet() {
                n += 1;
                prop_assert!(n < 1000);
                if p.is_err() {
                    prop_assert!(r.next_packet().is_none());
                    break;
                }
            }
        }
    }
}

mod reader;

use super::*;
use crate::describe::{Collect, Describe};
use proptest::prelude::*;

/// A UD packet by hand: LRH (LNH = 2, DLID `dlid`, SLID 1), BTH (opcode 0x64 UD SEND only,
/// P_Key 0xffff, DestQP 0x48), DETH (Q_Key 0x0b1b, SrcQP 0x49), IPoIB header 0x0800, a 28-byte
/// IPv4 ICMP echo request, ICRC and VCRC zero (tshark does not check them).
fn ud_packet(dlid: u16) -> Vec<u8> {
    let mut p = Vec::new();
    // LRH: VL 0 LVer 0 | SL 0 LNH 2 | DLID | PktLen 16 words | SLID
    p.extend_from_slice(&[0x00, 0x02]);
    p.extend_from_slice(&dlid.to_be_bytes());
    p.extend_from_slice(&[0x00, 0x10, 0x00, 0x01]);
    // BTH: opcode, SE/M/Pad/TVer, P_Key, reserved, DestQP, A/reserved, PSN
    p.extend_from_slice(&[0x64, 0x00, 0xff, 0xff, 0x00, 0x00, 0x00, 0x48]);
    p.extend_from_slice(&[0x00, 0x00, 0x00, 0x07]);
    // DETH: Q_Key, reserved, SrcQP
    p.extend_from_slice(&[0x00, 0x00, 0x0b, 0x1b, 0x00, 0x00, 0x00, 0x49]);
    // IPoIB encapsulation header
    p.extend_from_slice(&[0x08, 0x00, 0x00, 0x00]);
    // IPv4: 10.0.0.1 -> 10.0.0.2, ICMP echo request (checksums not checked here)
    p.extend_from_slice(&[
        0x45, 0x00, 0x00, 0x1c, 0x00, 0x01, 0x00, 0x00, 0x40, 0x01, 0x00, 0x00, 10, 0, 0, 1, 10, 0,
        0, 2,
    ]);
    p.extend_from_slice(&[0x08, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x01]);
    p.extend_from_slice(&[0, 0, 0, 0]); // ICRC
    p.extend_from_slice(&[0, 0]); // VCRC
    assert_eq!(p.len(), 16 * 4 + 2);
    p
}

const GLOBAL_LE_NANO_ERF: [u8; 24] = [
    0x4d, 0x3c, 0xb2, 0xa1, 0x02, 0x00, 0x04, 0x00, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0x00, 0x00,
    0xc5, 0x00, 0x00, 0x00,
];

const GLOBAL_BE_MICRO_IB: [u8; 24] = [
    0xa1, 0xb2, 0xc3, 0xd4, 0x00, 0x02, 0x00, 0x04, 0, 0, 0, 0, 0, 0, 0, 0, 0x00, 0x00, 0x10, 0x00,
    0x00, 0x00, 0x00, 0xf7,
];

#[test]
fn global_header_fixed_bytes() {
    let h = GlobalHeader::new_checked(&GLOBAL_LE_NANO_ERF[..]).unwrap();
    assert_eq!(h.format(), Some((ByteOrder::Little, TsResolution::Nano)));
    assert_eq!(h.version_major(), 2);
    assert_eq!(h.version_minor(), 4);
    assert_eq!(h.snaplen(), 65535);
    assert_eq!(h.link_type(), LinkType::Erf);
    let r = GlobalHeaderRepr::parse(&GLOBAL_LE_NANO_ERF).unwrap();
    assert_eq!(
        r,
        GlobalHeaderRepr::new(LinkType::Erf, TsResolution::Nano, 65535)
    );
    let mut b = [0u8; 24];
    r.emit(&mut b).unwrap();
    assert_eq!(b, GLOBAL_LE_NANO_ERF);

    let r = GlobalHeaderRepr::parse(&GLOBAL_BE_MICRO_IB).unwrap();
    assert_eq!(r.byte_order, ByteOrder::Big);
    assert_eq!(r.resolution, TsResolution::Micro);
    assert_eq!(r.snaplen, 4096);
    assert_eq!(r.link_type, LinkType::Infiniband);
    r.emit(&mut b).unwrap();
    assert_eq!(b, GLOBAL_BE_MICRO_IB);
    assert_eq!(
        GlobalHeaderRepr::parse(&[0u8; 24]),
        Err(crate::Error::Malformed)
    );
    assert_eq!(
        GlobalHeaderRepr::parse(&[0u8; 23]),
        Err(crate::Error::Truncated)
    );
}

#[test]
fn record_header_fixed_bytes() {
    let le = [1, 0, 0, 0, 2, 0, 0, 0, 0x42, 0, 0, 0, 0x52, 0, 0, 0];
    let r = RecordHeaderRepr::parse(&le, ByteOrder::Little).unwrap();
    assert_eq!(
        r,
        RecordHeaderRepr {
            ts_sec: 1,
            ts_frac: 2,
            incl_len: 0x42,
            orig_len: 0x52
        }
    );
    let v = RecordHeader::new_checked(&le[..], ByteOrder::Big).unwrap();
    assert_eq!(v.ts_sec(), 0x0100_0000);
    let mut b = [0u8; 16];
    let mut w = RecordHeader::new_unchecked(&mut b[..], ByteOrder::Little);
    w.set_ts_sec(1);
    w.set_ts_frac(2);
    w.set_incl_len(0x42);
    w.set_orig_len(0x52);
    assert_eq!(b, le);
    r.emit(&mut b, ByteOrder::Big).unwrap();
    assert_eq!(b[..4], [0, 0, 0, 1]);
}

#[test]
fn erf_header_fixed_bytes() {
    // ts 1.5 s: seconds 1 in the upper 32 bits, fraction 0x80000000; type 21; flags vlen;
    // rlen 82 = 16 + 66; lctr 0; wlen 66.
    let b: [u8; 16] = [
        0x00, 0x00, 0x00, 0x80, 0x01, 0x00, 0x00, 0x00, 21, 0x04, 0x00, 82, 0x00, 0x00, 0x00, 66,
    ];
    let h = ErfHeader::new_checked(&b[..]).unwrap();
    assert_eq!(h.ts(), 0x0000_0001_8000_0000);
    assert_eq!(h.erf_type(), ErfType::Infiniband);
    assert!(!h.has_extension());
    assert_eq!(h.interface(), 0);
    assert_eq!(h.rlen(), 82);
    assert_eq!(h.wlen(), 66);
    let r = ErfHeaderRepr::infiniband(1_500_000_000, 66, 66);
    assert_eq!(ErfHeaderRepr::parse(&b), Ok(r));
    assert_eq!(r.ts_ns(), 1_500_000_000);
    let mut out = [0xffu8; 16];
    r.emit(&mut out).unwrap();
    assert_eq!(out, b);
    let mut c = [0u8; 16];
    let mut v = ErfHeader::new_unchecked(&mut c[..]);
    v.set_ts(0x0000_0001_8000_0000);
    v.set_erf_type(ErfType::Infiniband, false);
    v.set_flags(0x04);
    v.set_rlen(82);
    v.set_lctr(0);
    v.set_wlen(66);
    assert_eq!(c, b);
    for t in 0..128u8 {
        assert_eq!(u8::from(ErfType::from(t)), t);
    }
    let mut d = Collect::default();
    r.describe(&mut d);
    assert_eq!(d.get("type"), Some("INFINIBAND (0x15)"));
    assert_eq!(d.get("rlen"), Some("82"));
}

#[test]
fn erf_timestamps() {
    assert_eq!(erf_ts_from_ns(0), 0);
    assert_eq!(erf_ts_from_ns(2_000_000_000), 2 << 32);
    assert_eq!(erf_ts_from_ns(250_000_000), 0x4000_0000);
    assert_eq!(erf_ts_to_ns(0x4000_0000), 250_000_000);
    assert_eq!(erf_ts_to_ns(erf_ts_from_ns(999_999_999)), 999_999_999);
}

#[test]
fn write_then_read_erf() {
    let a = ud_packet(2);
    let b = ud_packet(3);
    let mut w = PcapWriter::new(Vec::new(), LinkType::Erf).unwrap();
    w.write_packet(1_700_000_000_123_456_789, &a).unwrap();
    w.write_packet(1_700_000_001_000_000_001, &b).unwrap();
    let file = w.into_inner().unwrap();
    assert_eq!(file[..24], GLOBAL_LE_NANO_ERF);
    // record header: incl_len = orig_len = 16 + 66
    assert_eq!(file[24 + 8..24 + 16], [82, 0, 0, 0, 82, 0, 0, 0]);
    let mut r = CaptureReader::new(&file[..]).unwrap();
    let p = r.next_packet().unwrap().unwrap();
    assert_eq!(p.ts_ns, Some(1_700_000_000_123_456_789));
    assert_eq!(p.link_type, LinkType::Erf);
    assert_eq!(p.data, &a[..]);
    assert_eq!(p.orig_len, 66);
    assert_eq!(p.erf.map(|e| e.rlen), Some(82));
    assert_eq!(p.offset, 24);
    let p = r.next_packet().unwrap().unwrap();
    assert_eq!(p.data, &b[..]);
    assert_eq!(p.ts_ns, Some(1_700_000_001_000_000_001));
    assert_eq!(p.offset, 24 + 16 + 82);
    assert!(r.next_packet().is_none());
}

#[test]
fn write_then_read_raw_micro() {
    let a = ud_packet(2);
    let mut w = PcapWriter::with_options(Vec::new(), LinkType::Infiniband, TsResolution::Micro, 40)
        .unwrap();
    w.write_packet(5_000_001_999, &a).unwrap();
    let file = w.into_inner().unwrap();
    let mut r = CaptureReader::new(&file[..]).unwrap();
    let CaptureFormat::Pcap(h) = r.format() else {
        panic!("{:?}", r.format())
    };
    assert_eq!(h.link_type, LinkType::Infiniband);
    assert_eq!(h.resolution, TsResolution::Micro);
    let p = r.next_packet().unwrap().unwrap();
    assert_eq!(p.ts_ns, Some(5_000_001_000));
    assert_eq!(p.data, &a[..40]);
    assert_eq!(p.orig_len, 66);
    assert!(r.next_packet().is_none());
}

#[test]
fn reader_big_endian_and_padding() {
    // A big-endian microsecond ERF file with one padded record (rlen 88 = 16 + 66 + 6 padding),
    // preceded by an ERF PAD record that must be skipped.
    let pkt = ud_packet(7);
    let mut f = Vec::new();
    f.extend_from_slice(&[0xa1, 0xb2, 0xc3, 0xd4, 0, 2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0]);
    f.extend_from_slice(&[0, 0, 0xff, 0xff, 0, 0, 0, 197]);
    let mut pad = [0u8; 16];
    ErfHeaderRepr {
        ts: 0,
        erf_type: ErfType::Pad,
        extension: false,
        flags: 0,
        rlen: 16,
        lctr: 0,
        wlen: 0,
    }
    .emit(&mut pad)
    .unwrap();
    f.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 16, 0, 0, 0, 16]);
    f.extend_from_slice(&pad);
    f.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 88, 0, 0, 0, 88]);
    let mut erf = [0u8; 16];
    let mut h = ErfHeaderRepr::infiniband(3_000_000_000, 66, 66);
    h.rlen = 88;
    h.emit(&mut erf).unwrap();
    f.extend_from_slice(&erf);
    f.extend_from_slice(&pkt);
    f.extend_from_slice(&[0; 6]);
    let pkts = CaptureReader::read_all(&f[..]).unwrap();
    assert_eq!(pkts.len(), 1);
    assert_eq!(pkts[0].data, pkt);
    assert_eq!(pkts[0].ts_ns, Some(3_000_000_000));
}

/// The format error a reader of `data` stops with: at `new`, or at its first bad record.
fn format_error(data: &[u8]) -> Option<PcapError> {
    let mut r = match CaptureReader::new(data) {
        Ok(r) => r,
        Err(CaptureError::Format(e)) => return Some(e),
        Err(e) => panic!("{e}"),
    };
    loop {
        match r.next_packet()? {
            Ok(_) => {}
            Err(CaptureError::Format(e)) => {
                assert!(r.next_packet().is_none(), "the reader ends after an error");
                return Some(e);
            }
            Err(e) => panic!("{e}"),
        }
    }
}

#[test]
fn reader_errors() {
    assert_eq!(format_error(&[0u8; 10]), Some(PcapError::BadMagic(0)));
    assert_eq!(
        format_error(&[0xd4, 0xc3]),
        Some(PcapError::TruncatedHeader)
    );
    assert_eq!(
        format_error(&GLOBAL_LE_NANO_ERF[..20]),
        Some(PcapError::TruncatedHeader)
    );
    assert_eq!(
        format_error(b"f0 02 00 1a\n"),
        Some(PcapError::BadMagic(0x6630_2030))
    );
    let mut eth = GLOBAL_LE_NANO_ERF;
    eth[20] = 1;
    assert_eq!(format_error(&eth), Some(PcapError::UnsupportedLinkType(1)));
    let mut v1 = GLOBAL_LE_NANO_ERF;
    v1[4] = 1;
    assert_eq!(format_error(&v1), Some(PcapError::UnsupportedVersion(1, 4)));
    // A header and nothing else: a capture of no packets.
    assert_eq!(format_error(&GLOBAL_BE_MICRO_IB), None);

    let mut w = PcapWriter::new(Vec::new(), LinkType::Erf).unwrap();
    w.write_packet(0, &ud_packet(2)).unwrap();
    let file = w.into_inner().unwrap();
    // cut inside the record data, and inside the record header
    assert_eq!(
        format_error(&file[..file.len() - 1]),
        Some(PcapError::TruncatedRecord { offset: 24 })
    );
    assert_eq!(
        format_error(&file[..30]),
        Some(PcapError::TruncatedRecord { offset: 24 })
    );
    // an Ethernet ERF record
    let mut e = file.clone();
    e[24 + 16 + 8] = 2;
    assert_eq!(
        format_error(&e),
        Some(PcapError::UnsupportedErfType {
            offset: 24,
            erf_type: 2
        })
    );
    // rlen below the header
    let mut e = file.clone();
    e[24 + 16 + 10] = 0;
    e[24 + 16 + 11] = 8;
    assert_eq!(
        format_error(&e),
        Some(PcapError::BadErfRecord { offset: 24 })
    );
    // A record claiming 2 GiB: truncated in a short file, refused once the buffer reaches its
    // limit in a long one, never allocated.
    let mut e = file.clone();
    e[24 + 8..24 + 12].copy_from_slice(&0x8000_0000u32.to_le_bytes());
    assert_eq!(
        format_error(&e),
        Some(PcapError::TruncatedRecord { offset: 24 })
    );
    e.resize(MAX_RECORD + 1000, 0);
    assert_eq!(
        format_error(&e),
        Some(PcapError::RecordTooLarge { offset: 24 })
    );
    assert_eq!(
        crate::Error::from(PcapError::TruncatedHeader),
        crate::Error::Truncated
    );
    assert!(PcapWriter::new(Vec::new(), LinkType::Unknown(1)).is_err());
}

proptest! {
    #[test]
    fn round_trip(
        pkts in proptest::collection::vec(
            (any::<u64>().prop_map(|t| t % (u64::from(u32::MAX) * 1_000_000_000)),
             proptest::collection::vec(any::<u8>(), 0..200)), 0..5),
        erf in any::<bool>(),
    ) {
        let link = if erf { LinkType::Erf } else { LinkType::Infiniband };
        let mut w = PcapWriter::new(Vec::new(), link).unwrap();
        for (t, p) in &pkts {
            w.write_packet(*t, p).unwrap();
        }
        let file = w.into_inner().unwrap();
        let got = CaptureReader::read_all(&file[..]).unwrap();
        prop_assert_eq!(got.len(), pkts.len());
        for (g, (t, p)) in got.iter().zip(&pkts) {
            prop_assert_eq!(g.ts_ns, Some(*t));
            prop_assert_eq!(&g.data, p);
        }
    }

    #[test]
    fn reader_never_panics(data in proptest::collection::vec(any::<u8>(), 0..300), erf in any::<bool>()) {
        let _ = GlobalHeaderRepr::parse(&data);
        let _ = RecordHeaderRepr::parse(&data, ByteOrder::Big);
        let _ = ErfHeaderRepr::parse(&data);
        let mut f = if erf { GLOBAL_LE_NANO_ERF.to_vec() } else { GLOBAL_BE_MICRO_IB.to_vec() };
        f.extend_from_slice(&data);
        let _ = format_error(&f);
        let _ = format_error(&data);
    }
}

/// Proves the ERF layout against an independent reader: tshark must find the LRH DLID and the BTH
/// opcode of two hand-built UD packets, and read the ERF timestamps (fixed point) and interface. Skipped (with a message) when tshark is absent.
#[test]
fn tshark_reads_erf_capture() {
    let tshark = std::path::Path::new("/usr/bin/tshark");
    if !tshark.exists() {
        eprintln!("skipping tshark_reads_erf_capture: /usr/bin/tshark not installed");
        return;
    }
    let mut w = PcapWriter::new(Vec::new(), LinkType::Erf).unwrap();
    w.write_packet(1_700_000_000_000_000_000, &ud_packet(2))
        .unwrap();
    w.write_packet(1_700_000_000_500_000_000, &ud_packet(0x1234))
        .unwrap();
    let file = w.into_inner().unwrap();
    let path = std::env::temp_dir().join(format!("ipoib-wire-erf-{}.pcap", std::process::id()));
    std::fs::write(&path, &file).unwrap();
    let out = std::process::Command::new(tshark)
        .arg("-r")
        .arg(&path)
        .args(["-T", "fields", "-e", "infiniband.lrh.dlid", "-e"])
        .args([
            "infiniband.bth.opcode",
            "-e",
            "frame.time_epoch",
            "-e",
            "erf.flags.cap",
        ])
        .env("HOME", std::env::temp_dir())
        .output()
        .unwrap();
    if std::env::var_os("KEEP_PCAP").is_none() {
        let _ = std::fs::remove_file(&path);
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "tshark failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(
        lines,
        [
            "2\t100\t1700000000.000000000\t0",
            "4660\t100\t1700000000.500000000\t0"
        ],
        "tshark said: {stdout}"
    );
}

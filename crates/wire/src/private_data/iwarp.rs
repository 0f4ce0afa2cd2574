//! iWarp-emulation private data ("Mapping of iWarp/TCP connections to InfiniBand", v0.30): the
//! CM REQ carries a Hello, the CM REP a HelloReply. Both reuse SDP's layouts (a 16-byte BSDH, then
//! the Hello header), with the SDP fields that do not apply reserved and a new FlowC field.
//!
//! The draft's figures label each 32-bit row with the offset of its *end* (the first row, MID/bufs,
//! is labelled 04), which matches SDP's BSDH at bytes 0-15 and its Hello header at 16-63:
//!
//! ```text
//! Hello (64 bytes)                          HelloReply (24 bytes)
//!  0 MID | Rsvd | bufs(16)                   0 MID | Rsvd | bufs(16)
//!  4 len(32)                                 4 len(32)
//!  8 Reserved   12 Reserved                  8 Reserved   12 Reserved
//! 16 MajVer(4) MinVer(4) | IPVer(4) FlowC(4) | Reserved(16)
//!                                           16 MajVer(4) MinVer(4) | Reserved(24)
//! 20 DesRemRcvSz(32)                        20 ActRcvSz(32)
//! 24 LocalRcvSz(32)
//! 28 Local Port(16) | Reserved(16)
//! 32 Src IP (128)    48 Dst IP (128)
//! ```
//!
//! IPv4 addresses take the last 4 bytes of each 16, as SDP and the Annex A11 header place them.
//! The service ID is `0x0000000000020000 + listener port` ([`super::service_id::iwarp_service_id`]).

use super::IpPair;
use crate::describe::{Describe, Describer, Value};
use crate::types::{be16, be32, put16, put32};
use crate::{Error, Result};

mod field {
    use core::ops::Range;
    pub const MID: usize = 0;
    pub const BUFS: Range<usize> = 2..4;
    pub const LEN: Range<usize> = 4..8;
    pub const VERSION: usize = 16;
    pub const IPV_FLOWC: usize = 17;
    pub const DES_REM_RCV_SZ: Range<usize> = 20..24;
    pub const LOCAL_RCV_SZ: Range<usize> = 24..28;
    pub const LOCAL_PORT: Range<usize> = 28..30;
    pub const SIP: Range<usize> = 32..48;
    pub const DIP: Range<usize> = 48..64;
    pub const ACT_RCV_SZ: Range<usize> = 20..24;
}

/// Length of a Hello.
pub const HELLO_LEN: usize = 64;
/// Length of a HelloReply.
pub const HELLO_REPLY_LEN: usize = 24;

code_enum! {
    /// Message identifier (iWarp mapping: "MID ... 0 – Hello message, 1 – Reply message, other values
    /// are reserved").
    pub enum IwarpMid(u8) {
        /// 0: Hello (in the CM REQ).
        Hello = 0 => "Hello",
        /// 1: HelloReply (in the CM REP).
        HelloReply = 1 => "HelloReply",
        /// Reserved values.
        Unknown(_) => "Unknown",
    }
}

code_enum! {
    /// FlowC, "Flow Control and verb owner", 4 bits (iWarp mapping).
    pub enum FlowControl(u8) {
        /// 0: the transport owns flow control and may put a 16-byte header in each RC Send, as SDP.
        Transport = 0 => "Transport",
        /// 1: the ULP owns flow control and the whole Send buffer (e.g. iSER).
        Ulp = 1 => "Ulp",
        /// Reserved values (4 bits).
        Unknown(_) => "Unknown",
    }
}

fixed_view! {
    /// A view of a Hello (CM REQ private data, iWarp mapping Figure 1).
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct Hello;
    /// `Err(Truncated)` when shorter than the message; longer (a whole CM private-data
    /// field) is fine.
    fn check_len(min = HELLO_LEN);
}

fixed_view! {
    /// A view of a HelloReply (CM REP private data, iWarp mapping "CM Reply private data
    /// structure").
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct HelloReply;
    /// `Err(Truncated)` when shorter than the message; longer (a whole CM private-data
    /// field) is fine.
    fn check_len(min = HELLO_REPLY_LEN);
}

/// The getters and setters Hello and HelloReply share (the views themselves are `fixed_view!`s).
macro_rules! common_view {
    ($t:ident, $len:expr) => {
        impl<T: AsRef<[u8]>> $t<T> {
            /// MID.
            pub fn mid(&self) -> IwarpMid {
                self.buffer.as_ref()[field::MID].into()
            }
            /// bufs (as SDP's BSDH).
            pub fn bufs(&self) -> u16 {
                be16(self.buffer.as_ref(), field::BUFS.start)
            }
            /// len (as SDP's BSDH).
            pub fn length(&self) -> u32 {
                be32(self.buffer.as_ref(), field::LEN.start)
            }
            /// MajVer.
            pub fn major_version(&self) -> u8 {
                self.buffer.as_ref()[field::VERSION] >> 4
            }
            /// MinVer.
            pub fn minor_version(&self) -> u8 {
                self.buffer.as_ref()[field::VERSION] & 0x0f
            }
        }

        impl<T: AsRef<[u8]> + AsMut<[u8]>> $t<T> {
            /// Sets MID.
            pub fn set_mid(&mut self, v: IwarpMid) {
                self.buffer.as_mut()[field::MID] = v.into();
            }
            /// Sets bufs.
            pub fn set_bufs(&mut self, v: u16) {
                put16(self.buffer.as_mut(), field::BUFS.start, v);
            }
            /// Sets len.
            pub fn set_length(&mut self, v: u32) {
                put32(self.buffer.as_mut(), field::LEN.start, v);
            }
            /// Sets MajVer and MinVer (4 bits each).
            pub fn set_version(&mut self, major: u8, minor: u8) {
                self.buffer.as_mut()[field::VERSION] = (major << 4) | (minor & 0x0f);
            }
            /// Zeroes the message's bytes (all reserved fields included).
            pub fn clear(&mut self) {
                self.buffer.as_mut()[..$len].fill(0);
            }
        }
    };
}

common_view!(Hello, HELLO_LEN);
common_view!(HelloReply, HELLO_REPLY_LEN);

impl<T: AsRef<[u8]>> Hello<T> {
    /// IPVer (4 or 6).
    pub fn ip_version(&self) -> u8 {
        self.buffer.as_ref()[field::IPV_FLOWC] >> 4
    }
    /// FlowC.
    pub fn flow_control(&self) -> FlowControl {
        (self.buffer.as_ref()[field::IPV_FLOWC] & 0x0f).into()
    }
    /// DesRemRcvSz (as SDP).
    pub fn des_rem_rcv_sz(&self) -> u32 {
        be32(self.buffer.as_ref(), field::DES_REM_RCV_SZ.start)
    }
    /// LocalRcvSz (as SDP).
    pub fn local_rcv_sz(&self) -> u32 {
        be32(self.buffer.as_ref(), field::LOCAL_RCV_SZ.start)
    }
    /// Local Port.
    pub fn local_port(&self) -> u16 {
        be16(self.buffer.as_ref(), field::LOCAL_PORT.start)
    }
    /// The 16-byte source IP field.
    pub fn source_ip_field(&self) -> &[u8] {
        &self.buffer.as_ref()[field::SIP]
    }
    /// The 16-byte destination IP field.
    pub fn destination_ip_field(&self) -> &[u8] {
        &self.buffer.as_ref()[field::DIP]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Hello<T> {
    /// Sets IPVer and FlowC (4 bits each).
    pub fn set_ip_version_flow_control(&mut self, ipv: u8, flowc: FlowControl) {
        self.buffer.as_mut()[field::IPV_FLOWC] = (ipv << 4) | (u8::from(flowc) & 0x0f);
    }
    /// Sets DesRemRcvSz.
    pub fn set_des_rem_rcv_sz(&mut self, v: u32) {
        put32(self.buffer.as_mut(), field::DES_REM_RCV_SZ.start, v);
    }
    /// Sets LocalRcvSz.
    pub fn set_local_rcv_sz(&mut self, v: u32) {
        put32(self.buffer.as_mut(), field::LOCAL_RCV_SZ.start, v);
    }
    /// Sets Local Port.
    pub fn set_local_port(&mut self, v: u16) {
        put16(self.buffer.as_mut(), field::LOCAL_PORT.start, v);
    }
    /// Both IP fields, mutable.
    pub fn ip_fields_mut(&mut self) -> (&mut [u8], &mut [u8]) {
        self.buffer.as_mut()[field::SIP.start..field::DIP.end].split_at_mut(16)
    }
}

impl<T: AsRef<[u8]>> HelloReply<T> {
    /// ActRcvSz (as SDP's HelloAck).
    pub fn act_rcv_sz(&self) -> u32 {
        be32(self.buffer.as_ref(), field::ACT_RCV_SZ.start)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> HelloReply<T> {
    /// Sets ActRcvSz.
    pub fn set_act_rcv_sz(&mut self, v: u32) {
        put32(self.buffer.as_mut(), field::ACT_RCV_SZ.start, v);
    }
}

/// A Hello (MID 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct HelloRepr {
    /// bufs.
    pub bufs: u16,
    /// len.
    pub len: u32,
    /// MajVer (4 bits).
    pub major_version: u8,
    /// MinVer (4 bits).
    pub minor_version: u8,
    /// FlowC.
    pub flow_control: FlowControl,
    /// DesRemRcvSz.
    pub des_rem_rcv_sz: u32,
    /// LocalRcvSz.
    pub local_rcv_sz: u32,
    /// Local (source) TCP port; the destination port is in the service ID.
    pub local_port: u16,
    /// Source and destination IP, with IPVer.
    pub addrs: IpPair,
}

impl HelloRepr {
    /// Parses a Hello; `Err(Malformed)` when MID is not 0 or an IPv4 field is badly padded,
    /// `Err(Unsupported)` for an IPVer other than 4 or 6. Reserved bytes are ignored.
    pub fn parse(data: &[u8]) -> Result<Self> {
        let p = Hello::new_checked(data)?;
        if p.mid() != IwarpMid::Hello {
            return Err(Error::Malformed);
        }
        Ok(HelloRepr {
            bufs: p.bufs(),
            len: p.length(),
            major_version: p.major_version(),
            minor_version: p.minor_version(),
            flow_control: p.flow_control(),
            des_rem_rcv_sz: p.des_rem_rcv_sz(),
            local_rcv_sz: p.local_rcv_sz(),
            local_port: p.local_port(),
            addrs: IpPair::read(
                p.ip_version(),
                p.source_ip_field(),
                p.destination_ip_field(),
            )?,
        })
    }

    /// 64.
    pub const fn buffer_len(&self) -> usize {
        HELLO_LEN
    }

    /// Writes the 64 bytes, reserved fields zero, into the start of `buf`.
    pub fn emit(&self, buf: &mut [u8]) -> Result<()> {
        let mut p = Hello::new_checked(buf)?;
        p.clear();
        p.set_mid(IwarpMid::Hello);
        p.set_bufs(self.bufs);
        p.set_length(self.len);
        p.set_version(self.major_version, self.minor_version);
        p.set_ip_version_flow_control(self.addrs.version(), self.flow_control);
        p.set_des_rem_rcv_sz(self.des_rem_rcv_sz);
        p.set_local_rcv_sz(self.local_rcv_sz);
        p.set_local_port(self.local_port);
        let (s, d) = p.ip_fields_mut();
        self.addrs.write(s, d);
        Ok(())
    }
}

impl Describe for HelloRepr {
    fn describe(&self, d: &mut dyn Describer) {
        let mid = IwarpMid::Hello;
        d.field("mid", Value::Named(u8::from(mid).into(), mid.name()));
        d.field("bufs", Value::Uint(self.bufs.into()));
        d.field("len", Value::Uint(self.len.into()));
        d.field("majv", Value::Uint(self.major_version.into()));
        d.field("minv", Value::Uint(self.minor_version.into()));
        d.field("ipv", Value::Uint(self.addrs.version().into()));
        d.field(
            "flowc",
            Value::Named(u8::from(self.flow_control).into(), self.flow_control.name()),
        );
        d.field("des_rem_rcv_sz", Value::Uint(self.des_rem_rcv_sz.into()));
        d.field("local_rcv_sz", Value::Uint(self.local_rcv_sz.into()));
        d.field("local_port", Value::Uint(self.local_port.into()));
        self.addrs.describe(d);
    }
}

/// A HelloReply (MID 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct HelloReplyRepr {
    /// bufs.
    pub bufs: u16,
    /// len.
    pub len: u32,
    /// MajVer (4 bits).
    pub major_version: u8,
    /// MinVer (4 bits).
    pub minor_version: u8,
    /// ActRcvSz.
    pub act_rcv_sz: u32,
}

impl HelloReplyRepr {
    /// Parses a HelloReply; `Err(Malformed)` when MID is not 1.
    pub fn parse(data: &[u8]) -> Result<Self> {
        let p = HelloReply::new_checked(data)?;
        if p.mid() != IwarpMid::HelloReply {
            return Err(Error::Malformed);
        }
        Ok(HelloReplyRepr {
            bufs: p.bufs(),
            len: p.length(),
            major_version: p.major_version(),
            minor_version: p.minor_version(),
            act_rcv_sz: p.act_rcv_sz(),
        })
    }

    /// 24.
    pub const fn buffer_len(&self) -> usize {
        HELLO_REPLY_LEN
    }

    /// Writes the 24 bytes, reserved fields zero, into the start of `buf`.
    pub fn emit(&self, buf: &mut [u8]) -> Result<()> {
        let mut p = HelloReply::new_checked(buf)?;
        p.clear();
        p.set_mid(IwarpMid::HelloReply);
        p.set_bufs(self.bufs);
        p.set_length(self.len);
        p.set_version(self.major_version, self.minor_version);
        p.set_act_rcv_sz(self.act_rcv_sz);
        Ok(())
    }
}

impl Describe for HelloReplyRepr {
    fn describe(&self, d: &mut dyn Describer) {
        let mid = IwarpMid::HelloReply;
        d.field("mid", Value::Named(u8::from(mid).into(), mid.name()));
        d.field("bufs", Value::Uint(self.bufs.into()));
        d.field("len", Value::Uint(self.len.into()));
        d.field("majv", Value::Uint(self.major_version.into()));
        d.field("minv", Value::Uint(self.minor_version.into()));
        d.field("act_rcv_sz", Value::Uint(self.act_rcv_sz.into()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::describe::Collect;
    use proptest::prelude::*;
    use std::net::Ipv4Addr;

    // iWarp mapping Figure 1: a Hello from 10.0.0.1:5000 to 10.0.0.2, ULP flow control.
    fn hello_bytes() -> [u8; 64] {
        let mut b = [0u8; 64];
        b[0] = 0x00; // MID Hello
        b[2..4].copy_from_slice(&[0x00, 0x08]); // bufs 8
        b[4..8].copy_from_slice(&[0x00, 0x00, 0x00, 0x40]); // len 64
        b[16] = 0x22; // MajVer 2, MinVer 2
        b[17] = 0x41; // IPVer 4, FlowC 1
        b[20..24].copy_from_slice(&[0x00, 0x00, 0x10, 0x00]); // DesRemRcvSz 4096
        b[24..28].copy_from_slice(&[0x00, 0x00, 0x20, 0x00]); // LocalRcvSz 8192
        b[28..30].copy_from_slice(&[0x13, 0x88]); // Local Port 5000
        b[44..48].copy_from_slice(&[10, 0, 0, 1]);
        b[60..64].copy_from_slice(&[10, 0, 0, 2]);
        b
    }

    fn hello_repr() -> HelloRepr {
        HelloRepr {
            bufs: 8,
            len: 64,
            major_version: 2,
            minor_version: 2,
            flow_control: FlowControl::Ulp,
            des_rem_rcv_sz: 4096,
            local_rcv_sz: 8192,
            local_port: 5000,
            addrs: IpPair::V4 {
                src: Ipv4Addr::new(10, 0, 0, 1),
                dst: Ipv4Addr::new(10, 0, 0, 2),
            },
        }
    }

    const REPLY_BYTES: [u8; 24] = [
        0x01, 0x00, 0x00, 0x04, 0x00, 0x00, 0x00, 0x18, 0, 0, 0, 0, 0, 0, 0, 0, 0x22, 0, 0, 0,
        0x00, 0x00, 0x10, 0x00,
    ];

    #[test]
    fn deconstruct_hello() {
        // iWarp mapping Figure 1.
        let b = hello_bytes();
        let p = Hello::new_checked(&b[..]).unwrap();
        assert_eq!(p.mid(), IwarpMid::Hello);
        assert_eq!(p.bufs(), 8);
        assert_eq!(p.length(), 64);
        assert_eq!(p.major_version(), 2);
        assert_eq!(p.minor_version(), 2);
        assert_eq!(p.ip_version(), 4);
        assert_eq!(p.flow_control(), FlowControl::Ulp);
        assert_eq!(p.des_rem_rcv_sz(), 4096);
        assert_eq!(p.local_rcv_sz(), 8192);
        assert_eq!(p.local_port(), 5000);
        assert_eq!(p.source_ip_field()[12..], [10, 0, 0, 1]);
    }

    #[test]
    fn construct_hello() {
        let mut b = [0xffu8; 64];
        let mut p = Hello::new_unchecked(&mut b[..]);
        p.clear();
        p.set_mid(IwarpMid::Hello);
        p.set_bufs(8);
        p.set_length(64);
        p.set_version(2, 2);
        p.set_ip_version_flow_control(4, FlowControl::Ulp);
        p.set_des_rem_rcv_sz(4096);
        p.set_local_rcv_sz(8192);
        p.set_local_port(5000);
        let (s, d) = p.ip_fields_mut();
        s[12..].copy_from_slice(&[10, 0, 0, 1]);
        d[12..].copy_from_slice(&[10, 0, 0, 2]);
        assert_eq!(b, hello_bytes());
    }

    #[test]
    fn parse_emit_hello() {
        // iWarp mapping: MID 0 = Hello; FlowC 1 = ULP owns flow control.
        let mut pd = [0u8; 92];
        pd[..64].copy_from_slice(&hello_bytes());
        assert_eq!(HelloRepr::parse(&pd), Ok(hello_repr()));
        let mut out = [0xaau8; 64];
        hello_repr().emit(&mut out).unwrap();
        assert_eq!(out, hello_bytes());
        assert_eq!(HelloRepr::parse(&pd[..63]), Err(Error::Truncated));
        pd[0] = 1;
        assert_eq!(HelloRepr::parse(&pd), Err(Error::Malformed));
    }

    #[test]
    fn reply() {
        // iWarp mapping "CM Reply private data structure": MID 1, ActRcvSz at 20.
        let p = HelloReply::new_checked(&REPLY_BYTES[..]).unwrap();
        assert_eq!(p.mid(), IwarpMid::HelloReply);
        assert_eq!(p.bufs(), 4);
        assert_eq!(p.length(), 24);
        assert_eq!(p.major_version(), 2);
        assert_eq!(p.act_rcv_sz(), 4096);
        let r = HelloReplyRepr {
            bufs: 4,
            len: 24,
            major_version: 2,
            minor_version: 2,
            act_rcv_sz: 4096,
        };
        assert_eq!(HelloReplyRepr::parse(&REPLY_BYTES), Ok(r));
        let mut out = [0xaau8; 24];
        r.emit(&mut out).unwrap();
        assert_eq!(out, REPLY_BYTES);
        let mut built = [0xffu8; 24];
        let mut v = HelloReply::new_unchecked(&mut built[..]);
        v.clear();
        v.set_mid(IwarpMid::HelloReply);
        v.set_bufs(4);
        v.set_length(24);
        v.set_version(2, 2);
        v.set_act_rcv_sz(4096);
        assert_eq!(built, REPLY_BYTES);
        assert_eq!(HelloReplyRepr::parse(&hello_bytes()), Err(Error::Malformed));
    }

    #[test]
    fn code_points_keep_unknowns() {
        for v in 0..=255u8 {
            assert_eq!(u8::from(IwarpMid::from(v)), v);
            assert_eq!(u8::from(FlowControl::from(v)), v);
        }
        let mut b = hello_bytes();
        b[17] = 0x47;
        assert_eq!(
            HelloRepr::parse(&b).map(|r| r.flow_control),
            Ok(FlowControl::Unknown(7))
        );
    }

    #[test]
    fn describe() {
        let mut c = Collect::default();
        hello_repr().describe(&mut c);
        assert_eq!(c.get("flowc"), Some("Ulp (0x1)"));
        assert_eq!(c.get("sip"), Some("10.0.0.1"));
        assert_eq!(c.fields.len(), 12);
    }

    proptest! {
        #[test]
        fn hello_round_trip(bufs in any::<u16>(), len in any::<u32>(), maj in 0u8..16, min in 0u8..16,
            fc in 0u8..16, d in any::<u32>(), l in any::<u32>(), port in any::<u16>(),
            s in any::<[u8; 16]>(), t in any::<[u8; 16]>(), v6 in any::<bool>()) {
            let addrs = if v6 {
                IpPair::V6 { src: s.into(), dst: t.into() }
            } else {
                IpPair::V4 { src: [s[0], s[1], s[2], s[3]].into(), dst: [t[0], t[1], t[2], t[3]].into() }
            };
            let r = HelloRepr { bufs, len, major_version: maj, minor_version: min,
                flow_control: fc.into(), des_rem_rcv_sz: d, local_rcv_sz: l, local_port: port, addrs };
            let mut b = [0u8; HELLO_LEN];
            r.emit(&mut b).unwrap();
            prop_assert_eq!(HelloRepr::parse(&b), Ok(r));
        }

        #[test]
        fn reply_round_trip(bufs in any::<u16>(), len in any::<u32>(), maj in 0u8..16, min in 0u8..16,
            a in any::<u32>()) {
            let r = HelloReplyRepr { bufs, len, major_version: maj, minor_version: min, act_rcv_sz: a };
            let mut b = [0u8; HELLO_REPLY_LEN];
            r.emit(&mut b).unwrap();
            prop_assert_eq!(HelloReplyRepr::parse(&b), Ok(r));
        }

        #[test]
        fn parse_never_panics(data in proptest::collection::vec(any::<u8>(), 0..300)) {
            let _ = HelloRepr::parse(&data);
            let _ = HelloReplyRepr::parse(&data);
        }
    }
}

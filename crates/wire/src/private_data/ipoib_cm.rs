//! IPoIB-CM private data (RFC 4755 §6): the sender's UD QPN and its receive MTU, carried in every CM
//! message of connection establishment, REJ included (RFC 4755 §3.2).
//!
//! ```text
//!  0        7       15       23       31
//! |Reserved|         UD QPN           |
//! |            Receive MTU            |
//! ```
//!
//! Linux declares the same 8 bytes as `struct ipoib_cm_data { __be32 qpn; __be32 mtu; }` with the
//! QPN (24 bits) in the low bits of the first word, so the RFC's Reserved octet is the top byte of
//! Linux's `qpn`: the two layouts agree byte for byte. Linux sends `mtu = 65524` (its 65520-byte
//! connected-mode MTU plus the 4-byte encapsulation header), i.e. the *receive MTU counts the IPoIB
//! header*, which is how RFC 4755 §5.1 uses it ("further reduced by" the 4 octets). The CM message
//! carries more private-data bytes than these 8 (92 in a REQ); the rest is zero and ignored.

use crate::describe::{Describe, Describer, Value};
use crate::types::{be24, be32, put24, put32};
use crate::Result;

mod field {
    use core::ops::Range;
    /// Reserved octet (RFC 4755 §6), the top byte of Linux's `qpn` word.
    pub const RESERVED: usize = 0;
    /// UD QPN, 24 bits.
    pub const UD_QPN: Range<usize> = 1..4;
    /// Receive MTU, 32 bits.
    pub const RECEIVE_MTU: Range<usize> = 4..8;
}

/// Length of the IPoIB-CM private data.
pub const LEN: usize = 8;
/// The receive MTU Linux advertises: 65520 + 4 (docs/DEPLOYED.md, Linux `IPOIB_CM_BUF_SIZE`).
pub const LINUX_RECEIVE_MTU: u32 = 65524;
/// Linux's connected-mode interface MTU, 64 KiB - 16.
pub const LINUX_CM_MTU: u32 = 65520;
/// The IPoIB encapsulation header (RFC 4755 §4, §5.1).
pub const ENCAP_LEN: u32 = 4;

/// The IP MTU of a connection: the smaller of the two receive MTUs, less the 4-octet encapsulation
/// header (RFC 4755 §5.1: "the smaller of the two IB Receive MTU values is used by both the peers
/// ... further reduced by that amount").
pub fn connection_mtu(local_receive_mtu: u32, remote_receive_mtu: u32) -> u32 {
    local_receive_mtu
        .min(remote_receive_mtu)
        .saturating_sub(ENCAP_LEN)
}

fixed_view! {
    /// A view of IPoIB-CM private data.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct IpoibCmPrivateData;
    /// `Err(Truncated)` when shorter than 8 bytes. Longer buffers (a whole CM private-data field)
    /// are fine: the bytes after the 8 are not interpreted.
    fn check_len(min = LEN);
}

impl<T: AsRef<[u8]>> IpoibCmPrivateData<T> {
    /// The reserved octet; "ignored on receive" (RFC 4755 §6).
    pub fn reserved(&self) -> u8 {
        self.buffer.as_ref()[field::RESERVED]
    }

    /// The sender's UD QPN (RFC 4755 §3.2, §6).
    pub fn ud_qpn(&self) -> u32 {
        be24(self.buffer.as_ref(), field::UD_QPN.start)
    }

    /// The largest packet the sender can receive, encapsulation header included (RFC 4755 §5.1).
    pub fn receive_mtu(&self) -> u32 {
        be32(self.buffer.as_ref(), field::RECEIVE_MTU.start)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> IpoibCmPrivateData<T> {
    /// Sets the reserved octet (zero on transmit, RFC 4755 §6).
    pub fn set_reserved(&mut self, v: u8) {
        self.buffer.as_mut()[field::RESERVED] = v;
    }
    /// Sets the UD QPN (low 24 bits of `v`).
    pub fn set_ud_qpn(&mut self, v: u32) {
        put24(self.buffer.as_mut(), field::UD_QPN.start, v);
    }
    /// Sets the receive MTU.
    pub fn set_receive_mtu(&mut self, v: u32) {
        put32(self.buffer.as_mut(), field::RECEIVE_MTU.start, v);
    }
}

/// IPoIB-CM private data (RFC 4755 §6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct IpoibCmPrivateDataRepr {
    /// UD QPN of the sender, 24 bits (RFC 4755 §3.2: it lets the receiver form the sender's
    /// link-layer address).
    pub ud_qpn: u32,
    /// Receive MTU of the sender (RFC 4755 §5.1); Linux sends [`LINUX_RECEIVE_MTU`].
    pub receive_mtu: u32,
}

impl IpoibCmPrivateDataRepr {
    /// What Linux sends for an interface with UD QPN `ud_qpn`.
    pub fn linux(ud_qpn: u32) -> Self {
        IpoibCmPrivateDataRepr {
            ud_qpn: ud_qpn & 0x00ff_ffff,
            receive_mtu: LINUX_RECEIVE_MTU,
        }
    }

    /// Parses the first 8 bytes of `data`; the reserved octet is ignored (RFC 4755 §6).
    pub fn parse(data: &[u8]) -> Result<Self> {
        let p = IpoibCmPrivateData::new_checked(data)?;
        Ok(IpoibCmPrivateDataRepr {
            ud_qpn: p.ud_qpn(),
            receive_mtu: p.receive_mtu(),
        })
    }

    /// 8.
    pub const fn buffer_len(&self) -> usize {
        LEN
    }

    /// Writes the 8 bytes, reserved octet zero (RFC 4755 §6, §9), into the start of `buf`.
    pub fn emit(&self, buf: &mut [u8]) -> Result<()> {
        let mut p = IpoibCmPrivateData::new_checked(buf)?;
        p.set_reserved(0);
        p.set_ud_qpn(self.ud_qpn);
        p.set_receive_mtu(self.receive_mtu);
        Ok(())
    }
}

impl Describe for IpoibCmPrivateDataRepr {
    fn describe(&self, d: &mut dyn Describer) {
        d.field("ud_qpn", Value::Hex(self.ud_qpn.into(), 6));
        d.field("receive_mtu", Value::Uint(self.receive_mtu.into()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::describe::Collect;
    use crate::Error;
    use proptest::prelude::*;

    // RFC 4755 §6: what Linux sends for UD QPN 0x000048: be32 qpn, be32 mtu = 65524.
    const LINUX_BYTES: [u8; 8] = [0x00, 0x00, 0x00, 0x48, 0x00, 0x00, 0xff, 0xf4];

    #[test]
    fn deconstruct() {
        // RFC 4755 §6
        let p = IpoibCmPrivateData::new_checked(&LINUX_BYTES[..]).unwrap();
        assert_eq!(p.reserved(), 0);
        assert_eq!(p.ud_qpn(), 0x48);
        assert_eq!(p.receive_mtu(), 65524);
    }

    #[test]
    fn construct() {
        let mut b = [0xffu8; 8];
        let mut p = IpoibCmPrivateData::new_unchecked(&mut b[..]);
        p.set_reserved(0);
        p.set_ud_qpn(0x48);
        p.set_receive_mtu(65524);
        assert_eq!(b, LINUX_BYTES);
    }

    #[test]
    fn parse_ignores_reserved() {
        // RFC 4755 §6: Reserved "ignored on receive"; a 92-byte REQ private data field is fine.
        let mut b = [0u8; 92];
        b[..8].copy_from_slice(&LINUX_BYTES);
        b[0] = 0x5a;
        assert_eq!(
            IpoibCmPrivateDataRepr::parse(&b),
            Ok(IpoibCmPrivateDataRepr::linux(0x48))
        );
        assert_eq!(
            IpoibCmPrivateDataRepr::parse(&b[..7]),
            Err(Error::Truncated)
        );
    }

    #[test]
    fn emit() {
        // RFC 4755 §6: Reserved set to zero on transmit.
        let mut b = [0xaau8; 8];
        IpoibCmPrivateDataRepr::linux(0x48).emit(&mut b).unwrap();
        assert_eq!(b, LINUX_BYTES);
    }

    #[test]
    fn mtu_rule() {
        // RFC 4755 §5.1: smaller receive MTU, less the 4-octet header.
        assert_eq!(connection_mtu(65524, 65524), LINUX_CM_MTU);
        assert_eq!(connection_mtu(65524, 2048), 2044);
        assert_eq!(connection_mtu(0, 2048), 0);
    }

    #[test]
    fn describe() {
        let mut c = Collect::default();
        IpoibCmPrivateDataRepr::linux(0x48).describe(&mut c);
        assert_eq!(c.get("ud_qpn"), Some("0x000048"));
        assert_eq!(c.get("receive_mtu"), Some("65524"));
    }

    proptest! {
        #[test]
        fn round_trip(qpn in 0u32..(1 << 24), mtu in any::<u32>()) {
            let r = IpoibCmPrivateDataRepr { ud_qpn: qpn, receive_mtu: mtu };
            let mut b = [0u8; LEN];
            r.emit(&mut b).unwrap();
            prop_assert_eq!(IpoibCmPrivateDataRepr::parse(&b), Ok(r));
        }

        #[test]
        fn parse_never_panics(data in proptest::collection::vec(any::<u8>(), 0..300)) {
            let _ = IpoibCmPrivateDataRepr::parse(&data);
        }
    }
}

//! The 20-octet IPoIB link-layer ("hardware") address carried in ARP and in the IPv6 ND link-layer
//! address options (draft-ietf-ipoib-ip-over-infiniband-06 §9.1.1, figure 5), with the flags of
//! RFC 4755 §3.1 in its first octet:
//!
//! ```text
//! | flags (8) |          QPN (24)          |
//! |                GID (128)               |
//! ```
//!
//! Text form: the 20 bytes as colon-separated hex pairs, as Linux `ip link` prints an IPoIB address
//! (`80:00:00:48:fe:80:00:00:00:00:00:00:00:02:c9:03:00:00:12:34`).

use super::mcast::{broadcast_mgid, Scope};
use crate::describe::{Describe, Describer, Value};
use crate::ib::BthRepr;
use crate::keys::PKey;
use crate::types::{be24, put24, Gid};
use crate::{Error, Result};
use core::fmt;
use core::str::FromStr;

mod field {
    use core::ops::Range;
    pub const FLAGS: usize = 0;
    pub const QPN: Range<usize> = 1..4;
    pub const GID: Range<usize> = 4..20;
}

/// Length of an IPoIB link-layer address (draft-ietf-ipoib-ip-over-infiniband-06 §9.1.1; §9.2: the ARP
/// hardware address length "therefore is 20").
pub const HWADDR_LEN: usize = 20;

/// The flags octet (RFC 4755 §3.1: `|RC|UC|0|0|0|0|0|0|`; draft-ietf-ipoib-ip-over-infiniband-06 §9.1.1
/// calls it reserved). Every bit is kept so that unknown ones survive a round trip; RFC 4755 §3.1 says
/// reserved bits MUST be sent as 0 and ignored on receipt, which [`HwAddrFlags::sanitized`] applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct HwAddrFlags(pub u8);

impl HwAddrFlags {
    /// No connected mode (IPoIB-UD only; RFC 4755 §3.1: all zeros when CM is not supported).
    pub const NONE: HwAddrFlags = HwAddrFlags(0);
    /// Reliable connected mode supported (RFC 4755 §3.1, bit 0, the most significant bit).
    pub const RC: HwAddrFlags = HwAddrFlags(0x80);
    /// Unreliable connected mode supported (RFC 4755 §3.1, bit 1).
    pub const UC: HwAddrFlags = HwAddrFlags(0x40);
    /// The reserved bits (RFC 4755 §3.1).
    pub const RESERVED_MASK: u8 = 0x3f;

    /// RC supported.
    pub fn rc(self) -> bool {
        self.0 & Self::RC.0 != 0
    }
    /// UC supported.
    pub fn uc(self) -> bool {
        self.0 & Self::UC.0 != 0
    }
    /// The reserved bits as received.
    pub fn reserved(self) -> u8 {
        self.0 & Self::RESERVED_MASK
    }
    /// The flags with the reserved bits cleared: what a receiver acts on and what a sender sends
    /// (RFC 4755 §3.1: reserved bits MUST be set to 0 on transmits and ignored on receives).
    pub fn sanitized(self) -> HwAddrFlags {
        HwAddrFlags(self.0 & !Self::RESERVED_MASK)
    }
}

impl core::ops::BitOr for HwAddrFlags {
    type Output = HwAddrFlags;
    fn bitor(self, o: HwAddrFlags) -> HwAddrFlags {
        HwAddrFlags(self.0 | o.0)
    }
}

fixed_view! {
    /// A read/write view of a 20-byte link-layer address inside a larger buffer.
    #[derive(Debug, Clone)]
    pub struct HwAddrView;
    /// `Err(Truncated)` below 20 bytes.
    fn check_len(min = HWADDR_LEN);
}

impl<T: AsRef<[u8]>> HwAddrView<T> {
    /// The flags octet.
    pub fn flags(&self) -> HwAddrFlags {
        HwAddrFlags(self.buffer.as_ref()[field::FLAGS])
    }
    /// The UD QPN (24 bits).
    pub fn qpn(&self) -> u32 {
        be24(self.buffer.as_ref(), field::QPN.start)
    }
    /// The port GID.
    pub fn gid(&self) -> Gid {
        Gid::from_bytes(&self.buffer.as_ref()[field::GID])
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> HwAddrView<T> {
    /// Sets the flags octet.
    pub fn set_flags(&mut self, f: HwAddrFlags) {
        self.buffer.as_mut()[field::FLAGS] = f.0;
    }
    /// Sets the QPN (low 24 bits of `qpn`).
    pub fn set_qpn(&mut self, qpn: u32) {
        put24(self.buffer.as_mut(), field::QPN.start, qpn);
    }
    /// Sets the GID.
    pub fn set_gid(&mut self, gid: Gid) {
        self.buffer.as_mut()[field::GID].copy_from_slice(gid.as_bytes());
    }
}

/// An IPoIB link-layer address (draft-ietf-ipoib-ip-over-infiniband-06 §9.1.1 with RFC 4755 §3.1
/// flags). Ordered and compared as its 20 bytes, which is the numeric comparison RFC 4755 §3.3 uses to
/// resolve REQ crossing.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct HwAddr {
    /// Connected-mode capabilities (RFC 4755 §3.1).
    pub flags: HwAddrFlags,
    /// The UD QPN all IP traffic to the interface goes to (§9.1.1 b; 24 bits).
    pub qpn: u32,
    /// One of the port's GIDs, RECOMMENDED subnet prefix + port GUID (§9.1.1 c).
    pub gid: Gid,
}

impl HwAddr {
    /// An address from its parts (`qpn` is truncated to 24 bits when emitted).
    pub const fn new(flags: HwAddrFlags, qpn: u32, gid: Gid) -> HwAddr {
        HwAddr { flags, qpn, gid }
    }

    /// The link broadcast address as Linux builds it: flags 0, QPN 0xFFFFFF and the broadcast GID of
    /// `pkey` (full-membership bit set) and `scope` (draft-ietf-ipoib-ip-over-infiniband-06 §4, §4.1), i.e.
    /// `00 ff ff ff | ff 1S 40 1b | pkey|0x8000 | 00 x6 | ff ff ff ff`.
    pub fn broadcast(pkey: PKey, scope: Scope) -> HwAddr {
        HwAddr::multicast(broadcast_mgid(pkey, scope))
    }

    /// The link-layer address of a multicast group: flags 0, QPN 0xFFFFFF, the MGID.
    pub const fn multicast(mgid: Gid) -> HwAddr {
        HwAddr {
            flags: HwAddrFlags::NONE,
            qpn: BthRepr::MULTICAST_QPN,
            gid: mgid,
        }
    }

    /// True if the GID is a multicast GID (the address names a group, not a port).
    pub fn is_multicast(&self) -> bool {
        self.gid.is_multicast()
    }

    /// Reads the first 20 bytes of `data`.
    pub fn parse(data: &[u8]) -> Result<HwAddr> {
        let v = HwAddrView::new_checked(data)?;
        Ok(HwAddr {
            flags: v.flags(),
            qpn: v.qpn(),
            gid: v.gid(),
        })
    }

    /// Always 20.
    pub const fn buffer_len(&self) -> usize {
        HWADDR_LEN
    }

    /// Writes the 20 bytes into the start of `buf`; `Err(Truncated)` if it is shorter.
    pub fn emit(&self, buf: &mut [u8]) -> Result<()> {
        let mut v = HwAddrView::new_checked(buf)?;
        v.set_flags(self.flags);
        v.set_qpn(self.qpn);
        v.set_gid(self.gid);
        Ok(())
    }

    /// The 20 bytes in wire order.
    pub fn to_bytes(&self) -> [u8; HWADDR_LEN] {
        let mut b = [0u8; HWADDR_LEN];
        b[0] = self.flags.0;
        b[1..4].copy_from_slice(&self.qpn.to_be_bytes()[1..]);
        b[4..].copy_from_slice(self.gid.as_bytes());
        b
    }

    /// The address from 20 bytes.
    pub fn from_bytes(b: &[u8; HWADDR_LEN]) -> HwAddr {
        HwAddr {
            flags: HwAddrFlags(b[0]),
            qpn: be24(b, field::QPN.start),
            gid: Gid::from_bytes(&b[field::GID]),
        }
    }
}

impl fmt::Display for HwAddr {
    /// Twenty colon-separated lower-case hex pairs, as Linux prints an IPoIB address.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, b) in self.to_bytes().iter().enumerate() {
            if i > 0 {
                f.write_str(":")?;
            }
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for HwAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "HwAddr({self})")
    }
}

impl FromStr for HwAddr {
    type Err = Error;

    /// Parses the [`fmt::Display`] form: exactly 20 groups of one or two hex digits separated by `:`.
    /// Anything else is `Err(Malformed)`.
    fn from_str(s: &str) -> Result<HwAddr> {
        let mut b = [0u8; HWADDR_LEN];
        let mut n = 0;
        for part in s.split(':') {
            if n == HWADDR_LEN
                || part.is_empty()
                || part.len() > 2
                || !part.bytes().all(|c| c.is_ascii_hexdigit())
            {
                return Err(Error::Malformed);
            }
            b[n] = u8::from_str_radix(part, 16).map_err(|_| Error::Malformed)?;
            n += 1;
        }
        if n != HWADDR_LEN {
            return Err(Error::Malformed);
        }
        Ok(HwAddr::from_bytes(&b))
    }
}

impl Describe for HwAddr {
    fn describe(&self, d: &mut dyn Describer) {
        d.field("flags", Value::Hex(self.flags.0 as u64, 2));
        d.field("rc", Value::Bool(self.flags.rc()));
        d.field("uc", Value::Bool(self.flags.uc()));
        d.field("qpn", Value::Hex(self.qpn as u64, 6));
        d.field("gid", Value::Gid(self.gid));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::describe::Collect;
    use proptest::prelude::*;

    // draft-ietf-ipoib-ip-over-infiniband-06 §9.1.1 figure 5 with RFC 4755 §3.1 flags: RC, QPN 0x48,
    // GID fe80::2:c903:0:1234.
    static BYTES: [u8; 20] = [
        0x80, 0x00, 0x00, 0x48, 0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x00, 0x02, 0xc9, 0x03, 0x00, 0x00,
        0x12, 0x34,
    ];
    const TEXT: &str = "80:00:00:48:fe:80:00:00:00:00:00:00:00:02:c9:03:00:00:12:34";

    fn addr() -> HwAddr {
        HwAddr::new(
            HwAddrFlags::RC,
            0x48,
            Gid::new(Gid::DEFAULT_SUBNET_PREFIX, 0x0002_c903_0000_1234),
        )
    }

    #[test]
    fn deconstruct() {
        let v = HwAddrView::new_checked(&BYTES[..]).unwrap();
        assert!(v.flags().rc());
        assert!(!v.flags().uc());
        assert_eq!(v.qpn(), 0x48);
        assert_eq!(v.gid().to_string(), "fe80::2:c903:0:1234");
    }

    #[test]
    fn construct() {
        let mut buf = [0xaau8; 20];
        let mut v = HwAddrView::new_unchecked(&mut buf[..]);
        v.set_flags(HwAddrFlags::RC);
        v.set_qpn(0x48);
        v.set_gid(addr().gid);
        assert_eq!(buf, BYTES);
    }

    #[test]
    fn parse_emit() {
        assert_eq!(HwAddr::parse(&BYTES).unwrap(), addr());
        let mut buf = [0u8; 20];
        addr().emit(&mut buf).unwrap();
        assert_eq!(buf, BYTES);
        assert_eq!(addr().to_bytes(), BYTES);
        assert_eq!(HwAddr::parse(&BYTES[..19]), Err(Error::Truncated));
        assert_eq!(addr().emit(&mut [0u8; 19]), Err(Error::Truncated));
    }

    #[test]
    fn text_form_like_linux() {
        assert_eq!(addr().to_string(), TEXT);
        assert_eq!(TEXT.parse::<HwAddr>().unwrap(), addr());
        assert_eq!(
            "80:0:0:48:fe:80:0:0:0:0:0:0:0:2:c9:3:0:0:12:34"
                .parse::<HwAddr>()
                .unwrap(),
            addr()
        );
        for bad in [
            "",
            "80:00",
            &format!("{TEXT}:00"),
            &TEXT.replace("48", "4g"),
            &TEXT.replace(":48", "::48"),
            &TEXT.replace(":48", ":+8"),
        ] {
            assert_eq!(bad.parse::<HwAddr>(), Err(Error::Malformed), "{bad}");
        }
    }

    // docs/DEPLOYED.md (Linux): `00 ff ff ff | ff 12 40 1b | pkey|0x8000 | 00 x6 | ff ff ff ff`.
    // draft-ietf-ipoib-ip-over-infiniband-06 §4 figure 2 and §4.1 item 1.
    #[test]
    fn broadcast_address() {
        let b = HwAddr::broadcast(PKey(0x7fff), Scope::LinkLocal);
        assert_eq!(
            b.to_string(),
            "00:ff:ff:ff:ff:12:40:1b:ff:ff:00:00:00:00:00:00:ff:ff:ff:ff"
        );
        assert!(b.is_multicast());
        let s = HwAddr::broadcast(PKey(0x8001), Scope::SiteLocal);
        assert_eq!(
            s.to_string(),
            "00:ff:ff:ff:ff:15:40:1b:80:01:00:00:00:00:00:00:ff:ff:ff:ff"
        );
    }

    // RFC 4755 §3.1: flags RC = bit 0 (0x80), UC = bit 1 (0x40), others reserved: sent as 0, ignored
    // on receive, but kept by the parser.
    #[test]
    fn rfc4755_flags() {
        let f = HwAddrFlags(0xc5);
        assert!(f.rc() && f.uc());
        assert_eq!(f.reserved(), 0x05);
        assert_eq!(f.sanitized(), HwAddrFlags::RC | HwAddrFlags::UC);
        let mut b = BYTES;
        b[0] = 0xc5;
        assert_eq!(HwAddr::parse(&b).unwrap().flags, f);
    }

    #[test]
    fn describe() {
        let mut c = Collect::default();
        addr().describe(&mut c);
        assert_eq!(c.get("flags"), Some("0x80"));
        assert_eq!(c.get("rc"), Some("true"));
        assert_eq!(c.get("qpn"), Some("0x000048"));
        assert_eq!(c.get("gid"), Some("fe80::2:c903:0:1234"));
    }

    proptest! {
        #[test]
        fn round_trip(f in any::<u8>(), qpn in 0u32..0x0100_0000, g in any::<[u8; 16]>()) {
            let a = HwAddr::new(HwAddrFlags(f), qpn, Gid(g));
            let mut buf = [0u8; 20];
            a.emit(&mut buf).unwrap();
            prop_assert_eq!(HwAddr::parse(&buf).unwrap(), a);
            prop_assert_eq!(a.to_string().parse::<HwAddr>().unwrap(), a);
        }

        #[test]
        fn parse_never_panics(data in proptest::collection::vec(any::<u8>(), 0..300)) {
            let _ = HwAddr::parse(&data);
        }

        #[test]
        fn from_str_never_panics(s in "\\PC{0,80}") {
            let _ = s.parse::<HwAddr>();
        }
    }
}

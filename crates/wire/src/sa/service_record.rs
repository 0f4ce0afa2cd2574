//! ServiceRecord (IBA 1 §15.2.5.14), 176 bytes: a service a port registered with the SA, found
//! by ServiceID, GID, P_Key, name or data:
//!
//! ```text
//! 0   ServiceID(64)
//! 8   ServiceGID(128)
//! 24  ServiceP_Key(16) | Reserved(16)
//! 28  ServiceLease(32)          seconds; 0xFFFFFFFF: infinite
//! 32  ServiceKey(128)
//! 48  ServiceName (64 bytes, UTF-8, NUL-terminated when shorter)
//! 112 ServiceData8 (16 × 8 bits)
//! 128 ServiceData16 (8 × 16 bits)
//! 144 ServiceData32 (4 × 32 bits)
//! 160 ServiceData64 (2 × 64 bits)
//! ```
//!
//! Layout checked against OpenSM `ib_service_record_t` and wireshark's `parse_ServiceRecord`.

use crate::describe::{Describe, Describer, Value};
use crate::types::{be16, be32, be64, put16, put32, put64, Gid};
use crate::{Error, Result};

mod field {
    pub const SERVICE_ID: usize = 0;
    pub const GID: usize = 8;
    pub const P_KEY: usize = 24;
    pub const RESERVED: usize = 26;
    pub const LEASE: usize = 28;
    pub const KEY: usize = 32;
    pub const NAME: usize = 48;
    pub const DATA8: usize = 112;
    pub const DATA16: usize = 128;
    pub const DATA32: usize = 144;
    pub const DATA64: usize = 160;
    pub const LEN: usize = 176;
}

/// Bytes of ServiceName.
pub const SERVICE_NAME_LEN: usize = 64;

/// ServiceLease meaning "never expires" (IBA 1 §15.2.5.14).
pub const SERVICE_LEASE_INFINITE: u32 = 0xffff_ffff;

/// ComponentMask bits of ServiceRecord (IBA 1 §15.2.5.14; OpenSM `IB_SR_COMPMASK_*`). Each
/// element of the ServiceData arrays has a bit of its own: [`sr_mask::data8`] and its kin.
pub mod sr_mask {
    /// ServiceID.
    pub const SERVICE_ID: u64 = 1 << 0;
    /// ServiceGID.
    pub const SERVICE_GID: u64 = 1 << 1;
    /// ServiceP_Key.
    pub const SERVICE_P_KEY: u64 = 1 << 2;
    /// Reserved.
    pub const RESERVED: u64 = 1 << 3;
    /// ServiceLease.
    pub const SERVICE_LEASE: u64 = 1 << 4;
    /// ServiceKey.
    pub const SERVICE_KEY: u64 = 1 << 5;
    /// ServiceName.
    pub const SERVICE_NAME: u64 = 1 << 6;
    /// ServiceData8\[i\], i < 16 (bits 7..=22).
    pub const fn data8(i: usize) -> u64 {
        1 << (7 + i)
    }
    /// ServiceData16\[i\], i < 8 (bits 23..=30).
    pub const fn data16(i: usize) -> u64 {
        1 << (23 + i)
    }
    /// ServiceData32\[i\], i < 4 (bits 31..=34).
    pub const fn data32(i: usize) -> u64 {
        1 << (31 + i)
    }
    /// ServiceData64\[i\], i < 2 (bits 35..=36).
    pub const fn data64(i: usize) -> u64 {
        1 << (35 + i)
    }
}

/// A ServiceRecord, every field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServiceRecordRepr {
    /// ServiceID.
    pub service_id: u64,
    /// GID of the port offering the service.
    pub service_gid: Gid,
    /// P_Key the service is reached by.
    pub service_p_key: u16,
    /// Seconds the registration lasts; [`SERVICE_LEASE_INFINITE`]: forever.
    pub service_lease: u32,
    /// ServiceKey (zeroed in answers to untrusted requests).
    pub service_key: [u8; 16],
    /// ServiceName as sent (not checked for a NUL; see [`ServiceRecordRepr::name`]).
    pub service_name: [u8; 64],
    /// ServiceData8.
    pub data8: [u8; 16],
    /// ServiceData16.
    pub data16: [u16; 8],
    /// ServiceData32.
    pub data32: [u32; 4],
    /// ServiceData64.
    pub data64: [u64; 2],
}

impl Default for ServiceRecordRepr {
    fn default() -> Self {
        ServiceRecordRepr {
            service_id: 0,
            service_gid: Gid::ZERO,
            service_p_key: 0,
            service_lease: 0,
            service_key: [0; 16],
            service_name: [0; SERVICE_NAME_LEN],
            data8: [0; 16],
            data16: [0; 8],
            data32: [0; 4],
            data64: [0; 2],
        }
    }
}

/// `text` as a ServiceName: its bytes, cut at 64, NUL-padded.
pub fn service_name(text: &str) -> [u8; 64] {
    let mut n = [0u8; SERVICE_NAME_LEN];
    let len = text.len().min(SERVICE_NAME_LEN);
    n[..len].copy_from_slice(&text.as_bytes()[..len]);
    n
}

impl ServiceRecordRepr {
    /// Reads the 176 bytes at the start of `data` (the reserved field ignored).
    pub fn parse(data: &[u8]) -> Result<ServiceRecordRepr> {
        if data.len() < field::LEN {
            return Err(Error::Truncated);
        }
        let mut r = ServiceRecordRepr {
            service_id: be64(data, field::SERVICE_ID),
            service_gid: Gid::from_bytes(&data[field::GID..]),
            service_p_key: be16(data, field::P_KEY),
            service_lease: be32(data, field::LEASE),
            ..ServiceRecordRepr::default()
        };
        r.service_key
            .copy_from_slice(&data[field::KEY..field::NAME]);
        r.service_name
            .copy_from_slice(&data[field::NAME..field::DATA8]);
        r.data8.copy_from_slice(&data[field::DATA8..field::DATA16]);
        for (i, v) in r.data16.iter_mut().enumerate() {
            *v = be16(data, field::DATA16 + 2 * i);
        }
        for (i, v) in r.data32.iter_mut().enumerate() {
            *v = be32(data, field::DATA32 + 4 * i);
        }
        for (i, v) in r.data64.iter_mut().enumerate() {
            *v = be64(data, field::DATA64 + 8 * i);
        }
        Ok(r)
    }

    /// 176 bytes.
    pub const fn buffer_len(&self) -> usize {
        field::LEN
    }

    /// Writes the 176 bytes (reserved zeroed). Panics if `buf` is shorter.
    pub fn emit(&self, buf: &mut [u8]) {
        let buf = &mut buf[..field::LEN];
        put64(buf, field::SERVICE_ID, self.service_id);
        buf[field::GID..field::P_KEY].copy_from_slice(self.service_gid.as_bytes());
        put16(buf, field::P_KEY, self.service_p_key);
        put16(buf, field::RESERVED, 0);
        put32(buf, field::LEASE, self.service_lease);
        buf[field::KEY..field::NAME].copy_from_slice(&self.service_key);
        buf[field::NAME..field::DATA8].copy_from_slice(&self.service_name);
        buf[field::DATA8..field::DATA16].copy_from_slice(&self.data8);
        for (i, v) in self.data16.iter().enumerate() {
            put16(buf, field::DATA16 + 2 * i, *v);
        }
        for (i, v) in self.data32.iter().enumerate() {
            put32(buf, field::DATA32 + 4 * i, *v);
        }
        for (i, v) in self.data64.iter().enumerate() {
            put64(buf, field::DATA64 + 8 * i, *v);
        }
    }

    /// ServiceName up to its first NUL (all 64 bytes when it has none), invalid UTF-8 replaced.
    pub fn name(&self) -> String {
        let end = self
            .service_name
            .iter()
            .position(|&b| b == 0)
            .unwrap_or(SERVICE_NAME_LEN);
        String::from_utf8_lossy(&self.service_name[..end]).into_owned()
    }

    /// The RID (IBA 1 §15.2.5.14): ServiceID, ServiceGID and ServiceP_Key, the bytes OpenSM's
    /// `osm_svcr_get_by_rid` compares.
    pub fn rid(&self) -> (u64, Gid, u16) {
        (self.service_id, self.service_gid, self.service_p_key)
    }

    /// True when every field `component_mask` selects (see [`sr_mask`]) is equal in `self` and
    /// `other`; the lease and reserved bits select nothing (OpenSM `get_matching_sr`).
    pub fn matches(&self, other: &ServiceRecordRepr, component_mask: u64) -> bool {
        let on = |bit: u64| component_mask & bit != 0;
        let eq_where = |bit: fn(usize) -> u64, n: usize, eq: &dyn Fn(usize) -> bool| {
            (0..n).all(|i| !on(bit(i)) || eq(i))
        };
        (!on(sr_mask::SERVICE_ID) || self.service_id == other.service_id)
            && (!on(sr_mask::SERVICE_GID) || self.service_gid == other.service_gid)
            && (!on(sr_mask::SERVICE_P_KEY) || self.service_p_key == other.service_p_key)
            && (!on(sr_mask::SERVICE_KEY) || self.service_key == other.service_key)
            && (!on(sr_mask::SERVICE_NAME) || self.service_name == other.service_name)
            && eq_where(sr_mask::data8, 16, &|i| self.data8[i] == other.data8[i])
            && eq_where(sr_mask::data16, 8, &|i| self.data16[i] == other.data16[i])
            && eq_where(sr_mask::data32, 4, &|i| self.data32[i] == other.data32[i])
            && eq_where(sr_mask::data64, 2, &|i| self.data64[i] == other.data64[i])
    }
}

impl Describe for ServiceRecordRepr {
    fn describe(&self, d: &mut dyn Describer) {
        d.field("service_id", Value::Hex(self.service_id, 16));
        d.field("service_gid", Value::Gid(self.service_gid));
        d.field("service_p_key", Value::Hex(self.service_p_key.into(), 4));
        d.field("service_lease", Value::Uint(self.service_lease.into()));
        d.field("service_key", Value::Bytes(&self.service_key));
        d.field("service_name", Value::Str(&self.name()));
        d.field("service_data8", Value::Bytes(&self.data8));
        let mut b = [0u8; 64];
        for (i, v) in self.data16.iter().enumerate() {
            put16(&mut b, 2 * i, *v);
        }
        for (i, v) in self.data32.iter().enumerate() {
            put32(&mut b, 16 + 4 * i, *v);
        }
        for (i, v) in self.data64.iter().enumerate() {
            put64(&mut b, 32 + 8 * i, *v);
        }
        d.field("service_data16", Value::Bytes(&b[..16]));
        d.field("service_data32", Value::Bytes(&b[16..32]));
        d.field("service_data64", Value::Bytes(&b[32..48]));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::describe::Collect;
    use proptest::prelude::*;

    // IBA 1 §15.2.5.14: every field at its offset, big-endian; the name's 64 bytes kept as sent.
    #[test]
    fn parse_and_emit() {
        let mut b = [0u8; 176];
        b[..8].copy_from_slice(&0x1122_3344_5566_7788u64.to_be_bytes());
        b[8..16].copy_from_slice(&0xfe80_0000_0000_0000u64.to_be_bytes());
        b[16..24].copy_from_slice(&0x0002_c903_0000_1234u64.to_be_bytes());
        b[24..26].copy_from_slice(&[0xff, 0xff]);
        b[28..32].copy_from_slice(&[0, 0, 0x0e, 0x10]);
        b[32..48].copy_from_slice(&[0xa5; 16]);
        b[48..53].copy_from_slice(b"hello");
        for i in 0..16 {
            b[112 + i] = i as u8;
        }
        b[128..130].copy_from_slice(&[0xbe, 0xef]);
        b[142..144].copy_from_slice(&[0x12, 0x34]);
        b[144..148].copy_from_slice(&[0xde, 0xad, 0xbe, 0xef]);
        b[156..160].copy_from_slice(&[0, 0, 0, 7]);
        b[160..168].copy_from_slice(&[1, 2, 3, 4, 5, 6, 7, 8]);
        b[168..176].copy_from_slice(&[0xff; 8]);
        let r = ServiceRecordRepr::parse(&b).unwrap();
        assert_eq!(r.service_id, 0x1122_3344_5566_7788);
        assert_eq!(
            r.service_gid,
            Gid::new(0xfe80_0000_0000_0000, 0x0002_c903_0000_1234)
        );
        assert_eq!((r.service_p_key, r.service_lease), (0xffff, 3600));
        assert_eq!(r.service_key, [0xa5; 16]);
        assert_eq!(r.name(), "hello");
        assert_eq!(r.data8[15], 15);
        assert_eq!((r.data16[0], r.data16[7]), (0xbeef, 0x1234));
        assert_eq!((r.data32[0], r.data32[3]), (0xdead_beef, 7));
        assert_eq!(r.data64, [0x0102_0304_0506_0708, u64::MAX]);
        let mut out = [0xeeu8; 176];
        r.emit(&mut out);
        assert_eq!(out, b);
        assert_eq!(ServiceRecordRepr::parse(&b[..175]), Err(Error::Truncated));
        let mut c = Collect::default();
        r.describe(&mut c);
        assert_eq!(c.get("service_name"), Some("hello"));
        assert_eq!(c.get("service_lease"), Some("3600"));
        // A name of 64 bytes without a NUL is kept whole.
        let long = ServiceRecordRepr {
            service_name: [b'x'; 64],
            ..r
        };
        assert_eq!(long.name().len(), 64);
        assert_eq!(service_name("hello"), r.service_name);
    }

    // OpenSM IB_SR_COMPMASK_*: SID bit 0 .. SNAME bit 6, ServiceData8 bits 7-22, 16 bits 23-30,
    // 32 bits 31-34, 64 bits 35-36.
    #[test]
    fn component_mask_bits_and_matching() {
        assert_eq!(sr_mask::SERVICE_NAME, 0x40);
        assert_eq!(sr_mask::data8(0), 1 << 7);
        assert_eq!(sr_mask::data8(15), 1 << 22);
        assert_eq!(sr_mask::data16(7), 1 << 30);
        assert_eq!(sr_mask::data32(0), 1 << 31);
        assert_eq!(sr_mask::data64(1), 1 << 36);
        let a = ServiceRecordRepr {
            service_id: 5,
            service_name: service_name("a"),
            ..ServiceRecordRepr::default()
        };
        let mut b = a;
        b.service_lease = 9;
        b.data32[2] = 1;
        assert!(a.matches(&b, sr_mask::SERVICE_ID | sr_mask::SERVICE_LEASE));
        assert!(a.matches(&b, sr_mask::data32(1) | sr_mask::SERVICE_NAME));
        assert!(!a.matches(&b, sr_mask::data32(2)));
        b.service_name = service_name("b");
        assert!(!a.matches(&b, sr_mask::SERVICE_NAME));
        assert!(a.matches(&b, 0));
    }

    proptest! {
        #[test]
        fn round_trip(data in proptest::collection::vec(any::<u8>(), 176)) {
            let r = ServiceRecordRepr::parse(&data).unwrap();
            let mut out = [0u8; 176];
            r.emit(&mut out);
            prop_assert_eq!(ServiceRecordRepr::parse(&out).unwrap(), r);
            prop_assert_eq!(&out[..26], &data[..26]);
            prop_assert_eq!(&out[26..28], &[0u8, 0]);
            prop_assert_eq!(&out[28..], &data[28..]);
            prop_assert!(r.matches(&r, u64::MAX));
        }
    }
}

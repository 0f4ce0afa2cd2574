//! ClassPortInfo (IBA 1 §13.4.8.1, Table 115 in 1.3), 72 bytes, common to every management class;
//! SA and CM clients ask for it to learn the response time and redirection:
//!
//! ```text
//! 0  BaseVersion | ClassVersion | CapabilityMask(16)
//! 4  CapabilityMask2(27) | RespTimeValue(5)
//! 8  RedirectGID(128)
//! 24 RedirectTC(8) | RedirectSL(4) | RedirectFL(20)
//! 28 RedirectLID(16) | RedirectP_Key(16)
//! 32 Reserved(8) | RedirectQP(24)
//! 36 RedirectQ_Key(32)
//! 40 TrapGID(128)
//! 56 TrapTC(8) | TrapSL(4) | TrapFL(20)
//! 60 TrapLID(16) | TrapP_Key(16)
//! 64 TrapHL(8) | TrapQP(24)
//! 68 TrapQ_Key(32)
//! ```

use crate::describe::{Describe, Describer, Value};
use crate::keys::{PKey, QKey};
use crate::types::{be16, be24, be32, put16, put24, put32, Gid};
use crate::Result;

mod field {
    pub const BASE_VERSION: usize = 0;
    pub const CLASS_VERSION: usize = 1;
    pub const CAPABILITY_MASK: usize = 2;
    pub const CAP_MASK2_RESP_TIME: usize = 4;
    pub const REDIRECT_GID: usize = 8;
    pub const REDIRECT_TC_SL_FL: usize = 24;
    pub const REDIRECT_LID: usize = 28;
    pub const REDIRECT_P_KEY: usize = 30;
    pub const REDIRECT_QP: usize = 33;
    pub const REDIRECT_Q_KEY: usize = 36;
    pub const TRAP_GID: usize = 40;
    pub const TRAP_TC_SL_FL: usize = 56;
    pub const TRAP_LID: usize = 60;
    pub const TRAP_P_KEY: usize = 62;
    pub const TRAP_HL: usize = 64;
    pub const TRAP_QP: usize = 65;
    pub const TRAP_Q_KEY: usize = 68;
    pub const LEN: usize = 72;
}

fixed_view! {
    /// A zero-copy view of ClassPortInfo.
    #[derive(Debug, Clone)]
    pub struct ClassPortInfo;
    /// `Err(Truncated)` if shorter than 72 bytes.
    fn check_len(min = field::LEN);
    /// Size on the wire.
    pub const LEN;
    fn b;
}

impl<T: AsRef<[u8]>> ClassPortInfo<T> {
    /// BaseVersion.
    pub fn base_version(&self) -> u8 {
        self.b()[field::BASE_VERSION]
    }
    /// ClassVersion.
    pub fn class_version(&self) -> u8 {
        self.b()[field::CLASS_VERSION]
    }
    /// CapabilityMask.
    pub fn capability_mask(&self) -> u16 {
        be16(self.b(), field::CAPABILITY_MASK)
    }
    /// CapabilityMask2 (27 bits).
    pub fn capability_mask2(&self) -> u32 {
        be32(self.b(), field::CAP_MASK2_RESP_TIME) >> 5
    }
    /// RespTimeValue (5 bits): the response time is 4.096 µs × 2^value.
    pub fn resp_time_value(&self) -> u8 {
        (be32(self.b(), field::CAP_MASK2_RESP_TIME) & 0x1f) as u8
    }
    /// RedirectGID.
    pub fn redirect_gid(&self) -> Gid {
        Gid::from_bytes(&self.b()[field::REDIRECT_GID..])
    }
    /// RedirectTC, RedirectSL, RedirectFL.
    pub fn redirect_tc_sl_fl(&self) -> (u8, u8, u32) {
        split_tc_sl_fl(be32(self.b(), field::REDIRECT_TC_SL_FL))
    }
    /// RedirectLID.
    pub fn redirect_lid(&self) -> u16 {
        be16(self.b(), field::REDIRECT_LID)
    }
    /// RedirectP_Key.
    pub fn redirect_pkey(&self) -> u16 {
        be16(self.b(), field::REDIRECT_P_KEY)
    }
    /// RedirectQP (24 bits).
    pub fn redirect_qp(&self) -> u32 {
        be24(self.b(), field::REDIRECT_QP)
    }
    /// RedirectQ_Key.
    pub fn redirect_qkey(&self) -> u32 {
        be32(self.b(), field::REDIRECT_Q_KEY)
    }
    /// TrapGID.
    pub fn trap_gid(&self) -> Gid {
        Gid::from_bytes(&self.b()[field::TRAP_GID..])
    }
    /// TrapTC, TrapSL, TrapFL.
    pub fn trap_tc_sl_fl(&self) -> (u8, u8, u32) {
        split_tc_sl_fl(be32(self.b(), field::TRAP_TC_SL_FL))
    }
    /// TrapLID.
    pub fn trap_lid(&self) -> u16 {
        be16(self.b(), field::TRAP_LID)
    }
    /// TrapP_Key.
    pub fn trap_pkey(&self) -> u16 {
        be16(self.b(), field::TRAP_P_KEY)
    }
    /// TrapHL.
    pub fn trap_hl(&self) -> u8 {
        self.b()[field::TRAP_HL]
    }
    /// TrapQP (24 bits).
    pub fn trap_qp(&self) -> u32 {
        be24(self.b(), field::TRAP_QP)
    }
    /// TrapQ_Key.
    pub fn trap_qkey(&self) -> u32 {
        be32(self.b(), field::TRAP_Q_KEY)
    }
}

fn split_tc_sl_fl(v: u32) -> (u8, u8, u32) {
    ((v >> 24) as u8, ((v >> 20) & 0xf) as u8, v & 0x000f_ffff)
}

fn join_tc_sl_fl(tc: u8, sl: u8, fl: u32) -> u32 {
    (u32::from(tc) << 24) | (u32::from(sl & 0xf) << 20) | (fl & 0x000f_ffff)
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> ClassPortInfo<T> {
    fn m(&mut self) -> &mut [u8] {
        self.buffer.as_mut()
    }
    /// Sets BaseVersion.
    pub fn set_base_version(&mut self, v: u8) {
        self.m()[field::BASE_VERSION] = v;
    }
    /// Sets ClassVersion.
    pub fn set_class_version(&mut self, v: u8) {
        self.m()[field::CLASS_VERSION] = v;
    }
    /// Sets CapabilityMask.
    pub fn set_capability_mask(&mut self, v: u16) {
        put16(self.m(), field::CAPABILITY_MASK, v);
    }
    /// Sets CapabilityMask2 (27 bits) and RespTimeValue (5 bits).
    pub fn set_capability_mask2_resp_time(&mut self, mask2: u32, resp_time: u8) {
        put32(
            self.m(),
            field::CAP_MASK2_RESP_TIME,
            (mask2 << 5) | u32::from(resp_time & 0x1f),
        );
    }
    /// Sets RedirectGID.
    pub fn set_redirect_gid(&mut self, g: Gid) {
        self.m()[field::REDIRECT_GID..field::REDIRECT_GID + 16].copy_from_slice(g.as_bytes());
    }
    /// Sets RedirectTC, RedirectSL, RedirectFL.
    pub fn set_redirect_tc_sl_fl(&mut self, tc: u8, sl: u8, fl: u32) {
        put32(
            self.m(),
            field::REDIRECT_TC_SL_FL,
            join_tc_sl_fl(tc, sl, fl),
        );
    }
    /// Sets RedirectLID.
    pub fn set_redirect_lid(&mut self, v: u16) {
        put16(self.m(), field::REDIRECT_LID, v);
    }
    /// Sets RedirectP_Key.
    pub fn set_redirect_pkey(&mut self, v: u16) {
        put16(self.m(), field::REDIRECT_P_KEY, v);
    }
    /// Sets RedirectQP (and zeroes the reserved byte before it).
    pub fn set_redirect_qp(&mut self, v: u32) {
        self.m()[field::REDIRECT_QP - 1] = 0;
        put24(self.m(), field::REDIRECT_QP, v);
    }
    /// Sets RedirectQ_Key.
    pub fn set_redirect_qkey(&mut self, v: u32) {
        put32(self.m(), field::REDIRECT_Q_KEY, v);
    }
    /// Sets TrapGID.
    pub fn set_trap_gid(&mut self, g: Gid) {
        self.m()[field::TRAP_GID..field::TRAP_GID + 16].copy_from_slice(g.as_bytes());
    }
    /// Sets TrapTC, TrapSL, TrapFL.
    pub fn set_trap_tc_sl_fl(&mut self, tc: u8, sl: u8, fl: u32) {
        put32(self.m(), field::TRAP_TC_SL_FL, join_tc_sl_fl(tc, sl, fl));
    }
    /// Sets TrapLID.
    pub fn set_trap_lid(&mut self, v: u16) {
        put16(self.m(), field::TRAP_LID, v);
    }
    /// Sets TrapP_Key.
    pub fn set_trap_pkey(&mut self, v: u16) {
        put16(self.m(), field::TRAP_P_KEY, v);
    }
    /// Sets TrapHL.
    pub fn set_trap_hl(&mut self, v: u8) {
        self.m()[field::TRAP_HL] = v;
    }
    /// Sets TrapQP.
    pub fn set_trap_qp(&mut self, v: u32) {
        put24(self.m(), field::TRAP_QP, v);
    }
    /// Sets TrapQ_Key.
    pub fn set_trap_qkey(&mut self, v: u32) {
        put32(self.m(), field::TRAP_Q_KEY, v);
    }
}

/// ClassPortInfo, every field (IBA 1 §13.4.8.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ClassPortInfoRepr {
    /// BaseVersion.
    pub base_version: u8,
    /// ClassVersion.
    pub class_version: u8,
    /// CapabilityMask.
    pub capability_mask: u16,
    /// CapabilityMask2 (27 bits).
    pub capability_mask2: u32,
    /// RespTimeValue (5 bits).
    pub resp_time_value: u8,
    /// RedirectGID.
    pub redirect_gid: Gid,
    /// RedirectTC.
    pub redirect_tc: u8,
    /// RedirectSL (4 bits).
    pub redirect_sl: u8,
    /// RedirectFL (20 bits).
    pub redirect_fl: u32,
    /// RedirectLID.
    pub redirect_lid: u16,
    /// RedirectP_Key.
    pub redirect_pkey: PKey,
    /// RedirectQP (24 bits).
    pub redirect_qp: u32,
    /// RedirectQ_Key.
    pub redirect_qkey: QKey,
    /// TrapGID.
    pub trap_gid: Gid,
    /// TrapTC.
    pub trap_tc: u8,
    /// TrapSL (4 bits).
    pub trap_sl: u8,
    /// TrapFL (20 bits).
    pub trap_fl: u32,
    /// TrapLID.
    pub trap_lid: u16,
    /// TrapP_Key.
    pub trap_pkey: PKey,
    /// TrapHL.
    pub trap_hl: u8,
    /// TrapQP (24 bits).
    pub trap_qp: u32,
    /// TrapQ_Key.
    pub trap_qkey: QKey,
}

impl ClassPortInfoRepr {
    /// Reads every field from the first 72 bytes of `data`.
    pub fn parse(data: &[u8]) -> Result<ClassPortInfoRepr> {
        let v = ClassPortInfo::new_checked(data)?;
        let (redirect_tc, redirect_sl, redirect_fl) = v.redirect_tc_sl_fl();
        let (trap_tc, trap_sl, trap_fl) = v.trap_tc_sl_fl();
        Ok(ClassPortInfoRepr {
            base_version: v.base_version(),
            class_version: v.class_version(),
            capability_mask: v.capability_mask(),
            capability_mask2: v.capability_mask2(),
            resp_time_value: v.resp_time_value(),
            redirect_gid: v.redirect_gid(),
            redirect_tc,
            redirect_sl,
            redirect_fl,
            redirect_lid: v.redirect_lid(),
            redirect_pkey: PKey(v.redirect_pkey()),
            redirect_qp: v.redirect_qp(),
            redirect_qkey: QKey(v.redirect_qkey()),
            trap_gid: v.trap_gid(),
            trap_tc,
            trap_sl,
            trap_fl,
            trap_lid: v.trap_lid(),
            trap_pkey: PKey(v.trap_pkey()),
            trap_hl: v.trap_hl(),
            trap_qp: v.trap_qp(),
            trap_qkey: QKey(v.trap_qkey()),
        })
    }

    /// 72 bytes.
    pub const fn buffer_len(&self) -> usize {
        field::LEN
    }

    /// Writes the 72 bytes (fields masked to their widths). Panics if `buf` is shorter.
    pub fn emit(&self, buf: &mut [u8]) {
        let mut v = ClassPortInfo::new_unchecked(&mut buf[..field::LEN]);
        v.set_base_version(self.base_version);
        v.set_class_version(self.class_version);
        v.set_capability_mask(self.capability_mask);
        v.set_capability_mask2_resp_time(self.capability_mask2, self.resp_time_value);
        v.set_redirect_gid(self.redirect_gid);
        v.set_redirect_tc_sl_fl(self.redirect_tc, self.redirect_sl, self.redirect_fl);
        v.set_redirect_lid(self.redirect_lid);
        v.set_redirect_pkey(self.redirect_pkey.0);
        v.set_redirect_qp(self.redirect_qp);
        v.set_redirect_qkey(self.redirect_qkey.0);
        v.set_trap_gid(self.trap_gid);
        v.set_trap_tc_sl_fl(self.trap_tc, self.trap_sl, self.trap_fl);
        v.set_trap_lid(self.trap_lid);
        v.set_trap_pkey(self.trap_pkey.0);
        v.set_trap_hl(self.trap_hl);
        v.set_trap_qp(self.trap_qp);
        v.set_trap_qkey(self.trap_qkey.0);
    }
}

impl Describe for ClassPortInfoRepr {
    fn describe(&self, d: &mut dyn Describer) {
        d.field("base_version", Value::Uint(self.base_version.into()));
        d.field("class_version", Value::Uint(self.class_version.into()));
        d.field(
            "capability_mask",
            Value::Hex(self.capability_mask.into(), 4),
        );
        d.field(
            "capability_mask2",
            Value::Hex(self.capability_mask2.into(), 7),
        );
        d.field("resp_time_value", Value::Uint(self.resp_time_value.into()));
        d.field("redirect_gid", Value::Gid(self.redirect_gid));
        d.field("redirect_tc", Value::Uint(self.redirect_tc.into()));
        d.field("redirect_sl", Value::Uint(self.redirect_sl.into()));
        d.field("redirect_fl", Value::Hex(self.redirect_fl.into(), 5));
        d.field("redirect_lid", Value::Hex(self.redirect_lid.into(), 4));
        d.field("redirect_p_key", self.redirect_pkey.into());
        d.field("redirect_qp", Value::Hex(self.redirect_qp.into(), 6));
        d.field("redirect_q_key", self.redirect_qkey.into());
        d.field("trap_gid", Value::Gid(self.trap_gid));
        d.field("trap_tc", Value::Uint(self.trap_tc.into()));
        d.field("trap_sl", Value::Uint(self.trap_sl.into()));
        d.field("trap_fl", Value::Hex(self.trap_fl.into(), 5));
        d.field("trap_lid", Value::Hex(self.trap_lid.into(), 4));
        d.field("trap_p_key", self.trap_pkey.into());
        d.field("trap_hl", Value::Uint(self.trap_hl.into()));
        d.field("trap_qp", Value::Hex(self.trap_qp.into(), 6));
        d.field("trap_q_key", self.trap_qkey.into());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::describe::Collect;
    use crate::mad::strategy::arb_gid;
    use crate::Error;
    use proptest::prelude::*;

    /// An SA ClassPortInfo as OpenSM answers it: base 1, class 2, capability mask 0x0602
    /// (IsTrapSupported|...), RespTimeValue 18, no redirection; trap to LID 1 QP 1 (IBA 1 §13.4.8.1).
    fn bytes() -> [u8; 72] {
        let mut b = [0u8; 72];
        b[0] = 1;
        b[1] = 2;
        b[2..4].copy_from_slice(&[0x06, 0x02]);
        b[4..8].copy_from_slice(&[0x00, 0x00, 0x00, 0x12]);
        // Redirect: TC 0, SL 3, FL 0x12345; LID 0x0004; P_Key 0xffff; QP 0x000001; Q_Key 0x80010000.
        b[24..28].copy_from_slice(&[0x00, 0x31, 0x23, 0x45]);
        b[28..30].copy_from_slice(&[0x00, 0x04]);
        b[30..32].copy_from_slice(&[0xff, 0xff]);
        b[32..36].copy_from_slice(&[0x00, 0x00, 0x00, 0x01]);
        b[36..40].copy_from_slice(&[0x80, 0x01, 0x00, 0x00]);
        b[40] = 0xfe;
        b[41] = 0x80;
        b[55] = 0x01;
        b[56..60].copy_from_slice(&[0x00, 0x00, 0x00, 0x00]);
        b[60..62].copy_from_slice(&[0x00, 0x01]);
        b[62..64].copy_from_slice(&[0xff, 0xff]);
        b[64..68].copy_from_slice(&[0x40, 0x00, 0x00, 0x01]);
        b[68..72].copy_from_slice(&[0x80, 0x01, 0x00, 0x00]);
        b
    }

    fn repr() -> ClassPortInfoRepr {
        ClassPortInfoRepr {
            base_version: 1,
            class_version: 2,
            capability_mask: 0x0602,
            capability_mask2: 0,
            resp_time_value: 18,
            redirect_gid: Gid::ZERO,
            redirect_tc: 0,
            redirect_sl: 3,
            redirect_fl: 0x12345,
            redirect_lid: 4,
            redirect_pkey: PKey::DEFAULT,
            redirect_qp: 1,
            redirect_qkey: QKey::GSI,
            trap_gid: Gid::new(0xfe80_0000_0000_0000, 1),
            trap_tc: 0,
            trap_sl: 0,
            trap_fl: 0,
            trap_lid: 1,
            trap_pkey: PKey::DEFAULT,
            trap_hl: 0x40,
            trap_qp: 1,
            trap_qkey: QKey::GSI,
        }
    }

    // IBA 1 §13.4.8.1
    #[test]
    fn deconstruct() {
        let b = bytes();
        let v = ClassPortInfo::new_checked(&b[..]).unwrap();
        assert_eq!(v.base_version(), 1);
        assert_eq!(v.class_version(), 2);
        assert_eq!(v.capability_mask(), 0x0602);
        assert_eq!(v.resp_time_value(), 18);
        assert_eq!(v.redirect_tc_sl_fl(), (0, 3, 0x12345));
        assert_eq!(v.redirect_lid(), 4);
        assert_eq!(v.redirect_qp(), 1);
        assert_eq!(v.trap_gid(), Gid::new(0xfe80_0000_0000_0000, 1));
        assert_eq!(v.trap_hl(), 0x40);
        assert_eq!(v.trap_qp(), 1);
        assert_eq!(v.trap_qkey(), 0x8001_0000);
    }

    // IBA 1 §13.4.8.1
    #[test]
    fn construct_parse_emit() {
        assert_eq!(ClassPortInfoRepr::parse(&bytes()).unwrap(), repr());
        let mut out = [0xeeu8; 72];
        repr().emit(&mut out);
        assert_eq!(out, bytes());
        assert_eq!(ClassPortInfoRepr::parse(&[0u8; 71]), Err(Error::Truncated));
    }

    #[test]
    fn describe_lists_fields() {
        let mut c = Collect::default();
        repr().describe(&mut c);
        assert_eq!(c.fields.len(), 22);
        assert_eq!(c.get("resp_time_value"), Some("18"));
    }

    fn arb() -> impl Strategy<Value = ClassPortInfoRepr> {
        (
            (any::<[u8; 4]>(), 0u32..1 << 27, 0u8..32, arb_gid()),
            (any::<u8>(), 0u8..16, 0u32..1 << 20, any::<[u16; 2]>()),
            (0u32..1 << 24, any::<u32>(), arb_gid()),
            (any::<u8>(), 0u8..16, 0u32..1 << 20, any::<[u16; 2]>()),
            (any::<u8>(), 0u32..1 << 24, any::<u32>()),
        )
            .prop_map(
                |(a, r, (rqp, rqk, tg), t, (hl, tqp, tqk))| ClassPortInfoRepr {
                    base_version: a.0[0],
                    class_version: a.0[1],
                    capability_mask: u16::from_be_bytes([a.0[2], a.0[3]]),
                    capability_mask2: a.1,
                    resp_time_value: a.2,
                    redirect_gid: a.3,
                    redirect_tc: r.0,
                    redirect_sl: r.1,
                    redirect_fl: r.2,
                    redirect_lid: r.3[0],
                    redirect_pkey: PKey(r.3[1]),
                    redirect_qp: rqp,
                    redirect_qkey: QKey(rqk),
                    trap_gid: tg,
                    trap_tc: t.0,
                    trap_sl: t.1,
                    trap_fl: t.2,
                    trap_lid: t.3[0],
                    trap_pkey: PKey(t.3[1]),
                    trap_hl: hl,
                    trap_qp: tqp,
                    trap_qkey: QKey(tqk),
                },
            )
    }

    proptest! {
        #[test]
        fn emit_parse_identity(r in arb()) {
            let mut b = [0u8; 72];
            r.emit(&mut b);
            prop_assert_eq!(ClassPortInfoRepr::parse(&b).unwrap(), r);
        }

        #[test]
        fn parse_never_panics(data in proptest::collection::vec(any::<u8>(), 0..300)) {
            let _ = ClassPortInfoRepr::parse(&data);
        }
    }
}

//! REP, ConnectReply (attribute 0x0013; IBA 1 §12.6, Table 110).

use crate::describe::{Describe, Describer, Value};
use crate::keys::QKey;
use crate::types::Guid;
use crate::Result;

/// Length of the REP private data (bytes 36..232 of the body).
pub const PRIVATE_DATA_LEN: usize = 196;

cm_view! {
    /// A view over a REP body (IBA 1 §12.6, Table 110).
    pub struct RepMsg;
    /// Local Communication ID (byte 0).
    local_comm_id, set_local_comm_id: u32[0];
    /// Remote Communication ID (byte 4).
    remote_comm_id, set_remote_comm_id: u32[4];
    /// Local Q_Key (byte 8).
    local_qkey, set_local_qkey: u32[8];
    /// Local QPN, 24 bits (byte 12).
    local_qpn, set_local_qpn: u24[12];
    /// Vendor ID bits 23..16 (byte 15; Linux `CM_REP_VENDOR_ID_H`).
    vendor_id_h, set_vendor_id_h: u8[15];
    /// Local EE Context Number, 24 bits (byte 16).
    local_ee_context_number, set_local_ee_context_number: u24[16];
    /// Vendor ID bits 15..8 (byte 19).
    vendor_id_m, set_vendor_id_m: u8[19];
    /// Starting PSN, 24 bits (byte 20).
    starting_psn, set_starting_psn: u24[20];
    /// Vendor ID bits 7..0 (byte 23).
    vendor_id_l, set_vendor_id_l: u8[23];
    /// Responder Resources (byte 24).
    responder_resources, set_responder_resources: u8[24];
    /// Initiator Depth (byte 25).
    initiator_depth, set_initiator_depth: u8[25];
    /// Target ACK Delay, 5 bits (byte 26, bits 0..5).
    target_ack_delay, set_target_ack_delay: bits[26, 0xf8];
    /// Failover Accepted, 2 bits (byte 26, bits 5..7).
    failover_accepted, set_failover_accepted: bits[26, 0x06];
    /// End-to-End Flow Control (byte 26, bit 7).
    end_to_end_flow_control, set_end_to_end_flow_control: flag[26, 0x01];
    /// RNR Retry Count, 3 bits (byte 27, bits 0..3).
    rnr_retry_count, set_rnr_retry_count: bits[27, 0xe0];
    /// SRQ (byte 27, bit 3).
    srq, set_srq: flag[27, 0x10];
    /// Local CA GUID (byte 28).
    local_ca_guid, set_local_ca_guid: guid[28];
    /// Private Data, 196 bytes (byte 36).
    private_data, set_private_data: bytes[36, PRIVATE_DATA_LEN];
}

impl<T: AsRef<[u8]>> RepMsg<T> {
    /// The 24-bit vendor ID spread over bytes 15, 19 and 23.
    pub fn vendor_id(&self) -> u32 {
        u32::from(self.vendor_id_h()) << 16
            | u32::from(self.vendor_id_m()) << 8
            | u32::from(self.vendor_id_l())
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> RepMsg<T> {
    /// Writes the 24-bit vendor ID into bytes 15, 19 and 23.
    pub fn set_vendor_id(&mut self, v: u32) {
        let [_, h, m, l] = v.to_be_bytes();
        self.set_vendor_id_h(h);
        self.set_vendor_id_m(m);
        self.set_vendor_id_l(l);
    }
}

/// A parsed REP (IBA 1 §12.6, Table 110).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RepRepr {
    /// Local Communication ID.
    pub local_comm_id: u32,
    /// Remote Communication ID (the REQ's local one).
    pub remote_comm_id: u32,
    /// Local Q_Key.
    pub local_qkey: QKey,
    /// Local QPN (24 bits).
    pub local_qpn: u32,
    /// Local EE Context Number (24 bits).
    pub local_ee_context_number: u32,
    /// Starting PSN (24 bits).
    pub starting_psn: u32,
    /// Responder Resources.
    pub responder_resources: u8,
    /// Initiator Depth.
    pub initiator_depth: u8,
    /// Target ACK Delay (5 bits).
    pub target_ack_delay: u8,
    /// Failover Accepted (2 bits: 0 accepted, 1 failover not supported, 2 alternate path rejected).
    pub failover_accepted: u8,
    /// End-to-End Flow Control.
    pub end_to_end_flow_control: bool,
    /// RNR Retry Count (3 bits).
    pub rnr_retry_count: u8,
    /// SRQ.
    pub srq: bool,
    /// Local CA GUID.
    pub local_ca_guid: Guid,
    /// Vendor ID (24 bits, bytes 15/19/23; zero unless enhanced connection establishment is used).
    pub vendor_id: u32,
    /// Private Data, whole.
    pub private_data: [u8; PRIVATE_DATA_LEN],
}

impl RepRepr {
    /// Reads every field of a REP.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(msg: &RepMsg<&T>) -> Result<RepRepr> {
        msg.check_len()?;
        let mut private_data = [0u8; PRIVATE_DATA_LEN];
        private_data.copy_from_slice(msg.private_data());
        Ok(RepRepr {
            local_comm_id: msg.local_comm_id(),
            remote_comm_id: msg.remote_comm_id(),
            local_qkey: QKey(msg.local_qkey()),
            local_qpn: msg.local_qpn(),
            local_ee_context_number: msg.local_ee_context_number(),
            starting_psn: msg.starting_psn(),
            responder_resources: msg.responder_resources(),
            initiator_depth: msg.initiator_depth(),
            target_ack_delay: msg.target_ack_delay(),
            failover_accepted: msg.failover_accepted(),
            end_to_end_flow_control: msg.end_to_end_flow_control(),
            rnr_retry_count: msg.rnr_retry_count(),
            srq: msg.srq(),
            local_ca_guid: msg.local_ca_guid(),
            vendor_id: msg.vendor_id(),
            private_data,
        })
    }

    /// The body length: always the whole MAD data area.
    pub const fn buffer_len(&self) -> usize {
        super::BODY_LEN
    }

    /// Writes all 232 bytes, reserved fields zero.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, msg: &mut RepMsg<T>) {
        msg.clear();
        msg.set_local_comm_id(self.local_comm_id);
        msg.set_remote_comm_id(self.remote_comm_id);
        msg.set_local_qkey(self.local_qkey.0);
        msg.set_local_qpn(self.local_qpn);
        msg.set_local_ee_context_number(self.local_ee_context_number);
        msg.set_starting_psn(self.starting_psn);
        msg.set_responder_resources(self.responder_resources);
        msg.set_initiator_depth(self.initiator_depth);
        msg.set_target_ack_delay(self.target_ack_delay);
        msg.set_failover_accepted(self.failover_accepted);
        msg.set_end_to_end_flow_control(self.end_to_end_flow_control);
        msg.set_rnr_retry_count(self.rnr_retry_count);
        msg.set_srq(self.srq);
        msg.set_local_ca_guid(self.local_ca_guid);
        msg.set_vendor_id(self.vendor_id);
        msg.set_private_data(&self.private_data);
    }
}

impl Describe for RepRepr {
    fn describe(&self, d: &mut dyn Describer) {
        d.field("local_comm_id", Value::Hex(self.local_comm_id.into(), 8));
        d.field("remote_comm_id", Value::Hex(self.remote_comm_id.into(), 8));
        d.field("local_q_key", self.local_qkey.into());
        d.field("local_qpn", Value::Hex(self.local_qpn.into(), 6));
        d.field(
            "local_ee_context_number",
            Value::Hex(self.local_ee_context_number.into(), 6),
        );
        d.field("starting_psn", Value::Hex(self.starting_psn.into(), 6));
        d.field(
            "responder_resources",
            Value::Uint(self.responder_resources.into()),
        );
        d.field("initiator_depth", Value::Uint(self.initiator_depth.into()));
        d.field(
            "target_ack_delay",
            Value::Uint(self.target_ack_delay.into()),
        );
        d.field(
            "failover_accepted",
            Value::Uint(self.failover_accepted.into()),
        );
        d.field(
            "end_to_end_flow_control",
            Value::Bool(self.end_to_end_flow_control),
        );
        d.field("rnr_retry_count", Value::Uint(self.rnr_retry_count.into()));
        d.field("srq", Value::Bool(self.srq));
        d.field("local_ca_guid", Value::Guid(self.local_ca_guid));
        d.field("vendor_id", Value::Hex(self.vendor_id.into(), 6));
        d.field("private_data", Value::Bytes(&self.private_data));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cm::testutil::{body, describe};
    use crate::cm::BODY_LEN;

    /// The REP answering the IPoIB-CM REQ of `req::tests` (RFC 4755 §3.2: private data carries the
    /// passive side's UD QPN 0x52 and receive MTU 65524), with every bit field non-zero.
    fn bytes() -> [u8; BODY_LEN] {
        body(&[
            (0, &[0x0a, 0x0b, 0x0c, 0x0d, 0x1a, 0x2b, 0x3c, 0x4d]), // local, remote comm ID
            (8, &[0x00, 0x00, 0x00, 0x00]),                         // Q_Key
            (12, &[0x00, 0x00, 0x53, 0x12]),                        // QPN | vendor ID high
            (16, &[0x00, 0x00, 0x00, 0x34]),                        // EECN | vendor ID mid
            (20, &[0x65, 0x43, 0x21, 0x56]),                        // PSN | vendor ID low
            (24, &[0x04, 0x00, 0x7b, 0xd0]), // RR 4, ID 0 | ACK delay 15, failover 1, E2E | RNR 6, SRQ
            (28, &[0x00, 0x02, 0xc9, 0x03, 0x00, 0x00, 0x56, 0x78]),
            (36, &[0x00, 0x00, 0x00, 0x52, 0x00, 0x00, 0xff, 0xf4]),
        ])
    }

    fn repr() -> RepRepr {
        let mut private_data = [0u8; PRIVATE_DATA_LEN];
        private_data[..8].copy_from_slice(&[0, 0, 0, 0x52, 0, 0, 0xff, 0xf4]);
        RepRepr {
            local_comm_id: 0x0a0b_0c0d,
            remote_comm_id: 0x1a2b_3c4d,
            local_qkey: QKey(0),
            local_qpn: 0x53,
            local_ee_context_number: 0,
            starting_psn: 0x65_4321,
            responder_resources: 4,
            initiator_depth: 0,
            target_ack_delay: 15,
            failover_accepted: 1,
            end_to_end_flow_control: true,
            rnr_retry_count: 6,
            srq: true,
            local_ca_guid: Guid(0x0002_c903_0000_5678),
            vendor_id: 0x12_3456,
            private_data,
        }
    }

    // IBA 1 §12.6 Table 110: byte 26 = Target ACK Delay(5) Failover Accepted(2) E2E(1),
    // byte 27 = RNR Retry Count(3) SRQ(1) reserved(4).
    #[test]
    fn deconstruct() {
        let b = bytes();
        let m = RepMsg::new_checked(&b[..]).unwrap();
        assert_eq!(m.local_comm_id(), 0x0a0b_0c0d);
        assert_eq!(m.remote_comm_id(), 0x1a2b_3c4d);
        assert_eq!(m.local_qpn(), 0x53);
        assert_eq!(m.vendor_id(), 0x12_3456);
        assert_eq!(m.starting_psn(), 0x65_4321);
        assert_eq!(m.responder_resources(), 4);
        assert_eq!(m.target_ack_delay(), 15);
        assert_eq!(m.failover_accepted(), 1);
        assert!(m.end_to_end_flow_control());
        assert_eq!(m.rnr_retry_count(), 6);
        assert!(m.srq());
        assert_eq!(m.local_ca_guid(), Guid(0x0002_c903_0000_5678));
        assert_eq!(m.private_data()[3], 0x52);
    }

    #[test]
    fn construct() {
        let mut b = [0u8; BODY_LEN];
        let mut m = RepMsg::new_unchecked(&mut b[..]);
        m.set_local_comm_id(0x0a0b_0c0d);
        m.set_remote_comm_id(0x1a2b_3c4d);
        m.set_local_qpn(0x53);
        m.set_vendor_id(0x12_3456);
        m.set_starting_psn(0x65_4321);
        m.set_responder_resources(4);
        m.set_target_ack_delay(15);
        m.set_failover_accepted(1);
        m.set_end_to_end_flow_control(true);
        m.set_rnr_retry_count(6);
        m.set_srq(true);
        m.set_local_ca_guid(Guid(0x0002_c903_0000_5678));
        m.set_private_data(&[0, 0, 0, 0x52, 0, 0, 0xff, 0xf4]);
        assert_eq!(b, bytes());
    }

    #[test]
    fn parse_and_emit() {
        let b = bytes();
        assert_eq!(RepRepr::parse(&RepMsg::new_unchecked(&b[..])), Ok(repr()));
        let mut out = [0xeeu8; BODY_LEN];
        repr().emit(&mut RepMsg::new_unchecked(&mut out[..]));
        assert_eq!(out, b);
        let c = describe(&repr());
        assert_eq!(c.get("local_qpn"), Some("0x000053"));
        assert_eq!(c.get("rnr_retry_count"), Some("6"));
        assert_eq!(c.fields.len(), 16);
    }

    cm_props!(RepRepr, RepMsg);
}

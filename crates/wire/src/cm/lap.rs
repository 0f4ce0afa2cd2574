//! LAP, LoadAlternatePath, and APR, AlternatePathResponse (attributes 0x0019 and 0x001A; IBA 1
//! §12.6, Tables 115 and 116).

use super::path::CmPath;
use crate::describe::{Describe, Describer, Value};
use crate::Result;

/// Length of the LAP private data (bytes 64..232 of the body).
pub const LAP_PRIVATE_DATA_LEN: usize = 168;
/// Length of the APR Additional Information field (bytes 12..84 of the body).
pub const APR_INFO_LEN: usize = 72;
/// Length of the APR private data (bytes 84..232 of the body).
pub const APR_PRIVATE_DATA_LEN: usize = 148;

const LAP_PATH: usize = 20;

cm_view! {
    /// A view over a LAP body (IBA 1 §12.6, Table 115).
    pub struct LapMsg;
    /// Local Communication ID (byte 0).
    local_comm_id, set_local_comm_id: u32[0];
    /// Remote Communication ID (byte 4).
    remote_comm_id, set_remote_comm_id: u32[4];
    /// Remote QPN/EECN, 24 bits (byte 12).
    remote_qpn_eecn, set_remote_qpn_eecn: u24[12];
    /// Remote CM Response Timeout, 5 bits (byte 15, bits 0..5).
    remote_cm_response_timeout, set_remote_cm_response_timeout: bits[15, 0xf8];
    /// Alternate Local Port LID (byte 20).
    alternate_local_port_lid, set_alternate_local_port_lid: u16[20];
    /// Alternate Remote Port LID (byte 22).
    alternate_remote_port_lid, set_alternate_remote_port_lid: u16[22];
    /// Alternate Local Port GID (byte 24).
    alternate_local_port_gid, set_alternate_local_port_gid: gid[24];
    /// Alternate Remote Port GID (byte 40).
    alternate_remote_port_gid, set_alternate_remote_port_gid: gid[40];
    /// Alternate Flow Label, 20 bits (byte 56).
    alternate_flow_label, set_alternate_flow_label: flow[56];
    /// Alternate Traffic Class (byte 59).
    alternate_traffic_class, set_alternate_traffic_class: u8[59];
    /// Alternate Hop Limit (byte 60).
    alternate_hop_limit, set_alternate_hop_limit: u8[60];
    /// Alternate Packet Rate, 6 bits (byte 61, bits 2..8).
    alternate_packet_rate, set_alternate_packet_rate: bits[61, 0x3f];
    /// Alternate SL, 4 bits (byte 62, bits 0..4).
    alternate_sl, set_alternate_sl: bits[62, 0xf0];
    /// Alternate Subnet Local (byte 62, bit 4).
    alternate_subnet_local, set_alternate_subnet_local: flag[62, 0x08];
    /// Alternate Local ACK Timeout, 5 bits (byte 63, bits 0..5).
    alternate_local_ack_timeout, set_alternate_local_ack_timeout: bits[63, 0xf8];
    /// Private Data, 168 bytes (byte 64).
    private_data, set_private_data: bytes[64, LAP_PRIVATE_DATA_LEN];
}

impl<T: AsRef<[u8]>> LapMsg<T> {
    /// The alternate path fields as one value.
    pub fn alternate_path(&self) -> CmPath {
        CmPath::read_lap(self.buffer.as_ref(), LAP_PATH)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> LapMsg<T> {
    /// Writes all alternate path fields.
    pub fn set_alternate_path(&mut self, p: &CmPath) {
        p.write_lap(self.buffer.as_mut(), LAP_PATH);
    }
}

/// A parsed LAP (IBA 1 §12.6, Table 115).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LapRepr {
    /// Local Communication ID.
    pub local_comm_id: u32,
    /// Remote Communication ID.
    pub remote_comm_id: u32,
    /// Remote QPN/EECN (24 bits).
    pub remote_qpn_eecn: u32,
    /// Remote CM Response Timeout (5 bits).
    pub remote_cm_response_timeout: u8,
    /// The alternate path to load.
    pub alternate_path: CmPath,
    /// Private Data, whole.
    pub private_data: [u8; LAP_PRIVATE_DATA_LEN],
}

impl LapRepr {
    /// Reads every field of a LAP.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(msg: &LapMsg<&T>) -> Result<LapRepr> {
        msg.check_len()?;
        let mut private_data = [0u8; LAP_PRIVATE_DATA_LEN];
        private_data.copy_from_slice(msg.private_data());
        Ok(LapRepr {
            local_comm_id: msg.local_comm_id(),
            remote_comm_id: msg.remote_comm_id(),
            remote_qpn_eecn: msg.remote_qpn_eecn(),
            remote_cm_response_timeout: msg.remote_cm_response_timeout(),
            alternate_path: msg.alternate_path(),
            private_data,
        })
    }

    /// The body length: always the whole MAD data area.
    pub const fn buffer_len(&self) -> usize {
        super::BODY_LEN
    }

    /// Writes all 232 bytes, reserved fields zero.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, msg: &mut LapMsg<T>) {
        msg.clear();
        msg.set_local_comm_id(self.local_comm_id);
        msg.set_remote_comm_id(self.remote_comm_id);
        msg.set_remote_qpn_eecn(self.remote_qpn_eecn);
        msg.set_remote_cm_response_timeout(self.remote_cm_response_timeout);
        msg.set_alternate_path(&self.alternate_path);
        msg.set_private_data(&self.private_data);
    }
}

impl Describe for LapRepr {
    fn describe(&self, d: &mut dyn Describer) {
        d.field("local_comm_id", Value::Hex(self.local_comm_id.into(), 8));
        d.field("remote_comm_id", Value::Hex(self.remote_comm_id.into(), 8));
        d.field(
            "remote_qpn_eecn",
            Value::Hex(self.remote_qpn_eecn.into(), 6),
        );
        d.field(
            "remote_cm_response_timeout",
            Value::Uint(self.remote_cm_response_timeout.into()),
        );
        d.enter("alternate_path");
        self.alternate_path.describe_lap(d);
        d.leave();
        d.field("private_data", Value::Bytes(&self.private_data));
    }
}

cm_view! {
    /// A view over an APR body (IBA 1 §12.6, Table 116).
    pub struct AprMsg;
    /// Local Communication ID (byte 0).
    local_comm_id, set_local_comm_id: u32[0];
    /// Remote Communication ID (byte 4).
    remote_comm_id, set_remote_comm_id: u32[4];
    /// Additional Information Length (byte 8).
    additional_information_length, set_additional_information_length: u8[8];
    /// AP Status (byte 9), see [`ApStatus`].
    ap_status, set_ap_status: u8[9];
    /// Additional Information, 72 bytes (byte 12).
    additional_information, set_additional_information: bytes[12, APR_INFO_LEN];
    /// Private Data, 148 bytes (byte 84).
    private_data, set_private_data: bytes[84, APR_PRIVATE_DATA_LEN];
}

code_enum! {
    /// The AP Status of an APR (IBA 1 §12.6, Table 116). Variant names follow Linux
    /// `enum ib_cm_apr_status` (`include/rdma/ib_cm.h`); unknown codes are kept.
    pub enum ApStatus(u8) {
        /// 0: the alternate path was loaded.
        Success = 0 => "success",
        /// 1
        InvalidCommId = 1 => "invalid comm ID",
        /// 2: LAP not supported.
        Unsupported = 2 => "unsupported",
        /// 3: rejected by the consumer.
        Reject = 3 => "reject",
        /// 4: redirect; Additional Information carries a ClassPortInfo.
        Redirect = 4 => "redirect",
        /// 5: the proposed path is the current path.
        IsCurrent = 5 => "is current",
        /// 6
        InvalidQpnEecn = 6 => "invalid QPN/EECN",
        /// 7
        InvalidLid = 7 => "invalid LID",
        /// 8
        InvalidGid = 8 => "invalid GID",
        /// 9
        InvalidFlowLabel = 9 => "invalid flow label",
        /// 10
        InvalidTclass = 10 => "invalid traffic class",
        /// 11
        InvalidHopLimit = 11 => "invalid hop limit",
        /// 12
        InvalidPacketRate = 12 => "invalid packet rate",
        /// 13
        InvalidSl = 13 => "invalid SL",
        /// Any other code, kept as is.
        Unknown(_) => "unknown",
    }
}

/// A parsed APR (IBA 1 §12.6, Table 116).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AprRepr {
    /// Local Communication ID.
    pub local_comm_id: u32,
    /// Remote Communication ID.
    pub remote_comm_id: u32,
    /// Additional Information Length, as received.
    pub additional_information_length: u8,
    /// AP Status.
    pub ap_status: ApStatus,
    /// Additional Information, all 72 bytes.
    pub additional_information: [u8; APR_INFO_LEN],
    /// Private Data, whole.
    pub private_data: [u8; APR_PRIVATE_DATA_LEN],
}

impl AprRepr {
    /// Reads every field of an APR.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(msg: &AprMsg<&T>) -> Result<AprRepr> {
        msg.check_len()?;
        let mut additional_information = [0u8; APR_INFO_LEN];
        additional_information.copy_from_slice(msg.additional_information());
        let mut private_data = [0u8; APR_PRIVATE_DATA_LEN];
        private_data.copy_from_slice(msg.private_data());
        Ok(AprRepr {
            local_comm_id: msg.local_comm_id(),
            remote_comm_id: msg.remote_comm_id(),
            additional_information_length: msg.additional_information_length(),
            ap_status: msg.ap_status().into(),
            additional_information,
            private_data,
        })
    }

    /// The meaningful Additional Information bytes (the first `additional_information_length`,
    /// at most 72).
    pub fn info(&self) -> &[u8] {
        &self.additional_information
            [..usize::from(self.additional_information_length).min(APR_INFO_LEN)]
    }

    /// The body length: always the whole MAD data area.
    pub const fn buffer_len(&self) -> usize {
        super::BODY_LEN
    }

    /// Writes all 232 bytes, reserved fields zero.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, msg: &mut AprMsg<T>) {
        msg.clear();
        msg.set_local_comm_id(self.local_comm_id);
        msg.set_remote_comm_id(self.remote_comm_id);
        msg.set_additional_information_length(self.additional_information_length);
        msg.set_ap_status(self.ap_status.into());
        msg.set_additional_information(&self.additional_information);
        msg.set_private_data(&self.private_data);
    }
}

impl Describe for AprRepr {
    fn describe(&self, d: &mut dyn Describer) {
        d.field("local_comm_id", Value::Hex(self.local_comm_id.into(), 8));
        d.field("remote_comm_id", Value::Hex(self.remote_comm_id.into(), 8));
        d.field(
            "additional_information_length",
            Value::Uint(self.additional_information_length.into()),
        );
        let s = self.ap_status;
        d.field("ap_status", Value::Named(u8::from(s).into(), s.name()));
        d.field(
            "additional_information",
            Value::Bytes(&self.additional_information),
        );
        d.field("private_data", Value::Bytes(&self.private_data));
    }
}

#[cfg(test)]
mod tests;

//! REQ, ConnectRequest (attribute 0x0010; IBA 1 §12.6, Table 106).

use super::common::TransportServiceType;
use super::path::CmPath;
use crate::describe::{Describe, Describer, Value};
use crate::keys::{PKey, QKey};
use crate::sa::Mtu;
use crate::types::Guid;
use crate::Result;

/// Length of the REQ private data (IBA 1 §12.6 Table 106: bytes 140..232 of the body).
pub const PRIVATE_DATA_LEN: usize = 92;

mod field {
    pub const PRIMARY_PATH: usize = 52;
    pub const ALTERNATE_PATH: usize = 96;
    pub const PRIVATE_DATA: usize = 140;
}

cm_view! {
    /// A view over a REQ body (IBA 1 §12.6, Table 106). Offsets are from the start of the MAD data
    /// area.
    pub struct ReqMsg;
    /// Local Communication ID (byte 0).
    local_comm_id, set_local_comm_id: u32[0];
    /// Vendor ID for enhanced connection establishment (bytes 5..8, reserved before IBA comment
    /// 9434; Linux `CM_REQ_VENDOR_ID`).
    vendor_id, set_vendor_id: u24[5];
    /// Service ID (byte 8).
    service_id, set_service_id: u64[8];
    /// Local CA GUID (byte 16).
    local_ca_guid, set_local_ca_guid: guid[16];
    /// Local Q_Key (byte 28).
    local_qkey, set_local_qkey: u32[28];
    /// Local QPN, 24 bits (byte 32).
    local_qpn, set_local_qpn: u24[32];
    /// Responder Resources (byte 35).
    responder_resources, set_responder_resources: u8[35];
    /// Local EECN, 24 bits (byte 36).
    local_eecn, set_local_eecn: u24[36];
    /// Initiator Depth (byte 39).
    initiator_depth, set_initiator_depth: u8[39];
    /// Remote EECN, 24 bits (byte 40).
    remote_eecn, set_remote_eecn: u24[40];
    /// Remote CM Response Timeout, 5 bits (byte 43, bits 0..5).
    remote_cm_response_timeout, set_remote_cm_response_timeout: bits[43, 0xf8];
    /// Transport Service Type, 2 bits (byte 43, bits 5..7).
    transport_service_type, set_transport_service_type: bits[43, 0x06];
    /// End-to-End Flow Control (byte 43, bit 7).
    end_to_end_flow_control, set_end_to_end_flow_control: flag[43, 0x01];
    /// Starting PSN, 24 bits (byte 44).
    starting_psn, set_starting_psn: u24[44];
    /// Local CM Response Timeout, 5 bits (byte 47, bits 0..5).
    local_cm_response_timeout, set_local_cm_response_timeout: bits[47, 0xf8];
    /// Retry Count, 3 bits (byte 47, bits 5..8).
    retry_count, set_retry_count: bits[47, 0x07];
    /// Partition Key (byte 48).
    partition_key, set_partition_key: u16[48];
    /// Path Packet Payload MTU, 4 bits (byte 50, bits 0..4).
    path_packet_payload_mtu, set_path_packet_payload_mtu: bits[50, 0xf0];
    /// RDC Exists (byte 50, bit 4).
    rdc_exists, set_rdc_exists: flag[50, 0x08];
    /// RNR Retry Count, 3 bits (byte 50, bits 5..8).
    rnr_retry_count, set_rnr_retry_count: bits[50, 0x07];
    /// Max CM Retries, 4 bits (byte 51, bits 0..4).
    max_cm_retries, set_max_cm_retries: bits[51, 0xf0];
    /// SRQ (byte 51, bit 4).
    srq, set_srq: flag[51, 0x08];
    /// Extended Transport Type, 3 bits (byte 51, bits 5..8).
    extended_transport_type, set_extended_transport_type: bits[51, 0x07];
    /// Primary Local Port LID (byte 52).
    primary_local_port_lid, set_primary_local_port_lid: u16[52];
    /// Primary Remote Port LID (byte 54).
    primary_remote_port_lid, set_primary_remote_port_lid: u16[54];
    /// Primary Local Port GID (byte 56).
    primary_local_port_gid, set_primary_local_port_gid: gid[56];
    /// Primary Remote Port GID (byte 72).
    primary_remote_port_gid, set_primary_remote_port_gid: gid[72];
    /// Primary Flow Label, 20 bits (byte 88).
    primary_flow_label, set_primary_flow_label: flow[88];
    /// Primary Packet Rate, 6 bits (byte 91, bits 2..8).
    primary_packet_rate, set_primary_packet_rate: bits[91, 0x3f];
    /// Primary Traffic Class (byte 92).
    primary_traffic_class, set_primary_traffic_class: u8[92];
    /// Primary Hop Limit (byte 93).
    primary_hop_limit, set_primary_hop_limit: u8[93];
    /// Primary SL, 4 bits (byte 94, bits 0..4).
    primary_sl, set_primary_sl: bits[94, 0xf0];
    /// Primary Subnet Local (byte 94, bit 4).
    primary_subnet_local, set_primary_subnet_local: flag[94, 0x08];
    /// Primary Local ACK Timeout, 5 bits (byte 95, bits 0..5).
    primary_local_ack_timeout, set_primary_local_ack_timeout: bits[95, 0xf8];
    /// Alternate Local Port LID (byte 96).
    alternate_local_port_lid, set_alternate_local_port_lid: u16[96];
    /// Alternate Remote Port LID (byte 98).
    alternate_remote_port_lid, set_alternate_remote_port_lid: u16[98];
    /// Alternate Local Port GID (byte 100).
    alternate_local_port_gid, set_alternate_local_port_gid: gid[100];
    /// Alternate Remote Port GID (byte 116).
    alternate_remote_port_gid, set_alternate_remote_port_gid: gid[116];
    /// Alternate Flow Label, 20 bits (byte 132).
    alternate_flow_label, set_alternate_flow_label: flow[132];
    /// Alternate Packet Rate, 6 bits (byte 135, bits 2..8).
    alternate_packet_rate, set_alternate_packet_rate: bits[135, 0x3f];
    /// Alternate Traffic Class (byte 136).
    alternate_traffic_class, set_alternate_traffic_class: u8[136];
    /// Alternate Hop Limit (byte 137).
    alternate_hop_limit, set_alternate_hop_limit: u8[137];
    /// Alternate SL, 4 bits (byte 138, bits 0..4).
    alternate_sl, set_alternate_sl: bits[138, 0xf0];
    /// Alternate Subnet Local (byte 138, bit 4).
    alternate_subnet_local, set_alternate_subnet_local: flag[138, 0x08];
    /// Alternate Local ACK Timeout, 5 bits (byte 139, bits 0..5).
    alternate_local_ack_timeout, set_alternate_local_ack_timeout: bits[139, 0xf8];
    /// SAP Supported (byte 139, bit 5; Linux `CM_REQ_SAP_SUPPORTED`).
    sap_supported, set_sap_supported: flag[139, 0x04];
    /// Private Data, 92 bytes (byte 140).
    private_data, set_private_data: bytes[field::PRIVATE_DATA, PRIVATE_DATA_LEN];
}

impl<T: AsRef<[u8]>> ReqMsg<T> {
    /// The primary path fields as one value.
    pub fn primary_path(&self) -> CmPath {
        CmPath::read_req(self.buffer.as_ref(), field::PRIMARY_PATH)
    }
    /// The alternate path fields as one value (all zero when the REQ offers no alternate path).
    pub fn alternate_path(&self) -> CmPath {
        CmPath::read_req(self.buffer.as_ref(), field::ALTERNATE_PATH)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> ReqMsg<T> {
    /// Writes all primary path fields.
    pub fn set_primary_path(&mut self, p: &CmPath) {
        p.write_req(self.buffer.as_mut(), field::PRIMARY_PATH);
    }
    /// Writes all alternate path fields (SAP Supported, which shares their last byte, is kept).
    pub fn set_alternate_path(&mut self, p: &CmPath) {
        p.write_req(self.buffer.as_mut(), field::ALTERNATE_PATH);
    }
}

/// A parsed REQ (IBA 1 §12.6, Table 106). Every field of the table; reserved bits are dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReqRepr {
    /// Local Communication ID.
    pub local_comm_id: u32,
    /// Vendor ID (24 bits; zero unless the sender uses enhanced connection establishment).
    pub vendor_id: u32,
    /// Service ID.
    pub service_id: u64,
    /// Local CA GUID.
    pub local_ca_guid: Guid,
    /// Local Q_Key.
    pub local_qkey: QKey,
    /// Local QPN (24 bits).
    pub local_qpn: u32,
    /// Responder Resources.
    pub responder_resources: u8,
    /// Local EECN (24 bits).
    pub local_eecn: u32,
    /// Initiator Depth.
    pub initiator_depth: u8,
    /// Remote EECN (24 bits).
    pub remote_eecn: u32,
    /// Remote CM Response Timeout (5 bits, 4.096 us x 2^n).
    pub remote_cm_response_timeout: u8,
    /// Transport Service Type.
    pub transport_service_type: TransportServiceType,
    /// End-to-End Flow Control.
    pub end_to_end_flow_control: bool,
    /// Starting PSN (24 bits).
    pub starting_psn: u32,
    /// Local CM Response Timeout (5 bits).
    pub local_cm_response_timeout: u8,
    /// Retry Count (3 bits).
    pub retry_count: u8,
    /// Partition Key.
    pub partition_key: PKey,
    /// Path Packet Payload MTU (4-bit code).
    pub path_packet_payload_mtu: Mtu,
    /// RDC Exists.
    pub rdc_exists: bool,
    /// RNR Retry Count (3 bits).
    pub rnr_retry_count: u8,
    /// Max CM Retries (4 bits).
    pub max_cm_retries: u8,
    /// SRQ.
    pub srq: bool,
    /// Extended Transport Type (3 bits).
    pub extended_transport_type: u8,
    /// Primary path.
    pub primary_path: CmPath,
    /// Alternate path (all zero when none is offered).
    pub alternate_path: CmPath,
    /// SAP Supported.
    pub sap_supported: bool,
    /// Private Data, whole (its meaning depends on the service ID).
    pub private_data: [u8; PRIVATE_DATA_LEN],
}

impl ReqRepr {
    /// Reads every field of a REQ.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(msg: &ReqMsg<&T>) -> Result<ReqRepr> {
        msg.check_len()?;
        let mut private_data = [0u8; PRIVATE_DATA_LEN];
        private_data.copy_from_slice(msg.private_data());
        Ok(ReqRepr {
            local_comm_id: msg.local_comm_id(),
            vendor_id: msg.vendor_id(),
            service_id: msg.service_id(),
            local_ca_guid: msg.local_ca_guid(),
            local_qkey: QKey(msg.local_qkey()),
            local_qpn: msg.local_qpn(),
            responder_resources: msg.responder_resources(),
            local_eecn: msg.local_eecn(),
            initiator_depth: msg.initiator_depth(),
            remote_eecn: msg.remote_eecn(),
            remote_cm_response_timeout: msg.remote_cm_response_timeout(),
            transport_service_type: msg.transport_service_type().into(),
            end_to_end_flow_control: msg.end_to_end_flow_control(),
            starting_psn: msg.starting_psn(),
            local_cm_response_timeout: msg.local_cm_response_timeout(),
            retry_count: msg.retry_count(),
            partition_key: PKey(msg.partition_key()),
            path_packet_payload_mtu: Mtu::from(msg.path_packet_payload_mtu()),
            rdc_exists: msg.rdc_exists(),
            rnr_retry_count: msg.rnr_retry_count(),
            max_cm_retries: msg.max_cm_retries(),
            srq: msg.srq(),
            extended_transport_type: msg.extended_transport_type(),
            primary_path: msg.primary_path(),
            alternate_path: msg.alternate_path(),
            sap_supported: msg.sap_supported(),
            private_data,
        })
    }

    /// The body length: always the whole MAD data area.
    pub const fn buffer_len(&self) -> usize {
        super::BODY_LEN
    }

    /// True when the alternate path is present: Linux tests the Alternate Local Port LID
    /// (`cm_req_has_alt_path`); a zero LID with a non-zero GID is also taken as present.
    pub fn has_alternate_path(&self) -> bool {
        self.alternate_path.local_port_lid != 0
            || self.alternate_path.local_port_gid != crate::Gid::ZERO
    }

    /// Writes all 232 bytes, reserved fields zero. Values wider than their field are truncated.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, msg: &mut ReqMsg<T>) {
        msg.clear();
        msg.set_local_comm_id(self.local_comm_id);
        msg.set_vendor_id(self.vendor_id);
        msg.set_service_id(self.service_id);
        msg.set_local_ca_guid(self.local_ca_guid);
        msg.set_local_qkey(self.local_qkey.0);
        msg.set_local_qpn(self.local_qpn);
        msg.set_responder_resources(self.responder_resources);
        msg.set_local_eecn(self.local_eecn);
        msg.set_initiator_depth(self.initiator_depth);
        msg.set_remote_eecn(self.remote_eecn);
        msg.set_remote_cm_response_timeout(self.remote_cm_response_timeout);
        msg.set_transport_service_type(self.transport_service_type.into());
        msg.set_end_to_end_flow_control(self.end_to_end_flow_control);
        msg.set_starting_psn(self.starting_psn);
        msg.set_local_cm_response_timeout(self.local_cm_response_timeout);
        msg.set_retry_count(self.retry_count);
        msg.set_partition_key(self.partition_key.0);
        msg.set_path_packet_payload_mtu(u8::from(self.path_packet_payload_mtu));
        msg.set_rdc_exists(self.rdc_exists);
        msg.set_rnr_retry_count(self.rnr_retry_count);
        msg.set_max_cm_retries(self.max_cm_retries);
        msg.set_srq(self.srq);
        msg.set_extended_transport_type(self.extended_transport_type);
        msg.set_primary_path(&self.primary_path);
        msg.set_alternate_path(&self.alternate_path);
        msg.set_sap_supported(self.sap_supported);
        msg.set_private_data(&self.private_data);
    }
}

impl Describe for ReqRepr {
    fn describe(&self, d: &mut dyn Describer) {
        d.field("local_comm_id", Value::Hex(self.local_comm_id.into(), 8));
        d.field("vendor_id", Value::Hex(self.vendor_id.into(), 6));
        d.field("service_id", Value::Hex(self.service_id, 16));
        d.field("local_ca_guid", Value::Guid(self.local_ca_guid));
        d.field("local_q_key", self.local_qkey.into());
        d.field("local_qpn", Value::Hex(self.local_qpn.into(), 6));
        d.field(
            "responder_resources",
            Value::Uint(self.responder_resources.into()),
        );
        d.field("local_eecn", Value::Hex(self.local_eecn.into(), 6));
        d.field("initiator_depth", Value::Uint(self.initiator_depth.into()));
        d.field("remote_eecn", Value::Hex(self.remote_eecn.into(), 6));
        d.field(
            "remote_cm_response_timeout",
            Value::Uint(self.remote_cm_response_timeout.into()),
        );
        let t = self.transport_service_type;
        d.field(
            "transport_service_type",
            Value::Named(u8::from(t).into(), t.name()),
        );
        d.field(
            "end_to_end_flow_control",
            Value::Bool(self.end_to_end_flow_control),
        );
        d.field("starting_psn", Value::Hex(self.starting_psn.into(), 6));
        d.field(
            "local_cm_response_timeout",
            Value::Uint(self.local_cm_response_timeout.into()),
        );
        d.field("retry_count", Value::Uint(self.retry_count.into()));
        d.field("partition_key", self.partition_key.into());
        let mtu = self.path_packet_payload_mtu;
        d.field(
            "path_packet_payload_mtu",
            Value::Named(u8::from(mtu).into(), mtu.name()),
        );
        d.field("rdc_exists", Value::Bool(self.rdc_exists));
        d.field("rnr_retry_count", Value::Uint(self.rnr_retry_count.into()));
        d.field("max_cm_retries", Value::Uint(self.max_cm_retries.into()));
        d.field("srq", Value::Bool(self.srq));
        d.field(
            "extended_transport_type",
            Value::Uint(self.extended_transport_type.into()),
        );
        self.primary_path.describe_as("primary_path", d);
        self.alternate_path.describe_as("alternate_path", d);
        d.field("sap_supported", Value::Bool(self.sap_supported));
        d.field("private_data", Value::Bytes(&self.private_data));
    }
}

#[cfg(test)]
mod tests;

//! CM MADs on QP1 (IBA 1 §12.6): an IPoIB-CM connection's whole life (REQ, MRA, REP, RTU, LAP,
//! APR, DREQ, DREP, and a REJ), SIDR, Annex A11 REQs for IPv4 and IPv6 and a REJ with the A11 ARI,
//! and an iWarp-emulation REQ/REP with Hello/HelloReply.

use super::{gsi, Node, Sample, A, B, P_KEY};
use crate::cm::{
    ApStatus, AprRepr, CmMessage, CmPath, DrepRepr, DreqRepr, LapRepr, MraRepr, RejReason, RejRepr,
    RepRepr, ReqRepr, RespondedTo, RtuRepr, SidrRepRepr, SidrReqRepr, SidrStatus,
    TransportServiceType,
};
use crate::keys::QKey;
use crate::mad::{
    MadHeaderRepr, MadStatus, Method, MgmtClass, BASE_VERSION, MAD_HEADER_LEN, MAD_LEN,
};
use crate::private_data::service_id::{ip_cm_service_id, ipoib_cm_service_id, iwarp_service_id};
use crate::private_data::IpPair;
use crate::private_data::{
    FlowControl, HelloReplyRepr, HelloRepr, IpCmAriCode, IpCmReject, IpCmReqRepr,
    IpoibCmPrivateDataRepr, SuggestedValue,
};
use crate::sa::{Mtu, Rate};
use crate::types::Guid;
use std::net::Ipv6Addr;

/// The CM class version Linux sends (IBA 1 §12.11: ClassVersion 2).
const CM_CLASS_VERSION: u8 = 2;
/// Service ID of the iSER sample: Annex A11 TCP port 3260.
pub const ISER_SERVICE_ID: u64 = 0x0000_0000_0106_0cbc;
/// Local communication IDs of the Annex A11 (IPv4, IPv6), iWarp and SIDR exchanges.
const A11_V4_COMM_ID: u32 = 0x0a11_0004;
const A11_V6_COMM_ID: u32 = 0x0a11_0006;
const IWARP_COMM_ID: u32 = 0x1a4a_0001;
const SIDR_REQUEST_ID: u32 = 0x51d0_0001;
/// RC QPs of the Annex A11 and iWarp connections on A (requester) and B (responder).
pub const A11_QPN_A: u32 = 0x60;
/// B's end of the Annex A11 (iSER) connection.
pub const A11_QPN_B: u32 = 0x61;
/// Starting PSNs of the IPoIB-CM connection, A to B and B to A.
pub const PSN_A: u32 = 0x0a_0b0c;
/// B's starting PSN.
pub const PSN_B: u32 = 0x0d_0e0f;
/// The iWarp-emulation TCP port and the SIDR UDP port.
const IWARP_PORT: u16 = 3260;
const SIDR_UDP_PORT: u16 = 5000;
/// Linux rdma_cm's Q_Key of UDP port-space QPs (`RDMA_UDP_QKEY`).
const RDMA_UDP_QKEY: QKey = QKey(0x0123_4567);

pub(super) fn samples() -> Vec<Sample> {
    use CmMessage as M;
    let ipoib_req = ipoib_cm_req();
    let a11_v6 = a11_req_v6();
    vec![
        cm("cm_req_ipoib_cm", &A, &B, 0, M::Req(ipoib_req)),
        cm("cm_mra", &B, &A, 0, M::Mra(mra())),
        cm("cm_rep_ipoib_cm", &B, &A, 1, M::Rep(ipoib_cm_rep())),
        cm("cm_rtu", &A, &B, 1, M::Rtu(rtu())),
        cm("cm_lap", &A, &B, 2, M::Lap(lap())),
        cm("cm_apr", &B, &A, 2, M::Apr(apr())),
        cm("cm_dreq", &A, &B, 3, M::Dreq(dreq())),
        cm("cm_drep", &B, &A, 3, M::Drep(drep())),
        cm(
            "cm_rej_invalid_service_id",
            &B,
            &A,
            4,
            M::Rej(rej_invalid_sid()),
        ),
        cm("cm_sidr_req", &A, &B, 4, M::SidrReq(sidr_req())),
        cm("cm_sidr_rep", &B, &A, 5, M::SidrRep(sidr_rep())),
        cm("cm_req_a11_iser_ipv4", &A, &B, 5, M::Req(a11_req_v4())),
        cm("cm_req_a11_ipv6", &A, &B, 6, M::Req(a11_v6)),
        cm("cm_rej_a11_ari", &B, &A, 6, M::Rej(rej_a11())),
        cm("cm_req_iwarp_hello", &A, &B, 7, M::Req(iwarp_req())),
        cm("cm_rep_iwarp_hello_reply", &B, &A, 7, M::Rep(iwarp_rep())),
    ]
}

/// A CM MAD (class 0x07, method Send, as Linux's CM sends every message) from `src` to `dst`.
pub(super) fn cm(name: &'static str, src: &Node, dst: &Node, seq: u32, msg: CmMessage) -> Sample {
    let header = MadHeaderRepr {
        base_version: BASE_VERSION,
        mgmt_class: MgmtClass::ComMgt,
        class_version: CM_CLASS_VERSION,
        method: Method::Send,
        status: MadStatus::SUCCESS,
        class_specific: 0,
        transaction_id: 0x0000_0003_0000_0000 | u64::from(msg.local_comm_id()),
        attribute_id: msg.attribute_id(),
        attribute_modifier: 0,
    };
    let mut mad = [0u8; MAD_LEN];
    header.emit(&mut mad);
    msg.emit(&mut mad[MAD_HEADER_LEN..])
        .expect("a CM body fills the MAD data area");
    Sample::new(name, gsi(src, dst, 0x200 + seq, &mad))
}

/// A private-data array of whatever length the field has, starting with `head`.
fn pd<const N: usize>(head: &[u8]) -> [u8; N] {
    let mut b = [0u8; N];
    b[..head.len()].copy_from_slice(head);
    b
}

/// The primary path from A to B: 2048-byte MTU path, 10 Gb/s, subnet local, ACK timeout 18.
fn path() -> CmPath {
    CmPath {
        local_port_lid: A.lid,
        remote_port_lid: B.lid,
        local_port_gid: A.gid(),
        remote_port_gid: B.gid(),
        flow_label: 0,
        packet_rate: Rate::Gbps10,
        traffic_class: 0,
        hop_limit: 0,
        sl: 0,
        subnet_local: true,
        local_ack_timeout: 18,
    }
}

/// A REQ from A for `service_id` over RC QP `qpn`, with the connection parameters Linux rdma_cm
/// uses (CM response timeouts 20, 15 CM retries, retry counts 7).
fn req(local_comm_id: u32, service_id: u64, qpn: u32, psn: u32, private_data: [u8; 92]) -> ReqRepr {
    ReqRepr {
        local_comm_id,
        vendor_id: 0,
        service_id,
        local_ca_guid: Guid(A.guid),
        local_qkey: QKey(0),
        local_qpn: qpn,
        responder_resources: 4,
        local_eecn: 0,
        initiator_depth: 4,
        remote_eecn: 0,
        remote_cm_response_timeout: 20,
        transport_service_type: TransportServiceType::Rc,
        end_to_end_flow_control: false,
        starting_psn: psn,
        local_cm_response_timeout: 20,
        retry_count: 7,
        partition_key: P_KEY,
        path_packet_payload_mtu: Mtu::Mtu2048,
        rdc_exists: false,
        rnr_retry_count: 7,
        max_cm_retries: 15,
        srq: false,
        extended_transport_type: 0,
        primary_path: path(),
        alternate_path: CmPath::default(),
        sap_supported: false,
        private_data,
    }
}

/// The IPoIB-CM REQ as Linux sends it (docs/DEPLOYED.md "Linux IPoIB"; RFC 4755 §3.3, §6): service
/// ID
/// 0x1000000000000000 | B's UD QPN, private data {A's UD QPN, 65524}, responder resources 4, CM
/// response timeouts 20, retry count 0, RNR retry 0, max CM retries 15, SRQ.
fn ipoib_cm_req() -> ReqRepr {
    let mut p = [0u8; 92];
    IpoibCmPrivateDataRepr::linux(A.ud_qpn)
        .emit(&mut p)
        .expect("8 bytes fit");
    ReqRepr {
        initiator_depth: 0,
        retry_count: 0,
        rnr_retry_count: 0,
        srq: true,
        ..req(A.comm_id, ipoib_cm_service_id(B.ud_qpn), A.cm_qpn, PSN_A, p)
    }
}

/// B accepts with its own UD QPN and receive MTU (RFC 4755 §3.3).
fn ipoib_cm_rep() -> RepRepr {
    let mut p = [0u8; 196];
    IpoibCmPrivateDataRepr::linux(B.ud_qpn)
        .emit(&mut p)
        .expect("8 bytes fit");
    rep(B.comm_id, A.comm_id, B.cm_qpn, PSN_B, true, p)
}

fn rep(local: u32, remote: u32, qpn: u32, psn: u32, srq: bool, private_data: [u8; 196]) -> RepRepr {
    RepRepr {
        local_comm_id: local,
        remote_comm_id: remote,
        local_qkey: QKey(0),
        local_qpn: qpn,
        local_ee_context_number: 0,
        starting_psn: psn,
        responder_resources: 0,
        initiator_depth: 0,
        target_ack_delay: 15,
        failover_accepted: 0,
        end_to_end_flow_control: false,
        rnr_retry_count: 0,
        srq,
        local_ca_guid: Guid(B.guid),
        vendor_id: 0,
        private_data,
    }
}

/// B needs more time for A's REQ (service timeout 4.096 us x 2^23, about 34 s).
fn mra() -> MraRepr {
    MraRepr {
        local_comm_id: B.comm_id,
        remote_comm_id: A.comm_id,
        message_mraed: RespondedTo::Req,
        service_timeout: 23,
        private_data: pd(&[]),
    }
}

fn rtu() -> RtuRepr {
    RtuRepr {
        local_comm_id: A.comm_id,
        remote_comm_id: B.comm_id,
        private_data: pd(&[]),
    }
}

/// A loads an alternate path through other LIDs (4 and 5).
fn lap() -> LapRepr {
    LapRepr {
        local_comm_id: A.comm_id,
        remote_comm_id: B.comm_id,
        remote_qpn_eecn: B.cm_qpn,
        remote_cm_response_timeout: 20,
        alternate_path: CmPath {
            local_port_lid: 4,
            remote_port_lid: 5,
            sl: 1,
            ..path()
        },
        private_data: pd(&[]),
    }
}

fn apr() -> AprRepr {
    AprRepr {
        local_comm_id: B.comm_id,
        remote_comm_id: A.comm_id,
        additional_information_length: 0,
        ap_status: ApStatus::Success,
        additional_information: pd(&[]),
        private_data: pd(&[]),
    }
}

fn dreq() -> DreqRepr {
    DreqRepr {
        local_comm_id: A.comm_id,
        remote_comm_id: B.comm_id,
        remote_qpn_eecn: B.cm_qpn,
        private_data: pd(&[]),
    }
}

fn drep() -> DrepRepr {
    DrepRepr {
        local_comm_id: B.comm_id,
        remote_comm_id: A.comm_id,
        private_data: pd(&[]),
    }
}

/// Nobody listens on the service A asked for (reason 8; a REJ to a REQ has local comm ID 0 in
/// Linux's `cm_issue_rej`).
fn rej_invalid_sid() -> RejRepr {
    RejRepr {
        local_comm_id: 0,
        remote_comm_id: A.comm_id,
        message_rejected: RespondedTo::Req,
        reject_info_length: 0,
        reason: RejReason::InvalidServiceId,
        ari: pd(&[]),
        private_data: pd(&[]),
    }
}

/// Annex A11 private data (CA11-1): version 0.0, `sport`, the addresses, no consumer data.
fn a11_private_data<const N: usize>(sport: u16, addrs: IpPair) -> [u8; N] {
    let mut p = [0u8; N];
    IpCmReqRepr {
        major_version: 0,
        minor_version: 0,
        source_port: sport,
        addrs,
        consumer_private_data: &[],
    }
    .emit(&mut p)
    .expect("the A11 header fits");
    p
}

/// SIDR to an rdma_cm UDP service (Annex A11 service ID for UDP port 5000).
fn sidr_req() -> SidrReqRepr {
    let addrs = IpPair::V4 {
        src: A.ipv4,
        dst: B.ipv4,
    };
    SidrReqRepr {
        request_id: SIDR_REQUEST_ID,
        partition_key: P_KEY,
        service_id: ip_cm_service_id(17, SIDR_UDP_PORT),
        private_data: a11_private_data(40002, addrs),
    }
}

fn sidr_rep() -> SidrRepRepr {
    SidrRepRepr {
        request_id: SIDR_REQUEST_ID,
        status: SidrStatus::Success,
        additional_information_length: 0,
        vendor_id: 0,
        qpn: 0x52,
        service_id: ip_cm_service_id(17, SIDR_UDP_PORT),
        qkey: RDMA_UDP_QKEY,
        class_port_info: pd(&[]),
        private_data: pd(&[]),
    }
}

/// iSER: TCP port 3260 over the Annex A11 service, 10.0.0.1:40000 -> 10.0.0.2.
pub(super) fn a11_req_v4() -> ReqRepr {
    let addrs = IpPair::V4 {
        src: A.ipv4,
        dst: B.ipv4,
    };
    req(
        A11_V4_COMM_ID,
        ISER_SERVICE_ID,
        A11_QPN_A,
        0x11_1111,
        a11_private_data(40000, addrs),
    )
}

/// NVMe over fabrics (TCP port 4420) between IPv6 addresses 2001:db8::1 and 2001:db8::2.
fn a11_req_v6() -> ReqRepr {
    let addrs = IpPair::V6 {
        src: Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1),
        dst: Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 2),
    };
    req(
        A11_V6_COMM_ID,
        ip_cm_service_id(6, 4420),
        0x62,
        0x22_2222,
        a11_private_data(40001, addrs),
    )
}

/// B does not serve IPv6 and suggests IPv4: reason 28 with the IP CM ARI (Annex A11 CA11-9,
/// CA11-10, oA11-2).
fn rej_a11() -> RejRepr {
    let ari = IpCmReject {
        code: IpCmAriCode::Ipv,
        suggested: SuggestedValue::byte(4),
    };
    let mut a = [0u8; 72];
    ari.emit(&mut a).expect("the ARI fits");
    RejRepr {
        local_comm_id: 0x0b11_0006,
        remote_comm_id: A11_V6_COMM_ID,
        message_rejected: RespondedTo::Req,
        reject_info_length: ari.buffer_len() as u8,
        reason: RejReason::ConsumerDefined,
        ari: a,
        private_data: pd(&[]),
    }
}

/// iWarp emulation to TCP port 3260: a Hello with ULP flow control (iWarp mapping Figure 1).
fn iwarp_req() -> ReqRepr {
    let hello = HelloRepr {
        bufs: 8,
        len: 64,
        major_version: 1,
        minor_version: 0,
        flow_control: FlowControl::Ulp,
        des_rem_rcv_sz: 8192,
        local_rcv_sz: 8192,
        local_port: 40003,
        addrs: IpPair::V4 {
            src: A.ipv4,
            dst: B.ipv4,
        },
    };
    let mut p = [0u8; 92];
    hello.emit(&mut p).expect("a Hello fits");
    req(
        IWARP_COMM_ID,
        iwarp_service_id(IWARP_PORT),
        0x64,
        0x33_3333,
        p,
    )
}

fn iwarp_rep() -> RepRepr {
    let reply = HelloReplyRepr {
        bufs: 8,
        len: 24,
        major_version: 1,
        minor_version: 0,
        act_rcv_sz: 8192,
    };
    let mut p = [0u8; 196];
    reply.emit(&mut p).expect("a HelloReply fits");
    RepRepr {
        responder_resources: 4,
        initiator_depth: 4,
        rnr_retry_count: 7,
        ..rep(0x5e6f_7082, IWARP_COMM_ID, 0x65, 0x44_4444, false, p)
    }
}

//! Layer-by-layer decoding of whole packets, for `ipoib decode`: the packet's headers, its CRC
//! verdicts, and its payload interpreted as far as this crate knows how: IPoIB frames (UD, and the
//! first packet of an RC/UC message in connected mode), SMPs with their attributes (NodeInfo,
//! SwitchInfo, PortInfo, forwarding tables), SA MADs with their records, CM messages with their
//! private data read by service ID (IPoIB-CM, Annex A11 IP CM, iWarp emulation, Linux rdma_cm).
//!
//! A [`Decoder`] is stateful across a capture only for CM: a REP or REJ does not carry the service
//! ID, so the decoder remembers the kind of service each REQ asked for, by communication ID (a
//! bounded table), to read the answer's private data and a REJ's Annex A11 ARI.
//!
//! Every packet, good or bad, produces the top-level fields `summary`, `icrc_ok` and `vcrc_ok` (the
//! last two only once the LRH and lengths could be read), and a malformed one an `error` field.

use crate::cm::{CmMessage, RejReason};
use crate::describe::{push_hex, push_uint, Describe, Describer, Value};
use crate::ib::{BthRepr, GrhRepr, Lnh, LrhRepr, Opcode, Operation, Position};
use crate::ipoib::legacy::bare_ipv6;
use crate::ipoib::nd::NdProfile;
use crate::ipoib::{EtherType, IpoibFrame, IpoibPayload};
use crate::mad::attr::perf as perf_attr;
use crate::mad::{MadHeaderRepr, MgmtClass, MAD_HEADER_LEN, MAD_LEN};
use crate::packet::Packet;
use crate::perf::{PortCountersExtRepr, PortCountersRepr, PERF_DATA_OFFSET};
use crate::private_data::{
    classify_with_data, ip_cm, HelloReplyRepr, HelloRepr, IpCmReject, IpCmReqRepr,
    IpoibCmPrivateDataRepr, ServiceKind,
};
use crate::sa::SaMadRepr;
use crate::smp::{SmpAttribute, SmpMadRepr};
use crate::Error;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// How many REQs the decoder remembers to interpret later REP/REJ private data.
const MAX_TRACKED_REQS: usize = 4096;

/// Decodes packets one after the other; see the module docs.
#[derive(Debug, Default)]
pub struct Decoder {
    /// Service kind of each REQ seen, by the REQ's local communication ID.
    services: BTreeMap<u32, ServiceKind>,
    /// The summary line being built, kept to reuse its allocation from packet to packet.
    summary: String,
}

impl Decoder {
    /// A decoder that has seen nothing yet.
    pub fn new() -> Decoder {
        Decoder::default()
    }

    /// Describes one packet (LRH first byte through VCRC) into `d`. Returns an error when the packet
    /// is malformed; its fields up to the point of failure, a `summary` and an `error` field have
    /// then been described. A CRC mismatch is not an error: it is a verdict (`icrc_ok`, `vcrc_ok`).
    pub fn packet(&mut self, data: &[u8], d: &mut dyn Describer) -> Result<(), Error> {
        let p = match Packet::parse(data) {
            Ok(p) => p,
            Err(e) => {
                if let Ok(lrh) = LrhRepr::parse_bytes(data) {
                    lrh.describe_as("lrh", d);
                }
                let why = packet_error(e, data);
                d.field("summary", Value::Str(&format!("malformed: {why}")));
                d.field("error", Value::Str(&why));
                return Err(e);
            }
        };
        // Headers first, then the interpreted payload, then the CRCs (wire order).
        p.lrh.describe_as("lrh", d);
        if let Some(g) = &p.grh {
            g.describe_as("grh", d);
        }
        if let Some(b) = &p.bth {
            b.describe_as("bth", d);
        }
        p.ext.describe(d);

        // The summary is built with the `describe` helpers rather than `write!`: same text
        // (`{:#06x}` is `push_hex(.., 4)` for a u16), a fraction of the cost.
        let mut summary = std::mem::take(&mut self.summary);
        summary.clear();
        push_hex(&mut summary, p.lrh.slid.into(), 4);
        summary.push_str(" > ");
        push_hex(&mut summary, p.lrh.dlid.into(), 4);
        let result = match p.bth {
            None => {
                summary.push_str(" raw packet");
                d.field("raw_data", Value::Bytes(p.payload));
                Ok(())
            }
            Some(bth) => {
                summary.push(' ');
                summary.push_str(bth.opcode.name());
                summary.push_str(" qp ");
                push_hex(&mut summary, bth.dest_qp.into(), 1);
                self.payload(&p, bth.opcode, bth.dest_qp, &mut summary, d)
            }
        };
        if p.pad_count > 0 {
            d.field("pad_count", Value::Uint(p.pad_count.into()));
        }
        if let Some(icrc) = p.icrc {
            d.field("icrc", Value::Hex(icrc.into(), 8));
        }
        d.field("icrc_ok", Value::Bool(p.icrc_ok));
        d.field("vcrc", Value::Hex(p.vcrc.into(), 4));
        d.field("vcrc_ok", Value::Bool(p.vcrc_ok));
        if !p.icrc_ok || !p.vcrc_ok {
            summary.push_str(" [bad CRC]");
        }
        d.field("summary", Value::Str(&summary));
        self.summary = summary;
        if let Err((e, what)) = result {
            d.field("error", Value::Str(&format!("{what}: {e}")));
            return Err(e);
        }
        Ok(())
    }

    /// Interprets the payload of a transport packet.
    fn payload(
        &mut self,
        p: &Packet<'_>,
        opcode: Opcode,
        dest_qp: u32,
        summary: &mut String,
        d: &mut dyn Describer,
    ) -> Result<(), (Error, &'static str)> {
        if p.ext.deth.is_some() && (dest_qp == 0 || dest_qp == 1) {
            return self.mad(p.payload, summary, d);
        }
        let starts_send = matches!(
            opcode.operation(),
            Operation::SendFirst
                | Operation::SendOnly
                | Operation::SendOnlyWithImmediate
                | Operation::SendOnlyWithInvalidate
        ) && matches!(opcode.position(), Some(Position::First | Position::Only));
        if let Some(dg) = p.ext.deth.and_then(|_| bare_ipv6(p.payload)) {
            // The legacy profile (draft-kashyap-ipoib-ipv6-01 §7): IPv6 over UD with no 4-byte
            // header; `bare_ipv6` says why an RFC 4391 frame is never taken for one.
            // Its ND link-layer address options are the profile's (§5.1), which their bytes alone
            // would not tell from draft-ietf-ipoib-ip-over-infiniband-06 §9.3's.
            d.field("ipoib_legacy_ipv6", Value::Bool(true));
            dg.describe_with(NdProfile::Legacy, d);
            // Shown as the same datagram behind a header would be, after the profile's name.
            let _ = write!(
                summary,
                " IPoIB (draft-kashyap-ipoib-ipv6-01, no IPoIB header) {}",
                dg.summary_with(NdProfile::Legacy)
            );
            return Ok(());
        }
        if p.ext.deth.is_some() || (starts_send && looks_like_ipoib(p.payload)) {
            // UD datagrams to other QPs carry IPoIB (draft-ietf-ipoib-ip-over-infiniband-06 §6); so does
            // the first packet of each RC/UC send in connected mode (RFC 4755 §4). RC/UC also carry
            // other consumers' messages (an Annex A11 connection's, rping's), so there the header must
            // look like IPoIB's: see `looks_like_ipoib`.
            return match IpoibFrame::parse(p.payload) {
                Ok(IpoibFrame {
                    header,
                    payload:
                        IpoibPayload::Invalid {
                            error: Error::Truncated,
                            data,
                        },
                }) if opcode.position() == Some(Position::First) => {
                    // RFC 4755 §4: a connected-mode frame may span several packets; the first
                    // carries the encapsulation header and only the start of the datagram.
                    header.describe_as("ipoib", d);
                    d.field("message_start", Value::Bytes(data));
                    summary.push_str(" IPoIB ");
                    summary.push_str(header.ethertype.name());
                    summary.push_str(" (first packet of a message)");
                    Ok(())
                }
                Ok(f) => {
                    f.describe(d);
                    // `f.summary()` is this `Display`, written in place.
                    let _ = write!(summary, " IPoIB {f}");
                    Ok(())
                }
                Err(e) => {
                    d.field("payload", Value::Bytes(p.payload));
                    Err((e, "IPoIB frame"))
                }
            };
        }
        if !p.payload.is_empty() {
            d.field("payload", Value::Bytes(p.payload));
            summary.push(' ');
            push_uint(summary, p.payload.len() as u64);
            summary.push_str(" bytes");
        }
        Ok(())
    }

    /// Interprets a MAD on QP0 or QP1.
    fn mad(
        &mut self,
        data: &[u8],
        summary: &mut String,
        d: &mut dyn Describer,
    ) -> Result<(), (Error, &'static str)> {
        let header = MadHeaderRepr::parse_bytes(data).map_err(|e| (e, "MAD header"))?;
        if data.len() != MAD_LEN {
            // QP0/QP1 carry exactly one 256-byte MAD (IBA 1 §13.4.1); show what there is anyway.
            header.describe_as("mad", d);
            return Err((Error::Malformed, "MAD length is not 256 bytes"));
        }
        for part in [
            " MAD ",
            header.mgmt_class.name(),
            " ",
            header.method.name(),
            " ",
            crate::mad::attr::name(header.mgmt_class, header.attribute_id),
        ] {
            summary.push_str(part);
        }
        let status = header.status.without_direction(header.mgmt_class);
        if status.0 != 0 {
            summary.push_str(" status ");
            push_hex(summary, status.0.into(), 4);
        }
        match header.mgmt_class {
            MgmtClass::SubnLid | MgmtClass::SubnDirectedRoute => {
                let smp = SmpMadRepr::parse(data).map_err(|e| (e, "SMP"))?;
                smp.describe(d);
                match &smp.attribute {
                    SmpAttribute::NodeInfo(n) => {
                        summary.push(' ');
                        summary.push_str(n.node_type.name());
                        summary.push_str(" guid ");
                        push_hex(summary, n.node_guid.0, 16);
                    }
                    SmpAttribute::PortInfo(p) => {
                        summary.push_str(" lid ");
                        push_hex(summary, p.lid.into(), 4);
                        summary.push(' ');
                        summary.push_str(p.port_state.name());
                    }
                    SmpAttribute::SmInfo(i) => {
                        summary.push_str(" guid ");
                        push_hex(summary, i.guid.0, 16);
                        summary.push(' ');
                        summary.push_str(i.sm_state.name());
                    }
                    SmpAttribute::Notice(n) => {
                        if let Some(t) = n.trap_number() {
                            summary.push_str(" trap ");
                            push_uint(summary, t.into());
                        }
                        if let Some(l) = n.trap_lid_addr() {
                            summary.push_str(" lid ");
                            push_hex(summary, l.into(), 4);
                        }
                    }
                    SmpAttribute::NodeDescription(n) => {
                        summary.push_str(" \"");
                        summary.push_str(n.text());
                        summary.push('"');
                    }
                    _ => {}
                }
                Ok(())
            }
            MgmtClass::SubnAdm => {
                let sa = SaMadRepr::parse(data).map_err(|e| (e, "SA MAD"))?;
                sa.describe(d);
                if sa.is_table() {
                    summary.push_str(" (");
                    push_uint(summary, sa.records().record_count() as u64);
                    summary.push_str(" records)");
                }
                Ok(())
            }
            MgmtClass::ComMgt => {
                header.describe_as("mad", d);
                let body = &data[MAD_HEADER_LEN..];
                match CmMessage::parse(header.attribute_id, body) {
                    Ok(m) => {
                        m.describe_as("cm", d);
                        self.cm_private_data(&m, summary, d);
                        Ok(())
                    }
                    Err(Error::Unsupported) => {
                        d.field("data", Value::Bytes(body));
                        Ok(())
                    }
                    Err(e) => Err((e, "CM message")),
                }
            }
            MgmtClass::Perf => {
                // IBA 1 §16.1.1: 40 reserved bytes, then the attribute.
                header.describe_as("mad", d);
                let body = &data[PERF_DATA_OFFSET..];
                match header.attribute_id {
                    perf_attr::PORT_COUNTERS => {
                        let r = PortCountersRepr::parse(body).map_err(|e| (e, "PortCounters"))?;
                        r.describe_as("port_counters", d);
                        summary.push_str(" port ");
                        push_uint(summary, r.port_select.into());
                    }
                    perf_attr::PORT_COUNTERS_EXTENDED => {
                        let r = PortCountersExtRepr::parse(body)
                            .map_err(|e| (e, "PortCountersExtended"))?;
                        r.describe_as("port_counters_ext", d);
                        summary.push_str(" port ");
                        push_uint(summary, r.port_select.into());
                    }
                    _ => d.field("data", Value::Bytes(body)),
                }
                Ok(())
            }
            _ => {
                header.describe_as("mad", d);
                d.field("data", Value::Bytes(&data[MAD_HEADER_LEN..]));
                Ok(())
            }
        }
    }

    /// Interprets CM private data by the service the connection is for.
    fn cm_private_data(&mut self, m: &CmMessage, summary: &mut String, d: &mut dyn Describer) {
        let kind = match m {
            CmMessage::Req(req) => {
                let kind = classify_with_data(req.service_id, &req.private_data);
                if self.services.len() >= MAX_TRACKED_REQS {
                    self.services.pop_first();
                }
                self.services.insert(req.local_comm_id, kind);
                kind.describe_as("service", d);
                summary.push_str(" service ");
                push_hex(summary, req.service_id, 16);
                summary.push_str(" (");
                summary.push_str(kind.name());
                summary.push(')');
                kind
            }
            CmMessage::SidrReq(req) => classify_with_data(req.service_id, &req.private_data),
            other => match other.remote_comm_id().and_then(|id| self.services.get(&id)) {
                Some(k) => *k,
                None => return,
            },
        };
        let pd = m.private_data();
        match (m, kind) {
            (CmMessage::Req(_) | CmMessage::Rep(_), ServiceKind::IpoibCm { .. }) => {
                // RFC 4755 §3.2: REQ and REP carry the sender's UD QPN and receive MTU.
                if let Ok(r) = IpoibCmPrivateDataRepr::parse(pd) {
                    r.describe_as("ipoib_cm", d);
                }
            }
            (
                CmMessage::Req(_) | CmMessage::SidrReq(_),
                ServiceKind::IpCm { .. } | ServiceKind::RdmaCm { .. },
            ) => match IpCmReqRepr::parse(&pd[..pd.len().min(ip_cm::REQ_PRIVATE_DATA_LEN)]) {
                // Annex A11 §A11.6: the IP addressing header at the start of REQ private data.
                // Linux rdma_cm puts the same header at the start of the 216 bytes of SIDR_REQ
                // private data (`cma_resolve_ib_udp`); the header and the consumer bytes a REQ
                // could carry are read from it.
                Ok(r) => r.describe_as("ip_cm", d),
                Err(e) => d.field("ip_cm_error", Value::Str(&e.to_string())),
            },
            // Annex A11: a consumer reject (reason 28) may carry the IP CM ARI.
            (CmMessage::Rej(rej), ServiceKind::IpCm { .. } | ServiceKind::RdmaCm { .. })
                if rej.reason == RejReason::ConsumerDefined && rej.reject_info_length > 0 =>
            {
                if let Ok(ari) = IpCmReject::parse(rej.ari()) {
                    ari.describe_as("ip_cm_ari", d);
                }
            }
            (CmMessage::Req(_), ServiceKind::IwarpEmulation { .. }) => {
                if let Ok(h) = HelloRepr::parse(pd) {
                    h.describe_as("iwarp_hello", d);
                }
            }
            (CmMessage::Rep(_), ServiceKind::IwarpEmulation { .. }) => {
                if let Ok(h) = HelloReplyRepr::parse(pd) {
                    h.describe_as("iwarp_hello_reply", d);
                }
            }
            _ => {}
        }
    }
}

/// Whether the first packet of an RC/UC send starts with an IPoIB encapsulation header as IPoIB
/// connected mode sends it (RFC 4755 §4, draft-ietf-ipoib-ip-over-infiniband-06 §6): the reserved
/// field zero and the type one IPoIB carries (IPv4, ARP, RARP, IPv6). Other consumers' messages on
/// RC/UC (an Annex A11 IP CM connection's SENDs, such as rping's 16-byte buffer descriptors) are
/// shown as bytes, not as IPoIB with an unknown type. tshark decides alike (`parse_PAYLOAD` in
/// wireshark's `epan/dissectors/packet-infiniband.c`: a zero reserved field and an EtherType it
/// knows, else `Data`).
fn looks_like_ipoib(payload: &[u8]) -> bool {
    let [t0, t1, 0, 0, ..] = *payload else {
        return false;
    };
    !matches!(
        EtherType::from(u16::from_be_bytes([t0, t1])),
        EtherType::Unknown(_)
    )
}

/// A person-readable reason for a packet that did not parse: which length rule it breaks.
fn packet_error(e: Error, data: &[u8]) -> String {
    let Ok(lrh) = LrhRepr::parse_bytes(data) else {
        return format!(
            "{e}: {} bytes is shorter than a Local Route Header",
            data.len()
        );
    };
    let expect = usize::from(lrh.pkt_len) * 4 + 2;
    if expect != data.len() {
        return format!(
            "{e}: LRH PktLen {} means {expect} bytes with the VCRC, the packet has {}",
            lrh.pkt_len,
            data.len()
        );
    }
    if !lrh.lnh.is_iba() {
        return format!("{e}: raw packet");
    }
    let mut off = 8;
    // The ICRC and VCRC follow the payload (IBA 1 §7.8).
    let body_end = data.len().saturating_sub(2);
    if lrh.lnh == Lnh::IbaGlobal {
        match GrhRepr::parse_bytes(&data[off.min(body_end)..body_end]) {
            Err(_) => return format!("{e}: too short for the GRH its LNH announces"),
            Ok(g) if g.nxthdr != GrhRepr::NXT_HDR_IBA => {
                return format!(
                    "{e}: GRH next header {:#04x} is not an IBA transport",
                    g.nxthdr
                )
            }
            Ok(g) => {
                let have = body_end.saturating_sub(off + 40);
                if usize::from(g.paylen) != have {
                    return format!(
                        "{e}: GRH PayLen {} but {have} bytes follow the GRH up to the ICRC",
                        g.paylen
                    );
                }
            }
        }
        off += 40;
    }
    match BthRepr::parse_bytes(&data[off.min(body_end)..body_end]) {
        Err(_) => format!("{e}: too short for a BTH and ICRC"),
        Ok(b) => {
            let ext = b.opcode.ext_headers().map_or(0, |s| s.len());
            let room = body_end.saturating_sub(off + 12 + 4 + ext);
            if usize::from(b.pad_count) > room {
                format!(
                    "{e}: BTH PadCnt {} but only {room} payload bytes",
                    b.pad_count
                )
            } else {
                format!(
                    "{e}: too short for the extension headers of {}",
                    b.opcode.name()
                )
            }
        }
    }
}

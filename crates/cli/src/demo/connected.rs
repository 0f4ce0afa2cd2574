//! What connected mode (RFC 4755) adds to the demo's report: the hosts' connections as their
//! interfaces hold them, and the CM exchange that made them (IBA 1 §12.6), counted in the capture
//! itself by reading the pcap back with the wire crate, as Wireshark would.

use ipoib_fabric::node::subnet::Subnet;
use ipoib_proto::ipoib::ConnState;
use ipoib_wire::cm::{CmMessage, TransportServiceType};
use ipoib_wire::ib::BthRepr;
use ipoib_wire::mad::{MadHeaderRepr, MgmtClass, MAD_HEADER_LEN, MAD_LEN};
use ipoib_wire::packet::Packet;
use ipoib_wire::pcap::CaptureReader;
use ipoib_wire::private_data::ipoib_cm::IpoibCmPrivateDataRepr;
use ipoib_wire::private_data::service_id::{classify, ServiceKind};
use ipoib_wire::Gid;
use std::collections::{BTreeMap, BTreeSet};

/// Hosts whose connections the text shows: all of them up to this many, else the bulk pair.
pub const SHOW_HOSTS: usize = 4;

/// One connection of one host.
#[derive(Debug, Clone)]
pub struct ConnLine {
    pub host: usize,
    /// The peer host, found by its GID; `None` for a GID no host has.
    pub peer: Option<usize>,
    pub peer_gid: Gid,
    /// We sent the REQ.
    pub active: bool,
    /// We send on it (RFC 4755 §3.3: ours, or the peer's the crossing rule made us use).
    pub sends: bool,
    /// Our QPN and the peer's, once established.
    pub qpns: Option<(u32, u32)>,
    pub service_id: u64,
    pub mtu: u32,
    pub state: ConnState,
    pub transport: TransportServiceType,
    pub tx_packets: u64,
    pub rx_packets: u64,
}

/// Every host's connections, host by host.
pub fn connections(net: &Subnet) -> Vec<ConnLine> {
    let n = net.host_count();
    let by_gid: BTreeMap<Gid, usize> = (0..n).map(|i| (net.gid(i), i)).collect();
    let mut v = Vec::new();
    for host in 0..n {
        let Some(iface) = net.interface(host) else {
            continue;
        };
        for c in iface.connections() {
            v.push(ConnLine {
                host,
                peer: by_gid.get(&c.peer.gid).copied(),
                peer_gid: c.peer.gid,
                active: c.active,
                sends: c.sends,
                qpns: c.qpns,
                service_id: c.service_id,
                mtu: c.mtu,
                state: c.state,
                transport: c.transport,
                tx_packets: c.tx_packets,
                rx_packets: c.rx_packets,
            });
        }
    }
    v
}

/// The first IPoIB-CM REQ of the capture, as sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReqSample {
    /// Sender and receiver, by LID.
    pub slid: u16,
    pub dlid: u16,
    pub service_id: u64,
    /// The listener's UD QPN, from the service ID (RFC 4755 §3.5).
    pub service_qpn: u32,
    /// The first 8 bytes of private data: the sender's UD QPN and receive MTU (RFC 4755 §6).
    pub private_data: [u8; 8],
    pub cm_data: IpoibCmPrivateDataRepr,
}

/// The CM messages in a capture. The capture records a packet on every link it crosses, so a
/// message is counted once, by its sender, receiver, transaction ID and attribute (a resent one
/// keeps the connection's transaction ID, as `crates/proto/src/cm/` and Linux send them, so it
/// counts once too).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CmTally {
    /// Distinct messages by name ("REQ", "REP", "RTU", "DREQ", "DREP", "REJ", "MRA", ...).
    pub messages: BTreeMap<&'static str, u64>,
    /// CM frames in the capture (every copy on every link).
    pub frames: u64,
    /// Packets read.
    pub packets: u64,
    pub first_req: Option<ReqSample>,
    seen: BTreeSet<(u16, u16, u64, u16)>,
}

impl CmTally {
    pub fn count(&self, name: &str) -> u64 {
        self.messages.get(name).copied().unwrap_or(0)
    }

    fn add(&mut self, data: &[u8]) {
        self.packets += 1;
        let Ok(p) = Packet::parse(data) else {
            return;
        };
        // CM MADs travel on QP1 in UD packets (IBA 1 §12.6, §13.4.1).
        let to_qp1 = p.bth.is_some_and(|b: BthRepr| b.dest_qp == 1);
        if p.ext.deth.is_none() || !to_qp1 || p.payload.len() != MAD_LEN {
            return;
        }
        let Ok(h) = MadHeaderRepr::parse_bytes(p.payload) else {
            return;
        };
        if h.mgmt_class != MgmtClass::ComMgt {
            return;
        }
        let Ok(m) = CmMessage::parse(h.attribute_id, &p.payload[MAD_HEADER_LEN..]) else {
            return;
        };
        self.frames += 1;
        let key = (p.lrh.slid, p.lrh.dlid, h.transaction_id, h.attribute_id);
        if !self.seen.insert(key) {
            return;
        }
        *self.messages.entry(m.name()).or_insert(0) += 1;
        if let (CmMessage::Req(req), None) = (&m, &self.first_req) {
            if let ServiceKind::IpoibCm { qpn } = classify(req.service_id) {
                let mut pd = [0u8; 8];
                pd.copy_from_slice(&req.private_data[..8]);
                if let Ok(cm_data) = IpoibCmPrivateDataRepr::parse(&pd) {
                    self.first_req = Some(ReqSample {
                        slid: p.lrh.slid,
                        dlid: p.lrh.dlid,
                        service_id: req.service_id,
                        service_qpn: qpn,
                        private_data: pd,
                        cm_data,
                    });
                }
            }
        }
    }
}

/// Reads the pcap at `path` and counts its CM messages.
pub fn tally(path: &str) -> Result<CmTally, String> {
    let file = std::fs::File::open(path).map_err(|e| format!("{path}: {e}"))?;
    let mut r =
        CaptureReader::new(std::io::BufReader::new(file)).map_err(|e| format!("{path}: {e}"))?;
    let mut t = CmTally::default();
    while let Some(p) = r.next_packet() {
        let p = p.map_err(|e| format!("{path}: {e}"))?;
        t.add(p.data);
    }
    Ok(t)
}

//! The capture tap: every packet put on any link, in one pcap (ERF records by default, which Debian's
//! tshark reads; link type 247 on request), time-stamped with virtual time.

use ipoib_proto::time::Instant;
use ipoib_wire::pcap::{LinkType, PcapWriter};

/// A capture in memory; [`Capture::into_bytes`] gives the pcap file.
pub struct Capture {
    writer: PcapWriter<Vec<u8>>,
    packets: u64,
}

impl std::fmt::Debug for Capture {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Capture")
            .field("packets", &self.packets)
            .finish()
    }
}

impl Capture {
    /// A capture written with ERF records (link type 197).
    pub fn new() -> Capture {
        Capture::with_link_type(LinkType::Erf)
    }

    /// A capture with the given link type: 247 gives raw InfiniBand records, anything else ERF.
    pub fn with_link_type(link: LinkType) -> Capture {
        let link = if link == LinkType::Infiniband {
            link
        } else {
            LinkType::Erf
        };
        // Both link types are valid and a Vec never fails to take bytes.
        let writer = PcapWriter::new(Vec::new(), link).expect("pcap header into a Vec");
        Capture { writer, packets: 0 }
    }

    /// Records one packet seen at `at`.
    pub fn record(&mut self, at: Instant, packet: &[u8]) {
        // Writing into a Vec cannot fail.
        let _ = self.writer.write_packet(at.as_nanos(), packet);
        self.packets += 1;
    }

    /// Packets recorded.
    pub fn packets(&self) -> u64 {
        self.packets
    }

    /// The pcap file.
    pub fn into_bytes(self) -> Vec<u8> {
        self.writer.into_inner().unwrap_or_default()
    }
}

impl Default for Capture {
    fn default() -> Self {
        Capture::new()
    }
}

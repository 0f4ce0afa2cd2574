//! The capture tap: every packet put on any link, in one pcap (ERF records by default, which Debian's
//! tshark reads; link type 247 on request), time-stamped with virtual time (plus the wall clock's
//! time of virtual zero for a real-time process, [`Capture::with_epoch`]).

use ipoib_proto::time::Instant;
use ipoib_wire::pcap::{LinkType, PcapWriter};

/// A capture in memory; [`Capture::into_bytes`] gives the pcap file.
pub struct Capture {
    writer: PcapWriter<Vec<u8>>,
    packets: u64,
    /// Packets kept at most (`None`: all).
    limit: Option<u64>,
    /// Packets seen after the limit was reached, not kept.
    skipped: u64,
    /// Added to every time stamp: nanoseconds since the Unix epoch at virtual time zero.
    epoch_ns: u64,
}

impl std::fmt::Debug for Capture {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Capture")
            .field("packets", &self.packets)
            .field("skipped", &self.skipped)
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
        Capture {
            writer,
            packets: 0,
            limit: None,
            skipped: 0,
            epoch_ns: 0,
        }
    }

    /// Time-stamps each packet `epoch_ns` (nanoseconds since the Unix epoch) after its virtual
    /// time: a real-time process, whose virtual time is wall time since its start, gives the
    /// wall clock's time of its virtual zero, so that the capture's times are the wall clock's
    /// and line up with other captures (`mergecap`) and logs. The simulator's own runs keep
    /// virtual time alone (the same seed, the same bytes).
    pub fn with_epoch(mut self, epoch_ns: u64) -> Capture {
        self.epoch_ns = epoch_ns;
        self
    }

    /// Keeps at most `max` packets: the file holds the first `max`, the rest are only counted
    /// ([`Capture::skipped`]), so that a big simulation cannot fill the memory with its capture.
    pub fn with_packet_limit(mut self, max: u64) -> Capture {
        self.limit = Some(max);
        self
    }

    /// Packets seen after the limit, not in the file.
    pub fn skipped(&self) -> u64 {
        self.skipped
    }

    /// Records one packet seen at `at` (or only counts it, past the limit).
    pub fn record(&mut self, at: Instant, packet: &[u8]) {
        if self.limit.is_some_and(|m| self.packets >= m) {
            self.skipped += 1;
            return;
        }
        // Writing into a Vec cannot fail.
        let ts = at.as_nanos().saturating_add(self.epoch_ns);
        let _ = self.writer.write_packet(ts, packet);
        self.packets += 1;
    }

    /// Packets recorded.
    pub fn packets(&self) -> u64 {
        self.packets
    }

    /// Bytes written since the start or the last [`Capture::take_bytes`].
    pub fn pending_len(&self) -> usize {
        self.writer.get_ref().len()
    }

    /// Takes the bytes written since the start or the last call: appended one after the other,
    /// the pieces make the same file as [`Capture::into_bytes`], so a long run can write its
    /// capture out as it goes instead of holding it in memory.
    pub fn take_bytes(&mut self) -> Vec<u8> {
        std::mem::take(self.writer.get_mut())
    }

    /// The pcap file (what [`Capture::take_bytes`] has not taken).
    pub fn into_bytes(self) -> Vec<u8> {
        self.writer.into_inner().unwrap_or_default()
    }
}

impl Default for Capture {
    fn default() -> Self {
        Capture::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ipoib_wire::pcap::CaptureReader;

    // The limit keeps the first packets and counts the rest (the IPoIB demo on 1,000 hosts sees
    // 16 million packets, mostly SA Reports).
    #[test]
    fn packet_limit_keeps_the_first_and_counts_the_rest() {
        let mut c = Capture::new().with_packet_limit(2);
        for i in 0..5u8 {
            c.record(Instant::ZERO, &[i; 30]);
        }
        assert_eq!((c.packets(), c.skipped()), (2, 3));
        let bytes = c.into_bytes();
        let kept: Vec<u8> = CaptureReader::read_all(&bytes[..])
            .unwrap()
            .iter()
            .map(|p| p.data[0])
            .collect();
        assert_eq!(kept, vec![0, 1]);
    }

    // Taken piece by piece, the capture is the same file as taken whole.
    #[test]
    fn pieces_make_the_same_file() {
        let mut whole = Capture::new();
        let mut pieces = Capture::new();
        let mut file = Vec::new();
        for i in 0..10u8 {
            let at = Instant::from_nanos(u64::from(i) * 1000);
            whole.record(at, &[i; 40]);
            pieces.record(at, &[i; 40]);
            if i % 3 == 0 {
                assert!(pieces.pending_len() > 0);
                file.extend(pieces.take_bytes());
                assert_eq!(pieces.pending_len(), 0);
            }
        }
        file.extend(pieces.into_bytes());
        assert_eq!(file, whole.into_bytes());
        assert_eq!(CaptureReader::read_all(&file[..]).unwrap().len(), 10);
    }

    // With an epoch, each time stamp is the epoch plus the packet's virtual time.
    #[test]
    fn an_epoch_is_added_to_every_time_stamp() {
        let epoch = 1_764_000_000_123_456_789;
        let mut c = Capture::new().with_epoch(epoch);
        c.record(Instant::ZERO, &[1; 30]);
        c.record(Instant::from_nanos(2_500), &[2; 30]);
        let times: Vec<Option<u64>> = CaptureReader::read_all(&c.into_bytes()[..])
            .unwrap()
            .iter()
            .map(|p| p.ts_ns)
            .collect();
        assert_eq!(times, vec![Some(epoch), Some(epoch + 2_500)]);
    }
}

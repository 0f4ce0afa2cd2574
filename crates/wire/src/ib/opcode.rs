//! BTH opcodes (IBA 1 §9.2): the upper 3 bits name the transport service, the lower 5 the operation.
//! The opcode alone decides which extended transport headers follow the BTH.

use super::ext::ExtHeaderSet;

/// The transport service: opcode bits 7-5 (IBA 1 §9.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Transport {
    /// 000: Reliable Connection.
    Rc,
    /// 001: Unreliable Connection.
    Uc,
    /// 010: Reliable Datagram.
    Rd,
    /// 011: Unreliable Datagram.
    Ud,
    /// 100: Congestion Notification Packet (IBA 1 Annex A10; RoCEv2 reuses 0x81).
    Cnp,
    /// 101: reserved.
    Reserved,
    /// 110 or 111: manufacturer specific (the value kept).
    ManufacturerSpecific(u8),
}

impl Transport {
    /// The 3-bit code.
    pub fn bits(self) -> u8 {
        match self {
            Transport::Rc => 0,
            Transport::Uc => 1,
            Transport::Rd => 2,
            Transport::Ud => 3,
            Transport::Cnp => 4,
            Transport::Reserved => 5,
            Transport::ManufacturerSpecific(b) => 6 | (b & 1),
        }
    }
    fn from_bits(b: u8) -> Transport {
        match b & 7 {
            0 => Transport::Rc,
            1 => Transport::Uc,
            2 => Transport::Rd,
            3 => Transport::Ud,
            4 => Transport::Cnp,
            5 => Transport::Reserved,
            b => Transport::ManufacturerSpecific(b),
        }
    }
}

code_enum! {
    /// The operation: opcode bits 4-0 for the RC, UC, RD and UD services (IBA 1 §9.2).
    #[allow(missing_docs)]
    pub enum Operation(u8 & 0x1f) {
        SendFirst = 0x00,
        SendMiddle = 0x01,
        SendLast = 0x02,
        SendLastWithImmediate = 0x03,
        SendOnly = 0x04,
        SendOnlyWithImmediate = 0x05,
        RdmaWriteFirst = 0x06,
        RdmaWriteMiddle = 0x07,
        RdmaWriteLast = 0x08,
        RdmaWriteLastWithImmediate = 0x09,
        RdmaWriteOnly = 0x0a,
        RdmaWriteOnlyWithImmediate = 0x0b,
        RdmaReadRequest = 0x0c,
        RdmaReadResponseFirst = 0x0d,
        RdmaReadResponseMiddle = 0x0e,
        RdmaReadResponseLast = 0x0f,
        RdmaReadResponseOnly = 0x10,
        Acknowledge = 0x11,
        AtomicAcknowledge = 0x12,
        CompareSwap = 0x13,
        FetchAdd = 0x14,
        /// 0x15: RESYNC, RD only.
        Resync = 0x15,
        SendLastWithInvalidate = 0x16,
        SendOnlyWithInvalidate = 0x17,
        /// Any other 5-bit value.
        Unknown(_),
    }
}

/// Where a packet sits in its message (IBA 1 §9.2, the FIRST/MIDDLE/LAST/ONLY opcodes). Requests
/// and responses that are always one packet (RDMA READ request, ACK, atomics, RESYNC) count as
/// `Only`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Position {
    /// First packet of a multi-packet message.
    First,
    /// Neither first nor last.
    Middle,
    /// Last packet of a multi-packet message.
    Last,
    /// The whole message in one packet.
    Only,
}

/// [`Opcode::ext_headers`] of every opcode, by value ([`ext_headers_of_bits`]).
static EXT_HEADERS: [Option<ExtHeaderSet>; 256] = {
    let mut t = [None; 256];
    let mut b = 0;
    while b < 256 {
        t[b] = ext_headers_of_bits(b as u8);
        b += 1;
    }
    t
};

/// The opcode table of IBA 1 §9.2 on the opcode's bits, for [`EXT_HEADERS`] (a `const fn`, so
/// the table is made at compile time): `Opcode::ext_headers_by_operation`'s rules, which the
/// test `ext_headers_of_ud_send_only` compares it with for all 256 opcodes.
const fn ext_headers_of_bits(b: u8) -> Option<ExtHeaderSet> {
    let (transport, op) = (b >> 5, b & 0x1f);
    // Opcode::is_defined.
    let defined = match transport {
        0 => op <= 0x14 || op == 0x16 || op == 0x17,
        1 => op <= 0x0b,
        2 => op <= 0x15,
        3 => op == 0x04 || op == 0x05,
        4 => op == 0,
        _ => false,
    };
    if !defined {
        return None;
    }
    let base = match op {
        // SEND First, Middle, Last, Only.
        0x00..=0x02 | 0x04 => ExtHeaderSet::NONE,
        // SEND Last and Only with Immediate.
        0x03 | 0x05 => ExtHeaderSet::IMMDT,
        // RDMA WRITE First and Only, RDMA READ Request.
        0x06 | 0x0a | 0x0c => ExtHeaderSet::RETH,
        // RDMA WRITE Middle and Last, RDMA READ Response Middle, RESYNC.
        0x07 | 0x08 | 0x0e | 0x15 => ExtHeaderSet::NONE,
        // RDMA WRITE Last with Immediate.
        0x09 => ExtHeaderSet::IMMDT,
        // RDMA WRITE Only with Immediate.
        0x0b => ExtHeaderSet::RETH.with(ExtHeaderSet::IMMDT),
        // RDMA READ Response First, Last, Only; Acknowledge.
        0x0d | 0x0f | 0x10 | 0x11 => ExtHeaderSet::AETH,
        // ATOMIC Acknowledge.
        0x12 => ExtHeaderSet::AETH.with(ExtHeaderSet::ATOMIC_ACK_ETH),
        // CmpSwap, FetchAdd.
        0x13 | 0x14 => ExtHeaderSet::ATOMIC_ETH,
        // SEND Last and Only with Invalidate.
        0x16 | 0x17 => ExtHeaderSet::IETH,
        _ => return None,
    };
    Some(match transport {
        // RD: responses carry only the RDETH, requests RDETH and DETH.
        2 => {
            let responder = matches!(op, 0x0d..=0x12);
            let pre = if responder {
                ExtHeaderSet::RDETH
            } else {
                ExtHeaderSet::RDETH.with(ExtHeaderSet::DETH)
            };
            pre.with(base)
        }
        3 => ExtHeaderSet::DETH.with(base),
        // CNP.
        4 => ExtHeaderSet::NONE,
        _ => base,
    })
}

/// A BTH opcode. Every 8-bit value is representable, so unknown opcodes survive a round trip.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Opcode(pub u8);

impl From<u8> for Opcode {
    fn from(v: u8) -> Opcode {
        Opcode(v)
    }
}

impl From<Opcode> for u8 {
    fn from(v: Opcode) -> u8 {
        v.0
    }
}

/// The opcode names wireshark uses, for one transport prefix.
macro_rules! op_name {
    ($p:literal, $op:expr) => {
        match $op {
            Operation::SendFirst => concat!($p, " Send First"),
            Operation::SendMiddle => concat!($p, " Send Middle"),
            Operation::SendLast => concat!($p, " Send Last"),
            Operation::SendLastWithImmediate => concat!($p, " Send Last Immediate"),
            Operation::SendOnly => concat!($p, " Send Only"),
            Operation::SendOnlyWithImmediate => concat!($p, " Send Only Immediate"),
            Operation::RdmaWriteFirst => concat!($p, " RDMA Write First"),
            Operation::RdmaWriteMiddle => concat!($p, " RDMA Write Middle"),
            Operation::RdmaWriteLast => concat!($p, " RDMA Write Last"),
            Operation::RdmaWriteLastWithImmediate => concat!($p, " RDMA Write Last Immediate"),
            Operation::RdmaWriteOnly => concat!($p, " RDMA Write Only"),
            Operation::RdmaWriteOnlyWithImmediate => concat!($p, " RDMA Write Only Immediate"),
            Operation::RdmaReadRequest => concat!($p, " RDMA Read Request"),
            Operation::RdmaReadResponseFirst => concat!($p, " RDMA Read Response First"),
            Operation::RdmaReadResponseMiddle => concat!($p, " RDMA Read Response Middle"),
            Operation::RdmaReadResponseLast => concat!($p, " RDMA Read Response Last"),
            Operation::RdmaReadResponseOnly => concat!($p, " RDMA Read Response Only"),
            Operation::Acknowledge => concat!($p, " Acknowledge"),
            Operation::AtomicAcknowledge => concat!($p, " Atomic Acknowledge"),
            Operation::CompareSwap => concat!($p, " Compare Swap"),
            Operation::FetchAdd => concat!($p, " Fetch Add"),
            Operation::Resync => concat!($p, " RESYNC"),
            Operation::SendLastWithInvalidate => concat!($p, " Send Last Invalidate"),
            Operation::SendOnlyWithInvalidate => concat!($p, " Send Only Invalidate"),
            Operation::Unknown(_) => "Reserved",
        }
    };
}

impl Opcode {
    /// UD SEND Only (0x64): the opcode of every IPoIB-UD frame.
    pub const UD_SEND_ONLY: Opcode = Opcode(0x64);
    /// UD SEND Only with Immediate (0x65).
    pub const UD_SEND_ONLY_WITH_IMMEDIATE: Opcode = Opcode(0x65);
    /// RC SEND Only (0x04).
    pub const RC_SEND_ONLY: Opcode = Opcode(0x04);
    /// RC Acknowledge (0x11).
    pub const RC_ACKNOWLEDGE: Opcode = Opcode(0x11);
    /// UC SEND Only (0x24).
    pub const UC_SEND_ONLY: Opcode = Opcode(0x24);
    /// Congestion Notification Packet (0x80).
    pub const CNP: Opcode = Opcode(0x80);

    /// Builds an opcode from its two halves.
    pub fn new(t: Transport, op: Operation) -> Opcode {
        Opcode((t.bits() << 5) | u8::from(op))
    }

    /// The transport service (bits 7-5).
    pub fn transport(self) -> Transport {
        Transport::from_bits(self.0 >> 5)
    }

    /// The operation (bits 4-0). Meaningful only for RC, UC, RD and UD.
    pub fn operation(self) -> Operation {
        Operation::from(self.0)
    }

    /// True for opcodes IBA 1 §9.2 defines: RC 0x00-0x14 and 0x16-0x17, UC 0x20-0x2B, RD
    /// 0x40-0x55, UD 0x64-0x65 and CNP 0x80.
    pub fn is_defined(self) -> bool {
        let op = self.0 & 0x1f;
        match self.transport() {
            Transport::Rc => op <= 0x14 || op == 0x16 || op == 0x17,
            Transport::Uc => op <= 0x0b,
            Transport::Rd => op <= 0x15,
            Transport::Ud => op == 0x04 || op == 0x05,
            Transport::Cnp => op == 0,
            Transport::Reserved | Transport::ManufacturerSpecific(_) => false,
        }
    }

    /// The opcode's name as wireshark shows it ("UD Send Only"), or "Reserved",
    /// "Manufacturer Specific".
    pub fn name(self) -> &'static str {
        if let Transport::ManufacturerSpecific(_) = self.transport() {
            return "Manufacturer Specific";
        }
        if !self.is_defined() {
            return "Reserved";
        }
        let op = self.operation();
        match self.transport() {
            Transport::Rc => op_name!("RC", op),
            Transport::Uc => op_name!("UC", op),
            Transport::Rd => op_name!("RD", op),
            Transport::Ud => op_name!("UD", op),
            Transport::Cnp => "CNP",
            Transport::Reserved | Transport::ManufacturerSpecific(_) => "Reserved",
        }
    }

    /// The extended transport headers that follow the BTH, in wire order, per IBA 1 §9.2 (the
    /// opcode table listing the header sequence of each packet type). `None` for reserved and
    /// manufacturer-specific opcodes, whose headers this code cannot know.
    pub fn ext_headers(self) -> Option<ExtHeaderSet> {
        // Read from a table made at compile time (every packet parsed or built asks, at each
        // hop): what the walk below gives, for each of the 256 opcodes
        // (`ext_headers_of_ud_send_only` compares them all).
        EXT_HEADERS[usize::from(self.0)]
    }

    /// [`Opcode::ext_headers`] from the opcode's transport and operation: the reference the
    /// table is checked against.
    #[cfg(test)]
    fn ext_headers_by_operation(self) -> Option<ExtHeaderSet> {
        use Operation::*;
        if !self.is_defined() {
            return None;
        }
        let op = self.operation();
        let base = match op {
            SendFirst | SendMiddle | SendLast | SendOnly => ExtHeaderSet::NONE,
            SendLastWithImmediate | SendOnlyWithImmediate => ExtHeaderSet::IMMDT,
            RdmaWriteFirst | RdmaWriteOnly | RdmaReadRequest => ExtHeaderSet::RETH,
            RdmaWriteMiddle | RdmaWriteLast | RdmaReadResponseMiddle | Resync => ExtHeaderSet::NONE,
            RdmaWriteLastWithImmediate => ExtHeaderSet::IMMDT,
            RdmaWriteOnlyWithImmediate => ExtHeaderSet::RETH.with(ExtHeaderSet::IMMDT),
            RdmaReadResponseFirst | RdmaReadResponseLast | RdmaReadResponseOnly | Acknowledge => {
                ExtHeaderSet::AETH
            }
            AtomicAcknowledge => ExtHeaderSet::AETH.with(ExtHeaderSet::ATOMIC_ACK_ETH),
            CompareSwap | FetchAdd => ExtHeaderSet::ATOMIC_ETH,
            SendLastWithInvalidate | SendOnlyWithInvalidate => ExtHeaderSet::IETH,
            Unknown(_) => return None,
        };
        Some(match self.transport() {
            // Responses on RD carry only the RDETH; requests carry RDETH and DETH.
            Transport::Rd => {
                let responder = matches!(
                    op,
                    RdmaReadResponseFirst
                        | RdmaReadResponseMiddle
                        | RdmaReadResponseLast
                        | RdmaReadResponseOnly
                        | Acknowledge
                        | AtomicAcknowledge
                );
                let pre = if responder {
                    ExtHeaderSet::RDETH
                } else {
                    ExtHeaderSet::RDETH.with(ExtHeaderSet::DETH)
                };
                pre.with(base)
            }
            Transport::Ud => ExtHeaderSet::DETH.with(base),
            Transport::Cnp => ExtHeaderSet::NONE,
            _ => base,
        })
    }

    /// True when packets with this opcode may carry a payload (IBA 1 §9.2: read requests,
    /// acknowledges, atomics and RESYNC carry none). Unknown opcodes answer true.
    pub fn carries_payload(self) -> bool {
        use Operation::*;
        if !self.is_defined() {
            return true;
        }
        if self.transport() == Transport::Cnp {
            return true;
        }
        !matches!(
            self.operation(),
            RdmaReadRequest | Acknowledge | AtomicAcknowledge | CompareSwap | FetchAdd | Resync
        )
    }

    /// First, middle, last or only packet of a message; `None` for undefined opcodes and CNPs.
    pub fn position(self) -> Option<Position> {
        use Operation::*;
        if !self.is_defined() || self.transport() == Transport::Cnp {
            return None;
        }
        Some(match self.operation() {
            SendFirst | RdmaWriteFirst | RdmaReadResponseFirst => Position::First,
            SendMiddle | RdmaWriteMiddle | RdmaReadResponseMiddle => Position::Middle,
            SendLast
            | SendLastWithImmediate
            | SendLastWithInvalidate
            | RdmaWriteLast
            | RdmaWriteLastWithImmediate
            | RdmaReadResponseLast => Position::Last,
            _ => Position::Only,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shortcut of `ext_headers` gives what the opcode table gives, and every other opcode
    /// takes the table.
    #[test]
    fn ext_headers_of_ud_send_only() {
        assert_eq!(
            Opcode::UD_SEND_ONLY.ext_headers_by_operation(),
            Some(ExtHeaderSet::DETH)
        );
        for b in 0..=255u8 {
            let op = Opcode(b);
            assert_eq!(op.ext_headers(), op.ext_headers_by_operation(), "{b:#x}");
        }
    }

    /// IBA 1 §9.2: opcode values and their split into transport and operation.
    #[test]
    fn split_and_join() {
        assert_eq!(Opcode(0x64).transport(), Transport::Ud);
        assert_eq!(Opcode(0x64).operation(), Operation::SendOnly);
        assert_eq!(
            Opcode::new(Transport::Ud, Operation::SendOnly),
            Opcode::UD_SEND_ONLY
        );
        assert_eq!(Opcode(0x17).operation(), Operation::SendOnlyWithInvalidate);
        assert_eq!(Opcode(0x55).operation(), Operation::Resync);
        assert_eq!(Opcode(0xc3).transport(), Transport::ManufacturerSpecific(6));
        assert_eq!(Opcode(0xe3).transport(), Transport::ManufacturerSpecific(7));
        for v in 0..=255u8 {
            let o = Opcode(v);
            assert_eq!(Opcode::new(o.transport(), o.operation()), o);
            assert_eq!(u8::from(Operation::from(v)), v & 0x1f);
        }
    }

    #[test]
    fn names_match_wireshark() {
        assert_eq!(Opcode(0x64).name(), "UD Send Only");
        assert_eq!(Opcode(0x04).name(), "RC Send Only");
        assert_eq!(Opcode(0x11).name(), "RC Acknowledge");
        assert_eq!(Opcode(0x2b).name(), "UC RDMA Write Only Immediate");
        assert_eq!(Opcode(0x55).name(), "RD RESYNC");
        assert_eq!(Opcode(0x31).name(), "Reserved"); // UC acknowledge does not exist
        assert_eq!(Opcode(0x15).name(), "Reserved"); // RESYNC is RD only
        assert_eq!(Opcode(0x80).name(), "CNP");
        assert_eq!(Opcode(0xff).name(), "Manufacturer Specific");
    }

    /// IBA 1 §9.2: header sequence per opcode.
    #[test]
    fn header_sequences() {
        use ExtHeaderSet as H;
        let h = |v: u8| Opcode(v).ext_headers();
        assert_eq!(h(0x64), Some(H::DETH));
        assert_eq!(h(0x65), Some(H::DETH.with(H::IMMDT)));
        assert_eq!(h(0x00), Some(H::NONE));
        assert_eq!(h(0x03), Some(H::IMMDT));
        assert_eq!(h(0x06), Some(H::RETH));
        assert_eq!(h(0x0b), Some(H::RETH.with(H::IMMDT)));
        assert_eq!(h(0x0c), Some(H::RETH));
        assert_eq!(h(0x0d), Some(H::AETH));
        assert_eq!(h(0x0e), Some(H::NONE));
        assert_eq!(h(0x11), Some(H::AETH));
        assert_eq!(h(0x12), Some(H::AETH.with(H::ATOMIC_ACK_ETH)));
        assert_eq!(h(0x13), Some(H::ATOMIC_ETH));
        assert_eq!(h(0x16), Some(H::IETH));
        assert_eq!(h(0x2a), Some(H::RETH));
        assert_eq!(h(0x40), Some(H::RDETH.with(H::DETH)));
        assert_eq!(
            h(0x4b),
            Some(H::RDETH.with(H::DETH).with(H::RETH).with(H::IMMDT))
        );
        assert_eq!(h(0x4d), Some(H::RDETH.with(H::AETH)));
        assert_eq!(h(0x4e), Some(H::RDETH));
        assert_eq!(
            h(0x52),
            Some(H::RDETH.with(H::AETH).with(H::ATOMIC_ACK_ETH))
        );
        assert_eq!(h(0x53), Some(H::RDETH.with(H::DETH).with(H::ATOMIC_ETH)));
        assert_eq!(h(0x55), Some(H::RDETH.with(H::DETH)));
        assert_eq!(h(0x80), Some(H::NONE));
        assert_eq!(h(0x66), None);
        assert_eq!(h(0xc0), None);
        assert_eq!(h(0xa0), None);
    }

    #[test]
    fn positions_and_payload() {
        assert_eq!(Opcode(0x00).position(), Some(Position::First));
        assert_eq!(Opcode(0x01).position(), Some(Position::Middle));
        assert_eq!(Opcode(0x03).position(), Some(Position::Last));
        assert_eq!(Opcode(0x64).position(), Some(Position::Only));
        assert_eq!(Opcode(0x0e).position(), Some(Position::Middle));
        assert_eq!(Opcode(0x11).position(), Some(Position::Only));
        assert_eq!(Opcode(0xc0).position(), None);
        assert!(Opcode(0x64).carries_payload());
        assert!(!Opcode(0x11).carries_payload());
        assert!(!Opcode(0x0c).carries_payload());
    }
}

//! The byte layouts of ibsim's client protocol (linux-rdma/ibsim `include/ibsim.h`, as built into
//! Debian's ibsim 0.10; docs/IBSIM.md "ibsim").
//!
//! - `struct sim_ctl` (80 bytes): magic `0xdeadbeef`, client id, type, length as host-order `u32`s,
//!   then 64 data bytes. Every control message is answered by one of the same size; an answer of
//!   type `SIM_CTL_ERROR` means the server refused it.
//! - `struct sim_client_info` (44 bytes, inside a CONNECT's data): id (the tag the client bound its
//!   sockets with; the client id in the answer), qp, issm, nodeid (32 bytes, NUL padded).
//! - `struct sim_request` (288 bytes): dlid and slid as `htons()` values widened to host `u32`s,
//!   dqp and sqp as `htonl()`, status as `htonl()` (ibsim sets 110, ETIMEDOUT, when it returns a
//!   MAD it could not deliver), 4 bytes of alignment padding, the MAD length as big-endian `u64`
//!   (`context` in older headers), then the 256-byte MAD at offset 32.
//!
//! The answers to `SIM_CTL_GET_NODEINFO` and `SIM_CTL_GET_PORTINFO` carry the NodeInfo and PortInfo
//! attributes in MAD byte order; the client reads them with `ipoib_wire::smp`.
//!
//! Invariant: encoders write exactly the C struct's bytes on this host (the server is a C program
//! on the same machine, or one with the same byte order in UDP mode); decoders never panic on
//! short or garbled input and answer `None` instead.

/// `SIM_MAGIC`.
pub const SIM_MAGIC: u32 = 0xdead_beef;
/// `sizeof(struct sim_ctl)`.
pub const SIM_CTL_LEN: usize = 80;
/// `SIM_CTL_MAX_DATA`.
pub const SIM_CTL_DATA_LEN: usize = 64;
/// `sizeof(struct sim_request)`.
pub const SIM_REQUEST_LEN: usize = 288;
/// Offset of the MAD in a `sim_request`.
pub const SIM_REQUEST_MAD_OFFSET: usize = 32;
/// A MAD's length.
pub const MAD_LEN: usize = 256;
/// `IBSIM_MAX_CLIENTS`: OpenSM takes one slot.
pub const MAX_CLIENTS: u32 = 10;
/// `IBSIM_DEFAULT_SERVER_PORT` in ibsim 0.10 (UDP mode).
pub const DEFAULT_SERVER_PORT: u16 = 8003;
/// `SIM_BASENAME`, the default prefix of the abstract socket names.
pub const DEFAULT_BASENAME: &str = "sim";
/// The status ibsim puts in a `sim_request` it hands back undelivered (ETIMEDOUT).
pub const STATUS_UNDELIVERED: u32 = 110;

ipoib_wire::code_enum! {
    /// `enum SIM_CTL_TYPES`.
    pub enum CtlType(u32) {
        /// `SIM_CTL_ERROR`: the reply type of a refused request.
        Error = 0,
        /// `SIM_CTL_CONNECT`.
        Connect = 1,
        /// `SIM_CTL_DISCONNECT`.
        Disconnect = 2,
        /// `SIM_CTL_GET_PORT`.
        GetPort = 3,
        /// `SIM_CTL_GET_VENDOR`.
        GetVendor = 4,
        /// `SIM_CTL_GET_GID`.
        GetGid = 5,
        /// `SIM_CTL_GET_GUID`.
        GetGuid = 6,
        /// `SIM_CTL_GET_NODEINFO`.
        GetNodeInfo = 7,
        /// `SIM_CTL_GET_PORTINFO`.
        GetPortInfo = 8,
        /// `SIM_CTL_SET_ISSM`.
        SetIssm = 9,
        /// `SIM_CTL_GET_PKEYS`.
        GetPkeys = 10,
        /// Any other value.
        Unknown(_),
    }
}

/// A `struct sim_ctl`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SimCtl {
    /// Client id (ignored by the server in a CONNECT).
    pub client_id: u32,
    /// Message type.
    pub ctl_type: CtlType,
    /// Bytes of `data` in use (the server copies back as many).
    pub len: u32,
    /// Payload.
    pub data: [u8; SIM_CTL_DATA_LEN],
}

impl SimCtl {
    /// A request with `payload` (at most 64 bytes; longer is cut).
    pub fn new(client_id: u32, ctl_type: CtlType, payload: &[u8]) -> SimCtl {
        let mut data = [0u8; SIM_CTL_DATA_LEN];
        let n = payload.len().min(SIM_CTL_DATA_LEN);
        data[..n].copy_from_slice(&payload[..n]);
        SimCtl {
            client_id,
            ctl_type,
            len: n as u32,
            data,
        }
    }

    /// The 80 bytes.
    pub fn to_bytes(&self) -> [u8; SIM_CTL_LEN] {
        let mut b = [0u8; SIM_CTL_LEN];
        b[0..4].copy_from_slice(&SIM_MAGIC.to_ne_bytes());
        b[4..8].copy_from_slice(&self.client_id.to_ne_bytes());
        b[8..12].copy_from_slice(&u32::from(self.ctl_type).to_ne_bytes());
        b[12..16].copy_from_slice(&self.len.to_ne_bytes());
        b[16..].copy_from_slice(&self.data);
        b
    }

    /// Parses an answer: `None` unless it is exactly 80 bytes with the magic.
    pub fn parse(b: &[u8]) -> Option<SimCtl> {
        if b.len() != SIM_CTL_LEN || ne32(b, 0) != SIM_MAGIC {
            return None;
        }
        let mut data = [0u8; SIM_CTL_DATA_LEN];
        data.copy_from_slice(&b[16..]);
        Some(SimCtl {
            client_id: ne32(b, 4),
            ctl_type: CtlType::from(ne32(b, 8)),
            len: ne32(b, 12),
            data,
        })
    }
}

/// A `struct sim_client_info`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientInfo {
    /// In a CONNECT: the tag of the client's socket names (`<base>:in<id>`, or its UDP port). In
    /// the answer: the client id (slot) the server gave.
    pub id: u32,
    /// The QP the client answers for: MADs whose DQP is above 1 go to the client with that QP.
    pub qp: u32,
    /// Nonzero: the client is the SM of its node (receives unsolicited QP0/QP1 requests).
    pub issm: u32,
    /// Node to attach to (an ibsim node id or description); empty = the default (first) port.
    pub node_id: String,
}

/// `sizeof(struct sim_client_info)`.
pub const CLIENT_INFO_LEN: usize = 44;

impl ClientInfo {
    /// The 44 bytes (node id cut to 31 bytes and NUL terminated, as ibsim's `strncpy`).
    pub fn to_bytes(&self) -> [u8; CLIENT_INFO_LEN] {
        let mut b = [0u8; CLIENT_INFO_LEN];
        b[0..4].copy_from_slice(&self.id.to_ne_bytes());
        b[4..8].copy_from_slice(&self.qp.to_ne_bytes());
        b[8..12].copy_from_slice(&self.issm.to_ne_bytes());
        let name = self.node_id.as_bytes();
        let n = name.len().min(31);
        b[12..12 + n].copy_from_slice(&name[..n]);
        b
    }

    /// Parses the first 44 bytes of a control payload.
    pub fn parse(b: &[u8]) -> Option<ClientInfo> {
        if b.len() < CLIENT_INFO_LEN {
            return None;
        }
        let name = &b[12..CLIENT_INFO_LEN];
        let end = name.iter().position(|&c| c == 0).unwrap_or(name.len());
        Some(ClientInfo {
            id: ne32(b, 0),
            qp: ne32(b, 4),
            issm: ne32(b, 8),
            node_id: String::from_utf8_lossy(&name[..end]).into_owned(),
        })
    }
}

/// A `struct sim_request`: one MAD with its LRH/BTH/DETH addressing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimRequest {
    /// The addressing before the MAD.
    pub head: SimRequestHead,
    /// The MAD.
    pub mad: [u8; MAD_LEN],
}

impl SimRequest {
    /// The 288 bytes.
    pub fn to_bytes(&self) -> [u8; SIM_REQUEST_LEN] {
        let mut b = [0u8; SIM_REQUEST_LEN];
        self.head.write(&mut b);
        b[SIM_REQUEST_MAD_OFFSET..].copy_from_slice(&self.mad);
        b
    }

    /// Parses a datagram: `None` unless it is exactly 288 bytes.
    pub fn parse(b: &[u8]) -> Option<SimRequest> {
        if b.len() != SIM_REQUEST_LEN {
            return None;
        }
        let head = SimRequestHead::parse(b)?;
        let mut mad = [0u8; MAD_LEN];
        mad.copy_from_slice(&b[SIM_REQUEST_MAD_OFFSET..]);
        Some(SimRequest { head, mad })
    }
}

/// The fields of a [`SimRequest`] before its MAD; written alone, it lets the server write its
/// answers straight into the buffer it sends from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SimRequestHead {
    /// Destination LID (0xffff with a directed-route SMP).
    pub dlid: u16,
    /// Source LID (0: ibsim fills in the sender's port LID).
    pub slid: u16,
    /// Destination QP.
    pub dqp: u32,
    /// Source QP.
    pub sqp: u32,
    /// 0, or [`STATUS_UNDELIVERED`] when ibsim hands the MAD back undelivered.
    pub status: u32,
    /// The MAD's length as its sender states it: umad2sim writes the bytes the program wrote (at
    /// most 256) and gives the reading program this length as its umad length, which `saquery`
    /// divides into records (`umad2sim/umad2sim.c` `umad2sim_read`, `umad2sim_write`).
    pub length: u64,
}

impl SimRequestHead {
    /// The head of a datagram that is a `sim_request` ([`SimRequest::parse`]'s test: exactly
    /// 288 bytes), its MAD left where it is.
    pub fn parse(b: &[u8]) -> Option<SimRequestHead> {
        if b.len() != SIM_REQUEST_LEN {
            return None;
        }
        // `ntohs((uint16_t)field)`: the low 16 bits of the host-order u32, in network order.
        let lid = |off: usize| u16::from_be(ne32(b, off) as u16);
        Some(SimRequestHead {
            dlid: lid(0),
            slid: lid(4),
            dqp: be32(b, 8),
            sqp: be32(b, 12),
            status: be32(b, 16),
            length: u64::from_be_bytes([b[24], b[25], b[26], b[27], b[28], b[29], b[30], b[31]]),
        })
    }

    /// Writes the first [`SIM_REQUEST_MAD_OFFSET`] bytes of the request (bytes 20..24, padding,
    /// zero), leaving the MAD's bytes as they are.
    pub fn write(&self, b: &mut [u8; SIM_REQUEST_LEN]) {
        b[0..4].copy_from_slice(&u32::from(self.dlid.to_be()).to_ne_bytes());
        b[4..8].copy_from_slice(&u32::from(self.slid.to_be()).to_ne_bytes());
        b[8..12].copy_from_slice(&self.dqp.to_be_bytes());
        b[12..16].copy_from_slice(&self.sqp.to_be_bytes());
        b[16..20].copy_from_slice(&self.status.to_be_bytes());
        b[20..24].fill(0);
        b[24..32].copy_from_slice(&self.length.to_be_bytes());
    }
}

fn ne32(b: &[u8], off: usize) -> u32 {
    u32::from_ne_bytes([b[off], b[off + 1], b[off + 2], b[off + 3]])
}

fn be32(b: &[u8], off: usize) -> u32 {
    u32::from_be_bytes([b[off], b[off + 1], b[off + 2], b[off + 3]])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ctl_connect_layout() {
        // include/ibsim.h: magic, clientid, type, len, data[64]; sim_client_info in data.
        let info = ClientInfo {
            id: 0x1234,
            qp: 1,
            issm: 0,
            node_id: "Hca2".into(),
        };
        let ctl = SimCtl::new(0, CtlType::Connect, &info.to_bytes());
        let b = ctl.to_bytes();
        assert_eq!(b.len(), SIM_CTL_LEN);
        assert_eq!(&b[0..4], &0xdead_beefu32.to_ne_bytes());
        assert_eq!(&b[8..12], &1u32.to_ne_bytes());
        assert_eq!(&b[12..16], &44u32.to_ne_bytes());
        assert_eq!(&b[16..20], &0x1234u32.to_ne_bytes());
        assert_eq!(&b[28..32], b"Hca2");
        assert_eq!(b[32], 0);
        let back = SimCtl::parse(&b).unwrap();
        assert_eq!(back, ctl);
        assert_eq!(ClientInfo::parse(&back.data).unwrap(), info);
        assert_eq!(SimCtl::parse(&b[..79]), None);
        let mut bad = b;
        bad[0] ^= 1;
        assert_eq!(SimCtl::parse(&bad), None);
    }

    #[test]
    fn long_node_id_is_cut_and_terminated() {
        let info = ClientInfo {
            id: 1,
            qp: 0,
            issm: 1,
            node_id: "x".repeat(40),
        };
        let b = info.to_bytes();
        assert_eq!(b[12 + 31], 0);
        assert_eq!(ClientInfo::parse(&b).unwrap().node_id.len(), 31);
    }

    #[test]
    fn request_layout() {
        // docs/IBSIM.md: dlid/slid htons in u32 fields, dqp/sqp htonl, status, 4 bytes padding,
        // length as big-endian u64, MAD at 32.
        let mut mad = [0u8; MAD_LEN];
        mad[0] = 1;
        mad[255] = 0xee;
        let r = SimRequest {
            head: SimRequestHead {
                dlid: 0x0102,
                slid: 0,
                dqp: 1,
                sqp: 0x0a0b0c,
                status: 0,
                length: MAD_LEN as u64,
            },
            mad,
        };
        let b = r.to_bytes();
        assert_eq!(b.len(), 288);
        if cfg!(target_endian = "little") {
            assert_eq!(&b[0..4], &[1, 2, 0, 0]);
        }
        assert_eq!(&b[8..12], &[0, 0, 0, 1]);
        assert_eq!(&b[12..16], &[0, 0x0a, 0x0b, 0x0c]);
        assert_eq!(&b[20..24], &[0; 4]);
        assert_eq!(&b[24..32], &[0, 0, 0, 0, 0, 0, 1, 0]);
        assert_eq!(b[32], 1);
        assert_eq!(b[287], 0xee);
        assert_eq!(SimRequest::parse(&b).unwrap(), r);
        assert_eq!(SimRequest::parse(&b[..287]), None);
        // Written in place over a used buffer: the same head, the MAD's bytes left as they were.
        let mut reused = [0x5a; SIM_REQUEST_LEN];
        reused[SIM_REQUEST_MAD_OFFSET..].copy_from_slice(&mad);
        r.head.write(&mut reused);
        assert_eq!(reused, b);
    }

    #[test]
    fn undelivered_status() {
        let mut b = SimRequest {
            head: SimRequestHead {
                dlid: 5,
                slid: 1,
                dqp: 1,
                sqp: 1,
                status: 0,
                length: MAD_LEN as u64,
            },
            mad: [0; MAD_LEN],
        }
        .to_bytes();
        b[16..20].copy_from_slice(&110u32.to_be_bytes());
        assert_eq!(
            SimRequest::parse(&b).unwrap().head.status,
            STATUS_UNDELIVERED
        );
    }

    /// `SimRequestHead::parse` (the server's read of each datagram, before any MAD is touched)
    /// on every length from empty to well past a `sim_request`: nothing but exactly 288 bytes
    /// is one (include/ibsim.h `struct sim_request`: five u32, padding to 24, the u64 context,
    /// 256 bytes of MAD), and no length panics. At 288 bytes it reads the fields from their
    /// offsets, as `SimRequest::parse` does.
    #[test]
    fn request_head_of_any_length() {
        let bytes: Vec<u8> = (0..600u32).map(|i| (i * 7 + 3) as u8).collect();
        for len in 0..=bytes.len() {
            let head = SimRequestHead::parse(&bytes[..len]);
            assert_eq!(head.is_some(), len == SIM_REQUEST_LEN, "length {len}");
            assert_eq!(
                head,
                SimRequest::parse(&bytes[..len]).map(|r| r.head),
                "length {len}"
            );
        }
        let h = SimRequestHead::parse(&bytes[..SIM_REQUEST_LEN]).unwrap();
        // `ntohs((uint16_t)dlid)`: the u32 in host order, its low 16 bits in network order.
        let low16 = |off: usize| {
            let v = u32::from_ne_bytes(bytes[off..off + 4].try_into().unwrap());
            u16::from_be(v as u16)
        };
        assert_eq!((h.dlid, h.slid), (low16(0), low16(4)));
        assert_eq!(h.dqp.to_be_bytes(), bytes[8..12]);
        assert_eq!(h.sqp.to_be_bytes(), bytes[12..16]);
        assert_eq!(h.status.to_be_bytes(), bytes[16..20]);
        assert_eq!(h.length.to_be_bytes(), bytes[24..32]);
    }
}

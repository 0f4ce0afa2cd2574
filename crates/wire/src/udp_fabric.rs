//! The datagrams between a host and the emulated fabric when they run in different processes
//! (`ipoib fabric` and `ipoib attach`, docs/UDP-FABRIC.md): one message per UDP datagram, a
//! 12-byte header and a body whose layout the message type gives.
//!
//! ```text
//!  0 magic(16) = 0x4942 "IB" | version(8) = 2 | type(8)
//!  4 session(64)               chosen by the fabric in AttachAccept; 0 in AttachRequest
//! 12 body
//! ```
//!
//! | type | message        | body                                                                  |
//! |------|----------------|-----------------------------------------------------------------------|
//! | 1    | AttachRequest  | hint node GUID (64; 0 for none), cookie (64; 0 for none), nonce (64)  |
//! | 2    | AttachAccept   | slot(16) port(8) port count n(8) timeout ms(32) node GUID(64) nonce(64) n x port GUID(64) |
//! | 3    | AttachReject   | reason(8), then the request's nonce(64) when it answers a request     |
//! | 4    | Packet         | one InfiniBand packet, LRH through VCRC (IBA 1 §7.7)                  |
//! | 5    | Keepalive      | sequence(32)                                                          |
//! | 6    | KeepaliveAck   | sequence(32) (the Keepalive's)                                        |
//! | 7    | Detach         | empty                                                                 |
//! | 8    | PortConfig     | port(8) state(8) lmc(8) sm_sl(8) lid(16) sm_lid(16) mtu(8) rate(8) P_Key count k(16) subnet prefix(64) k x P_Key(16) |
//! | 9    | ClientReregister | port(8)                                                             |
//! | 10   | SeqPortConfig  | sequence(32), then a PortConfig body                                  |
//! | 11   | SeqClientReregister | sequence(32) port(8)                                             |
//! | 12   | ControlAck     | sequence(32): every sequenced message up to it taken; 0 for none      |
//! | 13   | AttachChallenge | cookie(64): send the AttachRequest again with it; nonce(64)          |
//!
//! PortConfig carries what the subnet manager writes into the host's port (PortInfo and
//! P_KeyTable, IBA 1 §14.2.5.6-7). Until the emulated SM configures ports with SMPs, this message
//! is how that configuration reaches a host in another process; the codes are PortInfo's
//! (PortState 1-4, NeighborMTU, the rate encoding of [`crate::Rate`]). ClientReregister is the
//! event a SubnSet(PortInfo) with ClientReregister 1 raises at the port (IBA 1 §14.4.11): the
//! port's clients register again with the SA.
//!
//! Types 10-12 make those two reliable (docs/UDP-FABRIC.md "Reliable configuration"): the same
//! bodies behind a per-session sequence number, which the host acknowledges cumulatively with
//! ControlAck; a host announces that it takes them by a ControlAck of 0. Types 8 and 9 are
//! unchanged.
//!
//! Type 13 and the cookie make the attach return-routable (docs/UDP-FABRIC.md "Protocol"): the
//! fabric answers a request without a valid cookie with a challenge only, whose cookie the host
//! echoes, as DTLS's HelloVerifyRequest (RFC 6347 §4.2.1) and QUIC's Retry (RFC 9000 §8.1).
//! The nonce goes the other way: the host draws one per attach, and the fabric's challenge,
//! accept and reject echo the request's, so that a sender that does not see the request cannot
//! answer it (as DTLS's ClientHello.random, RFC 6347 §4.2.1). Every answer to an address the
//! fabric has not validated (the challenge, 28 bytes) is smaller than the request (36), so it
//! does not amplify; the request needs no padding. The request's body changed, hence version 2.
//!
//! Across versions the header and the AttachReject (type 3, reason in the body's first byte)
//! keep their layout: the fabric answers a datagram of another version with a reject "bad
//! version" in that datagram's version ([`version_reject`]), and a host reads a reject of
//! another version with [`foreign_reject`], so each side of a mismatch can say so.
//!
//! A host never names its own identity: the fabric assigns the CA slot, node GUID, port GUIDs and
//! session in AttachAccept (the hint is a preference the fabric may ignore).
//!
//! Invariants: [`DatagramRepr::parse`] never panics; a wrong magic is `Malformed`, another version
//! `Unsupported`, unknown types and reasons survive a round trip as `Unknown` codes (their body is
//! kept whole as [`MessageRepr::Unknown`]); multi-byte fields are big-endian.

use crate::keys::PKey;
use crate::sa::{Mtu, Rate};
use crate::types::{be16, be32, be64, put16, put32, put64, Guid};
use crate::{Error, Result};

mod field {
    use core::ops::Range;
    pub const MAGIC: Range<usize> = 0..2;
    pub const VERSION: usize = 2;
    pub const TYPE: usize = 3;
    pub const SESSION: Range<usize> = 4..12;
    pub const BODY: usize = 12;
}

/// The first two bytes of every datagram ("IB").
pub const MAGIC: u16 = 0x4942;
/// The version this module reads and writes (1 had no cookie and no AttachChallenge).
pub const VERSION: u8 = 2;
/// Length of the header.
pub const HEADER_LEN: usize = field::BODY;
/// Fixed part of an AttachAccept body (before the port GUIDs).
const ACCEPT_FIXED: usize = 24;
/// Fixed part of a PortConfig body (before the P_Keys).
const CONFIG_FIXED: usize = 20;
/// An AttachRequest body: hint, cookie and nonce.
const REQUEST_BODY: usize = 24;
/// An AttachChallenge body: the cookie and the nonce.
const CHALLENGE_BODY: usize = 16;
/// Length of an AttachReject datagram without a nonce (every version's layout).
pub const REJECT_LEN: usize = HEADER_LEN + 1;
/// An AttachReject body with the request's nonce.
const REJECT_NONCE_BODY: usize = 9;

code_enum! {
    /// The message type (byte 3).
    pub enum MessageType(u8) {
        /// A host asks for an identity.
        AttachRequest = 1 => "AttachRequest",
        /// The fabric gives one.
        AttachAccept = 2 => "AttachAccept",
        /// The fabric has none to give.
        AttachReject = 3 => "AttachReject",
        /// An InfiniBand packet.
        Packet = 4 => "Packet",
        /// A host says it is alive.
        Keepalive = 5 => "Keepalive",
        /// The fabric answers a Keepalive.
        KeepaliveAck = 6 => "KeepaliveAck",
        /// A host leaves.
        Detach = 7 => "Detach",
        /// The SM's configuration of the host's port.
        PortConfig = 8 => "PortConfig",
        /// The SM asked the host's port's clients to register again (IBA 1 §14.4.11).
        ClientReregister = 9 => "ClientReregister",
        /// A PortConfig behind a sequence number the host acknowledges.
        SeqPortConfig = 10 => "SeqPortConfig",
        /// A ClientReregister behind a sequence number the host acknowledges.
        SeqClientReregister = 11 => "SeqClientReregister",
        /// The host took every sequenced message up to this one (0: none yet).
        ControlAck = 12 => "ControlAck",
        /// The fabric's answer to an AttachRequest without a valid cookie.
        AttachChallenge = 13 => "AttachChallenge",
        /// Any other value.
        Unknown(_) => "Unknown",
    }
}

code_enum! {
    /// Why the fabric refused an attach.
    pub enum RejectReason(u8) {
        /// Every CA slot is taken.
        NoFreeSlot = 1 => "no free slot",
        /// The request's version is not the fabric's.
        BadVersion = 2 => "bad version",
        /// The datagram's session is not (or no longer) the fabric's: attach again (the answer
        /// to a Keepalive after the fabric restarted).
        UnknownSession = 3 => "unknown session",
        /// Any other value.
        Unknown(_) => "Unknown",
    }
}

code_enum! {
    /// Port state as PortInfo:PortState encodes it (IBA 1 §14.2.5.6).
    pub enum PortStateCode(u8) {
        /// Down.
        Down = 1 => "Down",
        /// Init.
        Init = 2 => "Init",
        /// Armed.
        Armed = 3 => "Armed",
        /// Active.
        Active = 4 => "Active",
        /// Any other value.
        Unknown(_) => "Unknown",
    }
}

/// A zero-copy view of a datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Datagram<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Datagram<T> {
    /// Wraps `buffer` without checks.
    pub const fn new_unchecked(buffer: T) -> Self {
        Datagram { buffer }
    }
    /// Wraps `buffer` and checks its header ([`Datagram::check_len`]).
    pub fn new_checked(buffer: T) -> Result<Self> {
        let d = Self::new_unchecked(buffer);
        d.check_len()?;
        Ok(d)
    }
    /// `Err(Truncated)` when shorter than the header.
    pub fn check_len(&self) -> Result<()> {
        if self.buffer.as_ref().len() < HEADER_LEN {
            return Err(Error::Truncated);
        }
        Ok(())
    }
    /// The buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }
    /// Magic.
    pub fn magic(&self) -> u16 {
        be16(self.buffer.as_ref(), field::MAGIC.start)
    }
    /// Version.
    pub fn version(&self) -> u8 {
        self.buffer.as_ref()[field::VERSION]
    }
    /// Message type.
    pub fn msg_type(&self) -> MessageType {
        MessageType::from(self.buffer.as_ref()[field::TYPE])
    }
    /// Session.
    pub fn session(&self) -> u64 {
        be64(self.buffer.as_ref(), field::SESSION.start)
    }
    /// The bytes after the header.
    pub fn body(&self) -> &[u8] {
        &self.buffer.as_ref()[field::BODY..]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Datagram<T> {
    /// Sets magic.
    pub fn set_magic(&mut self, v: u16) {
        put16(self.buffer.as_mut(), field::MAGIC.start, v);
    }
    /// Sets version.
    pub fn set_version(&mut self, v: u8) {
        self.buffer.as_mut()[field::VERSION] = v;
    }
    /// Sets the message type.
    pub fn set_msg_type(&mut self, v: MessageType) {
        self.buffer.as_mut()[field::TYPE] = v.into();
    }
    /// Sets session.
    pub fn set_session(&mut self, v: u64) {
        put64(self.buffer.as_mut(), field::SESSION.start, v);
    }
    /// The bytes after the header, mutably.
    pub fn body_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[field::BODY..]
    }
}

/// The identity the fabric gives a host.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct AttachAccept {
    /// The CA slot: the topology node index of the CA the host stands for.
    pub slot: u16,
    /// The port of that CA the fabric cables (1-based, at most `port_guids.len()`).
    pub port: u8,
    /// How long the fabric waits without hearing from the host before it takes the link down.
    pub timeout_ms: u32,
    /// Node GUID.
    pub node_guid: Guid,
    /// Port GUIDs, port 1 first (1 to 255 of them).
    pub port_guids: Vec<Guid>,
}

/// The SM's configuration of a port (PortInfo and P_KeyTable, IBA 1 §14.2.5.6-7).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PortConfigRepr {
    /// Port number.
    pub port: u8,
    /// PortState.
    pub state: PortStateCode,
    /// LMC.
    pub lmc: u8,
    /// MasterSMSL.
    pub sm_sl: u8,
    /// Base LID.
    pub lid: u16,
    /// MasterSMLID.
    pub sm_lid: u16,
    /// Active MTU.
    pub mtu: Mtu,
    /// Rate.
    pub rate: Rate,
    /// Subnet prefix (GID prefix).
    pub subnet_prefix: u64,
    /// P_Key table, index 0 first.
    pub pkeys: Vec<PKey>,
}

/// One message.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum MessageRepr<'a> {
    /// Host -> fabric: give me an identity (preferably the CA with this node GUID; 0 for none).
    AttachRequest {
        /// Preferred node GUID.
        hint: Guid,
        /// The cookie of the fabric's latest AttachChallenge (0: none yet).
        cookie: u64,
        /// Drawn by the host for this attach; every answer echoes it. Never 0.
        nonce: u64,
    },
    /// Fabric -> host: the identity.
    AttachAccept {
        /// The nonce of the request answered.
        nonce: u64,
        /// The identity.
        accept: AttachAccept,
    },
    /// Fabric -> host: no identity.
    AttachReject {
        /// Why.
        reason: RejectReason,
        /// The nonce of the request answered; 0 (and not on the wire) for a reject that answers
        /// no request (UnknownSession to a Keepalive, "bad version").
        nonce: u64,
    },
    /// Either way: an InfiniBand packet, LRH through VCRC (not checked here).
    Packet(&'a [u8]),
    /// Host -> fabric.
    Keepalive {
        /// Echoed in the answer.
        seq: u32,
    },
    /// Fabric -> host.
    KeepaliveAck {
        /// The Keepalive's.
        seq: u32,
    },
    /// Host -> fabric: the host leaves; its slot is free.
    Detach,
    /// Fabric -> host: the SM's configuration of the host's port.
    PortConfig(PortConfigRepr),
    /// Fabric -> host: a SubnSet(PortInfo) set ClientReregister on this port (IBA 1 §14.4.11).
    ClientReregister {
        /// Port number.
        port: u8,
    },
    /// Fabric -> host: a PortConfig the host acknowledges (sequence numbers start at 1 in a
    /// session and grow by one per sequenced message).
    SeqPortConfig {
        /// The sequence number.
        seq: u32,
        /// The configuration.
        config: PortConfigRepr,
    },
    /// Fabric -> host: a ClientReregister the host acknowledges.
    SeqClientReregister {
        /// The sequence number.
        seq: u32,
        /// Port number.
        port: u8,
    },
    /// Host -> fabric: every sequenced message up to `seq` was taken, in order (0: none yet;
    /// the host takes sequenced messages).
    ControlAck {
        /// The latest sequence number taken.
        seq: u32,
    },
    /// Fabric -> host: ask again with this cookie (the fabric keeps nothing for the request).
    AttachChallenge {
        /// Never 0.
        cookie: u64,
        /// The nonce of the request answered.
        nonce: u64,
    },
    /// A type this module does not know, with its body.
    Unknown {
        /// The type.
        msg_type: u8,
        /// The body.
        body: &'a [u8],
    },
}

impl MessageRepr<'_> {
    /// The type code.
    pub fn msg_type(&self) -> MessageType {
        match self {
            MessageRepr::AttachRequest { .. } => MessageType::AttachRequest,
            MessageRepr::AttachAccept { .. } => MessageType::AttachAccept,
            MessageRepr::AttachReject { .. } => MessageType::AttachReject,
            MessageRepr::Packet(_) => MessageType::Packet,
            MessageRepr::Keepalive { .. } => MessageType::Keepalive,
            MessageRepr::KeepaliveAck { .. } => MessageType::KeepaliveAck,
            MessageRepr::Detach => MessageType::Detach,
            MessageRepr::PortConfig(_) => MessageType::PortConfig,
            MessageRepr::ClientReregister { .. } => MessageType::ClientReregister,
            MessageRepr::SeqPortConfig { .. } => MessageType::SeqPortConfig,
            MessageRepr::SeqClientReregister { .. } => MessageType::SeqClientReregister,
            MessageRepr::ControlAck { .. } => MessageType::ControlAck,
            MessageRepr::AttachChallenge { .. } => MessageType::AttachChallenge,
            MessageRepr::Unknown { msg_type, .. } => MessageType::from(*msg_type),
        }
    }

    fn body_len(&self) -> usize {
        match self {
            MessageRepr::AttachRequest { .. } => REQUEST_BODY,
            MessageRepr::AttachChallenge { .. } => CHALLENGE_BODY,
            MessageRepr::AttachAccept { accept, .. } => ACCEPT_FIXED + 8 * accept.port_guids.len(),
            MessageRepr::AttachReject { nonce: 0, .. } | MessageRepr::ClientReregister { .. } => 1,
            MessageRepr::AttachReject { .. } => REJECT_NONCE_BODY,
            MessageRepr::Packet(p) => p.len(),
            MessageRepr::Keepalive { .. }
            | MessageRepr::KeepaliveAck { .. }
            | MessageRepr::ControlAck { .. } => 4,
            MessageRepr::SeqPortConfig { config, .. } => 4 + CONFIG_FIXED + 2 * config.pkeys.len(),
            MessageRepr::SeqClientReregister { .. } => 5,
            MessageRepr::Detach => 0,
            MessageRepr::PortConfig(c) => CONFIG_FIXED + 2 * c.pkeys.len(),
            MessageRepr::Unknown { body, .. } => body.len(),
        }
    }
}

/// A whole datagram: the session and the message.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct DatagramRepr<'a> {
    /// The session (0 in an AttachRequest and in a reject).
    pub session: u64,
    /// The message.
    pub message: MessageRepr<'a>,
}

fn need(body: &[u8], n: usize) -> Result<()> {
    if body.len() < n {
        Err(Error::Truncated)
    } else {
        Ok(())
    }
}

/// A PortConfig body (the P_Key count agreeing with the length).
fn parse_config(body: &[u8]) -> Result<PortConfigRepr> {
    need(body, CONFIG_FIXED)?;
    let k = usize::from(be16(body, 10));
    need(body, CONFIG_FIXED + 2 * k)?;
    Ok(PortConfigRepr {
        port: body[0],
        state: PortStateCode::from(body[1]),
        lmc: body[2],
        sm_sl: body[3],
        lid: be16(body, 4),
        sm_lid: be16(body, 6),
        mtu: Mtu::from(body[8]),
        rate: Rate::from(body[9]),
        subnet_prefix: be64(body, 12),
        pkeys: (0..k)
            .map(|i| PKey(be16(body, CONFIG_FIXED + 2 * i)))
            .collect(),
    })
}

/// Writes a PortConfig body into `body`, which is long enough (`Malformed` for more than
/// 65,535 P_Keys).
fn emit_config(c: &PortConfigRepr, body: &mut [u8]) -> Result<()> {
    let k = u16::try_from(c.pkeys.len()).map_err(|_| Error::Malformed)?;
    body[0] = c.port;
    body[1] = c.state.into();
    body[2] = c.lmc;
    body[3] = c.sm_sl;
    put16(body, 4, c.lid);
    put16(body, 6, c.sm_lid);
    body[8] = c.mtu.into();
    body[9] = c.rate.into();
    put16(body, 10, k);
    put64(body, 12, c.subnet_prefix);
    for (i, p) in c.pkeys.iter().enumerate() {
        put16(body, CONFIG_FIXED + 2 * i, p.0);
    }
    Ok(())
}

impl<'a> DatagramRepr<'a> {
    /// Parses a datagram. `Malformed` for a wrong magic or a body whose counts disagree with its
    /// length or whose port is not among its ports; `Unsupported` for another version;
    /// `Truncated` when bytes are missing (an AttachReject body of 2 to 8 bytes among them).
    /// Bytes past a fixed-length body are ignored.
    pub fn parse(data: &'a [u8]) -> Result<DatagramRepr<'a>> {
        let d = Datagram::new_checked(data)?;
        if d.magic() != MAGIC {
            return Err(Error::Malformed);
        }
        if d.version() != VERSION {
            return Err(Error::Unsupported);
        }
        let body = &data[field::BODY..];
        let message = match d.msg_type() {
            MessageType::AttachRequest => {
                need(body, REQUEST_BODY)?;
                MessageRepr::AttachRequest {
                    hint: Guid(be64(body, 0)),
                    cookie: be64(body, 8),
                    nonce: be64(body, 16),
                }
            }
            MessageType::AttachAccept => {
                need(body, ACCEPT_FIXED)?;
                let port = body[2];
                let n = usize::from(body[3]);
                if n == 0 || port == 0 || usize::from(port) > n {
                    return Err(Error::Malformed);
                }
                need(body, ACCEPT_FIXED + 8 * n)?;
                let port_guids = (0..n)
                    .map(|i| Guid(be64(body, ACCEPT_FIXED + 8 * i)))
                    .collect();
                MessageRepr::AttachAccept {
                    nonce: be64(body, 16),
                    accept: AttachAccept {
                        slot: be16(body, 0),
                        port,
                        timeout_ms: be32(body, 4),
                        node_guid: Guid(be64(body, 8)),
                        port_guids,
                    },
                }
            }
            MessageType::AttachReject => {
                need(body, 1)?;
                let nonce = if body.len() > 1 {
                    need(body, REJECT_NONCE_BODY)?;
                    be64(body, 1)
                } else {
                    0
                };
                MessageRepr::AttachReject {
                    reason: RejectReason::from(body[0]),
                    nonce,
                }
            }
            MessageType::Packet => MessageRepr::Packet(body),
            MessageType::Keepalive => {
                need(body, 4)?;
                MessageRepr::Keepalive { seq: be32(body, 0) }
            }
            MessageType::KeepaliveAck => {
                need(body, 4)?;
                MessageRepr::KeepaliveAck { seq: be32(body, 0) }
            }
            MessageType::Detach => MessageRepr::Detach,
            MessageType::PortConfig => MessageRepr::PortConfig(parse_config(body)?),
            MessageType::ClientReregister => {
                need(body, 1)?;
                MessageRepr::ClientReregister { port: body[0] }
            }
            MessageType::SeqPortConfig => {
                need(body, 4)?;
                MessageRepr::SeqPortConfig {
                    seq: be32(body, 0),
                    config: parse_config(&body[4..])?,
                }
            }
            MessageType::SeqClientReregister => {
                need(body, 5)?;
                MessageRepr::SeqClientReregister {
                    seq: be32(body, 0),
                    port: body[4],
                }
            }
            MessageType::ControlAck => {
                need(body, 4)?;
                MessageRepr::ControlAck { seq: be32(body, 0) }
            }
            MessageType::AttachChallenge => {
                need(body, CHALLENGE_BODY)?;
                MessageRepr::AttachChallenge {
                    cookie: be64(body, 0),
                    nonce: be64(body, 8),
                }
            }
            MessageType::Unknown(t) => MessageRepr::Unknown { msg_type: t, body },
        };
        Ok(DatagramRepr {
            session: d.session(),
            message,
        })
    }

    /// Bytes [`DatagramRepr::emit`] writes.
    pub fn buffer_len(&self) -> usize {
        HEADER_LEN + self.message.body_len()
    }

    /// Writes the datagram into the start of `buf`. `Truncated` when `buf` is shorter than
    /// [`DatagramRepr::buffer_len`]; `Malformed` for a message the format cannot carry (no port
    /// GUID or more than 255, a port outside them, more than 65,535 P_Keys).
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize> {
        let len = self.buffer_len();
        if buf.len() < len {
            return Err(Error::Truncated);
        }
        let mut d = Datagram::new_unchecked(&mut buf[..len]);
        d.set_magic(MAGIC);
        d.set_version(VERSION);
        d.set_msg_type(self.message.msg_type());
        d.set_session(self.session);
        let body = d.body_mut();
        match &self.message {
            MessageRepr::AttachRequest {
                hint,
                cookie,
                nonce,
            } => {
                put64(body, 0, hint.0);
                put64(body, 8, *cookie);
                put64(body, 16, *nonce);
            }
            MessageRepr::AttachChallenge { cookie, nonce } => {
                put64(body, 0, *cookie);
                put64(body, 8, *nonce);
            }
            MessageRepr::AttachAccept { nonce, accept: a } => {
                let n = u8::try_from(a.port_guids.len()).map_err(|_| Error::Malformed)?;
                if n == 0 || a.port == 0 || a.port > n {
                    return Err(Error::Malformed);
                }
                put16(body, 0, a.slot);
                body[2] = a.port;
                body[3] = n;
                put32(body, 4, a.timeout_ms);
                put64(body, 8, a.node_guid.0);
                put64(body, 16, *nonce);
                for (i, g) in a.port_guids.iter().enumerate() {
                    put64(body, ACCEPT_FIXED + 8 * i, g.0);
                }
            }
            MessageRepr::AttachReject { reason, nonce } => {
                body[0] = (*reason).into();
                if *nonce != 0 {
                    put64(body, 1, *nonce);
                }
            }
            MessageRepr::Packet(p) => body.copy_from_slice(p),
            MessageRepr::Keepalive { seq }
            | MessageRepr::KeepaliveAck { seq }
            | MessageRepr::ControlAck { seq } => put32(body, 0, *seq),
            MessageRepr::Detach => {}
            MessageRepr::PortConfig(c) => emit_config(c, body)?,
            MessageRepr::ClientReregister { port } => body[0] = *port,
            MessageRepr::SeqPortConfig { seq, config } => {
                put32(body, 0, *seq);
                emit_config(config, &mut body[4..])?;
            }
            MessageRepr::SeqClientReregister { seq, port } => {
                put32(body, 0, *seq);
                body[4] = *port;
            }
            MessageRepr::Unknown { body: b, .. } => body.copy_from_slice(b),
        }
        Ok(len)
    }

    /// The datagram as a new vector (`Malformed` as [`DatagramRepr::emit`]).
    pub fn to_vec(&self) -> Result<Vec<u8>> {
        let mut v = vec![0; self.buffer_len()];
        self.emit(&mut v)?;
        Ok(v)
    }
}

/// An AttachReject "bad version" in `version`'s header (session 0), the fabric's answer to a
/// datagram of that version: every version so far lays out the header and the reject alike.
pub fn version_reject(version: u8) -> [u8; REJECT_LEN] {
    let mut v = [0; REJECT_LEN];
    let mut d = Datagram::new_unchecked(&mut v[..]);
    d.set_magic(MAGIC);
    d.set_version(version);
    d.set_msg_type(MessageType::AttachReject);
    d.body_mut()[0] = RejectReason::BadVersion.into();
    v
}

/// A datagram of another version that is an AttachReject: that version and the reason (a
/// fabric of version 1 answers this version's request so). `None` for anything else.
pub fn foreign_reject(data: &[u8]) -> Option<(u8, RejectReason)> {
    let d = Datagram::new_checked(data).ok()?;
    let reject =
        d.magic() == MAGIC && d.version() != VERSION && d.msg_type() == MessageType::AttachReject;
    let reason = *d.body().first()?;
    reject.then(|| (d.version(), RejectReason::from(reason)))
}

#[cfg(test)]
mod tests;

//! What every subnet management agent (SMA, IBA 1 chapter 14) and performance management agent
//! (PMA, IBA 1 §16.1) of this fabric shares, whatever device it lives in: the directed-route
//! hop rules ([`dr`], §14.2.2), M_Key protection ([`mkey`], §14.2.4), the per-port traffic
//! counters a PMA reports ([`pma`], §16.1.3.5) and the framing of the agents' packets (SMPs on
//! VL15 from QP0, GMPs from QP1). The agents themselves live with their hardware: the switch's in
//! `crate::hw::switch` (module `sma`, management port 0), the HCA's on QP0 of every port in
//! `crate::hw::hca` (module `sma`).
//!
//! Both agents write the same device state the subnet manager's `crate::hw::mgmt::Config`
//! values write (LID, SM LID, port state, MTU, P_Keys, LFT, MFT): one state, two ways to
//! write it.
//!
//! Invariants: no SMP, however malformed, panics; an SMP the agent does not answer is counted
//! (the device's drop counters) and dropped.

pub mod dr;
pub mod mkey;
pub mod pma;
pub mod port_set;

pub use dr::DrStep;
pub use mkey::{MKeyCheck, MKeyGuard};
pub use pma::PortTraffic;

use crate::hw::sim::Frame;
use ipoib_wire::ib::{BthRepr, DethRepr, LrhRepr, Opcode, ICRC_LEN, VCRC_LEN};
use ipoib_wire::mad::MAD_LEN;
use ipoib_wire::mad::{BadMKeyTrap, MadHeaderRepr, MadStatus, Method, TRAP_256_PATH_LEN};
use ipoib_wire::packet::{ud_local_headers, PacketRepr, UD_LOCAL_PAYLOAD_OFFSET};
use ipoib_wire::smp::{SmpMadRepr, SmpRoute, SMP_CLASS_VERSION};
use ipoib_wire::{PKey, QKey};

/// True for the methods an SMA answers or takes (IBA 1 §14.2.3 Table 134: SubnGet, SubnSet,
/// SubnTrapRepress); the others (GetResp, Trap) go to the SM on QP0.
pub fn is_agent_method(m: Method) -> bool {
    matches!(m, Method::Get | Method::Set | Method::TrapRepress)
}

/// The status a request is answered with before its attribute is looked at (IBA 1 §13.4.7
/// Table 113): a ClassVersion other than 1 is a bad version (0x0004); a request method the SMA
/// does not have (Send, Report, GetTable..., anything but Get and Set here) is unsupported
/// (0x0008). `None`: answer by the attribute.
pub fn header_status(h: &MadHeaderRepr) -> Option<MadStatus> {
    if h.class_version != SMP_CLASS_VERSION {
        return Some(MadStatus::BAD_VERSION);
    }
    (!matches!(h.method, Method::Get | Method::Set)).then_some(MadStatus::METHOD_UNSUPPORTED)
}

/// True for a request method an SMA answers with "method unsupported" rather than passing it on:
/// not a response, not a Trap (for an SM) and not one the SMA takes (IBA 1 §13.4.7).
pub fn is_unsupported_request(m: Method) -> bool {
    !m.is_response() && !matches!(m, Method::Trap) && !is_agent_method(m)
}

/// An SMP packet: VL15, QP0 to QP0, the default P_Key, Q_Key 0 (IBA 1 §14.2.1, §7.6.3: SMPs
/// travel on VL15 and QP0 checks no Q_Key or P_Key).
pub fn smp_packet(slid: u16, dlid: u16, sl: u8, mad: &[u8]) -> Vec<u8> {
    smp_packet_in(Vec::new(), slid, dlid, sl, mad)
}

/// [`smp_packet`] written into `buf`'s allocation (a spent packet's: its bytes are all
/// overwritten), so that a device answering SMPs allocates no buffer per answer.
pub fn smp_packet_in(buf: Vec<u8>, slid: u16, dlid: u16, sl: u8, mad: &[u8]) -> Vec<u8> {
    emit(buf, &smp_repr(slid, dlid, sl, mad))
}

/// [`smp_packet_in`] for a device of the emulation: its CRCs pending, written when the bytes
/// leave the emulation's receivers ([`Frame`]). A spent packet's bytes are written over, not
/// zeroed first: `emit_without_crcs` writes every byte up to the VCRC (as in `hca::ud::emit`).
pub fn smp_frame_in(mut buf: Vec<u8>, slid: u16, dlid: u16, sl: u8, mad: &[u8]) -> Frame {
    // A whole MAD (every SMP's length): copied where an SMP packet's payload starts, the
    // headers written around it.
    if mad.len() == MAD_LEN {
        // Room for the whole packet at once, and no more: `smp_frame_around` grows it no
        // further, and a device keeps the allocation for its next answer (grown in two steps
        // it was 584 bytes at every HCA).
        buf.reserve_exact(
            (UD_LOCAL_PAYLOAD_OFFSET + MAD_LEN + ICRC_LEN + VCRC_LEN).saturating_sub(buf.len()),
        );
        buf.resize(UD_LOCAL_PAYLOAD_OFFSET + MAD_LEN, 0);
        buf[UD_LOCAL_PAYLOAD_OFFSET..].copy_from_slice(mad);
        return match smp_frame_around(buf, slid, dlid, sl) {
            Ok(frame) => frame,
            Err(_) => Frame::new(Vec::new()),
        };
    }
    let r = smp_repr(slid, dlid, sl, mad);
    buf.resize(r.buffer_len(), 0);
    // A 256-byte MAD always fits PktLen, and the extended headers are those of UD SEND Only;
    // were it not so, the empty frame would be dropped as malformed by its receiver.
    match r.emit_without_crcs(&mut buf) {
        Ok(n) => {
            buf.truncate(n);
            Frame::with_crcs_pending(buf)
        }
        Err(_) => Frame::new(Vec::new()),
    }
}

/// [`smp_frame_in`] of the MAD `buf` holds already where an SMP packet's payload starts (an
/// answer the agent wrote over its request, `ipoib_wire::smp::SmpMad::respond_in_place`): the
/// headers, pad and CRC fields written around it (the buffer cut or grown to the packet's
/// length), the same bytes without copying the MAD. `Err(buf)` when `buf` is too short to hold
/// that MAD (nothing written).
pub fn smp_frame_around(mut buf: Vec<u8>, slid: u16, dlid: u16, sl: u8) -> Result<Frame, Vec<u8>> {
    const MAD_END: usize = UD_LOCAL_PAYLOAD_OFFSET + MAD_LEN;
    if buf.len() < MAD_END {
        return Err(buf);
    }
    // A 256-byte MAD needs no pad (IBA 1 §9.2: to a multiple of 4 bytes); the ICRC and VCRC
    // fields are zero until the CRCs are written.
    buf.resize(MAD_END + ICRC_LEN + VCRC_LEN, 0);
    buf[..UD_LOCAL_PAYLOAD_OFFSET].copy_from_slice(&smp_headers(slid, dlid, sl));
    buf[MAD_END..].fill(0);
    Ok(Frame::with_crcs_pending(buf))
}

/// The LRH, BTH and DETH of an SMP packet with a 256-byte MAD (IBA 1 §7.7, §9.2, §9.3.3): the
/// bytes `PacketRepr::emit_without_crcs` writes for [`smp_repr`]'s packet before its payload,
/// by the wire crate's header writer for UD SEND Only packets without GRH (a proptest holds the
/// two to each other).
/// VL15, LVer 0, LNH IBA local, PktLen in words up to the ICRC; UD SEND Only, no SE, MigReq,
/// pad or TVer, the default P_Key, QP0, PSN 0; Q_Key 0 from QP0.
fn smp_headers(slid: u16, dlid: u16, sl: u8) -> [u8; UD_LOCAL_PAYLOAD_OFFSET] {
    const PKT_LEN: u16 = ((UD_LOCAL_PAYLOAD_OFFSET + MAD_LEN + ICRC_LEN) / 4) as u16;
    let (lrh, bth, deth) = smp_header_reprs(slid, dlid, sl);
    ud_local_headers(&lrh, &bth, &deth, 0, PKT_LEN)
}

/// The LRH, BTH and DETH of an SMP packet (above).
fn smp_header_reprs(slid: u16, dlid: u16, sl: u8) -> (LrhRepr, BthRepr, DethRepr) {
    let lrh = LrhRepr::local(15, sl, dlid, slid);
    let bth = BthRepr::new(Opcode::UD_SEND_ONLY, PKey::DEFAULT, 0, 0);
    let deth = DethRepr {
        qkey: QKey(0),
        src_qp: 0,
    };
    (lrh, bth, deth)
}

fn smp_repr(slid: u16, dlid: u16, sl: u8, mad: &[u8]) -> PacketRepr<'_> {
    let (lrh, bth, deth) = smp_header_reprs(slid, dlid, sl);
    PacketRepr::ud_send_only(lrh, None, bth, deth, mad)
}

/// A GMP from QP1 to `dest_qp` (IBA 1 §13.5.1: QP1 sends with Q_Key 0x80010000), on VL0.
pub fn gmp_packet(slid: u16, dlid: u16, sl: u8, pkey: PKey, dest_qp: u32, mad: &[u8]) -> Vec<u8> {
    let lrh = LrhRepr::local(0, sl, dlid, slid);
    let bth = BthRepr::new(Opcode::UD_SEND_ONLY, pkey, dest_qp, 0);
    let deth = DethRepr {
        qkey: QKey::GSI,
        src_qp: 1,
    };
    emit(
        Vec::new(),
        &PacketRepr::ud_send_only(lrh, None, bth, deth, mad),
    )
}

fn emit(mut b: Vec<u8>, r: &PacketRepr<'_>) -> Vec<u8> {
    b.clear();
    b.resize(r.buffer_len(), 0);
    // A 256-byte MAD always fits PktLen, and the extended headers are those of UD SEND Only.
    match r.emit(&mut b) {
        Ok(n) => b.truncate(n),
        Err(_) => b.clear(),
    }
    b
}

use crate::hw::mgmt::PortState;
use ipoib_wire::smp::{PortPhysState, PortState as WireState};
use ipoib_wire::Mtu;

/// The largest MTU a port of this fabric runs (PortInfo:MTUCap), unless its cable is narrower:
/// a topology link's MTU is the MTUCap of both its ends (`Hca` port `mtu_cap`,
/// `Switch::set_port_mtu_cap`), what an SM reads to set NeighborMTU (IBA 1 §14.2.5.6).
pub const MTU_CAP: Mtu = Mtu::Mtu4096;

/// PortInfo:VLCap and OperationalVLs of every port of this fabric: code 1, data VL 0 only (IBA 1
/// §14.2.5.6: 1 = VL0, 2 = VL0-1, 3 = VL0-3, 4 = VL0-7, 5 = VL0-14), beside VL15, which every
/// port has for subnet management (IBA 1 §7.6.3). Hosts send data on VL0, and an SM writes no
/// OperationalVLs above VLCap, so the value holds from power-on, before any SM, onwards.
pub const OPERATIONAL_VLS: u8 = 1;

/// The data VLs an OperationalVLs (or VLCap) code names, counted from VL0 (IBA 1 §14.2.5.6);
/// 0 for a reserved code.
pub fn data_vls(code: u8) -> u8 {
    match code {
        1..=4 => 1 << (code - 1),
        5 => 15,
        _ => 0,
    }
}

/// The receive checks of a port's link layer that follow the CRCs' (IBA 1 §7.7, §7.9; the
/// "malformed data packet errors (LVer, length, VL)" of PortRcvErrors, §16.1.3.5): true for a
/// packet on a data VL the port does not operate (at or past its OperationalVLs; VL15 always
/// passes), or whose payload (after the transport headers, without pad and ICRC; for a raw
/// packet everything between LRH and VCRC) is larger than the port's MTUCap, the largest MTU it
/// can receive. A port discards such a packet and counts it in PortRcvErrors, as it does a bad
/// CRC, in any port state (docs/PERF-COUNTERS.md "Malformed data packets").
pub fn rcv_malformed(vl: u8, payload: usize, mtu_cap: Mtu) -> bool {
    let vl_ok = vl == 15 || vl < data_vls(OPERATIONAL_VLS);
    let fits = mtu_cap.bytes().is_some_and(|m| payload <= m as usize);
    !vl_ok || !fits
}

/// A port state as PortInfo:PortState carries it.
pub fn wire_state(s: PortState) -> WireState {
    match s {
        PortState::Down => WireState::Down,
        PortState::Init => WireState::Init,
        PortState::Armed => WireState::Armed,
        PortState::Active => WireState::Active,
    }
}

/// PortInfo:PortPhysicalState of a port whose cable is (not) up.
pub fn phys_state(up: bool) -> PortPhysState {
    if up {
        PortPhysState::LinkUp
    } else {
        PortPhysState::Polling
    }
}

/// What a SubnSet(PortInfo) PortPhysicalState asks of a port's link (IBA 1 §14.2.5.6, §5.6.2.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PhysRequest {
    /// No state change (0, and any value a Set does not act on).
    Keep,
    /// 2, Polling: a disabled port is switched on again and its link trains (`ibportstate
    /// enable`).
    Enable,
    /// 3, Disabled: the port is switched off, its link goes down (`ibportstate disable`).
    Disable,
}

/// The request of a PortPhysicalState written by a SubnSet(PortInfo), the same for a switch
/// port and a CA port: 2 (Polling) enables, 3 (Disabled) disables; 0 (no state change) and every
/// other value change nothing and the Set succeeds. IBA 1 §14.2.5.6 (PortInfo's table, as Linux's
/// hfi1 driver quotes it) makes only 0-3 valid to write and has other values ignored, not
/// refused; ibsim refuses none either (it stores what was written), and a read-modify-write of
/// PortInfo writes back the LinkUp (5) it read (docs/OPENSM-NOTES.md "PortPhysicalState values a
/// Set may carry"). Sleep (1) is not modelled.
pub fn phys_request(written: PortPhysState) -> PhysRequest {
    match written {
        PortPhysState::Polling => PhysRequest::Enable,
        PortPhysState::Disabled => PhysRequest::Disable,
        _ => PhysRequest::Keep,
    }
}

/// The state a SubnSet(PortInfo) writing `written` leaves a port in (IBA 1 §14.2.5.6 PortState,
/// §7.2 Figure 38): NoStateChange keeps it; Down takes the link down, and with the cable still
/// there it retrains straight back to Init; Armed only from Init (or Armed), Active only from Armed
/// (or Active). Any other value or transition is invalid (`None`): the SMA answers with status
/// 0x001C and changes nothing.
pub fn port_state_after_set(
    current: PortState,
    link_up: bool,
    written: WireState,
) -> Option<PortState> {
    match written {
        WireState::NoStateChange => Some(current),
        WireState::Down => Some(if link_up {
            PortState::Init
        } else {
            PortState::Down
        }),
        WireState::Armed if matches!(current, PortState::Init | PortState::Armed) => {
            Some(PortState::Armed)
        }
        WireState::Active if matches!(current, PortState::Armed | PortState::Active) => {
            Some(PortState::Active)
        }
        _ => None,
    }
}

/// A NeighborMTU a SubnSet(PortInfo) may write on a port whose MTUCap is `cap`: a defined code
/// no larger than `cap` (IBA 1 §14.2.5.6).
pub fn mtu_ok(m: Mtu, cap: Mtu) -> bool {
    m.is_valid() && m.bytes() <= cap.bytes()
}

/// The DataDetails of trap 256 (Bad M_Key, IBA 1 §14.2.4.1, §14.2.5.1 Table 131) for `req`, an
/// SMP that failed the M_Key check of the port at `lid`: LIDADDR is that LID (as Linux's
/// `qib_bad_mkey` fills it, docs/DEPLOYED.md); the SMP's Method, AttributeID, AttributeModifier
/// and M_Key; for a directed-route SMP its DRSLID, HopCount and ReturnPath from entry 0, up to
/// 30 entries (DRPathTruncated beyond), so that entry i is still hop i.
pub fn bad_mkey_details(req: &SmpMadRepr, lid: u16) -> BadMKeyTrap {
    let mut t = BadMKeyTrap {
        lid,
        method: u8::from(req.header.method),
        attribute_id: req.header.attribute_id,
        attribute_modifier: req.header.attribute_modifier,
        mkey: req.mkey,
        ..BadMKeyTrap::default()
    };
    if let SmpRoute::Directed(d) = &req.route {
        let hops = req.hop_count().unwrap_or(0);
        t.dr_slid = d.dr_slid;
        t.dr_notice = true;
        let n = usize::from(hops) + 1;
        t.dr_path_truncated = n > TRAP_256_PATH_LEN;
        t.dr_hop_count = hops & 0x3f;
        let n = n.min(TRAP_256_PATH_LEN);
        t.dr_return_path[..n].copy_from_slice(&d.return_path[..n]);
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The framing as the emitter writes it ([`smp_repr`] through
    /// `PacketRepr::emit_around_payload_without_crcs`), the oracle of [`smp_frame_around`].
    fn around_by_emitter(mut buf: Vec<u8>, slid: u16, dlid: u16, sl: u8) -> Vec<u8> {
        buf.resize(UD_LOCAL_PAYLOAD_OFFSET + MAD_LEN + ICRC_LEN + VCRC_LEN, 0);
        let n = smp_repr(slid, dlid, sl, &[])
            .emit_around_payload_without_crcs(&mut buf, MAD_LEN)
            .unwrap();
        buf.truncate(n);
        buf
    }

    proptest! {
        // The headers written from their values are the emitter's bytes, over any LIDs and SL
        // (an SL over 15 too) and any stale buffer at least as long as the MAD's end, and the
        // MAD in place is kept; a shorter buffer is given back untouched.
        #[test]
        fn smp_frame_around_writes_the_emitters_bytes(
            slid: u16,
            dlid: u16,
            sl: u8,
            stale in proptest::collection::vec(any::<u8>(), 0..400),
        ) {
            let short = stale.len() < UD_LOCAL_PAYLOAD_OFFSET + MAD_LEN;
            match smp_frame_around(stale.clone(), slid, dlid, sl) {
                Ok(frame) => {
                    prop_assert!(!short);
                    prop_assert!(frame.crcs_good());
                    prop_assert_eq!(&frame[..], &around_by_emitter(stale, slid, dlid, sl)[..]);
                }
                Err(back) => {
                    prop_assert!(short);
                    prop_assert_eq!(back, stale);
                }
            }
        }

        // A whole MAD framed into a spent buffer: the bytes of the general emitter.
        #[test]
        fn smp_frame_in_writes_the_emitters_bytes(
            slid: u16,
            dlid: u16,
            sl: u8,
            mad in proptest::collection::vec(any::<u8>(), MAD_LEN),
            stale in proptest::collection::vec(any::<u8>(), 0..400),
        ) {
            let frame = smp_frame_in(stale, slid, dlid, sl, &mad);
            let mut want = vec![0; UD_LOCAL_PAYLOAD_OFFSET + MAD_LEN + ICRC_LEN + VCRC_LEN];
            let n = smp_repr(slid, dlid, sl, &mad).emit_without_crcs(&mut want).unwrap();
            want.truncate(n);
            prop_assert!(frame.crcs_good());
            prop_assert_eq!(&frame[..], &want[..]);
        }
    }
}

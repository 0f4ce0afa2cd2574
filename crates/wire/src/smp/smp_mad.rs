//! A whole SMP as one value ([`SmpMadRepr`]): the common MAD header, M_Key, the directed-route
//! fields when the class is SubnDirectedRoute, and the 64-byte attribute (IBA 1 §14.2.1):
//!
//! ```text
//!     LID routed (§14.2.1.1)          directed route (§14.2.1.2)
//! 0   common MAD header (24)          common header; bytes 4-7 are D(1) Status(15) |
//!                                     HopPointer(8) | HopCount(8)
//! 24  M_Key(64)                       M_Key(64)
//! 32  Reserved(256)                   DrSLID(16) | DrDLID(16) | Reserved(224)
//! 64  SMP data (64 bytes)             SMP data (64 bytes)
//! 128 Reserved(1024)                  InitialPath (64 bytes)
//! 192                                 ReturnPath (64 bytes)
//! ```

use super::forwarding::{LftBlockRepr, MftBlockRepr};
use super::node_info::NodeInfoRepr;
use super::port_info::PortInfoRepr;
use super::sm_info::SmInfoRepr;
use super::switch_info::SwitchInfoRepr;
use super::tables::{
    GuidInfoRepr, NodeDescriptionRepr, PKeyTableRepr, SlToVlTableRepr, VlArbTableRepr,
};
use crate::describe::{Describe, Describer, Value};
use crate::mad::attr::smp as attr;
use crate::mad::NoticeRepr;
use crate::mad::{
    Mad, MadHeaderRepr, MadStatus, Method, MgmtClass, BASE_VERSION, MAD_HEADER_LEN, MAD_LEN,
};
use crate::types::{be16, be64, put16, put64};
use crate::{Error, Result};

mod field {
    use core::ops::Range;
    /// D bit (directed route) in the high bit of the Status field.
    pub const STATUS: usize = 4;
    pub const HOP_POINTER: usize = 6;
    pub const HOP_COUNT: usize = 7;
    pub const M_KEY: usize = 24;
    pub const DR_SLID: usize = 32;
    pub const DR_DLID: usize = 34;
    pub const DR_RESERVED: Range<usize> = 36..64;
    pub const LID_RESERVED: Range<usize> = 32..64;
    pub const DATA: Range<usize> = 64..128;
    pub const INITIAL_PATH: Range<usize> = 128..192;
    pub const RETURN_PATH: Range<usize> = 192..256;
}

/// Length of the SMP data: every SMP attribute fits in it.
pub const SMP_DATA_LEN: usize = 64;
/// Length of a directed-route path (InitialPath, ReturnPath): one byte per hop, index 0 unused.
pub const SMP_PATH_LEN: usize = 64;
/// ClassVersion of the subnet management classes (IBA 1 §14.2.1).
pub const SMP_CLASS_VERSION: u8 = 1;
/// The direction bit D of a directed-route SMP's status: set in responses (IBA 1 §14.2.2).
pub const DIRECTION_BIT: u16 = MadStatus::DIRECTION.0;

fixed_view! {
    /// A zero-copy view of an SMP in either form.
    #[derive(Debug, Clone)]
    pub struct SmpMad;
    /// `Err(Truncated)` unless the buffer holds a whole 256-byte MAD.
    fn check_len(min = MAD_LEN);
    fn b;
}

impl<T: AsRef<[u8]>> SmpMad<T> {
    /// The common MAD header.
    pub fn mad(&self) -> Mad<&[u8]> {
        Mad::new_unchecked(self.b())
    }
    /// True for the directed-route class.
    pub fn is_directed(&self) -> bool {
        self.mad().mgmt_class() == MgmtClass::SubnDirectedRoute
    }
    /// Directed route: the direction bit D (set on the way back).
    pub fn direction(&self) -> bool {
        be16(self.b(), field::STATUS) & DIRECTION_BIT != 0
    }
    /// Directed route: the 15-bit status.
    pub fn dr_status(&self) -> u16 {
        be16(self.b(), field::STATUS) & !DIRECTION_BIT
    }
    /// Directed route: HopPointer.
    pub fn hop_pointer(&self) -> u8 {
        self.b()[field::HOP_POINTER]
    }
    /// Directed route: HopCount.
    pub fn hop_count(&self) -> u8 {
        self.b()[field::HOP_COUNT]
    }
    /// M_Key.
    pub fn mkey(&self) -> u64 {
        be64(self.b(), field::M_KEY)
    }
    /// Directed route: DrSLID.
    pub fn dr_slid(&self) -> u16 {
        be16(self.b(), field::DR_SLID)
    }
    /// Directed route: DrDLID.
    pub fn dr_dlid(&self) -> u16 {
        be16(self.b(), field::DR_DLID)
    }
    /// The 64 bytes of SMP data (the attribute).
    pub fn smp_data(&self) -> &[u8] {
        &self.b()[field::DATA]
    }
    /// Directed route: InitialPath.
    pub fn initial_path(&self) -> &[u8] {
        &self.b()[field::INITIAL_PATH]
    }
    /// Directed route: ReturnPath.
    pub fn return_path(&self) -> &[u8] {
        &self.b()[field::RETURN_PATH]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> SmpMad<T> {
    fn m(&mut self) -> &mut [u8] {
        self.buffer.as_mut()
    }
    /// Directed route: sets HopPointer.
    pub fn set_hop_pointer(&mut self, v: u8) {
        self.m()[field::HOP_POINTER] = v;
    }
    /// Directed route: sets or clears the direction bit D, keeping the 15-bit status.
    pub fn set_direction(&mut self, d: bool) {
        let s = be16(self.b(), field::STATUS) & !DIRECTION_BIT;
        put16(
            self.m(),
            field::STATUS,
            s | if d { DIRECTION_BIT } else { 0 },
        );
    }
    /// Sets M_Key.
    pub fn set_mkey(&mut self, v: u64) {
        put64(self.m(), field::M_KEY, v);
    }
    /// Directed route: sets DrSLID and DrDLID and zeroes the reserved bytes after them.
    pub fn set_dr_lids(&mut self, slid: u16, dlid: u16) {
        put16(self.m(), field::DR_SLID, slid);
        put16(self.m(), field::DR_DLID, dlid);
        self.m()[field::DR_RESERVED].fill(0);
    }
    /// LID routed: zeroes the reserved bytes between M_Key and the data and after the data.
    pub fn clear_lid_reserved(&mut self) {
        self.m()[field::LID_RESERVED].fill(0);
        self.m()[field::INITIAL_PATH.start..field::RETURN_PATH.end].fill(0);
    }
    /// The SMP data, writable.
    pub fn smp_data_mut(&mut self) -> &mut [u8] {
        &mut self.m()[field::DATA]
    }
    /// Directed route: InitialPath, writable.
    pub fn initial_path_mut(&mut self) -> &mut [u8] {
        &mut self.m()[field::INITIAL_PATH]
    }
    /// Directed route: ReturnPath, writable.
    pub fn return_path_mut(&mut self) -> &mut [u8] {
        &mut self.m()[field::RETURN_PATH]
    }

    /// Turns the request this view holds into its response with `method`, `status` and
    /// `attribute`, in place: the bytes [`SmpMadRepr::get_response`] of the parsed request,
    /// with `method`, emits (IBA 1 §13.4.6.2: the versions, TransactionID, AttributeID and
    /// AttributeModifier echoed; §14.2.2: D set in a directed-route response), without building
    /// the value: Method and Status written, the header's and the route's reserved bytes
    /// zeroed, the attribute written over the data; M_Key, DrSLID, DrDLID and the paths stay.
    /// `Err(Unsupported)` for a class neither SubnLid nor SubnDirectedRoute (nothing written).
    pub fn respond_in_place(
        &mut self,
        method: Method,
        status: MadStatus,
        attribute: &SmpAttribute,
    ) -> Result<()> {
        let status = match self.mad().mgmt_class() {
            MgmtClass::SubnLid => {
                self.clear_lid_reserved();
                status
            }
            MgmtClass::SubnDirectedRoute => {
                self.m()[field::DR_RESERVED].fill(0);
                MadStatus(status.0 | DIRECTION_BIT)
            }
            _ => return Err(Error::Unsupported),
        };
        let mut h = Mad::new_unchecked(&mut self.m()[..MAD_HEADER_LEN]);
        h.set_method(method);
        h.set_status(status);
        h.set_reserved(0);
        attribute.emit(self.smp_data_mut());
        Ok(())
    }
}

/// The directed-route fields after M_Key (IBA 1 §14.2.1.2). The D bit, the 15-bit status,
/// HopPointer and HopCount live in the common header's Status and ClassSpecific fields; see
/// [`SmpMadRepr::direction`], [`SmpMadRepr::hop_pointer`], [`SmpMadRepr::hop_count`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DirectedRoute {
    /// DrSLID.
    pub dr_slid: u16,
    /// DrDLID.
    pub dr_dlid: u16,
    /// InitialPath: the port to leave by at each hop.
    pub initial_path: [u8; SMP_PATH_LEN],
    /// ReturnPath: the ports the response goes back by.
    pub return_path: [u8; SMP_PATH_LEN],
}

/// How an SMP is routed (IBA 1 §14.2.1): by the class.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SmpRoute {
    /// SubnLid: by the LRH's LIDs.
    Lid,
    /// SubnDirectedRoute: hop by hop.
    Directed(DirectedRoute),
}

/// The attribute an SMP carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SmpAttribute {
    /// NodeInfo (IBA 1 §14.2.5.3).
    NodeInfo(NodeInfoRepr),
    /// SwitchInfo (IBA 1 §14.2.5.4).
    SwitchInfo(SwitchInfoRepr),
    /// PortInfo (IBA 1 §14.2.5.6).
    PortInfo(PortInfoRepr),
    /// A LinearForwardingTable block (IBA 1 §14.2.5.10).
    LinearForwardingTable(LftBlockRepr),
    /// A MulticastForwardingTable block (IBA 1 §14.2.5.12).
    MulticastForwardingTable(MftBlockRepr),
    /// NodeDescription (IBA 1 §14.2.5.2).
    NodeDescription(NodeDescriptionRepr),
    /// A GUIDInfo block (IBA 1 §14.2.5.5).
    GuidInfo(GuidInfoRepr),
    /// A P_KeyTable block (IBA 1 §14.2.5.7).
    PKeyTable(PKeyTableRepr),
    /// SLtoVLMappingTable (IBA 1 §14.2.5.8).
    SlToVlMappingTable(SlToVlTableRepr),
    /// A VLArbitrationTable block (IBA 1 §14.2.5.9).
    VlArbitrationTable(VlArbTableRepr),
    /// SMInfo (IBA 1 §14.2.5.13).
    SmInfo(SmInfoRepr),
    /// The Notice of a Trap() or TrapRepress() (IBA 1 §14.2.5.1).
    Notice(NoticeRepr),
    /// An attribute this crate does not decode, or the data of a SubnGet, as sent.
    Raw([u8; SMP_DATA_LEN]),
}

impl SmpAttribute {
    /// Decodes the 64 bytes of SMP `data` as attribute `attribute_id`; an attribute this crate
    /// does not decode becomes `Raw`.
    pub fn parse(attribute_id: u16, data: &[u8]) -> Result<SmpAttribute> {
        Ok(match attribute_id {
            attr::NODE_INFO => SmpAttribute::NodeInfo(NodeInfoRepr::parse(data)?),
            attr::SWITCH_INFO => SmpAttribute::SwitchInfo(SwitchInfoRepr::parse(data)?),
            attr::PORT_INFO => SmpAttribute::PortInfo(PortInfoRepr::parse(data)?),
            attr::LINEAR_FORWARDING_TABLE => {
                SmpAttribute::LinearForwardingTable(LftBlockRepr::parse(data)?)
            }
            attr::MULTICAST_FORWARDING_TABLE => {
                SmpAttribute::MulticastForwardingTable(MftBlockRepr::parse(data)?)
            }
            attr::NODE_DESCRIPTION => {
                SmpAttribute::NodeDescription(NodeDescriptionRepr::parse(data)?)
            }
            attr::GUID_INFO => SmpAttribute::GuidInfo(GuidInfoRepr::parse(data)?),
            attr::P_KEY_TABLE => SmpAttribute::PKeyTable(PKeyTableRepr::parse(data)?),
            attr::SL_TO_VL_MAPPING_TABLE => {
                SmpAttribute::SlToVlMappingTable(SlToVlTableRepr::parse(data)?)
            }
            attr::VL_ARBITRATION_TABLE => {
                SmpAttribute::VlArbitrationTable(VlArbTableRepr::parse(data)?)
            }
            attr::SM_INFO => SmpAttribute::SmInfo(SmInfoRepr::parse(data)?),
            attr::NOTICE => {
                // The first 64 of the Notice's 80 bytes: no IssuerGID in an SMP (§14.2.5.1).
                let mut b = [0u8; 80];
                b[..SMP_DATA_LEN]
                    .copy_from_slice(data.get(..SMP_DATA_LEN).ok_or(Error::Truncated)?);
                SmpAttribute::Notice(NoticeRepr::parse(&b)?)
            }
            _ => SmpAttribute::raw(data)?,
        })
    }

    /// The first 64 bytes of `data`, undecoded.
    pub fn raw(data: &[u8]) -> Result<SmpAttribute> {
        let mut b = [0u8; SMP_DATA_LEN];
        b.copy_from_slice(data.get(..SMP_DATA_LEN).ok_or(Error::Truncated)?);
        Ok(SmpAttribute::Raw(b))
    }

    /// The AttributeID of a decoded attribute (`None` for `Raw`).
    pub fn attribute_id(&self) -> Option<u16> {
        match self {
            SmpAttribute::NodeInfo(_) => Some(attr::NODE_INFO),
            SmpAttribute::SwitchInfo(_) => Some(attr::SWITCH_INFO),
            SmpAttribute::PortInfo(_) => Some(attr::PORT_INFO),
            SmpAttribute::LinearForwardingTable(_) => Some(attr::LINEAR_FORWARDING_TABLE),
            SmpAttribute::MulticastForwardingTable(_) => Some(attr::MULTICAST_FORWARDING_TABLE),
            SmpAttribute::NodeDescription(_) => Some(attr::NODE_DESCRIPTION),
            SmpAttribute::GuidInfo(_) => Some(attr::GUID_INFO),
            SmpAttribute::PKeyTable(_) => Some(attr::P_KEY_TABLE),
            SmpAttribute::SlToVlMappingTable(_) => Some(attr::SL_TO_VL_MAPPING_TABLE),
            SmpAttribute::VlArbitrationTable(_) => Some(attr::VL_ARBITRATION_TABLE),
            SmpAttribute::SmInfo(_) => Some(attr::SM_INFO),
            SmpAttribute::Notice(_) => Some(attr::NOTICE),
            SmpAttribute::Raw(_) => None,
        }
    }

    /// Writes the attribute into the 64 bytes of SMP data (the bytes it does not cover zeroed).
    /// Panics if `buf` is shorter than 64 bytes.
    pub fn emit(&self, buf: &mut [u8]) {
        let buf = &mut buf[..SMP_DATA_LEN];
        buf.fill(0);
        match self {
            SmpAttribute::NodeInfo(r) => r.emit(buf),
            SmpAttribute::SwitchInfo(r) => r.emit(buf),
            SmpAttribute::PortInfo(r) => r.emit(buf),
            SmpAttribute::LinearForwardingTable(r) => r.emit(buf),
            SmpAttribute::MulticastForwardingTable(r) => r.emit(buf),
            SmpAttribute::NodeDescription(r) => r.emit(buf),
            SmpAttribute::GuidInfo(r) => r.emit(buf),
            SmpAttribute::PKeyTable(r) => r.emit(buf),
            SmpAttribute::SlToVlMappingTable(r) => r.emit(buf),
            SmpAttribute::VlArbitrationTable(r) => r.emit(buf),
            SmpAttribute::SmInfo(r) => r.emit(buf),
            // The Notice is 80 bytes (IBA 1 §13.4.8.2) but an SMP carries 64: a Trap() SMP sends
            // the first 64, which hold everything but the IssuerGID (§14.2.5.1).
            SmpAttribute::Notice(r) => {
                let mut b = [0u8; 80];
                r.emit(&mut b);
                buf.copy_from_slice(&b[..SMP_DATA_LEN]);
            }
            SmpAttribute::Raw(b) => buf.copy_from_slice(b),
        }
    }

    /// The snake_case group name `ipoib decode` shows the attribute under.
    pub fn group_name(&self) -> &'static str {
        match self {
            SmpAttribute::NodeInfo(_) => "node_info",
            SmpAttribute::SwitchInfo(_) => "switch_info",
            SmpAttribute::PortInfo(_) => "port_info",
            SmpAttribute::LinearForwardingTable(_) => "linear_forwarding_table",
            SmpAttribute::MulticastForwardingTable(_) => "multicast_forwarding_table",
            SmpAttribute::NodeDescription(_) => "node_description",
            SmpAttribute::GuidInfo(_) => "guid_info",
            SmpAttribute::PKeyTable(_) => "p_key_table",
            SmpAttribute::SlToVlMappingTable(_) => "sl_to_vl_mapping_table",
            SmpAttribute::VlArbitrationTable(_) => "vl_arbitration_table",
            SmpAttribute::SmInfo(_) => "sm_info",
            SmpAttribute::Notice(_) => "notice",
            SmpAttribute::Raw(_) => "smp_data",
        }
    }
}

impl Describe for SmpAttribute {
    fn describe(&self, d: &mut dyn Describer) {
        match self {
            SmpAttribute::NodeInfo(r) => r.describe(d),
            SmpAttribute::SwitchInfo(r) => r.describe(d),
            SmpAttribute::PortInfo(r) => r.describe(d),
            SmpAttribute::LinearForwardingTable(r) => r.describe(d),
            SmpAttribute::MulticastForwardingTable(r) => r.describe(d),
            SmpAttribute::NodeDescription(r) => r.describe(d),
            SmpAttribute::GuidInfo(r) => r.describe(d),
            SmpAttribute::PKeyTable(r) => r.describe(d),
            SmpAttribute::SlToVlMappingTable(r) => r.describe(d),
            SmpAttribute::VlArbitrationTable(r) => r.describe(d),
            SmpAttribute::SmInfo(r) => r.describe(d),
            SmpAttribute::Notice(r) => r.describe(d),
            SmpAttribute::Raw(b) => d.field("bytes", Value::Bytes(b)),
        }
    }
}

/// A whole SMP (IBA 1 §14.2.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SmpMadRepr {
    /// Common MAD header: class SubnLid or SubnDirectedRoute; for directed route the Status field
    /// holds the D bit and ClassSpecific the HopPointer and HopCount.
    pub header: MadHeaderRepr,
    /// M_Key.
    pub mkey: u64,
    /// The route, by class.
    pub route: SmpRoute,
    /// The attribute: decoded for every method but Get, whose data carries no attribute value.
    pub attribute: SmpAttribute,
}

impl SmpMadRepr {
    /// Parses a 256-byte SMP. `Err(Unsupported)` if the class is neither SubnLid nor
    /// SubnDirectedRoute.
    pub fn parse(data: &[u8]) -> Result<SmpMadRepr> {
        let m = SmpMad::new_checked(data)?;
        let header = MadHeaderRepr::parse(&m.mad())?;
        let route = match header.mgmt_class {
            MgmtClass::SubnLid => SmpRoute::Lid,
            MgmtClass::SubnDirectedRoute => {
                let mut r = DirectedRoute {
                    dr_slid: m.dr_slid(),
                    dr_dlid: m.dr_dlid(),
                    initial_path: [0; SMP_PATH_LEN],
                    return_path: [0; SMP_PATH_LEN],
                };
                r.initial_path.copy_from_slice(m.initial_path());
                r.return_path.copy_from_slice(m.return_path());
                SmpRoute::Directed(r)
            }
            _ => return Err(Error::Unsupported),
        };
        let attribute = if header.method == Method::Get {
            SmpAttribute::raw(m.smp_data())?
        } else {
            SmpAttribute::parse(header.attribute_id, m.smp_data())?
        };
        Ok(SmpMadRepr {
            header,
            mkey: m.mkey(),
            route,
            attribute,
        })
    }

    /// 256 bytes.
    pub const fn buffer_len(&self) -> usize {
        MAD_LEN
    }

    /// Writes the whole SMP into the first 256 bytes of `buf` (reserved bytes zero). Panics if
    /// `buf` is shorter.
    pub fn emit(&self, buf: &mut [u8]) {
        let buf = &mut buf[..MAD_LEN];
        self.header.emit(buf);
        let mut m = SmpMad::new_unchecked(buf);
        m.set_mkey(self.mkey);
        match &self.route {
            SmpRoute::Lid => m.clear_lid_reserved(),
            SmpRoute::Directed(r) => {
                m.set_dr_lids(r.dr_slid, r.dr_dlid);
                m.initial_path_mut().copy_from_slice(&r.initial_path);
                m.return_path_mut().copy_from_slice(&r.return_path);
            }
        }
        self.attribute.emit(m.smp_data_mut());
    }

    /// The SMP as 256 bytes.
    pub fn to_bytes(&self) -> [u8; MAD_LEN] {
        let mut b = [0u8; MAD_LEN];
        self.emit(&mut b);
        b
    }

    /// A LID-routed SubnGet of attribute `attribute_id` with `attribute_modifier`, M_Key 0
    /// (IBA 1 §14.2.1.1, §14.2.2).
    pub fn lid_routed_get(
        transaction_id: u64,
        attribute_id: u16,
        attribute_modifier: u32,
    ) -> SmpMadRepr {
        SmpMadRepr {
            header: MadHeaderRepr {
                base_version: BASE_VERSION,
                mgmt_class: MgmtClass::SubnLid,
                class_version: SMP_CLASS_VERSION,
                method: Method::Get,
                status: MadStatus::SUCCESS,
                class_specific: 0,
                transaction_id,
                attribute_id,
                attribute_modifier,
            },
            mkey: 0,
            route: SmpRoute::Lid,
            attribute: SmpAttribute::Raw([0; SMP_DATA_LEN]),
        }
    }

    /// The SubnGetResp answering this request with `attribute` (IBA 1 §13.4.6.2: same
    /// TransactionID, attribute and modifier; §14.2.2: a directed-route response has D set).
    pub fn get_response(&self, status: MadStatus, attribute: SmpAttribute) -> SmpMadRepr {
        let status = match self.route {
            SmpRoute::Lid => status,
            SmpRoute::Directed(_) => MadStatus(status.0 | DIRECTION_BIT),
        };
        SmpMadRepr {
            header: self.header.response(Method::GetResp, status),
            attribute,
            ..*self
        }
    }

    /// The status without the directed-route D bit.
    pub fn status(&self) -> MadStatus {
        self.header.status.without_direction(self.header.mgmt_class)
    }

    /// Directed route: the D bit (`None` when LID routed).
    pub fn direction(&self) -> Option<bool> {
        match self.route {
            SmpRoute::Lid => None,
            SmpRoute::Directed(_) => Some(self.header.status.0 & DIRECTION_BIT != 0),
        }
    }

    /// Directed route: HopPointer (`None` when LID routed).
    pub fn hop_pointer(&self) -> Option<u8> {
        match self.route {
            SmpRoute::Lid => None,
            SmpRoute::Directed(_) => Some((self.header.class_specific >> 8) as u8),
        }
    }

    /// Directed route: HopCount (`None` when LID routed).
    pub fn hop_count(&self) -> Option<u8> {
        match self.route {
            SmpRoute::Lid => None,
            SmpRoute::Directed(_) => Some(self.header.class_specific as u8),
        }
    }
}

impl Describe for SmpMadRepr {
    fn describe(&self, d: &mut dyn Describer) {
        self.header.describe_as("mad", d);
        d.enter("smp");
        d.field("m_key", Value::Hex(self.mkey, 16));
        if let SmpRoute::Directed(r) = &self.route {
            d.field("direction", Value::Bool(self.direction() == Some(true)));
            d.field("status", Value::Hex(self.status().0.into(), 4));
            d.field(
                "hop_pointer",
                Value::Uint(self.hop_pointer().unwrap_or(0).into()),
            );
            d.field(
                "hop_count",
                Value::Uint(self.hop_count().unwrap_or(0).into()),
            );
            d.field("dr_slid", Value::Hex(r.dr_slid.into(), 4));
            d.field("dr_dlid", Value::Hex(r.dr_dlid.into(), 4));
            // Entries 1 to HopCount are the path (entry 0 is not used).
            let hops = (usize::from(self.hop_count().unwrap_or(0)) + 1).min(SMP_PATH_LEN);
            d.field("initial_path", Value::Bytes(&r.initial_path[..hops]));
            d.field("return_path", Value::Bytes(&r.return_path[..hops]));
        }
        d.leave();
        self.attribute.describe_as(self.attribute.group_name(), d);
    }
}

#[cfg(test)]
mod tests;

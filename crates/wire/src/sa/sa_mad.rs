//! A whole SA MAD as one value ([`SaMadRepr`]): common header, RMPP header, SA header and either
//! one attribute or, in a GetTableResp, a table of records. Builders make the MADs the SA client
//! and server exchange (IBA 1 §15.2; Linux `sa_query.c` and OpenSM `osm_sa.c` as deployed).

use super::header::{SaHeaderRepr, SaMad, SA_DATA_LEN, SA_HEADER_LEN};
use super::mcmember::McMemberRecordRepr;
use super::path::PathRecordRepr;
use super::record::{attribute_offset_for, record_len, SaAttribute, SaRawData, SaRecords};
use crate::describe::{Describe, Describer, Value};
use crate::mad::{
    ClassPortInfoRepr, MadHeaderRepr, MadStatus, Method, MgmtClass, RmppRepr, RmppType,
    BASE_VERSION, MAD_LEN, SA_CLASS_VERSION,
};
use crate::{Error, Result};

/// A whole SA MAD (IBA 1 §15.2.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SaMadRepr {
    /// Common MAD header; `attribute_id` names the attribute (or the records of a table).
    pub header: MadHeaderRepr,
    /// RMPP header ([`RmppRepr::NONE`] outside RMPP transfers).
    pub rmpp: RmppRepr,
    /// SA header.
    pub sa: SaHeaderRepr,
    /// The attribute, or `Raw` table bytes when [`SaMadRepr::is_table`].
    pub attribute: SaAttribute,
}

/// Writes `records`, all of attribute `attribute_id`, `attribute_offset_for(record_len)` × 8
/// bytes apart, into `out` (padding zeroed) and returns the bytes used: the payload of a
/// GetTableResp, to send in one MAD or to cut into RMPP segments (IBA 1 §15.2.1.1, §13.6).
/// `Err(Malformed)` if a record is of another attribute, `Err(Truncated)` if `out` is too small,
/// `Err(Unsupported)` for an attribute this crate does not encode.
pub fn emit_records(attribute_id: u16, records: &[SaAttribute], out: &mut [u8]) -> Result<usize> {
    let stride = usize::from(attribute_offset_for(
        record_len(attribute_id).ok_or(Error::Unsupported)?,
    )) * 8;
    let total = records.len() * stride;
    if out.len() < total {
        return Err(Error::Truncated);
    }
    for (slot, rec) in out[..total].chunks_exact_mut(stride).zip(records) {
        if rec.attribute_id() != Some(attribute_id) {
            return Err(Error::Malformed);
        }
        slot.fill(0);
        rec.emit(slot);
    }
    Ok(total)
}

impl SaMadRepr {
    /// Parses a 256-byte SA MAD. `Err(Unsupported)` if the class is not SubnAdm.
    pub fn parse(data: &[u8]) -> Result<SaMadRepr> {
        SaMadRepr::parse_view(&SaMad::new_checked(data)?)
    }

    /// Parses a checked SA MAD view.
    pub fn parse_view<T: AsRef<[u8]>>(m: &SaMad<T>) -> Result<SaMadRepr> {
        m.check_len()?;
        let header = MadHeaderRepr::parse(&m.mad())?;
        if header.mgmt_class != MgmtClass::SubnAdm {
            return Err(Error::Unsupported);
        }
        let rmpp = RmppRepr::parse(&m.rmpp())?;
        let sa = SaHeaderRepr::parse(m)?;
        let attribute = if is_table(&header, &rmpp) {
            SaAttribute::Raw(SaRawData::new(&m.sa_data()[..table_len(&rmpp)]))
        } else {
            SaAttribute::parse(header.attribute_id, m.sa_data())?
        };
        Ok(SaMadRepr {
            header,
            rmpp,
            sa,
            attribute,
        })
    }

    /// 256 bytes.
    pub const fn buffer_len(&self) -> usize {
        MAD_LEN
    }

    /// Writes the whole MAD into the first 256 bytes of `buf` (unused SA data zeroed). Panics if
    /// `buf` is shorter than 256 bytes.
    pub fn emit(&self, buf: &mut [u8]) {
        let buf = &mut buf[..MAD_LEN];
        self.header.emit(buf);
        let mut m = SaMad::new_unchecked(buf);
        self.rmpp.emit(m.rmpp_mut().into_inner());
        self.sa.emit(&mut m);
        let data = m.sa_data_mut();
        data.fill(0);
        // Every attribute fits: the largest decoded one (ServiceRecord) is 176 bytes, Raw holds at
        // most 200.
        self.attribute.emit(data);
    }

    /// The MAD as 256 bytes.
    pub fn to_bytes(&self) -> [u8; MAD_LEN] {
        let mut b = [0u8; MAD_LEN];
        self.emit(&mut b);
        b
    }

    /// True when the SA data is a table of records: a GetTableResp or GetMultiResp, or a middle
    /// segment of a multi-segment RMPP transfer (IBA 1 §15.2.2, §13.6).
    pub fn is_table(&self) -> bool {
        is_table(&self.header, &self.rmpp)
    }

    /// The records of a table (empty for a single attribute).
    pub fn records(&self) -> SaRecords<'_> {
        match (&self.attribute, self.is_table()) {
            (SaAttribute::Raw(r), true) => SaRecords::new(
                self.header.attribute_id,
                self.sa.attribute_offset,
                r.as_bytes(),
            ),
            _ => SaRecords::new(self.header.attribute_id, 0, &[]),
        }
    }

    /// A request from an SA client: BaseVersion 1, class SubnAdm version 2, no RMPP, SM_Key 0,
    /// AttributeOffset 0 (IBA 1 §15.2.1; Linux `ib_sa` sends SA class version 2).
    pub fn request(
        method: Method,
        transaction_id: u64,
        component_mask: u64,
        attribute: SaAttribute,
    ) -> SaMadRepr {
        SaMadRepr {
            header: MadHeaderRepr {
                base_version: BASE_VERSION,
                mgmt_class: MgmtClass::SubnAdm,
                class_version: SA_CLASS_VERSION,
                method,
                status: MadStatus::SUCCESS,
                class_specific: 0,
                transaction_id,
                attribute_id: attribute.attribute_id().unwrap_or(0),
                attribute_modifier: 0,
            },
            rmpp: RmppRepr::NONE,
            sa: SaHeaderRepr {
                sm_key: 0,
                attribute_offset: 0,
                component_mask,
            },
            attribute,
        }
    }

    /// SubnAdmSet(MCMemberRecord): join a multicast group, or create it (IBA 1 §15.2.5.17;
    /// docs/DEPLOYED.md: OpenSM needs [`super::mcr_mask::JOIN`], and [`super::mcr_mask::CREATE`] to
    /// create).
    pub fn mcmember_join(
        transaction_id: u64,
        record: McMemberRecordRepr,
        component_mask: u64,
    ) -> SaMadRepr {
        SaMadRepr::request(
            Method::Set,
            transaction_id,
            component_mask,
            SaAttribute::McMemberRecord(record),
        )
    }

    /// SubnAdmDelete(MCMemberRecord): leave a multicast group (IBA 1 §15.2.5.17).
    pub fn mcmember_leave(
        transaction_id: u64,
        record: McMemberRecordRepr,
        component_mask: u64,
    ) -> SaMadRepr {
        SaMadRepr::request(
            Method::Delete,
            transaction_id,
            component_mask,
            SaAttribute::McMemberRecord(record),
        )
    }

    /// SubnAdmGet(PathRecord), as Linux's `ib_sa_path_rec_get` asks (IBA 1 §15.2.5.16).
    pub fn path_get(transaction_id: u64, record: PathRecordRepr, component_mask: u64) -> SaMadRepr {
        SaMadRepr::request(
            Method::Get,
            transaction_id,
            component_mask,
            SaAttribute::PathRecord(record),
        )
    }

    /// SubnAdmGet(ClassPortInfo) (IBA 1 §13.4.8.1).
    pub fn class_port_info_get(transaction_id: u64) -> SaMadRepr {
        SaMadRepr::request(
            Method::Get,
            transaction_id,
            0,
            SaAttribute::ClassPortInfo(ClassPortInfoRepr::default()),
        )
    }

    /// The single-attribute response to this request: the method's response method (GetResp for
    /// Get and Set, DeleteResp for Delete, ...; IBA 1 §15.2.2), the request's TransactionID,
    /// AttributeID and ComponentMask echoed (as OpenSM's `osm_sa_respond` does), SM_Key 0, no RMPP.
    pub fn response(&self, status: MadStatus, attribute: SaAttribute) -> SaMadRepr {
        let method = self.header.method.response().unwrap_or(Method::GetResp);
        SaMadRepr {
            header: self.header.response(method, status),
            rmpp: RmppRepr::NONE,
            sa: SaHeaderRepr {
                sm_key: 0,
                attribute_offset: 0,
                component_mask: self.sa.component_mask,
            },
            attribute,
        }
    }

    /// The SubnAdmGetTableResp to this request carrying `records` in one MAD: RMPP DATA, first and
    /// last, segment 1, PayloadLength = 20 + records (IBA 1 §15.2.1.1, §13.6.2; Linux
    /// `mad_rmpp.c`), AttributeOffset the record stride. `Err(Unsupported)` when they do not fit in
    /// 200 bytes: the SA server must then segment the [`emit_records`] payload itself.
    pub fn table_response(&self, status: MadStatus, records: &[SaAttribute]) -> Result<SaMadRepr> {
        let id = self.header.attribute_id;
        let len = record_len(id).ok_or(Error::Unsupported)?;
        let offset = attribute_offset_for(len);
        if records.len() * usize::from(offset) * 8 > SA_DATA_LEN {
            return Err(Error::Unsupported);
        }
        let mut data = [0u8; SA_DATA_LEN];
        let used = emit_records(id, records, &mut data)?;
        Ok(SaMadRepr {
            header: self.header.response(Method::GetTableResp, status),
            rmpp: RmppRepr::single_segment((SA_HEADER_LEN + used) as u32),
            sa: SaHeaderRepr {
                sm_key: 0,
                attribute_offset: offset,
                component_mask: self.sa.component_mask,
            },
            attribute: SaAttribute::Raw(SaRawData::new(&data[..used])),
        })
    }
}

fn is_table(header: &MadHeaderRepr, rmpp: &RmppRepr) -> bool {
    matches!(header.method, Method::GetTableResp | Method::GetMultiResp)
        || (rmpp.is_active() && !(rmpp.flags.first() && rmpp.flags.last()))
}

/// Bytes of table data in this MAD: in the first DATA segment PayloadLength minus the SA header
/// (capped at 200), otherwise the whole 200 bytes.
fn table_len(rmpp: &RmppRepr) -> usize {
    if rmpp.is_active() && rmpp.rmpp_type == RmppType::Data && rmpp.flags.first() {
        (rmpp.payload_length() as usize)
            .saturating_sub(SA_HEADER_LEN)
            .min(SA_DATA_LEN)
    } else {
        SA_DATA_LEN
    }
}

impl Describe for SaMadRepr {
    fn describe(&self, d: &mut dyn Describer) {
        self.header.describe_as("mad", d);
        self.rmpp.describe_as("rmpp", d);
        self.sa.describe_as("sa", d);
        if self.is_table() {
            let recs = self.records();
            d.enter("records");
            d.field("count", Value::Uint(recs.record_count() as u64));
            // One group per record, numbered so that every key stays unique (JSON objects).
            for (i, r) in recs.enumerate() {
                match r {
                    Ok(a) => {
                        d.enter(&format!("record_{i}"));
                        d.field("attribute", Value::Str(a.group_name()));
                        a.describe(d);
                        d.leave();
                    }
                    Err(_) => d.field("error", Value::Str("record shorter than its attribute")),
                }
            }
            d.leave();
        } else {
            self.attribute.describe_as(self.attribute.group_name(), d);
        }
    }
}

#[cfg(test)]
mod tests;

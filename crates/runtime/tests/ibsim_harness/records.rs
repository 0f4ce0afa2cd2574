//! The subnet-record side of the differential test against OpenSM (opensm_diff.rs's
//! `our_subnet_records_match_opensm`): one request, what is compared of an answer, and the
//! differences between two answers.

/// One subnet-record request of opensm_diff.rs's `our_subnet_records_match_opensm`: its name, method, component
/// mask, AttributeModifier, SM_Key and record.
pub struct RecordStep {
    pub name: String,
    pub method: ipoib_wire::mad::Method,
    pub mask: u64,
    pub modifier: u32,
    pub sm_key: u64,
    pub attribute: ipoib_wire::sa::SaAttribute,
}

/// What is compared of an answer: its status, response method and AttributeOffset, its records (those of its first
/// MAD: under ibsim a client sees only the first 256 bytes of a longer answer, docs/DEPLOYED.md),
/// and the record count RMPP's PayloadLength gives, when the answer has one. OpenSM under ibsim
/// sends a GetTableResp with PayloadLength 0 (the kernel's RMPP layer, absent under libumad2sim,
/// would fill it in), the rest of its 200 bytes left as they were in its buffer: its count is
/// unknown and only as many of its records as ours are compared. PortInfo is reduced to the fields
/// the SM's configuration decides (see the test's docs).
pub struct RecordOutcome {
    pub head: String,
    pub count: Option<usize>,
    pub records: Vec<String>,
}

/// The comparable parts of the SA answer `resp`.
pub fn record_outcome(resp: &[u8]) -> RecordOutcome {
    use ipoib_wire::sa::{SaAttribute, SaMadRepr, SA_HEADER_LEN};
    let m = match SaMadRepr::parse(resp) {
        Ok(m) => m,
        Err(e) => {
            return RecordOutcome {
                head: format!("unparsable: {e:?}"),
                count: None,
                records: Vec::new(),
            }
        }
    };
    let show = |a: &SaAttribute| match a {
        SaAttribute::PortInfoRecord(r) => {
            let p = &r.port_info;
            // Switch port 0 has no link: its NeighborMTU is the hardware's (ibsim: 256).
            let nmtu = if r.port_num == 0 {
                "-".to_string()
            } else {
                u8::from(p.neighbor_mtu).to_string()
            };
            format!(
                "PIR lid {} port {} pi(lid {} lmc {} sm {} prefix {:#x} state {:?} local {} \
                 nmtu {nmtu} width {} speed {})",
                r.lid,
                r.port_num,
                p.lid,
                p.lmc,
                p.master_sm_lid,
                p.gid_prefix,
                p.port_state,
                p.local_port_num,
                p.link_width_active,
                p.link_speed_active
            )
        }
        // BlockNum up to byte order: OpenSM 3.3.23 writes it in host order (little-endian here),
        // IBA 1 §15.2.5.11 and we big-endian (docs/OPENSM-NOTES.md "Subnet records").
        SaAttribute::PKeyTableRecord(r) => format!(
            "PKTR lid {} block {} port {} {:04x?}",
            r.lid,
            r.block.min(r.block.swap_bytes()),
            r.port_num,
            r.pkeys.iter().map(|k| k.0).collect::<Vec<_>>()
        ),
        SaAttribute::NodeRecord(r) => format!(
            "NR lid {} {:?} desc {:?}",
            r.lid,
            r.node_info,
            r.description()
        ),
        other => format!("{other:?}"),
    };
    // AttributeOffset compared too: OpenSM's osm_sa_respond fills it for a one-record GetResp
    // as for a table (IBA 1 §15.2.1.1; docs/OPENSM-LIMITS.md).
    let head = format!(
        "status {:#06x} {:?} aoff {}",
        m.header.status.0, m.header.method, m.sa.attribute_offset
    );
    let mut count = None;
    let mut records = Vec::new();
    if m.is_table() {
        let stride = usize::from(m.sa.attribute_offset) * 8;
        if m.rmpp.is_active() && stride != 0 && m.rmpp.payload_length() != 0 {
            let total = (m.rmpp.payload_length() as usize).saturating_sub(SA_HEADER_LEN);
            count = Some(total / stride);
        }
        for r in m.records() {
            records.push(r.map_or_else(|e| format!("{e:?}"), |a| show(&a)));
        }
    } else if m.header.status.0 == 0 {
        records.push(show(&m.attribute));
    }
    RecordOutcome {
        head,
        count,
        records,
    }
}

/// The differences between OpenSM's answer and ours (see [`record_outcome`]).
pub fn record_diff(theirs: &RecordOutcome, ours: &RecordOutcome) -> Option<String> {
    let n = ours.records.len();
    let same = theirs.head == ours.head
        && (theirs.count.is_none() || theirs.count == ours.count)
        && theirs.records.len() >= n
        && theirs.records[..n] == ours.records[..];
    (!same).then(|| {
        format!(
            "  OpenSM: {} ({:?} records)\n    {}\n  ours:   {} ({:?} records)\n    {}",
            theirs.head,
            theirs.count,
            theirs.records[..theirs.records.len().min(n.max(1))].join("\n    "),
            ours.head,
            ours.count,
            ours.records.join("\n    ")
        )
    })
}

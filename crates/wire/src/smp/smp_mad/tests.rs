use super::*;
use crate::describe::Collect;
use crate::mad::strategy::arb_header;
use crate::smp::node_info::NodeType;
use crate::smp::port_info::PortState;
use crate::types::Guid;
use proptest::prelude::*;

/// SubnGet(PortInfo) for port 1, LID routed, TransactionID 0x53000001, M_Key 0 (the request
/// `ipoib_runtime::ibsim::opensm::smp_get_on` sends).
fn get_port_info_bytes() -> [u8; 256] {
    let mut b = [0u8; 256];
    b[0..4].copy_from_slice(&[1, 0x01, 1, 0x01]);
    b[8..16].copy_from_slice(&0x5300_0001u64.to_be_bytes());
    b[16..18].copy_from_slice(&[0x00, 0x15]);
    b[20..24].copy_from_slice(&[0, 0, 0, 1]);
    b
}

/// SubnGet(NodeInfo) by directed route, one hop out of port 1, from an SM whose own LID is not
/// used (DrSLID and DrDLID permissive, IBA 1 §14.2.2).
fn dr_get_node_info_bytes() -> [u8; 256] {
    let mut b = [0u8; 256];
    b[0..4].copy_from_slice(&[1, 0x81, 1, 0x01]);
    b[6..8].copy_from_slice(&[0, 1]); // HopPointer 0, HopCount 1
    b[8..16].copy_from_slice(&7u64.to_be_bytes());
    b[16..18].copy_from_slice(&[0x00, 0x11]);
    b[32..36].copy_from_slice(&[0xff, 0xff, 0xff, 0xff]);
    b[129] = 1; // InitialPath[1]
    b
}

// IBA 1 §14.2.1.1: M_Key at 24, the data at 64.
#[test]
fn lid_routed_get() {
    let b = get_port_info_bytes();
    let v = SmpMad::new_checked(&b[..]).unwrap();
    assert!(!v.is_directed());
    assert_eq!(v.mkey(), 0);
    assert_eq!(v.mad().attribute_id(), attr::PORT_INFO);
    let r = SmpMadRepr::parse(&b).unwrap();
    assert_eq!(
        r,
        SmpMadRepr::lid_routed_get(0x5300_0001, attr::PORT_INFO, 1)
    );
    assert_eq!(r.attribute, SmpAttribute::Raw([0; 64]));
    assert_eq!((r.direction(), r.hop_count()), (None, None));
    assert_eq!(r.to_bytes(), b);
    assert_eq!(SmpMadRepr::parse(&b[..255]), Err(Error::Truncated));
}

// IBA 1 §14.2.1.2: D bit and status, HopPointer, HopCount, DrSLID, DrDLID, the paths.
#[test]
fn directed_route() {
    let b = dr_get_node_info_bytes();
    let v = SmpMad::new_checked(&b[..]).unwrap();
    assert!(v.is_directed());
    assert!(!v.direction());
    assert_eq!((v.hop_pointer(), v.hop_count()), (0, 1));
    assert_eq!((v.dr_slid(), v.dr_dlid()), (0xffff, 0xffff));
    assert_eq!(v.initial_path()[..2], [0, 1]);
    let r = SmpMadRepr::parse(&b).unwrap();
    assert_eq!(
        (r.direction(), r.hop_pointer(), r.hop_count()),
        (Some(false), Some(0), Some(1))
    );
    assert_eq!(r.to_bytes(), b);
    // The response: D set, the NodeInfo decoded.
    let ni = NodeInfoRepr {
        base_version: 1,
        class_version: 1,
        node_type: NodeType::Switch,
        num_ports: 36,
        system_image_guid: Guid(0x20_0000),
        node_guid: Guid(0x20_0000),
        port_guid: Guid(0x20_0000),
        partition_cap: 8,
        device_id: 0,
        revision: 0,
        local_port_num: 1,
        vendor_id: 0,
    };
    let resp = r.get_response(MadStatus::SUCCESS, SmpAttribute::NodeInfo(ni));
    let bytes = resp.to_bytes();
    assert_eq!(bytes[3], 0x81);
    assert_eq!(bytes[4..6], [0x80, 0x00]);
    let back = SmpMadRepr::parse(&bytes).unwrap();
    assert_eq!(back, resp);
    assert_eq!(back.direction(), Some(true));
    assert_eq!(back.status(), MadStatus::SUCCESS);
    assert_eq!(back.attribute, SmpAttribute::NodeInfo(ni));
    let mut c = Collect::default();
    back.describe(&mut c);
    assert_eq!(c.get("smp.direction"), Some("true"));
    assert_eq!(c.get("smp.hop_count"), Some("1"));
    assert_eq!(c.get("smp.initial_path"), Some("0001"));
    assert_eq!(c.get("node_info.node_type"), Some("Switch (0x2)"));
    assert_eq!(c.get("mad.attribute_id"), Some("NodeInfo (0x11)"));
}

// IBA 1 §14.2.5.6 inside a SubnGetResp; reserved bytes are zero on emit.
#[test]
fn get_response_with_port_info() {
    let req = SmpMadRepr::lid_routed_get(9, attr::PORT_INFO, 1);
    let pi = PortInfoRepr {
        lid: 3,
        master_sm_lid: 1,
        local_port_num: 1,
        port_state: PortState::Active,
        ..PortInfoRepr::default()
    };
    let resp = req.get_response(MadStatus::SUCCESS, SmpAttribute::PortInfo(pi));
    let mut b = [0xeeu8; 256];
    resp.emit(&mut b);
    assert!(b[32..64].iter().chain(&b[128..]).all(|&x| x == 0));
    assert_eq!(b[64 + 16..64 + 20], [0, 3, 0, 1]);
    assert_eq!(SmpMadRepr::parse(&b).unwrap(), resp);
    let mut c = Collect::default();
    resp.describe(&mut c);
    assert_eq!(c.get("mad.method"), Some("GetResp (0x81)"));
    assert_eq!(c.get("port_info.port_state"), Some("Active (0x4)"));
    assert!(c.get("smp.hop_count").is_none());
}

#[test]
fn other_classes_and_attributes() {
    let mut b = get_port_info_bytes();
    b[1] = 0x03;
    assert_eq!(SmpMadRepr::parse(&b), Err(Error::Unsupported));
    // An attribute this crate does not decode stays as sent.
    let mut b = get_port_info_bytes();
    b[3] = 0x81;
    b[16..18].copy_from_slice(&[0x00, 0x30]); // VendorDiag
    b[64] = 0xab;
    let r = SmpMadRepr::parse(&b).unwrap();
    let SmpAttribute::Raw(data) = r.attribute else {
        panic!("{:?}", r.attribute)
    };
    assert_eq!(data[0], 0xab);
    assert_eq!(r.to_bytes(), b);
}

fn arb_attribute() -> impl Strategy<Value = (u16, SmpAttribute)> {
    prop_oneof![
        crate::smp::node_info::tests::arb_node_info()
            .prop_map(|r| (attr::NODE_INFO, SmpAttribute::NodeInfo(r))),
        crate::smp::port_info::tests::arb_port_info()
            .prop_map(|r| (attr::PORT_INFO, SmpAttribute::PortInfo(r))),
        any::<[u8; 32]>().prop_map(|h| {
            let mut b = [0u8; 64];
            b[..32].copy_from_slice(&h);
            (0x0030, SmpAttribute::Raw(b))
        }),
        (any::<u64>(), any::<u32>(), 0u8..16, 0u8..4).prop_map(|(g, a, p, st)| {
            let r = crate::smp::SmInfoRepr {
                guid: crate::types::Guid(g),
                sm_key: !g,
                act_count: a,
                priority: p,
                sm_state: crate::smp::SmState::from(st),
            };
            (attr::SM_INFO, SmpAttribute::SmInfo(r))
        }),
        any::<[u16; 32]>().prop_map(|k| {
            let r = crate::smp::PKeyTableRepr {
                pkeys: k.map(crate::keys::PKey),
            };
            (attr::P_KEY_TABLE, SmpAttribute::PKeyTable(r))
        }),
        "[a-z ]{0,64}".prop_map(|t| {
            let r = crate::smp::NodeDescriptionRepr::new(&t);
            (attr::NODE_DESCRIPTION, SmpAttribute::NodeDescription(r))
        }),
    ]
}

fn arb_route() -> impl Strategy<Value = SmpRoute> {
    prop_oneof![
        Just(SmpRoute::Lid),
        (
            any::<u16>(),
            any::<u16>(),
            any::<[u8; 32]>(),
            any::<[u8; 32]>()
        )
            .prop_map(|(s, d, i, r)| {
                let (mut initial_path, mut return_path) = ([0u8; 64], [0u8; 64]);
                initial_path[..32].copy_from_slice(&i);
                return_path[32..].copy_from_slice(&r);
                SmpRoute::Directed(DirectedRoute {
                    dr_slid: s,
                    dr_dlid: d,
                    initial_path,
                    return_path,
                })
            }),
    ]
}

proptest! {
    #[test]
    fn round_trip(h in arb_header(), mkey: u64, route in arb_route(), (id, a) in arb_attribute(),
                  get: bool) {
        let mut header = h;
        header.mgmt_class = match route {
            SmpRoute::Lid => MgmtClass::SubnLid,
            SmpRoute::Directed(_) => MgmtClass::SubnDirectedRoute,
        };
        header.attribute_id = id;
        let (method, attribute) = if get {
            let mut raw = [0u8; 64];
            a.emit(&mut raw);
            (Method::Get, SmpAttribute::Raw(raw))
        } else {
            (Method::GetResp, a)
        };
        header.method = method;
        let r = SmpMadRepr { header, mkey, route, attribute };
        let b = r.to_bytes();
        prop_assert_eq!(SmpMadRepr::parse(&b).unwrap(), r);
    }

    #[test]
    fn parse_never_panics(data in proptest::collection::vec(any::<u8>(), 0..300),
                          class in prop_oneof![Just(0x01u8), Just(0x81), any::<u8>()],
                          id in prop_oneof![Just(0x11u16), Just(0x12), Just(0x15), Just(0x19), Just(0x1b), any::<u16>()]) {
        let mut d = data;
        if d.len() >= 24 {
            d[1] = class;
            d[16..18].copy_from_slice(&id.to_be_bytes());
        }
        if let Ok(r) = SmpMadRepr::parse(&d) {
            r.describe(&mut Collect::default());
            let _ = (r.status(), r.direction(), r.hop_pointer(), r.hop_count());
        }
    }

    // The answer written in place is the one the parsed request's get_response emits, over
    // any request bytes (reserved bytes set included), status and attribute (IBA 1 §13.4.6.2,
    // §14.2.2: the switch's and the HCA's SMA answer in the request's buffer).
    #[test]
    fn respond_in_place_is_get_response(
        data in any::<[[u8; 32]; 8]>(),
        class in prop_oneof![Just(0x01u8), Just(0x81), any::<u8>()],
        method in any::<u8>(),
        status in any::<u16>(),
        (_, a) in arb_attribute(),
    ) {
        let mut b = [0u8; MAD_LEN];
        for (d, s) in b.chunks_mut(32).zip(&data) {
            d.copy_from_slice(s);
        }
        b[1] = class;
        let mut in_place = b;
        let done = SmpMad::new_unchecked(&mut in_place[..]).respond_in_place(
            Method::from(method),
            MadStatus(status),
            &a,
        );
        match SmpMadRepr::parse(&b) {
            Ok(req) => {
                let mut resp = req.get_response(MadStatus(status), a);
                resp.header.method = Method::from(method);
                prop_assert!(done.is_ok());
                prop_assert_eq!(&in_place[..], &resp.to_bytes()[..]);
            }
            // Another class: refused, nothing written. (A parse refusing a SubnLid or
            // directed-route request's attribute is the caller's: it answers only parsed ones.)
            Err(_) if class != 0x01 && class != 0x81 => {
                prop_assert!(done.is_err());
                prop_assert_eq!(&in_place[..], &b[..]);
            }
            Err(_) => {}
        }
    }
}

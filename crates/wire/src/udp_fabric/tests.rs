//! The datagrams on fixed byte arrays: parse, emit, and what does not parse.

use super::*;
use proptest::prelude::*;

const KEEPALIVE: [u8; 16] = [
    0x49, 0x42, 0x02, 0x05, // magic, version 2, Keepalive
    0, 0, 0, 0, 0, 0, 0x12, 0x34, // session 0x1234
    0, 0, 0, 7, // seq 7
];

const ACCEPT: [u8; 44] = [
    0x49, 0x42, 0x02, 0x02, // AttachAccept
    0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, // session
    0x00, 0x03, 0x01, 0x01, // slot 3, port 1, one port
    0x00, 0x00, 0x0b, 0xb8, // 3000 ms
    0, 0, 0, 0, 0, 0, 0x10, 0x00, // node GUID 0x1000
    0xa1, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7, 0xa8, // nonce
    0, 0, 0, 0, 0, 0, 0x10, 0x01, // port 1 GUID 0x1001
];

const CONFIG: [u8; 36] = [
    0x49, 0x42, 0x02, 0x08, // PortConfig
    0, 0, 0, 0, 0, 0, 0, 9, // session 9
    0x01, 0x04, 0x00, 0x00, // port 1, Active, LMC 0, SM SL 0
    0x00, 0x05, 0x00, 0x01, // LID 5, SM LID 1
    0x04, 0x03, 0x00, 0x02, // MTU 2048, 10 Gb/s, two P_Keys
    0xfe, 0x80, 0, 0, 0, 0, 0, 0, // subnet prefix fe80::
    0xff, 0xff, 0x80, 0x01, // P_Keys 0xffff, 0x8001
];

fn config() -> PortConfigRepr {
    PortConfigRepr {
        port: 1,
        state: PortStateCode::Active,
        lmc: 0,
        sm_sl: 0,
        lid: 5,
        sm_lid: 1,
        mtu: Mtu::Mtu2048,
        rate: Rate::Gbps10,
        subnet_prefix: 0xfe80_0000_0000_0000,
        pkeys: vec![PKey(0xffff), PKey(0x8001)],
    }
}

#[test]
fn deconstruct_keepalive() {
    let d = Datagram::new_checked(&KEEPALIVE[..]).unwrap();
    assert_eq!(d.magic(), MAGIC);
    assert_eq!(d.version(), 2);
    assert_eq!(d.msg_type(), MessageType::Keepalive);
    assert_eq!(d.session(), 0x1234);
    assert_eq!(d.body(), &[0, 0, 0, 7]);
    let r = DatagramRepr::parse(&KEEPALIVE).unwrap();
    assert_eq!(r.message, MessageRepr::Keepalive { seq: 7 });
}

#[test]
fn construct_keepalive() {
    let mut buf = [0u8; 16];
    let mut d = Datagram::new_unchecked(&mut buf[..]);
    d.set_magic(MAGIC);
    d.set_version(VERSION);
    d.set_msg_type(MessageType::Keepalive);
    d.set_session(0x1234);
    d.body_mut().copy_from_slice(&[0, 0, 0, 7]);
    assert_eq!(buf, KEEPALIVE);
}

#[test]
fn accept_parse_emit() {
    let r = DatagramRepr::parse(&ACCEPT).unwrap();
    let want = DatagramRepr {
        session: 0x1122_3344_5566_7788,
        message: MessageRepr::AttachAccept {
            nonce: 0xa1a2_a3a4_a5a6_a7a8,
            accept: AttachAccept {
                slot: 3,
                port: 1,
                timeout_ms: 3000,
                node_guid: Guid(0x1000),
                port_guids: vec![Guid(0x1001)],
            },
        },
    };
    assert_eq!(r, want);
    assert_eq!(want.buffer_len(), ACCEPT.len());
    assert_eq!(want.to_vec().unwrap(), ACCEPT);
}

#[test]
fn accept_port_outside_ports_is_malformed() {
    let mut b = ACCEPT;
    b[14] = 2; // port 2 of a one-port CA
    assert_eq!(DatagramRepr::parse(&b), Err(Error::Malformed));
    b[14] = 0;
    assert_eq!(DatagramRepr::parse(&b), Err(Error::Malformed));
    b[14] = 1;
    b[15] = 2; // two ports announced, one present
    assert_eq!(DatagramRepr::parse(&b), Err(Error::Truncated));
}

#[test]
fn config_parse_emit() {
    let r = DatagramRepr::parse(&CONFIG).unwrap();
    assert_eq!(r.session, 9);
    assert_eq!(r.message, MessageRepr::PortConfig(config()));
    let d = DatagramRepr {
        session: 9,
        message: MessageRepr::PortConfig(config()),
    };
    assert_eq!(d.to_vec().unwrap(), CONFIG);
    // A P_Key count past the end.
    let mut b = CONFIG;
    b[23] = 3;
    assert_eq!(DatagramRepr::parse(&b), Err(Error::Truncated));
}

#[test]
fn unknown_codes_round_trip() {
    let mut b = CONFIG;
    b[13] = 9; // state 9
    b[20] = 0x3f; // MTU code 63
    let r = DatagramRepr::parse(&b).unwrap();
    let MessageRepr::PortConfig(c) = &r.message else {
        panic!("{r:?}")
    };
    assert_eq!(c.state, PortStateCode::Unknown(9));
    assert_eq!(c.mtu, Mtu::Unknown(0x3f));
    assert_eq!(r.to_vec().unwrap(), b);
    let t = [0x49, 0x42, 2, 0x7f, 0, 0, 0, 0, 0, 0, 0, 0, 0xaa, 0xbb];
    let r = DatagramRepr::parse(&t).unwrap();
    assert_eq!(
        r.message,
        MessageRepr::Unknown {
            msg_type: 0x7f,
            body: &[0xaa, 0xbb]
        }
    );
    assert_eq!(r.to_vec().unwrap(), t);
}

#[test]
fn packet_detach_request_reject() {
    let pkt = [1u8, 2, 3, 4, 5, 6];
    for m in [
        MessageRepr::Packet(&pkt),
        MessageRepr::Detach,
        MessageRepr::AttachRequest {
            hint: Guid(0x42),
            cookie: 0,
            nonce: 9,
        },
        MessageRepr::AttachChallenge {
            cookie: 7,
            nonce: 9,
        },
        MessageRepr::AttachReject {
            reason: RejectReason::NoFreeSlot,
            nonce: 9,
        },
        MessageRepr::AttachReject {
            reason: RejectReason::UnknownSession,
            nonce: 0,
        },
        MessageRepr::KeepaliveAck { seq: u32::MAX },
        MessageRepr::ClientReregister { port: 2 },
    ] {
        let d = DatagramRepr {
            session: 5,
            message: m,
        };
        let v = d.to_vec().unwrap();
        assert_eq!(DatagramRepr::parse(&v).unwrap(), d);
    }
    let v = DatagramRepr {
        session: 0,
        message: MessageRepr::Packet(&pkt),
    }
    .to_vec()
    .unwrap();
    assert_eq!(&v[12..], &pkt);
    assert_eq!(v[3], 4);
    let r = [0x49, 0x42, 2, 9, 0, 0, 0, 0, 0, 0, 0, 7, 1];
    let d = DatagramRepr::parse(&r).unwrap();
    assert_eq!(d.message, MessageRepr::ClientReregister { port: 1 });
    assert_eq!(d.to_vec().unwrap(), r);
    assert_eq!(DatagramRepr::parse(&r[..12]), Err(Error::Truncated));
}

// docs/UDP-FABRIC.md "Reliable configuration": the sequenced forms are the sequence number
// and then the unsequenced body; the acknowledgement is the number alone.
#[test]
fn sequenced_messages_and_their_acknowledgement() {
    let mut seq_config = CONFIG.to_vec();
    seq_config[3] = 10;
    seq_config.splice(12..12, [0, 0, 1, 2]);
    let d = DatagramRepr::parse(&seq_config).unwrap();
    let want = MessageRepr::SeqPortConfig {
        seq: 0x102,
        config: config(),
    };
    assert_eq!(d.message, want);
    assert_eq!(d.buffer_len(), seq_config.len());
    assert_eq!(d.to_vec().unwrap(), seq_config);
    assert_eq!(
        DatagramRepr::parse(&seq_config[..seq_config.len() - 1]),
        Err(Error::Truncated)
    );
    let r = [0x49, 0x42, 2, 11, 0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 3, 2];
    let d = DatagramRepr::parse(&r).unwrap();
    assert_eq!(
        d.message,
        MessageRepr::SeqClientReregister { seq: 3, port: 2 }
    );
    assert_eq!(d.to_vec().unwrap(), r);
    assert_eq!(DatagramRepr::parse(&r[..16]), Err(Error::Truncated));
    let a = [0x49, 0x42, 2, 12, 0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 3];
    let d = DatagramRepr::parse(&a).unwrap();
    assert_eq!(d.message, MessageRepr::ControlAck { seq: 3 });
    assert_eq!(d.to_vec().unwrap(), a);
    assert_eq!(DatagramRepr::parse(&a[..15]), Err(Error::Truncated));
}

#[test]
fn bad_magic_version_length() {
    assert_eq!(DatagramRepr::parse(&KEEPALIVE[..11]), Err(Error::Truncated));
    assert_eq!(DatagramRepr::parse(&KEEPALIVE[..15]), Err(Error::Truncated));
    let mut b = KEEPALIVE;
    b[0] = 0x45;
    assert_eq!(DatagramRepr::parse(&b), Err(Error::Malformed));
    let mut b = KEEPALIVE;
    b[2] = 1;
    assert_eq!(DatagramRepr::parse(&b), Err(Error::Unsupported));
}

// The attach's cookie and nonce (docs/UDP-FABRIC.md "Protocol"): the request carries hint,
// cookie and nonce, the challenge the cookie and the nonce; every answer to a request is
// smaller than the request (no amplification).
#[test]
fn request_and_challenge() {
    let req = [
        0x49, 0x42, 0x02, 0x01, // AttachRequest
        0, 0, 0, 0, 0, 0, 0, 0, // session 0
        0, 0, 0, 0, 0, 0, 0x10, 0x00, // hint 0x1000
        0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, // cookie
        0xa1, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7, 0xa8, // nonce
    ];
    let d = DatagramRepr::parse(&req).unwrap();
    assert_eq!(
        d.message,
        MessageRepr::AttachRequest {
            hint: Guid(0x1000),
            cookie: 0x0102_0304_0506_0708,
            nonce: 0xa1a2_a3a4_a5a6_a7a8,
        }
    );
    assert_eq!(d.to_vec().unwrap(), req);
    assert_eq!(DatagramRepr::parse(&req[..35]), Err(Error::Truncated));
    let ch = [
        0x49, 0x42, 0x02, 0x0d, // AttachChallenge
        0, 0, 0, 0, 0, 0, 0, 0, // session 0
        0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, // cookie
        0xa1, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7, 0xa8, // nonce
    ];
    let d = DatagramRepr::parse(&ch).unwrap();
    assert_eq!(
        d.message,
        MessageRepr::AttachChallenge {
            cookie: 0x0102_0304_0506_0708,
            nonce: 0xa1a2_a3a4_a5a6_a7a8,
        }
    );
    assert_eq!(d.to_vec().unwrap(), ch);
    assert_eq!(DatagramRepr::parse(&ch[..27]), Err(Error::Truncated));
    assert!(ch.len() < req.len(), "the challenge does not amplify");
    let rej = [
        0x49, 0x42, 0x02, 0x03, // AttachReject
        0, 0, 0, 0, 0, 0, 0, 0,    // session 0
        0x01, // no free slot
        0xa1, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7, 0xa8, // nonce
    ];
    let d = DatagramRepr::parse(&rej).unwrap();
    assert_eq!(
        d.message,
        MessageRepr::AttachReject {
            reason: RejectReason::NoFreeSlot,
            nonce: 0xa1a2_a3a4_a5a6_a7a8,
        }
    );
    assert_eq!(d.to_vec().unwrap(), rej);
    assert!(rej.len() < req.len(), "the reject does not amplify");
    // A reject without a nonce (to a Keepalive) is the reason alone; a part of a nonce is not.
    for n in 14..21 {
        assert_eq!(DatagramRepr::parse(&rej[..n]), Err(Error::Truncated), "{n}");
    }
    let bare = DatagramRepr::parse(&rej[..13]).unwrap();
    assert_eq!(bare.to_vec().unwrap(), rej[..13]);
}

// Across versions: the fabric answers version 1 in version 1's header, which a host of
// version 1 parses as its own reject; a host of this version reads version 1's reject.
#[test]
fn rejects_across_versions() {
    let v1 = version_reject(1);
    assert_eq!(v1, [0x49, 0x42, 1, 3, 0, 0, 0, 0, 0, 0, 0, 0, 2]);
    assert_eq!(DatagramRepr::parse(&v1), Err(Error::Unsupported));
    assert_eq!(foreign_reject(&v1), Some((1, RejectReason::BadVersion)));
    let ours = version_reject(VERSION);
    assert_eq!(
        DatagramRepr::parse(&ours).unwrap().message,
        MessageRepr::AttachReject {
            reason: RejectReason::BadVersion,
            nonce: 0,
        }
    );
    assert_eq!(foreign_reject(&ours), None, "our own version parses");
    assert_eq!(foreign_reject(&v1[..12]), None, "no reason");
    assert_eq!(foreign_reject(&KEEPALIVE), None);
    let mut k = KEEPALIVE;
    k[2] = 1;
    assert_eq!(foreign_reject(&k), None, "not a reject");
}

#[test]
fn emit_refuses_short_buffer_and_uncarriable() {
    let d = DatagramRepr {
        session: 1,
        message: MessageRepr::Keepalive { seq: 1 },
    };
    assert_eq!(d.emit(&mut [0u8; 15]), Err(Error::Truncated));
    let bad = DatagramRepr {
        session: 1,
        message: MessageRepr::AttachAccept {
            nonce: 1,
            accept: AttachAccept {
                slot: 0,
                port: 2,
                timeout_ms: 0,
                node_guid: Guid(1),
                port_guids: vec![Guid(2)],
            },
        },
    };
    assert_eq!(bad.to_vec(), Err(Error::Malformed));
}

proptest! {
    #[test]
    fn random_bytes_never_panic(data in proptest::collection::vec(any::<u8>(), 0..200)) {
        let _ = DatagramRepr::parse(&data);
        if let Some((v, _)) = foreign_reject(&data) {
            // Only what this version does not parse.
            prop_assert!(v != VERSION);
            prop_assert_eq!(DatagramRepr::parse(&data), Err(Error::Unsupported));
        }
    }

    // The attach's messages with any hint, cookie, nonce and reason: each parses back to
    // itself, and the answers to a request (challenge, reject) are shorter than it.
    #[test]
    fn attach_messages_round_trip(
        hint in any::<u64>(),
        cookie in any::<u64>(),
        nonce in any::<u64>(),
        reason in any::<u8>(),
        slot in any::<u16>(),
        n in 1usize..8,
    ) {
        let req = DatagramRepr {
            session: 0,
            message: MessageRepr::AttachRequest { hint: Guid(hint), cookie, nonce },
        };
        let answers = [
            MessageRepr::AttachChallenge { cookie, nonce },
            MessageRepr::AttachReject { reason: RejectReason::from(reason), nonce },
            MessageRepr::AttachAccept {
                nonce,
                accept: AttachAccept {
                    slot,
                    port: 1,
                    timeout_ms: 3000,
                    node_guid: Guid(hint),
                    port_guids: (0..n as u64).map(Guid).collect(),
                },
            },
        ];
        let v = req.to_vec().unwrap();
        prop_assert_eq!(DatagramRepr::parse(&v).unwrap(), req.clone());
        for (i, message) in answers.into_iter().enumerate() {
            let d = DatagramRepr { session: 0, message };
            let w = d.to_vec().unwrap();
            prop_assert_eq!(DatagramRepr::parse(&w).unwrap(), d);
            if i < 2 {
                prop_assert!(w.len() < v.len(), "{} bytes against {}", w.len(), v.len());
            }
        }
    }

    #[test]
    fn random_bodies_never_panic(t in 0u8..15, body in proptest::collection::vec(any::<u8>(), 0..100)) {
        let mut data = vec![0x49, 0x42, 2, t, 0, 0, 0, 0, 0, 0, 0, 1];
        data.extend_from_slice(&body);
        if let Ok(r) = DatagramRepr::parse(&data) {
            // What parses emits again, and parses to the same thing.
            let v = r.to_vec().unwrap();
            prop_assert_eq!(DatagramRepr::parse(&v).unwrap(), r);
        }
    }
}

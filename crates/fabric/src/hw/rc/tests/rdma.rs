//! RDMA against registered memory (IBA 1 §10.6), two HCAs over the simulator: WRITE and READ across
//! the path MTU land in and come from the regions, the responder's R_Key, range and access checks
//! NAK remote access error (IBA 1 §9.7.5.2.5, §10.6.3.1), a READ's bad local destination completes
//! with a local protection error, and the requester's RNR and transport retry statuses (IBA 1
//! §9.7.5.2.8, §9.7.6.1.3).

use super::hca::{connect_with, create, run_until_completions, End};
use super::Pool;
use crate::hw::hca::tests::{pair, Pair as HcaPair};
use crate::hw::hca::{Hca, HcaDropReason, ModifyQp};
use crate::hw::link::Fault;
use crate::hw::verbs::{
    Access, Completion, ConnectedAttr, LocalBuf, LocalSge, MrHandle, QpState, QpType, RecvWr,
    SendOp, SendWr, WcOpcode, WcStatus,
};
use ipoib_wire::Mtu;
use std::time::Duration;

/// Two connected RC QPs: `a` on LID 1, `b` on LID 2.
struct Rig {
    p: HcaPair,
    a: End,
    b: End,
    tweak: fn(&mut ConnectedAttr),
}

fn rig(seed: u64, tweak: fn(&mut ConnectedAttr)) -> Rig {
    let mut p = pair(seed);
    p.sim.run_until_idle(100);
    let a = create(&mut p.sim, p.a, QpType::Rc);
    let b = create(&mut p.sim, p.b, QpType::Rc);
    connect_with(&mut p.sim, &a, b.qpn, 2, 0, tweak);
    connect_with(&mut p.sim, &b, a.qpn, 1, 0, tweak);
    Rig { p, a, b, tweak }
}

impl Rig {
    fn on<R>(&mut self, end: Side, f: impl FnOnce(&mut Hca) -> R) -> R {
        let node = match end {
            Side::A => self.a.node,
            Side::B => self.b.node,
        };
        self.p
            .sim
            .with_node::<Hca, _>(node, |h, _, _| f(h))
            .expect("hca")
    }

    fn post(&mut self, wr_id: u64, op: SendOp, data: Vec<u8>) {
        let qpn = self.a.qpn;
        self.on(Side::A, |h| h.post_send(qpn, wr(wr_id, op, data)))
            .expect("post_send");
    }

    /// Runs until `a` has a completion and returns it.
    fn complete(&mut self) -> Completion {
        run_until_completions(&mut self.p.sim, &self.a, 1);
        let cq = self.a.cq;
        let mut got = self.on(Side::A, |h| h.poll_cq(cq, 1));
        got.pop().expect("a completion")
    }

    fn state(&mut self, end: Side) -> QpState {
        let qpn = match end {
            Side::A => self.a.qpn,
            Side::B => self.b.qpn,
        };
        self.on(end, |h| h.qp_info(qpn).expect("qp").state)
    }

    /// Both QPs back to Reset and connected again (after an error took them down).
    fn reconnect(&mut self) {
        self.p.sim.run_until_idle(100_000);
        let (a, b) = (self.a.qpn, self.b.qpn);
        self.on(Side::A, |h| h.modify_qp(a, ModifyQp::Reset))
            .expect("reset a");
        self.on(Side::B, |h| h.modify_qp(b, ModifyQp::Reset))
            .expect("reset b");
        connect_with(&mut self.p.sim, &self.a, b, 2, 0, self.tweak);
        connect_with(&mut self.p.sim, &self.b, a, 1, 0, self.tweak);
    }
}

#[derive(Clone, Copy)]
enum Side {
    A,
    B,
}

fn wr(wr_id: u64, op: SendOp, data: Vec<u8>) -> SendWr {
    SendWr {
        wr_id,
        op,
        data,
        local: None,
        ud: None,
        signaled: true,
        solicited: false,
    }
}

const ALL: Access = Access::LOCAL_WRITE
    .union(Access::REMOTE_WRITE)
    .union(Access::REMOTE_READ);

fn write_to(mr: &MrHandle, offset: u64) -> SendOp {
    SendOp::RdmaWrite {
        remote_addr: mr.addr + offset,
        rkey: mr.rkey,
    }
}

fn read_into(remote: &MrHandle, offset: u64, len: u32, local: &MrHandle) -> SendOp {
    SendOp::RdmaRead {
        remote_addr: remote.addr + offset,
        rkey: remote.rkey,
        len,
        local: Some(LocalBuf {
            lkey: local.lkey,
            addr: local.addr,
        }),
    }
}

/// IBA 1 §9.7.5.2.5, §10.6: 1 MiB written into a remote region and read back into a local one, 512
/// packets each way at a 2048-byte path MTU, through a link that drops, duplicates, reorders and
/// corrupts: the bytes arrive where the RETH says and nowhere else.
#[test]
fn write_then_read_back_1mib_across_packets() {
    const LEN: usize = 1 << 20;
    const AT: usize = 4096;
    let mut r = rig(41, |_| {});
    let faults = vec![
        Fault::Drop(0.01),
        Fault::Duplicate(0.01),
        Fault::Reorder {
            p: 0.01,
            delay: Duration::from_micros(3),
        },
        Fault::Corrupt(0.005),
    ];
    r.p.sim.set_faults(r.p.link, None, faults);
    let mb = r.on(Side::B, |h| h.reg_mr(LEN + 2 * AT, ALL)).unwrap();
    let ma = r
        .on(Side::A, |h| h.reg_mr(LEN, Access::LOCAL_WRITE))
        .unwrap();
    let pattern = Pool::new(LEN).message(7, LEN);
    let data = r.on(Side::A, |h| {
        h.mr_write(ma.lkey, 0, &pattern).unwrap();
        h.mr_read(ma.lkey, 0, LEN).unwrap().to_vec()
    });
    r.post(1, write_to(&mb, AT as u64), data);
    let c = r.complete();
    assert_eq!(
        (c.wr_id, c.status, c.opcode, c.byte_len),
        (1, WcStatus::Success, WcOpcode::RdmaWrite, LEN as u32)
    );
    r.on(Side::B, |h| {
        let all = h.mr_read(mb.lkey, 0, LEN + 2 * AT).unwrap();
        assert!(all[..AT].iter().all(|&x| x == 0), "nothing before");
        assert!(all[AT..AT + LEN] == pattern[..], "the bytes written");
        assert!(all[AT + LEN..].iter().all(|&x| x == 0), "nothing after");
    });
    r.on(Side::A, |h| {
        h.mr_slice_mut(ma.lkey, 0, LEN).unwrap().fill(0)
    });
    r.post(2, read_into(&mb, AT as u64, LEN as u32, &ma), Vec::new());
    let c = r.complete();
    assert_eq!(
        (c.wr_id, c.status, c.opcode, c.byte_len),
        (2, WcStatus::Success, WcOpcode::RdmaRead, LEN as u32)
    );
    assert!(c.data.is_empty(), "the data is in the region");
    r.on(Side::A, |h| {
        assert!(h.mr_read(ma.lkey, 0, LEN).unwrap() == &pattern[..]);
    });
    let drops = r.on(Side::B, |h| {
        let c = h.counters();
        c.drops(HcaDropReason::BadIcrc) + c.drops(HcaDropReason::BadVcrc)
    });
    assert!(drops > 0, "the link did corrupt packets");
}

/// Two QPs of one HCA connected to each other (the packets loop back inside the HCA, IBA 1
/// §10.6: both reach the same regions): a WRITE and a READ between two regions of the same HCA.
#[test]
fn rdma_between_qps_of_one_hca() {
    const LEN: usize = 10_000;
    let mut p = pair(43);
    p.sim.run_until_idle(100);
    let a = create(&mut p.sim, p.a, QpType::Rc);
    let b = create(&mut p.sim, p.a, QpType::Rc);
    connect_with(&mut p.sim, &a, b.qpn, 1, 0, |_| {});
    connect_with(&mut p.sim, &b, a.qpn, 1, 0, |_| {});
    let wire = p.sim.stats().packets;
    let pattern = Pool::new(LEN).message(3, LEN);
    let (src, dst) = p
        .sim
        .with_node::<Hca, _>(p.a, |h, _, _| {
            let src = h.reg_mr(LEN, Access::LOCAL_WRITE).unwrap();
            let dst = h.reg_mr(2 * LEN, ALL).unwrap();
            h.mr_write(src.lkey, 0, &pattern).unwrap();
            let data = h.mr_read(src.lkey, 0, LEN).unwrap().to_vec();
            h.post_send(a.qpn, wr(1, write_to(&dst, 0), data)).unwrap();
            h.mr_slice_mut(src.lkey, 0, LEN).unwrap().fill(0);
            let back = read_into(&dst, 0, LEN as u32, &src);
            h.post_send(a.qpn, wr(2, back, Vec::new())).unwrap();
            (src, dst)
        })
        .unwrap();
    run_until_completions(&mut p.sim, &a, 2);
    p.sim.with_node::<Hca, _>(p.a, |h, _, _| {
        let got: Vec<_> = h
            .poll_cq(a.cq, 8)
            .iter()
            .map(|c| (c.wr_id, c.status))
            .collect();
        assert_eq!(got, vec![(1, WcStatus::Success), (2, WcStatus::Success)]);
        assert!(h.mr_read(dst.lkey, 0, LEN).unwrap() == &pattern[..]);
        assert!(h.mr_read(src.lkey, 0, LEN).unwrap() == &pattern[..]);
    });
    assert_eq!(p.sim.stats().packets, wire, "nothing on the wire");
}

/// What a bad RDMA request gets wrong.
#[derive(Debug, Clone, Copy)]
enum Bad {
    /// An R_Key no region has.
    UnknownRkey,
    /// The region's L_Key instead of its R_Key.
    LkeyAsRkey,
    /// The last bytes run past the end (a multi-packet WRITE: nothing lands, not even the start).
    PastTheEnd,
    /// The address is one byte before the region.
    BeforeTheStart,
    /// The region grants remote read, not remote write.
    NoRemoteWrite,
    /// The region was deregistered; a new one sits at the same address.
    Deregistered,
}

/// IBA 1 §9.7.5.2.5, §10.6.3.1: an RDMA WRITE with a bad R_Key, outside the region, to a region
/// without remote write, or to a deregistered region is NAKed remote access error: the requester's
/// WR completes with RemAccessErr, both QPs go to the error state, and the region is untouched.
#[test]
fn bad_rdma_writes_get_remote_access_error_and_change_nothing() {
    const LEN: usize = 8192;
    for (i, bad) in [
        Bad::UnknownRkey,
        Bad::LkeyAsRkey,
        Bad::PastTheEnd,
        Bad::BeforeTheStart,
        Bad::NoRemoteWrite,
        Bad::Deregistered,
    ]
    .into_iter()
    .enumerate()
    {
        let mut r = rig(50 + i as u64, |_| {});
        let access = match bad {
            Bad::NoRemoteWrite => Access::LOCAL_WRITE | Access::REMOTE_READ,
            _ => ALL,
        };
        let mut mb = r.on(Side::B, |h| h.reg_mr(LEN, access)).unwrap();
        let target = mb;
        if let Bad::Deregistered = bad {
            mb = r.on(Side::B, |h| {
                h.dereg_mr(target.lkey).unwrap();
                h.reg_mr_at(target.addr, LEN, ALL).unwrap()
            });
            assert_ne!(mb.rkey, target.rkey, "{bad:?}: keys are not reused at once");
        }
        r.on(Side::B, |h| {
            h.mr_slice_mut(mb.lkey, 0, LEN).unwrap().fill(0xab)
        });
        let (addr, rkey, len) = match bad {
            Bad::UnknownRkey => (target.addr, 0x00ab_cdef, 100),
            Bad::LkeyAsRkey => (target.addr, target.lkey, 100),
            Bad::PastTheEnd => (target.addr + LEN as u64 - 5000, target.rkey, 5001),
            Bad::BeforeTheStart => (target.addr - 1, target.rkey, 100),
            Bad::NoRemoteWrite | Bad::Deregistered => (target.addr, target.rkey, 100),
        };
        let op = SendOp::RdmaWrite {
            remote_addr: addr,
            rkey,
        };
        r.post(9, op, vec![0x11; len]);
        let c = r.complete();
        assert_eq!(
            (c.wr_id, c.status, c.opcode),
            (9, WcStatus::RemAccessErr, WcOpcode::RdmaWrite),
            "{bad:?}"
        );
        r.p.sim.run_until_idle(100_000);
        assert_eq!(r.state(Side::A), QpState::Err, "{bad:?}");
        assert_eq!(r.state(Side::B), QpState::Err, "{bad:?}");
        r.on(Side::B, |h| {
            let bytes = h.mr_read(mb.lkey, 0, LEN).unwrap();
            assert!(
                bytes.iter().all(|&x| x == 0xab),
                "{bad:?}: region untouched"
            );
        });
    }
}

/// IBA 1 §9.7.5.2.5, §10.6.3.1: an RDMA READ of a region without remote read, or past its end,
/// is NAKed remote access error; the local destination is untouched.
#[test]
fn bad_rdma_reads_get_remote_access_error() {
    for (i, (access, offset)) in [(Access::LOCAL_WRITE | Access::REMOTE_WRITE, 0), (ALL, 4000)]
        .into_iter()
        .enumerate()
    {
        let mut r = rig(60 + i as u64, |_| {});
        let mb = r.on(Side::B, |h| h.reg_mr(4096, access)).unwrap();
        let ma = r
            .on(Side::A, |h| h.reg_mr(4096, Access::LOCAL_WRITE))
            .unwrap();
        r.on(Side::A, |h| {
            h.mr_slice_mut(ma.lkey, 0, 4096).unwrap().fill(0xcd)
        });
        r.post(3, read_into(&mb, offset, 100, &ma), Vec::new());
        let c = r.complete();
        assert_eq!(
            (c.wr_id, c.status, c.opcode),
            (3, WcStatus::RemAccessErr, WcOpcode::RdmaRead)
        );
        r.on(Side::A, |h| {
            let bytes = h.mr_read(ma.lkey, 0, 4096).unwrap();
            assert!(bytes.iter().all(|&x| x == 0xcd), "case {i}: untouched");
        });
    }
}

/// IBA 1 §10.6.3.1, §10.3.1: an RDMA READ whose local destination has an unknown L_Key, lies
/// partly outside its region, is in a region without local write, or in a deregistered region
/// completes with a local protection error; no byte lands, the requester's QP goes to the error
/// state, the responder's stays in RTS (it did nothing wrong).
#[test]
fn read_into_bad_local_buffer_is_a_local_protection_error() {
    const LEN: usize = 3000;
    for case in 0..4u64 {
        let mut r = rig(70 + case, |_| {});
        let mb = r.on(Side::B, |h| h.reg_mr(LEN, ALL)).unwrap();
        r.on(Side::B, |h| {
            h.mr_slice_mut(mb.lkey, 0, LEN).unwrap().fill(0x5a)
        });
        let access = if case == 2 {
            Access::NONE
        } else {
            Access::LOCAL_WRITE
        };
        let ma = r.on(Side::A, |h| h.reg_mr(LEN, access)).unwrap();
        r.on(Side::A, |h| {
            h.mr_slice_mut(ma.lkey, 0, LEN).unwrap().fill(0xcd)
        });
        let mut local = LocalBuf {
            lkey: ma.lkey,
            addr: ma.addr,
        };
        match case {
            0 => local.lkey = ma.rkey,
            1 => local.addr += 1,
            3 => {
                let other = r.on(Side::A, |h| {
                    let o = h.reg_mr(LEN, Access::LOCAL_WRITE).unwrap();
                    h.dereg_mr(o.lkey).unwrap();
                    o
                });
                local = LocalBuf {
                    lkey: other.lkey,
                    addr: other.addr,
                };
            }
            _ => {}
        }
        let op = SendOp::RdmaRead {
            remote_addr: mb.addr,
            rkey: mb.rkey,
            len: LEN as u32,
            local: Some(local),
        };
        r.post(4, op, Vec::new());
        let c = r.complete();
        assert_eq!(
            (c.wr_id, c.status, c.opcode),
            (4, WcStatus::LocProtErr, WcOpcode::RdmaRead),
            "case {case}"
        );
        r.p.sim.run_until_idle(100_000);
        assert_eq!(r.state(Side::A), QpState::Err);
        assert_eq!(r.state(Side::B), QpState::Rts);
        r.on(Side::A, |h| {
            let bytes = h.mr_read(ma.lkey, 0, LEN).unwrap();
            assert!(bytes.iter().all(|&x| x == 0xcd), "case {case}: untouched");
        });
    }
}

/// IBA 1 §9.7.5.2.8: with no receive posted the responder RNR NAKs. With rnr_retry 0 the first RNR
/// NAK ends the SEND (and an RDMA WRITE with immediate, whose bytes do not land) with
/// RnrRetryExcErr; with rnr_retry 7 the requester waits as long as it takes and succeeds once a
/// receive is posted.
#[test]
fn rnr_retry_zero_fails_and_seven_waits() {
    for with_imm in [false, true] {
        let mut r = rig(80 + u64::from(with_imm), |a| a.rnr_retry = 0);
        let mb = r.on(Side::B, |h| h.reg_mr(64, ALL)).unwrap();
        let op = if with_imm {
            SendOp::RdmaWriteWithImm {
                remote_addr: mb.addr,
                rkey: mb.rkey,
                imm: 5,
            }
        } else {
            SendOp::Send
        };
        r.post(1, op, vec![3; 64]);
        let c = r.complete();
        assert_eq!((c.wr_id, c.status), (1, WcStatus::RnrRetryExcErr));
        assert_eq!(r.state(Side::A), QpState::Err);
        r.on(Side::B, |h| {
            assert!(h.mr_read(mb.lkey, 0, 64).unwrap().iter().all(|&x| x == 0));
        });
    }
    let mut r = rig(82, |a| a.rnr_retry = 7);
    r.post(1, SendOp::Send, vec![3; 64]);
    let t = r.p.sim.now() + Duration::from_millis(100);
    r.p.sim.run_until(t);
    let cq = r.a.cq;
    assert_eq!(r.on(Side::A, |h| h.cq_len(cq)), 0, "still retrying");
    let qpn = r.b.qpn;
    let recv = RecvWr {
        wr_id: 40,
        capacity: 64,
    };
    r.on(Side::B, |h| h.post_recv(qpn, recv)).unwrap();
    let c = r.complete();
    assert_eq!((c.wr_id, c.status), (1, WcStatus::Success));
    run_until_completions(&mut r.p.sim, &r.b, 1);
    let cq = r.b.cq;
    let got = r.on(Side::B, |h| h.poll_cq(cq, 8));
    assert_eq!(got.len(), 1);
    assert_eq!((got[0].wr_id, &got[0].data[..]), (40, &[3u8; 64][..]));
}

/// IBA 1 §9.7.6.1.3, §10.3.1: the peer's QP is gone (destroyed; its HCA drops the packets as for
/// an unknown QP), so no ACK comes: after retry_count retries the oldest WR completes with
/// RetryExcErr and the next with WrFlushErr.
#[test]
fn retry_exceeded_when_the_peer_qp_is_gone() {
    let mut r = rig(90, |a| {
        a.retry_count = 2;
        a.timeout = 8;
    });
    let mb = r.on(Side::B, |h| h.reg_mr(64, ALL)).unwrap();
    let qpn = r.b.qpn;
    r.on(Side::B, |h| h.destroy_qp(qpn)).unwrap();
    r.post(1, write_to(&mb, 0), vec![1; 64]);
    r.post(2, SendOp::Send, vec![2; 8]);
    let c = r.complete();
    assert_eq!((c.wr_id, c.status), (1, WcStatus::RetryExcErr));
    let c = r.complete();
    assert_eq!((c.wr_id, c.status), (2, WcStatus::WrFlushErr));
    let unknown = r.on(Side::B, |h| h.counters().drops(HcaDropReason::UnknownQp));
    assert_eq!(unknown, 6, "both packets, at the first try and two retries");
}

mod props {
    use super::*;
    use proptest::prelude::*;

    const REGION: usize = 3000;

    /// One RDMA operation at `offset` from the remote region's first byte (negative: before it).
    #[derive(Debug, Clone, Copy)]
    struct Op {
        write: bool,
        offset: i64,
        len: usize,
    }

    fn op() -> impl Strategy<Value = Op> {
        (any::<bool>(), -300i64..REGION as i64 + 300, 0usize..1400)
            .prop_map(|(write, offset, len)| Op { write, offset, len })
    }

    fn mtu256(a: &mut ConnectedAttr) {
        a.path_mtu = Mtu::Mtu256;
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

        /// IBA 1 §9.7.5.2.5, §10.6.3.1: random RDMA WRITEs and READs at a 256-byte path MTU, within
        /// the region and across its bounds, match a model of the region: one inside succeeds
        /// (a WRITE changes the model, a READ returns it), one crossing a bound is NAKed remote
        /// access error and changes nothing (the QPs are then reset and connected again).
        #[test]
        fn rdma_matches_a_model(seed in 0u64..1000, ops in proptest::collection::vec(op(), 1..8)) {
            let mut r = rig(seed, mtu256);
            let mb = r.on(Side::B, |h| h.reg_mr(REGION, ALL)).unwrap();
            let ma = r.on(Side::A, |h| h.reg_mr(REGION, Access::LOCAL_WRITE)).unwrap();
            let mut model = vec![0u8; REGION];
            for (k, o) in ops.iter().enumerate() {
                let inside = o.offset >= 0 && o.offset as usize + o.len <= REGION;
                let va = mb.addr.wrapping_add_signed(o.offset);
                r.on(Side::A, |h| h.mr_slice_mut(ma.lkey, 0, REGION).unwrap().fill(0xee));
                let data: Vec<u8> = (0..o.len).map(|i| (i * 31 + k * 7 + 1) as u8).collect();
                let op = if o.write {
                    SendOp::RdmaWrite { remote_addr: va, rkey: mb.rkey }
                } else {
                    SendOp::RdmaRead {
                        remote_addr: va,
                        rkey: mb.rkey,
                        len: o.len as u32,
                        local: Some(LocalBuf { lkey: ma.lkey, addr: ma.addr }),
                    }
                };
                r.post(k as u64, op, if o.write { data.clone() } else { Vec::new() });
                let c = r.complete();
                let want = if inside { WcStatus::Success } else { WcStatus::RemAccessErr };
                prop_assert_eq!((c.wr_id, c.status), (k as u64, want), "{:?}", o);
                let at = o.offset.max(0) as usize;
                if inside && o.write {
                    model[at..at + o.len].copy_from_slice(&data);
                }
                let local = r.on(Side::A, |h| h.mr_read(ma.lkey, 0, REGION).unwrap().to_vec());
                if inside && !o.write {
                    prop_assert!(local[..o.len] == model[at..at + o.len], "{:?}", o);
                    prop_assert!(local[o.len..].iter().all(|&x| x == 0xee));
                } else {
                    prop_assert!(local.iter().all(|&x| x == 0xee), "{:?}", o);
                }
                let remote = r.on(Side::B, |h| h.mr_read(mb.lkey, 0, REGION).unwrap().to_vec());
                prop_assert!(remote == model, "{:?}", o);
                if !inside {
                    r.reconnect();
                }
            }
        }
    }
}

/// One gather element: `len` bytes at `offset` of `mr`.
fn sge(mr: &MrHandle, offset: u64, len: u32) -> Option<LocalSge> {
    Some(LocalSge {
        buf: LocalBuf {
            lkey: mr.lkey,
            addr: mr.addr + offset,
        },
        len,
    })
}

/// IBA 1 §10.6: an RDMA WRITE and a SEND that name their bytes in a local region (one gather
/// element, read as each packet is built) deliver those bytes and complete with the message
/// length; an L_Key that names no region, or a range past the region's end, completes the
/// request with a local protection error, writes nothing and takes the QP to the error state
/// (IBA 1 §10.6.3.1, §10.3.1).
#[test]
fn write_and_send_take_their_bytes_from_a_local_region() {
    const LEN: usize = 10_000;
    let mut r = rig(47, |_| {});
    let mb = r.on(Side::B, |h| h.reg_mr(2 * LEN, ALL)).unwrap();
    let ma = r.on(Side::A, |h| h.reg_mr(LEN, Access::NONE)).unwrap();
    let pattern = Pool::new(LEN).message(9, LEN);
    r.on(Side::A, |h| {
        h.mr_slice_mut(ma.lkey, 0, LEN)
            .unwrap()
            .copy_from_slice(&pattern)
    });
    let post = |r: &mut Rig, wr_id: u64, op: SendOp, local: Option<LocalSge>| {
        let qpn = r.a.qpn;
        let w = SendWr {
            local,
            ..wr(wr_id, op, Vec::new())
        };
        r.on(Side::A, |h| h.post_send(qpn, w)).expect("post_send");
    };
    post(&mut r, 1, write_to(&mb, 0), sge(&ma, 0, LEN as u32));
    let c = r.complete();
    assert_eq!(
        (c.wr_id, c.status, c.opcode, c.byte_len),
        (1, WcStatus::Success, WcOpcode::RdmaWrite, LEN as u32)
    );
    r.on(Side::B, |h| {
        assert!(h.mr_read(mb.lkey, 0, LEN).unwrap() == &pattern[..]);
    });

    let (bq, bcq) = (r.b.qpn, r.b.cq);
    r.on(Side::B, |h| {
        h.post_recv(
            bq,
            RecvWr {
                wr_id: 7,
                capacity: 4096,
            },
        )
    })
    .unwrap();
    post(&mut r, 2, SendOp::Send, sge(&ma, 100, 3000));
    let c = r.complete();
    assert_eq!(
        (c.wr_id, c.status, c.byte_len),
        (2, WcStatus::Success, 3000)
    );
    run_until_completions(&mut r.p.sim, &r.b, 1);
    let got = r.on(Side::B, |h| h.poll_cq(bcq, 1)).pop().unwrap();
    assert_eq!((got.wr_id, got.status), (7, WcStatus::Success));
    assert!(got.data == pattern[100..3100]);

    let no_region = Some(LocalSge {
        buf: LocalBuf {
            lkey: ma.lkey ^ 0x5a5a,
            addr: ma.addr,
        },
        len: 64,
    });
    for (wr_id, local) in [(3, no_region), (4, sge(&ma, 1, LEN as u32))] {
        post(&mut r, wr_id, write_to(&mb, LEN as u64), local);
        let c = r.complete();
        assert_eq!((c.wr_id, c.status), (wr_id, WcStatus::LocProtErr));
        assert_eq!(r.state(Side::A), QpState::Err);
        r.on(Side::B, |h| {
            let rest = h.mr_read(mb.lkey, LEN, LEN).unwrap();
            assert!(rest.iter().all(|&x| x == 0), "nothing written");
        });
        r.reconnect();
    }
}

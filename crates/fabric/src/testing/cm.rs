//! The Communication Manager on a subnet's hosts, for the CM tests (IBA 1 chapter 12): a 3-host
//! subnet (host 0 runs the SM) with the CM installed on hosts [`A`] and [`B`] and A's PathRecord
//! to B, the CM MADs a capture holds, drop filters that lose one chosen packet, and tshark.

use crate::hw::sim::{DropFilter, NodeId, Simulator};
use crate::hw::topology::Topology;
use crate::node::cm::{self, CmApp, CmAppConfig, CmHandle};
use crate::node::host::Host;
use crate::node::subnet::{Subnet, SubnetOptions};
use crate::Instant;
use ipoib_proto::cm::CmConfig;
use ipoib_proto::mad_agent::MadAddr;
use ipoib_wire::cm::CmMessage;
use ipoib_wire::mad::{MadHeaderRepr, Method, MgmtClass, MAD_HEADER_LEN};
use ipoib_wire::packet::Packet;
use ipoib_wire::pcap::CaptureReader;
use ipoib_wire::sa::{pr_mask, PathRecordRepr, SaAttribute, SaMadRepr};
use ipoib_wire::QKey;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// The active host of [`pair`].
pub const A: usize = 1;
/// The passive host of [`pair`].
pub const B: usize = 2;

/// Runs `f` on host `i` (its device, the current time).
pub fn with_host<R>(net: &mut Subnet, i: usize, f: impl FnOnce(&mut Host, Instant) -> R) -> R {
    let node = net.host(i).node;
    net.sim_mut()
        .with_node::<Host, _>(node, |h, now, _| f(h, now))
        .expect("a host")
}

/// Host `i`'s CM application.
pub fn cm_app(net: &Subnet, i: usize, h: CmHandle) -> &CmApp {
    net.host_device(i).app::<CmApp>(h.app).expect("the CM app")
}

/// The CM application of the host on `node`, read from the simulator (for `run_while_not`).
pub fn cm_app_in(sim: &Simulator, node: NodeId, h: CmHandle) -> &CmApp {
    sim.node::<Host>(node)
        .and_then(|x| x.app::<CmApp>(h.app))
        .expect("the CM app")
}

/// Runs until `done` holds for the CM applications of [`A`] and [`B`], at most `limit` of
/// virtual time; true when it held.
pub fn run_until(
    net: &mut Subnet,
    (a, b): (CmHandle, CmHandle),
    limit: Duration,
    done: impl Fn(&CmApp, &CmApp) -> bool,
) -> bool {
    let (na, nb) = (net.host(A).node, net.host(B).node);
    let deadline = net.sim().now() + limit;
    net.sim_mut().run_while_not(deadline, |sim| {
        done(cm_app_in(sim, na, a), cm_app_in(sim, nb, b))
    })
}

/// The PathRecord from host `from` to host `to`, asked of the SA by `from`.
pub fn path_record(net: &mut Subnet, from: usize, to: usize) -> PathRecordRepr {
    let query = PathRecordRepr {
        sgid: net.gid(from),
        dgid: net.gid(to),
        ..PathRecordRepr::default()
    };
    let m = SaMadRepr::request(
        Method::Get,
        0,
        pr_mask::SGID | pr_mask::DGID,
        SaAttribute::PathRecord(query),
    );
    let resp = net
        .sa_call(from, m, Duration::from_secs(5))
        .expect("a PathRecord");
    let Some(SaAttribute::PathRecord(pr)) = resp.attribute else {
        panic!("GetResp(PathRecord): {resp:?}");
    };
    assert_eq!((pr.slid, pr.dlid), (net.lid(from), net.lid(to)));
    pr
}

/// The QP1 address of a path's far end (where a SIDR_REQ over `pr` goes).
pub fn gsi_over(pr: &PathRecordRepr) -> MadAddr {
    MadAddr {
        lid: pr.dlid,
        qpn: 1,
        qkey: QKey::GSI,
        sl: pr.sl,
        pkey: pr.pkey,
        grh: None,
    }
}

/// A subnet with the CM on [`A`] and [`B`].
pub struct Pair {
    /// The subnet (capture on).
    pub net: Subnet,
    /// A's CM.
    pub a: CmHandle,
    /// B's CM.
    pub b: CmHandle,
    /// A's path to B.
    pub path: PathRecordRepr,
}

/// Builds a 3-host subnet with capture on, installs the CM on hosts [`A`] and [`B`] with the
/// default settings as `tune(host, agent, application)` changes them, and asks the SA for A's
/// path to B.
pub fn pair(seed: u64, tune: impl Fn(usize, &mut CmConfig, &mut CmAppConfig)) -> Pair {
    let mut opts = SubnetOptions::new(Topology::single_switch(3).expect("a topology"), seed);
    opts.capture = true;
    let mut net = Subnet::build(opts).expect("a subnet");
    assert!(net.run_until_joined(super::at(10)), "subnet up");
    let mut handles = Vec::new();
    for i in [A, B] {
        let rng = net.sim().fork_rng(0xc0 + i as u64);
        let port = net.host(i).port;
        handles.push(with_host(&mut net, i, |h, _| {
            let mut agent = CmConfig::new(h.hca().node_guid());
            let mut app = CmAppConfig::new(port);
            tune(i, &mut agent, &mut app);
            cm::install_with(h, agent, app, rng)
        }));
    }
    let path = path_record(&mut net, A, B);
    Pair {
        net,
        a: handles[0],
        b: handles[1],
        path,
    }
}

/// One CM MAD in a capture.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CmMad {
    /// When it was put on a link (virtual nanoseconds; 0 if the capture has no time).
    pub ts_ns: u64,
    /// Attribute ID (the message).
    pub attr: u16,
    /// Transaction ID.
    pub tid: u64,
    /// Local communication ID (SIDR: the Request ID).
    pub local: u32,
    /// Remote communication ID (0 where the message has none).
    pub remote: u32,
    /// Source LID.
    pub slid: u16,
    /// Destination LID.
    pub dlid: u16,
    /// The message.
    pub msg: CmMessage,
}

impl CmMad {
    /// What identifies one sending of the MAD: everything but the time and the link (the copies
    /// of one MAD on the links it crosses share it; a resent MAD has it too).
    pub fn key(&self) -> (u16, u64, u32, u32, u16, u16) {
        (
            self.attr,
            self.tid,
            self.local,
            self.remote,
            self.slid,
            self.dlid,
        )
    }
}

/// The CM MAD of a packet (LRH..VCRC), if it is one: MADs of class 0x07 on QP1.
fn cm_mad_of(pkt: &Packet<'_>) -> Option<(MadHeaderRepr, CmMessage)> {
    if pkt.bth.map(|b| b.dest_qp) != Some(1) {
        return None;
    }
    let h = MadHeaderRepr::parse_bytes(pkt.payload).ok()?;
    if h.mgmt_class != MgmtClass::ComMgt {
        return None;
    }
    let body = pkt.payload.get(MAD_HEADER_LEN..)?;
    let m = CmMessage::parse(h.attribute_id, body).ok()?;
    Some((h, m))
}

/// Every CM MAD the capture holds with good CRCs, in order (a packet a `Corrupt` fault damaged is
/// left out: the receiving HCA drops it too; a packet a drop filter or `Drop` fault lost is in).
pub fn cm_mads(pcap: &[u8]) -> Vec<CmMad> {
    let mut out = Vec::new();
    for p in CaptureReader::read_all(pcap).expect("a readable capture") {
        let Ok(pkt) = Packet::parse(&p.data) else {
            continue;
        };
        if !pkt.crc_ok() {
            continue;
        }
        let Some((h, msg)) = cm_mad_of(&pkt) else {
            continue;
        };
        let (local, remote) = match msg {
            CmMessage::Req(r) => (r.local_comm_id, 0),
            CmMessage::Rep(r) => (r.local_comm_id, r.remote_comm_id),
            CmMessage::Rtu(r) => (r.local_comm_id, r.remote_comm_id),
            CmMessage::Dreq(r) => (r.local_comm_id, r.remote_comm_id),
            CmMessage::Drep(r) => (r.local_comm_id, r.remote_comm_id),
            CmMessage::Rej(r) => (r.local_comm_id, r.remote_comm_id),
            CmMessage::Mra(r) => (r.local_comm_id, r.remote_comm_id),
            CmMessage::SidrReq(r) => (r.request_id, 0),
            CmMessage::SidrRep(r) => (r.request_id, 0),
            _ => (0, 0),
        };
        out.push(CmMad {
            ts_ns: p.ts_ns.unwrap_or(0),
            attr: h.attribute_id,
            tid: h.transaction_id,
            local,
            remote,
            slid: pkt.lrh.slid,
            dlid: pkt.lrh.dlid,
            msg,
        });
    }
    out
}

/// The sendings of CM MADs in a capture, in order: the copies of one MAD (same [`CmMad::key`])
/// put on links within a millisecond of a copy already counted (its crossings of the links on
/// its way) count once; a resent MAD, which the CM sends seconds later, counts again.
pub fn sendings(mads: &[CmMad]) -> Vec<CmMad> {
    const WINDOW_NS: u64 = 1_000_000;
    let mut out: Vec<CmMad> = Vec::new();
    for m in mads {
        let counted = out
            .iter()
            .any(|o| o.key() == m.key() && o.ts_ns.abs_diff(m.ts_ns) < WINDOW_NS);
        if !counted {
            out.push(*m);
        }
    }
    out
}

/// A filter that drops the first packet, on any link, for which `pick` holds; every other packet
/// passes.
pub fn drop_first(mut pick: impl FnMut(&Packet<'_>) -> bool + 'static) -> DropFilter {
    let mut done = false;
    Box::new(move |_, _, bytes| {
        if done {
            return false;
        }
        let Ok(pkt) = Packet::parse(bytes) else {
            return false;
        };
        done = pick(&pkt);
        done
    })
}

/// A filter that drops the first CM MAD with attribute `attr` (e.g. `attr::REQ`) on the link it
/// is first put on; its resendings pass.
pub fn drop_first_cm(attr: u16) -> DropFilter {
    drop_first(move |pkt| cm_mad_of(pkt).is_some_and(|(h, _)| h.attribute_id == attr))
}

/// tshark on `PATH` (or in /usr/bin), if installed (Debian package `tshark`).
pub fn tshark() -> Option<PathBuf> {
    let dirs = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&dirs)
        .chain([PathBuf::from("/usr/bin")])
        .map(|d| d.join("tshark"))
        .find(|p| p.is_file())
}

/// tshark's `-T fields` lines for `filter` on the capture file `pcap` (first occurrence of each
/// field, no name resolution).
pub fn tshark_fields(
    tshark: &Path,
    pcap: &Path,
    filter: &str,
    fields: &[&str],
) -> Vec<Vec<String>> {
    let mut cmd = Command::new(tshark);
    cmd.arg("-n")
        .arg("-r")
        .arg(pcap)
        .args(["-Y", filter, "-T", "fields", "-E", "occurrence=f"])
        .env("HOME", std::env::temp_dir());
    for f in fields {
        cmd.args(["-e", f]);
    }
    let out = cmd.output().expect("tshark runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .expect("UTF-8 from tshark")
        .lines()
        .map(|l| l.split('\t').map(str::to_string).collect())
        .collect()
}

/// The frames tshark flags as malformed or as errors in the capture file `pcap`.
pub fn tshark_malformed(tshark: &Path, pcap: &Path) -> Vec<Vec<String>> {
    tshark_fields(
        tshark,
        pcap,
        "_ws.malformed || _ws.expert.severity >= 8388608",
        &["frame.number"],
    )
}

/// A number as tshark prints it (decimal, or hexadecimal with `0x`).
pub fn num(s: &str) -> u64 {
    match s.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16).expect("a hexadecimal number"),
        None => s.parse().expect("a decimal number"),
    }
}

//! The server on a three-host subnet (one switch, our SM and SA on h0) in a thread of its own,
//! against our ibsim client and a raw client that sends what it likes.

use super::*;
use crate::ibsim::msg::{ClientInfo, CtlType, SimCtl, SimRequest, SimRequestHead, MAD_LEN};
use crate::ibsim::{Endpoint, IbsimClient};
use ipoib_fabric::hw::switch::SwitchDropReason;
use ipoib_fabric::hw::topology::Topology;
use ipoib_fabric::node::subnet::{Subnet, SubnetOptions};
use ipoib_fabric::Instant;
use ipoib_wire::mad::{MadHeaderRepr, Method};
use std::os::unix::net::UnixDatagram;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::Duration;

mod agents;
mod bad;
mod batch;
mod present;
mod told;
mod udp_sm;

static NEXT: AtomicU32 = AtomicU32::new(0);

/// How long a test waits for what must come: long enough for a loaded machine (2 cores shared by
/// parallel tests); only a failing test waits this long.
const LONG: Duration = Duration::from_secs(30);

/// Asks `cond` every 20 ms until it holds (true) or [`LONG`] passed (false).
fn eventually(mut cond: impl FnMut() -> bool) -> bool {
    let end = std::time::Instant::now() + LONG;
    loop {
        if cond() {
            return true;
        }
        if std::time::Instant::now() >= end {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A socket base name no other test of this process uses.
fn unique_base() -> String {
    format!(
        "ipoib-srv-test-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// A free loopback UDP port whose neighbour is free too (both released just before the server
/// binds them): ibsim's UDP mode takes control at P and client n's data at P + n + 1.
fn free_udp_pair() -> std::net::SocketAddr {
    (0..50)
        .find_map(|_| {
            let a = std::net::UdpSocket::bind("127.0.0.1:0").ok()?;
            let addr = a.local_addr().ok()?;
            let next = (addr.ip(), addr.port().checked_add(1)?);
            std::net::UdpSocket::bind(next).ok().map(|_| addr)
        })
        .unwrap()
}

/// Slot 0 of a Unix server connected to a client whose data socket (NAME:in1, non-blocking)
/// nobody reads but the test: the sender side of `Sock::send_many`'s tests.
fn slot_with_reader() -> (UnixDatagram, sock::Sock, sock::Headers) {
    let name = unique_base();
    let peer =
        UnixDatagram::bind_addr(&sock::abstract_addr(&format!("{name}:in1")).unwrap()).unwrap();
    peer.set_nonblocking(true).unwrap();
    let listen = Listen::Unix { basename: name };
    let s = sock::Sock::bind_slot(&listen, 0).unwrap();
    let stranger = Peer::Udp("127.0.0.1:1".parse().unwrap());
    s.connect_client(&listen, 1, &stranger).unwrap();
    (peer, s, sock::Headers::new())
}

/// What a server thread hands back: its counters, the clients left, and the SMPs the subnet's
/// switches discarded (`SwitchDropReason::SmpDiscarded`, summed).
type Stopped = (ServerCounters, usize, u64);

/// A request to park the server thread between two turns: it says so on the first sender and
/// waits until the second channel is closed.
type Pause = (mpsc::Sender<()>, mpsc::Receiver<()>);

/// A running server; [`Running::stop`] ends it and returns its counters and remaining clients.
struct Running {
    base: String,
    stop: Arc<AtomicBool>,
    pauses: mpsc::Sender<Pause>,
    thread: Option<JoinHandle<Stopped>>,
}

/// The server parked by [`Running::pause`]; it goes on when this is dropped.
struct Paused {
    _go_on: mpsc::Sender<()>,
}

impl Running {
    fn start() -> Running {
        let base = unique_base();
        Running::start_on(base.clone(), ServerConfig::unix(&base))
    }

    fn start_on(base: String, cfg: ServerConfig) -> Running {
        let opts = ServeOptions {
            max_sleep: Duration::from_millis(10),
            probe_every: Duration::from_millis(50),
        };
        Running::start_with(base, cfg, opts)
    }

    fn start_with(base: String, cfg: ServerConfig, opts: ServeOptions) -> Running {
        let stop = Arc::new(AtomicBool::new(false));
        let (ready_tx, ready_rx) = mpsc::channel();
        let (pauses, pause_rx) = mpsc::channel::<Pause>();
        let s = Arc::clone(&stop);
        let thread = std::thread::spawn(move || {
            let topo = Topology::single_switch(3).unwrap();
            let mut net = Subnet::build(SubnetOptions::new(topo, 7)).unwrap();
            assert!(net.run_until_joined(Instant::ZERO + Duration::from_secs(60)));
            let mut server = IbsimServer::bind(cfg).unwrap();
            ready_tx.send(()).unwrap();
            serve(
                &mut server,
                &mut net,
                &mut |_, _| {
                    // Between turns; parked here, the server reads nothing until told to go on.
                    if let Ok((parked, go_on)) = pause_rx.try_recv() {
                        let _ = parked.send(());
                        let _ = go_on.recv();
                    }
                    s.load(Ordering::Relaxed)
                },
                opts,
            )
            .unwrap();
            let discarded = net
                .switches()
                .map(|(_, sw)| sw.stats().dropped(SwitchDropReason::SmpDiscarded))
                .sum();
            (*server.counters(), server.clients().count(), discarded)
        });
        ready_rx.recv().unwrap();
        Running {
            base,
            stop,
            pauses,
            thread: Some(thread),
        }
    }

    /// Parks the server thread between two turns (where [`serve`] asks whether to stop) until
    /// the returned guard is dropped: what clients send meanwhile waits in its sockets.
    fn pause(&self) -> Paused {
        let (parked_tx, parked) = mpsc::channel();
        let (go_on, go_on_rx) = mpsc::channel();
        self.pauses.send((parked_tx, go_on_rx)).unwrap();
        parked.recv_timeout(LONG).expect("the server parks");
        Paused { _go_on: go_on }
    }

    fn endpoint(&self) -> Endpoint {
        Endpoint::unix(&self.base)
    }

    fn stop(self) -> (ServerCounters, usize) {
        let (c, left, _) = self.stop_all();
        (c, left)
    }

    fn stop_all(mut self) -> Stopped {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.take().unwrap().join().unwrap()
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// A client that speaks the protocol by hand (umad2sim's socket names, `sim_client.c`).
struct Raw {
    ctl: UnixDatagram,
    data: UnixDatagram,
    id: u32,
}

impl Raw {
    fn connect(base: &str, node: &str) -> Result<Raw, SimCtl> {
        let tag = 900_000 + NEXT.fetch_add(1, Ordering::Relaxed);
        let ctl =
            UnixDatagram::bind_addr(&sock::abstract_addr(&format!("{base}:ctl{tag}")).unwrap())
                .unwrap();
        let data =
            UnixDatagram::bind_addr(&sock::abstract_addr(&format!("{base}:in{tag}")).unwrap())
                .unwrap();
        ctl.connect_addr(&sock::abstract_addr(&format!("{base}:ctl")).unwrap())
            .unwrap();
        ctl.set_read_timeout(Some(LONG)).unwrap();
        data.set_read_timeout(Some(LONG)).unwrap();
        let info = ClientInfo {
            id: tag,
            qp: 0,
            issm: 0,
            node_id: node.to_string(),
        };
        let ans = Raw::exchange(&ctl, SimCtl::new(0, CtlType::Connect, &info.to_bytes()));
        if ans.ctl_type == CtlType::Error {
            return Err(ans);
        }
        let id = ClientInfo::parse(&ans.data).unwrap().id;
        data.connect_addr(&sock::abstract_addr(&format!("{base}:out{id}")).unwrap())
            .unwrap();
        Ok(Raw { ctl, data, id })
    }

    fn exchange(ctl: &UnixDatagram, req: SimCtl) -> SimCtl {
        ctl.send(&req.to_bytes()).unwrap();
        let mut b = [0u8; 128];
        let n = ctl.recv(&mut b).unwrap();
        SimCtl::parse(&b[..n]).unwrap()
    }

    fn ctl(&self, t: CtlType, payload: &[u8]) -> SimCtl {
        Raw::exchange(&self.ctl, SimCtl::new(self.id, t, payload))
    }
}

/// Sends a Get(ClassPortInfo) with TID `tid` from a client on h2 to h1's port over `ep`, and
/// checks that the SM client on h1 reading with `recv` gets it: the SA's requests go to the
/// client that holds h1's SM role.
fn sa_request_reaches_sm(
    ep: &Endpoint,
    tid: u64,
    recv: impl FnOnce(&mut [u8]) -> std::io::Result<usize>,
) {
    let asker = IbsimClient::connect_to(ep, Some("h2"), 0, false).unwrap();
    let lid = {
        let info = IbsimClient::connect_to(ep, Some("h1"), 0, false).unwrap();
        info.port_info().unwrap().lid
    };
    asker.send_mad(lid, 1, &cpi_get(tid)).unwrap();
    let mut b = [0u8; SIM_REQUEST_LEN];
    let n = recv(&mut b).expect("the SA request reaches the new SM");
    let r = SimRequest::parse(&b[..n]).unwrap();
    let h = MadHeaderRepr::parse_bytes(&r.mad).unwrap();
    assert_eq!((h.mgmt_class, h.method), (MgmtClass::SubnAdm, Method::Get));
}

/// A SubnAdm Get(ClassPortInfo) (IBA 1 §15.2.5.1; SA class version 2).
fn cpi_get(tid: u64) -> [u8; MAD_LEN] {
    let mut m = [0u8; MAD_LEN];
    MadHeaderRepr {
        base_version: 1,
        mgmt_class: MgmtClass::SubnAdm,
        class_version: 2,
        method: Method::Get,
        status: ipoib_wire::mad::MadStatus::SUCCESS,
        class_specific: 0,
        transaction_id: tid,
        attribute_id: 0x0001,
        attribute_modifier: 0,
    }
    .emit(&mut m);
    m
}

/// [`cpi_get`] as a raw client's `sim_request` to the SA (LID 1, QP1).
fn cpi_request(tid: u64) -> SimRequest {
    SimRequest {
        head: SimRequestHead {
            dlid: 1,
            slid: 0,
            dqp: 1,
            sqp: 0,
            status: 0,
            length: 256,
        },
        mad: cpi_get(tid),
    }
}

/// `c` asks the SA for its ClassPortInfo and gets a GetResp.
fn assert_sa_answers(c: &IbsimClient, tid: u64) {
    let resp = c.request(1, 1, &cpi_get(tid), LONG).unwrap();
    assert_eq!(
        MadHeaderRepr::parse_bytes(&resp).unwrap().method,
        Method::GetResp
    );
}

/// GET_PORTINFO (what umad2sim writes into the fake sysfs) and the SA's PortInfoRecord of the
/// same port describe one PortInfo (IBA 1 §14.2.5.6, §15.2.5.3): GUIDCap, LID, SM LID, LMC,
/// state, active MTU, width and speed agree.
#[test]
fn port_info_matches_the_sas_record() {
    use ipoib_wire::mad::MadStatus;
    use ipoib_wire::sa::{pir_mask, PortInfoRecordRepr, SaAttribute, SaMadRepr};
    use ipoib_wire::smp::PortInfoRepr;
    let srv = Running::start();
    for (tid, host) in [(0x51u64, "h0"), (0x52, "h1"), (0x53, "h2")] {
        let c = IbsimClient::connect_to(&srv.endpoint(), Some(host), 0, false).unwrap();
        let ours = c.port_info().unwrap();
        let q = PortInfoRecordRepr {
            lid: ours.lid,
            port_num: 0,
            options: 0,
            port_info: PortInfoRepr::default(),
        };
        let req = SaMadRepr::request(
            Method::Get,
            tid,
            pir_mask::LID,
            SaAttribute::PortInfoRecord(q),
        );
        let resp = c.request(1, 1, &req.to_bytes(), LONG).unwrap();
        let r = SaMadRepr::parse(&resp).unwrap();
        assert_eq!(r.header.status, MadStatus::SUCCESS, "{host}");
        let SaAttribute::PortInfoRecord(rec) = r.attribute else {
            panic!("{host}: not a PortInfoRecord: {:?}", r.attribute);
        };
        assert_eq!(rec.lid, ours.lid, "{host}");
        let sa = rec.port_info;
        let key = |p: &PortInfoRepr| {
            (
                p.guid_cap,
                p.lid,
                p.master_sm_lid,
                p.lmc,
                p.local_port_num,
                p.port_state,
                p.port_phys_state,
                p.neighbor_mtu,
                (
                    p.link_width_active,
                    p.link_speed_active,
                    p.link_speed_ext_active,
                ),
            )
        };
        assert_eq!(key(&ours), key(&sa), "{host}");
        assert_eq!(ours.guid_cap, 1, "{host}");
    }
}

/// CONNECT attaches to the named host; the GET_* answers describe its port as our SM set it; a
/// request to the SA comes back with its TID, the top 16 bits the client id (ibsim
/// `update_trid`).
#[test]
fn connect_describe_and_sa_round_trip() {
    let srv = Running::start();
    let c = IbsimClient::connect_to(&srv.endpoint(), Some("h1"), 0, false).unwrap();
    assert_eq!((c.client_id(), c.node_id()), (0, "h1"));
    let pi = c.port_info().unwrap();
    assert_ne!(pi.lid, 0);
    assert_eq!(pi.master_sm_lid, 1, "our SM runs on h0");
    assert_eq!(pi.port_state, ipoib_wire::smp::PortState::Active);
    let ni = c.node_info().unwrap();
    assert_eq!(ni.local_port_num, 1);
    let d = IbsimClient::connect_to(&srv.endpoint(), Some("h2"), 0, false).unwrap();
    assert_eq!(d.client_id(), 1);
    for (cl, tid) in [(&c, 0x0000_1111_2222_3333u64), (&d, 0x7777_0000_0000_0042)] {
        let resp = cl.request(1, 1, &cpi_get(tid), LONG).unwrap();
        let h = MadHeaderRepr::parse_bytes(&resp).unwrap();
        assert_eq!(h.method, Method::GetResp);
        assert_eq!(h.transaction_id & 0xffff_ffff_ffff, tid & 0xffff_ffff_ffff);
        assert_eq!(h.transaction_id >> 48, u64::from(cl.client_id()));
    }
    // Nothing of one client's reached the other.
    assert!(c.recv(Duration::from_millis(100)).unwrap().is_none());
    assert!(d.recv(Duration::from_millis(100)).unwrap().is_none());
    drop((c, d));
    let (counters, left) = srv.stop();
    assert_eq!((counters.connects, counters.disconnects, left), (2, 2, 0));
    assert_eq!(counters.mads_in, 2);
    assert!(counters.mads_out >= 2);
}

/// ibsim `sim_ctl_new_client`: an unknown node and a second SM on a node are refused; the
/// default (empty) node is the first host.
#[test]
fn refusals_and_the_default_node() {
    let srv = Running::start();
    let e = IbsimClient::connect_to(&srv.endpoint(), Some("nosuch"), 0, false).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::ConnectionRefused);
    let e = IbsimClient::connect_to(&srv.endpoint(), Some("h0"), 0, true).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::ConnectionRefused, "our SM runs on h0");
    let sm = IbsimClient::connect_to(&srv.endpoint(), Some("h2"), 0, true).unwrap();
    let e = IbsimClient::connect_to(&srv.endpoint(), Some("h2"), 0, true).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::ConnectionRefused, "one SM per node");
    let dflt = IbsimClient::connect_to(&srv.endpoint(), None, 0, false).unwrap();
    assert_eq!(dflt.node_id(), "h0");
    drop((sm, dflt));
    let (counters, _) = srv.stop();
    assert_eq!(counters.refused, 3);
}

/// Garbage on the control socket is counted and ignored; a client that sends a datagram that is
/// not a `sim_request` is dropped, and its later control requests refused; a client that
/// vanishes without DISCONNECT is found by the probe and its slot reused.
#[test]
fn garbage_and_vanished_clients() {
    let srv = Running::start();
    let stranger = UnixDatagram::unbound().unwrap();
    let ctl = sock::abstract_addr(&format!("{}:ctl", srv.base)).unwrap();
    stranger.send_to_addr(b"hello", &ctl).unwrap();
    stranger.send_to_addr(&[0xde; SIM_CTL_LEN], &ctl).unwrap();

    let bad = Raw::connect(&srv.base, "h1").unwrap();
    assert_eq!(bad.id, 0);
    let pk = bad.ctl(CtlType::GetPkeys, &[0; 64]);
    assert_eq!(pk.ctl_type, CtlType::GetPkeys);
    assert_eq!(
        &pk.data[..2],
        &[0xff, 0xff],
        "default partition, full member"
    );
    // Another sender naming this client id is refused.
    let other = Raw::connect(&srv.base, "h2").unwrap();
    let forged = Raw::exchange(&other.ctl, SimCtl::new(bad.id, CtlType::Disconnect, &[]));
    assert_eq!(forged.ctl_type, CtlType::Error);
    bad.data.send(&[1, 2, 3]).unwrap();
    // The server reads its sockets in any order: ask until the drop shows.
    let dropped = eventually(|| bad.ctl(CtlType::GetNodeInfo, &[0; 64]).ctl_type == CtlType::Error);
    assert!(dropped);

    let gone = Raw::connect(&srv.base, "h2").unwrap();
    let gone_id = gone.id;
    drop(gone);
    // Until the probe found it, new clients get other slots; they stay connected.
    let mut others = Vec::new();
    let reused = eventually(|| {
        let next = Raw::connect(&srv.base, "h2").unwrap();
        let hit = next.id == gone_id;
        others.push(next);
        hit
    });
    assert!(reused, "the vanished client's slot is free again");
    let (counters, left) = srv.stop();
    assert_eq!(counters.bad_ctl, 2);
    assert_eq!(counters.garbage_dropped, 1);
    assert_eq!(counters.vanished, 1);
    assert!(counters.foreign_ctl >= 2);
    assert_eq!(left, 1 + others.len());
}

/// ibsim's UDP mode (`ibsim -r`; clients with `IBSIM_SERVER_NAME`): control at port P, client
/// n's data at P + n + 1, the client's data port as its tag.
#[test]
fn udp_mode() {
    let addr = free_udp_pair();
    let mut cfg = ServerConfig::unix("unused");
    cfg.listen = Listen::Udp { addr };
    let srv = Running::start_on(String::new(), cfg);
    let ep = Endpoint::Udp { server: addr };
    let c = IbsimClient::connect_to(&ep, Some("h2"), 0, false).unwrap();
    assert_eq!((c.client_id(), c.node_id()), (0, "h2"));
    assert_sa_answers(&c, 9);
    drop(c);
    let (counters, left) = srv.stop();
    assert_eq!((counters.connects, counters.disconnects, left), (1, 1, 0));
}

/// Unlike ibsim (10), more than 10 clients at once, each getting its own responses.
#[test]
fn more_than_ten_clients() {
    let srv = Running::start();
    let clients: Vec<IbsimClient> = (0..12)
        .map(|i| {
            let host = ["h0", "h1", "h2"][i % 3];
            IbsimClient::connect_to(&srv.endpoint(), Some(host), 0, false).unwrap()
        })
        .collect();
    let mut ids: Vec<u32> = clients.iter().map(IbsimClient::client_id).collect();
    ids.sort_unstable();
    assert_eq!(ids, (0..12).collect::<Vec<u32>>());
    for (i, c) in clients.iter().enumerate() {
        let tid = 0x100 + i as u64;
        let resp = c.request(1, 1, &cpi_get(tid), LONG).unwrap();
        assert_eq!(
            MadHeaderRepr::parse_bytes(&resp).unwrap().transaction_id & 0xffff,
            tid
        );
    }
    for c in &clients {
        assert!(c.recv(Duration::from_millis(20)).unwrap().is_none());
    }
    drop(clients);
    let (counters, left) = srv.stop();
    assert_eq!((counters.connects, left), (12, 0));
}

/// The umad length of an SA response (IBA 1 §13.6.2.3): a last segment's PayloadLength after the
/// 36 header bytes; a first segment of several cut to whole records; anything else 256.
#[test]
fn umad_lengths() {
    let mut m = cpi_get(1);
    assert_eq!(umad_length(&m), 256);
    m[3] = 0x92; // GetTableResp
    m[24] = 1; // RMPP version
    m[25] = 1; // DATA
    m[26] = 0x07; // active, first, last
    m[32..36].copy_from_slice(&(20u32 + 64).to_be_bytes());
    assert_eq!(umad_length(&m), 36 + 84);
    m[26] = 0x03; // active, first
    m[44..46].copy_from_slice(&8u16.to_be_bytes()); // 64-byte records
    assert_eq!(umad_length(&m), 56 + 3 * 64);
    let mut smp = m;
    smp[1] = 0x01; // SubnLid: bytes 24..36 are the M_Key, not RMPP
    assert_eq!(umad_length(&smp), 256);
}

/// OpenSM's GetTableResp as its SA writes it under umad2sim (RMPPFlags Active alone,
/// PayloadLength 0, `length` bytes written): made one segment of `length` - 36 bytes of payload,
/// as the kernel would, so that the reader's umad length is `length`, as under ibsim; a segment
/// the sender numbered itself, a request and an SMP are left alone.
#[test]
fn a_client_rmpp_response_is_one_segment_of_its_length() {
    let mut m = cpi_get(1);
    m[3] = 0x92; // GetTableResp
    m[26] = 0x01; // active only; RMPPVersion and RMPPType 0, as OpenSM writes it
    m[44..46].copy_from_slice(&8u16.to_be_bytes()); // 64-byte MCMemberRecords
                                                    // As written: 256 bytes, which saquery reads as three records, two of them stale bytes.
    assert_eq!(umad_length(&m), 256);
    let mut one = m;
    rmpp_as_sent(&mut one, 56 + 64);
    assert_eq!((one[24], one[25], one[26] & 0x07), (1, 1, 0x07));
    assert_eq!(&one[28..32], &1u32.to_be_bytes());
    assert_eq!(&one[32..36], &(20u32 + 64).to_be_bytes());
    assert_eq!(umad_length(&one), 56 + 64);
    // RRespTime and the rest of the MAD kept.
    assert_eq!((one[26] & !0x07, &one[36..]), (m[26] & !0x07, &m[36..]));
    // A DATA segment of version 1 with Active alone: the same.
    let mut v1 = m;
    (v1[24], v1[25]) = (1, 1);
    rmpp_as_sent(&mut v1, 56 + 64);
    assert_eq!(v1, one);
    // The kernel's own segments (First set), requests, SMPs and impossible lengths: unchanged.
    for (edit, length) in [
        (
            &(|b: &mut [u8; 256]| b[26] = 0x03) as &dyn Fn(&mut [u8; 256]),
            120,
        ),
        (&|b: &mut [u8; 256]| b[3] = 0x12, 120),
        (&|b: &mut [u8; 256]| b[1] = 0x01, 120),
        (&|b: &mut [u8; 256]| b[25] = 2, 120), // an ACK
        // A middle segment of a sender that segments itself: numbered 2, First and Last clear.
        (
            &|b: &mut [u8; 256]| {
                (b[24], b[25]) = (1, 1);
                b[28..32].copy_from_slice(&2u32.to_be_bytes());
            },
            256,
        ),
        (&|_: &mut [u8; 256]| {}, 36),
        (&|_: &mut [u8; 256]| {}, 300),
    ] {
        let mut b = m;
        edit(&mut b);
        let before = b;
        rmpp_as_sent(&mut b, length);
        assert_eq!(b, before, "length {length}");
    }
}

/// Random datagrams on the control socket and on a connected client's data socket (a seeded
/// xorshift; control ones often with the magic and a known type) neither stop the server nor
/// disturb another client.
#[test]
fn random_datagrams_never_stop_the_server() {
    let srv = Running::start();
    let good = IbsimClient::connect_to(&srv.endpoint(), Some("h2"), 0, false).unwrap();
    let stranger = UnixDatagram::unbound().unwrap();
    let ctl = sock::abstract_addr(&format!("{}:ctl", srv.base)).unwrap();
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for i in 0..500 {
        let len = if i % 2 == 0 {
            SIM_CTL_LEN
        } else {
            (next() % 120) as usize
        };
        let mut b: Vec<u8> = (0..len).map(|_| next() as u8).collect();
        if len == SIM_CTL_LEN && i % 4 == 0 {
            b[0..4].copy_from_slice(&crate::ibsim::msg::SIM_MAGIC.to_ne_bytes());
            b[8..12].copy_from_slice(&((next() % 12) as u32).to_ne_bytes());
        }
        let _ = stranger.send_to_addr(&b, &ctl);
    }
    let victim = Raw::connect(&srv.base, "h1").unwrap();
    for _ in 0..50 {
        let len = (next() % 400) as usize;
        let b: Vec<u8> = (0..len).map(|_| next() as u8).collect();
        let _ = victim.data.send(&b);
    }
    assert_sa_answers(&good, 0x55);
    drop(good);
    let (counters, _) = srv.stop();
    assert!(counters.bad_ctl > 0);
    assert_eq!(
        counters.garbage_dropped, 1,
        "the first bad datagram drops the client"
    );
}

/// `Sock::send_many` (sendmmsg(2)): each message is a datagram of its own, in order; against a
/// peer that does not read, the count is short once its queue is full (Linux
/// `net.unix.max_dgram_qlen`), then `WouldBlock`, and the peer holds exactly what was counted.
#[test]
fn send_many_sends_each_message_as_a_datagram() {
    let (peer, s, mut h) = slot_with_reader();
    assert_eq!(s.send_many::<&[u8]>(&[], &mut h).unwrap(), 0);
    let msgs: Vec<Vec<u8>> = (0..200u8)
        .map(|i| vec![i; 1 + usize::from(i) % 7])
        .collect();
    let refs: Vec<&[u8]> = msgs.iter().map(Vec::as_slice).collect();
    let n = s.send_many(&refs, &mut h).unwrap();
    assert!(n > 0 && n < msgs.len(), "sent {n}");
    let e = s.send_many(&refs[n..], &mut h).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::WouldBlock);
    let mut b = [0u8; 16];
    for m in &msgs[..n] {
        let got = peer.recv(&mut b).unwrap();
        assert_eq!(&b[..got], &m[..]);
    }
    assert_eq!(peer.recv(&mut b).unwrap_err().kind(), ErrorKind::WouldBlock);
    // Room again: one message alone goes by send(2).
    assert_eq!(s.send_many(&refs[n..n + 1], &mut h).unwrap(), 1);
    let got = peer.recv(&mut b).unwrap();
    assert_eq!(&b[..got], &msgs[n][..]);
}

/// `Sock::recv_many` (recvmmsg(2)): datagrams in order, each in a buffer of its own with its
/// length, one longer than the buffer cut to it (as recv(2) cuts it); a short count once the
/// queue is empty, then `WouldBlock`.
#[test]
fn recv_many_takes_datagrams_in_order_and_stops_short_when_empty() {
    let name = unique_base();
    let listen = Listen::Unix {
        basename: name.clone(),
    };
    let s = sock::Sock::bind_slot(&listen, 0).unwrap();
    let peer =
        UnixDatagram::bind_addr(&sock::abstract_addr(&format!("{name}:in1")).unwrap()).unwrap();
    peer.connect_addr(&sock::abstract_addr(&format!("{name}:out0")).unwrap())
        .unwrap();
    let stranger = Peer::Udp("127.0.0.1:1".parse().unwrap());
    s.connect_client(&listen, 1, &stranger).unwrap();
    let mut bufs = [[0u8; 8]; 4];
    let mut lens = [0usize; 4];
    // One set of headers for every call, as the server keeps it.
    let mut h = sock::Headers::new();
    let e = s.recv_many(&mut bufs, &mut lens, &mut h).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::WouldBlock);
    let msgs: Vec<Vec<u8>> = (1..=6u8).map(|i| vec![i; usize::from(i) * 2]).collect();
    for m in &msgs {
        peer.send(m).unwrap();
    }
    assert_eq!(s.recv_many(&mut bufs, &mut lens, &mut h).unwrap(), 4);
    for (i, m) in msgs[..4].iter().enumerate() {
        let n = m.len().min(8);
        assert_eq!(lens[i], n, "datagram {i}");
        assert_eq!(&bufs[i][..n], &m[..n]);
    }
    assert_eq!(s.recv_many(&mut bufs, &mut lens, &mut h).unwrap(), 2);
    assert_eq!((lens[0], lens[1]), (8, 8), "10 and 12 bytes cut to 8");
    assert_eq!((bufs[0][0], bufs[1][0]), (5, 6));
    let e = s.recv_many(&mut bufs, &mut lens, &mut h).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::WouldBlock);
}

/// `IbsimServer::poll` says whether something may be left: after a few requests read to the
/// end, false, and the poll descriptor is readable again for the next datagram (the edge the
/// driver waits for); `pending` agrees.
#[test]
fn poll_reports_nothing_left_once_drained() {
    let base = unique_base();
    let topo = Topology::single_switch(3).unwrap();
    let mut net = Subnet::build(SubnetOptions::new(topo, 7)).unwrap();
    assert!(net.run_until_joined(Instant::ZERO + Duration::from_secs(60)));
    let mut server = IbsimServer::bind(ServerConfig::unix(&base)).unwrap();
    // The client connects from a thread of its own (CONNECT waits for its answer) while this
    // one polls the server by hand.
    let (tx, rx) = mpsc::channel();
    let b = base.clone();
    let client = std::thread::spawn(move || {
        let c = Raw::connect(&b, "h1").unwrap();
        tx.send(()).unwrap();
        c
    });
    while rx.try_recv().is_err() {
        server.poll(&mut net).unwrap();
        std::thread::sleep(Duration::from_millis(1));
    }
    let c = client.join().unwrap();
    assert!(!server.poll(&mut net).unwrap());
    assert!(!server.pending().unwrap());
    let req = cpi_request(0x42);
    for _ in 0..3 {
        c.data.send(&req.to_bytes()).unwrap();
    }
    assert!(server.pending().unwrap());
    assert!(
        !server.poll(&mut net).unwrap(),
        "3 datagrams are under the budget"
    );
    assert!(!server.pending().unwrap());
    assert_eq!(server.counters().mads_in, 3);
    // poll_wait sleeps on the sockets themselves (serve's turns): a short sleep, timed by the
    // timer, ends with nothing read; a long one ends at once for a datagram already there, and
    // for one that comes while it sleeps.
    assert!(!server
        .poll_wait(&mut net, Duration::from_micros(300))
        .unwrap());
    assert_eq!(server.counters().mads_in, 3);
    c.data.send(&req.to_bytes()).unwrap();
    assert!(!server.poll_wait(&mut net, Duration::from_secs(60)).unwrap());
    assert_eq!(server.counters().mads_in, 4);
    let later = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(20));
        c.data.send(&req.to_bytes()).unwrap();
        c
    });
    assert!(!server.poll_wait(&mut net, Duration::from_secs(60)).unwrap());
    assert_eq!(server.counters().mads_in, 5);
    drop(later.join().unwrap());
}

//! The server side of ibsim's client protocol (linux-rdma/ibsim, Debian ibsim-utils): a program
//! started under `ibsim-run` (libumad2sim preloaded) attaches to a host of OUR emulated fabric by
//! name and sends and receives MADs there, `saquery` against our SA for instance. The facts of
//! ibsim this relies on, with their sources, are in docs/IBSIM.md "ibsim (server side)".
//!
//! - Control ([`IbsimServer`] on `<base>:ctl`, or UDP port P): 80-byte `sim_ctl` requests, each
//!   answered with one of the same size sent back to its sender. CONNECT carries
//!   `sim_client_info` {tag, qp, issm, node id}: the node id names a host (topology name, then node
//!   description; empty for the first host), the answer carries the client id (the slot) and the
//!   host's name. The GET_* requests describe the attached port (module `info`), SET_ISSM
//!   toggles the SM role, DISCONNECT frees the slot.
//! - Data: client `n` sends and receives 288-byte `sim_request`s on `<base>:out<n>` (UDP port
//!   P + n + 1), connected to its `<base>:in<tag>`. A MAD from a client leaves the host's port
//!   through a [`UmadAgent`](ipoib_fabric::node::host::UmadAgent) (QP1, QP0 for SMPs; the HCA
//!   model builds the packet), with the top 16 bits of a request's TransactionID set to the
//!   client id as ibsim does (`sim_mad.c` `update_trid`); responses to it, and requests of the
//!   classes an SM client registers for (and the QP1 requests no agent of its host serves, as
//!   ibsim's `find_client` gives an SM client every request it does not answer itself), come
//!   back to that client alone, each response with its
//!   request's whole TID: the agent gives each high half (client id and libumad2sim agent, bits
//!   32..47) its own number on the wire, so the client's agents, which register in the library
//!   alone, never share a TID (docs/IBSIM.md). The agent acknowledges
//!   the segments of an RMPP response itself and hands the client the first
//!   ([`RmppMode::FirstSegment`]): umad2sim does no RMPP. A client's datagrams are read with
//!   recvmmsg(2), up to 16 per call, and the MADs of one call go to its host together (module
//!   `request`); what the fabric delivered for a client in one turn goes to it in one
//!   sendmmsg(2) ([`IbsimServer::flush`]), a datagram each.
//! - Unlike ibsim there is no limit of 10 clients: slots are numbered from 0, the lowest free one
//!   first, and a slot's socket is bound when a client first needs it (up to
//!   [`ServerConfig::max_clients`]).
//!
//! Invariants: nothing blocks (every socket is non-blocking, one epoll descriptor gathers them
//! for the owner's single-threaded loop, [`IbsimServer::poll_fd`]); nothing a client sends makes
//! the server panic or stop serving the others: a control message that is not a `sim_ctl` is
//! counted and ignored, one naming a client from another sender is refused, a client that sends a
//! datagram that is not a `sim_request` is dropped, and one whose sockets are gone (a send or a
//! probe refused) is dropped; each is counted ([`ServerCounters`]). The loop that runs the server
//! against the wall clock is [`serve`]; ibsim's console commands that pull and plug cables are
//! [`Console`]'s.

mod answer;
mod console;
mod info;
mod net;
mod refusal;
mod request;
mod run;
mod sm_role;
mod sock;

#[cfg(test)]
mod tests;

pub use console::{Console, Reply};
pub use net::IbsimNet;
pub use refusal::{Refusal, RefuseReason, TOLD_REFUSALS};
pub use run::{serve, IbsimEndpoint, ServeOptions, Tell};
pub use sock::{Listen, Peer};

use crate::ibsim::msg::{ClientInfo, CtlType, SimCtl, SIM_CTL_LEN, SIM_REQUEST_LEN};
use crate::realtime::FINE_SLEEP;
use ipoib_fabric::node::host::{AgentId, RmppMode};
use ipoib_fabric::NodeId;
use ipoib_wire::mad::{Mad, MgmtClass, RmppFlags, RmppRepr, RmppType};
use nix::sys::epoll::{Epoll, EpollCreateFlags, EpollEvent, EpollFlags, EpollTimeout};
use nix::sys::time::TimeSpec;
use nix::sys::timerfd::{ClockId, Expiration, TimerFd, TimerFlags, TimerSetTimeFlags};
use sock::Sock;
use std::collections::{BTreeMap, VecDeque};
use std::io::{self, ErrorKind};
use std::os::fd::{AsFd, BorrowedFd};
use std::time::Duration;

/// The length a reader's umad gets for `mad` (`crate::ibsim::msg::SimRequest::length`). For an
/// SA response sent with RMPP (IBA 1 §13.6.2.3): the last segment's PayloadLength counts the SA
/// header and its data after the 36 bytes of MAD and RMPP headers, so a transfer in one segment
/// gets exactly the length the kernel's reassembly would give; umad2sim does no RMPP, so the
/// reader of a longer transfer sees its first segment, cut to whole records (the SA header's
/// AttributeOffset, in 8-byte words, IBA 1 §15.2.1). 256 otherwise.
pub fn umad_length(mad: &[u8; 256]) -> u64 {
    const SA_DATA: u64 = 56;
    // Byte 1 is MgmtClass (IBA 1 §13.4.2); the RMPP header is read for the SA's MADs only.
    if MgmtClass::from(mad[1]) != MgmtClass::SubnAdm {
        return 256;
    }
    let r = match RmppRepr::parse_bytes(&mad[24..36]) {
        Ok(r) if r.is_active() && r.rmpp_type == RmppType::Data => r,
        _ => return 256,
    };
    if r.flags.last() {
        return (36 + u64::from(r.payload_length())).min(256);
    }
    let rec = u64::from(u16::from_be_bytes([mad[44], mad[45]])) * 8;
    match rec {
        0 => 256,
        rec => SA_DATA + (256 - SA_DATA) / rec * rec,
    }
}

/// What the sending kernel's RMPP layer (Linux `mad_rmpp.c`) makes of an SA response a client
/// wrote whole: OpenSM's SA writes a GetTableResp with RMPPFlags Active alone (RMPPVersion,
/// RMPPType, SegmentNumber and PayloadLength 0, as measured under umad2sim) and leaves the
/// version, DATA type, segments, their First and Last flags, numbers and PayloadLength to the
/// kernel (IBA 1 §13.6.2.3). umad2sim hands over at most 256 bytes, the
/// `length` written: one DATA segment, First and Last, number 1, PayloadLength the bytes after the
/// 36 of MAD and RMPP headers. ibsim gives the reader `length` itself; with this the reader's
/// [`umad_length`] is the same (before, OpenSM's one-record answers read as three records, two of
/// them stale bytes). Anything else (requests too) is left as it is.
pub fn rmpp_as_sent(mad: &mut [u8; 256], length: u64) {
    let response = Mad::new_unchecked(&mad[..]).method().is_response();
    if MgmtClass::from(mad[1]) != MgmtClass::SubnAdm || !response || !(37..=256).contains(&length) {
        return;
    }
    let Ok(mut r) = RmppRepr::parse_bytes(&mad[24..36]) else {
        return;
    };
    let data = matches!(r.rmpp_type, RmppType::Data | RmppType::None);
    // A segment the sender numbered (1 and up: First, a middle one, Last) is its own RMPP.
    if !r.is_active() || !data || r.flags.first() || r.flags.last() || r.segment_number() != 0 {
        return;
    }
    r.version = RmppRepr::VERSION;
    r.rmpp_type = RmppType::Data;
    r.flags = RmppFlags::SINGLE;
    r.data1 = 1;
    r.data2 = (length - 36) as u32;
    r.emit(&mut mad[24..36]);
}

/// The epoll token of the control socket (slot sockets use their slot number).
const CTL_TOKEN: u64 = u64::MAX;
/// The epoll token of the timer of [`IbsimServer::poll_wait`]'s short sleeps.
const TIMER_TOKEN: u64 = u64::MAX - 1;
/// Datagrams read from one socket per round before the others get their turn.
const BUDGET: usize = 256;
/// Datagrams one recvmmsg(2) on a slot socket takes at most.
const RECV_BATCH: usize = sock::RECV_MAX;
/// Rounds of ready sockets one [`IbsimServer::poll`] serves at most.
const ROUNDS: usize = 4;
/// Readiness events one epoll_wait(2) of [`IbsimServer::poll_wait`] takes at most.
const EPOLL_EVENTS: usize = 64;

/// How the server runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerConfig {
    /// Where it listens.
    pub listen: Listen,
    /// The most clients at once (ibsim: 10).
    pub max_clients: u32,
    /// Hosts where our own SM runs: an SM client is refused there (a CONNECT with issm, as ibsim
    /// refuses one where an SM client is, and SET_ISSM 1, which ibsim grants: one SM per node,
    /// docs/IBSIM.md).
    pub sm_hosts: Vec<usize>,
}

impl ServerConfig {
    /// Unix sockets named after `basename`, 4096 clients, our SM on host 0.
    pub fn unix(basename: &str) -> ServerConfig {
        ServerConfig {
            listen: Listen::Unix {
                basename: basename.to_string(),
            },
            max_clients: 4096,
            sm_hosts: vec![0],
        }
    }
}

/// What the server did and refused.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ServerCounters {
    /// Clients attached.
    pub connects: u64,
    /// CONNECTs refused (unknown node, no free slot, an SM already there, no input socket).
    pub refused: u64,
    /// Clients that disconnected.
    pub disconnects: u64,
    /// Control datagrams that are not a `sim_ctl` (size, magic): ignored.
    pub bad_ctl: u64,
    /// Control requests naming a client that is not connected, or from another sender: refused.
    pub foreign_ctl: u64,
    /// Control requests of an unknown type: echoed back, as ibsim does.
    pub unknown_ctl: u64,
    /// MADs from clients handed to the fabric.
    pub mads_in: u64,
    /// MADs written to clients.
    pub mads_out: u64,
    /// MADs handed back undelivered (status 110): the host refused them.
    pub undelivered: u64,
    /// MADs for a client dropped because its socket was full.
    pub out_dropped: u64,
    /// Clients dropped for sending a datagram that is not a `sim_request`.
    pub garbage_dropped: u64,
    /// Clients dropped because their socket is gone (a send or a probe refused).
    pub vanished: u64,
    /// UDP mode: SM roles taken from a client for another that asked for the role on its host
    /// (`IbsimServer::hand_over_sm_role`).
    pub sm_handovers: u64,
    /// SET_ISSM 1 refused (an SM runs on the client's node already, ours or a live client, or
    /// the role could not be registered): told as a refused CONNECT is (module `refusal`).
    pub sm_role_refused: u64,
    /// Datagrams on a slot socket with no client: ignored.
    pub stray: u64,
}

impl ServerCounters {
    /// As a counters section named `ibsim` (`ipoib show counters` of a process that serves
    /// ibsim's clients: `ipoib fabric --ibsim`).
    pub fn section(&self) -> crate::show::CounterSection {
        let mut s = crate::show::CounterSection::new("ibsim");
        s.push("connects", self.connects)
            .push("refused", self.refused)
            .push("disconnects", self.disconnects)
            .push("bad_ctl", self.bad_ctl)
            .push("foreign_ctl", self.foreign_ctl)
            .push("unknown_ctl", self.unknown_ctl)
            .push("mads_in", self.mads_in)
            .push("mads_out", self.mads_out)
            .push("undelivered", self.undelivered)
            .push("out_dropped", self.out_dropped)
            .push("garbage_dropped", self.garbage_dropped)
            .push("vanished", self.vanished)
            .push("sm_handovers", self.sm_handovers)
            .push("sm_role_refused", self.sm_role_refused)
            .push("stray", self.stray);
        s
    }
}

/// One attached client.
#[derive(Debug, Clone)]
pub struct Client {
    /// The tag its socket names carry (umad2sim: its pid; UDP: its data port).
    pub tag: u32,
    /// Host index in the subnet.
    pub host: usize,
    /// The host's name as the answer to CONNECT gave it.
    pub name: String,
    /// The QP it said it answers for.
    pub qp: u32,
    /// True while it is the SM of its host.
    pub issm: bool,
    ctl_from: Peer,
    node: NodeId,
    agent: AgentId,
    /// The TIDs of the last [`TRAPS_KEPT`] traps handed to it, for its TrapRepresses
    /// ([`IbsimServer::on_mads`]).
    traps: VecDeque<u64>,
}

/// Traps remembered per client for the TIDs of its TrapRepresses.
const TRAPS_KEPT: usize = 64;

/// The server. See the module docs.
pub struct IbsimServer {
    cfg: ServerConfig,
    ctl: Sock,
    /// Slot sockets, bound on first use and kept.
    slots: Vec<Sock>,
    clients: BTreeMap<u32, Client>,
    epoll: Epoll,
    counters: ServerCounters,
    /// [`IbsimServer::flush`]'s answers to one client, kept for the next turn.
    out: Vec<[u8; SIM_REQUEST_LEN]>,
    /// The allocations of MADs answered (written out by `flush`), for the next MADs handed to
    /// the subnet: one host's answers and requests in turn need no new one.
    spare_mads: Vec<Vec<u8>>,
    /// [`IbsimServer::read_slot`]'s receive buffers, kept likewise.
    rx: Vec<[u8; SIM_REQUEST_LEN + 1]>,
    /// Times [`IbsimServer::poll_wait`]'s sleeps shorter than [`FINE_SLEEP`] (made when first
    /// needed).
    timer: Option<TimerFd>,
    /// recvmmsg(2)'s and sendmmsg(2)'s headers, kept likewise.
    headers: sock::Headers,
    /// [`IbsimServer::poll_wait`]'s epoll events, kept likewise ([`EPOLL_EVENTS`] of them: an
    /// array of them cleared at every turn cost more than the turn's look at them).
    events: Vec<EpollEvent>,
    refusals: refusal::Refusals,
    /// UDP mode: per SM client that took its host's SM role from another, that one (module
    /// `sm_role`).
    displaced: BTreeMap<u32, u32>,
    /// The wall clock's mapping onto the subnet's time while [`serve`] runs it: after a sleep the
    /// subnet is run to the present before the MADs that woke it are handed over, so that they
    /// enter at the present rather than where the last turn left the subnet's clock (as the
    /// real-time driver does, [`crate::realtime`]).
    clock: Option<crate::realtime::Clock>,
}

impl std::fmt::Debug for IbsimServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IbsimServer")
            .field("listen", &self.cfg.listen)
            .field("clients", &self.clients.len())
            .field("counters", &self.counters)
            .finish()
    }
}

fn errno(e: nix::Error) -> io::Error {
    io::Error::from_raw_os_error(e as i32)
}

impl IbsimServer {
    /// Binds the control socket (an address in use is an error: another ibsim server runs).
    pub fn bind(cfg: ServerConfig) -> io::Result<IbsimServer> {
        let ctl = Sock::bind_ctl(&cfg.listen)?;
        let epoll = Epoll::new(EpollCreateFlags::EPOLL_CLOEXEC).map_err(errno)?;
        epoll
            .add(ctl.fd(), EpollEvent::new(EpollFlags::EPOLLIN, CTL_TOKEN))
            .map_err(errno)?;
        Ok(IbsimServer {
            cfg,
            ctl,
            slots: Vec::new(),
            clients: BTreeMap::new(),
            epoll,
            counters: ServerCounters::default(),
            out: Vec::new(),
            spare_mads: Vec::new(),
            rx: Vec::new(),
            timer: None,
            clock: None,
            headers: sock::Headers::new(),
            events: vec![EpollEvent::empty(); EPOLL_EVENTS],
            refusals: refusal::Refusals::default(),
            displaced: BTreeMap::new(),
        })
    }

    /// The descriptor to wait on: readable when a datagram waits on any socket.
    pub fn poll_fd(&self) -> BorrowedFd<'_> {
        self.epoll.0.as_fd()
    }

    /// Counters.
    pub fn counters(&self) -> &ServerCounters {
        &self.counters
    }

    /// The clients, by slot.
    pub fn clients(&self) -> impl Iterator<Item = (u32, &Client)> + '_ {
        self.clients.iter().map(|(&k, c)| (k, c))
    }

    /// Whether a datagram waits on any socket (no processing): what [`IbsimServer::poll`] left.
    pub fn pending(&self) -> io::Result<bool> {
        let mut ev = [EpollEvent::empty(); 1];
        loop {
            match self.epoll.wait(&mut ev, EpollTimeout::ZERO) {
                Ok(n) => return Ok(n > 0),
                Err(nix::Error::EINTR) => continue,
                Err(e) => return Err(errno(e)),
            }
        }
    }

    /// Reads what waits on the sockets (at most a budget per socket, a few rounds of ready
    /// sockets) and acts on it: control requests answered, clients' MADs handed to their hosts at
    /// the subnet's current time. What is left waits for the next call, so that busy clients do
    /// not starve the subnet. Returns whether something may be left: a socket gave its whole
    /// budget, or the rounds ran out with sockets still ready. False means every socket read was
    /// empty when last read ("would block", or a short recvmmsg(2) count), so the next datagram
    /// on any of them makes [`IbsimServer::poll_fd`] readable again (no need to ask
    /// [`IbsimServer::pending`]).
    pub fn poll(&mut self, net: &mut impl IbsimNet) -> io::Result<bool> {
        self.poll_wait(net, Duration::ZERO)
    }

    /// [`IbsimServer::poll`] that first sleeps at most `timeout` until a datagram comes: the
    /// server's own loop ([`serve`]) sleeps here, on the sockets' own epoll set, so that a turn
    /// makes one epoll_wait(2) instead of two (a driver's on the server's descriptor, then
    /// this set's). The sockets are watched level-triggered, so what a call leaves shows at the
    /// next. A sleep shorter than [`FINE_SLEEP`] is timed by a timerfd(2) in the set, as the
    /// real-time driver times it (epoll counts whole milliseconds).
    pub fn poll_wait(&mut self, net: &mut impl IbsimNet, timeout: Duration) -> io::Result<bool> {
        let wait = self.sleep(timeout)?;
        // Taken out while the sockets are read (a move, no copy), and put back on every return.
        let mut events = std::mem::take(&mut self.events);
        if events.is_empty() {
            events.resize(EPOLL_EVENTS, EpollEvent::empty());
        }
        let r = self.poll_events(net, &mut events, wait);
        self.events = events;
        r
    }

    /// [`IbsimServer::poll_wait`] with its events buffer, after the first sleep's timeout `wait`.
    fn poll_events(
        &mut self,
        net: &mut impl IbsimNet,
        events: &mut [EpollEvent],
        mut wait: EpollTimeout,
    ) -> io::Result<bool> {
        let mut left = false;
        for round in 0..ROUNDS {
            let n = match self.epoll.wait(events, wait) {
                Ok(n) => n,
                // A signal ended the sleep: back to the caller (who may be asked to stop),
                // with nothing read yet and the sockets level-triggered, so nothing is lost.
                Err(nix::Error::EINTR) if wait != EpollTimeout::ZERO => return Ok(false),
                Err(nix::Error::EINTR) => continue,
                Err(e) => return Err(errno(e)),
            };
            // Once a call, before the first read: the subnet may stand behind the present after
            // a sleep or a long turn.
            if let Some(c) = self.clock.filter(|_| round == 0) {
                let present = c.virtual_at(std::time::Instant::now());
                if present > net.sim().now() {
                    net.sim_mut().run_until(present);
                }
            }
            wait = EpollTimeout::ZERO;
            left = false;
            for ev in &events[..n] {
                left |= match ev.data() {
                    CTL_TOKEN => self.read_ctl(net),
                    // Edge-triggered, and re-armed before each fine sleep: nothing to read.
                    TIMER_TOKEN => false,
                    slot => self.read_slot(net, slot as u32),
                };
            }
            if n < events.len() {
                return Ok(left);
            }
            left = round + 1 == ROUNDS;
        }
        Ok(left)
    }

    /// The epoll timeout for a sleep of `timeout`: whole milliseconds, or the timer armed for a
    /// shorter one (made and added to the set the first time).
    fn sleep(&mut self, timeout: Duration) -> io::Result<EpollTimeout> {
        if timeout.is_zero() {
            return Ok(EpollTimeout::ZERO);
        }
        if timeout >= FINE_SLEEP {
            return Ok(EpollTimeout::try_from(timeout).unwrap_or(EpollTimeout::MAX));
        }
        if self.timer.is_none() {
            let flags = TimerFlags::TFD_NONBLOCK | TimerFlags::TFD_CLOEXEC;
            let t = TimerFd::new(ClockId::CLOCK_MONOTONIC, flags).map_err(errno)?;
            let ev = EpollEvent::new(EpollFlags::EPOLLIN | EpollFlags::EPOLLET, TIMER_TOKEN);
            self.epoll.add(t.as_fd(), ev).map_err(errno)?;
            self.timer = Some(t);
        }
        if let Some(t) = &self.timer {
            // A re-armed timerfd restarts its count, so each expiry is a new edge.
            let when = Expiration::OneShot(TimeSpec::from_duration(timeout));
            t.set(when, TimerSetTimeFlags::empty()).map_err(errno)?;
        }
        Ok(EpollTimeout::try_from(FINE_SLEEP * 2).unwrap_or(EpollTimeout::MAX))
    }

    /// Reads the control socket; true when it gave its whole budget.
    fn read_ctl(&mut self, net: &mut impl IbsimNet) -> bool {
        let mut buf = [0u8; SIM_CTL_LEN + 1];
        for _ in 0..BUDGET {
            match self.ctl.recv_from(&mut buf) {
                Ok((n, from)) => self.on_ctl(net, &buf[..n], &from),
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(_) => return false,
            }
        }
        true
    }

    /// Reads client `slot`'s socket, [`RECV_BATCH`] datagrams per recvmmsg(2); true when it gave
    /// its whole budget. A Unix socket that gave fewer than asked had no more, so no read is
    /// spent on hearing "would block"; a UDP socket is read until it says so, since a vanished
    /// client's ICMP error shows there after the datagrams before it.
    fn read_slot(&mut self, net: &mut impl IbsimNet, slot: u32) -> bool {
        // The buffers are kept from call to call (clearing 4 KiB per read costs more than the
        // read); each datagram is used only up to its length.
        let mut bufs = std::mem::take(&mut self.rx);
        bufs.resize(RECV_BATCH, [0u8; SIM_REQUEST_LEN + 1]);
        let all = self.read_slot_into(net, slot, &mut bufs);
        self.rx = bufs;
        all
    }

    /// [`IbsimServer::read_slot`] with its buffers.
    fn read_slot_into(
        &mut self,
        net: &mut impl IbsimNet,
        slot: u32,
        bufs: &mut [[u8; SIM_REQUEST_LEN + 1]],
    ) -> bool {
        let mut lens = [0usize; RECV_BATCH];
        let mut read = 0;
        while read < BUDGET {
            let Some(sock) = self.slots.get(slot as usize) else {
                return false;
            };
            let unix = matches!(sock, Sock::Unix(_));
            let n = match sock.recv_many(bufs, &mut lens, &mut self.headers) {
                Ok(n) => n,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) if e.kind() == ErrorKind::WouldBlock => return false,
                Err(_) => {
                    // A UDP client's port unreachable shows here: it is gone.
                    if self.clients.contains_key(&slot) {
                        self.counters.vanished += 1;
                        self.drop_client(net, slot);
                    }
                    return false;
                }
            };
            self.on_mads(net, slot, &mut bufs[..n], &lens[..n]);
            read += n;
            if n < RECV_BATCH && unix {
                return false;
            }
        }
        true
    }

    /// One control datagram (ibsim `sim_ctl`).
    fn on_ctl(&mut self, net: &mut impl IbsimNet, b: &[u8], from: &Peer) {
        let Some(mut ctl) = SimCtl::parse(b) else {
            self.counters.bad_ctl += 1;
            return;
        };
        let ok = match ctl.ctl_type {
            CtlType::Connect => self.connect(net, &mut ctl, from),
            t => match self.clients.get(&ctl.client_id) {
                Some(c) if c.ctl_from == *from => {
                    let c = c.clone();
                    self.on_client_ctl(net, t, &c, ctl.client_id, &mut ctl.data)
                }
                _ => {
                    self.counters.foreign_ctl += 1;
                    false
                }
            },
        };
        if !ok {
            ctl.ctl_type = CtlType::Error;
        }
        // The sender may be gone already; nothing to do then.
        let _ = self.ctl.send_to(&ctl.to_bytes(), from);
    }

    fn on_client_ctl(
        &mut self,
        net: &mut impl IbsimNet,
        t: CtlType,
        c: &Client,
        slot: u32,
        data: &mut [u8; 64],
    ) -> bool {
        let h = net.host(c.host);
        let host = net.host_device(c.host);
        let port = host.hca().port(h.port);
        let cap = if c.issm || self.cfg.sm_hosts.contains(&c.host) {
            info::CAP_IS_SM
        } else {
            0
        };
        match t {
            CtlType::Disconnect => {
                self.counters.disconnects += 1;
                self.drop_client(net, slot);
            }
            CtlType::GetNodeInfo => *data = info::node_info(host.hca(), h.port),
            CtlType::GetPortInfo => {
                // ibsim: port 0 or out of range is the attached port; CA ports count from 1.
                let asked = data[0];
                let p = match host.hca().port(asked) {
                    Some(p) if asked != 0 => Some(p),
                    _ => port,
                };
                let Some(p) = p else { return false };
                let cap = if p.num == h.port { cap } else { 0 };
                let Some(b) = info::port_info(host.hca(), p.num, cap) else {
                    return false;
                };
                *data = b;
            }
            CtlType::GetVendor => *data = info::vendor(),
            CtlType::GetPkeys => match port {
                Some(p) => *data = info::pkeys(p),
                None => return false,
            },
            CtlType::GetPort => match port {
                Some(p) => *data = info::sim_port(p),
                None => return false,
            },
            CtlType::GetGid => match port {
                Some(p) => *data = info::gid(p),
                None => return false,
            },
            CtlType::GetGuid => *data = info::guid(host.hca()),
            CtlType::SetIssm => {
                let on = i32::from_ne_bytes([data[0], data[1], data[2], data[3]]) != 0;
                if self.set_issm(net, slot, on) {
                    if !on {
                        // It no longer wants the role: none is given back to it, and one taken
                        // from another goes back there (module `sm_role`).
                        let before = self.forget_displaced(slot);
                        if c.issm {
                            self.give_back_sm_role(net, before);
                        }
                    }
                    return true;
                }
                if !on {
                    return false;
                }
                // umad2sim ignores the answer (module `refusal`): the refused SM runs on
                // without the SA's requests, so the reason is told.
                let reason = if self.sm_exists(c.host) {
                    RefuseReason::SmThere
                } else {
                    RefuseReason::NoSmRole
                };
                return self.refuse_sm_role(c, reason);
            }
            CtlType::Connect | CtlType::Error | CtlType::Unknown(_) => {
                // ibsim answers an unknown type by echoing the request.
                self.counters.unknown_ctl += 1;
            }
        }
        true
    }

    /// The host a CONNECT's node id names: a topology node name, else a node description;
    /// empty for the first host (ibsim's default port).
    fn find_host(net: &impl IbsimNet, id: &str) -> Option<usize> {
        if id.is_empty() {
            return (net.host_count() > 0).then_some(0);
        }
        let nodes = net.topology().nodes();
        let by = |f: &dyn Fn(usize) -> bool| {
            (0..nodes.len())
                .filter(|&t| f(t))
                .find_map(|t| net.host_of_topo_node(t))
        };
        by(&|t| nodes[t].name == id).or_else(|| by(&|t| nodes[t].desc == id))
    }

    /// ibsim `sim_ctl_new_client`.
    fn connect(&mut self, net: &mut impl IbsimNet, ctl: &mut SimCtl, from: &Peer) -> bool {
        let Some(info) = ClientInfo::parse(&ctl.data) else {
            return self.refuse(None, RefuseReason::Malformed);
        };
        let Some(host) = IbsimServer::find_host(net, &info.node_id) else {
            let id = info.node_id.as_str();
            let known = (net.topology().nodes().iter()).any(|n| n.name == id || n.desc == id);
            let why = if known {
                RefuseReason::NoHostHere
            } else {
                RefuseReason::NoSuchNode
            };
            return self.refuse(Some(&info), why);
        };
        if info.issm != 0 && self.sm_exists_alive(net, host) {
            return self.refuse(Some(&info), RefuseReason::SmThere);
        }
        let Some(slot) = (0..self.cfg.max_clients).find(|n| !self.clients.contains_key(n)) else {
            let n = self.clients.len() as u32;
            return self.refuse(Some(&info), RefuseReason::TooManyClients(n));
        };
        while self.slots.len() <= slot as usize {
            let n = self.slots.len() as u32;
            let sock = match Sock::bind_slot(&self.cfg.listen, n) {
                Ok(s) => s,
                Err(e) => {
                    return self.refuse(Some(&info), RefuseReason::NoSlotSocket(e.to_string()))
                }
            };
            let ev = EpollEvent::new(EpollFlags::EPOLLIN, u64::from(n));
            if let Err(e) = self.epoll.add(sock.fd(), ev) {
                return self.refuse(Some(&info), RefuseReason::NoSlotSocket(e.to_string()));
            }
            self.slots.push(sock);
        }
        // ibsim exits when it cannot reach the input socket; we refuse the client.
        let sock = &self.slots[slot as usize];
        if let Err(e) = sock.connect_client(&self.cfg.listen, info.id, from) {
            return self.refuse(Some(&info), RefuseReason::NoInputSocket(e.to_string()));
        }
        let h = net.host(host);
        // libumad2sim carries single MADs and does no RMPP: the agent acknowledges the segments
        // of a response and the client gets the first.
        let Some(agent) = net.with_host(host, |hd, _| {
            let a = hd.umad_attach();
            hd.umad_set_rmpp(a, RmppMode::FirstSegment);
            a
        }) else {
            return self.refuse(Some(&info), RefuseReason::NoAgent);
        };
        let name = net.topology().nodes()[h.topo_node].name.clone();
        self.clients.insert(
            slot,
            Client {
                tag: info.id,
                host,
                name: name.clone(),
                qp: info.qp,
                issm: false,
                ctl_from: from.clone(),
                node: h.node,
                agent,
                traps: VecDeque::new(),
            },
        );
        if info.issm != 0 && !self.set_issm(net, slot, true) {
            self.drop_client(net, slot);
            return self.refuse(Some(&info), RefuseReason::NoSmRole);
        }
        self.counters.connects += 1;
        let answer = ClientInfo {
            id: slot,
            qp: info.qp,
            issm: info.issm,
            node_id: name,
        };
        let len = ctl.data.len().min(crate::ibsim::msg::CLIENT_INFO_LEN);
        ctl.data[..len].copy_from_slice(&answer.to_bytes()[..len]);
        true
    }

    fn drop_client(&mut self, net: &mut impl IbsimNet, slot: u32) {
        if let Some(c) = self.clients.remove(&slot) {
            let port = net.host(c.host).port;
            net.with_host(c.host, |h, _| {
                if c.issm {
                    h.hca_mut().set_sm_client(port, false);
                }
                h.umad_detach(c.agent)
            });
            let before = self.forget_displaced(slot);
            if c.issm {
                self.give_back_sm_role(net, before);
            }
        }
    }

    /// Drops the clients whose input socket is gone (Unix: connecting to its name again is
    /// refused). A client that exits without DISCONNECT is found this way even when nothing is
    /// sent to it.
    pub fn probe(&mut self, net: &mut impl IbsimNet) {
        let gone: Vec<u32> = self
            .clients
            .iter()
            .filter(|(&slot, c)| self.vanished(slot, c))
            .map(|(&s, _)| s)
            .collect();
        for slot in gone {
            self.counters.vanished += 1;
            self.drop_client(net, slot);
        }
    }
}

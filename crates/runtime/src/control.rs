//! The local control socket of a running lab or attach process: `ipoib show` asks it for a view
//! of the interfaces (the way `ip neigh` asks the kernel), one request per connection.
//!
//! The protocol is one line each way, on a Unix-domain stream socket:
//!
//! ```text
//! request:  show <view> [host] [json]\n      view: neigh | paths | mcast | conns | counters | hosts
//! response: the view (text or JSON), or one line `error: <message>\n`; then the server closes
//! ```
//!
//! The server ([`ControlServer`]) belongs to a single-threaded event loop: it never blocks and
//! starts no thread. The loop puts [`ControlServer::poll_fd`] into its poll(2) set (readable
//! means work is waiting) and calls [`ControlServer::poll`] when it is readable, or on every
//! turn; `poll` accepts, reads, answers through the owner's [`Handler`] and writes, each only as
//! far as the sockets allow without waiting.
//!
//! Invariants:
//! - at most [`MAX_CLIENTS`] connections are held: one more evicts the oldest (told so with an
//!   error line), so a client that never sends cannot lock the others out;
//! - a request is at most [`MAX_REQUEST`] bytes; a longer one, one that does not parse, or one
//!   that is not UTF-8 is answered with an error line and the connection closed;
//! - an answer is at most [`MAX_ANSWER`] bytes (a larger one is replaced by an error line);
//! - nothing a client sends or does makes the server panic or stop serving the others;
//! - the socket file has mode 0600 from the moment it has its name (bound under a temporary name,
//!   then renamed into place), a stale one (no listener behind it) is replaced, a live one is
//!   left alone, and it is removed on drop unless another server has replaced it since.
//!
//! [`query`] is the client side, what `ipoib show` runs.

use crate::show::{Answer, CounterSection};
use nix::sys::epoll::{Epoll, EpollCreateFlags, EpollEvent, EpollFlags};
use std::collections::VecDeque;
use std::fmt;
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The longest request line, newline included.
pub const MAX_REQUEST: usize = 256;
/// The most connections held at once.
pub const MAX_CLIENTS: usize = 8;
/// The largest answer sent; a lab of many hosts answers for one host with `--host`.
pub const MAX_ANSWER: usize = 64 << 20;
/// The longest host name a request may carry.
pub const MAX_HOST_NAME: usize = 64;

/// The environment variable that moves the run directory (tests, and runs without root).
pub const RUN_DIR_VAR: &str = "IPOIB_RUN_DIR";
/// The run directory when [`RUN_DIR_VAR`] is not set.
pub const RUN_DIR: &str = "/run/ipoib";

/// The run directory: `$IPOIB_RUN_DIR`, or `/run/ipoib`.
pub fn run_dir() -> PathBuf {
    match std::env::var_os(RUN_DIR_VAR) {
        Some(d) if !d.is_empty() => PathBuf::from(d),
        _ => PathBuf::from(RUN_DIR),
    }
}

/// The lab's control socket: `<run dir>/lab/control.sock`.
pub fn lab_socket() -> PathBuf {
    run_dir().join("lab").join("control.sock")
}

/// The control socket of the attach process of device `dev`: `<run dir>/attach-<dev>.sock`, or
/// `<run dir>/netns/<netns>/attach-<dev>.sock` for a device made in network namespace `netns`
/// (two attach processes may each have an `ib0`, in different namespaces). The caller checks
/// both names first: neither holds a `/`, nor is `.` or `..`.
pub fn attach_socket(netns: Option<&str>, dev: &str) -> PathBuf {
    match netns {
        Some(ns) => run_dir()
            .join("netns")
            .join(ns)
            .join(format!("attach-{dev}.sock")),
        None => run_dir().join(format!("attach-{dev}.sock")),
    }
}

/// The control socket of the fabric process listening on UDP port `port`:
/// `<run dir>/fabric-<port>.sock`.
pub fn fabric_socket(port: u16) -> PathBuf {
    run_dir().join(format!("fabric-{port}.sock"))
}

/// The control sockets of the fabric processes in the run directory, in name order.
pub fn fabric_sockets() -> Vec<PathBuf> {
    let Ok(dir) = std::fs::read_dir(run_dir()) else {
        return Vec::new();
    };
    let mut v: Vec<PathBuf> = dir
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| n.strip_prefix("fabric-"))
                .and_then(|n| n.strip_suffix(".sock"))
                .is_some_and(|port| port.parse::<u16>().is_ok())
        })
        .collect();
    v.sort();
    v
}

/// What a request asks to see.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum View {
    /// The neighbour caches (ARP and ND).
    Neigh,
    /// The path caches (PathRecords).
    Paths,
    /// The multicast groups.
    Mcast,
    /// The connected-mode connections (RFC 4755).
    Conns,
    /// The counters.
    Counters,
    /// The hosts of a fabric process: its slots, who holds them, their identities.
    Hosts,
}

impl View {
    /// Every view, in the order of the help text.
    pub const ALL: [View; 6] = [
        View::Neigh,
        View::Paths,
        View::Mcast,
        View::Conns,
        View::Counters,
        View::Hosts,
    ];

    /// Its name in requests.
    pub fn name(self) -> &'static str {
        match self {
            View::Neigh => "neigh",
            View::Paths => "paths",
            View::Mcast => "mcast",
            View::Conns => "conns",
            View::Counters => "counters",
            View::Hosts => "hosts",
        }
    }

    /// The view named `s`.
    pub fn from_name(s: &str) -> Option<View> {
        View::ALL.into_iter().find(|v| v.name() == s)
    }
}

impl fmt::Display for View {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One request: `show <view> [host] [json]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// The view.
    pub view: View,
    /// Only this host (a lab's `h1`..; an attach process has one host, its device).
    pub host: Option<String>,
    /// JSON instead of text.
    pub json: bool,
}

/// Why a request line was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RequestError {
    /// Not UTF-8.
    #[error("not UTF-8")]
    NotUtf8,
    /// Nothing but blanks.
    #[error("empty request")]
    Empty,
    /// A first word other than `show`.
    #[error("unknown command {0:?} (expected: show)")]
    UnknownCommand(String),
    /// No view, or an unknown one.
    #[error("unknown view {0:?} (expected: neigh, paths, mcast, conns, counters or hosts)")]
    UnknownView(String),
    /// A host name too long, with characters other than letters, digits, `.`, `_`, `-`, or
    /// `json`.
    #[error("bad host name {0:?}")]
    BadHost(String),
    /// Words left over.
    #[error("unexpected {0:?}")]
    Extra(String),
}

/// Host names: letters, digits, `.`, `_`, `-`; 1 to [`MAX_HOST_NAME`] characters; not `json`
/// (the flag's word).
fn valid_host(s: &str) -> bool {
    s != "json"
        && !s.is_empty()
        && s.len() <= MAX_HOST_NAME
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

impl Request {
    /// A request for `view` of every host, as text.
    pub fn new(view: View) -> Request {
        Request {
            view,
            host: None,
            json: false,
        }
    }

    /// Parses one request line (without or with its `\n` or `\r\n`). A last word `json` is the
    /// flag; a word before it is the host.
    pub fn parse(line: &[u8]) -> Result<Request, RequestError> {
        let line = std::str::from_utf8(line).map_err(|_| RequestError::NotUtf8)?;
        let mut words: Vec<&str> = line.split_ascii_whitespace().collect();
        let json = words.len() > 2 && words.last() == Some(&"json");
        if json {
            words.pop();
        }
        let mut it = words.into_iter();
        match it.next() {
            None => return Err(RequestError::Empty),
            Some("show") => {}
            Some(w) => return Err(RequestError::UnknownCommand(clip(w))),
        }
        let view = match it.next() {
            Some(w) => View::from_name(w).ok_or_else(|| RequestError::UnknownView(clip(w)))?,
            None => return Err(RequestError::UnknownView(String::new())),
        };
        let host = match it.next() {
            Some(h) if valid_host(h) => Some(h.to_string()),
            Some(h) => return Err(RequestError::BadHost(clip(h))),
            None => None,
        };
        if let Some(w) = it.next() {
            return Err(RequestError::Extra(clip(w)));
        }
        Ok(Request { view, host, json })
    }

    /// The request line, `\n` included.
    pub fn to_line(&self) -> String {
        let mut s = format!("show {}", self.view);
        if let Some(h) = &self.host {
            s.push(' ');
            s.push_str(h);
        }
        if self.json {
            s.push_str(" json");
        }
        s.push('\n');
        s
    }
}

/// At most 40 characters of `w`, for error messages.
fn clip(w: &str) -> String {
    w.chars().take(40).collect()
}

impl AnswerError {
    /// No host `name` among `known` (the owner's names, in order), which the message lists (the
    /// first 8 of more), so that a user who guessed the naming wrong sees it.
    pub fn no_such_host<S: AsRef<str>>(name: &str, known: &[S]) -> AnswerError {
        const SHOWN: usize = 8;
        if known.is_empty() {
            return AnswerError::NoSuchHost(name.to_string());
        }
        let list: Vec<&str> = known.iter().take(SHOWN).map(AsRef::as_ref).collect();
        let more = known.len().saturating_sub(SHOWN);
        let more = if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        };
        AnswerError::Unavailable(format!(
            "no host {name:?} (hosts: {}{more})",
            list.join(", ")
        ))
    }
}

/// Why the owner cannot answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AnswerError {
    /// The request names a host the owner does not have.
    #[error("no host {0:?}")]
    NoSuchHost(String),
    /// Anything else, said in words.
    #[error("{0}")]
    Unavailable(String),
}

/// What the owner of the server implements: the data of a view
/// ([`crate::show`] renders it as text or JSON). Closures implement it too.
pub trait Handler {
    /// The answer to `req` (only `req.view` needs to be filled; `req.host` selects the hosts).
    fn answer(&mut self, req: &Request) -> Result<Answer, AnswerError>;
}

impl<F: FnMut(&Request) -> Result<Answer, AnswerError>> Handler for F {
    fn answer(&mut self, req: &Request) -> Result<Answer, AnswerError> {
        self(req)
    }
}

/// What the server did, for the counters view (section `control`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ServerCounters {
    /// Connections accepted.
    pub accepted: u64,
    /// Requests answered with a view.
    pub answered: u64,
    /// Requests answered with an error line (bad requests, owner errors, answers too large).
    pub errors: u64,
    /// Requests longer than [`MAX_REQUEST`].
    pub too_long: u64,
    /// Connections closed to make room ([`MAX_CLIENTS`]).
    pub evicted: u64,
    /// Connections lost to an IO error or closed by the client before its answer was sent.
    pub lost: u64,
}

impl ServerCounters {
    /// As a counters section named `control`.
    pub fn section(&self) -> CounterSection {
        let mut s = CounterSection::new("control");
        s.push("accepted", self.accepted)
            .push("answered", self.answered)
            .push("errors", self.errors)
            .push("too_long", self.too_long)
            .push("evicted", self.evicted)
            .push("lost", self.lost);
        s
    }
}

/// Why [`ControlServer::bind`] failed.
#[derive(Debug, thiserror::Error)]
pub enum BindError {
    /// Another process answers on the socket.
    #[error("{0}: another process is listening there")]
    InUse(PathBuf),
    /// Something other than a socket has the name.
    #[error("{0} exists and is not a socket")]
    NotASocket(PathBuf),
    /// A system call failed.
    #[error("{path}: {source}")]
    Io {
        /// The socket path.
        path: PathBuf,
        /// The error.
        source: io::Error,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Reading,
    Writing,
}

#[derive(Debug)]
struct Client {
    stream: UnixStream,
    phase: Phase,
    input: Vec<u8>,
    output: Vec<u8>,
    sent: usize,
}

/// Where [`Client::read`] or [`Client::write`] left a client.
enum Step {
    /// Waiting for the socket.
    Wait,
    /// Request complete: answer it.
    Request(Result<Request, RequestError>),
    /// Too long: answer with an error.
    TooLong,
    /// Answer sent, or the connection lost: close.
    Done { lost: bool },
}

impl Client {
    fn read(&mut self) -> Step {
        let mut chunk = [0u8; MAX_REQUEST];
        loop {
            match self.stream.read(&mut chunk) {
                Ok(0) if self.input.is_empty() => return Step::Done { lost: false },
                // A request without its newline, then end of file: take it as it is.
                Ok(0) => return Step::Request(Request::parse(&self.input)),
                Ok(n) => {
                    self.input.extend_from_slice(&chunk[..n]);
                    if let Some(i) = self.input.iter().position(|&b| b == b'\n') {
                        if i + 1 > MAX_REQUEST {
                            return Step::TooLong;
                        }
                        return Step::Request(Request::parse(&self.input[..i]));
                    }
                    if self.input.len() >= MAX_REQUEST {
                        return Step::TooLong;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Step::Wait,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return Step::Done { lost: true },
            }
        }
    }

    fn write(&mut self) -> Step {
        while self.sent < self.output.len() {
            match self.stream.write(&self.output[self.sent..]) {
                Ok(0) => return Step::Done { lost: true },
                Ok(n) => self.sent += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Step::Wait,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return Step::Done { lost: true },
            }
        }
        Step::Done { lost: false }
    }
}

/// The control socket server. See the module docs.
#[derive(Debug)]
pub struct ControlServer {
    path: PathBuf,
    /// (device, inode) of the socket file we bound, so drop removes only our own.
    id: (u64, u64),
    listener: UnixListener,
    epoll: Epoll,
    clients: VecDeque<Client>,
    counters: ServerCounters,
}

/// The epoll data of the listener and of clients (unused: `poll` visits every client, there
/// are few).
const LISTENER: u64 = 0;
const CLIENT: u64 = 1;

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> BindError + '_ {
    move |source| BindError::Io {
        path: path.to_path_buf(),
        source,
    }
}

fn errno(e: nix::errno::Errno) -> io::Error {
    io::Error::from_raw_os_error(e as i32)
}

impl ControlServer {
    /// Listens on `path` (its directory must exist). A stale socket file there (nothing accepts
    /// connections on it) is replaced; a live one is an error ([`BindError::InUse`]), and so is
    /// any file that is not a socket.
    pub fn bind(path: impl AsRef<Path>) -> Result<ControlServer, BindError> {
        let path = path.as_ref();
        match std::fs::symlink_metadata(path) {
            Ok(m) if m.file_type().is_socket() => match UnixStream::connect(path) {
                Ok(_) => return Err(BindError::InUse(path.to_path_buf())),
                // Refused: nobody listens; the rename below replaces the file.
                Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => {}
                Err(e) => return Err(io_err(path)(e)),
            },
            Ok(_) => return Err(BindError::NotASocket(path.to_path_buf())),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(io_err(path)(e)),
        }
        // Bound under a name of our own, made 0600, then renamed into place: the socket is
        // never reachable under `path` with the umask's mode, and the rename replaces a stale
        // file atomically.
        let mut tmp = path.as_os_str().to_owned();
        tmp.push(format!(".{}.tmp", std::process::id()));
        let tmp = PathBuf::from(tmp);
        let _ = std::fs::remove_file(&tmp);
        let listener = UnixListener::bind(&tmp).map_err(io_err(path))?;
        let placed = std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o600))
            .and_then(|()| std::fs::rename(&tmp, path));
        if let Err(e) = placed {
            let _ = std::fs::remove_file(&tmp);
            return Err(io_err(path)(e));
        }
        let m = std::fs::symlink_metadata(path).map_err(io_err(path))?;
        listener.set_nonblocking(true).map_err(io_err(path))?;
        let epoll =
            Epoll::new(EpollCreateFlags::EPOLL_CLOEXEC).map_err(|e| io_err(path)(errno(e)))?;
        epoll
            .add(&listener, EpollEvent::new(EpollFlags::EPOLLIN, LISTENER))
            .map_err(|e| io_err(path)(errno(e)))?;
        Ok(ControlServer {
            path: path.to_path_buf(),
            id: (m.dev(), m.ino()),
            listener,
            epoll,
            clients: VecDeque::new(),
            counters: ServerCounters::default(),
        })
    }

    /// The socket's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// One descriptor for the event loop's poll(2) set (an epoll instance holding the listener
    /// and every client; docs/DEPLOYED.md "Linux Unix-domain sockets and epoll"): readable when
    /// [`ControlServer::poll`] has work. The same for the server's whole life.
    pub fn poll_fd(&self) -> BorrowedFd<'_> {
        self.epoll.0.as_fd()
    }

    /// Connections held.
    pub fn clients(&self) -> usize {
        self.clients.len()
    }

    /// What the server did so far.
    pub fn counters(&self) -> ServerCounters {
        self.counters
    }

    /// Does whatever the sockets allow without waiting: accepts every pending connection, reads
    /// requests, answers them through `handler`, writes answers, closes finished connections.
    /// Returns the number of requests answered (with a view or an error line).
    ///
    /// Nothing the sockets allow is left for a later call, so an event loop that watches
    /// [`ControlServer::poll_fd`] edge-triggered (mio) may wait for the next edge after each
    /// call; a level-triggered one sees the descriptor quiet once the call returns.
    pub fn poll<H: Handler + ?Sized>(&mut self, handler: &mut H) -> usize {
        self.accept();
        let mut answered = 0;
        let mut i = 0;
        while i < self.clients.len() {
            let step = match self.clients[i].phase {
                Phase::Reading => self.clients[i].read(),
                Phase::Writing => self.clients[i].write(),
            };
            let reply = match step {
                Step::Wait => {
                    i += 1;
                    continue;
                }
                Step::Done { lost } => {
                    self.counters.lost += u64::from(lost);
                    self.close(i);
                    continue;
                }
                Step::TooLong => {
                    self.counters.too_long += 1;
                    self.counters.errors += 1;
                    format!("error: request longer than {MAX_REQUEST} bytes\n").into_bytes()
                }
                Step::Request(Err(e)) => {
                    self.counters.errors += 1;
                    format!("error: bad request: {e}\n").into_bytes()
                }
                Step::Request(Ok(req)) => self.respond(handler, &req),
            };
            answered += 1;
            let c = &mut self.clients[i];
            c.input = Vec::new();
            c.output = reply;
            c.phase = Phase::Writing;
            let mut ev = EpollEvent::new(EpollFlags::EPOLLOUT, CLIENT);
            if self.epoll.modify(&c.stream, &mut ev).is_err() {
                self.counters.lost += 1;
                self.close(i);
            }
            // Stays at `i`: the next turn writes at once.
        }
        answered
    }

    fn respond<H: Handler + ?Sized>(&mut self, handler: &mut H, req: &Request) -> Vec<u8> {
        match handler.answer(req) {
            Ok(mut a) => {
                if req.view == View::Counters {
                    let mut s = self.counters;
                    s.answered += 1;
                    a.sections.push(s.section());
                }
                let text = a.render(req.view, req.json);
                if text.len() > MAX_ANSWER {
                    self.counters.errors += 1;
                    return format!(
                        "error: answer too large ({} bytes, at most {MAX_ANSWER}); ask for one host\n",
                        text.len()
                    )
                    .into_bytes();
                }
                self.counters.answered += 1;
                text.into_bytes()
            }
            Err(e) => {
                self.counters.errors += 1;
                format!("error: {e}\n").into_bytes()
            }
        }
    }

    fn accept(&mut self) {
        // Until the backlog is empty: only the socket's owner can connect (0600), and each
        // connection beyond MAX_CLIENTS evicts one, so this ends and holds little.
        loop {
            let stream = match self.listener.accept() {
                Ok((s, _)) => s,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::Interrupted | io::ErrorKind::ConnectionAborted
                    ) =>
                {
                    continue
                }
                // Out of descriptors or memory: try again on the next poll.
                Err(_) => return,
            };
            if stream.set_nonblocking(true).is_err() {
                self.counters.lost += 1;
                continue;
            }
            if self.clients.len() >= MAX_CLIENTS {
                self.evict();
            }
            let ev = EpollEvent::new(EpollFlags::EPOLLIN, CLIENT);
            if self.epoll.add(&stream, ev).is_err() {
                self.counters.lost += 1;
                continue;
            }
            self.counters.accepted += 1;
            self.clients.push_back(Client {
                stream,
                phase: Phase::Reading,
                input: Vec::new(),
                output: Vec::new(),
                sent: 0,
            });
        }
    }

    /// Closes the oldest connection, telling it why if it has not had part of an answer yet and
    /// its socket takes the line at once.
    fn evict(&mut self) {
        if let Some(c) = self.clients.pop_front() {
            self.counters.evicted += 1;
            let _ = self.epoll.delete(&c.stream);
            if c.phase == Phase::Reading {
                let _ = (&c.stream).write_all(b"error: too many clients\n");
            }
            hang_up(c.stream);
        }
    }

    /// Takes client `i` out of the table and the epoll set, and closes it.
    fn close(&mut self, i: usize) {
        if let Some(c) = self.clients.remove(i) {
            let _ = self.epoll.delete(&c.stream);
            hang_up(c.stream);
        }
    }
}

/// The most unread input [`hang_up`] throws away before closing.
const DRAIN_MAX: usize = 64 << 10;

/// Closes a connection so that the client reads what was written to it: Linux resets a Unix
/// stream socket closed with unread input (the peer's read fails with ECONNRESET before the
/// data; docs/DEPLOYED.md "Linux Unix-domain sockets and epoll"), so the input waiting (the rest
/// of a request too long, words after the newline) is read and dropped first, up to
/// [`DRAIN_MAX`] bytes.
fn hang_up(mut s: UnixStream) {
    let mut buf = [0u8; 4096];
    let mut drained = 0;
    while drained < DRAIN_MAX {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => drained += n,
        }
    }
    let _ = s.shutdown(std::net::Shutdown::Both);
}

impl Drop for ControlServer {
    fn drop(&mut self) {
        // Only our own socket file: a server started since may have replaced it.
        if let Ok(m) = std::fs::symlink_metadata(&self.path) {
            if (m.dev(), m.ino()) == self.id {
                let _ = std::fs::remove_file(&self.path);
            }
        }
    }
}

/// Why [`query`] got no view.
#[derive(Debug, thiserror::Error)]
pub enum QueryError {
    /// No socket file.
    #[error("{0} not found")]
    NotFound(PathBuf),
    /// A socket file nobody listens on (the process died without removing it).
    #[error("{0} is stale (nothing listens on it)")]
    Stale(PathBuf),
    /// The path names a file that is no socket (a regular file, a directory): connecting to it
    /// is refused as to a stale socket, but no process ever listened there.
    #[error("{0} is not a socket")]
    NotASocket(PathBuf),
    /// Not allowed to connect (the socket is 0600: run as its owner).
    #[error("{0}: permission denied (the socket is mode 0600: run as the user that started it)")]
    PermissionDenied(PathBuf),
    /// No complete answer within the timeout.
    #[error("{0}: no answer within {1:?}")]
    TimedOut(PathBuf, Duration),
    /// Another IO error.
    #[error("{path}: {source}")]
    Io {
        /// The socket path.
        path: PathBuf,
        /// The error.
        source: io::Error,
    },
    /// The server answered with an error line.
    #[error("{0}")]
    Server(String),
}

impl QueryError {
    /// True when nothing runs behind the path (no socket, or a stale one).
    pub fn not_running(&self) -> bool {
        matches!(
            self,
            QueryError::NotFound(_) | QueryError::Stale(_) | QueryError::NotASocket(_)
        )
    }
}

/// Sends `req` to the server at `path` and returns its answer, waiting at most `timeout` for
/// each read and write. An answer `error: <message>` becomes [`QueryError::Server`].
pub fn query(path: &Path, req: &Request, timeout: Duration) -> Result<String, QueryError> {
    let io = |source: io::Error| match source.kind() {
        io::ErrorKind::NotFound => QueryError::NotFound(path.to_path_buf()),
        // connect(2) on a file that is no socket fails with ECONNREFUSED too.
        io::ErrorKind::ConnectionRefused => match std::fs::metadata(path) {
            Ok(m) if !m.file_type().is_socket() => QueryError::NotASocket(path.to_path_buf()),
            _ => QueryError::Stale(path.to_path_buf()),
        },
        io::ErrorKind::PermissionDenied => QueryError::PermissionDenied(path.to_path_buf()),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => {
            QueryError::TimedOut(path.to_path_buf(), timeout)
        }
        _ => QueryError::Io {
            path: path.to_path_buf(),
            source,
        },
    };
    let mut s = UnixStream::connect(path).map_err(io)?;
    s.set_read_timeout(Some(timeout)).map_err(io)?;
    s.set_write_timeout(Some(timeout)).map_err(io)?;
    s.write_all(req.to_line().as_bytes()).map_err(io)?;
    let mut answer = Vec::new();
    s.read_to_end(&mut answer).map_err(io)?;
    let answer = String::from_utf8_lossy(&answer).into_owned();
    match answer.strip_prefix("error: ") {
        Some(msg) => Err(QueryError::Server(msg.trim_end().to_string())),
        None => Ok(answer),
    }
}

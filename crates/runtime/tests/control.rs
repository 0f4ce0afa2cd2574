//! The control socket (`ipoib_runtime::control`) with a test owner in a temporary directory:
//! request and response, garbage, a request too long, more clients than it holds, a stale socket
//! file, the file's mode and removal, and the client side's errors.

use ipoib_runtime::control::{
    query, AnswerError, BindError, ControlServer, QueryError, Request, RequestError, View,
    MAX_CLIENTS, MAX_REQUEST,
};
use ipoib_runtime::show::{Answer, CounterSection, HostShow};
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use std::io::{Read, Write};
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

/// The test owner: one host `h1` with one counter; any other host is unknown.
fn owner(req: &Request) -> Result<Answer, AnswerError> {
    let mut h = HostShow::new("h1");
    if let Some(name) = &req.host {
        if name != "h1" {
            return Err(AnswerError::NoSuchHost(name.clone()));
        }
    }
    let mut s = CounterSection::new("test");
    s.push("requests", 1);
    h.counters.push(s);
    Ok(Answer {
        hosts: vec![h],
        sections: Vec::new(),
    })
}

fn sock(dir: &tempfile::TempDir) -> PathBuf {
    dir.path().join("control.sock")
}

/// True when the server's poll descriptor is readable right now.
fn readable(server: &ControlServer) -> bool {
    let mut fds = [PollFd::new(server.poll_fd(), PollFlags::POLLIN)];
    poll(&mut fds, PollTimeout::ZERO).expect("poll") == 1
}

/// Sends `bytes` on a new connection, lets the server work, and returns all it answered.
fn exchange(server: &mut ControlServer, bytes: &[u8]) -> String {
    let mut c = UnixStream::connect(server.path()).expect("connect");
    c.write_all(bytes).expect("write");
    server.poll(&mut owner);
    let mut out = String::new();
    c.read_to_string(&mut out).expect("read");
    out
}

/// A server polled by a thread until the returned flag is set (for the blocking `query`).
fn serve(mut server: ControlServer) -> (Arc<AtomicBool>, thread::JoinHandle<ControlServer>) {
    let stop = Arc::new(AtomicBool::new(false));
    let s = stop.clone();
    let t = thread::spawn(move || {
        while !s.load(Ordering::Relaxed) {
            let mut fds = [PollFd::new(server.poll_fd(), PollFlags::POLLIN)];
            let _ = poll(&mut fds, PollTimeout::from(20u16));
            server.poll(&mut owner);
        }
        server
    });
    (stop, t)
}

#[test]
fn request_lines_parse_and_print_back() {
    let r = Request::parse(b"show neigh h1 json\n").unwrap();
    assert_eq!(
        r,
        Request {
            view: View::Neigh,
            host: Some("h1".into()),
            json: true
        }
    );
    assert_eq!(r.to_line(), "show neigh h1 json\n");
    for v in View::ALL {
        let r = Request::new(v);
        assert_eq!(Request::parse(r.to_line().as_bytes()), Ok(r));
    }
    assert_eq!(
        Request::parse(b"show counters json\r\n").unwrap(),
        Request {
            view: View::Counters,
            host: None,
            json: true
        }
    );
    // `json` is the flag's word, never a host.
    assert!(matches!(
        Request::parse(b"show paths json json"),
        Err(RequestError::BadHost(_))
    ));
    assert_eq!(Request::parse(b"  "), Err(RequestError::Empty));
    assert_eq!(Request::parse(b"\xff\xfe"), Err(RequestError::NotUtf8));
    assert!(matches!(
        Request::parse(b"ls neigh"),
        Err(RequestError::UnknownCommand(_))
    ));
    assert!(matches!(
        Request::parse(b"show routes"),
        Err(RequestError::UnknownView(_))
    ));
    assert!(matches!(
        Request::parse(b"show"),
        Err(RequestError::UnknownView(_))
    ));
    assert!(matches!(
        Request::parse(b"show neigh h/1"),
        Err(RequestError::BadHost(_))
    ));
    assert!(matches!(
        Request::parse(b"show neigh h1 json extra"),
        Err(RequestError::Extra(_))
    ));
}

#[test]
fn answers_a_request_and_closes() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = ControlServer::bind(sock(&dir)).unwrap();
    assert!(!readable(&server), "nothing to do before a client");
    let mut c = UnixStream::connect(server.path()).unwrap();
    c.write_all(b"show counters\n").unwrap();
    assert!(readable(&server), "a client is waiting");
    assert_eq!(server.poll(&mut owner), 1);
    let mut out = String::new();
    c.read_to_string(&mut out).unwrap();
    assert!(out.starts_with("h1 test:\n    requests  1\n"), "{out}");
    assert!(out.contains("control:\n    accepted  1\n"), "{out}");
    assert_eq!(server.clients(), 0);
    assert!(!readable(&server), "all done: the loop may sleep");
    assert_eq!(server.counters().answered, 1);

    let json = exchange(&mut server, b"show counters h1 json\n");
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v[0]["host"], "h1");
    assert_eq!(v[0]["counters"]["requests"], 1);
    assert_eq!(v[1]["section"], "control");
}

#[test]
fn a_request_in_pieces_is_answered_once_complete() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = ControlServer::bind(sock(&dir)).unwrap();
    let mut c = UnixStream::connect(server.path()).unwrap();
    c.write_all(b"show coun").unwrap();
    assert_eq!(server.poll(&mut owner), 0);
    assert_eq!(server.clients(), 1);
    c.write_all(b"ters\n").unwrap();
    assert_eq!(server.poll(&mut owner), 1);
    let mut out = String::new();
    c.read_to_string(&mut out).unwrap();
    assert!(out.starts_with("h1 test:"), "{out}");
}

#[test]
fn owner_errors_become_an_error_line() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = ControlServer::bind(sock(&dir)).unwrap();
    assert_eq!(
        exchange(&mut server, b"show neigh h9\n"),
        "error: no host \"h9\"\n"
    );
    assert_eq!(server.counters().errors, 1);
}

#[test]
fn garbage_gets_an_error_line_and_the_connection_closed() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = ControlServer::bind(sock(&dir)).unwrap();
    assert_eq!(
        exchange(&mut server, b"\xff\xfe\x00garbage\n"),
        "error: bad request: not UTF-8\n"
    );
    assert!(exchange(&mut server, b"GET / HTTP/1.1\r\n")
        .starts_with("error: bad request: unknown command \"GET\""));
    assert!(exchange(&mut server, b"show routes\n").starts_with("error: bad request: unknown view"));
    // Without a newline, the end of the stream ends the request.
    let mut c = UnixStream::connect(server.path()).unwrap();
    c.write_all(b"show neigh").unwrap();
    c.shutdown(std::net::Shutdown::Write).unwrap();
    server.poll(&mut owner);
    let mut out = String::new();
    c.read_to_string(&mut out).unwrap();
    assert!(out.starts_with("HOST  DST  LLADDR  STATE\n"), "{out}");
    // The server goes on serving.
    assert!(exchange(&mut server, b"show counters\n").starts_with("h1 test:"));
    assert_eq!(server.clients(), 0);
}

#[test]
fn a_request_too_long_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = ControlServer::bind(sock(&dir)).unwrap();
    let long = vec![b'a'; MAX_REQUEST + 100];
    let out = exchange(&mut server, &long);
    assert_eq!(
        out,
        format!("error: request longer than {MAX_REQUEST} bytes\n")
    );
    // One byte too many with its newline.
    let mut line = b"show neigh ".to_vec();
    line.resize(MAX_REQUEST, b' ');
    line.push(b'\n');
    assert!(exchange(&mut server, &line).starts_with("error: request longer"));
    // Exactly the limit, newline included, is fine.
    line.truncate(MAX_REQUEST - 1);
    line.push(b'\n');
    assert!(exchange(&mut server, &line).starts_with("HOST"));
    assert_eq!(server.counters().too_long, 2);
}

#[test]
fn more_clients_than_it_holds_evict_the_oldest() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = ControlServer::bind(sock(&dir)).unwrap();
    // Idle clients that never send, all waiting to be accepted in one poll.
    let extra = 40;
    let mut idle: Vec<UnixStream> = (0..MAX_CLIENTS + extra)
        .map(|_| UnixStream::connect(server.path()).unwrap())
        .collect();
    server.poll(&mut owner);
    assert_eq!(server.clients(), MAX_CLIENTS);
    assert_eq!(server.counters().evicted, extra as u64);
    assert!(
        !readable(&server),
        "every pending connection taken in one poll"
    );
    for c in &mut idle[..extra] {
        let mut out = String::new();
        c.read_to_string(&mut out).unwrap();
        assert_eq!(out, "error: too many clients\n");
    }
    // A new client is still served.
    assert!(exchange(&mut server, b"show counters\n").starts_with("h1 test:"));
    assert!(server.clients() <= MAX_CLIENTS);
    // The idle ones still held get their answer once they ask.
    let last = idle.last_mut().unwrap();
    last.write_all(b"show neigh\n").unwrap();
    server.poll(&mut owner);
    let mut out = String::new();
    last.read_to_string(&mut out).unwrap();
    assert!(out.starts_with("HOST"), "{out}");
}

#[test]
fn a_client_that_leaves_early_is_counted_not_fatal() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = ControlServer::bind(sock(&dir)).unwrap();
    let mut c = UnixStream::connect(server.path()).unwrap();
    c.write_all(b"show counters\n").unwrap();
    drop(c);
    server.poll(&mut owner);
    assert_eq!(server.clients(), 0);
    assert_eq!(server.counters().lost, 1);
    assert!(exchange(&mut server, b"show counters\n").starts_with("h1 test:"));
}

#[test]
fn socket_file_is_0600_and_removed_on_drop() {
    let dir = tempfile::tempdir().unwrap();
    let path = sock(&dir);
    let server = ControlServer::bind(&path).unwrap();
    let m = std::fs::symlink_metadata(&path).unwrap();
    assert!(m.file_type().is_socket());
    assert_eq!(m.permissions().mode() & 0o777, 0o600);
    // Nothing else left in the directory (the temporary name was renamed).
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    drop(server);
    assert!(!path.exists());
}

#[test]
fn a_stale_socket_is_replaced_a_live_one_is_not() {
    let dir = tempfile::tempdir().unwrap();
    let path = sock(&dir);
    // A listener that went away without removing its file.
    drop(UnixListener::bind(&path).unwrap());
    assert!(matches!(
        query(&path, &Request::new(View::Neigh), Duration::from_secs(5)),
        Err(QueryError::Stale(_))
    ));
    let server = ControlServer::bind(&path).unwrap();
    assert!(matches!(
        ControlServer::bind(&path),
        Err(BindError::InUse(_))
    ));
    let (stop, t) = serve(server);
    let out = query(&path, &Request::new(View::Counters), Duration::from_secs(5)).unwrap();
    assert!(out.starts_with("h1 test:"), "{out}");
    stop.store(true, Ordering::Relaxed);
    drop(t.join().unwrap());
    assert!(!path.exists());
}

#[test]
fn something_that_is_not_a_socket_is_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let path = sock(&dir);
    std::fs::write(&path, b"precious").unwrap();
    assert!(matches!(
        ControlServer::bind(&path),
        Err(BindError::NotASocket(_))
    ));
    assert_eq!(std::fs::read(&path).unwrap(), b"precious");
}

#[test]
fn drop_leaves_a_newer_servers_socket() {
    let dir = tempfile::tempdir().unwrap();
    let path = sock(&dir);
    let old = ControlServer::bind(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    let new = ControlServer::bind(&path).unwrap();
    drop(old);
    assert!(path.exists());
    drop(new);
    assert!(!path.exists());
}

#[test]
fn query_reports_what_went_wrong() {
    let dir = tempfile::tempdir().unwrap();
    let path: &Path = &sock(&dir);
    let e = query(path, &Request::new(View::Neigh), Duration::from_secs(5)).unwrap_err();
    assert!(matches!(e, QueryError::NotFound(_)) && e.not_running());
    let (stop, t) = serve(ControlServer::bind(path).unwrap());
    let mut req = Request::new(View::Neigh);
    req.host = Some("h7".into());
    match query(path, &req, Duration::from_secs(5)) {
        Err(QueryError::Server(m)) => assert_eq!(m, "no host \"h7\""),
        other => panic!("{other:?}"),
    }
    stop.store(true, Ordering::Relaxed);
    t.join().unwrap();
}

// An answer larger than the socket's buffer goes out as the client reads it; meanwhile the poll
// descriptor is quiet (no busy loop while the client is slow).
#[test]
fn a_large_answer_is_written_as_the_client_reads() {
    use ipoib_runtime::show::{NeighEntry, NeighState};
    let big = |_: &Request| -> Result<Answer, AnswerError> {
        let mut h = HostShow::new("h1");
        h.neigh = (0..40_000u32)
            .map(|i| NeighEntry {
                dst: std::net::IpAddr::V4(i.into()),
                lladdr: None,
                state: NeighState::Incomplete,
            })
            .collect();
        Ok(Answer {
            hosts: vec![h],
            sections: Vec::new(),
        })
    };
    let expected = big(&Request::new(View::Neigh))
        .unwrap()
        .render(View::Neigh, false);
    assert!(expected.len() > 1 << 20);
    let dir = tempfile::tempdir().unwrap();
    let mut server = ControlServer::bind(sock(&dir)).unwrap();
    let mut c = UnixStream::connect(server.path()).unwrap();
    c.write_all(b"show neigh\n").unwrap();
    let mut handler = big;
    assert_eq!(server.poll(&mut handler), 1);
    assert_eq!(server.clients(), 1, "answer not all out yet");
    assert!(!readable(&server), "waiting for the client to read");
    let reader = thread::spawn(move || {
        let mut out = String::new();
        c.read_to_string(&mut out).unwrap();
        out
    });
    while server.clients() > 0 {
        let mut fds = [PollFd::new(server.poll_fd(), PollFlags::POLLIN)];
        let _ = poll(&mut fds, PollTimeout::from(100u16));
        server.poll(&mut handler);
    }
    assert_eq!(reader.join().unwrap(), expected);
}

// The descriptor in an edge-triggered epoll set (mio's way): each new request is a new edge,
// and after `poll` there is none left over.
#[test]
fn works_under_an_edge_triggered_loop() {
    use nix::sys::epoll::{Epoll, EpollCreateFlags, EpollEvent, EpollFlags};
    let dir = tempfile::tempdir().unwrap();
    let mut server = ControlServer::bind(sock(&dir)).unwrap();
    let outer = Epoll::new(EpollCreateFlags::EPOLL_CLOEXEC).unwrap();
    outer
        .add(
            server.poll_fd(),
            EpollEvent::new(EpollFlags::EPOLLIN | EpollFlags::EPOLLET, 7),
        )
        .unwrap();
    let mut events = [EpollEvent::empty(); 4];
    for round in 0..3 {
        let mut c = UnixStream::connect(server.path()).unwrap();
        c.write_all(b"show counters\n").unwrap();
        assert_eq!(
            outer.wait(&mut events, 5000u16).unwrap(),
            1,
            "round {round}"
        );
        assert_eq!(events[0].data(), 7);
        assert_eq!(server.poll(&mut owner), 1);
        let mut out = String::new();
        c.read_to_string(&mut out).unwrap();
        assert!(out.starts_with("h1 test:"), "{out}");
        server.poll(&mut owner);
        assert_eq!(server.clients(), 0);
        assert_eq!(outer.wait(&mut events, 0u16).unwrap(), 0, "no edge left");
    }
}

//! The console of `ipoib ibsim-server` through the binary (no client, no OpenSM needed): ibsim's
//! commands typed on standard input are answered on standard output, one line or more each,
//! `error: ...` for what is refused; `Unlink` takes a cable down and `ReLink` brings it back
//! (with our SM on the first host: the switch's trap 128 goes to it); odd input never stops the
//! server; `Quit` ends it with status 0. The server runs under a guard that kills it by PID.

mod osm;

use osm::Guard;
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

#[test]
fn console_commands_are_answered_and_quit_ends_the_server() {
    let sock = format!("ipoib-console-test-{}", std::process::id());
    let mut child = Command::new(env!("CARGO_BIN_EXE_ipoib"))
        .args([
            "ibsim-server",
            "--topology",
            "single-switch",
            "--hosts",
            "2",
        ])
        .args(["--sockname", &sock])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start ipoib ibsim-server");
    let mut stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut guard = Guard(child);
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for l in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(l).is_err() {
                break;
            }
        }
    });
    let next = || rx.recv_timeout(Duration::from_secs(30)).ok();
    let mut seen = Vec::new();
    while let Some(l) = next() {
        let ready = l == "ready";
        seen.push(l);
        if ready {
            break;
        }
    }
    assert_eq!(seen.last().map(String::as_str), Some("ready"), "{seen:?}");
    let mut ask = |line: &str, want: &str| {
        writeln!(stdin, "{line}").unwrap();
        stdin.flush().unwrap();
        assert_eq!(next().as_deref(), Some(want), "answer to {line:?}");
    };
    ask("frob", "error: command 'frob' unknown (try Help)");
    ask("unlink \"h9\"[1]", "error: unlink: nodeid \"h9\" not found");
    ask(
        "unlink \"h1\"[7]",
        "error: unlink: nodeid \"h1\": bad port 7 (1..=1)",
    );
    ask("\u{0}\"[", "error: command '\u{0}\"[' unknown (try Help)");
    ask(
        "Unlink \"h1\"[1]",
        "unlinked \"h1\"[1] - \"sw0\"[2]: Down/Polling and Down/Polling",
    );
    ask(
        "ReLink \"h1\"",
        "relinked \"h1\"[1] - \"sw0\"[2]: Init/LinkUp and Init/LinkUp",
    );
    ask("relink \"h1\"", "error: relink: no previous link stored");
    ask("Quit", "Exiting network simulator.");
    drop(stdin);
    let mut status = None;
    for _ in 0..100 {
        if let Ok(Some(st)) = guard.0.try_wait() {
            status = Some(st);
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(
        status.and_then(|s| s.code()),
        Some(0),
        "Quit ends the server"
    );
}

// A line that is not UTF-8 (a Latin-1 é typed on another terminal) is answered like any unknown
// command, and the console goes on answering the lines after it.
#[test]
fn a_line_that_is_not_utf8_is_answered_and_the_console_goes_on() {
    let sock = format!("ipoib-console-utf8-{}", std::process::id());
    let mut child = Command::new(env!("CARGO_BIN_EXE_ipoib"))
        .args([
            "ibsim-server",
            "--topology",
            "single-switch",
            "--hosts",
            "2",
        ])
        .args(["--sockname", &sock])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start ipoib ibsim-server");
    let mut stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let _guard = Guard(child);
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for l in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(l).is_err() {
                break;
            }
        }
    });
    let next = || rx.recv_timeout(Duration::from_secs(10)).ok();
    while let Some(l) = next() {
        if l == "ready" {
            break;
        }
    }
    stdin.write_all(b"\xe9t\xe9\nfrob\n").unwrap();
    stdin.flush().unwrap();
    assert_eq!(
        next().as_deref(),
        Some("error: command '\u{fffd}t\u{fffd}' unknown (try Help)")
    );
    assert_eq!(
        next().as_deref(),
        Some("error: command 'frob' unknown (try Help)")
    );
}

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

fn installed(exe: &str) -> Option<std::path::PathBuf> {
    ["/usr/bin", "/bin"]
        .iter()
        .map(|d| std::path::Path::new(d).join(exe))
        .find(|p| p.is_file())
}

// `ipoib ibsim-server ... &` typed in an interactive shell: a background job that reads its
// terminal is stopped by SIGTTIN (POSIX.1-2017 §11.1.4), and the whole server with it. The
// console leaves the terminal alone while the server is in the background, which goes on
// serving. The shell runs on a terminal of its own made by script(1) (util-linux); skipped
// without it.
#[test]
fn a_server_in_the_background_of_a_shell_is_not_stopped() {
    let (Some(script), Some(bash)) = (installed("script"), installed("bash")) else {
        eprintln!("SKIP: script(1) or bash is not installed (Debian util-linux, bash)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display();
    let job = format!(
        "set -m\n\
         '{bin}' ibsim-server --topology single-switch --hosts 2 --sockname ipoib-console-bg-{me} \
         > {d}/out 2>&1 &\n\
         p=$!\n\
         echo $p > {d}/pid\n\
         for i in $(seq 100); do grep -q '^ready$' {d}/out && break; sleep 0.1; done\n\
         sleep 1\n\
         cut -d' ' -f3 /proc/$p/stat > {d}/state\n\
         kill -9 $p\n",
        bin = env!("CARGO_BIN_EXE_ipoib"),
        me = std::process::id(),
    );
    std::fs::write(dir.path().join("job.sh"), job).unwrap();
    let st = Command::new("timeout")
        .arg("60")
        .arg(script)
        .args(["-q", "-c"])
        .arg(format!(
            "{} --norc --noprofile -i {d}/job.sh",
            bash.display()
        ))
        .arg("/dev/null")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("run script(1)");
    // Whatever happened above, the server does not outlive the test.
    if let Ok(pid) = std::fs::read_to_string(dir.path().join("pid")) {
        let _ = Command::new("kill").args(["-9", pid.trim()]).status();
    }
    let read = |f: &str| std::fs::read_to_string(dir.path().join(f)).unwrap_or_default();
    assert!(
        read("out").lines().any(|l| l == "ready"),
        "{st}: {}",
        read("out")
    );
    let state = read("state");
    assert!(
        matches!(state.trim(), "S" | "R"),
        "the server in the background is in state {state:?} (T: stopped)"
    );
}

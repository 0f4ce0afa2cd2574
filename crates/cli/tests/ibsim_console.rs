//! The console of `ipoib ibsim-server` through the binary (no client, no OpenSM needed): ibsim's
//! commands typed on standard input are answered on standard output, one line or more each,
//! `error: ...` for what is refused; `Unlink` takes a cable down and `ReLink` brings it back
//! (with our SM on the first host: the switch's trap 128 goes to it); odd input never stops the
//! server; `Quit` ends it with status 0. A host our SM cannot reach is named with the reason.
//! The server runs under a guard that stops it by PID (`osm::Server`).

mod osm;

use osm::Server;
use std::path::Path;
use std::process::{Command, Stdio};

/// `ipoib ibsim-server` on two hosts of one switch, its socket named after `name`.
fn console(dir: &Path, name: &str) -> Server {
    Server::spawn(dir, name, |c| {
        c.args(["--topology", "single-switch", "--hosts", "2"]);
    })
}

#[test]
fn console_commands_are_answered_and_quit_ends_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = console(dir.path(), "console-test");
    let mut ask = |line: &str, want: &str| {
        s.send(line);
        assert_eq!(s.next_line(30).as_deref(), Some(want), "answer to {line:?}");
    };
    ask("frob", "error: command 'frob' unknown (try Help)");
    ask(
        "unlink \"h9\"[1]",
        "error: unlink: nodeid \"h9\" not found (Dump lists the nodes)",
    );
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
    s.close_console();
    assert_eq!(
        s.wait_exit(30).and_then(|s| s.code()),
        Some(0),
        "Quit ends the server"
    );
}

// A line that is not UTF-8 (a Latin-1 é typed on another terminal) is answered like any unknown
// command, and the console goes on answering the lines after it.
#[test]
fn a_line_that_is_not_utf8_is_answered_and_the_console_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = console(dir.path(), "console-utf8");
    s.send_bytes(b"\xe9t\xe9\nfrob\n");
    assert_eq!(
        s.next_line(30).as_deref(),
        Some("error: command '\u{fffd}t\u{fffd}' unknown (try Help)")
    );
    assert_eq!(
        s.next_line(30).as_deref(),
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
         for i in $(seq 300); do grep -q '^ready$' {d}/out && break; sleep 0.1; done\n\
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

// A host our SM cannot reach (cabled only through another host's second port, which does not
// forward SMPs): the server said only "not every host joined its broadcast group". It now warns
// as `sim` does and names each host that did not join with the reason.
#[test]
fn a_host_our_sm_cannot_reach_is_named_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let net = dir.path().join("split.net");
    std::fs::write(
        &net,
        "Switch 2 \"S1\"\n[1] \"H1\"[1]\n[2] \"H2\"[1]\nHca 1 \"H1\"\n[1] \"S1\"[1]\n\
         Hca 2 \"H2\"\n[1] \"S1\"[2]\n[2] \"H3\"[1]\nHca 1 \"H3\"\n[1] \"H2\"[2]\n",
    )
    .unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_ipoib"))
        .args(["ibsim-server", "--topology", net.to_str().unwrap()])
        .arg("--sockname")
        .arg(format!("ipoib-test-split-{}", std::process::id()))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run ipoib");
    {
        use std::io::Write as _;
        child.stdin.take().unwrap().write_all(b"Quit\n").unwrap();
    }
    let o = child.wait_with_output().unwrap();
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{e}");
    for want in [
        "ipoib ibsim-server: warning: the subnet manager cannot reach 2 CA port(s)",
        "\n  H3 (LID 0): reachable only through a channel adapter",
    ] {
        assert!(e.contains(want), "missing {want:?} in\n{e}");
    }
}

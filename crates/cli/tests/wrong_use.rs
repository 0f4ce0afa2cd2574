//! A user's wrong uses of `ipoib`, each refused at once with one line that names what is wrong
//! and exit status 2: the lab's commands without root (run as `nobody` with setpriv(1) when the
//! test runs as root), `ipoib attach` to UDP port 0 or into a namespace that does not exist,
//! `ipoib fabric --guid2lid` naming no regular file, and `ipoib ibsim-server --sockname ""`.
//! Nothing needs root or makes a namespace.

use std::io::Read as _;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_ipoib");

/// Runs `cmd`, killed after `timeout`: its exit code (None when killed) and standard error.
fn run(cmd: &mut Command, timeout: Duration) -> (Option<i32>, String) {
    let mut c = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let end = Instant::now() + timeout;
    let code = loop {
        if let Some(st) = c.try_wait().expect("wait") {
            break st.code();
        }
        if Instant::now() >= end {
            let _ = c.kill();
            let _ = c.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut err = String::new();
    let _ = c.stderr.take().expect("piped").read_to_string(&mut err);
    (code, err)
}

/// `ipoib ARGS` as a user that is not root: as is when the test is not root, else as `nobody`
/// through setpriv(1) (util-linux); None when neither is possible.
fn as_non_root(args: &[&str], run_dir: &std::path::Path) -> Option<Command> {
    let mut c = if nix::unistd::geteuid().is_root() {
        let setpriv = ["/usr/bin/setpriv", "/bin/setpriv"]
            .into_iter()
            .find(|p| std::path::Path::new(p).is_file())?;
        let mut c = Command::new(setpriv);
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups", BIN]);
        c
    } else {
        Command::new(BIN)
    };
    c.args(args).env("IPOIB_RUN_DIR", run_dir);
    Some(c)
}

/// Each said "ipoib lab: ipoib lab exec needs root (it makes network namespaces, mounts and TUN
/// devices)": the command twice, and for `exec` and `down` what they do not do.
#[test]
fn the_lab_commands_without_root_say_so_once_each() {
    let run_dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            &["lab", "--hosts", "2"][..],
            "ipoib lab: needs root (it makes network namespaces, mounts and TUN devices): run it \
             with sudo\n",
        ),
        (
            &["lab", "exec", "h1", "--", "true"][..],
            "ipoib lab exec: needs root (it enters a host's network namespace): run it with \
             sudo\n",
        ),
        (
            &["lab", "down"][..],
            "ipoib lab down: needs root (it stops the lab and removes its network namespaces): \
             run it with sudo\n",
        ),
    ];
    for (args, want) in cases {
        let Some(mut c) = as_non_root(args, run_dir.path()) else {
            eprintln!("skipped: root without setpriv(1)");
            return;
        };
        let (code, err) = run(&mut c, Duration::from_secs(30));
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert_eq!(err, want, "{args:?}");
    }
}

/// `--fabric udp:ADDR:0` was taken: the host asked port 0 for its identity forever ("no answer
/// ... still trying").
#[test]
fn attach_to_port_0_is_refused_at_once() {
    let run_dir = tempfile::tempdir().unwrap();
    let (code, err) = run(
        Command::new(BIN)
            .args([
                "attach",
                "--fabric",
                "udp:127.0.0.1:0",
                "--ip",
                "10.0.0.2/24",
                "--no-tun",
            ])
            .env("IPOIB_RUN_DIR", run_dir.path()),
        Duration::from_secs(30),
    );
    assert_eq!(code, Some(2), "{err}");
    assert_eq!(
        err,
        "ipoib attach: --fabric udp:127.0.0.1:0: port 0 is no fabric's port; give the one \
         `ipoib fabric --listen` listens on\n"
    );
    assert_eq!(
        std::fs::read_dir(run_dir.path()).unwrap().count(),
        0,
        "no control socket left"
    );
}

/// `ipoib fabric --guid2lid` naming no regular file: the table was written by renaming a new
/// file over the path, so `--guid2lid /dev/null` (as root) replaced /dev/null with a regular file,
/// and a pipe was read until its writer closed it (with none, for ever). Refused at the start,
/// the path left as it was; a FIFO stands for the device here, as it needs no root to make.
#[test]
fn a_guid2lid_path_that_is_no_regular_file_is_refused_and_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("g2l");
    let made = Command::new("mkfifo").arg(&fifo).status();
    if !made.is_ok_and(|s| s.success()) {
        eprintln!("skipped: no mkfifo(1)");
        return;
    }
    let run_dir = tempfile::tempdir().unwrap();
    let (code, err) = run(
        Command::new(BIN)
            .args([
                "fabric",
                "--listen",
                "udp:127.0.0.1:0",
                "--guid2lid",
                fifo.to_str().unwrap(),
            ])
            .env("IPOIB_RUN_DIR", run_dir.path()),
        Duration::from_secs(30),
    );
    assert_eq!(code, Some(2), "{err}");
    assert_eq!(
        err,
        format!(
            "ipoib fabric: --guid2lid {}: not a regular file; the fabric writes the table by \
             renaming a new file over it: give the path of a file (it need not exist yet)\n",
            fifo.display()
        )
    );
    use std::os::unix::fs::FileTypeExt as _;
    assert!(std::fs::symlink_metadata(&fifo)
        .unwrap()
        .file_type()
        .is_fifo());
    assert_eq!(std::fs::read_dir(run_dir.path()).unwrap().count(), 0);
}

/// `ipoib attach --netns NS`: a namespace that does not exist is named with the way to make it,
/// root or not; without root the hint no longer offers `--no-tun`, which excludes `--netns` (it
/// said "no network namespace nope (/run/netns/nope) (root is needed for a TUN device; --no-tun
/// runs without)").
#[test]
fn attach_into_a_missing_namespace_says_how_to_make_it() {
    let run_dir = tempfile::tempdir().unwrap();
    let ns = format!("ipoib-test-none-{}", std::process::id());
    let args = [
        "attach",
        "--fabric",
        "udp:127.0.0.1:9",
        "--ip",
        "10.0.0.2/24",
        "--netns",
        &ns,
    ];
    let want = format!(
        "ipoib attach: --netns {ns}: no network namespace {ns}; make it with `ip netns add \
         {ns}`\n"
    );
    let mut runs = vec![Command::new(BIN)];
    runs[0].args(args).env("IPOIB_RUN_DIR", run_dir.path());
    runs.extend(as_non_root(&args, run_dir.path()));
    for mut c in runs {
        let (code, err) = run(&mut c, Duration::from_secs(30));
        assert_eq!(code, Some(2), "{err}");
        assert_eq!(err, want);
    }
}

/// `ipoib ibsim-server --sockname ""` was taken: the subnet came up and the server served on the
/// abstract names `:ctl`, `:out<n>` until killed. Refused while the arguments are parsed.
#[test]
fn an_empty_ibsim_sockname_is_refused() {
    let (code, err) = run(
        Command::new(BIN).args([
            "ibsim-server",
            "--topology",
            "single-switch",
            "--hosts",
            "2",
            "--sockname",
            "",
        ]),
        Duration::from_secs(30),
    );
    assert_eq!(code, Some(2), "{err}");
    assert_eq!(
        err.lines().next(),
        Some(
            "error: invalid value '' for '--sockname <SOCKNAME>': empty: give the basename the \
             clients set in IBSIM_SOCKNAME (ibsim's default `sim`)"
        ),
        "{err}"
    );
}

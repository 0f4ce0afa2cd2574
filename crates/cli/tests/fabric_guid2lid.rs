//! `ipoib fabric --guid2lid FILE` (docs/UDP-FABRIC.md): the SM's LIDs by port GUID in OpenSM's
//! guid2lid format, written as the SM gives ports LIDs and read at the next start, so that a
//! restarted fabric gives a host the LID the file has for its port; a file that does not parse
//! stops the fabric with the line and the reason (exit status 2).

mod common;

use common::Talker;
use std::path::Path;
use std::process::Command;

/// Starts a fabric with `--guid2lid g2l`, attaches one host, and returns the LID it came up with
/// (after stopping both).
fn attach_once(run: &Path, g2l: &Path) -> u16 {
    let (mut fabric, l) = Talker::fabric_udp(&["--guid2lid", g2l.to_str().unwrap()], run);
    let addr = common::listen_addr(&l);
    let mut a = Talker::attach_no_tun(&addr, "10.0.0.2/24", &[], run);
    let up = a.expect("ib0: carrier up (LID ");
    let lid = up
        .split("(LID ")
        .nth(1)
        .and_then(|r| r.trim_end_matches(')').parse().ok())
        .unwrap_or_else(|| panic!("no LID in {up:?}"));
    assert_eq!(a.interrupt_and_wait(), 0);
    fabric.expect(" left CA ");
    assert_eq!(fabric.interrupt_and_wait(), 0);
    lid
}

#[test]
fn a_restarted_fabric_gives_the_lids_of_its_guid2lid_file() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path();
    let g2l = run.join("guid2lid");
    let first = attach_once(run, &g2l);
    let text = std::fs::read_to_string(&g2l).unwrap();
    // OpenSM's format: `0x<GUID> 0x<min LID> 0x<max LID>`, a blank line after each entry.
    let entry = format!(" {first:#06x} {first:#06x}");
    let line = text
        .lines()
        .find(|l| l.ends_with(&entry))
        .unwrap_or_else(|| panic!("no entry for LID {first} in {text:?}"));
    assert!(text.contains(&format!("{line}\n\n")), "{text:?}");
    // The host's port gets LID 0x42 at the next start, as the file now says.
    let guid = line.split(' ').next().unwrap();
    let edited = text.replace(line, &format!("{guid} 0x0042 0x0042"));
    std::fs::write(&g2l, edited).unwrap();
    assert_eq!(attach_once(run, &g2l), 0x42);
    let kept = std::fs::read_to_string(&g2l).unwrap();
    assert!(kept.contains(&format!("{guid} 0x0042 0x0042")), "{kept:?}");

    // A file that does not parse: exit status 2, the file, the line and the reason.
    std::fs::write(&g2l, format!("{text}0x5 0x1\n")).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_ipoib"))
        .args(["fabric", "--listen", "udp:127.0.0.1:0", "--guid2lid"])
        .arg(&g2l)
        .env("IPOIB_RUN_DIR", run)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    let n = text.lines().count() + 1;
    assert!(
        err.contains(&format!("{}: line {n}: 2 words", g2l.display())),
        "{err}"
    );
}

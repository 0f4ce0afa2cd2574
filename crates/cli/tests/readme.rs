//! The README's sample of `ipoib demo` comes from the current code: the test runs the README's
//! first demo command and finds every line the README shows, in order, in its output. The sample
//! is abridged at lines reading `...`; the lines between two of them must follow one another in
//! the output as they do in the README. The last line's wall time and memory are not compared.
//! The `--help` of every command is plain text.

use std::path::Path;
use std::process::Command;

/// The fenced block after the line that introduces the sample.
fn readme_sample() -> Vec<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md");
    let readme = std::fs::read_to_string(&path).expect("README.md");
    let intro = readme
        .find("The first command prints this")
        .expect("the README introduces its demo sample");
    let rest = &readme[intro..];
    let open = rest.find("\n```\n").expect("the sample's block") + 5;
    let close = rest[open..].find("\n```\n").expect("the end of the block") + open;
    rest[open..close].lines().map(str::to_string).collect()
}

/// A line as compared: the `Time:` line without its wall time and memory.
fn comparable(line: &str) -> String {
    match line.find(" simulated, ") {
        Some(i) if line.starts_with("Time: ") => line[..i + " simulated".len()].to_string(),
        _ => line.to_string(),
    }
}

#[test]
fn readme_demo_sample_is_what_the_demo_prints() {
    let dir = tempfile::tempdir().unwrap();
    // `cargo run --release -- demo`, the README's first demo command.
    let o = Command::new(env!("CARGO_BIN_EXE_ipoib"))
        .current_dir(dir.path())
        .arg("demo")
        .output()
        .expect("run ipoib");
    assert!(o.status.success());
    let out: Vec<String> = String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .map(comparable)
        .collect();
    let sample = readme_sample();
    assert!(sample.len() > 20, "{sample:?}");
    let pieces: Vec<Vec<String>> = sample
        .split(|l| l.trim() == "...")
        .map(|p| p.iter().map(|l| comparable(l)).collect())
        .collect();
    // The sample starts where the output starts and ends where it ends.
    assert_eq!(out.first(), sample.first(), "first line");
    assert_eq!(
        out.last(),
        pieces.last().and_then(|p| p.last()),
        "last line"
    );
    let mut from = 0;
    for piece in &pieces {
        if piece.is_empty() {
            continue;
        }
        let at = (from..=out.len().saturating_sub(piece.len()))
            .find(|&i| out[i..i + piece.len()] == piece[..])
            .unwrap_or_else(|| {
                panic!(
                    "README lines not in the demo's output (after line {from}):\n{}\n\noutput:\n{}",
                    piece.join("\n"),
                    out.join("\n")
                )
            });
        from = at + piece.len();
    }
}

/// Every command's `--help` is text for a user: no rustdoc link (`` [`Item`] ``) of the doc
/// comments it is made from. `ipoib demo --help` showed `legacy: draft-kashyap-ipoib-ipv6-01
/// ([`InterfaceConfig::legacy_ipv6`])`.
#[test]
fn help_texts_carry_no_rustdoc_links() {
    let commands: [&[&str]; 14] = [
        &[],
        &["decode"],
        &["sim"],
        &["demo"],
        &["ipcm"],
        &["ipcm", "check"],
        &["rping"],
        &["show"],
        &["ibsim-server"],
        &["lab"],
        &["lab", "exec"],
        &["lab", "down"],
        &["fabric"],
        &["attach"],
    ];
    for args in commands {
        let o = Command::new(env!("CARGO_BIN_EXE_ipoib"))
            .args(args)
            .arg("--help")
            .output()
            .expect("run ipoib");
        assert!(o.status.success(), "ipoib {args:?} --help: {}", o.status);
        let help = String::from_utf8(o.stdout).expect("UTF-8");
        for line in help.lines() {
            assert!(!line.contains("[`"), "ipoib {args:?} --help: {line}");
        }
    }
}

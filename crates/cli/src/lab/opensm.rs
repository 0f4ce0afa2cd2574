//! `ipoib lab --sm opensm`: the real OpenSM manages the lab's fabric. The lab's subnet has no SM
//! of ours (`SmMode::None`: ports up to Init), the lab's driver serves ibsim's client protocol
//! beside the hosts' TUN devices ([`ipoib_runtime::ibsim_server::IbsimEndpoint`], abstract Unix
//! sockets named `ipoib-lab-PID`), and `ibsim-run opensm` attached to the first host configures
//! the fabric by SMPs through our SMAs (docs/OPENSM-NOTES.md "OpenSM managing our fabric").
//!
//! OpenSM's files are in `RUN_DIR/lab/opensm/`, emptied when a lab starts and left after it
//! ends for a look: its log `opensm.log` (errors and info, flushed after every line), its
//! standard output and error `opensm.out`, its cache and dumps, and the partitions.conf it reads
//! (a copy of the lab's `--partitions` file, else the IPoIB default partition with every port a
//! full member). [`OpenSm`] ends it when dropped, so every exit path of the lab ends it; a lab
//! killed outright leaves its pid in lab.json for `ipoib lab down`
//! ([`super::state::end_opensm`]).

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The partitions.conf OpenSM gets without `--partitions`: the default partition with its IPoIB
/// broadcast group, every port a full member (what our SM does by default).
pub const DEFAULT_PARTITIONS: &str = "Default=0x7fff, ipoib : ALL=full ;\n";

/// Set in the environment of the lab's OpenSM (and kept by `ibsim-run`, which execs it), to the
/// lab's directory, so that one left by a lab killed before it recorded OpenSM's pid is still
/// found ([`marked`]).
pub const MARK: &str = "IPOIB_LAB_OPENSM";

/// The processes whose environment has [`MARK`] set to `lab_dir`: OpenSMs of labs in that
/// directory. Only one lab runs there at a time (its lock), so when a dead lab is cleaned up
/// every one of them is its leftover.
pub fn marked(lab_dir: &Path) -> Vec<i32> {
    let want = format!("{MARK}={}", lab_dir.display());
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|env| env.split(|&b| b == 0).any(|v| v == want.as_bytes()))
        })
        .collect()
}

/// The programs `--sm opensm` needs.
const NEEDED: [(&str, &str); 2] = [("ibsim-run", "ibsim-utils"), ("opensm", "opensm")];

/// Where `exe` is: on PATH, else in /usr/sbin or /sbin (where Debian puts opensm, often not on
/// a user's PATH).
fn find(exe: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/sbin"].map(PathBuf::from))
        .map(|d| d.join(exe))
        .find(|p| p.is_file())
}

/// The programs `--sm opensm` runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Programs {
    pub ibsim_run: PathBuf,
    pub opensm: PathBuf,
}

/// Where ibsim-run and opensm are, or an error naming what is missing.
pub fn check_installed() -> Result<Programs, String> {
    let found: Vec<Option<PathBuf>> = NEEDED.iter().map(|(exe, _)| find(exe)).collect();
    if let [Some(ibsim_run), Some(opensm)] = &found[..] {
        return Ok(Programs {
            ibsim_run: ibsim_run.clone(),
            opensm: opensm.clone(),
        });
    }
    let missing: Vec<String> = NEEDED
        .iter()
        .zip(&found)
        .filter(|(_, f)| f.is_none())
        .map(|((exe, pkg), _)| format!("{exe} (Debian package {pkg})"))
        .collect();
    Err(format!(
        "--sm opensm runs OpenSM under ibsim-run, and {} not installed (not on PATH nor in \
         /usr/sbin or /sbin)",
        match missing.len() {
            1 => format!("{} is", missing[0]),
            _ => format!("{} are", missing.join(" and ")),
        }
    ))
}

/// OpenSM, running under `ibsim-run`; ended (SIGTERM, SIGKILL after 5 s) when dropped.
pub struct OpenSm {
    child: Child,
    /// Its log file.
    pub log: PathBuf,
}

impl OpenSm {
    /// Starts `ibsim-run opensm` attached to host `host` of the ibsim server on `sockname`, marked
    /// as the OpenSM of the lab in `lab_dir` ([`MARK`]), its files in `dir` (made if needed), with
    /// `partitions` (the text of a partitions.conf) or [`DEFAULT_PARTITIONS`].
    pub fn start(
        programs: &Programs,
        lab_dir: &Path,
        dir: &Path,
        sockname: &str,
        host: &str,
        partitions: Option<&str>,
    ) -> Result<OpenSm, String> {
        // The text of the lab's `--partitions` file (read once by the lab, from its working
        // directory, before this directory is emptied: it may be in there, or a pipe) is copied
        // in, since OpenSM runs in `dir`.
        let text = partitions.unwrap_or(DEFAULT_PARTITIONS);
        // A previous lab's files (its log, OpenSM's LID cache guid2lid, libumad2sim's fake
        // sysfs `sys-PID`) are not this one's: each lab starts from an empty directory.
        let _ = std::fs::remove_dir_all(dir);
        std::fs::create_dir_all(dir).map_err(|e| format!("mkdir {}: {e}", dir.display()))?;
        let parts = dir.join("partitions.conf");
        std::fs::write(&parts, text).map_err(|e| format!("{}: {e}", parts.display()))?;
        let log = dir.join("opensm.log");
        let out_path = dir.join("opensm.out");
        let out =
            std::fs::File::create(&out_path).map_err(|e| format!("{}: {e}", out_path.display()))?;
        let err = out
            .try_clone()
            .map_err(|e| format!("{}: {e}", out_path.display()))?;
        // -D 0x03: errors and info (SUBNET UP, traps); -d 2: the log flushed after every line.
        let child = Command::new(&programs.ibsim_run)
            .arg(&programs.opensm)
            .args(["-F", "/dev/null", "-D", "0x03", "-d", "2", "-f"])
            .arg(&log)
            .arg("--dump_files_dir")
            .arg(dir)
            .arg("-P")
            .arg(&parts)
            .current_dir(dir)
            .env("IBSIM_SOCKNAME", sockname)
            .env("SIM_HOST", host)
            .env("OSM_CACHE_DIR", dir)
            .env("OSM_TMP_DIR", dir)
            .env(MARK, lab_dir)
            .env_remove("IBSIM_SERVER_NAME")
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .map_err(|e| format!("ibsim-run opensm: {e}"))?;
        Ok(OpenSm { child, log })
    }

    /// Its pid.
    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// How it ended, if it has.
    pub fn exited(&mut self) -> Option<String> {
        match self.child.try_wait() {
            Ok(Some(st)) => Some(st.to_string()),
            Ok(None) => None,
            Err(e) => Some(e.to_string()),
        }
    }

    /// Whether its log says SUBNET UP.
    pub fn subnet_up(&self) -> bool {
        std::fs::read_to_string(&self.log).is_ok_and(|l| l.contains("SUBNET UP"))
    }
}

impl Drop for OpenSm {
    fn drop(&mut self) {
        if self.exited().is_some() {
            return;
        }
        let _ = kill(Pid::from_raw(self.pid()), Signal::SIGTERM);
        let end = Instant::now() + Duration::from_secs(5);
        while Instant::now() < end {
            if self.exited().is_some() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // The lab's `--partitions` text (read from the lab's working directory, where a relative
    // path names the file) reaches OpenSM as a file in OpenSM's directory (OpenSM runs there).
    // `opensm` here is a script, run by `sh` in ibsim-run's place, that prints the file after
    // `-P` as it reads it where it runs, after the lab mark in its environment.
    #[test]
    fn the_labs_partitions_reach_opensm() {
        let tmp = tempfile::tempdir().unwrap();
        let script = tmp.path().join("opensm");
        std::fs::write(
            &script,
            "echo \"$IPOIB_LAB_OPENSM\"\n\
             while [ $# -gt 0 ]; do\n\
             if [ \"$1\" = -P ]; then cat \"$2\" || echo \"missing $2\"; fi\n\
             shift\n\
             done\n",
        )
        .unwrap();
        let programs = Programs {
            ibsim_run: PathBuf::from("/bin/sh"),
            opensm: script,
        };
        // Cargo runs the tests in the package's directory, which has Cargo.toml.
        let want = std::fs::read_to_string("Cargo.toml").unwrap();
        let dir = tmp.path().join("osm");
        let mut osm =
            OpenSm::start(&programs, tmp.path(), &dir, "none", "h1", Some(&want)).unwrap();
        let end = Instant::now() + Duration::from_secs(10);
        while osm.exited().is_none() && Instant::now() < end {
            std::thread::sleep(Duration::from_millis(20));
        }
        let out = std::fs::read_to_string(dir.join("opensm.out")).unwrap();
        assert_eq!(out, format!("{}\n{want}", tmp.path().display()));
    }

    #[test]
    fn missing_programs_are_named_with_their_packages() {
        // Whatever is installed here, the message names exactly what is missing.
        match check_installed() {
            Ok(p) => {
                assert!(p.opensm.ends_with("opensm") && p.opensm.is_file());
                assert!(p.ibsim_run.ends_with("ibsim-run") && p.ibsim_run.is_file());
            }
            Err(e) => {
                assert!(
                    e.starts_with("--sm opensm runs OpenSM under ibsim-run, and "),
                    "{e}"
                );
                let missing = |exe| find(exe).is_none();
                assert_eq!(
                    e.contains("opensm (Debian package opensm)"),
                    missing("opensm")
                );
                assert_eq!(
                    e.contains("ibsim-run (Debian package ibsim-utils)"),
                    missing("ibsim-run")
                );
            }
        }
    }
}

//! The lab's state on disk, `RUN_DIR/lab/lab.json` (RUN_DIR is `$IPOIB_RUN_DIR` or `/run/ipoib`,
//! [`ipoib_runtime::control::run_dir`]), and the removal of everything a lab
//! made. The file is written before the first namespace is made and removed after the last is
//! gone, so a lab killed at any point leaves a file that names what to clean; its process is
//! recognised by pid and start time (a reused pid is no lab). A lab holds `RUN_DIR/lab/lock`
//! ([`lock`]) from before it reads the file until it removed what it made.
//!
//! ```json
//! {"pid": 4242, "start_time": 123456, "mode": "datagram", "control": "/run/ipoib/lab/control.sock",
//!  "hosts": [{"name": "h1", "namespace": "ipoib-h1", "ipv4": "10.0.0.1", "ipv6": "fd00::1"}],
//!  "opensm": {"pid": 4250, "start_time": 123470}}
//! ```
//!
//! `opensm` is there while `ipoib lab --sm opensm` runs its OpenSM (null otherwise): a lab that
//! was killed leaves it running, and whoever cleans up after the lab ends it ([`end_opensm`]).

use ipoib_runtime::{control, netns};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use serde_json::{json, Value};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// The lab's directory, `RUN_DIR/lab`.
pub fn dir() -> PathBuf {
    control::run_dir().join("lab")
}

/// The state file, `RUN_DIR/lab/lab.json`.
pub fn state_path() -> PathBuf {
    dir().join("lab.json")
}

/// Holds `DIR/lock` (flock(2) through `File::try_lock`) for as long as the file returned lives;
/// an error if another process holds it. The kernel drops the lock when its holder ends, however
/// it ends (SIGKILL too), so a stale lab never keeps it. The file itself stays: removing a lock
/// file races with a process that just opened it.
pub fn lock_at(dir: &std::path::Path) -> Result<std::fs::File, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("mkdir {}: {e}", dir.display()))?;
    let p = dir.join("lock");
    let f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&p)
        .map_err(|e| format!("{}: {e}", p.display()))?;
    match f.try_lock() {
        Ok(()) => Ok(f),
        Err(std::fs::TryLockError::WouldBlock) => Err(format!(
            "another lab is starting or running ({} is held); `ipoib lab down` stops it",
            p.display()
        )),
        Err(std::fs::TryLockError::Error(e)) => Err(format!("lock {}: {e}", p.display())),
    }
}

/// The lab's lock, `RUN_DIR/lab/lock` ([`lock_at`]): a lab holds it from before it reads the
/// state file until it removed what it made, so two labs started at once cannot both write
/// lab.json, nor the one that fails remove the namespaces, state file and control socket of
/// the other.
pub fn lock() -> Result<std::fs::File, String> {
    lock_at(&dir())
}

/// The control socket of the running lab (`ipoib show`), `RUN_DIR/lab/control.sock`.
pub fn control_path() -> PathBuf {
    control::lab_socket()
}

/// One host of the lab.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostEntry {
    /// `h1`, `h2`, ...
    pub name: String,
    /// Its network namespace, `ipoib-h1`, ...
    pub namespace: String,
    /// Its addresses on `ib0`.
    pub ipv4: String,
    pub ipv6: String,
    /// The P_Key table entry of the partition its interface runs on (`0xffff`) and the port's
    /// membership in it (`full`, `limited`; `none` when the table lacks it), as the port's
    /// table held it when the file was written (`super::hosts::entry`).
    pub pkey: String,
    pub member: String,
}

/// What lab.json holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LabState {
    pub pid: i32,
    /// Field 22 of `/proc/PID/stat` (clock ticks after boot): with the pid, names the process.
    pub start_time: u64,
    pub mode: String,
    pub hosts: Vec<HostEntry>,
    /// The lab's OpenSM (`--sm opensm`): pid and start time.
    pub opensm: Option<(i32, u64)>,
}

impl LabState {
    /// The document.
    pub fn to_json(&self) -> Value {
        let hosts: Vec<Value> = self
            .hosts
            .iter()
            .map(|h| {
                json!({
                    "name": h.name,
                    "namespace": h.namespace,
                    "ipv4": h.ipv4,
                    "ipv6": h.ipv6,
                    "pkey": h.pkey,
                    "member": h.member,
                })
            })
            .collect();
        json!({
            "pid": self.pid,
            "start_time": self.start_time,
            "mode": self.mode,
            "control": control_path(),
            "hosts": hosts,
            "opensm": self.opensm.map(|(pid, start_time)| json!({"pid": pid, "start_time": start_time})),
        })
    }

    /// Parses the document; `None` when it is not one.
    pub fn from_json(v: &Value) -> Option<LabState> {
        let s = |v: &Value, k: &str| v.get(k)?.as_str().map(str::to_string);
        let hosts = v
            .get("hosts")?
            .as_array()?
            .iter()
            .map(|h| {
                Some(HostEntry {
                    name: s(h, "name")?,
                    namespace: s(h, "namespace")?,
                    ipv4: s(h, "ipv4").unwrap_or_default(),
                    ipv6: s(h, "ipv6").unwrap_or_default(),
                    pkey: s(h, "pkey").unwrap_or_default(),
                    member: s(h, "member").unwrap_or_default(),
                })
            })
            .collect::<Option<Vec<_>>>()?;
        Some(LabState {
            pid: i32::try_from(v.get("pid")?.as_i64()?).ok()?,
            start_time: v.get("start_time")?.as_u64()?,
            mode: s(v, "mode").unwrap_or_default(),
            hosts,
            opensm: v.get("opensm").and_then(|o| {
                let pid = i32::try_from(o.get("pid")?.as_i64()?).ok()?;
                Some((pid, o.get("start_time")?.as_u64()?))
            }),
        })
    }

    /// True while the lab's process runs (same pid, same start time).
    pub fn is_alive(&self) -> bool {
        start_time(self.pid) == Some(self.start_time)
    }

    /// The host named `name` (`h1`), or whose namespace is `name`.
    pub fn host(&self, name: &str) -> Option<&HostEntry> {
        self.hosts
            .iter()
            .find(|h| h.name == name || h.namespace == name)
    }
}

/// The start time of process `pid` (field 22 of `/proc/PID/stat`) while it runs: `None` when
/// there is no such process or it has ended and waits to be reaped (state `Z` or `X`, proc(5)).
pub fn start_time(pid: i32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may hold spaces: count after its end.
    let mut rest = stat[stat.rfind(')')? + 1..].split_whitespace();
    if matches!(rest.next(), Some("Z" | "X" | "x")) {
        return None;
    }
    rest.nth(18)?.parse().ok()
}

/// Reads lab.json: `Ok(None)` when there is none, an error when it cannot be read or parsed.
pub fn read() -> Result<Option<LabState>, String> {
    let path = state_path();
    let p = path.display();
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("{p}: {e}")),
    };
    // A file no lab wrote (edited, or a disk fault) blocked `lab`, `lab down` and `lab exec`
    // with a parser's words and no way out: the way out is said.
    let way_out = format!(
        "if no lab runs, remove it (`rm {p}`; `ip netns list` shows the namespaces a lab may \
         have left)"
    );
    let v: Value = serde_json::from_str(&text)
        .map_err(|e| format!("{p}: not a lab state file ({e}); {way_out}"))?;
    LabState::from_json(&v)
        .map(Some)
        .ok_or_else(|| format!("{p}: not a lab state file; {way_out}"))
}

/// Writes lab.json (through a temporary file and a rename: readers never see half of it).
pub fn write(s: &LabState) -> Result<(), String> {
    let d = dir();
    std::fs::create_dir_all(&d).map_err(|e| format!("mkdir {}: {e}", d.display()))?;
    let path = state_path();
    let tmp = path.with_extension("json.tmp");
    let text = format!("{:#}\n", s.to_json());
    std::fs::write(&tmp, text).map_err(|e| format!("{}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, &path).map_err(|e| format!("{}: {e}", path.display()))
}

/// Ends the lab's OpenSM if it still runs (same pid and start time), and any other process
/// marked as a lab's OpenSM ([`super::opensm::marked`]: one started by a lab killed before it
/// wrote OpenSM's pid down): SIGTERM, SIGKILL after 5 s.
pub fn end_opensm(lab: &LabState) {
    end_opensm_in(lab, &dir());
}

/// [`end_opensm`] for the lab in `lab_dir`.
fn end_opensm_in(lab: &LabState, lab_dir: &std::path::Path) {
    let mut pids: Vec<(i32, u64)> = lab
        .opensm
        .filter(|&(pid, start)| start_time(pid) == Some(start))
        .into_iter()
        .collect();
    for pid in super::opensm::marked(lab_dir) {
        if let Some(start) = start_time(pid).filter(|_| pids.iter().all(|&(p, _)| p != pid)) {
            pids.push((pid, start));
        }
    }
    for &(pid, _) in &pids {
        let _ = kill(Pid::from_raw(pid), Signal::SIGTERM);
    }
    for &(pid, start) in &pids {
        if !wait_gone(pid, start, Duration::from_secs(5)) {
            let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
            wait_gone(pid, start, Duration::from_secs(2));
        }
    }
}

/// Ends the processes still in namespace `ns` (SIGTERM, then SIGKILL after `grace`).
fn end_processes(ns: &str, grace: Duration) {
    let me = std::process::id() as i32;
    let signal_all = |sig: Signal| {
        let pids: Vec<i32> = netns::pids(ns).into_iter().filter(|&p| p != me).collect();
        for &p in &pids {
            let _ = kill(Pid::from_raw(p), sig);
        }
        pids.len()
    };
    if signal_all(Signal::SIGTERM) == 0 {
        return;
    }
    let end = Instant::now() + grace;
    while Instant::now() < end {
        if netns::pids(ns).iter().all(|&p| p == me) {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    signal_all(Signal::SIGKILL);
}

/// What [`clean`] did.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Cleaned {
    /// Namespaces that were there and are gone: not those deleted by hand before.
    pub removed: usize,
    /// Namespaces that were not there any more (deleted by hand, `ip netns del`).
    pub missing: usize,
    /// What could not be removed (each a sentence), empty when all went.
    pub problems: Vec<String>,
}

/// Removes what a lab made for `namespaces`: the processes left in them, the namespaces, their
/// `/etc/netns` directories; then lab.json and a stale control socket. Counts only the
/// namespaces it found and removed.
pub fn clean(namespaces: &[String]) -> Cleaned {
    let mut c = remove_each(namespaces, netns::exists, |ns| {
        end_processes(ns, Duration::from_secs(1));
        let mut problems = Vec::new();
        if let Err(e) = netns::delete(ns) {
            problems.push(e.to_string());
        }
        if let Err(e) = netns::remove_etc_dir(ns) {
            problems.push(e.to_string());
        }
        problems
    });
    for f in [state_path(), control_path()] {
        if f.exists() {
            if let Err(e) = std::fs::remove_file(&f) {
                c.problems.push(format!("rm {}: {e}", f.display()));
            }
        }
    }
    c
}

/// Runs `remove` (its problems) on each of `namespaces`; one counts as removed when `exists`
/// found it before and not after, as missing when it was not there before.
fn remove_each(
    namespaces: &[String],
    exists: impl Fn(&str) -> bool,
    mut remove: impl FnMut(&str) -> Vec<String>,
) -> Cleaned {
    let mut c = Cleaned::default();
    for ns in namespaces {
        let was = exists(ns);
        c.problems.extend(remove(ns));
        match (was, exists(ns)) {
            (false, _) => c.missing += 1,
            (true, false) => c.removed += 1,
            (true, true) => {}
        }
    }
    c
}

/// Waits up to `timeout` for process `pid` (started at `start`) to end; true when it did.
pub fn wait_gone(pid: i32, start: u64, timeout: Duration) -> bool {
    let end = Instant::now() + timeout;
    loop {
        if start_time(pid) != Some(start) {
            return true;
        }
        if Instant::now() >= end {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `ipoib lab down` after `ip netns del ipoib-h2` said it removed 3 namespaces: the one
    /// deleted by hand counted as removed. Present: h1, h3 (h3 cannot be deleted), h4.
    #[test]
    fn only_namespaces_found_and_gone_count_as_removed() {
        use std::cell::RefCell;
        use std::collections::BTreeSet;
        let names: Vec<String> = (1..=4).map(|i| format!("ipoib-h{i}")).collect();
        let present = RefCell::new(BTreeSet::from(["ipoib-h1", "ipoib-h3", "ipoib-h4"]));
        let mut asked = Vec::new();
        let c = remove_each(
            &names,
            |ns| present.borrow().contains(ns),
            |ns| {
                asked.push(ns.to_string());
                if ns == "ipoib-h3" {
                    return vec![format!("umount /run/netns/{ns}: EBUSY")];
                }
                present.borrow_mut().remove(ns);
                Vec::new()
            },
        );
        // Every name is still cleaned (its /etc/netns directory may be left).
        assert_eq!(asked, names);
        assert_eq!(
            c,
            Cleaned {
                removed: 2,
                missing: 1,
                problems: vec!["umount /run/netns/ipoib-h3: EBUSY".to_string()],
            }
        );
    }

    /// An OpenSM whose lab was killed before it wrote the pid down is found by its mark and
    /// ended; a process marked for another lab directory is left alone.
    #[test]
    fn an_unrecorded_opensm_is_found_by_its_mark() {
        let d = tempfile::tempdir().unwrap();
        let other = tempfile::tempdir().unwrap();
        // `sh` starts a long sleep in the background and exits: the sleep is nobody's child
        // here (as the OpenSM of a killed lab), so it is gone once killed.
        let orphan = |dir: &std::path::Path| -> i32 {
            let out = std::process::Command::new("sh")
                .args(["-c", "sleep 60 >/dev/null 2>&1 & echo $!"])
                .env(super::super::opensm::MARK, dir)
                .output()
                .unwrap();
            String::from_utf8(out.stdout)
                .unwrap()
                .trim()
                .parse()
                .unwrap()
        };
        let ours = orphan(d.path());
        let theirs = orphan(other.path());
        let alive = |pid: i32| std::path::Path::new(&format!("/proc/{pid}")).exists();
        assert!(alive(ours) && alive(theirs));
        let lab = LabState::from_json(&json!({"pid": 1, "start_time": 0, "mode": "datagram",
            "control": "c", "hosts": [], "opensm": null}))
        .unwrap();
        end_opensm_in(&lab, d.path());
        let end = Instant::now() + Duration::from_secs(5);
        while alive(ours) && Instant::now() < end {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(!alive(ours), "the marked orphan was not ended");
        assert!(alive(theirs), "another lab's OpenSM was ended");
        let _ = kill(Pid::from_raw(theirs), Signal::SIGKILL);
    }

    /// One holder at a time; the lock is free again once its holder drops it.
    #[test]
    fn one_lab_holds_the_lock() {
        let d = tempfile::tempdir().unwrap();
        let first = lock_at(d.path()).unwrap();
        let e = lock_at(d.path()).unwrap_err();
        assert!(e.contains("another lab is starting or running"), "{e}");
        drop(first);
        lock_at(d.path()).unwrap();
    }

    #[test]
    fn state_round_trips_through_json() {
        let s = LabState {
            pid: 42,
            start_time: 7,
            mode: "connected".into(),
            hosts: vec![HostEntry {
                name: "h1".into(),
                namespace: "ipoib-h1".into(),
                ipv4: "10.0.0.1".into(),
                ipv6: "fd00::1".into(),
                pkey: "0x8010".into(),
                member: "limited".into(),
            }],
            opensm: None,
        };
        let v = s.to_json();
        assert_eq!(v["control"], control_path().to_str().unwrap());
        assert_eq!(LabState::from_json(&v), Some(s.clone()));
        let with = LabState {
            opensm: Some((43, 9)),
            ..s.clone()
        };
        assert_eq!(
            with.to_json()["opensm"],
            json!({"pid": 43, "start_time": 9})
        );
        assert_eq!(LabState::from_json(&with.to_json()), Some(with));
        assert_eq!(s.host("ipoib-h1").map(|h| h.name.as_str()), Some("h1"));
        assert!(s.host("h2").is_none());
        assert_eq!(LabState::from_json(&json!({"pid": 1})), None);
    }

    #[test]
    fn own_start_time_is_readable_and_a_dead_pid_has_none() {
        let me = std::process::id() as i32;
        let t = start_time(me).expect("own /proc/self/stat");
        let alive = LabState {
            pid: me,
            start_time: t,
            mode: String::new(),
            hosts: Vec::new(),
            opensm: None,
        };
        assert!(alive.is_alive());
        let reused = LabState {
            start_time: t + 1,
            ..alive
        };
        assert!(!reused.is_alive());
    }
}

//! Named network namespaces, made the way iproute2 makes them (`ip netns add`, `ip netns exec`,
//! `ip netns del`; docs/DEPLOYED.md "Network namespaces"), so that `ip netns exec NAME` and
//! `ip -n NAME` work on ours too:
//!
//! - [`NetNs::create`]: `/run/netns` is made a shared mount point (bind-mounted on itself first
//!   if it is none), an empty file `/run/netns/NAME` is created, a dedicated thread unshares its
//!   network namespace and bind-mounts `/proc/thread-self/ns/net` on that file, which keeps the
//!   namespace alive with no process in it. The caller's setup closure runs on that thread,
//!   inside the new namespace: what it opens there (a TUN device, a netlink socket) stays in the
//!   namespace and works from any thread afterwards.
//! - [`NetNs::run_in`]: runs a closure on a thread that entered the namespace with setns(2).
//! - [`enter_for_exec`]: what `ip netns exec` does before exec(2): enter the namespace, unshare
//!   the mount namespace (mounts then do not propagate back), remount `/sys` for the namespace,
//!   bind-mount every file of `/etc/netns/NAME/` over its `/etc` namesake.
//! - [`delete`]: lazy unmount and removal of the file. The namespace ends when the last
//!   reference goes: processes in it, open sockets and TUN files of it keep it (and its devices)
//!   alive, which is why [`pids`] finds the processes still in one.
//!
//! Only the calling thread ever changes namespace (never the process's main thread, bar
//! [`enter_for_exec`], which is meant for a process about to exec). Linux only; needs
//! CAP_SYS_ADMIN.

use nix::mount::{mount, umount2, MntFlags, MsFlags};
use nix::sched::{setns, unshare, CloneFlags};
use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// Where iproute2 keeps its named network namespaces.
pub const NETNS_RUN_DIR: &str = "/run/netns";
/// Where iproute2 looks for a namespace's own `/etc` files (`/etc/netns/NAME/hosts` ...).
pub const NETNS_ETC_DIR: &str = "/etc/netns";

/// Why a namespace operation failed.
#[derive(Debug, thiserror::Error)]
pub enum NetnsError {
    /// A namespace of that name exists already.
    #[error("network namespace {0} exists already ({NETNS_RUN_DIR}/{0})")]
    Exists(String),
    /// No namespace of that name.
    #[error("no network namespace {0} ({NETNS_RUN_DIR}/{0})")]
    Missing(String),
    /// A name `ip netns` would not take.
    #[error("bad network namespace name {0:?}")]
    BadName(String),
    /// A system call failed.
    #[error("{what}: {source}")]
    Os {
        /// What was being done.
        what: String,
        /// The error.
        source: io::Error,
    },
    /// The namespace's thread panicked.
    #[error("the thread of network namespace {0} panicked")]
    Thread(String),
}

fn os(what: impl Into<String>) -> impl FnOnce(nix::Error) -> NetnsError {
    let what = what.into();
    move |e| NetnsError::Os {
        what,
        source: io::Error::from(e),
    }
}

fn io_err(what: impl Into<String>) -> impl FnOnce(io::Error) -> NetnsError {
    let what = what.into();
    move |source| NetnsError::Os { what, source }
}

/// A named network namespace (its file under [`NETNS_RUN_DIR`]). Dropping it deletes nothing:
/// [`NetNs::delete`] does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NetNs {
    name: String,
    path: PathBuf,
}

/// The file of namespace `name`.
pub fn path_of(name: &str) -> PathBuf {
    Path::new(NETNS_RUN_DIR).join(name)
}

/// True when namespace `name` has its file.
pub fn exists(name: &str) -> bool {
    path_of(name).exists()
}

fn check_name(name: &str) -> Result<(), NetnsError> {
    // iproute2 refuses names that are not one path component (`ip netns add a/b`).
    if name.is_empty() || name.contains('/') || name == "." || name == ".." || name.len() > 255 {
        return Err(NetnsError::BadName(name.to_string()));
    }
    Ok(())
}

/// Makes [`NETNS_RUN_DIR`] a shared mount point, as iproute2's `netns_add` does, so that a
/// namespace unmounted here is unmounted in the mount namespaces of `ip netns exec` children
/// too (they are slaves of it).
fn prepare_run_dir() -> Result<(), NetnsError> {
    fs::create_dir_all(NETNS_RUN_DIR).map_err(io_err(format!("mkdir {NETNS_RUN_DIR}")))?;
    let shared = MsFlags::MS_SHARED | MsFlags::MS_REC;
    match mount(
        None::<&str>,
        NETNS_RUN_DIR,
        Some("none"),
        shared,
        None::<&str>,
    ) {
        Ok(()) => return Ok(()),
        Err(nix::Error::EINVAL) => {} // not a mount point yet
        Err(e) => return Err(os(format!("mount --make-rshared {NETNS_RUN_DIR}"))(e)),
    }
    let bind = MsFlags::MS_BIND | MsFlags::MS_REC;
    mount(
        Some(NETNS_RUN_DIR),
        NETNS_RUN_DIR,
        Some("none"),
        bind,
        None::<&str>,
    )
    .map_err(os(format!("mount --rbind {NETNS_RUN_DIR} {NETNS_RUN_DIR}")))?;
    mount(
        None::<&str>,
        NETNS_RUN_DIR,
        Some("none"),
        shared,
        None::<&str>,
    )
    .map_err(os(format!("mount --make-rshared {NETNS_RUN_DIR}")))
}

impl NetNs {
    /// Creates namespace `name` (module docs) and runs `setup` inside it on the creating thread;
    /// returns the namespace and what `setup` returned (a failed setup is the caller's to judge:
    /// the namespace exists either way). When the namespace itself cannot be made, nothing is
    /// left behind.
    pub fn create<T: Send + 'static>(
        name: &str,
        setup: impl FnOnce() -> T + Send + 'static,
    ) -> Result<(NetNs, T), NetnsError> {
        check_name(name)?;
        prepare_run_dir()?;
        let path = path_of(name);
        match OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(0o000)
            .open(&path)
        {
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                return Err(NetnsError::Exists(name.to_string()))
            }
            Err(e) => return Err(io_err(format!("create {}", path.display()))(e)),
        }
        let ns = NetNs {
            name: name.to_string(),
            path,
        };
        let target = ns.path.clone();
        let thread = match std::thread::Builder::new()
            .name(format!("netns {name}"))
            .spawn(move || -> Result<T, NetnsError> {
                unshare(CloneFlags::CLONE_NEWNET).map_err(os("unshare(CLONE_NEWNET)"))?;
                mount(
                    Some("/proc/thread-self/ns/net"),
                    &target,
                    Some("none"),
                    MsFlags::MS_BIND,
                    None::<&str>,
                )
                .map_err(os(format!(
                    "mount --bind /proc/thread-self/ns/net {}",
                    target.display()
                )))?;
                Ok(setup())
            }) {
            Ok(t) => t,
            Err(e) => {
                let _ = delete(&ns.name);
                return Err(io_err("spawn the namespace thread")(e));
            }
        };
        let r = thread
            .join()
            .map_err(|_| NetnsError::Thread(name.to_string()))
            .and_then(|r| r);
        match r {
            Ok(setup) => Ok((ns, setup)),
            Err(e) => {
                let _ = delete(&ns.name);
                Err(e)
            }
        }
    }

    /// The existing namespace `name`.
    pub fn open(name: &str) -> Result<NetNs, NetnsError> {
        check_name(name)?;
        let path = path_of(name);
        if !path.exists() {
            return Err(NetnsError::Missing(name.to_string()));
        }
        Ok(NetNs {
            name: name.to_string(),
            path,
        })
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its file under [`NETNS_RUN_DIR`].
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Runs `f` on a new thread that entered the namespace, and returns its result.
    pub fn run_in<T: Send + 'static>(
        &self,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, NetnsError> {
        let file =
            File::open(&self.path).map_err(io_err(format!("open {}", self.path.display())))?;
        let name = self.name.clone();
        std::thread::Builder::new()
            .name(format!("netns {name}"))
            .spawn(move || -> Result<T, NetnsError> {
                setns(&file, CloneFlags::CLONE_NEWNET)
                    .map_err(os(format!("setns(network namespace {name})")))?;
                Ok(f())
            })
            .map_err(io_err("spawn a namespace thread"))?
            .join()
            .map_err(|_| NetnsError::Thread(self.name.clone()))?
    }

    /// Deletes it ([`delete`]).
    pub fn delete(self) -> Result<(), NetnsError> {
        delete(&self.name)
    }
}

/// `ip netns del NAME`: lazily unmounts the namespace's file and removes it. Nothing to do for
/// a name without a file. The namespace itself lives on while something still holds it
/// (module docs).
pub fn delete(name: &str) -> Result<(), NetnsError> {
    check_name(name)?;
    let path = path_of(name);
    if !path.exists() {
        return Ok(());
    }
    match umount2(&path, MntFlags::MNT_DETACH) {
        // EINVAL: not mounted (a creation that stopped half-way).
        Ok(()) | Err(nix::Error::EINVAL) => {}
        Err(e) => return Err(os(format!("umount {}", path.display()))(e)),
    }
    match fs::remove_file(&path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(io_err(format!("rm {}", path.display()))(e)),
    }
}

/// The processes (not threads) whose network namespace is namespace `name`, as
/// `ip netns pids NAME` finds them: `/proc/PID/ns/net` is the same inode as the namespace's
/// file. Empty for a namespace without its file.
pub fn pids(name: &str) -> Vec<i32> {
    let Ok(ns) = fs::metadata(path_of(name)) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let Ok(dir) = fs::read_dir("/proc") else {
        return out;
    };
    for e in dir.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        if let Ok(m) = fs::metadata(e.path().join("ns/net")) {
            if m.dev() == ns.dev() && m.ino() == ns.ino() {
                out.push(pid);
            }
        }
    }
    out.sort_unstable();
    out
}

/// What `ip netns exec NAME` does before it execs the command, on the calling thread (meant for
/// a single-threaded process about to exec(2)): setns(2) into the network namespace,
/// unshare(2) the mount namespace and make every mount a slave (so nothing propagates back),
/// mount a `/sys` of the namespace, and bind-mount each file of `/etc/netns/NAME/` over
/// `/etc/<file>` (e.g. a `hosts` file).
pub fn enter_for_exec(name: &str) -> Result<(), NetnsError> {
    let ns = NetNs::open(name)?;
    let file = File::open(&ns.path).map_err(io_err(format!("open {}", ns.path.display())))?;
    setns(&file, CloneFlags::CLONE_NEWNET)
        .map_err(os(format!("setns(network namespace {name})")))?;
    unshare(CloneFlags::CLONE_NEWNS).map_err(os("unshare(CLONE_NEWNS)"))?;
    mount(
        None::<&str>,
        "/",
        Some("none"),
        MsFlags::MS_SLAVE | MsFlags::MS_REC,
        None::<&str>,
    )
    .map_err(os("mount --make-rslave /"))?;
    // iproute2 goes on without a fresh /sys when it cannot make one; so do we.
    if umount2("/sys", MntFlags::MNT_DETACH).is_ok() {
        let _ = mount(
            Some(name),
            "/sys",
            Some("sysfs"),
            MsFlags::empty(),
            None::<&str>,
        );
    }
    let etc = Path::new(NETNS_ETC_DIR).join(name);
    if let Ok(dir) = fs::read_dir(&etc) {
        for e in dir.flatten() {
            let target = Path::new("/etc").join(e.file_name());
            mount(
                Some(&e.path()),
                &target,
                Some("none"),
                MsFlags::MS_BIND,
                None::<&str>,
            )
            .map_err(os(format!(
                "mount --bind {} {}",
                e.path().display(),
                target.display()
            )))?;
        }
    }
    Ok(())
}

/// Writes `/etc/netns/NAME/FILE` (e.g. `hosts`), which [`enter_for_exec`] and `ip netns exec`
/// bind-mount over `/etc/FILE`.
pub fn write_etc_file(name: &str, file: &str, contents: &str) -> Result<(), NetnsError> {
    check_name(name)?;
    let dir = Path::new(NETNS_ETC_DIR).join(name);
    fs::create_dir_all(&dir).map_err(io_err(format!("mkdir {}", dir.display())))?;
    let p = dir.join(file);
    fs::write(&p, contents).map_err(io_err(format!("write {}", p.display())))
}

/// Removes `/etc/netns/NAME/` and what it holds (nothing to do when it does not exist).
pub fn remove_etc_dir(name: &str) -> Result<(), NetnsError> {
    check_name(name)?;
    let dir = Path::new(NETNS_ETC_DIR).join(name);
    match fs::remove_dir_all(&dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(io_err(format!("rm -r {}", dir.display()))(e)),
    }
}

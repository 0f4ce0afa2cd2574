//! The ibnetdiscover / ibsim net-file format, read the way ibsim's parser reads it
//! (linux-rdma/ibsim, ibsim/sim_net.c; examples in Debian's ibsim-utils, net-examples/).
//!
//! A file is a sequence of lines. Node records:
//! ```text
//! Switch  8 "Switch1"             # "optional description" lid 1 lmc 0
//! [1]     "Hca1"[1]
//! [3]     "Switch2"[3]    w=4 s=2
//!
//! Hca     2 "Hca1"                # also "Ca"
//! [1](port guid)  "Switch1"[1]    # ibnetdiscover writes the port GUID after the local port
//! ```
//! A header (`Switch`, `Hca` or `Ca`, the port count, the quoted unique node id, an optional
//! `# description`) is followed by one line per cabled port: `[local] "remote id"[remote port]`,
//! the remote port defaulting to 1, optional `w=` (enabled width mask: 1 = 1x, 2 = 4x, 4 = 8x,
//! 8 = 12x) and `s=` (enabled speed mask: 1 = SDR, 2 = DDR, 4 = QDR). A line that does not start
//! with `[` (a blank line, typically) ends the record; `#` lines inside it are comments. Every
//! cable must be listed from both ends (ibsim `connect_ports`).
//!
//! Other lines, as in ibsim: `switchguid=`/`caguid=`/`hcaguids=` set the GUID of the next node
//! of that kind (`+` instead of `=`: relative to the last absolute base), `width=`/`speed=` set
//! the default enabled masks, `module="prefix"` prefixes node ids with `prefix#`, `include
//! "file"` reads another file (only through [`Topology::load_net`]; relative to the including
//! file's directory, where ibsim uses its working directory), and `do ...`, `devid=`, `pdebug=`
//! and every other line (`vendid=`, `sysimgguid=`, comments) are ignored. GUIDs without such
//! lines follow ibsim: CAs from 0x100000 taking `ports + 1` each, switches from 0x200000.
//! The active link is the highest width and speed both ends enable (ibsim 4x SDR by default),
//! giving the link's rate code. Not supported, with an error: routers (`Rt`), port aliases
//! (`@`), port 0 lines.
//!
//! Invariants: bad input gives a [`NetFileError`] naming the file and line, never a panic.

use super::gen::{CA_GUID_BASE, SWITCH_GUID_BASE};
use super::{End, NodeKind, Topology};
use ipoib_wire::{Guid, Rate};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// ibsim's include depth limit (MAX_INCLUDE).
const MAX_INCLUDE: usize = 9;

/// The most bytes [`Topology::load_net`] reads, the file and its includes together: as the cli
/// bounds the files named on its command line (`crates/cli/src/text_file.rs`), so that an
/// `include` of `/dev/zero` or of a pipe that keeps writing is an error, not the memory of the
/// process. The largest generated fat tree's net file is some 13 MB.
pub const MAX_NET_BYTES: u64 = 64 << 20;

/// A net file could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}{message}", location(.file, *.line))]
pub struct NetFileError {
    /// The file, when read from disk.
    pub file: Option<PathBuf>,
    /// 1-based line number (0 when the error concerns the whole file).
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

/// What [`NetFileError`]'s message starts with: the file and line, each when known (line 0: the
/// file as a whole, which could not be read or lacks something).
fn location(file: &Option<PathBuf>, line: usize) -> String {
    match (file, line) {
        (Some(p), 0) => format!("{}: ", p.display()),
        (Some(p), n) => format!("{}: line {n}: ", p.display()),
        (None, 0) => String::new(),
        (None, n) => format!("line {n}: "),
    }
}

/// One port line, resolved after every node is known.
#[derive(Debug, Clone)]
struct PortLine {
    remote: String,
    remote_port: u8,
    width: u8,
    speed: u8,
    file: Option<PathBuf>,
    line: usize,
}

#[derive(Debug)]
struct Parser {
    topo: Topology,
    /// Per node: its port lines by local port.
    ports: Vec<BTreeMap<u8, PortLine>>,
    guid_base: [u64; 2],
    guid_next: [u64; 2],
    width: u8,
    speed: u8,
    prefix: String,
    depth: usize,
    /// Bytes read from files so far (at most [`MAX_NET_BYTES`]).
    read: u64,
}

fn kind_index(k: NodeKind) -> usize {
    match k {
        NodeKind::Ca => 0,
        NodeKind::Switch => 1,
    }
}

/// `strtoull(s, 0, 0)`: optional `0x` (hex) or leading `0` (octal), then digits up to the first
/// character that is not one. `None` when no digit was read or the value overflows.
fn c_number(s: &str) -> Option<u64> {
    let s = s.trim_start();
    let (digits, radix) = if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        (h, 16)
    } else if s.starts_with('0') && s.len() > 1 {
        (&s[1..], 8)
    } else {
        (s, 10)
    };
    let end = digits
        .find(|c: char| !c.is_digit(radix))
        .unwrap_or(digits.len());
    if end == 0 {
        return (radix == 8).then_some(0);
    }
    u64::from_str_radix(&digits[..end], radix).ok()
}

/// The text between the first pair of double quotes, and what follows it.
fn quoted(s: &str) -> Option<(&str, &str)> {
    let start = s.find('"')? + 1;
    let len = s[start..].find('"')?;
    Some((&s[start..start + len], &s[start + len + 1..]))
}

/// Active rate of a link from the two ends' enabled width and speed masks (ibsim
/// `get_active_linkwidth`/`get_active_linkspeed`: the highest common bit).
fn link_rate(w: u8, s: u8) -> Option<Rate> {
    let lanes: u32 = [(8, 12), (4, 8), (2, 4), (1, 1)]
        .into_iter()
        .find(|(bit, _)| w & bit != 0)?
        .1;
    let tenths: u32 = [(4, 100), (2, 50), (1, 25)]
        .into_iter()
        .find(|(bit, _)| s & bit != 0)?
        .1;
    Rate::from_mbps(lanes * tenths * 100)
}

impl Parser {
    fn new() -> Parser {
        Parser {
            topo: Topology::new(),
            ports: Vec::new(),
            guid_base: [CA_GUID_BASE, SWITCH_GUID_BASE],
            guid_next: [CA_GUID_BASE, SWITCH_GUID_BASE],
            width: 2,
            speed: 1,
            prefix: String::new(),
            depth: 0,
            read: 0,
        }
    }

    fn node_id(&self, base: &str) -> String {
        if self.prefix.is_empty() || base.contains('#') {
            base.to_string()
        } else {
            format!("{}#{base}", self.prefix)
        }
    }

    /// Parses `text`; `file` names it in errors and anchors includes.
    fn text(&mut self, text: &str, file: Option<&Path>) -> Result<(), NetFileError> {
        let err = |line: usize, message: String| NetFileError {
            file: file.map(Path::to_path_buf),
            line,
            message,
        };
        let lines: Vec<&str> = text.lines().map(|l| l.trim_end_matches('\r')).collect();
        let mut i = 0;
        while i < lines.len() {
            let line = lines[i];
            let lineno = i + 1;
            i += 1;
            let kind = if line.starts_with("Switch") {
                Some((NodeKind::Switch, 6))
            } else if line.starts_with("Hca") {
                Some((NodeKind::Ca, 3))
            } else if line.starts_with("Ca") {
                Some((NodeKind::Ca, 2))
            } else {
                None
            };
            if let Some((kind, skip)) = kind {
                let node = self
                    .header(kind, &line[skip..])
                    .map_err(|m| err(lineno, m))?;
                // Port lines follow until a line that does not start with '[' ('#' lines are
                // comments inside the record).
                while i < lines.len() {
                    let l = lines[i];
                    if l.starts_with('#') {
                        i += 1;
                        continue;
                    }
                    if l.starts_with('@') {
                        return Err(err(i + 1, "port aliases ('@') are not supported".into()));
                    }
                    if !l.starts_with('[') {
                        break;
                    }
                    let pl = self.port_line(l, file, i + 1).map_err(|m| err(i + 1, m));
                    let (port, pl) = pl?;
                    if port == 0 || port > self.topo.nodes()[node].ports {
                        return Err(err(
                            i + 1,
                            format!(
                                "bad port number {port} for a node with {} ports",
                                self.topo.nodes()[node].ports
                            ),
                        ));
                    }
                    if self.ports[node].insert(port, pl).is_some() {
                        return Err(err(i + 1, format!("port {port} is listed twice")));
                    }
                    i += 1;
                }
                continue;
            }
            if line.starts_with("Rt") {
                return Err(err(lineno, "router nodes (Rt) are not supported".into()));
            }
            let assign = |line: &str| -> Result<(bool, u64), NetFileError> {
                let at = line
                    .find(['=', '+'])
                    .ok_or_else(|| err(lineno, "bad assignment: missing '=' or '+'".into()))?;
                let v = c_number(&line[at + 1..])
                    .ok_or_else(|| err(lineno, "bad number after '='".into()))?;
                Ok((line.as_bytes()[at] == b'+', v))
            };
            let guid_kind = if line.starts_with("switchguid") {
                Some(NodeKind::Switch)
            } else if line.starts_with("hcaguids") || line.starts_with("caguid") {
                Some(NodeKind::Ca)
            } else {
                None
            };
            if let Some(k) = guid_kind {
                let (relative, v) = assign(line)?;
                let k = kind_index(k);
                if relative {
                    self.guid_next[k] = self.guid_base[k].wrapping_add(v);
                } else {
                    self.guid_base[k] = v;
                    self.guid_next[k] = v;
                }
            } else if line.starts_with("rtguid")
                || line.starts_with("devid")
                || line.starts_with("pdebug")
            {
                assign(line)?;
            } else if line.starts_with("width") {
                let (_, v) = assign(line)?;
                self.width = u8::try_from(v)
                    .ok()
                    .filter(|w| (1..=15).contains(w))
                    .ok_or_else(|| err(lineno, format!("bad link width {v}: 1..=15")))?;
            } else if line.starts_with("speed") {
                let (_, v) = assign(line)?;
                self.speed = u8::try_from(v)
                    .ok()
                    .filter(|s| (1..=7).contains(s))
                    .ok_or_else(|| err(lineno, format!("bad link speed {v}: 1..=7")))?;
            } else if line.starts_with("module") {
                let at = line
                    .find('=')
                    .ok_or_else(|| err(lineno, "bad assignment: missing '='".into()))?;
                let (p, _) = quoted(&line[at + 1..])
                    .ok_or_else(|| err(lineno, "module needs a quoted prefix".into()))?;
                self.prefix = p.to_string();
            } else if line.starts_with("include") {
                let (name, _) =
                    quoted(line).ok_or_else(|| err(lineno, "bad include file name".into()))?;
                let Some(parent) = file else {
                    return Err(err(
                        lineno,
                        "include needs a file (use Topology::load_net)".into(),
                    ));
                };
                if self.depth + 1 >= MAX_INCLUDE {
                    return Err(err(lineno, "includes nested too deeply".into()));
                }
                let path = parent.parent().unwrap_or(Path::new(".")).join(name);
                self.depth += 1;
                let r = self.file(&path);
                self.depth -= 1;
                r?;
            }
            // "do <command>" and every other line are ignored, as ibsim ignores unknown lines
            // (ibsim runs "do" lines as console commands; there is no console here).
        }
        Ok(())
    }

    fn file(&mut self, path: &Path) -> Result<(), NetFileError> {
        use std::io::Read as _;
        let fail = |message: String| NetFileError {
            file: Some(path.to_path_buf()),
            line: 0,
            message,
        };
        let left = MAX_NET_BYTES - self.read;
        // Bytes first, the bound checked before the text: the bound may cut a character in two,
        // which is no reason to call a file too large "no UTF-8".
        let mut bytes = Vec::new();
        std::fs::File::open(path)
            .and_then(|f| f.take(left + 1).read_to_end(&mut bytes))
            .map_err(|e| fail(format!("cannot read: {e}")))?;
        if bytes.len() as u64 > left {
            return Err(fail(format!(
                "more than {} MiB with the files that include it, far more than any net file \
                 (is it the right one?)",
                MAX_NET_BYTES >> 20
            )));
        }
        // `read_to_string`'s words, said before.
        let text = String::from_utf8(bytes)
            .map_err(|_| fail("cannot read: stream did not contain valid UTF-8".into()))?;
        self.read += text.len() as u64;
        self.text(&text, Some(path))
    }

    /// A node header after its type word; returns the node index.
    fn header(&mut self, kind: NodeKind, rest: &str) -> Result<usize, String> {
        let before_quote = rest.split('"').next().unwrap_or("");
        let digits: String = before_quote
            .chars()
            .skip_while(|c| !c.is_ascii_digit())
            .take_while(|c| c.is_ascii_digit())
            .collect();
        if digits.is_empty() {
            return Err("missing port count".to_string());
        }
        // Any number of digits: one too big for an integer is out of range like 255.
        let ports = digits.parse::<u32>().ok().filter(|p| (1..=254).contains(p));
        let Some(ports) = ports else {
            return Err(format!("port count {digits} out of range: 1..=254"));
        };
        let (id, after) = quoted(rest).ok_or("missing quoted node id")?;
        if id.is_empty() || id.contains('@') {
            return Err(format!("bad node id \"{id}\""));
        }
        let name = self.node_id(id);
        if self.topo.find(&name).is_some() {
            return Err(format!("node id {name} already exists"));
        }
        let k = kind_index(kind);
        let guid = self.guid_next[k];
        if self
            .topo
            .nodes()
            .iter()
            .any(|n| n.kind == kind && n.guid.0 == guid)
        {
            return Err(format!("node GUID {guid:#x} already exists"));
        }
        self.guid_next[k] = match kind {
            NodeKind::Switch => guid.wrapping_add(1),
            NodeKind::Ca => guid.wrapping_add(u64::from(ports) + 1),
        };
        let node = self.topo.add_node(kind, name, Guid(guid), ports as u8);
        // ibsim parse_node_desc: `# "desc"`, or the text up to " lid " and the like.
        if let Some(h) = after.find('#') {
            let d = after[h + 1..].trim_start();
            let desc = match quoted(d) {
                Some((q, _)) if d.starts_with('"') => q,
                _ => [" enhanced port ", " base port ", " lid ", " lmc "]
                    .iter()
                    .filter_map(|m| d.find(m))
                    .min()
                    .map_or(d, |e| &d[..e])
                    .trim_end(),
            };
            if !desc.is_empty() {
                self.topo.set_desc(node, desc);
            }
        }
        self.ports.push(BTreeMap::new());
        Ok(node)
    }

    /// One `[local] "remote"[port] opts` line: the local port and what it names.
    fn port_line(
        &self,
        l: &str,
        file: Option<&Path>,
        line: usize,
    ) -> Result<(u8, PortLine), String> {
        let close = l.find(']').ok_or("port line without ']'")?;
        let local: u8 = l[1..close]
            .trim()
            .parse()
            .map_err(|_| format!("bad port number \"{}\"", &l[1..close]))?;
        let (remote, mut rest) = quoted(&l[close..]).ok_or("missing quoted remote node id")?;
        if remote.contains('@') {
            return Err("port aliases ('@') are not supported".into());
        }
        let mut remote_port = 1; // ibsim's default
        if let Some(r) = rest.strip_prefix('[') {
            let e = r.find(']').ok_or("remote port without ']'")?;
            remote_port = r[..e]
                .trim()
                .parse::<u8>()
                .ok()
                .filter(|&p| p > 0)
                .ok_or_else(|| format!("invalid remote port \"{}\"", &r[..e]))?;
            rest = &r[e + 1..];
        }
        let rest = rest.split('#').next().unwrap_or("");
        let (mut width, mut speed) = (self.width, self.speed);
        for tok in rest.split_whitespace().filter(|t| t.contains('=')) {
            let (k, v) = tok.split_once('=').unwrap_or((tok, ""));
            let v = c_number(v).and_then(|v| u8::try_from(v).ok());
            match (k, v) {
                ("w", Some(w @ 1..=15)) => width = w,
                ("s", Some(s @ 1..=7)) => speed = s,
                _ => return Err(format!("bad port option \"{tok}\"")),
            }
        }
        Ok((
            local,
            PortLine {
                remote: self.node_id(remote),
                remote_port,
                width,
                speed,
                file: file.map(Path::to_path_buf),
                line,
            },
        ))
    }

    /// Cables every port line to its remote end (ibsim `connect_ports`).
    fn connect(mut self) -> Result<Topology, NetFileError> {
        for node in 0..self.ports.len() {
            let lines: Vec<(u8, PortLine)> = self.ports[node]
                .iter()
                .map(|(p, l)| (*p, l.clone()))
                .collect();
            for (port, pl) in lines {
                let err = |message: String| NetFileError {
                    file: pl.file.clone(),
                    line: pl.line,
                    message,
                };
                if self.topo.peer(node, port).is_some() {
                    continue; // cabled from the other end already
                }
                let me = self.topo.nodes()[node].name.clone();
                let remote = self.topo.find(&pl.remote).ok_or_else(|| {
                    err(format!(
                        "can't find remote node \"{}\" connected to \"{me}\" port {port}",
                        pl.remote
                    ))
                })?;
                let rn = &self.topo.nodes()[remote];
                if pl.remote_port > rn.ports {
                    return Err(err(format!(
                        "bad remote port {} in node \"{}\" ({} ports)",
                        pl.remote_port, rn.name, rn.ports
                    )));
                }
                let back = self.ports[remote].get(&pl.remote_port);
                let Some(back) = back.filter(|b| b.remote == me && b.remote_port == port) else {
                    return Err(err(format!(
                        "remote port {} in node \"{}\" is not connected to node \"{me}\" port {port}",
                        pl.remote_port, rn.name
                    )));
                };
                let rate =
                    link_rate(pl.width & back.width, pl.speed & back.speed).ok_or_else(|| {
                        err(format!(
                            "no common link width/speed with \"{}\" port {}",
                            rn.name, pl.remote_port
                        ))
                    })?;
                self.topo
                    .connect(
                        End { node, port },
                        End {
                            node: remote,
                            port: pl.remote_port,
                        },
                        None,
                        Some(rate),
                    )
                    .map_err(|e| err(e.to_string()))?;
            }
        }
        Ok(self.topo)
    }
}

impl Topology {
    /// Reads a topology in the net-file format from a string (no `include`); see the module docs.
    pub fn parse_net(text: &str) -> Result<Topology, NetFileError> {
        let mut p = Parser::new();
        p.text(text, None)?;
        p.connect()
    }

    /// Reads a topology in the net-file format from a file, following `include` lines.
    pub fn load_net(path: impl AsRef<Path>) -> Result<Topology, NetFileError> {
        let mut p = Parser::new();
        p.file(path.as_ref())?;
        p.connect()
    }
}

//! The server's console: ibsim's console commands (linux-rdma/ibsim, `ibsim/sim_cmd.c`
//! `do_cmd`), read a line at a time, that change the fabric while clients run, above all pulling
//! a cable and plugging it back in while an SM (OpenSM under `ibsim-run`) manages the subnet.
//!
//! As in ibsim a command is any prefix of its name, in any case (`u` is Unlink, `rel` ReLink),
//! tried in ibsim's order, and names a node as `"nodeid"[port]` (the node's topology name, else
//! its description; the quotes may be left out here). The commands:
//!
//! - `Unlink "node"[port]`, `Unlink "node"` (every linked port): the cable is pulled
//!   ([`Subnet::set_cable`]): both ends go Down with PortPhysicalState Polling, and a switch end
//!   sends trap 128 to its master SM (IBA 1 §14.2.5.1), as ibsim's `unlink_port` does.
//! - `ReLink "node"[port]`, `ReLink "node"`: a cable pulled by Unlink is plugged back in; both
//!   ends train to LinkUp and wait in Init for the SM (IBA 1 §7.2), trap 128 again.
//! - `Link "a"[p] "b"[q]`: the same for the cable between those two ports, if the topology has
//!   one that is pulled (our cables are the topology's: a new one cannot be laid).
//! - `Dump ["node"]`: every node's cabled ports, their peers and `PortState/PhysState`.
//! - `Help` / `?`, `Quit` (the server stops, as on SIGINT), `#...` (a comment) and empty lines.
//!
//! Every command is answered with at least one line; one that fails with a line starting with
//! `error: ` that says why, and it changes nothing. ibsim's other commands (Route, Clear, Guid,
//! Error, Baselid, Start, Verbose, Wait, Attached, X, PerformanceSet) are answered with an error
//! naming them as not available here. Nothing typed makes the server panic.

use ipoib_fabric::hw::topology::{End, NodeKind, TopoLink};
use ipoib_fabric::node::host::Host;
use ipoib_fabric::node::subnet::Subnet;
use ipoib_fabric::PortState;
use std::collections::BTreeSet;

/// ibsim's commands in the order `do_cmd` tries them (so that a prefix picks the same one).
const COMMANDS: [&str; 17] = [
    "Dump",
    "Route",
    "Link",
    "Unlink",
    "Clear",
    "Guid",
    "Error",
    "Baselid",
    "Start",
    "Verbose",
    "Wait",
    "Attached",
    "X",
    "Help",
    "Quit",
    "ReLink",
    "PerformanceSet",
];

/// What a console line did.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Reply {
    /// The answer, one line each (none for a comment or an empty line).
    pub lines: Vec<String>,
    /// `Quit`: the server is to stop.
    pub quit: bool,
}

impl Reply {
    fn line(l: impl Into<String>) -> Reply {
        Reply {
            lines: vec![l.into()],
            quit: false,
        }
    }
    fn error(l: impl std::fmt::Display) -> Reply {
        Reply::line(format!("error: {l}"))
    }
}

/// The console's state: which cables it pulled (ibsim's `previous_remotenode`), for ReLink.
#[derive(Debug, Clone, Default)]
pub struct Console {
    unlinked: BTreeSet<usize>,
}

/// A port named on the command line: a topology node and maybe a port.
struct Named {
    node: usize,
    port: Option<u8>,
}

impl Console {
    /// A console that pulled nothing yet.
    pub fn new() -> Console {
        Console::default()
    }

    /// Runs one line (see the module docs) on `net`.
    pub fn execute(&mut self, net: &mut Subnet, line: &str) -> Reply {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            return Reply::default();
        }
        let (word, rest) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
        if word == "?" {
            return help();
        }
        let lower = word.to_ascii_lowercase();
        let Some(cmd) = COMMANDS
            .iter()
            .find(|c| c.to_ascii_lowercase().starts_with(&lower))
        else {
            return Reply::error(format!("command '{word}' unknown (try Help)"));
        };
        match *cmd {
            "Dump" => dump(net, rest),
            "Link" => self.link(net, rest),
            "Unlink" => self.unlink(net, rest),
            "ReLink" => self.relink(net, rest),
            "Help" => help(),
            "Quit" => Reply {
                lines: vec!["Exiting network simulator.".into()],
                quit: true,
            },
            other => Reply::error(format!(
                "{other} is an ibsim command this server does not have (try Help)"
            )),
        }
    }

    /// `Unlink "node"[port]` / `Unlink "node"`.
    fn unlink(&mut self, net: &mut Subnet, args: &str) -> Reply {
        let n = match one_port(net, args) {
            Ok(n) => n,
            Err(e) => return Reply::error(format!("unlink: {e}")),
        };
        let cables = cables_of(net, &n, true);
        if cables.is_empty() {
            let name = &net.topology().nodes()[n.node].name;
            return Reply::error(match n.port {
                Some(p) => format!("unlink: port {p} of \"{name}\" is not linked"),
                None => format!("unlink: no port of \"{name}\" is linked"),
            });
        }
        let mut lines = Vec::new();
        for c in cables {
            if net.set_cable(c, false).is_ok() {
                self.unlinked.insert(c);
                lines.push(format!(
                    "unlinked {}: {}",
                    cable_name(net, c),
                    states(net, c)
                ));
            }
        }
        Reply { lines, quit: false }
    }

    /// `ReLink "node"[port]` / `ReLink "node"`: what Unlink pulled.
    fn relink(&mut self, net: &mut Subnet, args: &str) -> Reply {
        let n = match one_port(net, args) {
            Ok(n) => n,
            Err(e) => return Reply::error(format!("relink: {e}")),
        };
        let cables: Vec<usize> = cables_of(net, &n, false)
            .into_iter()
            .filter(|c| self.unlinked.contains(c))
            .collect();
        if cables.is_empty() {
            return Reply::error("relink: no previous link stored");
        }
        let mut lines = Vec::new();
        for c in cables {
            lines.push(self.plug(net, c, "relinked"));
        }
        Reply { lines, quit: false }
    }

    /// `Link "a"[p] "b"[q]`: only a pulled cable of the topology.
    fn link(&mut self, net: &mut Subnet, args: &str) -> Reply {
        let (a, b) = match two_ports(net, args) {
            Ok(x) => x,
            Err(e) => return Reply::error(format!("link: {e}")),
        };
        let ends = [a, b];
        let found = net.topology().links().iter().position(|l| {
            let (x, y) = (l.a, l.b);
            (x == ends[0] && y == ends[1]) || (x == ends[1] && y == ends[0])
        });
        let Some(c) = found else {
            return Reply::error(
                "link: the topology has no cable between those ports (this fabric's cables are \
                 its topology's; Link plugs back one that was unlinked)",
            );
        };
        if net.cable_up(c) == Some(true) {
            return Reply::error("link: can't link: local/remote port are already connected");
        }
        Reply::line(self.plug(net, c, "linked"))
    }

    fn plug(&mut self, net: &mut Subnet, c: usize, verb: &str) -> String {
        self.unlinked.remove(&c);
        match net.set_cable(c, true) {
            Ok(_) => format!("{verb} {}: {}", cable_name(net, c), states(net, c)),
            Err(e) => format!("error: {e}"),
        }
    }
}

fn help() -> Reply {
    let lines = [
        "Commands (ibsim's console syntax; any prefix of a command, in any case):",
        "\tDump [\"nodeid\"] : the cabled ports of every node (or one), PortState/PhysState",
        "\tLink \"nodeid\"[port] \"remoteid\"[port] : plug back the cable between two ports",
        "\tUnlink \"nodeid\"[port] : pull the port's cable (both ends Down/Polling, trap 128)",
        "\tUnlink \"nodeid\" : pull every cable of the node",
        "\tReLink \"nodeid\"[port] : plug back what Unlink pulled (both ends Init/LinkUp)",
        "\tReLink \"nodeid\" : plug back every cable of the node that Unlink pulled",
        "\t#... : comment, ignored",
        "\tHelp/?",
        "\tQuit : stop the server",
    ];
    Reply {
        lines: lines.iter().map(|l| l.to_string()).collect(),
        quit: false,
    }
}

/// `Dump ["node"]`.
fn dump(net: &Subnet, args: &str) -> Reply {
    let only = if args.trim().is_empty() {
        None
    } else {
        match parse_port(net, args.trim()) {
            Ok((n, _, _)) => Some(n.node),
            Err(e) => return Reply::error(format!("dump: {e}")),
        }
    };
    let topo = net.topology();
    let mut lines = Vec::new();
    let mut count = 0;
    for (i, node) in topo.nodes().iter().enumerate() {
        if only.is_some_and(|o| o != i) {
            continue;
        }
        count += 1;
        let kind = match node.kind {
            NodeKind::Switch => "Switch",
            _ => "Ca",
        };
        lines.push(format!(
            "{kind} {} \"{}\" nodeguid {:#018x}",
            node.ports, node.name, node.guid.0
        ));
        for port in topo.cabled_ports(i) {
            let end = End { node: i, port };
            let Some((peer, c)) = topo.peer(i, port) else {
                continue;
            };
            let pulled = net.cable_up(c) == Some(false);
            let (state, up) = port_state(net, end).unwrap_or((PortState::Down, !pulled));
            lines.push(format!(
                "[{port}]\t{}\"{}\"[{}]\t{:?}/{}",
                if pulled { "unlinked from " } else { "" },
                topo.nodes()[peer.node].name,
                peer.port,
                state,
                phys(up)
            ));
        }
    }
    lines.push(format!("# dumped {count} nodes"));
    Reply { lines, quit: false }
}

fn phys(up: bool) -> &'static str {
    if up {
        "LinkUp"
    } else {
        "Polling"
    }
}

/// A port's PortState and whether its link is up, from its device.
fn port_state(net: &Subnet, e: End) -> Option<(PortState, bool)> {
    let id = *net.built().nodes.get(e.node)?;
    if let Some(s) = net.sim().node::<ipoib_fabric::hw::switch::Switch>(id) {
        return Some((s.port_state(e.port)?, s.port_link_up(e.port)?));
    }
    let p = net.sim().node::<Host>(id)?.hca().port(e.port)?;
    Some((p.state, p.phys_up))
}

/// `"a"[p] - "b"[q]` of cable `c`.
fn cable_name(net: &Subnet, c: usize) -> String {
    let topo = net.topology();
    let Some(TopoLink { a, b, .. }) = topo.links().get(c) else {
        return format!("cable {c}");
    };
    let n = |e: &End| format!("\"{}\"[{}]", topo.nodes()[e.node].name, e.port);
    format!("{} - {}", n(a), n(b))
}

/// Both ends' `PortState/PhysState` of cable `c`.
fn states(net: &Subnet, c: usize) -> String {
    let Some(l) = net.topology().links().get(c) else {
        return String::new();
    };
    let s = |e: End| match port_state(net, e) {
        Some((st, up)) => format!("{st:?}/{}", phys(up)),
        None => "?".into(),
    };
    format!("{} and {}", s(l.a), s(l.b))
}

/// The cables of a named port (or of every port of the node), plugged in (`up`) or pulled.
fn cables_of(net: &Subnet, n: &Named, up: bool) -> Vec<usize> {
    let topo = net.topology();
    topo.links()
        .iter()
        .enumerate()
        .filter(|(_, l)| {
            [l.a, l.b]
                .iter()
                .any(|e| e.node == n.node && n.port.is_none_or(|p| p == e.port))
        })
        .map(|(c, _)| c)
        .filter(|&c| net.cable_up(c) == Some(up))
        .collect()
}

/// One `"node"[port]` or `"node"` and nothing after it.
fn one_port(net: &Subnet, args: &str) -> Result<Named, String> {
    let (n, rest, _) = parse_port(net, args.trim())?;
    if !rest.trim().is_empty() {
        return Err(format!("unexpected '{}'", rest.trim()));
    }
    Ok(n)
}

/// Two `"node"[port]`s, each with its port.
fn two_ports(net: &Subnet, args: &str) -> Result<(End, End), String> {
    let (a, rest, _) = parse_port(net, args.trim())?;
    let (b, rest, _) = parse_port(net, rest.trim())?;
    if !rest.trim().is_empty() {
        return Err(format!("unexpected '{}'", rest.trim()));
    }
    let end = |n: Named, which: &str| match n.port {
        Some(port) => Ok(End { node: n.node, port }),
        None => Err(format!("no {which} port")),
    };
    Ok((end(a, "local")?, end(b, "remote")?))
}

/// `"node"[port]` (quotes optional) at the start of `s`: the node, the rest of `s`, the name.
fn parse_port<'a>(net: &Subnet, s: &'a str) -> Result<(Named, &'a str, String), String> {
    let (name, rest) = if let Some(q) = s.strip_prefix('"') {
        q.split_once('"')
            .ok_or_else(|| format!("bad parameter: no closing quote in '{s}'"))?
    } else {
        let end = s
            .find(|c: char| c == '[' || c.is_whitespace())
            .unwrap_or(s.len());
        s.split_at(end)
    };
    if name.is_empty() {
        return Err("a node is needed: \"nodeid\"[port]".into());
    }
    let topo = net.topology();
    let node = topo
        .nodes()
        .iter()
        .position(|n| n.name == name)
        .or_else(|| topo.nodes().iter().position(|n| n.desc == name))
        // ibsim's words, and where to find the names (a generated topology's switch is `sw0`,
        // not ibsim's `Switch1`).
        .ok_or_else(|| format!("nodeid \"{name}\" not found (Dump lists the nodes)"))?;
    let Some(inner) = rest.strip_prefix('[') else {
        return Ok((Named { node, port: None }, rest, name.to_string()));
    };
    let (num, rest) = inner
        .split_once(']')
        .ok_or_else(|| format!("nodeid \"{name}\": missing ']'"))?;
    let max = topo.nodes()[node].ports;
    let port = num
        .trim()
        .parse::<u8>()
        .ok()
        .filter(|&p| p >= 1 && p <= max)
        .ok_or_else(|| format!("nodeid \"{name}\": bad port {} (1..={max})", num.trim()))?;
    Ok((
        Named {
            node,
            port: Some(port),
        },
        rest,
        name.to_string(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ipoib_fabric::hw::topology::Topology;
    use ipoib_fabric::node::subnet::SubnetOptions;
    use ipoib_fabric::Instant;
    use std::time::Duration;

    /// Two switches joined by two cables (ports 3 and 5), a host on each.
    const NET: &str = "Switch 8 \"s1\"\n[1] \"a\"[1]\n[3] \"s2\"[3]\n[5] \"s2\"[5]\n\n\
        Switch 8 \"s2\"\n[1] \"b\"[1]\n[3] \"s1\"[3]\n[5] \"s1\"[5]\n\n\
        Hca 1 \"a\"\n[1] \"s1\"[1]\n\nHca 1 \"b\"\n[1] \"s2\"[1]\n";

    fn net() -> Subnet {
        let topo = Topology::parse_net(NET).unwrap();
        let mut net = Subnet::build(SubnetOptions::new(topo, 5)).unwrap();
        assert!(net.run_until_joined(Instant::ZERO + Duration::from_secs(10)));
        net
    }

    fn one(r: Reply) -> String {
        assert_eq!(r.lines.len(), 1, "{r:?}");
        assert!(!r.quit);
        r.lines[0].clone()
    }

    fn traps(net: &Subnet) -> u64 {
        net.switches().map(|(_, s)| s.stats().traps_sent).sum()
    }

    // IBA 1 §14.2.5.1: Unlink pulls the cable (both ends Down/Polling, trap 128 from each
    // switch), ReLink plugs it back (Init/LinkUp, IBA 1 §7.2), as ibsim's unlink_port/do_relink.
    #[test]
    fn unlink_and_relink_a_cable_between_switches() {
        let mut net = net();
        let mut c = Console::new();
        let t0 = traps(&net);
        assert_eq!(
            one(c.execute(&mut net, "Unlink \"s1\"[3]")),
            "unlinked \"s1\"[3] - \"s2\"[3]: Down/Polling and Down/Polling"
        );
        assert_eq!(traps(&net), t0 + 2);
        assert_eq!(
            one(c.execute(&mut net, "u \"s1\"[3]")),
            "error: unlink: port 3 of \"s1\" is not linked"
        );
        let d = c.execute(&mut net, "dump \"s2\"").lines;
        assert!(
            d.contains(&"[3]\tunlinked from \"s1\"[3]\tDown/Polling".to_string()),
            "{d:#?}"
        );
        assert!(
            d.contains(&"[5]\t\"s1\"[5]\tActive/LinkUp".to_string()),
            "{d:#?}"
        );
        assert_eq!(d.last().unwrap(), "# dumped 1 nodes");
        // ReLink names either end.
        assert_eq!(
            one(c.execute(&mut net, "REL s2[3]")),
            "relinked \"s1\"[3] - \"s2\"[3]: Init/LinkUp and Init/LinkUp"
        );
        assert_eq!(traps(&net), t0 + 4);
        assert_eq!(
            one(c.execute(&mut net, "relink \"s1\"[3]")),
            "error: relink: no previous link stored"
        );
    }

    #[test]
    fn unlink_a_node_then_link_one_cable_back() {
        let mut net = net();
        let mut c = Console::new();
        let r = c.execute(&mut net, "unlink \"s2\"");
        assert_eq!(r.lines.len(), 3, "{r:?}");
        let s2 = net.topology().find("s2").unwrap();
        let of_s2: Vec<usize> = (0..net.topology().links().len())
            .filter(|&i| {
                let l = &net.topology().links()[i];
                l.a.node == s2 || l.b.node == s2
            })
            .collect();
        assert_eq!(of_s2.len(), 3);
        assert!(of_s2.iter().all(|&i| net.cable_up(i) == Some(false)));
        assert_eq!(net.cable_up(0), Some(true), "a - s1 stays");
        assert_eq!(
            one(c.execute(&mut net, "link \"s1\"[5] \"s2\"[3]")),
            "error: link: the topology has no cable between those ports (this fabric's cables \
             are its topology's; Link plugs back one that was unlinked)"
        );
        assert_eq!(
            one(c.execute(&mut net, "Link \"s2\"[5] \"s1\"[5]")),
            "linked \"s1\"[5] - \"s2\"[5]: Init/LinkUp and Init/LinkUp"
        );
        assert_eq!(
            one(c.execute(&mut net, "Link \"s2\"[5] \"s1\"[5]")),
            "error: link: can't link: local/remote port are already connected"
        );
        // The rest comes back with ReLink of the node.
        assert_eq!(c.execute(&mut net, "relink s2").lines.len(), 2);
        assert!((0..net.topology().links().len()).all(|i| net.cable_up(i) == Some(true)));
    }

    #[test]
    fn bad_commands_are_answered_with_an_error() {
        let mut net = net();
        let mut c = Console::new();
        for (line, want) in [
            ("frob", "error: command 'frob' unknown (try Help)"),
            (
                "Route 1 2",
                "error: Route is an ibsim command this server does not have (try Help)",
            ),
            (
                "unlink \"nosuch\"[1]",
                "error: unlink: nodeid \"nosuch\" not found (Dump lists the nodes)",
            ),
            (
                "unlink s1[9]",
                "error: unlink: nodeid \"s1\": bad port 9 (1..=8)",
            ),
            (
                "unlink s1[2]",
                "error: unlink: port 2 of \"s1\" is not linked",
            ),
            (
                "unlink",
                "error: unlink: a node is needed: \"nodeid\"[port]",
            ),
            (
                "unlink \"s1",
                "error: unlink: bad parameter: no closing quote in '\"s1'",
            ),
            ("unlink s1[3", "error: unlink: nodeid \"s1\": missing ']'"),
            ("unlink s1[3] x", "error: unlink: unexpected 'x'"),
            (
                "link s1[3]",
                "error: link: a node is needed: \"nodeid\"[port]",
            ),
            ("link s1 s2[3]", "error: link: no local port"),
        ] {
            assert_eq!(one(c.execute(&mut net, line)), want, "{line}");
        }
        // Nothing above changed a cable; odd input never panics.
        assert!((0..4).all(|i| net.cable_up(i) == Some(true)));
        for line in [
            "\"",
            "u \"\"[1]",
            "l a[",
            "u s1[]",
            "u s1[300]",
            "u ü[1]",
            "d \"x",
            "ü",
        ] {
            let r = c.execute(&mut net, line);
            assert!(
                r.lines.iter().all(|l| l.starts_with("error: ")),
                "{line}: {r:?}"
            );
        }
        assert_eq!(c.execute(&mut net, "# a comment"), Reply::default());
        assert_eq!(c.execute(&mut net, "   "), Reply::default());
        assert!(c.execute(&mut net, "?").lines.len() > 5);
        let q = c.execute(&mut net, "q");
        assert!(q.quit);
    }
}

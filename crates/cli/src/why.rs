//! Why a host did not come up, in one line per host, for `ipoib sim` and `ipoib demo`
//! ([`ipoib_fabric::node::subnet::Subnet::join_problems`]).

use ipoib_fabric::hw::topology::{End, Topology};
use ipoib_fabric::node::subnet::Subnet;

/// Hosts named at most in a failure message; the rest are counted.
pub const MAX_NAMED: usize = 5;

/// `name (LID l): reason; reason` for host `i`.
pub fn host_line(net: &Subnet, i: usize) -> String {
    let h = net.host(i);
    let node = &net.topology().nodes()[h.topo_node];
    // A multi-port HCA names the port the host runs on.
    let port = if node.ports > 1 {
        format!(" port {}", h.port)
    } else {
        String::new()
    };
    let reasons: Vec<String> = net
        .join_problems(i)
        .iter()
        .map(ToString::to_string)
        .collect();
    let reasons = if reasons.is_empty() {
        "no reason found".to_string()
    } else {
        reasons.join("; ")
    };
    format!("{}{port} (LID {}): {reasons}", node.name, net.lid(i))
}

/// The lines of the first [`MAX_NAMED`] of `hosts`, then `... and N more` when there are more.
pub fn host_lines(net: &Subnet, hosts: &[usize]) -> Vec<String> {
    let mut v: Vec<String> = hosts
        .iter()
        .take(MAX_NAMED)
        .map(|&i| host_line(net, i))
        .collect();
    if hosts.len() > MAX_NAMED {
        v.push(format!("... and {} more", hosts.len() - MAX_NAMED));
    }
    v
}

/// A warning when some ports belong to more partitions than their P_Key table holds: how many,
/// the table's size, and the first few ports with the P_Keys left out.
pub fn pkey_tables_full(net: &Subnet) -> Option<String> {
    let full = net.pkey_tables_full();
    full.first()?;
    let cap = ipoib_fabric::hw::hca::PKEY_TABLE_SIZE;
    let named: Vec<String> = full
        .iter()
        .take(MAX_NAMED)
        .map(|(i, out)| {
            let node = &net.topology().nodes()[net.host(*i).topo_node];
            format!(
                "{} ({} left out, {:#06x} first)",
                node.name,
                out.len(),
                out[0].base()
            )
        })
        .collect();
    Some(format!(
        "{} host port(s) belong to more partitions than their P_Key table holds ({cap} entries, \
         the HCA's PartitionCap); the subnet manager left the rest out, as OpenSM does (ERR 0512 \
         \"Pkey table is full\"), so those partitions and their broadcast groups are not usable \
         there: {}{}",
        full.len(),
        named.join(", "),
        if full.len() > MAX_NAMED { ", ..." } else { "" }
    ))
}

/// A warning when the subnet manager cannot reach some nodes (more than
/// [`ipoib_fabric::node::sm::MAX_DR_HOPS`] cables from its port): how many, and the first few with
/// their hop counts.
pub fn unreached(net: &Subnet) -> Option<String> {
    unreached_in(net.topology(), &net.unreached_nodes())
}

/// [`unreached`] for the nodes `far` of `topo` (node, hops), as
/// [`ipoib_fabric::node::sm::unreachable`] gives them for a fabric that is no [`Subnet`].
pub fn unreached_in(topo: &Topology, far: &[(usize, u32)]) -> Option<String> {
    far.first()?;
    let named: Vec<String> = far
        .iter()
        .take(MAX_NAMED)
        .map(|&(n, h)| format!("{} ({h} hops)", topo.nodes()[n].name))
        .collect();
    Some(format!(
        "the subnet manager cannot reach {} node(s): they are more than {} hops from its port, a \
         directed route's limit (IBA 1 §14.2.2; OpenSM: \"DR path with hop count 64 couldn't be \
         extended\"), so they get no LID: {}{}",
        far.len(),
        ipoib_fabric::node::sm::MAX_DR_HOPS,
        named.join(", "),
        if far.len() > MAX_NAMED { ", ..." } else { "" }
    ))
}

/// A warning when some CA ports or switches are cabled to the SM's node only through a channel
/// adapter ([`Subnet::behind_ca`]): the SM does not reach them, so they get no LID and stay down.
pub fn behind_ca(net: &Subnet) -> Option<String> {
    behind_ca_in(net.topology(), net.behind_ca())
}

/// [`behind_ca`] for the ports and switches (port 0) `behind` of `topo`, as
/// [`ipoib_fabric::node::sm::unreachable`] gives them for a fabric that is no [`Subnet`].
pub fn behind_ca_in(topo: &Topology, behind: &[End]) -> Option<String> {
    behind.first()?;
    let named: Vec<String> = behind
        .iter()
        .take(MAX_NAMED)
        .map(|e| {
            let name = &topo.nodes()[e.node].name;
            if e.port == 0 {
                format!("switch {name}")
            } else {
                format!("{name} port {}", e.port)
            }
        })
        .collect();
    let switches = behind.iter().filter(|e| e.port == 0).count();
    Some(format!(
        "the subnet manager cannot reach {} CA port(s) and {switches} switch(es): they are \
         reachable only through a channel adapter, which does not forward SMPs (IBA 1 §14.2.2), \
         so they get no LID and stay down: {}{}",
        behind.len() - switches,
        named.join(", "),
        if behind.len() > MAX_NAMED {
            ", ..."
        } else {
            ""
        }
    ))
}

//! IPv4 address resolution over IPoIB (draft-ietf-ipoib-ip-over-infiniband-06 §9.2, §10): ARP with
//! hardware type 32 and 20-byte hardware addresses (§9.1.1), requests to the broadcast group (§5:
//! the broadcast group provides the link-layer broadcast ARP needs), replies unicast to the
//! requester's QPN (§9.1.1 b: ARP replies are directed to the same QPN), a gratuitous ARP when the
//! link comes up (Linux with `arp_notify` set, docs/DEPLOYED.md "Linux IPoIB";
//! [`super::InterfaceConfig::arp_notify`]).
//!
//! The cache follows RFC 826's merge rule: a sender already in the table is updated by any ARP;
//! a new sender is added only when the ARP is addressed to us. A reply that changes a known
//! neighbour's address is logged (§14: a multicast network lets a sender claim another's identity).

use super::neighbour::Learn;
use super::tx::encap;
use super::{DropReason, Interface, LogLevel};
use crate::time::Instant;
use ipoib_wire::ipoib::{ArpOperation, ArpPacket, ArpRepr, EtherType, HwAddr};
use std::net::{IpAddr, Ipv4Addr};

impl Interface {
    fn arp_frame(&self, a: &ArpRepr) -> Vec<u8> {
        let mut b = vec![0u8; a.buffer_len()];
        a.emit(&mut ArpPacket::new_unchecked(&mut b[..]));
        encap(EtherType::Arp, &b)
    }

    /// An ARP request for `target`: to the broadcast group, or unicast to `probe` to confirm a
    /// stale entry. The target hardware address is zero (Linux `arp_create`).
    pub(super) fn send_arp_request(
        &mut self,
        now: Instant,
        target: Ipv4Addr,
        probe: Option<HwAddr>,
    ) {
        let Some(v4) = self.cfg.ipv4 else {
            return self.drop1(DropReason::NoRoute);
        };
        let a = ArpRepr {
            operation: ArpOperation::Request,
            sender_hw: self.hw_addr(),
            sender_ip: v4.addr,
            target_hw: HwAddr::default(),
            target_ip: target,
        };
        let f = self.arp_frame(&a);
        match probe {
            Some(hw) => self.send_unicast(now, hw, f),
            None => {
                let b = self.bcast_mgid();
                self.send_multicast(now, b, f, None);
            }
        }
    }

    /// A gratuitous ARP (sender and target our address) to the broadcast group, when
    /// [`super::InterfaceConfig::arp_notify`] asks for it.
    pub(super) fn gratuitous_arp(&mut self, now: Instant) {
        if !self.cfg.arp_notify {
            return;
        }
        if let Some(v4) = self.cfg.ipv4 {
            self.send_arp_request(now, v4.addr, None);
        }
    }

    /// A received ARP packet (already checked: hardware type 32, lengths 20 and 4, §9.2).
    pub(super) fn on_arp(&mut self, now: Instant, a: ArpRepr, slid: u16) {
        let Some(v4) = self.cfg.ipv4 else {
            return;
        };
        let request = match a.operation {
            ArpOperation::Request => true,
            ArpOperation::Reply => false,
            _ => return self.drop1(DropReason::Unsupported),
        };
        // §9.1.1 a: reserved flag bits are ignored on receive.
        let sha = HwAddr::new(
            a.sender_hw.flags.sanitized(),
            a.sender_hw.qpn,
            a.sender_hw.gid,
        );
        if sha.gid.is_multicast() || a.sender_ip.is_unspecified() || a.sender_ip.is_multicast() {
            return self.drop1(DropReason::Malformed);
        }
        if a.sender_ip == v4.addr {
            if sha.gid != self.gid() || sha.qpn != self.cfg.qpn {
                self.log(
                    LogLevel::Warn,
                    format_args!("ARP: our address {} is claimed by {sha}", v4.addr),
                );
            }
            return;
        }
        self.note_source(sha.gid, slid);
        let for_us = a.target_ip == v4.addr;
        let how = match (request, for_us) {
            (false, true) => Learn::Confirmed,
            (true, true) => Learn::Create,
            _ => Learn::UpdateOnly,
        };
        let l = self.neigh.learn(now, IpAddr::V4(a.sender_ip), sha, how);
        if let Some(old) = l.changed_from {
            // draft-06 §14: an ARP reply that changes a known neighbour's address is logged.
            self.log(
                LogLevel::Warn,
                format_args!(
                    "ARP: neighbour {} changed link-layer address from {old} to {sha}",
                    a.sender_ip
                ),
            );
        }
        for f in l.release {
            self.send_unicast(now, sha, f);
        }
        if l.refused {
            // A full table: like Linux, no entry means no reply (flood protection).
            return self.drop1(DropReason::NeighbourTableFull);
        }
        if request && for_us {
            let r = ArpRepr {
                operation: ArpOperation::Reply,
                sender_hw: self.hw_addr(),
                sender_ip: v4.addr,
                target_hw: sha,
                target_ip: a.sender_ip,
            };
            let f = self.arp_frame(&r);
            self.send_unicast(now, sha, f);
        }
    }
}

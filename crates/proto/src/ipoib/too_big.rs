//! Placeholder until the ICMP builders land.

pub(super) fn too_big_reply(_packet: &[u8], _mtu: u32) -> Option<Vec<u8>> {
    None
}

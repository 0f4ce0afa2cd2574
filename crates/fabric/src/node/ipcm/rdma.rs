//! The consumer's verbs on a connection's QP (the module docs, `ipcm/mod.rs`): SEND, receives,
//! RDMA WRITE and READ against registered memory, posted on the host's HCA.

use super::{IpCmApp, IpCmAppError, IpCmHandle};
use crate::hw::hca::VerbsError;
use crate::hw::verbs::{LocalBuf, LocalSge, MrHandle, RecvWr, SendOp, SendWr};
use crate::node::host::Host;
use ipoib_proto::ipcm::IpConnId;

/// The application of `h` on `host`, mutably.
fn app_mut(host: &mut Host, h: IpCmHandle) -> Result<&mut IpCmApp, IpCmAppError> {
    host.app_mut::<IpCmApp>(h.app)
        .ok_or(IpCmAppError::NotInstalled)
}

/// Posts `op` with `data` on an established connection, signaled.
pub fn post_send(
    host: &mut Host,
    h: IpCmHandle,
    conn: IpConnId,
    wr_id: u64,
    op: SendOp,
    data: Vec<u8>,
) -> Result<(), IpCmAppError> {
    let qpn = app_mut(host, h)?.up_qpn(conn)?;
    let wr = SendWr {
        wr_id,
        op,
        data,
        local: None,
        ud: None,
        signaled: true,
        solicited: false,
    };
    host.hca_mut().post_send(qpn, wr)?;
    Ok(())
}

/// Posts `data` as one SEND (`ibv_post_send` with `IBV_WR_SEND`).
pub fn send(
    host: &mut Host,
    h: IpCmHandle,
    conn: IpConnId,
    wr_id: u64,
    data: Vec<u8>,
) -> Result<(), IpCmAppError> {
    post_send(host, h, conn, wr_id, SendOp::Send, data)
}

/// Posts a receive of `capacity` bytes on a connection's QP (established or not).
pub fn post_recv(
    host: &mut Host,
    h: IpCmHandle,
    conn: IpConnId,
    wr_id: u64,
    capacity: u32,
) -> Result<(), IpCmAppError> {
    let qpn = app_mut(host, h)?.qpn(conn).ok_or(IpCmAppError::NoQp)?;
    host.hca_mut().post_recv(qpn, RecvWr { wr_id, capacity })?;
    Ok(())
}

/// RDMA WRITE of `len` bytes at `offset` of our region `local` to `remote_addr` of the peer's
/// region `rkey`. The range is checked now ([`IpCmAppError`] when it is not inside the region);
/// the HCA reads the bytes from the region as it builds each packet ([`SendWr::local`]), so a
/// region deregistered meanwhile completes the request with a local protection error.
#[allow(clippy::too_many_arguments)]
pub fn rdma_write(
    host: &mut Host,
    h: IpCmHandle,
    conn: IpConnId,
    wr_id: u64,
    local: &MrHandle,
    offset: usize,
    len: usize,
    remote_addr: u64,
    rkey: u32,
) -> Result<(), IpCmAppError> {
    let qpn = app_mut(host, h)?.up_qpn(conn)?;
    host.hca().mr_read(local.lkey, offset, len)?;
    let sge = LocalSge {
        buf: LocalBuf {
            lkey: local.lkey,
            addr: local.addr.wrapping_add(offset as u64),
        },
        len: u32::try_from(len).map_err(|_| VerbsError::MessageTooLong {
            len,
            max: u32::MAX as usize,
        })?,
    };
    let wr = SendWr {
        wr_id,
        op: SendOp::RdmaWrite { remote_addr, rkey },
        data: Vec::new(),
        local: Some(sge),
        ud: None,
        signaled: true,
        solicited: false,
    };
    host.hca_mut().post_send(qpn, wr)?;
    Ok(())
}

/// RDMA READ of `len` bytes at `remote_addr` of the peer's region `rkey` into `offset` of our
/// region `local` (which must grant local write, IBA 1 §10.6.3.1).
#[allow(clippy::too_many_arguments)]
pub fn rdma_read(
    host: &mut Host,
    h: IpCmHandle,
    conn: IpConnId,
    wr_id: u64,
    local: &MrHandle,
    offset: usize,
    len: u32,
    remote_addr: u64,
    rkey: u32,
) -> Result<(), IpCmAppError> {
    let local = LocalBuf {
        lkey: local.lkey,
        addr: local.addr.wrapping_add(offset as u64),
    };
    let op = SendOp::RdmaRead {
        remote_addr,
        rkey,
        len,
        local: Some(local),
    };
    post_send(host, h, conn, wr_id, op, Vec::new())
}

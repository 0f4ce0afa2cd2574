//! The control socket ([`crate::control::ControlServer`]) as an [`Endpoint`] of the real-time
//! driver: `ipoib show` requests are answered between turns from the emulation's state at that
//! moment, through the owner's `answer` function (for a [`Subnet`](ipoib_fabric::node::subnet::Subnet),
//! [`crate::show::from_subnet`]). The counters view gets the server's own section (`control`),
//! which [`ControlServer`] adds to every answer of that view.

use super::Endpoint;
use crate::control::{AnswerError, ControlServer, Request};
use crate::show::Answer;
use std::io;
use std::os::fd::{AsRawFd, RawFd};

/// How the owner answers a request from the emulation (a closure may hold what it needs to find
/// its interfaces in it, e.g. a node and an interface handle).
pub type AnswerFn<E> = Box<dyn FnMut(&E, &Request) -> Result<Answer, AnswerError>>;

/// A control socket served by the driver.
pub struct ControlEndpoint<E> {
    server: ControlServer,
    answer: AnswerFn<E>,
}

impl<E> std::fmt::Debug for ControlEndpoint<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ControlEndpoint")
            .field("path", &self.server.path())
            .finish()
    }
}

impl<E> ControlEndpoint<E> {
    /// Serves `server` with `answer`.
    pub fn new(server: ControlServer, answer: AnswerFn<E>) -> ControlEndpoint<E> {
        ControlEndpoint { server, answer }
    }
}

impl<E> Endpoint<E> for ControlEndpoint<E> {
    fn raw_fd(&self) -> RawFd {
        self.server.poll_fd().as_raw_fd()
    }

    /// Everything the sockets allow is done in one call ([`ControlServer::poll`]), so the file is
    /// always left drained: it reports 0 inputs whatever it answered.
    fn on_readable(&mut self, emu: &mut E, _budget: usize) -> io::Result<usize> {
        let answer = &mut self.answer;
        let mut handler = |req: &Request| answer(emu, req);
        self.server.poll(&mut handler);
        Ok(0)
    }

    fn flush(&mut self, _emu: &mut E) -> io::Result<usize> {
        Ok(0)
    }
}

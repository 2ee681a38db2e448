//! Connection identity: the 4-tuple that keys every agent's per-connection table.

use std::net::Ipv4Addr;

/// A TCP connection seen from the fixed host's side: `src` sends the data that flows toward the mobile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FlowKey {
    pub src: Ipv4Addr,
    pub src_port: u16,
    pub dst: Ipv4Addr,
    pub dst_port: u16,
}

impl FlowKey {
    /// The connection whose data goes from `from` to `to`.
    pub fn between(from: std::net::SocketAddrV4, to: std::net::SocketAddrV4) -> FlowKey {
        FlowKey { src: *from.ip(), src_port: from.port(), dst: *to.ip(), dst_port: to.port() }
    }

    /// The same connection keyed from the other end (for matching ACKs to data).
    pub fn reversed(self) -> FlowKey {
        FlowKey { src: self.dst, src_port: self.dst_port, dst: self.src, dst_port: self.src_port }
    }
}

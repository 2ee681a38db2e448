//! What the handoff drivers share: the sans-IO [`Node`] contract (Ethernet frames in on numbered ports,
//! frames out), point-to-point Ethernet framing, and the I/O loop that runs one node on AF_PACKET sockets.

use crate::bs::now;
use crate::forward::{Mac, ETHERTYPE_IPV4, ETH_HEADER_LEN};
use crate::sys::{self, Offload, PacketSocket, RxBatch};
use crate::NetError;
use bytes::Bytes;
use lasthop_wire::{Ipv4Packet, Time};
use std::io;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// A frame to send: the port's index and the whole Ethernet frame.
pub type Out = Vec<(usize, Bytes)>;

/// One handoff role (home agent, base station, mobile host) as a sans-IO state machine over numbered
/// ports, each a point-to-point link to one neighbour.
pub trait Node {
    /// A frame arrived on `port` at `now`.
    fn handle_frame(&mut self, now: Time, port: usize, frame: &[u8], out: &mut Out);
    /// The earliest time [`handle_timeout`](Node::handle_timeout) is wanted.
    fn poll_timeout(&self) -> Option<Time>;
    /// Runs whatever is due by `now`.
    fn handle_timeout(&mut self, now: Time, out: &mut Out);
}

/// The two MACs of a point-to-point link as one end sees them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Link {
    pub own: Mac,
    pub peer: Mac,
}

impl Link {
    /// `packet` (a whole IPv4 packet) framed for the neighbour (broadcast when `broadcast`).
    pub fn frame(&self, packet: &[u8], broadcast: bool) -> Bytes {
        let dst = if broadcast { crate::forward::BROADCAST } else { self.peer };
        let mut f = Vec::with_capacity(ETH_HEADER_LEN + packet.len());
        f.extend_from_slice(&dst);
        f.extend_from_slice(&self.own);
        f.extend_from_slice(&ETHERTYPE_IPV4.to_be_bytes());
        f.extend_from_slice(packet);
        Bytes::from(f)
    }
}

/// The IPv4 packet inside an Ethernet frame, cut to its total length (Ethernet padding off); `None` for
/// anything else (ARP, IPv6, a malformed header): the handoff testbed's links carry IPv4 only.
pub fn ipv4_of(frame: &[u8]) -> Option<Bytes> {
    if frame.len() <= ETH_HEADER_LEN || u16::from_be_bytes([frame[12], frame[13]]) != ETHERTYPE_IPV4 {
        return None;
    }
    let ip = Ipv4Packet::new_checked(&frame[ETH_HEADER_LEN..]).ok()?;
    let len = usize::from(ip.total_len());
    Some(Bytes::copy_from_slice(&frame[ETH_HEADER_LEN..ETH_HEADER_LEN + len]))
}

/// Longest sleep of the loop, so that `stop` is seen promptly.
const MAX_WAIT: Duration = Duration::from_millis(50);

/// Runs `node` on the interfaces `ifaces` (port i is `ifaces[i]`) until `stop` is set; `on_ready` is called
/// once the sockets are open. GRO goes off on each interface so that frames arrive wire-sized.
pub fn run_node<const N: usize>(
    ifaces: [&str; N],
    node: &mut dyn Node,
    stop: &AtomicBool,
    on_ready: impl FnOnce(),
) -> Result<(), NetError> {
    let mut socks = Vec::with_capacity(N);
    for name in ifaces {
        let _ = sys::set_offload(name, Offload::Gro, false);
        socks.push(
            PacketSocket::open(name).map_err(|e| NetError::io(format!("opening AF_PACKET socket on {name}"), e))?,
        );
    }
    let fds: [i32; N] = std::array::from_fn(|i| socks[i].as_raw_fd());
    on_ready();
    let mut rx = RxBatch::new(crate::bs::BATCH, 65_536 + 64);
    let mut out: Out = Vec::new();
    let send = |out: &mut Out| {
        for (port, f) in out.drain(..) {
            // A full send buffer drops the frame, as a full interface queue would; TCP recovers.
            let _ = socks[port].send(&f);
        }
    };
    while !stop.load(Ordering::Relaxed) && !sys::STOP_REQUESTED.load(Ordering::Relaxed) {
        let t = now();
        if node.poll_timeout().is_some_and(|d| d <= t) {
            node.handle_timeout(t, &mut out);
            send(&mut out);
        }
        let wait = node.poll_timeout().map_or(MAX_WAIT, |d| (d - now()).min(MAX_WAIT));
        let ready = sys::wait_readable(&fds, wait).map_err(|e| NetError::io("waiting for frames", e))?;
        for (i, r) in ready.into_iter().enumerate() {
            if !r {
                continue;
            }
            let got = match socks[i].recv_batch(&mut rx) {
                Ok(n) => n,
                Err(e) if matches!(e.kind(), io::ErrorKind::Interrupted | io::ErrorKind::WouldBlock) => 0,
                Err(e) => return Err(NetError::io(format!("receiving on {}", ifaces[i]), e)),
            };
            let t = now();
            for k in 0..got {
                node.handle_frame(t, i, rx.frame(k).0, &mut out);
            }
            send(&mut out);
        }
    }
    Ok(())
}

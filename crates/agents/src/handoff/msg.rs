//! The handoff control protocol: small messages carried directly over IPv4 (protocol [`PROTO_HANDOFF`], 253,
//! set aside for experiments by RFC 3692), so that they cross real links with real delays and queueing.
//!
//! Payload layout (network byte order):
//!
//! ```text
//! 0      kind        u8   (Kind as u8)
//! 1      n_ids       u8   number of IP IDs that follow (0..=8)
//! 2..4   seq         u16  handoff number chosen by the mobile host; later handoffs have larger numbers
//! 4..8   mobile      IPv4 the mobile host's home address
//! 8..12  peer        IPv4 kind-dependent: the old BS (Greeting), the new BS (Notify), the BS (Join/Leave)
//! 12..   ids         n_ids × u16: IP IDs of the last packets the mobile received, oldest first (Forward)
//! ```

use bytes::{BufMut, Bytes, BytesMut};
use lasthop_wire::ipv4::{Ipv4Packet, Ipv4Repr, HEADER_LEN};
use std::net::Ipv4Addr;

pub use lasthop_wire::proto::HANDOFF as PROTO_HANDOFF;
const FIXED_LEN: usize = 12;
/// At most this many IP IDs in one message.
pub const MAX_IDS: usize = 8;

/// What a control message asks for or reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    /// A base station's periodic broadcast (Balakrishnan 1995 §6: "the IP address of the base station and a timestamp").
    Beacon = 1,
    /// MH → BS (multicast scheme): become the primary, forward from the buffer after the IDs carried.
    Forward = 2,
    /// MH → BS: join the group and buffer (a likely handoff target), do not forward.
    Buffer = 3,
    /// MH → BS: leave the group, forget the mobile.
    Stop = 4,
    /// BS → MH: the request numbered `seq` is carried out (the new primary's reply ends the handoff).
    Ack = 5,
    /// MH → new BS (plain scheme, Caceres 1995): "I am here; my old BS is `peer`".
    Greeting = 6,
    /// New BS → MH (plain scheme): the greeting is accepted, the new BS routes the mobile's packets.
    GreetingAck = 7,
    /// New BS → old BS and home agent (plain scheme): the mobile is now reached through `peer`.
    Notify = 8,
    /// Old BS → new BS (plain scheme): forwarding set up.
    NotifyAck = 9,
    /// New BS → MH (plain scheme): the handoff is complete.
    Complete = 10,
    /// BS → home agent (multicast scheme): add `peer` to the mobile's group.
    Join = 11,
    /// BS → home agent: remove `peer` from the mobile's group.
    Leave = 12,
}

impl Kind {
    fn from_u8(v: u8) -> Option<Kind> {
        use Kind::*;
        Some(match v {
            1 => Beacon,
            2 => Forward,
            3 => Buffer,
            4 => Stop,
            5 => Ack,
            6 => Greeting,
            7 => GreetingAck,
            8 => Notify,
            9 => NotifyAck,
            10 => Complete,
            11 => Join,
            12 => Leave,
            _ => return None,
        })
    }
}

/// A decoded control message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Control {
    pub kind: Kind,
    pub seq: u16,
    pub mobile: Ipv4Addr,
    pub peer: Ipv4Addr,
    pub ids: Vec<u16>,
}

impl Control {
    pub fn new(kind: Kind, seq: u16, mobile: Ipv4Addr, peer: Ipv4Addr) -> Control {
        Control { kind, seq, mobile, peer, ids: Vec::new() }
    }

    /// The whole IPv4 packet from `src` to `dst`.
    pub fn emit(&self, src: Ipv4Addr, dst: Ipv4Addr, ident: u16) -> Bytes {
        let n = self.ids.len().min(MAX_IDS);
        let payload_len = FIXED_LEN + 2 * n;
        let repr = Ipv4Repr { src, dst, protocol: PROTO_HANDOFF, ident, ttl: 64, payload_len };
        let mut buf = BytesMut::with_capacity(HEADER_LEN + payload_len);
        buf.put_bytes(0, HEADER_LEN);
        repr.emit(&mut buf[..HEADER_LEN]);
        buf.put_u8(self.kind as u8);
        buf.put_u8(n as u8);
        buf.put_u16(self.seq);
        buf.put_slice(&self.mobile.octets());
        buf.put_slice(&self.peer.octets());
        for id in &self.ids[..n] {
            buf.put_u16(*id);
        }
        buf.freeze()
    }

    /// Decodes a whole IPv4 packet; `None` if it is not a well-formed control message.
    pub fn parse(packet: &[u8]) -> Option<Control> {
        let ip = Ipv4Packet::new_checked(packet).ok()?;
        if ip.protocol() != PROTO_HANDOFF || ip.is_fragment() {
            return None;
        }
        let p = ip.payload();
        if p.len() < FIXED_LEN {
            return None;
        }
        let kind = Kind::from_u8(p[0])?;
        let n = usize::from(p[1]);
        if n > MAX_IDS || p.len() < FIXED_LEN + 2 * n {
            return None;
        }
        let addr = |o: usize| Ipv4Addr::new(p[o], p[o + 1], p[o + 2], p[o + 3]);
        let ids = (0..n).map(|i| u16::from_be_bytes([p[FIXED_LEN + 2 * i], p[FIXED_LEN + 2 * i + 1]])).collect();
        Some(Control { kind, seq: u16::from_be_bytes([p[2], p[3]]), mobile: addr(4), peer: addr(8), ids })
    }
}

/// True if handoff number `a` is later than `b` (serial-number arithmetic, RFC 1982, so numbers may wrap).
pub fn seq_after(a: u16, b: u16) -> bool {
    a != b && a.wrapping_sub(b) < 0x8000
}

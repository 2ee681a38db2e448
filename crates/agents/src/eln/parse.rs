//! The one parse the ELN and NACK agents do per packet: validate IPv4 and TCP (options included, so
//! nothing downstream can panic on untrusted bytes) and copy out the fields the state machines read, the
//! mobile's piggybacked queue occupancy among them. Also the one in-place edit they make: the ELN bit.

use bytes::Bytes;
use lasthop_wire::checksum;
use lasthop_wire::queue_option::QueueOccupancy;
use lasthop_wire::tcp::ELN_MASK;
use lasthop_wire::{TcpFlags, TcpRepr};
use std::net::Ipv4Addr;

use crate::flow::FlowKey;
pub(crate) use crate::triage::Class;

/// A TCP segment as the agents read it: the parsed header ([`TcpRepr`], options included) plus what the
/// header alone does not say.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Segment {
    pub src: Ipv4Addr,
    pub dst: Ipv4Addr,
    pub tcp: TcpRepr,
    pub payload_len: u32,
    /// The mobile's output-queue occupancy option ([`lasthop_wire::queue_option`]), if present.
    pub queue: Option<QueueOccupancy>,
    /// Byte offset of the TCP header within the packet.
    pub tcp_at: usize,
}

impl Segment {
    pub fn syn(&self) -> bool {
        self.tcp.flags.contains(TcpFlags::SYN)
    }
    pub fn fin(&self) -> bool {
        self.tcp.flags.contains(TcpFlags::FIN)
    }
    pub fn rst(&self) -> bool {
        self.tcp.flags.contains(TcpFlags::RST)
    }
    /// Sequence space occupied: payload plus one each for SYN and FIN.
    pub fn seg_len(&self) -> u32 {
        self.payload_len + u32::from(self.syn()) + u32::from(self.fin())
    }
    /// The connection keyed in the direction this segment travels (source = its sender).
    pub fn key(&self) -> FlowKey {
        FlowKey { src: self.src, src_port: self.tcp.src_port, dst: self.dst, dst_port: self.tcp.dst_port }
    }
}

/// Reads a packet for the ELN and NACK agents (options included, so nothing downstream can panic).
pub(crate) fn classify(bytes: &[u8]) -> Class<Segment> {
    crate::triage::classify(bytes, |ip, tcp| {
        let queue = QueueOccupancy::find(tcp).ok()?;
        Some(Segment {
            src: ip.src_addr(),
            dst: ip.dst_addr(),
            tcp: TcpRepr::parse(tcp).ok()?,
            payload_len: tcp.payload().len() as u32,
            queue,
            tcp_at: ip.header_len(),
        })
    })
}

/// A copy of `packet` with the ELN bit set to `on`, the TCP checksum updated *incrementally* (RFC 1624
/// eqn. 3: HC' = ~(~HC + ~m + m')). Recomputing it from scratch would silently repair an ACK corrupted on
/// the way, turning a packet the end host would discard into one it trusts; the incremental update keeps
/// a bad checksum bad and a good one good.
pub(crate) fn with_eln(packet: &Bytes, seg: &Segment, on: bool) -> Bytes {
    let mut buf = packet.to_vec();
    let tcp = &mut buf[seg.tcp_at..];
    // The ELN bit lives in byte 12 of the TCP header; the checksum is at bytes 16–17.
    let byte = if on { tcp[12] | ELN_MASK } else { tcp[12] & !ELN_MASK };
    let rewritten = checksum::rewrite_incremental(tcp, 16, 12, &[byte]);
    debug_assert!(rewritten, "classify() checked the TCP header length");
    Bytes::from(buf)
}

#[cfg(test)]
mod tests {
    use super::*;
    use lasthop_wire::{Ipv4Packet, SeqNum, TcpPacket};

    const A: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
    const B: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 2);

    fn verify(p: &[u8]) -> bool {
        let ip = Ipv4Packet::new_checked(p).unwrap();
        TcpPacket::new_checked(ip.payload()).unwrap().verify_checksum(A, B)
    }

    proptest::proptest! {
        /// Setting or clearing the bit keeps a valid checksum valid and an invalid one invalid.
        #[test]
        fn incremental_checksum_matches_full(seq: u32, ack: u32, win: u16, eln: bool, len in 0usize..40, flip in 0usize..100) {
            let repr = TcpRepr { seq: SeqNum(seq), ack: Some(SeqNum(ack)), window: win, eln, ..TcpRepr::default() };
            let p = repr.emit_ipv4(A, B, 1, 64, &vec![0x5a; len]);
            let Class::Tcp(seg) = classify(&p) else { panic!() };
            for on in [true, false] {
                let q = with_eln(&p, &seg, on);
                proptest::prop_assert!(verify(&q));
                let ip = Ipv4Packet::new_checked(&q[..]).unwrap();
                proptest::prop_assert_eq!(TcpPacket::new_checked(ip.payload()).unwrap().eln(), on);
            }
            // Corrupt one payload or header byte (not the ELN byte): still invalid after marking.
            let mut bad = p.to_vec();
            let i = 20 + (flip % (bad.len() - 20));
            if i != 20 + 12 {
                bad[i] ^= 0x10;
                let bad = Bytes::from(bad);
                if !verify(&bad) {
                    proptest::prop_assert!(!verify(&with_eln(&bad, &seg, true)));
                }
            }
        }
    }
}

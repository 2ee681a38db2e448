//! The per-mobile FIFO buffer at a base station (Eom 2002 §3.3, §4.1): a copy of every data packet the BS
//! sends toward the mobile, the oldest dropped from the head when it is full, optionally cleaned by the
//! mobile's TCP ACKs or by link-layer ACKs so that no already-delivered packet is sent again after a
//! handoff.

use bytes::Bytes;
use lasthop_wire::SeqNum;
use std::collections::VecDeque;

use super::TcpFields;
use crate::flow::FlowKey;

/// How a BS learns that buffered packets reached the mobile (Eom 2002 §4.1: "we manage the buffer ... by
/// using the ACK of TCP or the ACK of the link-layer protocol used in the wireless link").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Cleanup {
    /// None: the buffer keeps the last `capacity` packets whatever became of them (§3.3, Fig. 13–15).
    #[default]
    None,
    /// The mobile's cumulative TCP ACKs, seen on their way up through the BS, free what they cover.
    TcpAck,
    /// The wireless link's acknowledgement of a frame frees that packet.
    LinkAck,
}

struct Entry {
    packet: Bytes,
    /// The connection (data direction) and the end of the sequence space the packet covers, for TCP data.
    tcp: Option<(FlowKey, SeqNum)>,
}

/// One mobile's buffer. Bounded by `capacity` packets; "when a packet arrives at the buffer with no space,
/// it is stored in the tail of the buffer and the packet arrived at first is dropped from the head of
/// buffer" (§3.3).
pub struct HandoffBuffer {
    capacity: usize,
    entries: VecDeque<Entry>,
    /// Packets pushed out of the head by newer ones.
    pub head_drops: u64,
    /// Packets freed because the mobile acknowledged them (TCP or link layer).
    pub freed_by_ack: u64,
}

impl HandoffBuffer {
    /// `capacity` ≥ 1 (the scenario checks it; a zero here is raised to one).
    pub fn new(capacity: usize) -> HandoffBuffer {
        let capacity = capacity.max(1);
        HandoffBuffer { capacity, entries: VecDeque::with_capacity(capacity), head_drops: 0, freed_by_ack: 0 }
    }

    pub fn capacity(&self) -> usize {
        self.capacity
    }
    pub fn len(&self) -> usize {
        self.entries.len()
    }
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Keeps a copy of `packet` at the tail, dropping the head when full.
    pub fn push(&mut self, packet: Bytes) {
        if self.entries.len() == self.capacity {
            self.entries.pop_front();
            self.head_drops += 1;
        }
        let tcp = TcpFields::read(&packet).filter(|t| t.payload_len > 0).map(|t| (t.flow, t.seq.add(t.payload_len)));
        self.entries.push_back(Entry { packet, tcp });
    }

    /// A cumulative ACK `ack` for the connection whose data flows `data_flow`: frees every buffered segment
    /// of it that ends at or before `ack` (the receiver has all of it).
    pub fn handle_tcp_ack(&mut self, data_flow: FlowKey, ack: SeqNum) {
        let before = self.entries.len();
        self.entries.retain(|e| !matches!(e.tcp, Some((f, end)) if f == data_flow && end <= ack));
        self.freed_by_ack += (before - self.entries.len()) as u64;
    }

    /// The link layer delivered `packet` to the mobile: frees the oldest buffered copy of it.
    pub fn handle_link_ack(&mut self, packet: &Bytes) {
        if let Some(i) = self.entries.iter().position(|e| e.packet == *packet) {
            self.entries.remove(i);
            self.freed_by_ack += 1;
        }
    }

    /// Everything buffered, oldest first, leaving the buffer empty (the *forward* message, §2.2).
    pub fn drain(&mut self) -> impl Iterator<Item = Bytes> + '_ {
        self.entries.drain(..).map(|e| e.packet)
    }

    /// The buffered packets, oldest first (for tests and traces).
    pub fn packets(&self) -> impl Iterator<Item = &Bytes> {
        self.entries.iter().map(|e| &e.packet)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mip::tests::{ack_from_mh, data_to_mh, flow_to_mh, seq_of, MSS};

    #[test]
    fn fifo_drops_from_the_head_when_full() {
        let mut b = HandoffBuffer::new(3);
        for i in 0..5 {
            b.push(data_to_mh(i));
        }
        assert_eq!(b.len(), 3);
        assert_eq!(b.head_drops, 2);
        let left: Vec<u32> = b.drain().map(|p| seq_of(&p)).collect();
        assert_eq!(left, vec![2, 3, 4], "the two oldest went, order kept");
        assert!(b.is_empty());
        assert_eq!(HandoffBuffer::new(0).capacity(), 1);
    }

    #[test]
    fn tcp_ack_frees_exactly_the_covered_segments_of_that_flow() {
        let mut b = HandoffBuffer::new(32);
        for i in 0..6 {
            b.push(data_to_mh(i));
        }
        // An ACK for the first byte of segment 3 covers 0, 1, 2 only.
        b.handle_tcp_ack(flow_to_mh(), SeqNum(1 + 3 * MSS));
        assert_eq!(b.packets().map(seq_of).collect::<Vec<_>>(), vec![3, 4, 5]);
        assert_eq!(b.freed_by_ack, 3);
        // An ACK in the middle of segment 3 frees nothing (it is not all received).
        b.handle_tcp_ack(flow_to_mh(), SeqNum(1 + 3 * MSS + 10));
        assert_eq!(b.len(), 3);
        // Another connection's ACK frees nothing.
        let other = FlowKey { src_port: 9, ..flow_to_mh() };
        b.handle_tcp_ack(other, SeqNum(1 + 100 * MSS));
        assert_eq!(b.len(), 3);
        // The reverse key (the ACK's own direction) is not the data flow.
        b.handle_tcp_ack(flow_to_mh().reversed(), SeqNum(1 + 100 * MSS));
        assert_eq!(b.len(), 3);
        let _ = ack_from_mh(0);
    }

    #[test]
    fn link_ack_frees_that_packet_only() {
        let mut b = HandoffBuffer::new(8);
        for i in 0..3 {
            b.push(data_to_mh(i));
        }
        b.handle_link_ack(&data_to_mh(1));
        assert_eq!(b.packets().map(seq_of).collect::<Vec<_>>(), vec![0, 2]);
        b.handle_link_ack(&data_to_mh(7));
        assert_eq!(b.len(), 2);
        assert_eq!(b.freed_by_ack, 1);
    }

    #[test]
    fn non_tcp_packets_are_kept_and_never_freed_by_tcp_acks() {
        let mut b = HandoffBuffer::new(4);
        b.push(Bytes::from_static(b"not even ipv4"));
        b.push(data_to_mh(0));
        b.handle_tcp_ack(flow_to_mh(), SeqNum(1 + 10 * MSS));
        assert_eq!(b.len(), 1);
    }
}

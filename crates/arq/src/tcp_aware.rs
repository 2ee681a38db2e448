//! LL-TCP-AWARE: the base station's link layer drops the mobile's duplicate TCP ACKs for a segment its
//! ARQ sender still holds, so the fixed sender does not fast-retransmit what the link is recovering.
//!
//! This is Snoop's DUPACK suppression (Balakrishnan 1995 §3.1.1: "duplicate acknowledgments ... are suppressed")
//! moved into the link layer, as the ToN'97 comparison (reference [12] of Eom 2002) built it: the link
//! layer looks into the TCP header of the packets it carries but keeps no TCP state besides the last
//! ACK number of each connection.

use bytes::Bytes;
use lasthop_wire::ipv4::PROTO_TCP;
use lasthop_wire::{Ipv4Packet, SeqNum, TcpPacket};
use serde::Serialize;
use std::net::Ipv4Addr;

/// What to do with a packet coming up from the mobile.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Hand it on (not TCP, not a duplicate ACK, or nothing held for it).
    Pass,
    /// A duplicate ACK for a segment the link is still delivering: drop it.
    Suppress,
    /// An IPv4/TCP header that cannot be read: the host drops it.
    Malformed,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct FilterStats {
    pub dupacks_seen: u64,
    pub dupacks_suppressed: u64,
    pub malformed: u64,
}

type Conn = (Ipv4Addr, u16, Ipv4Addr, u16);

/// Per-connection last ACK numbers, at most `max_connections` (the least recently seen is forgotten:
/// losing it only lets one DUPACK through).
#[derive(Debug)]
pub struct DupAckFilter {
    max_connections: usize,
    /// (connection of the ACK, last ACK number, last use).
    last: Vec<(Conn, SeqNum, u64)>,
    clock: u64,
    stats: FilterStats,
}

/// The fields of a TCP/IPv4 packet the filter reads.
struct Seg {
    conn: Conn,
    seq: SeqNum,
    ack: Option<SeqNum>,
    /// Payload bytes.
    len: u32,
    /// SYN, FIN or RST set.
    control: bool,
}

fn read(p: &[u8]) -> Result<Option<Seg>, ()> {
    let ip = Ipv4Packet::new_checked(p).map_err(|_| ())?;
    if ip.protocol() != PROTO_TCP || ip.is_fragment() {
        return Ok(None);
    }
    let tcp = TcpPacket::new_checked(ip.payload()).map_err(|_| ())?;
    Ok(Some(Seg {
        conn: (ip.src_addr(), tcp.src_port(), ip.dst_addr(), tcp.dst_port()),
        seq: tcp.seq_number(),
        ack: tcp.ack().then(|| tcp.ack_number()),
        len: tcp.payload().len() as u32,
        control: tcp.syn() || tcp.fin() || tcp.rst(),
    }))
}

impl DupAckFilter {
    pub fn new(max_connections: usize) -> DupAckFilter {
        DupAckFilter {
            max_connections: max_connections.max(1),
            last: Vec::new(),
            clock: 0,
            stats: FilterStats::default(),
        }
    }

    /// Judges `packet`, travelling from the mobile, given the packets the link toward the mobile still
    /// holds (`ArqSender::held_packets`).
    pub fn judge<'a>(&mut self, packet: &Bytes, held: impl IntoIterator<Item = &'a Bytes>) -> Verdict {
        let seg = match read(packet) {
            Ok(Some(s)) => s,
            Ok(None) => return Verdict::Pass,
            Err(()) => {
                self.stats.malformed += 1;
                return Verdict::Malformed;
            }
        };
        let Some(ack) = seg.ack else { return Verdict::Pass };
        self.clock += 1;
        let clock = self.clock;
        let slot = self.last.iter().position(|e| e.0 == seg.conn);
        let duplicate = seg.len == 0 && !seg.control && slot.is_some_and(|i| self.last[i].1 == ack);
        match slot {
            Some(i) => {
                if ack > self.last[i].1 {
                    self.last[i].1 = ack;
                }
                self.last[i].2 = clock;
            }
            None => {
                if self.last.len() >= self.max_connections {
                    let oldest = (0..self.last.len()).min_by_key(|&i| self.last[i].2).unwrap_or(0);
                    self.last.swap_remove(oldest);
                }
                self.last.push((seg.conn, ack, clock));
            }
        }
        if !duplicate {
            return Verdict::Pass;
        }
        self.stats.dupacks_seen += 1;
        // The data of this connection flows the other way: src and dst swapped.
        let data_conn = (seg.conn.2, seg.conn.3, seg.conn.0, seg.conn.1);
        let holds_missing = held.into_iter().any(|p| {
            matches!(read(p), Ok(Some(d)) if d.conn == data_conn && d.len > 0
                && d.seq <= ack && ack.diff(d.seq) < d.len as i32)
        });
        if holds_missing {
            self.stats.dupacks_suppressed += 1;
            Verdict::Suppress
        } else {
            Verdict::Pass
        }
    }

    pub fn stats(&self) -> &FilterStats {
        &self.stats
    }
}

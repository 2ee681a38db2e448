//! The cache entry: one unacknowledged segment as Snoop keeps it (Balakrishnan 1995 §6: "the packet
//! sequence number, its size, the number of local retransmissions, and a flag set if the packet was
//! retransmitted by the sender"), with what the transmit-timed rules record of its transmissions, and the
//! copy of its packet a local retransmission sends (§3.1.2 case 3; timestamps after RFC 7323).

use bytes::Bytes;
use lasthop_wire::{SeqNum, Time};

/// Bits of [`CachedSeg::flags`]. Set with `|=`, cleared with `&= !FLAG` (ns-2's Snoop cleared with
/// `|= ~FLAG`, which sets every *other* bit; `tests::clearing_sender_rexmit_clears_only_that_flag`).
pub(super) mod flag {
    /// The sender sent this segment again (Balakrishnan 1995 §3.1.1 cases 2 and 3): DUPACKs for it go to the sender.
    pub const SENDER_REXMIT: u8 = 0x01;
    /// The segment carries the FIN (cached as data of sequence length payload + 1).
    pub const FIN: u8 = 0x02;
    /// Snoop has retransmitted this segment locally at least once.
    pub const LOCAL_REXMIT: u8 = 0x04;
    /// The copy now queued was sent because every earlier transmission is known lost (transmit-timed
    /// inference): once it leaves, it is the only transmission of this segment that can still arrive.
    pub const PROVEN_LOST: u8 = 0x08;
    /// Cached on a sender retransmission of a range Snoop had passed uncached (§3.1.1 case 3: past the
    /// high-water mark, or before it had state): a copy it never saw transmitted may be the one that
    /// arrives, so the ACK that frees it says nothing about which counted transmission arrived (transmit-
    /// timed inference). Cleared once every earlier transmission is known lost (`PROVEN_LOST`).
    pub const UNSEEN_COPIES: u8 = 0x10;
}

/// One unacknowledged segment in the cache (Balakrishnan 1995 §6: "the packet sequence number, its size, the number
/// of local retransmissions, and a flag set if the packet was retransmitted by the sender").
#[derive(Debug, Clone)]
pub(super) struct CachedSeg {
    pub seq: SeqNum,
    /// Sequence-space length (payload, plus one for a FIN).
    pub len: u32,
    /// The whole IPv4 packet: a reference-counted clone of what was forwarded, never a copy (§6).
    pub pkt: Bytes,
    pub local_rexmits: u8,
    pub flags: u8,
    /// When this segment was last sent toward the mobile (by the sender or by us).
    pub sent_at: Time,
    /// Value of `Conn::tx_count` when it was last sent: packets sent after it = `tx_count - tx_idx - 1`.
    pub tx_idx: u64,
    /// Transmit-timed state (only meaningful once the host calls `handle_transmit`, see `Conn::tx_mode`).
    pub tx: SegTx,
}

/// When a cached segment actually left the link (the host's `handle_transmit`), as opposed to when it was
/// handed to the interface queue (`sent_at`, `tx_idx`).
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct SegTx {
    /// Copies handed to the link (forwarded or retransmitted) that have not started transmitting yet.
    pub pending: u8,
    /// Transmissions started (saturating).
    pub count: u8,
    /// Index (`Conn::txc`, from 1) of the latest transmission; 0 if none.
    pub last: u64,
    /// Index of the transmission before the latest; 0 if none.
    pub prev: u64,
    /// Index of the earliest transmission not known to be lost: every transmission before it is lost.
    pub live_from: u64,
    /// Start of the latest transmission.
    pub at: Time,
}

impl SegTx {
    pub fn queued() -> SegTx {
        SegTx { pending: 1, ..SegTx::default() }
    }
    /// Exactly one transmission of the segment may still arrive: the latest.
    pub fn single_live(&self) -> bool {
        self.count == 1 || self.live_from == self.last
    }
}

impl CachedSeg {
    /// Memory this entry holds: the packet as buffered plus the entry itself. With 1-byte segments the
    /// entry and headers are most of it, which counting sequence space alone would miss.
    pub fn held(&self) -> usize {
        self.pkt.len() + std::mem::size_of::<CachedSeg>()
    }
    pub fn end(&self) -> SeqNum {
        self.seq + self.len
    }
    pub fn has(&self, f: u8) -> bool {
        self.flags & f != 0
    }
    pub fn set(&mut self, f: u8) {
        self.flags |= f;
    }
    pub fn clear(&mut self, f: u8) {
        self.flags &= !f;
    }
}

/// A copy of the IPv4/TCP packet `pkt` with its timestamps option's TSval set to `tsval` if that is newer
/// (RFC 7323 modular order) than the one it carries; `None` (use the packet as it is) when it has no
/// timestamps option, already carries `tsval` or a newer one, or cannot be parsed. The TCP checksum is
/// updated incrementally (RFC 1624), never recomputed: a segment corrupted on the wired path keeps its bad
/// checksum and is discarded by the mobile, instead of being delivered as valid with corrupted bytes.
pub(super) fn with_tsval(pkt: &Bytes, tsval: u32) -> Option<Bytes> {
    let ip = lasthop_wire::Ipv4Packet::new_checked(&pkt[..]).ok()?;
    // The segment is what the IPv4 total length covers; bytes after it are not part of the checksum.
    let seg_range = ip.payload_range();
    let tcp = pkt.get(seg_range.clone())?;
    let hl = usize::from(tcp.get(12)? >> 4) * 4;
    let opts = tcp.get(20..hl)?;
    let mut i = 0;
    let at = loop {
        match *opts.get(i)? {
            0 => return None,
            1 => i += 1,
            8 if opts.get(i + 1) == Some(&10) && i + 10 <= opts.len() => break 20 + i + 2,
            _ => i += usize::from(*opts.get(i + 1)?).max(2),
        }
    };
    let old = u32::from_be_bytes(tcp[at..at + 4].try_into().ok()?);
    if tsval.wrapping_sub(old) as i32 <= 0 {
        return None;
    }
    let mut v = pkt.to_vec();
    const TCP_CHECKSUM_AT: usize = 16;
    let rewritten =
        lasthop_wire::checksum::rewrite_incremental(&mut v[seg_range], TCP_CHECKSUM_AT, at, &tsval.to_be_bytes());
    rewritten.then(|| Bytes::from(v))
}

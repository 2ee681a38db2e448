//! The one parse Snoop does per packet: validate the IPv4 and TCP headers (so nothing downstream can
//! panic on untrusted bytes) and copy out the handful of fields the state machine reads.
//!
//! TCP options are *walked* for validity (kind and length) and only one is read on the way: the timestamps,
//! which Snoop repeats in a regenerated ACK (§3.1.1 case 2). Keeping the two numbers is cheaper than keeping
//! a reference to the mobile's last packet (two atomic operations per ACK).

pub(super) use crate::triage::Class;
use lasthop_wire::ipv4::PROTO_TCP;
use lasthop_wire::tcp::{option_kind, HEADER_LEN as TCP_HEADER_LEN};
use lasthop_wire::{SeqNum, TcpFlags};
use std::net::Ipv4Addr;

/// The fields of a TCP segment that Snoop's state machine reads.
#[derive(Debug, Clone, Copy)]
pub(super) struct Segment {
    pub src: Ipv4Addr,
    pub dst: Ipv4Addr,
    pub src_port: u16,
    pub dst_port: u16,
    pub seq: SeqNum,
    /// Meaningful only when `flags` has ACK.
    pub ack: SeqNum,
    pub flags: TcpFlags,
    pub window: u16,
    pub payload_len: u32,
    /// The timestamps option (TSval, TSecr), if present.
    pub timestamps: Option<(u32, u32)>,
}

impl Segment {
    pub fn syn(&self) -> bool {
        self.flags.contains(TcpFlags::SYN)
    }
    pub fn fin(&self) -> bool {
        self.flags.contains(TcpFlags::FIN)
    }
    pub fn rst(&self) -> bool {
        self.flags.contains(TcpFlags::RST)
    }
    pub fn has_ack(&self) -> bool {
        self.flags.contains(TcpFlags::ACK)
    }
    /// Sequence space occupied: payload plus one each for SYN and FIN.
    pub fn seg_len(&self) -> u32 {
        self.payload_len + u32::from(self.syn()) + u32::from(self.fin())
    }
}

/// Reads a packet for Snoop: the fixed headers through [`crate::triage`], then the options walked for
/// validity with only the timestamps kept.
pub(super) fn classify(bytes: &[u8]) -> Class<Segment> {
    crate::triage::classify(bytes, |ip, tcp| {
        let hl = tcp.header_len();
        let timestamps = if hl > TCP_HEADER_LEN { walk_options(&ip.payload()[TCP_HEADER_LEN..hl]).ok()? } else { None };
        Some(Segment {
            src: ip.src_addr(),
            dst: ip.dst_addr(),
            src_port: tcp.src_port(),
            dst_port: tcp.dst_port(),
            seq: tcp.seq_number(),
            ack: tcp.ack_number(),
            flags: tcp.flags(),
            window: tcp.window_len(),
            payload_len: (ip.payload().len() - hl) as u32,
            timestamps,
        })
    })
}

/// Walks the option list checking kinds and lengths (the same rules as `lasthop_wire::TcpOption::parse`,
/// without building values): every option fits, has length >= 2, and the known kinds have their fixed
/// lengths. Returns the timestamps option if there is one.
fn walk_options(mut opts: &[u8]) -> Result<Option<(u32, u32)>, ()> {
    let mut ts = None;
    while let Some(&kind) = opts.first() {
        match kind {
            option_kind::END => break,
            option_kind::NOP => opts = &opts[1..],
            _ => {
                let Some(&len) = opts.get(1) else { return Err(()) };
                let len = usize::from(len);
                if len < 2 || len > opts.len() {
                    return Err(());
                }
                let ok = match kind {
                    option_kind::MSS => len == 4,
                    option_kind::WINDOW_SCALE => len == 3,
                    option_kind::SACK_PERMITTED => len == 2,
                    option_kind::TIMESTAMPS => {
                        if len == 10 {
                            let v = |i: usize| u32::from_be_bytes([opts[i], opts[i + 1], opts[i + 2], opts[i + 3]]);
                            ts = Some((v(2), v(6)));
                        }
                        len == 10
                    }
                    option_kind::SACK => len > 2 && (len - 2) % 8 == 0 && (len - 2) / 8 <= 4,
                    _ => true,
                };
                if !ok {
                    return Err(());
                }
                opts = &opts[len..];
            }
        }
    }
    Ok(ts)
}

/// What `on_transmit` needs of a packet: its connection and the sequence space its data occupies. A cheap
/// read of the fixed header fields (the packet was validated by `classify` when it came in, but a host may
/// report any frame, so every length is checked). `None` for anything but an unfragmented IPv4/TCP packet
/// carrying data or a FIN.
pub(super) fn peek_data(b: &[u8]) -> Option<(Ipv4Addr, u16, Ipv4Addr, u16, SeqNum, u32)> {
    if b.len() < 40 || b[0] >> 4 != 4 || b[9] != PROTO_TCP {
        return None;
    }
    let ihl = usize::from(b[0] & 0x0f) * 4;
    let total = usize::from(u16::from_be_bytes([b[2], b[3]]));
    // Fragment offset or more-fragments set.
    if ihl < 20 || total > b.len() || total < ihl + TCP_HEADER_LEN || u16::from_be_bytes([b[6], b[7]]) & 0x3fff != 0 {
        return None;
    }
    let t = &b[ihl..total];
    let doff = usize::from(t[12] >> 4) * 4;
    if doff < TCP_HEADER_LEN || doff > t.len() {
        return None;
    }
    let flags = t[13];
    let len = (t.len() - doff) as u32 + u32::from(flags & 0x01 != 0) + u32::from(flags & 0x02 != 0);
    if len == 0 {
        return None;
    }
    let ip = |i: usize| Ipv4Addr::new(b[i], b[i + 1], b[i + 2], b[i + 3]);
    let port = |i: usize| u16::from_be_bytes([t[i], t[i + 1]]);
    let seq = SeqNum(u32::from_be_bytes([t[4], t[5], t[6], t[7]]));
    Some((ip(12), port(0), ip(16), port(2), seq, len))
}

//! The one parse Snoop does per packet: validate the IPv4 and TCP headers (so nothing downstream can
//! panic on untrusted bytes) and copy out the handful of fields the state machine reads.
//!
//! TCP options are *walked* for validity (kind and length) and only one is read on the way: the timestamps,
//! which Snoop repeats in a regenerated ACK (§3.1.1 case 2). Keeping the two numbers is cheaper than keeping
//! a reference to the mobile's last packet (two atomic operations per ACK).

pub(super) use crate::triage::Class;
use crate::Side;
use lasthop_wire::ipv4::{HEADER_LEN as IPV4_HEADER_LEN, PROTO_TCP};
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

/// Reads a packet for Snoop: the checks of [`crate::triage::classify`] (with those of
/// `Ipv4Packet::check_len` and `TcpPacket::check_len`), in the same order and with the same outcome for every
/// input, done on the raw bytes with one length check per header; then the options walked for validity with
/// only the timestamps kept. (`tests::classify_agrees_with_triage` holds the two to the same answers.)
#[inline]
pub(super) fn classify(b: &[u8]) -> Class<Segment> {
    let Some(h) = b.first_chunk::<IPV4_HEADER_LEN>() else { return Class::Malformed };
    if h[0] >> 4 != 4 {
        return Class::Malformed;
    }
    let ihl = usize::from(h[0] & 0x0f) * 4;
    let total = usize::from(u16::from_be_bytes([h[2], h[3]]));
    if ihl < IPV4_HEADER_LEN || total < ihl || b.len() < total {
        return Class::Malformed;
    }
    // Fragment offset or more-fragments set.
    if u16::from_be_bytes([h[6], h[7]]) & 0x3fff != 0 {
        return Class::Fragment;
    }
    if h[9] != PROTO_TCP {
        return Class::NotTcp;
    }
    let tcp = &b[ihl..total];
    let Some(t) = tcp.first_chunk::<TCP_HEADER_LEN>() else { return Class::Malformed };
    let hl = usize::from(t[12] >> 4) * 4;
    if hl < TCP_HEADER_LEN || tcp.len() < hl {
        return Class::Malformed;
    }
    let timestamps = if hl > TCP_HEADER_LEN {
        match walk_options(&tcp[TCP_HEADER_LEN..hl]) {
            Ok(ts) => ts,
            Err(()) => return Class::Malformed,
        }
    } else {
        None
    };
    Class::Tcp(Segment {
        src: Ipv4Addr::new(h[12], h[13], h[14], h[15]),
        dst: Ipv4Addr::new(h[16], h[17], h[18], h[19]),
        src_port: u16::from_be_bytes([t[0], t[1]]),
        dst_port: u16::from_be_bytes([t[2], t[3]]),
        seq: SeqNum(u32::from_be_bytes([t[4], t[5], t[6], t[7]])),
        ack: SeqNum(u32::from_be_bytes([t[8], t[9], t[10], t[11]])),
        flags: TcpFlags(t[13]),
        window: u16::from_be_bytes([t[14], t[15]]),
        payload_len: (tcp.len() - hl) as u32,
        timestamps,
    })
}

/// The same reading through the checked views of `lasthop_wire` and [`crate::triage::classify`]: the
/// reference [`classify`] is held to.
#[cfg(test)]
pub(super) fn classify_by_views(bytes: &[u8]) -> Class<Segment> {
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

/// What `handle_transmit` needs of a packet: its connection (the FH→MH key packed as the table keys it,
/// [`pack_key`]) and the sequence space its data occupies. A cheap read of the fixed header fields (the packet
/// was validated by `classify` when it came in, but a host may report any frame, so every length is checked,
/// the fixed ones at once). `None` for anything but an unfragmented IPv4/TCP packet carrying data or a FIN.
#[inline]
pub(super) fn peek_data(b: &[u8]) -> Option<(u128, SeqNum, u32)> {
    let h = b.first_chunk::<{ IPV4_HEADER_LEN + TCP_HEADER_LEN }>()?;
    if h[0] >> 4 != 4 || h[9] != PROTO_TCP {
        return None;
    }
    let ihl = usize::from(h[0] & 0x0f) * 4;
    let total = usize::from(u16::from_be_bytes([h[2], h[3]]));
    // Fragment offset or more-fragments set.
    if ihl < IPV4_HEADER_LEN
        || total > b.len()
        || total < ihl + TCP_HEADER_LEN
        || u16::from_be_bytes([h[6], h[7]]) & 0x3fff != 0
    {
        return None;
    }
    let seg = &b[ihl..total];
    let t = seg.first_chunk::<TCP_HEADER_LEN>()?;
    let doff = usize::from(t[12] >> 4) * 4;
    if doff < TCP_HEADER_LEN || doff > seg.len() {
        return None;
    }
    let flags = t[13];
    let len = (seg.len() - doff) as u32 + u32::from(flags & 0x01 != 0) + u32::from(flags & 0x02 != 0);
    if len == 0 {
        return None;
    }
    let key = pack_key(
        u32::from_be_bytes([h[12], h[13], h[14], h[15]]),
        u16::from_be_bytes([t[0], t[1]]),
        u32::from_be_bytes([h[16], h[17], h[18], h[19]]),
        u16::from_be_bytes([t[2], t[3]]),
    );
    Some((key, SeqNum(u32::from_be_bytes([t[4], t[5], t[6], t[7]])), len))
}

/// The table key of a packet travelling toward `side` (packed as [`pack_key`], FH→MH), read with only the
/// checks that keep the read in bounds: for [`Snoop::prefetch`](super::Snoop), a hint, where a wrong key
/// costs a useless prefetch and nothing else. `None` if the bytes cannot hold IPv4 and TCP ports.
#[inline]
pub(super) fn peek_key(side: Side, b: &[u8]) -> Option<u128> {
    let h = b.first_chunk::<IPV4_HEADER_LEN>()?;
    if h[0] >> 4 != 4 || h[9] != PROTO_TCP {
        return None;
    }
    let t = b.get(usize::from(h[0] & 0x0f) * 4..)?.first_chunk::<4>()?;
    let (src, dst) =
        (u32::from_be_bytes([h[12], h[13], h[14], h[15]]), u32::from_be_bytes([h[16], h[17], h[18], h[19]]));
    let (src_port, dst_port) = (u16::from_be_bytes([t[0], t[1]]), u16::from_be_bytes([t[2], t[3]]));
    Some(match side {
        Side::ToMobile => pack_key(src, src_port, dst, dst_port),
        Side::ToWired => pack_key(dst, dst_port, src, src_port),
    })
}

/// A 4-tuple packed into 96 bits (addresses as big-endian `u32`s): one `write_u128` to hash, one compare
/// to match. The connection table's key.
pub(super) fn pack_key(src: u32, src_port: u16, dst: u32, dst_port: u16) -> u128 {
    (u128::from(src) << 64) | (u128::from(dst) << 32) | (u128::from(src_port) << 16) | u128::from(dst_port)
}

/// [`peek_data`] as first written, through `Ipv4Addr`s and per-byte indexing: the reference the fast one is
/// held to.
#[cfg(test)]
pub(super) fn peek_data_reference(b: &[u8]) -> Option<(u128, SeqNum, u32)> {
    if b.len() < 40 || b[0] >> 4 != 4 || b[9] != PROTO_TCP {
        return None;
    }
    let ihl = usize::from(b[0] & 0x0f) * 4;
    let total = usize::from(u16::from_be_bytes([b[2], b[3]]));
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
    let key = crate::flow::FlowKey { src: ip(12), src_port: port(0), dst: ip(16), dst_port: port(2) };
    let seq = SeqNum(u32::from_be_bytes([t[4], t[5], t[6], t[7]]));
    Some((pack_key(u32::from(key.src), key.src_port, u32::from(key.dst), key.dst_port), seq, len))
}

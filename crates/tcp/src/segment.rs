//! Reading an incoming IPv4 packet as a segment of one connection, shared by both endpoints. Anything
//! unreadable is reported as malformed rather than panicking: packets may come from a lossy, corrupting
//! channel model.

use bytes::Bytes;
use lasthop_wire::ipv4::PROTO_TCP;
use lasthop_wire::{checksum, Headers, SeqNum, TcpPacket, TcpRepr};
use std::net::SocketAddrV4;

pub(crate) struct Incoming {
    pub repr: TcpRepr,
    /// The payload as a zero-copy slice of the packet.
    pub payload: Bytes,
}

pub(crate) enum Parsed {
    Segment(Incoming),
    /// Well-formed but for another connection.
    Foreign,
    Malformed,
}

/// The segment of this connection in `packet`, whose headers were read as `headers`: `None` for another
/// connection's packet, and for an unreadable one, which is also counted in `malformed` (both endpoints'
/// `handle_packet` start here).
pub(crate) fn parse_counted(
    packet: &Bytes,
    headers: &Headers,
    local: SocketAddrV4,
    remote: SocketAddrV4,
    malformed: &mut u64,
) -> Option<Incoming> {
    match parse(packet, headers, local, remote) {
        Parsed::Segment(s) => Some(s),
        Parsed::Foreign => None,
        Parsed::Malformed => {
            *malformed += 1;
            None
        }
    }
}

/// Reads `packet` (headers read as `h`) as a segment from `remote` to `local`, verifying both checksums.
pub(crate) fn parse(packet: &Bytes, h: &Headers, local: SocketAddrV4, remote: SocketAddrV4) -> Parsed {
    // Headers read from other bytes than these would be a defect of the host: malformed, not a panic.
    let (Some(ip_header), Some(segment)) = (packet.get(..usize::from(h.ip_header_len)), packet.get(h.segment_range()))
    else {
        return Parsed::Malformed;
    };
    if h.protocol != PROTO_TCP || h.fragment || checksum::fold(checksum::sum(ip_header)) != 0xffff {
        return Parsed::Malformed;
    }
    let Some(t) = &h.tcp else { return Parsed::Malformed };
    if h.src != *remote.ip() || h.dst != *local.ip() || t.src_port != remote.port() || t.dst_port != local.port() {
        return Parsed::Foreign;
    }
    if !TcpPacket::new_unchecked(segment).verify_checksum(h.src, h.dst) {
        return Parsed::Malformed;
    }
    let Ok(repr) = TcpRepr::from_header(t, segment) else { return Parsed::Malformed };
    let payload = packet.slice(usize::from(h.ip_header_len) + usize::from(t.header_len)..usize::from(h.total_len));
    Parsed::Segment(Incoming { repr, payload })
}

/// The headers of `packet`, for the endpoints' `handle_packet`; `None` (counted in `malformed`) when the
/// IPv4 header does not read.
pub(crate) fn headers_counted(packet: &[u8], malformed: &mut u64) -> Option<Headers> {
    let h = Headers::parse(packet).ok();
    if h.is_none() {
        *malformed += 1;
    }
    h
}

/// The wire sequence number of 64-bit offset `off` from `base`.
pub(crate) fn seq_at(base: SeqNum, off: u64) -> SeqNum {
    base.add(off as u32)
}

/// The 64-bit offset of `seq`, taken as the one nearest to the known offset `near` (whose sequence
/// number is `seq_at(base, near)`); negative when `seq` lies before `base`.
pub(crate) fn signed_offset_of(base: SeqNum, near: u64, seq: SeqNum) -> i64 {
    (near as i64).saturating_add(i64::from(seq.diff(seq_at(base, near))))
}

/// [`signed_offset_of`] with offsets before `base` clamped to zero; for ACK fields, where anything at
/// or before the ISN is simply old.
pub(crate) fn offset_of(base: SeqNum, near: u64, seq: SeqNum) -> u64 {
    signed_offset_of(base, near, seq).max(0) as u64
}

/// Current time in milliseconds for the timestamp option (Linux's `tcp_time_stamp`, 1 ms ticks).
pub(crate) fn ts_now(now: lasthop_wire::Time) -> u32 {
    (now.as_nanos() / 1_000_000) as u32
}

//! Reading an incoming IPv4 packet as a segment of one connection, shared by both endpoints. Anything
//! unreadable is reported as malformed rather than panicking: packets may come from a lossy, corrupting
//! channel model.

use bytes::Bytes;
use lasthop_wire::ipv4::PROTO_TCP;
use lasthop_wire::{Ipv4Packet, SeqNum, TcpPacket, TcpRepr};
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

/// Parses `packet` as a segment from `remote` to `local`, verifying both checksums.
/// The segment of this connection in `packet`: `None` for another connection's packet, and for an
/// unreadable one, which is also counted in `malformed` (both endpoints' `handle_packet` start here).
pub(crate) fn parse_counted(
    packet: &Bytes,
    local: SocketAddrV4,
    remote: SocketAddrV4,
    malformed: &mut u64,
) -> Option<Incoming> {
    match parse(packet, local, remote) {
        Parsed::Segment(s) => Some(s),
        Parsed::Foreign => None,
        Parsed::Malformed => {
            *malformed += 1;
            None
        }
    }
}

pub(crate) fn parse(packet: &Bytes, local: SocketAddrV4, remote: SocketAddrV4) -> Parsed {
    let Ok(ip) = Ipv4Packet::new_checked(&packet[..]) else { return Parsed::Malformed };
    if ip.protocol() != PROTO_TCP || ip.is_fragment() || !ip.verify_checksum() {
        return Parsed::Malformed;
    }
    let range = ip.payload_range();
    let Ok(tcp) = TcpPacket::new_checked(&packet[range.clone()]) else { return Parsed::Malformed };
    if ip.src_addr() != *remote.ip()
        || ip.dst_addr() != *local.ip()
        || tcp.src_port() != remote.port()
        || tcp.dst_port() != local.port()
    {
        return Parsed::Foreign;
    }
    if !tcp.verify_checksum(ip.src_addr(), ip.dst_addr()) {
        return Parsed::Malformed;
    }
    let Ok(repr) = TcpRepr::parse(&tcp) else { return Parsed::Malformed };
    let payload = packet.slice(range.start + tcp.header_len()..range.end);
    Parsed::Segment(Incoming { repr, payload })
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

/// Current time in milliseconds for the timestamp option; only carried, never interpreted.
pub(crate) fn ts_now(now: lasthop_wire::Time) -> u32 {
    (now.as_nanos() / 1_000_000) as u32
}

//! A packet's IPv4 and TCP headers read once: the offsets and fields that every step of one hop reads (the
//! simulator's routing, its delivery to an endpoint, the endpoint's TCP), checked exactly as
//! [`Ipv4Packet::new_checked`](crate::Ipv4Packet::new_checked) and
//! [`TcpPacket::new_checked`](crate::TcpPacket::new_checked) check them, so that a hop parses a packet once
//! and hands the result on beside the bytes. Checksums are not verified here: whoever accepts the bytes
//! as its own (an endpoint) still does.

use crate::ipv4::{HEADER_LEN as IPV4_HEADER_LEN, PROTO_TCP};
use crate::seq::SeqNum;
use crate::tcp::{TcpFlags, HEADER_LEN as TCP_HEADER_LEN};
use crate::{Result, WireError};
use std::net::Ipv4Addr;

/// The IPv4 header's fields, and the TCP header's if the packet carries one that reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Headers {
    pub src: Ipv4Addr,
    pub dst: Ipv4Addr,
    pub protocol: u8,
    /// The IPv4 header's length in bytes (where the payload starts).
    pub ip_header_len: u8,
    /// The IPv4 total length: the packet's bytes beyond it are not the packet's.
    pub total_len: u16,
    /// More fragments set or a non-zero fragment offset.
    pub fragment: bool,
    /// For protocol TCP (fragment or not) whose TCP header passes `TcpPacket::check_len` over the IPv4
    /// payload; `None` otherwise.
    pub tcp: Option<TcpHeader>,
}

/// The fixed TCP header's fields, and the length of the header with its options.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TcpHeader {
    pub src_port: u16,
    pub dst_port: u16,
    pub seq: SeqNum,
    /// The acknowledgment field, whether or not ACK is set.
    pub ack: SeqNum,
    pub flags: TcpFlags,
    /// The data offset byte's reserved bits, where the ELN bit lives ([`crate::tcp::ELN_MASK`]).
    pub offset_byte: u8,
    pub window: u16,
    /// The TCP header's length in bytes, options included.
    pub header_len: u8,
}

impl Headers {
    /// Reads the headers of the IPv4 packet `b`: the errors of `Ipv4Packet::new_checked` for the IPv4
    /// header; a TCP header that does not read leaves [`Headers::tcp`] empty. Never panics.
    #[inline]
    pub fn parse(b: &[u8]) -> Result<Headers> {
        let mut h = Headers::parse_ipv4(b)?;
        h.read_tcp(b);
        Ok(h)
    }

    /// [`Headers::parse`] of the IPv4 header alone, [`Headers::tcp`] left empty: for a hop that may pass the
    /// packet on without reading further (a router), which reads the TCP header with [`Headers::read_tcp`]
    /// once it needs it.
    #[inline]
    pub fn parse_ipv4(b: &[u8]) -> Result<Headers> {
        let Some(h) = b.first_chunk::<IPV4_HEADER_LEN>() else { return Err(WireError::Truncated) };
        if h[0] >> 4 != 4 {
            return Err(WireError::Malformed);
        }
        let ihl = usize::from(h[0] & 0x0f) * 4;
        let total = usize::from(u16::from_be_bytes([h[2], h[3]]));
        if ihl < IPV4_HEADER_LEN || total < ihl {
            return Err(WireError::Malformed);
        }
        if b.len() < total {
            return Err(WireError::Truncated);
        }
        Ok(Headers {
            src: Ipv4Addr::new(h[12], h[13], h[14], h[15]),
            dst: Ipv4Addr::new(h[16], h[17], h[18], h[19]),
            protocol: h[9],
            ip_header_len: ihl as u8,
            total_len: total as u16,
            fragment: u16::from_be_bytes([h[6], h[7]]) & 0x3fff != 0,
            tcp: None,
        })
    }

    /// Reads the TCP header of `b` (the packet whose IPv4 header these headers are) into [`Headers::tcp`],
    /// for protocol TCP; empty if it does not read (or `b` is not that packet).
    #[inline]
    pub fn read_tcp(&mut self, b: &[u8]) {
        self.tcp =
            if self.protocol == PROTO_TCP { b.get(self.segment_range()).and_then(TcpHeader::parse) } else { None };
    }

    /// Where the TCP segment (header and payload) lies in the packet: from the end of the IPv4 header to
    /// the total length.
    pub fn segment_range(&self) -> core::ops::Range<usize> {
        usize::from(self.ip_header_len)..usize::from(self.total_len)
    }
}

impl TcpHeader {
    /// The checks of `TcpPacket::check_len` on `segment` (the IPv4 payload), then the fixed fields.
    #[inline]
    fn parse(segment: &[u8]) -> Option<TcpHeader> {
        let t = segment.first_chunk::<TCP_HEADER_LEN>()?;
        let hl = usize::from(t[12] >> 4) * 4;
        if hl < TCP_HEADER_LEN || segment.len() < hl {
            return None;
        }
        Some(TcpHeader {
            src_port: u16::from_be_bytes([t[0], t[1]]),
            dst_port: u16::from_be_bytes([t[2], t[3]]),
            seq: SeqNum(u32::from_be_bytes([t[4], t[5], t[6], t[7]])),
            ack: SeqNum(u32::from_be_bytes([t[8], t[9], t[10], t[11]])),
            flags: TcpFlags(t[13]),
            offset_byte: t[12],
            window: u16::from_be_bytes([t[14], t[15]]),
            header_len: hl as u8,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Ipv4Packet, TcpPacket, TcpRepr};

    /// What the checked views read from `b`, in the form of [`Headers`].
    fn by_views(b: &[u8]) -> Result<Headers> {
        let ip = Ipv4Packet::new_checked(b)?;
        let tcp = (ip.protocol() == PROTO_TCP).then(|| TcpPacket::new_checked(ip.payload()).ok()).flatten().map(|t| {
            TcpHeader {
                src_port: t.src_port(),
                dst_port: t.dst_port(),
                seq: t.seq_number(),
                ack: t.ack_number(),
                flags: t.flags(),
                offset_byte: b[ip.header_len() + 12],
                window: t.window_len(),
                header_len: t.header_len() as u8,
            }
        });
        Ok(Headers {
            src: ip.src_addr(),
            dst: ip.dst_addr(),
            protocol: ip.protocol(),
            ip_header_len: ip.header_len() as u8,
            total_len: ip.total_len(),
            fragment: ip.is_fragment(),
            tcp,
        })
    }

    #[test]
    fn a_segment_reads_as_the_views_read_it() {
        let a = Ipv4Addr::new(10, 0, 0, 1);
        let b = Ipv4Addr::new(10, 1, 0, 1);
        let repr = TcpRepr {
            src_port: 20_000,
            dst_port: 5001,
            seq: SeqNum(7),
            ack: Some(SeqNum(9)),
            window: 512,
            timestamps: Some((1, 2)),
            eln: true,
            ..TcpRepr::default()
        };
        let p = repr.emit_ipv4(a, b, 3, 64, b"payload");
        let h = Headers::parse(&p).unwrap();
        assert_eq!(Ok(h), by_views(&p));
        let t = h.tcp.unwrap();
        assert_eq!((h.src, h.dst, t.src_port, t.dst_port, t.header_len), (a, b, 20_000, 5001, 32));
        assert_eq!(&p[h.segment_range()][usize::from(t.header_len)..], b"payload");
    }

    proptest::proptest! {
        /// Any bytes at all (and a segment with any byte changed): the same answer as the checked views,
        /// never a panic.
        #[test]
        fn agrees_with_the_checked_views(data in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..80),
                                         at in 0usize..60, byte in proptest::prelude::any::<u8>()) {
            proptest::prop_assert_eq!(Headers::parse(&data), by_views(&data));
            let mut seg = TcpRepr { src_port: 1, dst_port: 2, ..TcpRepr::default() }
                .emit_ipv4(Ipv4Addr::new(1, 2, 3, 4), Ipv4Addr::new(5, 6, 7, 8), 1, 64, &data)
                .to_vec();
            let at = at % seg.len();
            seg[at] = byte;
            proptest::prop_assert_eq!(Headers::parse(&seg), by_views(&seg));
        }
    }
}

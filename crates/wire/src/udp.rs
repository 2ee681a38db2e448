//! UDP header view and builder (RFC 768), with the IPv4 pseudo-header checksum. Mobile IP's control
//! messages (registration, binding updates: Eom 2002 §2.1) travel over UDP port 434.

use crate::checksum;
use crate::ipv4::{Ipv4Repr, HEADER_LEN as IPV4_HEADER_LEN, PROTO_UDP};
use crate::{Result, WireError};
use bytes::{BufMut, Bytes, BytesMut};
use std::net::Ipv4Addr;

mod field {
    pub type Field = core::ops::Range<usize>;
    pub const SRC_PORT: Field = 0..2;
    pub const DST_PORT: Field = 2..4;
    pub const LENGTH: Field = 4..6;
    pub const CHECKSUM: Field = 6..8;
}

pub const HEADER_LEN: usize = 8;

/// A read view of a UDP datagram (header and payload, without the IP header).
#[derive(Debug, Clone)]
pub struct UdpPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> UdpPacket<T> {
    pub const fn new_unchecked(buffer: T) -> Self {
        UdpPacket { buffer }
    }

    /// Wraps after [`check_len`](Self::check_len): no accessor panics afterwards.
    pub fn new_checked(buffer: T) -> Result<Self> {
        let p = Self::new_unchecked(buffer);
        p.check_len()?;
        Ok(p)
    }

    /// At least a header, and a length field between 8 and the buffer's length.
    pub fn check_len(&self) -> Result<()> {
        let data = self.buffer.as_ref();
        if data.len() < HEADER_LEN {
            return Err(WireError::Truncated);
        }
        let len = usize::from(self.len());
        if len < HEADER_LEN {
            return Err(WireError::Malformed);
        }
        if data.len() < len {
            return Err(WireError::Truncated);
        }
        Ok(())
    }

    fn u16_at(&self, f: field::Field) -> u16 {
        u16::from_be_bytes(self.buffer.as_ref()[f].try_into().unwrap())
    }
    pub fn src_port(&self) -> u16 {
        self.u16_at(field::SRC_PORT)
    }
    pub fn dst_port(&self) -> u16 {
        self.u16_at(field::DST_PORT)
    }
    /// Header plus payload, in bytes, as the header says.
    #[allow(clippy::len_without_is_empty)]
    pub fn len(&self) -> u16 {
        self.u16_at(field::LENGTH)
    }
    pub fn checksum(&self) -> u16 {
        self.u16_at(field::CHECKSUM)
    }
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[HEADER_LEN..usize::from(self.len())]
    }

    /// A zero checksum means "none computed" (RFC 768) and is accepted; any other must verify.
    pub fn verify_checksum(&self, src: Ipv4Addr, dst: Ipv4Addr) -> bool {
        if self.checksum() == 0 {
            return true;
        }
        let data = &self.buffer.as_ref()[..usize::from(self.len())];
        let acc = checksum::pseudo_header(src.octets(), dst.octets(), PROTO_UDP, self.len()) + checksum::sum(data);
        checksum::fold(acc) == 0xffff
    }
}

/// The fields of a UDP header lasthop sets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UdpRepr {
    pub src_port: u16,
    pub dst_port: u16,
}

impl UdpRepr {
    /// A whole IPv4 packet carrying `payload`, both checksums filled in.
    pub fn emit_ipv4(&self, src: Ipv4Addr, dst: Ipv4Addr, ident: u16, ttl: u8, payload: &[u8]) -> Bytes {
        let udp_len = HEADER_LEN + payload.len();
        let ip = Ipv4Repr { src, dst, protocol: PROTO_UDP, ident, ttl, payload_len: udp_len };
        let mut buf = BytesMut::with_capacity(ip.buffer_len());
        buf.put_bytes(0, IPV4_HEADER_LEN);
        ip.emit(&mut buf[..IPV4_HEADER_LEN]);
        buf.put_u16(self.src_port);
        buf.put_u16(self.dst_port);
        buf.put_u16(udp_len as u16);
        buf.put_u16(0);
        buf.put_slice(payload);
        let seg = &mut buf[IPV4_HEADER_LEN..];
        let acc = checksum::pseudo_header(src.octets(), dst.octets(), PROTO_UDP, udp_len as u16) + checksum::sum(seg);
        // RFC 768: a computed checksum of zero is sent as all ones.
        let c = match !checksum::fold(acc) {
            0 => 0xffff,
            c => c,
        };
        seg[field::CHECKSUM].copy_from_slice(&c.to_be_bytes());
        buf.freeze()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ipv4::Ipv4Packet;

    const A: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
    const B: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 2);

    // Header of a datagram 434 -> 434, 12 bytes long, checksum 0 ("none").
    static DATAGRAM: [u8; 12] = [0x01, 0xb2, 0x01, 0xb2, 0x00, 0x0c, 0x00, 0x00, 1, 2, 3, 4];

    #[test]
    fn deconstruct() {
        let p = UdpPacket::new_checked(&DATAGRAM[..]).unwrap();
        assert_eq!((p.src_port(), p.dst_port(), p.len()), (434, 434, 12));
        assert_eq!(p.payload(), &[1, 2, 3, 4]);
        assert!(p.verify_checksum(A, B), "a zero checksum is 'not computed'");
    }

    #[test]
    fn construct_round_trip_and_checksum() {
        let pkt = UdpRepr { src_port: 434, dst_port: 434 }.emit_ipv4(A, B, 7, 64, b"hello");
        let ip = Ipv4Packet::new_checked(&pkt[..]).unwrap();
        assert!(ip.verify_checksum());
        assert_eq!(ip.protocol(), PROTO_UDP);
        let udp = UdpPacket::new_checked(ip.payload()).unwrap();
        assert_eq!(&ip.payload()[..4], &DATAGRAM[..4]);
        assert_ne!(udp.checksum(), 0);
        assert!(udp.verify_checksum(A, B));
        assert!(!udp.verify_checksum(A, Ipv4Addr::new(10, 0, 0, 3)), "the pseudo-header is covered");
        assert_eq!(udp.payload(), b"hello");
        let mut bad = ip.payload().to_vec();
        bad[9] ^= 1;
        assert!(!UdpPacket::new_checked(&bad[..]).unwrap().verify_checksum(A, B));
    }

    #[test]
    fn truncated_and_malformed() {
        assert_eq!(UdpPacket::new_checked(&DATAGRAM[..7]).unwrap_err(), WireError::Truncated);
        assert_eq!(UdpPacket::new_checked(&DATAGRAM[..11]).unwrap_err(), WireError::Truncated);
        let mut short = DATAGRAM;
        short[5] = 7;
        assert_eq!(UdpPacket::new_checked(&short[..]).unwrap_err(), WireError::Malformed);
    }
}

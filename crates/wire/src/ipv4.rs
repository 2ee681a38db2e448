//! IPv4 header view and builder (RFC 791). Options are carried but not interpreted.

use crate::checksum;
use crate::{Result, WireError};
use std::net::Ipv4Addr;

mod field {
    pub type Field = core::ops::Range<usize>;
    pub const VER_IHL: usize = 0;
    pub const TOS: usize = 1;
    pub const LENGTH: Field = 2..4;
    pub const IDENT: Field = 4..6;
    pub const FLG_OFF: Field = 6..8;
    pub const TTL: usize = 8;
    pub const PROTOCOL: usize = 9;
    pub const CHECKSUM: Field = 10..12;
    pub const SRC: Field = 12..16;
    pub const DST: Field = 16..20;
}

pub const HEADER_LEN: usize = 20;
pub use crate::proto::{IPIP as PROTO_IPIP, TCP as PROTO_TCP, UDP as PROTO_UDP};

/// A read (and, over `AsMut`, write) view of an IPv4 packet.
#[derive(Debug, Clone)]
pub struct Ipv4Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Ipv4Packet<T> {
    /// Wraps without checking; accessors may panic on short buffers. Use for packets built here.
    pub const fn new_unchecked(buffer: T) -> Self {
        Ipv4Packet { buffer }
    }

    /// Wraps after [`check_len`](Self::check_len): no accessor panics afterwards.
    pub fn new_checked(buffer: T) -> Result<Self> {
        let p = Self::new_unchecked(buffer);
        p.check_len()?;
        Ok(p)
    }

    /// Version 4, a header length of at least 20 bytes, and a total length that fits the buffer.
    pub fn check_len(&self) -> Result<()> {
        let data = self.buffer.as_ref();
        if data.len() < HEADER_LEN {
            return Err(WireError::Truncated);
        }
        if data[field::VER_IHL] >> 4 != 4 {
            return Err(WireError::Malformed);
        }
        let hl = self.header_len();
        let tl = self.total_len() as usize;
        if hl < HEADER_LEN || tl < hl {
            return Err(WireError::Malformed);
        }
        if data.len() < tl {
            return Err(WireError::Truncated);
        }
        Ok(())
    }

    pub fn into_inner(self) -> T {
        self.buffer
    }
    pub fn header_len(&self) -> usize {
        usize::from(self.buffer.as_ref()[field::VER_IHL] & 0x0f) * 4
    }
    pub fn total_len(&self) -> u16 {
        u16::from_be_bytes(self.buffer.as_ref()[field::LENGTH].try_into().unwrap())
    }
    pub fn ident(&self) -> u16 {
        u16::from_be_bytes(self.buffer.as_ref()[field::IDENT].try_into().unwrap())
    }
    pub fn dont_frag(&self) -> bool {
        self.buffer.as_ref()[field::FLG_OFF.start] & 0x40 != 0
    }
    /// True for a fragment (MF set or a non-zero offset); lasthop's agents pass fragments through untouched.
    pub fn is_fragment(&self) -> bool {
        let v = u16::from_be_bytes(self.buffer.as_ref()[field::FLG_OFF].try_into().unwrap());
        v & 0x3fff != 0
    }
    pub fn ttl(&self) -> u8 {
        self.buffer.as_ref()[field::TTL]
    }
    pub fn protocol(&self) -> u8 {
        self.buffer.as_ref()[field::PROTOCOL]
    }
    pub fn checksum(&self) -> u16 {
        u16::from_be_bytes(self.buffer.as_ref()[field::CHECKSUM].try_into().unwrap())
    }
    pub fn src_addr(&self) -> Ipv4Addr {
        let b: [u8; 4] = self.buffer.as_ref()[field::SRC].try_into().unwrap();
        Ipv4Addr::from(b)
    }
    pub fn dst_addr(&self) -> Ipv4Addr {
        let b: [u8; 4] = self.buffer.as_ref()[field::DST].try_into().unwrap();
        Ipv4Addr::from(b)
    }
    pub fn verify_checksum(&self) -> bool {
        checksum::fold(checksum::sum(&self.buffer.as_ref()[..self.header_len()])) == 0xffff
    }
    /// The bytes after the header, up to the total length.
    pub fn payload(&self) -> &[u8] {
        let data = self.buffer.as_ref();
        &data[self.header_len()..self.total_len() as usize]
    }
    /// Byte range of the payload within the buffer (for zero-copy slicing of `Bytes`).
    pub fn payload_range(&self) -> core::ops::Range<usize> {
        self.header_len()..self.total_len() as usize
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Ipv4Packet<T> {
    pub fn set_ident(&mut self, v: u16) {
        self.buffer.as_mut()[field::IDENT].copy_from_slice(&v.to_be_bytes());
    }
    pub fn set_ttl(&mut self, v: u8) {
        self.buffer.as_mut()[field::TTL] = v;
    }
    pub fn set_src_addr(&mut self, a: Ipv4Addr) {
        self.buffer.as_mut()[field::SRC].copy_from_slice(&a.octets());
    }
    pub fn set_dst_addr(&mut self, a: Ipv4Addr) {
        self.buffer.as_mut()[field::DST].copy_from_slice(&a.octets());
    }
    pub fn fill_checksum(&mut self) {
        let hl = self.header_len();
        let data = self.buffer.as_mut();
        data[field::CHECKSUM].copy_from_slice(&[0, 0]);
        let c = checksum::checksum(&data[..hl]);
        data[field::CHECKSUM].copy_from_slice(&c.to_be_bytes());
    }
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let r = self.payload_range();
        &mut self.buffer.as_mut()[r]
    }
}

/// The fields lasthop sets when it builds an IPv4 header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ipv4Repr {
    pub src: Ipv4Addr,
    pub dst: Ipv4Addr,
    pub protocol: u8,
    pub ident: u16,
    pub ttl: u8,
    pub payload_len: usize,
}

impl Ipv4Repr {
    pub fn buffer_len(&self) -> usize {
        HEADER_LEN + self.payload_len
    }

    /// Writes a 20-byte header with DF set and a correct checksum into `buf[..20]`.
    pub fn emit(&self, buf: &mut [u8]) {
        // Bounds checked once, so the fields below are written without a check each.
        let buf: &mut [u8; HEADER_LEN] = buf.first_chunk_mut().expect("room for a 20-byte header");
        let total = (HEADER_LEN + self.payload_len) as u16;
        buf[field::VER_IHL] = 0x45;
        buf[field::TOS] = 0;
        buf[field::LENGTH].copy_from_slice(&total.to_be_bytes());
        buf[field::IDENT].copy_from_slice(&self.ident.to_be_bytes());
        buf[field::FLG_OFF].copy_from_slice(&0x4000u16.to_be_bytes());
        buf[field::TTL] = self.ttl;
        buf[field::PROTOCOL] = self.protocol;
        buf[field::SRC].copy_from_slice(&self.src.octets());
        buf[field::DST].copy_from_slice(&self.dst.octets());
        buf[field::CHECKSUM].copy_from_slice(&[0, 0]);
        let c = checksum::checksum(buf);
        buf[field::CHECKSUM].copy_from_slice(&c.to_be_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // An IPv4 header of a 40-byte TCP packet 10.0.0.1 -> 10.0.0.2, ident 0x1234, DF, TTL 64.
    static HEADER: [u8; 20] =
        [0x45, 0x00, 0x00, 0x28, 0x12, 0x34, 0x40, 0x00, 0x40, 0x06, 0x14, 0x9a, 10, 0, 0, 1, 10, 0, 0, 2];

    #[test]
    fn deconstruct() {
        let mut bytes = HEADER.to_vec();
        bytes.resize(40, 0);
        let p = Ipv4Packet::new_checked(&bytes[..]).unwrap();
        assert_eq!(p.header_len(), 20);
        assert_eq!(p.total_len(), 40);
        assert_eq!(p.ident(), 0x1234);
        assert!(p.dont_frag());
        assert!(!p.is_fragment());
        assert_eq!(p.protocol(), PROTO_TCP);
        assert_eq!(p.src_addr(), Ipv4Addr::new(10, 0, 0, 1));
        assert_eq!(p.dst_addr(), Ipv4Addr::new(10, 0, 0, 2));
        assert!(p.verify_checksum());
        assert_eq!(p.payload().len(), 20);
    }

    #[test]
    fn construct_matches_bytes() {
        let repr = Ipv4Repr {
            src: Ipv4Addr::new(10, 0, 0, 1),
            dst: Ipv4Addr::new(10, 0, 0, 2),
            protocol: PROTO_TCP,
            ident: 0x1234,
            ttl: 64,
            payload_len: 20,
        };
        let mut buf = [0u8; 20];
        repr.emit(&mut buf);
        assert_eq!(buf, HEADER);
    }

    #[test]
    fn truncated_and_malformed() {
        assert_eq!(Ipv4Packet::new_checked(&HEADER[..19]).unwrap_err(), WireError::Truncated);
        // total length 40 but only 20 bytes present
        assert_eq!(Ipv4Packet::new_checked(&HEADER[..]).unwrap_err(), WireError::Truncated);
        let mut v6 = HEADER;
        v6[0] = 0x65;
        assert_eq!(Ipv4Packet::new_checked(&v6[..]).unwrap_err(), WireError::Malformed);
        let mut short_ihl = HEADER;
        short_ihl[0] = 0x44;
        assert_eq!(Ipv4Packet::new_checked(&short_ihl[..]).unwrap_err(), WireError::Malformed);
    }
}

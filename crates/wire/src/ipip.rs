//! IP-in-IP encapsulation (RFC 2003), as the home agent and base stations use it to tunnel packets for a
//! mobile host (Balakrishnan 1995 §4, Fig. 3; Eom 2002 §2).

use crate::ipv4::{Ipv4Packet, Ipv4Repr, HEADER_LEN, PROTO_IPIP};
use crate::{Result, WireError};
use bytes::{BufMut, Bytes, BytesMut};
use std::net::Ipv4Addr;

/// Wraps `inner` (a whole IPv4 packet) in an outer header from `src` to `dst`.
pub fn encapsulate(inner: &[u8], src: Ipv4Addr, dst: Ipv4Addr, ident: u16, ttl: u8) -> Bytes {
    let outer = Ipv4Repr { src, dst, protocol: PROTO_IPIP, ident, ttl, payload_len: inner.len() };
    let mut buf = BytesMut::with_capacity(outer.buffer_len());
    buf.put_bytes(0, HEADER_LEN);
    outer.emit(&mut buf[..HEADER_LEN]);
    buf.put_slice(inner);
    buf.freeze()
}

/// The inner packet of an IP-in-IP packet, sliced without copying.
pub fn decapsulate(outer: &Bytes) -> Result<Bytes> {
    let p = Ipv4Packet::new_checked(&outer[..])?;
    if p.protocol() != PROTO_IPIP {
        return Err(WireError::Unsupported);
    }
    let range = p.payload_range();
    Ipv4Packet::new_checked(&outer[range.clone()])?;
    Ok(outer.slice(range))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tcp::TcpRepr;

    #[test]
    fn round_trip() {
        let a = Ipv4Addr::new(10, 0, 0, 1);
        let b = Ipv4Addr::new(10, 0, 0, 2);
        let inner = TcpRepr { src_port: 1, dst_port: 2, ..TcpRepr::default() }.emit_ipv4(a, b, 5, 64, b"x");
        let outer = encapsulate(&inner, Ipv4Addr::new(1, 1, 1, 1), Ipv4Addr::new(224, 0, 0, 9), 1, 32);
        let p = Ipv4Packet::new_checked(&outer[..]).unwrap();
        assert!(p.verify_checksum());
        assert_eq!(p.protocol(), PROTO_IPIP);
        assert_eq!(decapsulate(&outer).unwrap(), inner);
        assert_eq!(decapsulate(&inner).unwrap_err(), WireError::Unsupported);
        let mut cut = outer.to_vec();
        cut.truncate(outer.len() - 1);
        assert!(decapsulate(&Bytes::from(cut)).is_err());
    }
}

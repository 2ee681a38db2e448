//! The mobile host's output-queue occupancy, piggybacked on its TCP segments as a 4-byte experimental
//! option, so that an ELN agent at the base station can tell congestion losses from corruption losses
//! (Balakrishnan 1998 §3, "ELN Implementation": "Piggybacked on each packet from the MH is its instantaneous output
//! queue length, which the base station can use to classify each loss it detects").
//!
//! # Wire format
//!
//! ```text
//!  byte 0       byte 1       byte 2                   byte 3
//! +------------+------------+------------------------+------------+
//! | kind = 253 | length = 4 | occupancy (1/255 units) | reserved 0 |
//! +------------+------------+------------------------+------------+
//! ```
//!
//! - **kind 253** is one of the two option kinds RFC 4727 reserves for experiments; nothing else in
//!   lasthop uses it.
//! - **occupancy** is the MH's interface output queue at the moment the segment was handed to it, as a
//!   fraction of the queue's capacity in units of 1/255: 0 is empty, 255 is full. The paper compares it with
//!   a fraction of the maximum (75 %), so a fraction is all the BS needs, and it does not have to know the
//!   MH's queue size. One byte resolves the 75 % threshold to within 0.4 %.
//! - **reserved** is sent as zero and ignored on receipt (room for a version or a second queue later).
//!
//! Why not RFC 6994's shared form (kind 253, a 16-bit ExID, then the data)? It needs 5 bytes, 8 with
//! padding, and option space is tight: timestamps (10) and three SACK blocks (26) already take 36 of the
//! 40 bytes, so the 4-byte form still fits beside them while the ExID form would cost a SACK block. The
//! option crosses one wireless hop into an experiment's own base station; a deployment sharing kind 253
//! with other experiments should move to an ExID. To limit confusion with RFC 6994 users, only an option of
//! kind 253 with length exactly 4 is read as ours; kind 253 with any other length is someone else's and
//! is skipped.
//!
//! The option is *inserted* into an already built IPv4/TCP packet ([`insert_ipv4`]) right after the fixed
//! TCP header: 4 bytes keep the option area 32-bit aligned, so no padding changes, and the packet grows
//! by exactly 4 bytes (header length, IPv4 total length and both checksums are updated). A packet whose
//! options already fill the 40 bytes cannot take it; the sender then goes without (the BS reads a missing
//! option as an empty queue, the same as from an unmodified mobile host).

use crate::ipv4::{Ipv4Packet, PROTO_TCP};
use crate::tcp::{TcpOption, TcpPacket, HEADER_LEN as TCP_HEADER_LEN};
use crate::{Result, WireError};
use bytes::{BufMut, Bytes, BytesMut};

/// RFC 4727 experimental option kind.
pub const KIND: u8 = 253;
/// The option's total length in bytes (kind, length, occupancy, reserved).
pub const LEN: u8 = 4;
/// Largest TCP header (data offset 15 words).
const MAX_TCP_HEADER: usize = 60;

/// A queue occupancy in units of 1/255 of the queue's capacity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct QueueOccupancy(pub u8);

impl QueueOccupancy {
    pub const EMPTY: QueueOccupancy = QueueOccupancy(0);
    pub const FULL: QueueOccupancy = QueueOccupancy(255);

    /// From a fraction of capacity, rounded to the nearest 1/255 and clamped to `[0, 1]`. NaN reads as
    /// full: a host that cannot say how full its queue is must not make a loss look like corruption.
    pub fn from_fraction(f: f64) -> QueueOccupancy {
        if f.is_nan() {
            return QueueOccupancy::FULL;
        }
        QueueOccupancy((f.clamp(0.0, 1.0) * 255.0).round() as u8)
    }

    /// The occupancy as a fraction of capacity, in `[0, 1]`.
    pub fn fraction(self) -> f64 {
        f64::from(self.0) / 255.0
    }

    /// The option's four bytes.
    pub fn to_bytes(self) -> [u8; 4] {
        [KIND, LEN, self.0, 0]
    }

    /// Reads an option already split by [`TcpOption::parse`]; `None` if it is not this option.
    pub fn from_option(opt: &TcpOption<'_>) -> Option<QueueOccupancy> {
        match *opt {
            // `data` excludes kind and length, so ours has exactly two bytes.
            TcpOption::Unknown { kind: KIND, data } if data.len() == usize::from(LEN) - 2 => {
                Some(QueueOccupancy(data[0]))
            }
            _ => None,
        }
    }

    /// Finds the option in a TCP header. `Ok(None)` when absent; an error when the option list itself is
    /// malformed (the same rule as [`TcpRepr::parse`](crate::TcpRepr::parse)).
    pub fn find<T: AsRef<[u8]>>(tcp: &TcpPacket<T>) -> Result<Option<QueueOccupancy>> {
        let mut found = None;
        for opt in tcp.options() {
            if let Some(q) = QueueOccupancy::from_option(&opt?) {
                found = Some(q);
            }
        }
        Ok(found)
    }
}

/// Returns a copy of the IPv4/TCP `packet` carrying `occ`: an existing queue option is overwritten, else
/// one is inserted after the fixed TCP header. Both checksums are recomputed, so the input must have been
/// valid (this is for a sender decorating its own packets, never for a packet in transit, whose
/// corruption it would hide).
///
/// Errors: `Truncated`/`Malformed` for a packet that does not parse, `Unsupported` for a fragment, a
/// non-TCP packet, or a TCP header with no 4 bytes of option space left.
pub fn insert_ipv4(packet: &[u8], occ: QueueOccupancy) -> Result<Bytes> {
    let ip = Ipv4Packet::new_checked(packet)?;
    if ip.protocol() != PROTO_TCP || ip.is_fragment() {
        return Err(WireError::Unsupported);
    }
    let (src, dst) = (ip.src_addr(), ip.dst_addr());
    let ip_hl = ip.header_len();
    let total = usize::from(ip.total_len());
    let tcp = TcpPacket::new_checked(ip.payload())?;
    let tcp_hl = tcp.header_len();
    // Overwrite in place if the option is already there.
    let mut at = TCP_HEADER_LEN;
    let mut existing = None;
    let mut rest = &ip.payload()[TCP_HEADER_LEN..tcp_hl];
    while !rest.is_empty() {
        let (opt, next) = TcpOption::parse(rest)?;
        if matches!(opt, TcpOption::EndOfList) {
            break;
        }
        if QueueOccupancy::from_option(&opt).is_some() {
            existing = Some(at);
        }
        at += rest.len() - next.len();
        rest = next;
    }
    let mut buf = BytesMut::with_capacity(total + usize::from(LEN));
    if let Some(at) = existing {
        buf.put_slice(&packet[..total]);
        buf[ip_hl + at + 2] = occ.0;
        buf[ip_hl + at + 3] = 0;
    } else {
        if tcp_hl + usize::from(LEN) > MAX_TCP_HEADER || total + usize::from(LEN) > usize::from(u16::MAX) {
            return Err(WireError::Unsupported);
        }
        let split = ip_hl + TCP_HEADER_LEN;
        buf.put_slice(&packet[..split]);
        buf.put_slice(&occ.to_bytes());
        buf.put_slice(&packet[split..total]);
        let new_total = (total + usize::from(LEN)) as u16;
        buf[2..4].copy_from_slice(&new_total.to_be_bytes());
        // Data offset: the high nibble of byte 12 of the TCP header; the low nibble (ELN bit) is kept.
        let off = &mut buf[ip_hl + 12];
        *off = ((((tcp_hl + usize::from(LEN)) / 4) as u8) << 4) | (*off & 0x0f);
    }
    let mut ipm = Ipv4Packet::new_unchecked(&mut buf[..]);
    ipm.fill_checksum();
    TcpPacket::new_unchecked(ipm.payload_mut()).fill_checksum(src, dst);
    Ok(buf.freeze())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{SeqNum, TcpRepr};
    use std::net::Ipv4Addr;

    const SRC: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
    const DST: Ipv4Addr = Ipv4Addr::new(10, 0, 1, 2);

    fn packet(repr: &TcpRepr, payload: &[u8]) -> Bytes {
        repr.emit_ipv4(SRC, DST, 9, 64, payload)
    }

    fn read(p: &[u8]) -> (Option<QueueOccupancy>, TcpRepr, Vec<u8>) {
        let ip = Ipv4Packet::new_checked(p).unwrap();
        assert!(ip.verify_checksum());
        let tcp = TcpPacket::new_checked(ip.payload()).unwrap();
        assert!(tcp.verify_checksum(SRC, DST));
        (QueueOccupancy::find(&tcp).unwrap(), TcpRepr::parse(&tcp).unwrap(), tcp.payload().to_vec())
    }

    #[test]
    fn fraction_conversion_rounds_clamps_and_fails_safe() {
        assert_eq!(QueueOccupancy::from_fraction(0.0), QueueOccupancy::EMPTY);
        assert_eq!(QueueOccupancy::from_fraction(1.0), QueueOccupancy::FULL);
        assert_eq!(QueueOccupancy::from_fraction(2.0), QueueOccupancy::FULL);
        assert_eq!(QueueOccupancy::from_fraction(-1.0), QueueOccupancy::EMPTY);
        assert_eq!(QueueOccupancy::from_fraction(f64::NAN), QueueOccupancy::FULL);
        assert_eq!(QueueOccupancy::from_fraction(0.5), QueueOccupancy(128));
        // The 75 % threshold falls between 191 (74.9 %) and 192 (75.3 %).
        assert!(QueueOccupancy(191).fraction() < 0.75 && QueueOccupancy(192).fraction() > 0.75);
    }

    #[test]
    fn emit_bytes() {
        assert_eq!(QueueOccupancy(0x9c).to_bytes(), [253, 4, 0x9c, 0]);
    }

    #[test]
    fn insert_round_trip_keeps_everything_else() {
        let mut sack = crate::SackBlocks::new();
        sack.push(SeqNum(100), SeqNum(200));
        let repr = TcpRepr {
            src_port: 1,
            dst_port: 2,
            seq: SeqNum(7),
            ack: Some(SeqNum(9)),
            window: 1000,
            eln: true,
            timestamps: Some((5, 6)),
            sack,
            ..TcpRepr::default()
        };
        let p = packet(&repr, b"payload");
        let (q, _, _) = read(&p);
        assert_eq!(q, None);
        let with = insert_ipv4(&p, QueueOccupancy(200)).unwrap();
        assert_eq!(with.len(), p.len() + 4);
        let (q, r, pl) = read(&with);
        assert_eq!(q, Some(QueueOccupancy(200)));
        assert_eq!(r, repr, "the other fields and options survive, the ELN bit included");
        assert_eq!(pl, b"payload");
        // A second insertion overwrites instead of adding another.
        let again = insert_ipv4(&with, QueueOccupancy(3)).unwrap();
        assert_eq!(again.len(), with.len());
        assert_eq!(read(&again).0, Some(QueueOccupancy(3)));
    }

    #[test]
    fn no_room_and_not_tcp_are_unsupported() {
        let mut sack = crate::SackBlocks::new();
        for i in 0..4 {
            sack.push(SeqNum(i * 10), SeqNum(i * 10 + 5));
        }
        // 4 SACK blocks (34) + SACK-permitted (2) + window scale (3) = 39 -> 40 bytes of options.
        let full = TcpRepr { sack, sack_permitted: true, window_scale: Some(1), ..TcpRepr::default() };
        assert_eq!(full.header_len(), 60);
        assert_eq!(insert_ipv4(&packet(&full, &[]), QueueOccupancy(1)).unwrap_err(), WireError::Unsupported);
        let mut udp = packet(&TcpRepr::default(), &[]).to_vec();
        udp[9] = 17;
        assert_eq!(insert_ipv4(&udp, QueueOccupancy(1)).unwrap_err(), WireError::Unsupported);
    }

    #[test]
    fn truncated_and_foreign_options() {
        let p = insert_ipv4(&packet(&TcpRepr::default(), &[]), QueueOccupancy(9)).unwrap();
        // Cut inside the option: the IPv4 total length no longer fits, so nothing is read.
        assert_eq!(Ipv4Packet::new_checked(&p[..p.len() - 1]).unwrap_err(), WireError::Truncated);
        assert!(insert_ipv4(&p[..p.len() - 1], QueueOccupancy(1)).is_err());
        // A kind-253 option of another length (an RFC 6994 user) is not ours, and not an error.
        let tcp_opts = [253u8, 6, 0xab, 0xcd, 1, 2, 1, 1];
        let mut hdr = vec![0u8; 20];
        hdr[12] = (((20 + tcp_opts.len()) / 4) << 4) as u8;
        hdr.extend_from_slice(&tcp_opts);
        let t = TcpPacket::new_checked(&hdr[..]).unwrap();
        assert_eq!(QueueOccupancy::find(&t).unwrap(), None);
        // Our option with its length byte pointing past the header is malformed.
        let mut bad = vec![0u8; 20];
        bad[12] = 6 << 4;
        bad.extend_from_slice(&[253, 8, 1, 0]);
        let t = TcpPacket::new_checked(&bad[..]).unwrap();
        assert!(QueueOccupancy::find(&t).is_err());
    }

    proptest::proptest! {
        #[test]
        fn arbitrary_bytes_never_panic(data in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..100), q: u8) {
            let _ = insert_ipv4(&data, QueueOccupancy(q));
            if let Ok(t) = TcpPacket::new_checked(&data[..]) {
                let _ = QueueOccupancy::find(&t);
            }
        }

        #[test]
        fn round_trip_any_value(q: u8, len in 0usize..64) {
            let p = packet(&TcpRepr::default(), &vec![7u8; len]);
            let with = insert_ipv4(&p, QueueOccupancy(q)).unwrap();
            proptest::prop_assert_eq!(read(&with).0, Some(QueueOccupancy(q)));
        }
    }
}

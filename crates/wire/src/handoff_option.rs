//! The "handoff over" mark: a 4-byte experimental TCP option by which a mobile host that *receives* a
//! bulk transfer tells a handoff-aware stationary sender that a handoff has just completed, so that the
//! sender goes back to its oldest unacknowledged byte at once instead of waiting for its retransmission
//! timer (Caceres 1995, "Fast Retransmissions", Fig. 9 (b) "Transmitter on the SH": "This special signal can
//! be specially marked TCP ACK or three ordinary TCP ACKs"). The three-ordinary-ACKs variant needs no
//! wire support; this module is the specially marked one.
//!
//! # Wire format
//!
//! ```text
//!  byte 0       byte 1       bytes 2-3
//! +------------+------------+--------------------------+
//! | kind = 254 | length = 4 | ExID = 0x4C48 ("LH")     |
//! +------------+------------+--------------------------+
//! ```
//!
//! - **kind 254** is the second of RFC 4727's two experimental kinds. Kind 253 already carries the ELN
//!   queue option ([`queue_option`](crate::queue_option)) in its compact, ExID-less form; using the other
//!   kind keeps the two apart on the wire without any rule about lengths.
//! - **ExID 0x4C48** ("LH", for lasthop) follows RFC 6994's shared-use layout: a 16-bit experiment
//!   identifier right after the length. The option has no data beyond it: its *presence* on an ACK is
//!   the mark. With RFC 6994's form, another experiment on kind 254 (with its own ExID) is never read as
//!   ours, and ours is never read as theirs. 0x4C48 is not an IANA-assigned ExID; a deployment beyond an
//!   experiment's own hosts should register one.
//! - It costs 4 bytes, keeping the option area 32-bit aligned: beside timestamps (10 bytes) and three
//!   SACK blocks (26) it still fits in the 40 bytes of option space ([`TcpRepr::max_sack_blocks`]
//!   accounts for it).
//!
//! Why an option rather than a spare header bit? The one reserved bit lasthop uses is the ELN bit
//! (Balakrishnan 1998), and the other reserved bits are taken by RFC 3168 / RFC 3540 (ECN, the nonce sum). An
//! option is also what "an unmodified SH ignores" needs: RFC 9293 §3.1 requires a TCP to skip options it
//! does not implement, so an ordinary stack processes the marked ACK as the plain ACK it also is.
//!
//! [`TcpRepr`](crate::TcpRepr) carries the mark as its `handoff_mark` field: `emit` writes the option and
//! `parse` sets the field when it finds it.
//!
//! [`TcpRepr::max_sack_blocks`]: crate::TcpRepr::max_sack_blocks

use crate::tcp::{TcpOption, TcpPacket};
use crate::Result;

/// RFC 4727 experimental option kind.
pub const KIND: u8 = 254;
/// The option's total length in bytes (kind, length, two bytes of ExID).
pub const LEN: u8 = 4;
/// RFC 6994 experiment identifier: ASCII "LH".
pub const EXID: u16 = 0x4C48;

/// The option's four bytes.
pub const fn to_bytes() -> [u8; 4] {
    let e = EXID.to_be_bytes();
    [KIND, LEN, e[0], e[1]]
}

/// Whether an option already split by [`TcpOption::parse`] is the handoff mark.
pub fn is_mark(opt: &TcpOption<'_>) -> bool {
    matches!(*opt, TcpOption::Unknown { kind: KIND, data } if data == EXID.to_be_bytes())
}

/// Whether a TCP header carries the mark. An error when the option list itself is malformed (the same
/// rule as [`TcpRepr::parse`](crate::TcpRepr::parse)).
pub fn find<T: AsRef<[u8]>>(tcp: &TcpPacket<T>) -> Result<bool> {
    let mut found = false;
    for opt in tcp.options() {
        found |= is_mark(&opt?);
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ipv4::Ipv4Packet;
    use crate::{SackBlocks, SeqNum, TcpRepr};
    use std::net::Ipv4Addr;

    const SRC: Ipv4Addr = Ipv4Addr::new(10, 0, 2, 1);
    const DST: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);

    fn ack(mark: bool, ts: bool, sack_blocks: u32) -> TcpRepr {
        let mut sack = SackBlocks::new();
        for i in 0..sack_blocks {
            sack.push(SeqNum(10_000 + 2000 * i), SeqNum(11_000 + 2000 * i));
        }
        TcpRepr {
            src_port: 40000,
            dst_port: 5001,
            seq: SeqNum(77),
            ack: Some(SeqNum(5000)),
            window: 65535,
            timestamps: ts.then_some((1, 2)),
            sack,
            handoff_mark: mark,
            ..TcpRepr::default()
        }
    }

    #[test]
    fn mark_bytes_are_kind_254_len_4_exid_lh() {
        assert_eq!(to_bytes(), [254, 4, b'L', b'H']);
    }

    #[test]
    fn marked_ack_emits_parses_and_checksums() {
        let plain = ack(false, false, 0).emit_ipv4(DST, SRC, 1, 64, &[]);
        let marked = ack(true, false, 0).emit_ipv4(DST, SRC, 1, 64, &[]);
        assert_eq!(marked.len(), plain.len() + 4, "the mark costs exactly 4 bytes");
        let ip = Ipv4Packet::new_checked(&marked[..]).unwrap();
        assert!(ip.verify_checksum());
        let tcp = TcpPacket::new_checked(ip.payload()).unwrap();
        assert!(tcp.verify_checksum(DST, SRC));
        assert_eq!(tcp.header_len(), 24);
        assert_eq!(&ip.payload()[20..24], &to_bytes());
        assert!(find(&tcp).unwrap());
        let repr = TcpRepr::parse(&tcp).unwrap();
        assert!(repr.handoff_mark);
        assert_eq!(repr, ack(true, false, 0));
        // The unmarked ACK parses without it.
        let ip = Ipv4Packet::new_checked(&plain[..]).unwrap();
        let tcp = TcpPacket::new_checked(ip.payload()).unwrap();
        assert!(!find(&tcp).unwrap());
        assert!(!TcpRepr::parse(&tcp).unwrap().handoff_mark);
    }

    #[test]
    fn mark_fits_beside_timestamps_and_sack() {
        let r = ack(true, true, 3);
        let max = r.max_sack_blocks();
        assert_eq!(max, 3, "timestamps (10) + mark (4) + three SACK blocks (26) fill the 40 bytes");
        let mut r = r;
        let mut sack = SackBlocks::new();
        for (l, rr) in r.sack.as_slice().iter().take(max) {
            sack.push(*l, *rr);
        }
        r.sack = sack;
        assert_eq!(r.header_len(), 60);
        let pkt = r.emit_ipv4(DST, SRC, 1, 64, &[]);
        let ip = Ipv4Packet::new_checked(&pkt[..]).unwrap();
        let tcp = TcpPacket::new_checked(ip.payload()).unwrap();
        assert!(tcp.verify_checksum(DST, SRC));
        assert_eq!(TcpRepr::parse(&tcp).unwrap(), r);
    }

    #[test]
    fn other_experiments_on_kind_254_are_not_the_mark() {
        let other_exid = TcpOption::Unknown { kind: KIND, data: &[0x12, 0x34] };
        let longer = TcpOption::Unknown { kind: KIND, data: &[b'L', b'H', 0] };
        let queue = TcpOption::Unknown { kind: 253, data: b"LH" };
        assert!(!is_mark(&other_exid) && !is_mark(&longer) && !is_mark(&queue));
        assert!(is_mark(&TcpOption::Unknown { kind: KIND, data: b"LH" }));
    }
}

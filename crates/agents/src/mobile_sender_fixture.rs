//! Test fixture for the agents that watch a mobile *sender* (ELN, NACK): one connection MH → FH whose
//! sequence numbers cross the 2^32 wrap, segments of `MSS` bytes, and builders for its packets.

use bytes::Bytes;
use lasthop_wire::{SeqNum, TcpRepr};
use std::net::Ipv4Addr;

pub const FH: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
pub const MH: Ipv4Addr = Ipv4Addr::new(10, 1, 0, 1);
pub const FP: u16 = 5001;
pub const MP: u16 = 40000;
pub const MH_ISS: u32 = u32::MAX - 250; // segment numbers cross the 2^32 wrap
pub const FH_ISS: u32 = 9000;
pub const MSS: u32 = 100;

/// Sequence number of the mobile's segment `i`.
pub fn seg(i: u32) -> SeqNum {
    SeqNum(MH_ISS.wrapping_add(1).wrapping_add(i * MSS))
}

/// MH → FH data segment `i`, its payload `MSS` bytes of `fill`.
pub fn mh_data(i: u32, fill: u8) -> Bytes {
    let repr = TcpRepr {
        src_port: MP,
        dst_port: FP,
        seq: seg(i),
        ack: Some(SeqNum(FH_ISS + 1)),
        window: 65535,
        ..TcpRepr::default()
    };
    repr.emit_ipv4(MH, FH, 1, 64, &[fill; MSS as usize])
}

/// FH → MH pure ACK of everything before segment `i`; the rest of the header from `repr` (window, ELN bit,
/// timestamps), whose ports and numbers are overwritten.
pub fn fh_ack_with(i: u32, repr: TcpRepr) -> Bytes {
    let repr = TcpRepr { src_port: FP, dst_port: MP, seq: SeqNum(FH_ISS + 1), ack: Some(seg(i)), ..repr };
    repr.emit_ipv4(FH, MH, 2, 64, &[])
}

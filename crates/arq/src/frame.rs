//! The link header of an ARQ frame, carried in front of the IPv4 packet on the wireless hop.
//!
//! ```text
//! data:  kind=1 | seq (u16) | base (u16) | IPv4 packet ...          5 bytes of header
//! ack:   kind=2 | cum (u16) | this (u16) | bitmap (u32)             9 bytes, no payload
//! ```
//!
//! `seq` numbers frames modulo 2^16; `base` is the oldest frame the sender still holds, so a receiver
//! skips frames the sender gave up on (retry limit). `cum` is the next frame the receiver expects in
//! order, `this` the frame that caused the ACK, and bit `i` of `bitmap` says frame `cum + 1 + i` has
//! arrived (only filled in with selective link ACKs, LL-SMART). Both ends keep 64-bit frame counters
//! and take a wire number as the one nearest a counter they know, so a window must stay below 2^15.

use bytes::{BufMut, Bytes, BytesMut};

pub const KIND_DATA: u8 = 1;
pub const KIND_ACK: u8 = 2;
pub const DATA_HEADER_LEN: usize = 5;
pub const ACK_LEN: usize = 9;
/// Frames above `cum` an ACK's bitmap can report.
pub const BITMAP_FRAMES: u64 = 32;
/// Largest window the 16-bit sequence space supports unambiguously.
pub const MAX_WINDOW: u32 = 1 << 14;

/// A parsed link frame; the payload of a data frame is a zero-copy slice.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    Data { seq: u16, base: u16, payload: Bytes },
    Ack { cum: u16, this: u16, bitmap: u32 },
}

impl Frame {
    /// Reads a frame; `None` for anything truncated, of unknown kind, or an ACK with trailing bytes.
    pub fn parse(b: &Bytes) -> Option<Frame> {
        match *b.first()? {
            KIND_DATA if b.len() >= DATA_HEADER_LEN => Some(Frame::Data {
                seq: u16::from_be_bytes([b[1], b[2]]),
                base: u16::from_be_bytes([b[3], b[4]]),
                payload: b.slice(DATA_HEADER_LEN..),
            }),
            KIND_ACK if b.len() == ACK_LEN => Some(Frame::Ack {
                cum: u16::from_be_bytes([b[1], b[2]]),
                this: u16::from_be_bytes([b[3], b[4]]),
                bitmap: u32::from_be_bytes([b[5], b[6], b[7], b[8]]),
            }),
            _ => None,
        }
    }

    pub fn emit(&self) -> Bytes {
        match self {
            Frame::Data { seq, base, payload } => {
                let mut b = BytesMut::with_capacity(DATA_HEADER_LEN + payload.len());
                b.put_u8(KIND_DATA);
                b.put_u16(*seq);
                b.put_u16(*base);
                b.put_slice(payload);
                b.freeze()
            }
            Frame::Ack { cum, this, bitmap } => {
                let mut b = BytesMut::with_capacity(ACK_LEN);
                b.put_u8(KIND_ACK);
                b.put_u16(*cum);
                b.put_u16(*this);
                b.put_u32(*bitmap);
                b.freeze()
            }
        }
    }
}

/// The 64-bit frame counter whose low 16 bits are `wire`, taken as the one nearest `near`.
pub fn unwrap_seq(near: u64, wire: u16) -> u64 {
    let diff = wire.wrapping_sub(near as u16) as i16;
    (near as i64).saturating_add(i64::from(diff)).max(0) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_round_trip() {
        let d = Frame::Data { seq: 65535, base: 65530, payload: Bytes::from_static(b"ip") };
        assert_eq!(Frame::parse(&d.emit()), Some(d));
        let a = Frame::Ack { cum: 7, this: 9, bitmap: 0b101 };
        assert_eq!(a.emit().len(), ACK_LEN);
        assert_eq!(Frame::parse(&a.emit()), Some(a));
    }

    #[test]
    fn truncated_unknown_and_padded_frames_are_refused() {
        for b in
            [&[][..], &[1, 0, 0, 0], &[2, 0, 0, 0, 0, 0, 0, 0], &[2, 0, 0, 0, 0, 0, 0, 0, 0, 0], &[9, 0, 0, 0, 0, 0]]
        {
            assert_eq!(Frame::parse(&Bytes::copy_from_slice(b)), None, "{b:?}");
        }
    }

    #[test]
    fn sequence_numbers_unwrap_to_the_nearest_counter() {
        assert_eq!(unwrap_seq(65534, 1), 65537);
        assert_eq!(unwrap_seq(65537, 65534), 65534);
        assert_eq!(unwrap_seq(3, 65535), 0, "before zero clamps");
        assert_eq!(unwrap_seq(100, 100), 100);
    }
}

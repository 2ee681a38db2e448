//! TCP header view and builder (RFC 793), with the options lasthop's papers rely on: MSS, window scale,
//! SACK-permitted and SACK blocks (RFC 2018), timestamps (RFC 7323), and the ELN bit.
//!
//! **The ELN bit** (Balakrishnan 1998 §3, "ELN Implementation"): Explicit Loss Notification uses one of the reserved
//! bits of the TCP header. lasthop uses the highest reserved bit, mask `0x08` of byte 12 (bit 4 of the
//! header when bits are numbered from 0 at the most significant bit of the data-offset byte); that bit is
//! unassigned by IANA (RFC 8311 gave the lowest reserved bit to AccECN/NS experiments, we keep clear of it).

use crate::checksum;
use crate::ipv4::{Ipv4Repr, PROTO_TCP};
use crate::seq::SeqNum;
use crate::{Result, WireError};
use bytes::{Bytes, BytesMut};
use std::net::Ipv4Addr;

mod field {
    pub type Field = core::ops::Range<usize>;
    pub const SRC_PORT: Field = 0..2;
    pub const DST_PORT: Field = 2..4;
    pub const SEQ_NUM: Field = 4..8;
    pub const ACK_NUM: Field = 8..12;
    pub const OFF_RES: usize = 12;
    pub const FLAGS: usize = 13;
    pub const WIN_SIZE: Field = 14..16;
    pub const CHECKSUM: Field = 16..18;
    pub const URGENT: Field = 18..20;
}

pub const HEADER_LEN: usize = 20;
/// The longest header: the data offset field counts at most 15 words (40 bytes of options).
const MAX_HEADER_LEN: usize = 60;
/// Mask of the ELN bit within byte 12 of the TCP header.
pub const ELN_MASK: u8 = 0x08;

pub mod option_kind {
    pub const END: u8 = 0;
    pub const NOP: u8 = 1;
    pub const MSS: u8 = 2;
    pub const WINDOW_SCALE: u8 = 3;
    pub const SACK_PERMITTED: u8 = 4;
    pub const SACK: u8 = 5;
    pub const TIMESTAMPS: u8 = 8;
}

/// The eight flag bits of byte 13.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub struct TcpFlags(pub u8);

impl TcpFlags {
    pub const FIN: TcpFlags = TcpFlags(0x01);
    pub const SYN: TcpFlags = TcpFlags(0x02);
    pub const RST: TcpFlags = TcpFlags(0x04);
    pub const PSH: TcpFlags = TcpFlags(0x08);
    pub const ACK: TcpFlags = TcpFlags(0x10);
    pub const URG: TcpFlags = TcpFlags(0x20);
    pub const ECE: TcpFlags = TcpFlags(0x40);
    pub const CWR: TcpFlags = TcpFlags(0x80);
    pub const NONE: TcpFlags = TcpFlags(0);

    pub const fn contains(self, other: TcpFlags) -> bool {
        self.0 & other.0 == other.0
    }
    pub const fn union(self, other: TcpFlags) -> TcpFlags {
        TcpFlags(self.0 | other.0)
    }
    pub const fn without(self, other: TcpFlags) -> TcpFlags {
        TcpFlags(self.0 & !other.0)
    }
}

impl std::ops::BitOr for TcpFlags {
    type Output = TcpFlags;
    fn bitor(self, rhs: TcpFlags) -> TcpFlags {
        self.union(rhs)
    }
}

/// Up to four SACK blocks `[left, right)`; three fit beside timestamps, four without.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub struct SackBlocks {
    blocks: [(SeqNum, SeqNum); 4],
    len: u8,
}

impl SackBlocks {
    pub const MAX: usize = 4;

    pub fn new() -> Self {
        Self::default()
    }
    /// Appends a block; returns false (and keeps the list) when four are already present.
    pub fn push(&mut self, left: SeqNum, right: SeqNum) -> bool {
        if usize::from(self.len) == Self::MAX {
            return false;
        }
        self.blocks[usize::from(self.len)] = (left, right);
        self.len += 1;
        true
    }
    pub fn len(&self) -> usize {
        usize::from(self.len)
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    pub fn as_slice(&self) -> &[(SeqNum, SeqNum)] {
        &self.blocks[..usize::from(self.len)]
    }
    pub fn truncate(&mut self, n: usize) {
        self.len = self.len.min(n as u8);
    }
}

/// One TCP option as found in a header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TcpOption<'a> {
    EndOfList,
    NoOperation,
    MaxSegmentSize(u16),
    WindowScale(u8),
    SackPermitted,
    SackRange(SackBlocks),
    Timestamps { tsval: u32, tsecr: u32 },
    Unknown { kind: u8, data: &'a [u8] },
}

impl<'a> TcpOption<'a> {
    /// Parses the option at the start of `buf`, returning it and the rest.
    pub fn parse(buf: &'a [u8]) -> Result<(TcpOption<'a>, &'a [u8])> {
        let kind = *buf.first().ok_or(WireError::Truncated)?;
        match kind {
            option_kind::END => return Ok((TcpOption::EndOfList, &[])),
            option_kind::NOP => return Ok((TcpOption::NoOperation, &buf[1..])),
            _ => {}
        }
        let len = usize::from(*buf.get(1).ok_or(WireError::Truncated)?);
        if len < 2 {
            return Err(WireError::Malformed);
        }
        let data = buf.get(2..len).ok_or(WireError::Truncated)?;
        let rest = &buf[len..];
        let opt = match (kind, data.len()) {
            (option_kind::MSS, 2) => TcpOption::MaxSegmentSize(u16::from_be_bytes([data[0], data[1]])),
            (option_kind::WINDOW_SCALE, 1) => TcpOption::WindowScale(data[0]),
            (option_kind::SACK_PERMITTED, 0) => TcpOption::SackPermitted,
            (option_kind::TIMESTAMPS, 8) => TcpOption::Timestamps {
                tsval: u32::from_be_bytes(data[0..4].try_into().unwrap()),
                tsecr: u32::from_be_bytes(data[4..8].try_into().unwrap()),
            },
            (option_kind::SACK, n) if n % 8 == 0 && n > 0 && n / 8 <= SackBlocks::MAX => {
                let mut blocks = SackBlocks::new();
                for b in data.chunks_exact(8) {
                    blocks.push(
                        SeqNum(u32::from_be_bytes(b[0..4].try_into().unwrap())),
                        SeqNum(u32::from_be_bytes(b[4..8].try_into().unwrap())),
                    );
                }
                TcpOption::SackRange(blocks)
            }
            (
                option_kind::MSS
                | option_kind::WINDOW_SCALE
                | option_kind::SACK_PERMITTED
                | option_kind::TIMESTAMPS
                | option_kind::SACK,
                _,
            ) => return Err(WireError::Malformed),
            _ => TcpOption::Unknown { kind, data },
        };
        Ok((opt, rest))
    }
}

/// Iterates the options of a header; stops at the end-of-list option, ends with an error on a bad one.
pub struct OptionIter<'a> {
    rest: &'a [u8],
}

impl<'a> Iterator for OptionIter<'a> {
    type Item = Result<TcpOption<'a>>;
    fn next(&mut self) -> Option<Self::Item> {
        if self.rest.is_empty() {
            return None;
        }
        match TcpOption::parse(self.rest) {
            Ok((TcpOption::EndOfList, _)) => {
                self.rest = &[];
                None
            }
            Ok((opt, rest)) => {
                self.rest = rest;
                Some(Ok(opt))
            }
            Err(e) => {
                self.rest = &[];
                Some(Err(e))
            }
        }
    }
}

/// A read (and, over `AsMut`, write) view of a TCP segment (header and payload, no IP header).
#[derive(Debug, Clone)]
pub struct TcpPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> TcpPacket<T> {
    pub const fn new_unchecked(buffer: T) -> Self {
        TcpPacket { buffer }
    }

    /// Wraps after [`check_len`](Self::check_len): no accessor panics afterwards.
    pub fn new_checked(buffer: T) -> Result<Self> {
        let p = Self::new_unchecked(buffer);
        p.check_len()?;
        Ok(p)
    }

    /// At least 20 bytes, a data offset of at least 5 words, and a header that fits the buffer.
    pub fn check_len(&self) -> Result<()> {
        let data = self.buffer.as_ref();
        if data.len() < HEADER_LEN {
            return Err(WireError::Truncated);
        }
        let hl = self.header_len();
        if hl < HEADER_LEN {
            return Err(WireError::Malformed);
        }
        if data.len() < hl {
            return Err(WireError::Truncated);
        }
        Ok(())
    }

    pub fn into_inner(self) -> T {
        self.buffer
    }
    pub fn src_port(&self) -> u16 {
        u16::from_be_bytes(self.buffer.as_ref()[field::SRC_PORT].try_into().unwrap())
    }
    pub fn dst_port(&self) -> u16 {
        u16::from_be_bytes(self.buffer.as_ref()[field::DST_PORT].try_into().unwrap())
    }
    pub fn seq_number(&self) -> SeqNum {
        SeqNum(u32::from_be_bytes(self.buffer.as_ref()[field::SEQ_NUM].try_into().unwrap()))
    }
    pub fn ack_number(&self) -> SeqNum {
        SeqNum(u32::from_be_bytes(self.buffer.as_ref()[field::ACK_NUM].try_into().unwrap()))
    }
    pub fn header_len(&self) -> usize {
        usize::from(self.buffer.as_ref()[field::OFF_RES] >> 4) * 4
    }
    pub fn flags(&self) -> TcpFlags {
        TcpFlags(self.buffer.as_ref()[field::FLAGS])
    }
    pub fn syn(&self) -> bool {
        self.flags().contains(TcpFlags::SYN)
    }
    pub fn fin(&self) -> bool {
        self.flags().contains(TcpFlags::FIN)
    }
    pub fn rst(&self) -> bool {
        self.flags().contains(TcpFlags::RST)
    }
    pub fn ack(&self) -> bool {
        self.flags().contains(TcpFlags::ACK)
    }
    /// The Explicit Loss Notification bit (see the module doc for which bit).
    pub fn eln(&self) -> bool {
        self.buffer.as_ref()[field::OFF_RES] & ELN_MASK != 0
    }
    pub fn window_len(&self) -> u16 {
        u16::from_be_bytes(self.buffer.as_ref()[field::WIN_SIZE].try_into().unwrap())
    }
    pub fn checksum(&self) -> u16 {
        u16::from_be_bytes(self.buffer.as_ref()[field::CHECKSUM].try_into().unwrap())
    }
    pub fn options(&self) -> OptionIter<'_> {
        OptionIter { rest: &self.buffer.as_ref()[HEADER_LEN..self.header_len()] }
    }
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[self.header_len()..]
    }
    /// Sequence space the segment occupies: payload bytes plus one each for SYN and FIN.
    pub fn segment_len(&self) -> u32 {
        self.payload().len() as u32 + u32::from(self.syn()) + u32::from(self.fin())
    }
    pub fn verify_checksum(&self, src: Ipv4Addr, dst: Ipv4Addr) -> bool {
        let data = self.buffer.as_ref();
        let acc = checksum::add(
            checksum::pseudo_header(src.octets(), dst.octets(), PROTO_TCP, data.len() as u16),
            checksum::sum(data),
        );
        checksum::fold(acc) == 0xffff
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> TcpPacket<T> {
    pub fn set_ack_number(&mut self, v: SeqNum) {
        self.buffer.as_mut()[field::ACK_NUM].copy_from_slice(&v.0.to_be_bytes());
    }
    pub fn set_window_len(&mut self, v: u16) {
        self.buffer.as_mut()[field::WIN_SIZE].copy_from_slice(&v.to_be_bytes());
    }
    pub fn set_eln(&mut self, on: bool) {
        let b = &mut self.buffer.as_mut()[field::OFF_RES];
        if on {
            *b |= ELN_MASK;
        } else {
            *b &= !ELN_MASK;
        }
    }
    pub fn fill_checksum(&mut self, src: Ipv4Addr, dst: Ipv4Addr) {
        // The whole segment read as header, with nothing after it.
        let len = self.buffer.as_ref().len();
        self.fill_checksum_with_payload_sum(src, dst, len, 0);
    }

    /// [`TcpPacket::fill_checksum`] for a segment whose payload, from `header_len` (a multiple of 4) on,
    /// has the one's-complement sum `payload_sum` known to the caller (any value congruent to
    /// [`checksum::sum`] of the payload modulo 0xffff): only the header is read. The pseudo-header's
    /// protocol makes the whole sum non-zero, so the folded result is exactly what summing every byte gives.
    pub fn fill_checksum_with_payload_sum(
        &mut self,
        src: Ipv4Addr,
        dst: Ipv4Addr,
        header_len: usize,
        payload_sum: u64,
    ) {
        let data = self.buffer.as_mut();
        debug_assert!(
            header_len.is_multiple_of(2) || header_len == data.len(),
            "a payload must start on a 16-bit word"
        );
        data[field::CHECKSUM].copy_from_slice(&[0, 0]);
        let header = checksum::add(checksum::sum(&data[..header_len]), payload_sum);
        let acc =
            checksum::add(checksum::pseudo_header(src.octets(), dst.octets(), PROTO_TCP, data.len() as u16), header);
        let c = !checksum::fold(acc);
        data[field::CHECKSUM].copy_from_slice(&c.to_be_bytes());
    }
}

/// A TCP header in fields: what a sender fills in to build a segment, and what a parser reads out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TcpRepr {
    pub src_port: u16,
    pub dst_port: u16,
    pub seq: SeqNum,
    /// Acknowledgment number; `Some` sets the ACK flag.
    pub ack: Option<SeqNum>,
    /// Flags other than ACK (which follows `ack`).
    pub flags: TcpFlags,
    pub window: u16,
    pub eln: bool,
    pub mss: Option<u16>,
    pub window_scale: Option<u8>,
    pub sack_permitted: bool,
    pub sack: SackBlocks,
    pub timestamps: Option<(u32, u32)>,
    /// The "handoff over" mark of a mobile receiver (Caceres 1995), emitted as the 4-byte experimental
    /// option of [`handoff_option`](crate::handoff_option).
    pub handoff_mark: bool,
}

impl TcpRepr {
    /// Reads the header fields and options; a malformed option is an error.
    pub fn parse<T: AsRef<[u8]>>(p: &TcpPacket<T>) -> Result<TcpRepr> {
        let flags = p.flags();
        let mut repr = TcpRepr {
            src_port: p.src_port(),
            dst_port: p.dst_port(),
            seq: p.seq_number(),
            ack: if flags.contains(TcpFlags::ACK) { Some(p.ack_number()) } else { None },
            flags: flags.without(TcpFlags::ACK),
            window: p.window_len(),
            eln: p.eln(),
            ..TcpRepr::default()
        };
        repr.read_options(&p.buffer.as_ref()[HEADER_LEN..p.header_len()])?;
        Ok(repr)
    }

    /// [`TcpRepr::parse`] of a segment whose fixed header was read as `h` (by [`crate::Headers::parse`]),
    /// `segment` being its header and payload: only the options are read here.
    pub fn from_header(h: &crate::TcpHeader, segment: &[u8]) -> Result<TcpRepr> {
        let mut repr = TcpRepr {
            src_port: h.src_port,
            dst_port: h.dst_port,
            seq: h.seq,
            ack: if h.flags.contains(TcpFlags::ACK) { Some(h.ack) } else { None },
            flags: h.flags.without(TcpFlags::ACK),
            window: h.window,
            eln: h.offset_byte & ELN_MASK != 0,
            ..TcpRepr::default()
        };
        let hl = usize::from(h.header_len);
        if hl > HEADER_LEN {
            repr.read_options(segment.get(HEADER_LEN..hl).ok_or(WireError::Truncated)?)?;
        }
        Ok(repr)
    }

    /// Reads the options `options` into the fields they set; a malformed option is an error.
    fn read_options(&mut self, options: &[u8]) -> Result<()> {
        let repr = self;
        for opt in (OptionIter { rest: options }) {
            match opt? {
                TcpOption::MaxSegmentSize(m) => repr.mss = Some(m),
                TcpOption::WindowScale(s) => repr.window_scale = Some(s),
                TcpOption::SackPermitted => repr.sack_permitted = true,
                TcpOption::SackRange(b) => repr.sack = b,
                TcpOption::Timestamps { tsval, tsecr } => repr.timestamps = Some((tsval, tsecr)),
                ref o if crate::handoff_option::is_mark(o) => repr.handoff_mark = true,
                _ => {}
            }
        }
        Ok(())
    }

    /// Length of the options, padded to a multiple of four with NOPs.
    fn options_len(&self) -> usize {
        let mut n = 0;
        if self.mss.is_some() {
            n += 4;
        }
        if self.window_scale.is_some() {
            n += 3;
        }
        if self.sack_permitted {
            n += 2;
        }
        if self.timestamps.is_some() {
            n += 10;
        }
        if !self.sack.is_empty() {
            n += 2 + 8 * self.sack.len();
        }
        if self.handoff_mark {
            n += usize::from(crate::handoff_option::LEN);
        }
        n.div_ceil(4) * 4
    }

    pub fn header_len(&self) -> usize {
        HEADER_LEN + self.options_len()
    }

    /// How many SACK blocks fit in the 40 bytes of option space beside the other options.
    pub fn max_sack_blocks(&self) -> usize {
        let mut other = 0;
        if self.mss.is_some() {
            other += 4;
        }
        if self.window_scale.is_some() {
            other += 3;
        }
        if self.sack_permitted {
            other += 2;
        }
        if self.timestamps.is_some() {
            other += 10;
        }
        if self.handoff_mark {
            other += usize::from(crate::handoff_option::LEN);
        }
        ((40usize.saturating_sub(other)).saturating_sub(2) / 8).min(SackBlocks::MAX)
    }

    /// Writes header, options and `payload` into `buf` (exactly `header_len() + payload.len()` bytes),
    /// then the checksum over the IPv4 pseudo-header of `src` and `dst`.
    pub fn emit(&self, buf: &mut [u8], src: Ipv4Addr, dst: Ipv4Addr, payload: &[u8]) {
        let hl = self.write_header(buf);
        let end = hl + payload.len();
        buf[hl..end].copy_from_slice(payload);
        TcpPacket::new_unchecked(&mut buf[..end]).fill_checksum(src, dst);
    }

    /// Writes every byte of the header into `buf[..header_len()]`: fields, options and NOP padding, the
    /// checksum zero. Returns the header's length.
    fn write_header(&self, buf: &mut [u8]) -> usize {
        let hl = self.header_len();
        assert!(hl <= MAX_HEADER_LEN, "TCP options exceed 40 bytes");
        // Bounds checked once here, so the fixed fields below are written without a check each.
        let buf = &mut buf[..hl];
        let fixed: &mut [u8; HEADER_LEN] = buf.first_chunk_mut().expect("a header is at least 20 bytes");
        fixed[field::SRC_PORT].copy_from_slice(&self.src_port.to_be_bytes());
        fixed[field::DST_PORT].copy_from_slice(&self.dst_port.to_be_bytes());
        fixed[field::SEQ_NUM].copy_from_slice(&self.seq.0.to_be_bytes());
        fixed[field::ACK_NUM].copy_from_slice(&self.ack.unwrap_or_default().0.to_be_bytes());
        fixed[field::OFF_RES] = ((hl / 4) as u8) << 4 | if self.eln { ELN_MASK } else { 0 };
        let flags = if self.ack.is_some() { self.flags | TcpFlags::ACK } else { self.flags };
        fixed[field::FLAGS] = flags.0;
        fixed[field::WIN_SIZE].copy_from_slice(&self.window.to_be_bytes());
        fixed[field::CHECKSUM].copy_from_slice(&[0, 0]);
        fixed[field::URGENT].copy_from_slice(&[0, 0]);
        let mut o = HEADER_LEN;
        if let Some(mss) = self.mss {
            buf[o..o + 4].copy_from_slice(&[option_kind::MSS, 4, (mss >> 8) as u8, mss as u8]);
            o += 4;
        }
        if let Some(ws) = self.window_scale {
            buf[o..o + 3].copy_from_slice(&[option_kind::WINDOW_SCALE, 3, ws]);
            o += 3;
        }
        if self.sack_permitted {
            buf[o..o + 2].copy_from_slice(&[option_kind::SACK_PERMITTED, 2]);
            o += 2;
        }
        if let Some((tsval, tsecr)) = self.timestamps {
            buf[o] = option_kind::TIMESTAMPS;
            buf[o + 1] = 10;
            buf[o + 2..o + 6].copy_from_slice(&tsval.to_be_bytes());
            buf[o + 6..o + 10].copy_from_slice(&tsecr.to_be_bytes());
            o += 10;
        }
        if !self.sack.is_empty() {
            buf[o] = option_kind::SACK;
            buf[o + 1] = (2 + 8 * self.sack.len()) as u8;
            o += 2;
            for (l, r) in self.sack.as_slice() {
                buf[o..o + 4].copy_from_slice(&l.0.to_be_bytes());
                buf[o + 4..o + 8].copy_from_slice(&r.0.to_be_bytes());
                o += 8;
            }
        }
        if self.handoff_mark {
            buf[o..o + 4].copy_from_slice(&crate::handoff_option::to_bytes());
            o += 4;
        }
        buf[o..].fill(option_kind::NOP);
        hl
    }

    /// Builds a whole IPv4 packet carrying this segment: the form in which lasthop moves TCP around.
    pub fn emit_ipv4(&self, src: Ipv4Addr, dst: Ipv4Addr, ident: u16, ttl: u8, payload: &[u8]) -> Bytes {
        self.emit_ipv4_with(src, dst, ident, ttl, payload.len(), |out| {
            out.extend_from_slice(payload);
            None
        })
    }

    /// [`TcpRepr::emit_ipv4`] with a payload of `payload_len` bytes appended to the packet by
    /// `append_payload` (no buffer of its own, nor a copy from one). `append_payload` returns the payload's
    /// one's-complement sum when it knows it without reading the bytes (any value congruent to
    /// [`checksum::sum`] of what it appended, modulo 0xffff), or `None` to have the bytes summed. The
    /// headers are written first on the stack: every byte of the packet is written once, none zeroed first.
    pub fn emit_ipv4_with(
        &self,
        src: Ipv4Addr,
        dst: Ipv4Addr,
        ident: u16,
        ttl: u8,
        payload_len: usize,
        append_payload: impl FnOnce(&mut BytesMut) -> Option<u64>,
    ) -> Bytes {
        const IP: usize = crate::ipv4::HEADER_LEN;
        let mut headers = [0u8; IP + MAX_HEADER_LEN];
        let hl = self.write_header(&mut headers[IP..]);
        let ip = Ipv4Repr { src, dst, protocol: PROTO_TCP, ident, ttl, payload_len: hl + payload_len };
        ip.emit(&mut headers[..IP]);
        let mut payload_sum = None;
        let mut buf = crate::buffer::build(ip.buffer_len(), |out| {
            out.extend_from_slice(&headers[..IP + hl]);
            payload_sum = append_payload(out);
        });
        let mut packet = TcpPacket::new_unchecked(&mut buf[IP..]);
        match payload_sum {
            Some(sum) => packet.fill_checksum_with_payload_sum(src, dst, hl, sum),
            None => packet.fill_checksum(src, dst),
        }
        buf.freeze()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ipv4::Ipv4Packet;

    const SRC: Ipv4Addr = Ipv4Addr::new(192, 168, 1, 1);
    const DST: Ipv4Addr = Ipv4Addr::new(192, 168, 1, 2);

    // smoltcp's test segment: ports 48896 -> 80, seq 0x01234567, ack 0x89abcdef, flags URG ACK RST FIN,
    // window 0x0123, urgent 0x0201, options window-scale 12 and NOP, 4 bytes of payload.
    static PACKET: [u8; 28] = [
        0xbf, 0x00, 0x00, 0x50, 0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, 0x60, 0x35, 0x01, 0x23, 0x01, 0xb6,
        0x02, 0x01, 0x03, 0x03, 0x0c, 0x01, 0xaa, 0x00, 0x00, 0xff,
    ];

    #[test]
    fn deconstruct() {
        let p = TcpPacket::new_checked(&PACKET[..]).unwrap();
        assert_eq!(p.src_port(), 48896);
        assert_eq!(p.dst_port(), 80);
        assert_eq!(p.seq_number(), SeqNum(0x01234567));
        assert_eq!(p.ack_number(), SeqNum(0x89abcdef));
        assert_eq!(p.header_len(), 24);
        assert!(p.fin() && p.ack() && !p.syn());
        assert!(p.flags().contains(TcpFlags::URG));
        assert_eq!(p.window_len(), 0x0123);
        assert!(!p.eln());
        let opts: Vec<_> = p.options().collect::<Result<_>>().unwrap();
        assert_eq!(opts, vec![TcpOption::WindowScale(12), TcpOption::NoOperation]);
        assert_eq!(p.payload(), &[0xaa, 0x00, 0x00, 0xff]);
        assert!(p.verify_checksum(SRC, DST));
    }

    #[test]
    fn round_trip_with_all_options() {
        let mut sack = SackBlocks::new();
        sack.push(SeqNum(1000), SeqNum(2460));
        sack.push(SeqNum(4000), SeqNum(5460));
        let repr = TcpRepr {
            src_port: 5001,
            dst_port: 40000,
            seq: SeqNum(12345),
            ack: Some(SeqNum(999)),
            flags: TcpFlags::PSH,
            window: 65535,
            eln: true,
            mss: None,
            window_scale: None,
            sack_permitted: false,
            sack,
            timestamps: Some((7, 8)),
            handoff_mark: false,
        };
        let pkt = repr.emit_ipv4(SRC, DST, 77, 64, b"hello");
        let ip = Ipv4Packet::new_checked(&pkt[..]).unwrap();
        assert!(ip.verify_checksum());
        assert_eq!(ip.ident(), 77);
        let tcp = TcpPacket::new_checked(ip.payload()).unwrap();
        assert!(tcp.verify_checksum(SRC, DST));
        assert!(tcp.eln());
        assert_eq!(tcp.payload(), b"hello");
        assert_eq!(TcpRepr::parse(&tcp).unwrap(), repr);
    }

    #[test]
    fn syn_options_round_trip() {
        let repr = TcpRepr {
            src_port: 1,
            dst_port: 2,
            seq: SeqNum(0),
            flags: TcpFlags::SYN,
            window: 1024,
            mss: Some(1460),
            window_scale: Some(7),
            sack_permitted: true,
            ..TcpRepr::default()
        };
        let mut buf = vec![0u8; repr.header_len()];
        repr.emit(&mut buf, SRC, DST, &[]);
        let p = TcpPacket::new_checked(&buf[..]).unwrap();
        assert_eq!(p.segment_len(), 1);
        assert_eq!(TcpRepr::parse(&p).unwrap(), repr);
    }

    #[test]
    fn eln_bit_set_and_clear_touch_only_that_bit() {
        let mut buf = PACKET;
        let mut p = TcpPacket::new_unchecked(&mut buf[..]);
        p.set_eln(true);
        assert!(p.eln());
        assert_eq!(p.header_len(), 24);
        p.set_eln(false);
        assert!(!p.eln());
        assert_eq!(buf, PACKET, "clearing must restore exactly the original header");
    }

    #[test]
    fn max_sack_blocks_respects_option_space() {
        let mut r = TcpRepr::default();
        assert_eq!(r.max_sack_blocks(), 4);
        r.timestamps = Some((0, 0));
        assert_eq!(r.max_sack_blocks(), 3);
    }

    #[test]
    fn truncated_and_malformed() {
        assert_eq!(TcpPacket::new_checked(&PACKET[..19]).unwrap_err(), WireError::Truncated);
        assert_eq!(TcpPacket::new_checked(&PACKET[..23]).unwrap_err(), WireError::Truncated);
        let mut bad = PACKET;
        bad[12] = 0x40; // data offset 4 words < 5
        assert_eq!(TcpPacket::new_checked(&bad[..]).unwrap_err(), WireError::Malformed);
        let mut bad_opt = PACKET;
        bad_opt[20] = 0x02; // MSS kind with length 3
        bad_opt[21] = 0x03;
        let p = TcpPacket::new_checked(&bad_opt[..]).unwrap();
        assert!(TcpRepr::parse(&p).is_err());
    }

    /// RFC 1071 verification done the plain way, 16 bits at a time with every carry folded at once.
    fn reference_verifies(segment: &[u8], src: Ipv4Addr, dst: Ipv4Addr) -> bool {
        let mut words: Vec<u16> =
            segment.chunks(2).map(|c| u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)])).collect();
        let (s, d) = (src.octets(), dst.octets());
        words.extend([[s[0], s[1]], [s[2], s[3]], [d[0], d[1]], [d[2], d[3]]].map(u16::from_be_bytes));
        words.extend([u16::from(PROTO_TCP), segment.len() as u16]);
        let mut acc: u32 = 0;
        for w in words {
            acc += u32::from(w);
            acc = (acc & 0xffff) + (acc >> 16);
        }
        acc == 0xffff
    }

    #[test]
    fn all_ones_segment_verifies_as_rfc_1071_says() {
        // 64 bytes of 0xff (data offset 15 words): the wide sum is all ones, and adding the pseudo-header
        // overflowed the accumulator. With 0.0.0.0 -> 255.255.255.185 the true sum is 0xffff (valid).
        let seg = [0xffu8; 64];
        let p = TcpPacket::new_checked(&seg[..]).unwrap();
        for (src, dst) in [(Ipv4Addr::new(0, 0, 0, 0), Ipv4Addr::new(255, 255, 255, 185)), (SRC, DST)] {
            assert_eq!(p.verify_checksum(src, dst), reference_verifies(&seg, src, dst), "{src} -> {dst}");
        }
        assert!(p.verify_checksum(Ipv4Addr::new(0, 0, 0, 0), Ipv4Addr::new(255, 255, 255, 185)));
    }

    #[test]
    fn emit_is_right_when_the_wide_sum_reaches_all_ones() {
        // A 20-byte header and 44 payload bytes are eight 64-bit words; the last one is chosen so that the
        // end-around-carry sum of the eight is exactly u64::MAX.
        let repr =
            TcpRepr { src_port: 1, dst_port: 2, seq: SeqNum(3), ack: Some(SeqNum(4)), window: 5, ..TcpRepr::default() };
        let mut payload = [0x77u8; 44];
        let mut seg = vec![0u8; 64];
        repr.emit(&mut seg, SRC, DST, &payload);
        seg[16..18].copy_from_slice(&[0, 0]);
        let mut acc: u64 = 0;
        for c in seg[..56].chunks_exact(8) {
            let (s, carry) = acc.overflowing_add(u64::from_be_bytes(c.try_into().unwrap()));
            acc = s + u64::from(carry);
        }
        payload[36..44].copy_from_slice(&(u64::MAX - acc).to_be_bytes());
        let ip = repr.emit_ipv4(SRC, DST, 1, 64, &payload);
        let tcp = &ip[crate::ipv4::HEADER_LEN..];
        assert!(reference_verifies(tcp, SRC, DST));
        assert!(TcpPacket::new_checked(tcp).unwrap().verify_checksum(SRC, DST));
    }

    proptest::proptest! {
        #[test]
        fn parsing_arbitrary_bytes_never_panics(data in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..80)) {
            if let Ok(p) = TcpPacket::new_checked(&data[..]) {
                let _ = TcpRepr::parse(&p);
                let _ = p.payload();
                let _ = p.segment_len();
            }
        }
    }
}

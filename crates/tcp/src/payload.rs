//! The deterministic content of a bulk transfer: application byte `i` of every stream is
//! `PATTERN[i % 65521]`, so a receiver can check integrity without the sender's buffer. The period is a
//! prime, so it never lines up with an MSS or window and a misplaced segment is always detected.

/// Length of the pattern: the largest prime below 2^16.
const PERIOD: usize = 65521;

/// The pattern, computed at compile time (xorshift32 from a fixed seed: cheap, and no byte value is
/// favoured), so that no run or process pays for building it.
static PATTERN: [u8; PERIOD] = build_pattern();

const fn build_pattern() -> [u8; PERIOD] {
    let mut pattern = [0u8; PERIOD];
    let mut x: u32 = 0x9e37_79b9;
    let mut i = 0;
    while i < PERIOD {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        pattern[i] = (x >> 24) as u8;
        i += 1;
    }
    pattern
}

/// Positions between two entries of [`BLOCK_SUMS`].
const BLOCK: usize = 16;
// The table's last entry is written at the last block's start, which must lie inside the period.
const _: () = assert!(!PERIOD.is_multiple_of(BLOCK));

/// What the pattern's byte at position `i` weighs in the Internet checksum when the stretch summed starts at
/// an even position: the high byte of a big-endian 16-bit word (even `i`) or the low one.
const fn weight(i: usize) -> u32 {
    if i.is_multiple_of(2) {
        256
    } else {
        1
    }
}

/// `BLOCK_SUMS[k]`: the sum of `PATTERN[..BLOCK * k]` read as big-endian 16-bit words that start at even
/// positions (an even position's byte weighs 256, an odd one's 1), for the Internet checksum of a payload
/// without reading it ([`content_sum`]). At most 65,521 · 255 · 256 < 2^32. One entry per 16 positions
/// keeps the table at 16 KB, which stays in cache for a whole run; an entry per position (256 KB) cost a
/// cache miss on most of a bulk sender's segments.
static BLOCK_SUMS: [u32; PERIOD / BLOCK + 1] = {
    let pattern = &PATTERN;
    let mut sums = [0u32; PERIOD / BLOCK + 1];
    let (mut i, mut sum) = (0, 0u32);
    while i < PERIOD {
        if i % BLOCK == 0 {
            sums[i / BLOCK] = sum;
        }
        sum += pattern[i] as u32 * weight(i);
        i += 1;
    }
    sums
};

/// The weighted sum of `PATTERN[..i]` (as [`BLOCK_SUMS`] counts it), for `i` up to `PERIOD`: the block
/// sum before it plus the at most 15 bytes after the block's start. A block starts at an even position,
/// so those bytes weigh as big-endian 16-bit words: they are read as one 128-bit number, the bytes from `i`
/// on masked off, and its eight words added in two 32-bit lanes (not byte by byte: this is on every
/// segment a bulk sender builds). The last block, shorter than 16 bytes, is summed byte by byte.
#[inline]
fn word_sum_to(i: usize) -> u32 {
    let start = i / BLOCK * BLOCK;
    let tail = match PATTERN[start..].first_chunk::<BLOCK>() {
        Some(&block) => {
            let words = u128::from_be_bytes(block);
            let kept = words & u128::MAX.checked_shl(8 * (BLOCK + start - i) as u32).unwrap_or(0);
            let pairs = |w: u64| (w & 0x0000_ffff_0000_ffff) + ((w >> 16) & 0x0000_ffff_0000_ffff);
            let lanes = pairs((kept >> 64) as u64) + pairs(kept as u64);
            ((lanes & 0xffff_ffff) + (lanes >> 32)) as u32
        }
        None => (start..i).map(|j| PATTERN[j] as u32 * weight(j)).sum(),
    };
    BLOCK_SUMS[i / BLOCK] + tail
}

fn pattern() -> &'static [u8] {
    &PATTERN
}

/// The stretches of the pattern that make up stream bytes `offset .. offset + len`, in order.
fn stretches(offset: u64, len: usize) -> impl Iterator<Item = &'static [u8]> {
    let mut pos = (offset % PERIOD as u64) as usize;
    let mut left = len;
    std::iter::from_fn(move || {
        let n = left.min(PERIOD - pos);
        let s = (n > 0).then(|| &pattern()[pos..pos + n]);
        left -= n;
        pos = 0;
        s
    })
}

/// Writes the content of stream bytes `offset .. offset + buf.len()` into `buf`.
pub fn fill(offset: u64, buf: &mut [u8]) {
    let mut out = buf;
    for s in stretches(offset, out.len()) {
        out[..s.len()].copy_from_slice(s);
        out = &mut out[s.len()..];
    }
}

/// Appends the content of stream bytes `offset .. offset + len` to `out` (a packet being built).
pub fn append(offset: u64, len: usize, out: &mut bytes::BytesMut) {
    for s in stretches(offset, len) {
        out.extend_from_slice(s);
    }
}

/// The one's-complement sum (RFC 1071) of stream bytes `offset .. offset + len`, from running sums of the
/// pattern instead of reading the bytes: a value congruent modulo 0xffff to
/// [`lasthop_wire::checksum::sum`] of them, what [`lasthop_wire::TcpRepr::emit_ipv4_with`] takes. A
/// stretch of the pattern that starts at an odd position of the payload relative to the pattern's parity
/// has its words' bytes swapped, and a swapped sum is the sum times 256 modulo 0xffff (RFC 1071 §2(B),
/// byte order independence).
pub fn content_sum(offset: u64, len: usize) -> u64 {
    let mut pos = (offset % PERIOD as u64) as usize;
    let mut done = 0;
    let mut total = 0u64;
    while done < len {
        let n = (len - done).min(PERIOD - pos);
        let sum = u64::from(word_sum_to(pos + n) - word_sum_to(pos)) % 0xffff;
        total += if (pos + done).is_multiple_of(2) { sum } else { sum * 256 % 0xffff };
        done += n;
        pos = 0;
    }
    total
}

/// Whether `data` is exactly the content of stream bytes `offset .. offset + data.len()`.
pub fn matches(offset: u64, data: &[u8]) -> bool {
    let mut rest = data;
    stretches(offset, data.len()).all(|s| {
        let (here, after) = rest.split_at(s.len());
        rest = after;
        here == s
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_sums_give_every_prefix_sum() {
        let mut direct = 0u32;
        for (i, &byte) in PATTERN.iter().enumerate() {
            assert_eq!(word_sum_to(i), direct, "prefix of {i} bytes");
            direct += u32::from(byte) * if i % 2 == 0 { 256 } else { 1 };
        }
        assert_eq!(word_sum_to(PERIOD), direct, "the whole period");
    }

    #[test]
    fn fill_and_matches_agree_across_the_period_boundary() {
        let mut buf = vec![0u8; 3000];
        let off = PERIOD as u64 * 7 - 1000;
        fill(off, &mut buf);
        assert!(matches(off, &buf));
        assert!(!matches(off + 1, &buf));
        assert_eq!(buf[1000], pattern()[0]);
        let mut tail = buf.clone();
        tail[2999] ^= 1;
        assert!(!matches(off, &tail));
    }

    #[test]
    fn pattern_is_the_xorshift_sequence() {
        // The first bytes of xorshift32 from 0x9e3779b9, computed at run time.
        let mut x: u32 = 0x9e37_79b9;
        let head: Vec<u8> = (0..64)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                (x >> 24) as u8
            })
            .collect();
        assert_eq!(&pattern()[..64], &head[..]);
        assert_eq!(pattern().len(), PERIOD);
    }

    /// The plain RFC 1071 sum, 16 bits at a time with the carries folded at every step.
    fn rfc1071_sum(data: &[u8]) -> u64 {
        let mut acc: u32 = 0;
        for c in data.chunks(2) {
            acc += u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]));
            acc = (acc & 0xffff) + (acc >> 16);
        }
        u64::from(acc)
    }

    #[test]
    fn summed_fill_is_the_rfc1071_sum_of_the_bytes() {
        // Even and odd offsets and lengths, and stretches across one and two period boundaries.
        let cases = [
            (0, 1460),
            (1, 1460),
            (7, 1),
            (1460 * 44 + 3, 1459),
            (PERIOD as u64 - 1, 2),
            (PERIOD as u64 * 3 - 701, 1460),
        ];
        for (offset, len) in cases.into_iter().chain([(PERIOD as u64 - 5, PERIOD + 11), (0, 0)]) {
            let mut buf = vec![0u8; len];
            fill(offset, &mut buf);
            let sum = content_sum(offset, len);
            assert!(matches(offset, &buf));
            assert_eq!(sum % 0xffff, rfc1071_sum(&buf) % 0xffff, "offset {offset}, {len} bytes");
            assert_eq!(sum % 0xffff, lasthop_wire::checksum::sum(&buf) % 0xffff, "offset {offset}, {len} bytes");
        }
    }

    /// A segment built with the pattern's sum is byte for byte the segment built by summing its bytes.
    #[test]
    fn segment_checksummed_from_the_sum_equals_one_summed_byte_by_byte() {
        use lasthop_wire::{SeqNum, TcpRepr};
        use std::net::Ipv4Addr;
        let (src, dst) = (Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 1, 0, 1));
        for (offset, len) in [(0u64, 1460usize), (PERIOD as u64 - 3, 1460), (12_345, 1), (99, 0)] {
            let repr = TcpRepr {
                src_port: 20_000,
                dst_port: 5001,
                seq: SeqNum(7),
                ack: Some(SeqNum(9)),
                window: 65535,
                ..TcpRepr::default()
            };
            let summed = repr.emit_ipv4_with(src, dst, 1, 64, len, |out| {
                append(offset, len, out);
                Some(content_sum(offset, len))
            });
            let read = repr.emit_ipv4_with(src, dst, 1, 64, len, |out| {
                append(offset, len, out);
                None
            });
            assert_eq!(summed, read, "offset {offset}, {len} bytes");
        }
    }

    proptest::proptest! {
        #[test]
        fn summed_fill_agrees_with_summing_anywhere(offset in 0u64..10_000_000, len in 0usize..3000) {
            let mut buf = vec![0u8; len];
            fill(offset, &mut buf);
            let sum = content_sum(offset, len);
            proptest::prop_assert_eq!(sum % 0xffff, rfc1071_sum(&buf) % 0xffff);
        }
    }

    #[test]
    fn segments_at_mss_offsets_differ() {
        let (mut a, mut b) = ([0u8; 1460], [0u8; 1460]);
        fill(0, &mut a);
        fill(1460, &mut b);
        assert_ne!(a, b);
        assert!(matches(5, &[]));
    }
}

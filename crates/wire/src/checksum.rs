//! The Internet checksum (RFC 1071) and the TCP/UDP pseudo-header sum.

/// One's-complement sum of `data` as big-endian 16-bit words, not yet inverted. The result is at most
/// 0xffff, so a caller may add a handful of such sums and pseudo-header sums in a `u64` without overflow;
/// [`add`] adds any two with end-around carry.
///
/// Every simulated segment is summed when it is built and again by each checker (IP, TCP, agents), so this
/// is on the per-packet path. The data is read as native-endian 32-bit words into sixteen independent `u64`
/// lanes (a 64-byte block per step, so that the loop's own overhead is paid half as often as with 32-byte
/// blocks): no byte swap per word, no carry chain (a lane cannot carry out before 2^32 words), and the loop
/// vectorises. This gives the same 16-bit sum as word-by-word addition: any grouping of 16-bit words gives
/// the same one's-complement sum since 2^16 ≡ 1 (mod 2^16 − 1) (RFC 1071 §2(B), "deferred carries"), and a
/// sum taken in the other byte order is the byte-swapped sum (RFC 1071 §2(B), "byte order independence");
/// it is zero only for all-zero data, as the word-by-word sum is.
///
/// On x86-64 processors with AVX2 the same loop is compiled a second time for it and chosen at run time
/// (the portable build only assumes SSE2): twice the words per instruction on a receiver's verification of
/// every segment. The result is the same bit for bit; a test compares both with the plain word-by-word sum.
pub fn sum(data: &[u8]) -> u64 {
    if data.len() < SHORT_BELOW {
        return sum_short(data);
    }
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the processor has just been found to support AVX2, all that the function requires.
        return unsafe { sum_avx2(data) };
    }
    sum_lanes(data)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn sum_avx2(data: &[u8]) -> u64 {
    sum_lanes(data)
}

/// Inputs shorter than this (20- to 60-byte headers, about four in five of the calls) take
/// [`sum_short`]: for them the lanes' loop and its dispatch cost more than the adding.
const SHORT_BELOW: usize = 32;

/// [`sum`] of fewer than [`SHORT_BELOW`] bytes: native 64-bit words added with end-around carry (2^16 − 1
/// divides 2^64 − 1, so this is the same one's-complement sum, RFC 1071 §2(B)), then the last 4-, 2- and
/// 1-byte pieces, each read in native order at an even offset, so each byte keeps its half of a 16-bit word.
#[inline(always)]
fn sum_short(data: &[u8]) -> u64 {
    let mut acc = 0u64;
    let mut words = data.chunks_exact(8);
    for word in &mut words {
        acc = add(acc, u64::from_ne_bytes(word.try_into().expect("8 bytes")));
    }
    let mut rest = words.remainder();
    if let Some((piece, after)) = rest.split_first_chunk::<4>() {
        acc = add(acc, u64::from(u32::from_ne_bytes(*piece)));
        rest = after;
    }
    if let Some((piece, after)) = rest.split_first_chunk::<2>() {
        acc = add(acc, u64::from(u16::from_ne_bytes(*piece)));
        rest = after;
    }
    if let Some(&last) = rest.first() {
        acc = add(acc, u64::from(u16::from_ne_bytes([last, 0])));
    }
    let native = fold(fold32(acc));
    u64::from(u16::from_be_bytes(native.to_ne_bytes()))
}

/// [`sum`]'s loop, inlined into each of its compilations.
#[inline(always)]
fn sum_lanes(data: &[u8]) -> u64 {
    const LANES: usize = 16;
    let mut blocks = data.chunks_exact(4 * LANES);
    // Headers (20 to 60 bytes) are most of the calls: below one block the lanes and their folds are skipped.
    let mut acc = 0;
    if data.len() >= 4 * LANES {
        let mut lanes = [0u64; LANES];
        for block in &mut blocks {
            for (lane, word) in lanes.iter_mut().zip(block.chunks_exact(4)) {
                *lane += u64::from(u32::from_ne_bytes([word[0], word[1], word[2], word[3]]));
            }
        }
        acc = lanes.iter().map(|&l| fold32(l)).sum();
    }
    let mut words = blocks.remainder().chunks_exact(4);
    for word in &mut words {
        acc += u64::from(u32::from_ne_bytes([word[0], word[1], word[2], word[3]]));
    }
    let rest = words.remainder();
    let mut tail = [0u8; 4];
    tail[..rest.len()].copy_from_slice(rest);
    let native = fold(fold32(acc + u64::from(u32::from_ne_bytes(tail))));
    // The 16-bit words were read in native order; the sum in network order is its big-endian reading.
    u64::from(u16::from_be_bytes(native.to_ne_bytes()))
}

/// Folds a 64-bit one's-complement sum to at most 2^32: 2^32 is congruent to 1 modulo 2^16 - 1, so the
/// high half is added into the low half without changing the checksum.
fn fold32(acc: u64) -> u64 {
    let acc = (acc & 0xffff_ffff) + (acc >> 32);
    (acc & 0xffff_ffff) + (acc >> 32)
}

/// One's-complement addition of two running sums: the carry out of bit 63 comes back in at bit 0
/// (RFC 1071 §2(A)), so no sum overflows whatever its operands.
pub fn add(a: u64, b: u64) -> u64 {
    let (s, carry) = a.overflowing_add(b);
    s + u64::from(carry)
}

/// Folds a running sum to 16 bits (without inverting).
pub fn fold(mut acc: u64) -> u16 {
    while acc > 0xffff {
        acc = (acc & 0xffff) + (acc >> 16);
    }
    acc as u16
}

/// The checksum field value for `data` alone (e.g. an IPv4 header).
pub fn checksum(data: &[u8]) -> u16 {
    !fold(sum(data))
}

/// Sum of the IPv4 pseudo-header used by TCP and UDP.
pub fn pseudo_header(src: [u8; 4], dst: [u8; 4], protocol: u8, length: u16) -> u64 {
    let mut acc = u64::from(u16::from_be_bytes([src[0], src[1]]));
    acc += u64::from(u16::from_be_bytes([src[2], src[3]]));
    acc += u64::from(u16::from_be_bytes([dst[0], dst[1]]));
    acc += u64::from(u16::from_be_bytes([dst[2], dst[3]]));
    acc += u64::from(protocol);
    acc += u64::from(length);
    acc
}

/// Writes `new` over `data[at..]` and updates the 16-bit checksum stored at `data[checksum_at..+2]`
/// *incrementally* (RFC 1624 eqn. 3: HC' = ~(~HC + ~m + m')), never recomputing it from the data. An
/// incremental update keeps a bad checksum exactly as bad and a good one good: recomputing would make a
/// segment corrupted on the way valid again, and the end host would accept the corrupted bytes.
///
/// Offsets are from the start of the checksummed data, whose 16-bit word boundaries they must respect
/// through their parity; `at` may be odd (the words it touches are updated whole). Returns `false`, and
/// changes nothing, when the rewritten words would overlap the checksum field or fall outside `data`.
pub fn rewrite_incremental(data: &mut [u8], checksum_at: usize, at: usize, new: &[u8]) -> bool {
    let start = at & !1;
    // A rewrite that ends the data on an odd byte touches a word whose missing half counts as zero.
    let end = ((at + new.len() + 1) & !1).min(data.len());
    let csum = checksum_at..checksum_at + 2;
    let fits = at + new.len() <= data.len() && csum.end <= data.len();
    if !checksum_at.is_multiple_of(2) || !fits || (start < csum.end && csum.start < end) {
        return false;
    }
    let old_sum = fold(sum(&data[start..end]));
    data[at..at + new.len()].copy_from_slice(new);
    let new_sum = fold(sum(&data[start..end]));
    let hc = u16::from_be_bytes([data[csum.start], data[csum.start + 1]]);
    let hc2 = !fold(u64::from(!hc) + u64::from(!old_sum) + u64::from(new_sum));
    data[csum].copy_from_slice(&hc2.to_be_bytes());
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc1071_example() {
        // The example of RFC 1071 §3: words 0001 f203 f4f5 f6f7 sum to ddf2 (folded).
        let data = [0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7];
        assert_eq!(fold(sum(&data)), 0xddf2);
        assert_eq!(checksum(&data), !0xddf2);
    }

    #[test]
    fn odd_length_pads_with_zero() {
        assert_eq!(fold(sum(&[0x12, 0x34, 0x56])), 0x1234 + 0x5600);
    }

    #[test]
    fn all_ones_never_overflows_the_accumulator() {
        // Eight 0xffff_ffff_ffff_ffff words: the wide sum is "negative zero", and adding a pseudo-header
        // to it must carry around rather than overflow.
        let data = [0xffu8; 64];
        assert_eq!(fold(add(sum(&data), 0x1234)), 0x1234);
        assert_eq!(
            fold(sum(&data) + pseudo_header([255; 4], [255; 4], 255, 0xffff)),
            fold(add(sum(&data), pseudo_header([255; 4], [255; 4], 255, 0xffff)))
        );
    }

    #[test]
    fn all_ones_packet_folds_to_negative_zero_not_zero() {
        // Every lane full of ones, and a length that leaves whole words and a tail: the sum is "negative
        // zero" (0xffff), never 0, which only all-zero data gives.
        for len in [1500, 1501, 1503, 65535] {
            assert_eq!(fold(sum(&vec![0xff; len & !1])), 0xffff, "{len}");
        }
        assert_eq!(fold(sum(&[0u8; 1500])), 0);
    }

    /// The plain RFC 1071 sum, 16 bits at a time with the carries folded at every step.
    fn reference(data: &[u8]) -> u16 {
        let mut acc: u32 = 0;
        for c in data.chunks(2) {
            acc += u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]));
            acc = (acc & 0xffff) + (acc >> 16);
        }
        acc as u16
    }

    /// Every length around the lanes' block (headers are shorter than one, segments longer), each byte
    /// value in every position of a word: the short path and the block path agree with the plain sum.
    #[test]
    fn every_length_up_to_three_blocks_sums_as_rfc1071() {
        let data: Vec<u8> = (0..192u32).map(|i| (i.wrapping_mul(0x9e37_79b9) >> 24) as u8 | 0x81).collect();
        for len in 0..=data.len() {
            let d = &data[..len];
            assert_eq!(fold(sum(d)) % 0xffff, reference(d) % 0xffff, "{len} bytes");
            assert_eq!(sum_lanes(d), sum(d), "{len} bytes");
            if len < SHORT_BELOW {
                assert_eq!(sum_short(d), sum_lanes(d), "{len} bytes");
            }
        }
    }

    proptest::proptest! {
        /// A rewrite keeps the checksum's verdict: good stays good, bad stays exactly as far off.
        #[test]
        fn incremental_rewrite_keeps_the_verdict(
            mut data in proptest::collection::vec(proptest::prelude::any::<u8>(), 8..120),
            at in 4usize..100, new in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..9), bad: u16,
        ) {
            let at = 4 + at % (data.len() - 4);
            let new = &new[..new.len().min(data.len() - at)];
            data[0..2].copy_from_slice(&[0, 0]);
            let good = !reference(&data);
            data[0..2].copy_from_slice(&good.wrapping_add(bad).to_be_bytes());
            let before = reference(&data);
            proptest::prop_assert!(rewrite_incremental(&mut data, 0, at, new));
            proptest::prop_assert_eq!(&data[at..at + new.len()], new);
            // Sums equal as one's-complement numbers (0 and 0xffff both mean zero).
            let after = reference(&data);
            proptest::prop_assert_eq!(before % 0xffff, after % 0xffff);
        }

        #[test]
        fn wide_sum_equals_naive_sum(data in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..3000)) {
            let mut naive: u32 = 0;
            for c in data.chunks(2) {
                let w = if c.len() == 2 { u16::from_be_bytes([c[0], c[1]]) } else { u16::from_be_bytes([c[0], 0]) };
                naive += u32::from(w);
            }
            while naive > 0xffff { naive = (naive & 0xffff) + (naive >> 16); }
            proptest::prop_assert_eq!(fold(sum(&data)), naive as u16);
            // The portable loop too, whichever of the two `sum` chose on this processor.
            proptest::prop_assert_eq!(fold(sum_lanes(&data)), naive as u16);
            proptest::prop_assert_eq!(sum_lanes(&data), sum(&data));
        }
    }
}

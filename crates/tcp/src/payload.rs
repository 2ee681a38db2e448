//! The deterministic content of a bulk transfer: application byte `i` of every stream is
//! `PATTERN[i % 65521]`, so a receiver can check integrity without the sender's buffer. The period is a
//! prime, so it never lines up with an MSS or window and a misplaced segment is always detected.

/// Length of the pattern: the largest prime below 2^16.
const PERIOD: usize = 65521;

/// The pattern, computed at compile time (xorshift32 from a fixed seed: cheap, and no byte value is
/// favoured), so that no run or process pays for building it.
static PATTERN: [u8; PERIOD] = {
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
};

fn pattern() -> &'static [u8] {
    &PATTERN
}

/// Writes the content of stream bytes `offset .. offset + buf.len()` into `buf`.
pub fn fill(offset: u64, buf: &mut [u8]) {
    let pat = pattern();
    let mut pos = (offset % PERIOD as u64) as usize;
    let mut out = buf;
    while !out.is_empty() {
        let n = out.len().min(PERIOD - pos);
        out[..n].copy_from_slice(&pat[pos..pos + n]);
        out = &mut out[n..];
        pos = 0;
    }
}

/// Whether `data` is exactly the content of stream bytes `offset .. offset + data.len()`.
pub fn matches(offset: u64, data: &[u8]) -> bool {
    let pat = pattern();
    let mut pos = (offset % PERIOD as u64) as usize;
    let mut rest = data;
    while !rest.is_empty() {
        let n = rest.len().min(PERIOD - pos);
        if rest[..n] != pat[pos..pos + n] {
            return false;
        }
        rest = &rest[n..];
        pos = 0;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn segments_at_mss_offsets_differ() {
        let (mut a, mut b) = ([0u8; 1460], [0u8; 1460]);
        fill(0, &mut a);
        fill(1460, &mut b);
        assert_ne!(a, b);
        assert!(matches(5, &[]));
    }
}

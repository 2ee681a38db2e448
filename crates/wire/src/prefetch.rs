//! Cache prefetch hints, for state that is known to be needed before the code reaches it (Snoop's
//! connection lines for a batch of packets, the simulator's next flows ahead of their start).

const LINE: usize = 64;

/// Asks the processor for the cache line holding `*p` (a hint: it reads nothing architecturally and never
/// faults; a no-op off x86-64).
#[inline(always)]
pub fn line<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint; it dereferences nothing and cannot fault, whatever the address.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p.cast::<i8>())
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// Asks for every line of `*value`'s inline part (what a pointer inside it points to is not followed).
#[inline]
pub fn object<T: ?Sized>(value: &T) {
    let start = (value as *const T).cast::<u8>();
    let (skew, lines) = span(start as usize, std::mem::size_of_val(value));
    let first = start.wrapping_sub(skew);
    for i in 0..lines {
        line(first.wrapping_add(i * LINE));
    }
}

/// For `len` bytes at `addr`: how far `addr` is into its line, and how many lines the bytes touch.
fn span(addr: usize, len: usize) -> (usize, usize) {
    let skew = addr % LINE;
    (skew, (skew + len).div_ceil(LINE))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_object_spans_the_lines_its_bytes_touch() {
        assert_eq!(span(128, 64), (0, 1), "one aligned line");
        assert_eq!(span(128 + 48, 80), (48, 2), "16 bytes in the first line, 64 in the next");
        assert_eq!(span(128 + 48, 81), (48, 3), "and one byte in a third");
        assert_eq!(span(128 + 63, 2), (63, 2));
        assert_eq!(span(200, 0), (8, 1), "an empty value: its own line, harmlessly");
        // A real value, unsized too: no panic, whatever its alignment.
        object(&[7u8; 300][1..]);
        object(&());
    }
}

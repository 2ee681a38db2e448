//! Packet buffers for the forwarding path: [`Bytes`] whose storage comes from, and goes back to, a free
//! list of the thread that forwards.
//!
//! Every forwarded frame is copied twice (its IPv4 packet out of the receive buffer, then into a fresh
//! Ethernet frame), and an agent keeps some packets for a while (Snoop's cache). With `malloc`, a
//! 1.5 KB buffer is too big for glibc's per-thread cache, so each copy took the allocator's slow path, and
//! buffers an agent held made the next ones land on cold memory (`perf` on `lasthop bench forward`: malloc,
//! free and the copies into fresh chunks were a quarter of a Snoop frame). Here a buffer is taken from the
//! top of a stack and returned there when its last reference goes, so the next frame reuses warm memory,
//! and `Bytes::from_owner` keeps the reference count in one small allocation made with the buffer, so the
//! clone an agent keeps is an atomic increment.
//!
//! Bounded: at most [`MAX_POOLED`] buffers wait on a thread's list (the rest are freed); frames larger than
//! [`BUF_LEN`] (GRO super-frames, jumbo frames) are ordinary heap `Bytes`.

use bytes::Bytes;
use std::cell::RefCell;

/// Room in one pooled buffer: a 1500-byte-MTU Ethernet frame with a VLAN tag, with margin.
pub const BUF_LEN: usize = 2048;
/// Most buffers kept per thread (8 MiB): more than a few windows of in-flight frames.
pub const MAX_POOLED: usize = 4096;

type Buf = Box<[u8; BUF_LEN]>;

thread_local! {
    static FREE: RefCell<Vec<Buf>> = const { RefCell::new(Vec::new()) };
}

/// A pooled buffer holding `len` bytes; it goes back to the freeing thread's list when dropped.
struct Pooled {
    buf: Option<Buf>,
    len: usize,
}

impl AsRef<[u8]> for Pooled {
    fn as_ref(&self) -> &[u8] {
        self.buf.as_deref().map_or(&[][..], |b| &b[..self.len])
    }
}

impl Drop for Pooled {
    fn drop(&mut self) {
        let Some(b) = self.buf.take() else { return };
        // `try_with`: a `Bytes` dropped while the thread's locals are being torn down is simply freed.
        let _ = FREE.try_with(|f| {
            if let Ok(mut f) = f.try_borrow_mut() {
                if f.len() < MAX_POOLED {
                    f.push(b);
                }
            }
        });
    }
}

fn take() -> Buf {
    FREE.try_with(|f| f.try_borrow_mut().ok().and_then(|mut f| f.pop()))
        .ok()
        .flatten()
        .unwrap_or_else(|| Box::new([0; BUF_LEN]))
}

/// `len` bytes written by `fill` (which gets exactly `len` bytes to write, initially arbitrary).
pub fn build(len: usize, fill: impl FnOnce(&mut [u8])) -> Bytes {
    if len > BUF_LEN {
        let mut v = vec![0; len];
        fill(&mut v);
        return Bytes::from(v);
    }
    let mut b = take();
    fill(&mut b[..len]);
    Bytes::from_owner(Pooled { buf: Some(b), len })
}

/// The concatenation of `parts`.
pub fn concat(parts: &[&[u8]]) -> Bytes {
    let len = parts.iter().map(|p| p.len()).sum();
    build(len, |out| {
        let mut at = 0;
        for p in parts {
            out[at..at + p.len()].copy_from_slice(p);
            at += p.len();
        }
    })
}

/// A copy of `data`.
pub fn copy(data: &[u8]) -> Bytes {
    concat(&[data])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pooled() -> usize {
        FREE.with(|f| f.borrow().len())
    }

    #[test]
    fn a_buffer_returns_when_its_last_reference_goes() {
        let before = pooled();
        let a = copy(&[1, 2, 3]);
        let b = a.clone();
        assert_eq!(&a[..], &[1, 2, 3]);
        drop(a);
        assert_eq!(pooled(), before.saturating_sub(1), "a clone still holds it");
        assert_eq!(&b[..], &[1, 2, 3]);
        drop(b);
        assert_eq!(pooled(), before.max(1));
    }

    #[test]
    fn slices_and_concatenation_read_right() {
        let f = concat(&[&[1, 2], &[], &[3, 4, 5]]);
        assert_eq!(&f[..], &[1, 2, 3, 4, 5]);
        assert_eq!(&f.slice(1..4)[..], &[2, 3, 4]);
        let reused = copy(&[9; 10]);
        assert_eq!(&reused[..], &[9; 10], "a reused buffer shows only what was written");
    }

    #[test]
    fn frames_bigger_than_a_buffer_use_the_heap() {
        let big = vec![7u8; BUF_LEN + 1];
        let b = copy(&big);
        assert_eq!(b.len(), BUF_LEN + 1);
        assert!(b.iter().all(|&x| x == 7));
        let exact = copy(&big[..BUF_LEN]);
        assert_eq!(exact.len(), BUF_LEN);
    }

    #[test]
    fn the_list_is_bounded() {
        let held: Vec<Bytes> = (0..MAX_POOLED + 10).map(|i| copy(&[i as u8])).collect();
        drop(held);
        assert_eq!(pooled(), MAX_POOLED);
    }
}

//! Packet buffers carved from shared chunks, so that building a segment costs no allocation of its own:
//! every packet `TcpRepr::emit_ipv4` builds is a piece of a 16 KB chunk (about ten full segments, or
//! hundreds of ACKs) that stays allocated while any of its packets lives.
//!
//! A chunk whose packets have all been dropped is reused in place (`BytesMut::reserve` reclaims a buffer
//! no one else holds), so a simulation that builds, carries and drops packets in turn runs on one or two
//! chunks. Cloning a packet (a Snoop cache entry, a slice of its payload) is a reference count, as with any
//! shared `Bytes`. Only the allocation changes: a packet's bytes are its own, appended by its builder where
//! the chunk is free, so nothing is zeroed only to be overwritten.

use bytes::BytesMut;
use std::cell::RefCell;

/// Bytes per chunk. A packet held long (a cached segment) keeps its whole chunk, so chunks stay small.
const CHUNK: usize = 16 * 1024;

/// Packets larger than this get a buffer of their own (they would waste most of a chunk).
const LARGEST_CARVED: usize = CHUNK / 4;

thread_local! {
    /// The chunk packets are carved from: empty (length 0), with the chunk's unused capacity.
    static CHUNK_LEFT: RefCell<BytesMut> = RefCell::new(BytesMut::new());
}

/// One packet of `len` bytes, every one of them appended by `write` to the (empty) buffer it is given.
/// Panics if `write` appends any other number of bytes: a packet never carries bytes no one wrote.
pub fn build(len: usize, write: impl FnOnce(&mut BytesMut)) -> BytesMut {
    let written = |b: &BytesMut| assert_eq!(b.len(), len, "a packet's builder wrote another length than it announced");
    if len > LARGEST_CARVED {
        let mut b = BytesMut::with_capacity(len);
        write(&mut b);
        written(&b);
        return b;
    }
    CHUNK_LEFT.with_borrow_mut(|chunk| {
        // Empty unless a builder panicked half-way: its bytes are not carried into the next packet.
        chunk.clear();
        if chunk.capacity() < len {
            // Reuses the chunk when none of its packets lives any more, else starts a new one.
            chunk.reserve(CHUNK);
        }
        write(chunk);
        written(chunk);
        chunk.split_to(len)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn filled(len: usize, byte: u8) -> BytesMut {
        build(len, |b| b.resize(len, byte))
    }

    #[test]
    fn packets_are_separate_and_outlive_their_chunk() {
        let mut held = Vec::new();
        for i in 0..100usize {
            let b = filled(1500, i as u8);
            assert_eq!(b.len(), 1500);
            held.push(b.freeze());
        }
        // A hundred packets span several chunks; each keeps its own bytes.
        for (i, p) in held.iter().enumerate() {
            assert!(p.iter().all(|&x| x == i as u8));
        }
        let big = filled(LARGEST_CARVED + 1, 7);
        assert_eq!(big.len(), LARGEST_CARVED + 1);
        assert!(filled(0, 7).is_empty());
    }

    #[test]
    #[should_panic(expected = "another length")]
    fn a_builder_must_write_every_byte_it_announced() {
        build(40, |b| b.extend_from_slice(&[0; 39]));
    }

    #[test]
    fn a_builder_that_panicked_leaves_nothing_behind() {
        let half = std::panic::catch_unwind(|| {
            build(40, |b| {
                b.extend_from_slice(&[0xee; 20]);
                panic!("half-way");
            })
        });
        assert!(half.is_err());
        assert!(filled(40, 1).iter().all(|&x| x == 1));
    }

    #[test]
    fn a_chunk_whose_packets_are_gone_is_reused() {
        // Drain the current chunk, then build and drop packets in turn: the chunk comes back each time.
        let first = filled(1000, 1).freeze();
        let chunk_start = first.as_ptr();
        drop(first);
        let mut reused = 0;
        for _ in 0..100 {
            let p = filled(1000, 2).freeze();
            if p.as_ptr() == chunk_start {
                reused += 1;
            }
        }
        assert!(reused >= 5, "a chunk with no live packet is carved again ({reused} of 100)");
    }
}

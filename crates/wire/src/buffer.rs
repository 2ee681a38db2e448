//! Packet buffers carved from shared chunks, so that building a segment costs no allocation of its own:
//! every packet `TcpRepr::emit_ipv4` builds is a piece of a 16 KB chunk (about ten full segments, or
//! hundreds of ACKs) that stays allocated while any of its packets lives.
//!
//! A chunk whose packets have all been dropped is reused in place (`BytesMut::reserve` reclaims a buffer
//! no one else holds), so a simulation that builds, carries and drops packets in turn runs on one or two
//! chunks. Cloning a packet (a Snoop cache entry, a slice of its payload) is a reference count, as with any
//! shared `Bytes`. Only the allocation changes: a packet's bytes are its own, zeroed before it is written.

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

/// A zeroed buffer of `len` bytes for one packet.
pub fn zeroed(len: usize) -> BytesMut {
    if len > LARGEST_CARVED {
        return BytesMut::zeroed(len);
    }
    CHUNK_LEFT.with_borrow_mut(|chunk| {
        if chunk.capacity() < len {
            // Reuses the chunk when none of its packets lives any more, else starts a new one.
            chunk.reserve(CHUNK);
        }
        chunk.resize(len, 0);
        chunk.split_to(len)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packets_are_zeroed_separate_and_outlive_their_chunk() {
        let mut held = Vec::new();
        for i in 0..100usize {
            let mut b = zeroed(1500);
            assert_eq!(b.len(), 1500);
            assert!(b.iter().all(|&x| x == 0), "zeroed even where an earlier packet of the chunk was");
            b.fill(i as u8);
            held.push(b.freeze());
        }
        // A hundred packets span several chunks; each keeps its own bytes.
        for (i, p) in held.iter().enumerate() {
            assert!(p.iter().all(|&x| x == i as u8));
        }
        let big = zeroed(LARGEST_CARVED + 1);
        assert_eq!(big.len(), LARGEST_CARVED + 1);
        assert!(zeroed(0).is_empty());
    }

    #[test]
    fn a_chunk_whose_packets_are_gone_is_reused() {
        // Drain the current chunk, then build and drop packets in turn: the chunk comes back each time.
        let first = zeroed(1000).freeze();
        let chunk_start = first.as_ptr();
        drop(first);
        let mut reused = 0;
        for _ in 0..100 {
            let p = zeroed(1000).freeze();
            if p.as_ptr() == chunk_start {
                reused += 1;
            }
        }
        assert!(reused >= 5, "a chunk with no live packet is carved again ({reused} of 100)");
    }
}

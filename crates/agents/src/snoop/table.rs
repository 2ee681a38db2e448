//! The bounded connection table and the timer queue.
//!
//! Connections live in a slab (`Vec` of slots, reused through a free list) indexed by a `u32`; a
//! `HashMap` maps the packed 4-tuple to the slot. The map is only ever used for lookup, never iterated, so
//! its order cannot leak into the output; its hasher is a fixed mixing function keyed by
//! [`SnoopConfig::hash_seed`](super::SnoopConfig::hash_seed) (no `RandomState`: an agent draws no random
//! numbers; the real base station can pass a random seed to resist hash flooding).
//!
//! **Bound** (DESIGN.md, "The agent contract"): at most `max_connections` slots are live. The slots form an
//! intrusive doubly linked list in order of last activity, so touching a connection on every packet and
//! evicting the least recently active one are both O(1).
//!
//! **Timers**: each connection has at most two deadlines (round-trip and persist, seed 000 §6); their
//! minimum is its *deadline*. A binary heap holds `(time, slot, generation)` entries. A connection records
//! the time of the entry it has in the heap (`Conn::scheduled`); the invariant is `scheduled <= deadline`.
//! When the deadline moves *earlier* a new entry is pushed (the old one goes stale); when it moves later
//! (the persist timer slides forward on every packet) nothing is pushed. After every input `tidy` makes
//! only the *top* exact (pops stale entries, updates in place a top whose deadline moved), so `poll_timeout` is a
//! peek that returns a real deadline, and the per-packet cost is a comparison or two, plus a small heap
//! operation when the touched connection is the one due first. The heap is compacted if stale entries ever
//! outnumber live connections. Ties are broken by slot index, so the firing order is deterministic.

use super::conn::Conn;
use super::parse::pack_key;
use super::Cfg;
use crate::flow::FlowKey;
use lasthop_wire::Time;
use std::cmp::Reverse;
use std::collections::binary_heap::PeekMut;
use std::collections::{BinaryHeap, HashMap};
use std::hash::{BuildHasher, Hasher};

const NIL: u32 = u32::MAX;

/// The 4-tuple packed into 96 bits ([`pack_key`]).
fn pack(k: &FlowKey) -> u128 {
    pack_key(u32::from(k.src), k.src_port, u32::from(k.dst), k.dst_port)
}

#[derive(Debug, Clone, Copy)]
pub(super) struct SeededState(pub u64);

impl BuildHasher for SeededState {
    type Hasher = KeyHasher;
    fn build_hasher(&self) -> KeyHasher {
        KeyHasher(self.0 ^ 0x243f_6a88_85a3_08d3)
    }
}

/// Multiply-xorshift mixing with a splitmix64 finaliser: keys are fixed-size integers, so this is all the
/// hashing needed, and it is ~2 ns instead of SipHash's ~20.
pub(super) struct KeyHasher(u64);

const MUL: u64 = 0x9e37_79b9_7f4a_7c15;

impl Hasher for KeyHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(MUL);
        }
    }
    fn write_u128(&mut self, v: u128) {
        self.0 = (self.0 ^ v as u64).wrapping_mul(MUL);
        self.0 = (self.0.rotate_left(29) ^ (v >> 64) as u64).wrapping_mul(MUL);
    }
    fn finish(&self) -> u64 {
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

#[derive(Debug)]
struct Slot {
    /// Bumped whenever the slot is freed, so heap entries of an evicted connection are recognisably stale.
    gen: u32,
    /// Toward the less recently active neighbour.
    older: u32,
    /// Toward the more recently active neighbour.
    newer: u32,
    conn: Option<Conn>,
}

#[derive(Debug)]
pub(super) struct Table {
    map: HashMap<u128, u32, SeededState>,
    slots: Vec<Slot>,
    free: Vec<u32>,
    /// Least recently active live slot (the eviction victim).
    oldest: u32,
    /// Most recently active live slot.
    newest: u32,
    live: usize,
    /// The most connections live at once.
    peak: usize,
    max: usize,
    /// The last key found and its slot: a burst of one connection's data and ACKs (both directions use the
    /// same FH→MH key) skips the hash. Reset when that slot is freed.
    last: Option<(u128, u32)>,
    heap: BinaryHeap<Reverse<(Time, u32, u32)>>,
}

impl Table {
    pub fn new(max: usize, seed: u64) -> Table {
        Table {
            map: HashMap::with_capacity_and_hasher(max.min(1 << 16), SeededState(seed)),
            slots: Vec::new(),
            free: Vec::new(),
            oldest: NIL,
            newest: NIL,
            live: 0,
            peak: 0,
            max,
            last: None,
            heap: BinaryHeap::new(),
        }
    }

    pub fn len(&self) -> usize {
        self.live
    }

    /// The most connections that were live at once.
    pub fn peak(&self) -> usize {
        self.peak
    }

    pub fn lookup(&self, key: &FlowKey) -> Option<u32> {
        self.map.get(&pack(key)).copied()
    }

    /// [`lookup`](Self::lookup) for the per-packet path, remembering the last hit.
    pub fn find(&mut self, key: &FlowKey) -> Option<u32> {
        self.find_packed(pack(key))
    }

    /// [`find`](Self::find) by a key already packed ([`pack_key`]).
    #[inline]
    pub fn find_packed(&mut self, k: u128) -> Option<u32> {
        if let Some((lk, slot)) = self.last {
            if lk == k {
                return Some(slot);
            }
        }
        self.find_in_map(k)
    }

    #[inline(never)]
    fn find_in_map(&mut self, k: u128) -> Option<u32> {
        let slot = self.map.get(&k).copied()?;
        self.last = Some((k, slot));
        Some(slot)
    }

    pub fn conn(&self, slot: u32) -> &Conn {
        self.slots[slot as usize].conn.as_ref().expect("live slot")
    }

    pub fn conn_mut(&mut self, slot: u32) -> &mut Conn {
        self.slots[slot as usize].conn.as_mut().expect("live slot")
    }

    /// Marks `slot` as the most recently active connection.
    #[inline]
    pub fn touch(&mut self, slot: u32) {
        if self.newest != slot {
            self.make_newest(slot);
        }
    }

    #[inline(never)]
    fn make_newest(&mut self, slot: u32) {
        self.unlink(slot);
        self.link_newest(slot);
    }

    /// Inserts a fresh connection, evicting the least recently active one if the table is full. Returns the
    /// new slot and whether an eviction happened; `None` if the table holds no connections at all (max 0).
    pub fn insert(&mut self, conn: Conn) -> Option<(u32, bool)> {
        if self.max == 0 {
            return None;
        }
        let mut evicted = false;
        if self.live >= self.max {
            let victim = self.oldest;
            self.remove(victim);
            evicted = true;
        }
        let key = pack(&conn.key);
        let slot = match self.free.pop() {
            Some(s) => {
                self.slots[s as usize].conn = Some(conn);
                s
            }
            None => {
                self.slots.push(Slot { gen: 0, older: NIL, newer: NIL, conn: Some(conn) });
                (self.slots.len() - 1) as u32
            }
        };
        self.map.insert(key, slot);
        self.link_newest(slot);
        self.live += 1;
        self.peak = self.peak.max(self.live);
        Some((slot, evicted))
    }

    /// Drops a connection's state (RST, FIN acknowledged, eviction).
    pub fn remove(&mut self, slot: u32) {
        let Some(conn) = self.slots[slot as usize].conn.take() else { return };
        self.map.remove(&pack(&conn.key));
        if self.last.is_some_and(|(_, s)| s == slot) {
            self.last = None;
        }
        self.unlink(slot);
        let s = &mut self.slots[slot as usize];
        s.gen = s.gen.wrapping_add(1);
        self.free.push(slot);
        self.live -= 1;
    }

    fn unlink(&mut self, slot: u32) {
        let (older, newer) = {
            let s = &self.slots[slot as usize];
            (s.older, s.newer)
        };
        if older == NIL {
            self.oldest = newer;
        } else {
            self.slots[older as usize].newer = newer;
        }
        if newer == NIL {
            self.newest = older;
        } else {
            self.slots[newer as usize].older = older;
        }
        let s = &mut self.slots[slot as usize];
        s.older = NIL;
        s.newer = NIL;
    }

    fn link_newest(&mut self, slot: u32) {
        let prev = self.newest;
        {
            let s = &mut self.slots[slot as usize];
            s.older = prev;
            s.newer = NIL;
        }
        if prev == NIL {
            self.oldest = slot;
        } else {
            self.slots[prev as usize].newer = slot;
        }
        self.newest = slot;
    }

    /// Re-queues `slot` if its deadline moved earlier than its queued entry (see the module docs).
    pub fn schedule(&mut self, slot: u32, cfg: &Cfg) {
        let s = &mut self.slots[slot as usize];
        let Some(conn) = s.conn.as_mut() else { return };
        if let Some(d) = conn.deadline(cfg) {
            if conn.scheduled.is_none_or(|t| d < t) {
                conn.scheduled = Some(d);
                self.heap.push(Reverse((d, slot, s.gen)));
            }
        }
    }

    fn entry_live(&self, t: Time, slot: u32, gen: u32) -> bool {
        let s = &self.slots[slot as usize];
        s.gen == gen && s.conn.as_ref().is_some_and(|c| c.scheduled == Some(t))
    }

    /// Pops the earliest live entry due at or before `now`, clearing the connection's `scheduled`.
    pub fn pop_due(&mut self, now: Time) -> Option<u32> {
        while let Some(&Reverse((t, slot, gen))) = self.heap.peek() {
            if t > now {
                return None;
            }
            self.heap.pop();
            if self.entry_live(t, slot, gen) {
                self.conn_mut(slot).scheduled = None;
                return Some(slot);
            }
        }
        None
    }

    /// Makes the top of the heap exact, so that [`next_deadline`](Self::next_deadline) is a real deadline:
    /// stale entries are popped, and a top entry whose connection's deadline moved later (or went away) is
    /// replaced by the actual one. Only the top is examined, so this is O(log n) at worst and, in the common
    /// case of the top being untouched, one comparison. The heap is compacted if stale entries pile up.
    /// Called at the end of every input.
    #[inline(always)]
    pub fn tidy(&mut self, cfg: &Cfg) {
        while let Some(mut top) = self.heap.peek_mut() {
            let Reverse((t, slot, gen)) = *top;
            let s = &mut self.slots[slot as usize];
            let Some(conn) = s.conn.as_mut().filter(|c| s.gen == gen && c.scheduled == Some(t)) else {
                PeekMut::pop(top);
                continue;
            };
            match conn.deadline(cfg) {
                Some(d) if d == t => break,
                // The deadline moved (later: the persist timer slides on every packet). The entry is replaced
                // in place, one sift-down, rather than popped and pushed again; the heap holds the same
                // entries either way, so the firing order is unchanged.
                Some(d) => {
                    conn.scheduled = Some(d);
                    *top = Reverse((d, slot, gen));
                }
                None => {
                    conn.scheduled = None;
                    PeekMut::pop(top);
                }
            }
        }
        if self.heap.len() > 2 * self.live + 64 {
            let slots = &self.slots;
            self.heap.retain(|&Reverse((t, slot, gen))| {
                let s = &slots[slot as usize];
                s.gen == gen && s.conn.as_ref().is_some_and(|c| c.scheduled == Some(t))
            });
        }
    }

    /// Bytes the table's own structures hold allocated: the slab of slots (each with its inline
    /// per-connection state), the free list, the hash map's buckets (key, slot and one control byte each)
    /// and the timer heap. Their capacities never shrink, so this is also their high-water mark. A
    /// connection's cache (its queue of entries and the packets they hold) comes on top; see
    /// [`Conn::cache_held`].
    pub fn allocated_bytes(&self) -> usize {
        use std::mem::size_of;
        self.slots.capacity() * size_of::<Slot>()
            + self.free.capacity() * size_of::<u32>()
            + self.map.capacity() * (size_of::<(u128, u32)>() + 1)
            + self.heap.capacity() * size_of::<Reverse<(Time, u32, u32)>>()
    }

    /// What one more connection costs the table: its slot (inline state and list links), a free-list entry,
    /// a hash-map bucket at the map's highest load (7/8: key, slot and control byte), one timer-heap entry.
    /// Its cache's entries and packets come on top.
    pub fn bytes_per_connection() -> usize {
        use std::mem::size_of;
        size_of::<Slot>()
            + size_of::<u32>()
            + (size_of::<(u128, u32)>() + 1) * 8 / 7
            + size_of::<Reverse<(Time, u32, u32)>>()
    }

    /// Size of one slot: the inline per-connection state and its list links.
    pub fn slot_size() -> usize {
        std::mem::size_of::<Slot>()
    }

    pub fn next_deadline(&self) -> Option<Time> {
        self.heap.peek().map(|Reverse((t, _, _))| *t)
    }

    /// The earliest deadline over every live connection, by a full scan: what
    /// [`next_deadline`](Self::next_deadline) must equal after every input.
    #[cfg(test)]
    pub fn earliest_deadline_by_scan(&self, cfg: &Cfg) -> Option<Time> {
        self.slots.iter().filter_map(|s| s.conn.as_ref()?.deadline(cfg)).min()
    }

    #[cfg(test)]
    pub fn heap_len(&self) -> usize {
        self.heap.len()
    }
}

//! The bounded connection table and the timer queue.
//!
//! Connections live in a slab (`Vec` of slots, reused through a free list) indexed by a `u32`. The index
//! (`index.rs`) files slot numbers under a tag of their key's hash; the key itself is compared against the
//! key in the slot's own connection state, which the packet reads next anyway, so a lookup touches one line
//! of the index and the one slot. The index is only ever used for lookup, never iterated, so its order
//! cannot leak into the output; its hash is a fixed mixing function keyed by
//! [`SnoopConfig::hash_seed`](super::SnoopConfig::hash_seed) (no `RandomState`: an agent draws no random
//! numbers; the real base station can pass a random seed to resist hash flooding).
//!
//! **Bound** (DESIGN.md, "The agent contract"): at most `max_connections` slots are live; when full, the least
//! recently active connection is evicted, exactly. Recency is a stamp per slot (a table-wide counter written
//! into the slot on every touch), so a packet writes only its own slot. The order of eviction victims is kept
//! as a queue of (stamp, slot) touches, stale entries skipped lazily, and only while evictions happen: the
//! first eviction after a calm period sorts the live slots by stamp, and a compaction that finds no eviction
//! since the last one drops the queue. A table that is full but not churning (many mostly idle mobiles)
//! pays nothing for its order.
//!
//! **Timers**: each connection has at most two deadlines (round-trip and persist, Balakrishnan 1995 §6); their
//! minimum is its *deadline*. A binary heap holds `(time, slot, generation)` entries. A connection records
//! the time of the entry it has in the heap (`Conn::scheduled`); the invariant is `scheduled <= deadline`.
//! When the deadline moves *earlier* a new entry is pushed (the old one goes stale); when it moves later
//! (the persist timer slides forward on every packet) nothing is pushed. After every input `tidy` makes
//! only the *top* exact (pops stale entries, updates in place a top whose deadline moved), so `poll_timeout` is a
//! peek that returns a real deadline, and the per-packet cost is a comparison or two, plus a small heap
//! operation when the touched connection is the one due first. The heap is compacted if stale entries ever
//! outnumber live connections. Ties are broken by slot index, so the firing order is deterministic.

use super::conn::Conn;
use super::index::Index;
use super::parse::pack_key;
use super::Cfg;
use crate::flow::FlowKey;
use lasthop_wire::Time;
use std::cmp::Reverse;
use std::collections::binary_heap::PeekMut;
use std::collections::{BinaryHeap, VecDeque};
use std::hash::{BuildHasher, Hasher};

const NIL: u32 = u32::MAX;

/// The 4-tuple packed into 96 bits ([`pack_key`]).
fn pack(k: &FlowKey) -> u128 {
    pack_key(u32::from(k.src), k.src_port, u32::from(k.dst), k.dst_port)
}

/// The packed key of a slot's connection; a free slot's is one no packet has (its 32 high bits set).
fn slot_key(s: &Slot) -> u128 {
    s.conn.as_ref().map_or(u128::MAX, |c| pack(&c.key))
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

/// A connection's place in the table: its state, and the table's bookkeeping beside it on the same cache
/// line (a lookup compares the key in `conn`, a touch writes `stamp`: one place in memory per packet).
/// Aligned to a cache line, so that the state's hot part (see `Conn`) spans the fewest lines.
#[derive(Debug)]
#[repr(C, align(64))]
struct Slot {
    /// When the connection was last active, in `Table::clock` ticks; `FREE` for a free slot.
    stamp: u64,
    /// Bumped whenever the slot is freed, so timer entries of an evicted connection are recognisably stale.
    gen: u32,
    conn: Option<Conn>,
}

const FREE: u64 = 0;

/// Asks the processor for the lines of a slot's hot state (`Conn`: lines `from` to 5) together, instead of
/// one by one as the packet's processing reaches each field. A hint, no state changes.
#[inline]
fn prefetch_hot(slot: &Slot, from: usize) {
    let base = (slot as *const Slot).cast::<u8>();
    for line in from..6 {
        lasthop_wire::prefetch::line(base.wrapping_add(line * 64));
    }
}

/// An entry of the recency queue: a slot and the stamp it was given. Current while the slot still carries
/// that stamp; stale once the slot is touched again or freed.
#[derive(Debug, Clone, Copy)]
struct Touch {
    stamp: u64,
    slot: u32,
}

/// The recency queue is compacted when it holds more than this many entries per live connection (plus 64):
/// compaction reads one slot's stamp per entry, so a larger factor reads fewer per touch (factor / (factor - 1))
/// at the cost of memory (16 bytes per entry). A compaction with no eviction since the last one drops the
/// queue altogether.
const RECENCY_SLACK: usize = 4;

#[derive(Debug)]
pub(super) struct Table {
    /// Slot numbers, filed by their connection's key's hash (the key lives in the slot).
    index: Index,
    hasher: SeededState,
    slots: Vec<Slot>,
    free: Vec<u32>,
    /// While evictions happen (`ordered`): every touch in order, oldest first, stamps ascending; the
    /// current entry of the lowest stamp is the least recently active connection (the eviction victim).
    /// Stale entries are skipped (and dropped) at eviction and by compaction, so a touch is one append
    /// instead of relinking a list through two neighbours' slots (two cache misses per packet under many
    /// connections). Empty and not kept while no evictions happen: the stamps alone hold the order.
    recency: VecDeque<Touch>,
    /// `recency` is kept (see there).
    ordered: bool,
    /// An eviction happened since the last compaction of `recency`.
    evicted_since_compaction: bool,
    /// The last stamp given; stamps start at 1 (`FREE` is 0).
    clock: u64,
    /// Most recently active live slot (a touch of it changes nothing).
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
            index: Index::new(),
            hasher: SeededState(seed),
            slots: Vec::new(),
            free: Vec::new(),
            recency: VecDeque::new(),
            ordered: false,
            evicted_since_compaction: false,
            clock: FREE,
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

    fn get(&self, k: u128) -> Option<u32> {
        let slots = &self.slots;
        self.index.find(self.hasher.hash_one(k), |s| slot_key(&slots[s as usize]) == k)
    }

    pub fn lookup(&self, key: &FlowKey) -> Option<u32> {
        self.get(pack(key))
    }

    /// First step of prefetching a lookup of `k` ([`Snoop::prefetch`](super::Snoop)): asks for the index
    /// line it will read; returns the hash for [`prefetch_slot`](Self::prefetch_slot).
    #[inline]
    pub fn prefetch_index(&self, k: u128) -> u64 {
        let hash = self.hasher.hash_one(k);
        self.index.prefetch(hash);
        hash
    }

    /// Second step, once the index line has had time to arrive: asks for the hot lines of the first slot
    /// whose tag matches (in practice the one slot the lookup will find; a later one is left to the lookup).
    #[inline]
    pub fn prefetch_slot(&self, hash: u64) {
        if let Some(slot) = self.index.candidates(hash).next().and_then(|c| self.slots.get(c as usize)) {
            prefetch_hot(slot, 0);
        }
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
        let slot = self.get(k)?;
        // Only once the key has compared equal: asked for on a tag match, before the key's line had arrived,
        // the lines made 100,000 connections slower (docs/src/dev/performance.md, "Snoop's cost per packet").
        prefetch_hot(&self.slots[slot as usize], 1);
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

    fn make_newest(&mut self, slot: u32) {
        self.clock += 1;
        self.slots[slot as usize].stamp = self.clock;
        self.newest = slot;
        if self.ordered {
            self.recency.push_back(Touch { stamp: self.clock, slot });
            if self.recency.len() > RECENCY_SLACK * self.live + 64 {
                self.compact_recency();
            }
        }
    }

    /// Drops the stale entries of `recency`, or the whole queue if no eviction happened since the last
    /// compaction (the table stopped churning: the next eviction rebuilds it from the stamps).
    #[inline(never)]
    fn compact_recency(&mut self) {
        if self.evicted_since_compaction {
            let slots = &self.slots;
            self.recency.retain(|t| slots[t.slot as usize].stamp == t.stamp);
        } else {
            self.recency = VecDeque::new();
            self.ordered = false;
        }
        self.evicted_since_compaction = false;
    }

    /// The least recently active live slot, dropping the stale entries ahead of it. The first eviction
    /// after a calm period orders the live slots by stamp (O(n log n), once).
    fn oldest(&mut self) -> u32 {
        if !self.ordered {
            let mut live: Vec<Touch> = (self.slots.iter().enumerate())
                .filter(|(_, h)| h.stamp != FREE)
                .map(|(s, h)| Touch { stamp: h.stamp, slot: s as u32 })
                .collect();
            live.sort_unstable_by_key(|t| t.stamp);
            self.recency = live.into();
            self.ordered = true;
        }
        self.evicted_since_compaction = true;
        while let Some(&t) = self.recency.front() {
            if self.slots[t.slot as usize].stamp == t.stamp {
                return t.slot;
            }
            self.recency.pop_front();
        }
        unreachable!("every live slot has a current recency entry")
    }

    /// Inserts a fresh connection, evicting the least recently active one if the table is full. Returns the
    /// new slot and whether an eviction happened; `None` if the table holds no connections at all (max 0).
    pub fn insert(&mut self, conn: Conn) -> Option<(u32, Option<Conn>)> {
        if self.max == 0 {
            return None;
        }
        let mut evicted = None;
        if self.live >= self.max {
            let victim = self.oldest();
            evicted = self.remove(victim);
        }
        let key = pack(&conn.key);
        let slot = match self.free.pop() {
            Some(s) => {
                self.slots[s as usize].conn = Some(conn);
                s
            }
            None => {
                // Slots are looked up at random: past 2 MB they go in huge pages (no page walk per lookup).
                lasthop_wire::hugepages::push(&mut self.slots, Slot { stamp: FREE, gen: 0, conn: Some(conn) });
                (self.slots.len() - 1) as u32
            }
        };
        self.index.insert(self.hasher.hash_one(key), slot);
        self.live += 1;
        self.peak = self.peak.max(self.live);
        self.make_newest(slot);
        Some((slot, evicted))
    }

    /// Drops a connection's state (RST, FIN acknowledged, eviction), handing it back.
    pub fn remove(&mut self, slot: u32) -> Option<Conn> {
        let s = &mut self.slots[slot as usize];
        let conn = s.conn.take()?;
        s.gen = s.gen.wrapping_add(1);
        s.stamp = FREE;
        let hash = self.hasher.hash_one(pack(&conn.key));
        self.index.remove(hash, slot);
        if self.last.is_some_and(|(_, s)| s == slot) {
            self.last = None;
        }
        if self.newest == slot {
            self.newest = NIL;
        }
        self.free.push(slot);
        self.live -= 1;
        Some(conn)
    }

    /// Every connection with state, in slot order.
    pub fn conns(&self) -> impl Iterator<Item = &Conn> {
        self.slots.iter().filter_map(|s| s.conn.as_ref())
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

    /// Bytes the table's own structures hold allocated: the slots (the inline per-connection state with room
    /// for a lone cached entry, its stamp and generation), the free list, the index (an 8-byte tag and
    /// slot number per entry, at most half of them full), the recency queue and the timer heap. Their capacities never shrink, so
    /// this is also their high-water mark. A connection's cache buffer (allocated once it holds two entries)
    /// and the packets it holds come on top; see [`Conn::cache_held`].
    pub fn allocated_bytes(&self) -> usize {
        use std::mem::size_of;
        self.slots.capacity() * size_of::<Slot>()
            + self.free.capacity() * size_of::<u32>()
            + self.index.allocated_bytes()
            + self.recency.capacity() * size_of::<Touch>()
            + self.heap.capacity() * size_of::<Reverse<(Time, u32, u32)>>()
    }

    /// What one more connection costs the table at most: its slot (seven cache lines: inline state with room
    /// for a lone cached segment's entry, stamp, generation), a free-list entry, its index entry at the
    /// index's lowest load after growing (7/16: 8 bytes an entry, 19 per connection), its share of the recency queue (up to
    /// `RECENCY_SLACK` entries before compaction), one timer-heap entry. A connection with at most one
    /// segment cached allocates nothing else but that packet. From two on, the entries live in a separate
    /// buffer; entries and packets come on top as [`Conn::cache_held`] counts them (every entry, a lone
    /// inline one too, so one entry over while exactly one is cached; the buffer's spare capacity, up to as
    /// much again, not).
    pub fn bytes_per_connection() -> usize {
        use std::mem::size_of;
        Self::slot_size()
            + size_of::<u32>()
            + Index::BYTES_PER_KEY_AT_MOST
            + RECENCY_SLACK * size_of::<Touch>()
            + size_of::<Reverse<(Time, u32, u32)>>()
    }

    /// Size of one slot: the inline per-connection state (room for a lone cached entry included), its stamp
    /// and generation.
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

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::net::Ipv4Addr;

    fn key(port: u16) -> FlowKey {
        FlowKey { src: Ipv4Addr::new(10, 0, 0, 1), src_port: 80, dst: Ipv4Addr::new(10, 0, 1, 2), dst_port: port }
    }

    #[derive(Debug, Clone)]
    enum Op {
        /// Touch the model's i-th connection (modulo its length), as a packet of that connection would.
        Touch(usize),
        /// A new connection (evicting the least recently active if full).
        Insert,
        /// The i-th connection closes.
        Remove(usize),
        /// Many touches in a row, none evicting: long enough for the recency queue to be dropped.
        Calm(usize),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            6 => any::<usize>().prop_map(Op::Touch),
            3 => Just(Op::Insert),
            1 => any::<usize>().prop_map(Op::Remove),
            1 => (50usize..400).prop_map(Op::Calm),
        ]
    }

    /// The table and a plain recency list (least recently active first) side by side.
    struct Pair {
        t: Table,
        model: Vec<u16>,
        next_port: u16,
    }

    impl Pair {
        fn touch(&mut self, i: usize) {
            if self.model.is_empty() {
                return;
            }
            let port = self.model.remove(i % self.model.len());
            self.model.push(port);
            let slot = self.t.find(&key(port)).expect("live");
            self.t.touch(slot);
        }
    }

    proptest! {
        /// Eviction picks exactly the least recently active connection, through calm periods (the recency
        /// queue dropped) and churn (rebuilt from the stamps, compacted) alike.
        #[test]
        fn evicts_exactly_the_least_recently_active(max in 1usize..12, ops in proptest::collection::vec(op(), 1..300)) {
            let mut p = Pair { t: Table::new(max, 7), model: Vec::new(), next_port: 1 };
            for op in ops {
                match op {
                    Op::Touch(i) => p.touch(i),
                    Op::Calm(n) => (0..n).for_each(|i| p.touch(i * 7919)),
                    Op::Insert => {
                        let port = p.next_port;
                        p.next_port += 1;
                        let victim = (p.model.len() >= max).then(|| p.model.remove(0));
                        p.model.push(port);
                        let (_, evicted) = p.t.insert(Conn::new(key(port), Time::ZERO)).expect("max > 0");
                        prop_assert_eq!(evicted.map(|c| c.key), victim.map(key));
                        if let Some(v) = victim {
                            prop_assert!(p.t.lookup(&key(v)).is_none(), "evicted {} instead", v);
                        }
                    }
                    Op::Remove(i) if !p.model.is_empty() => {
                        let port = p.model.remove(i % p.model.len());
                        let slot = p.t.lookup(&key(port)).expect("live");
                        p.t.remove(slot);
                    }
                    Op::Remove(_) => {}
                }
                prop_assert_eq!(p.t.len(), p.model.len());
                for &port in &p.model {
                    prop_assert!(p.t.lookup(&key(port)).is_some());
                }
                prop_assert!(p.t.recency.len() <= RECENCY_SLACK * p.t.peak() + 64 + 1);
            }
        }
    }

    /// `Conn`'s layout (its `tests::hot_fields_come_first`) counts from a slot's start, 16 bytes before
    /// the connection.
    #[test]
    fn a_slot_is_aligned_to_a_cache_line() {
        use std::mem::{align_of, offset_of, size_of};
        assert_eq!(align_of::<Slot>(), 64);
        assert_eq!(offset_of!(Slot, conn), 16);
        let s = Slot { stamp: FREE, gen: 0, conn: Some(Conn::new(key(1), Time::ZERO)) };
        let conn = s.conn.as_ref().map(|c| c as *const Conn as usize);
        assert_eq!(conn, Some(&s as *const Slot as usize + 16), "the connection sits at the start of its Option");
        assert_eq!(size_of::<Slot>(), 7 * 64);
    }

    #[test]
    fn the_recency_queue_exists_only_while_evicting() {
        let mut t = Table::new(4, 0);
        for port in 1..=4 {
            t.insert(Conn::new(key(port), Time::ZERO));
        }
        assert!(!t.ordered, "no eviction yet: the stamps alone hold the order");
        // Touch 1, 2, 3: 4 is now the least recently active.
        for port in 1..=3 {
            let s = t.find(&key(port)).unwrap();
            t.touch(s);
        }
        assert_eq!(t.insert(Conn::new(key(5), Time::ZERO)).and_then(|(_, e)| e).map(|c| c.key), Some(key(4)));
        assert!(t.lookup(&key(4)).is_none());
        assert!(t.ordered, "the eviction ordered the live slots");
        // A calm period: two compactions without an eviction between them drop the queue.
        for i in 0..400 {
            let s = t.find(&key([1, 2, 3, 5][i % 4])).unwrap();
            t.touch(s);
        }
        assert!(!t.ordered);
        assert_eq!(t.recency.capacity(), 0);
        // The next eviction rebuilds the order from the stamps: 1 2 3 5 were touched in turn, then 1 again.
        let s = t.find(&key(1)).unwrap();
        t.touch(s);
        t.insert(Conn::new(key(6), Time::ZERO));
        assert!(t.lookup(&key(2)).is_none(), "2 was the least recently active");
        assert!(t.ordered);
    }
}

//! The connection table's index: a key's hash to the slot holding its connection, one cache line per lookup.
//!
//! Written here rather than taken from `hashbrown` (which the table used before) for memory, not
//! for hashing: hashbrown keeps its control bytes and its buckets in two places, so a cold lookup waits for
//! the control bytes, then for the bucket they select, then for the slot; and it cannot name a key's bucket
//! without probing, so a batch of packets cannot ask for its buckets ahead (`Snoop::prefetch`). Here an
//! entry is 8 bytes, the upper half of the key's hash (its *tag*) beside the slot number, in one array
//! probed linearly from the tag's *home*: a lookup reads the home entry's line (rarely the next), and only
//! a slot whose tag matches is read to compare the key, so a cold lookup is the index line and then the
//! slot, and the slot's lines can be asked for as soon as the tag matches.
//!
//! The home is taken from the tag, so growing and deleting (backward shift: no tombstones, so probe lengths
//! do not decay under churn) never rehash a key or read a slot. The load is kept at most 7/8 (hashbrown's
//! highest too): a found key is on average within two or three entries of its home, eight to a line, and
//! a missing one ends at an empty entry within a few lines. (At most one half was tried: 100,000
//! connections then need a 2 MB index instead of 1 MB, and `snoop_table` measured them 25 % slower per
//! packet than with hashbrown, the index's lines now missing the caches; at 7/8, 10–15 % faster.) Never
//! iterated by anything that reaches the output.

/// An empty entry. A full one is `tag << 32 | (slot + 1)`, never zero.
const EMPTY: u64 = 0;

/// Entries of a new index (and the fewest it ever has).
const MIN_ENTRIES: usize = 16;

#[derive(Debug)]
pub(super) struct Index {
    entries: Vec<u64>,
    /// `entries.len() - 1` (a power of two less one).
    mask: usize,
    len: usize,
}

fn tag(hash: u64) -> u32 {
    (hash >> 32) as u32
}

fn entry(tag: u32, slot: u32) -> u64 {
    assert!(slot < u32::MAX, "slot number out of the index's range");
    u64::from(tag) << 32 | u64::from(slot + 1)
}

fn entry_slot(e: u64) -> u32 {
    (e as u32).wrapping_sub(1)
}

impl Index {
    pub fn new() -> Index {
        Index { entries: vec![EMPTY; MIN_ENTRIES], mask: MIN_ENTRIES - 1, len: 0 }
    }

    fn home(&self, tag: u32) -> usize {
        tag as usize & self.mask
    }

    /// The slot of the key hashed to `hash`: `is_key(slot)` confirms a slot whose tag matches.
    #[inline]
    pub fn find(&self, hash: u64, mut is_key: impl FnMut(u32) -> bool) -> Option<u32> {
        let t = tag(hash);
        let mut i = self.home(t);
        loop {
            let e = self.entries[i];
            if e == EMPTY {
                return None;
            }
            if tag(e) == t && is_key(entry_slot(e)) {
                return Some(entry_slot(e));
            }
            i = (i + 1) & self.mask;
        }
    }

    /// The slots whose tag matches `hash`'s, in probe order, up to the first empty entry: the candidates
    /// [`find`](Self::find) would confirm. For prefetching: reads the index only.
    pub fn candidates(&self, hash: u64) -> impl Iterator<Item = u32> + '_ {
        let t = tag(hash);
        let start = self.home(t);
        (0..=self.mask)
            .map(move |k| self.entries[(start + k) & self.mask])
            .take_while(|&e| e != EMPTY)
            .filter(move |&e| tag(e) == t)
            .map(entry_slot)
    }

    /// Asks the processor for the line of `hash`'s home entry (a hint: reads nothing).
    #[inline]
    pub fn prefetch(&self, hash: u64) {
        lasthop_wire::prefetch::line(&self.entries[self.home(tag(hash))]);
    }

    /// Adds `slot` under `hash`. The caller guarantees the key is not in the index already.
    pub fn insert(&mut self, hash: u64, slot: u32) {
        if (self.len + 1) * 8 > self.entries.len() * 7 {
            self.grow();
        }
        self.place(entry(tag(hash), slot));
        self.len += 1;
    }

    fn place(&mut self, e: u64) {
        let mut i = self.home(tag(e));
        while self.entries[i] != EMPTY {
            i = (i + 1) & self.mask;
        }
        self.entries[i] = e;
    }

    fn grow(&mut self) {
        let old = std::mem::replace(&mut self.entries, vec![EMPTY; (self.mask + 1) * 2]);
        self.mask = self.entries.len() - 1;
        for e in old.into_iter().filter(|&e| e != EMPTY) {
            self.place(e);
        }
    }

    /// Removes `slot`, filed under `hash`; false if it is not there. The entries after it in its run move
    /// back where their probe allows (backward-shift deletion), so every probe still ends at the first
    /// empty entry.
    pub fn remove(&mut self, hash: u64, slot: u32) -> bool {
        let target = entry(tag(hash), slot);
        let mut hole = self.home(tag(hash));
        loop {
            match self.entries[hole] {
                EMPTY => return false,
                e if e == target => break,
                _ => hole = (hole + 1) & self.mask,
            }
        }
        let mut j = hole;
        loop {
            j = (j + 1) & self.mask;
            let e = self.entries[j];
            if e == EMPTY {
                break;
            }
            // The entry at `j` may fill the hole if its home is not in the cyclic range (hole, j]: then the
            // hole lies on its probe path.
            let from_home = j.wrapping_sub(self.home(tag(e))) & self.mask;
            let from_hole = j.wrapping_sub(hole) & self.mask;
            if from_home >= from_hole {
                self.entries[hole] = e;
                hole = j;
            }
        }
        self.entries[hole] = EMPTY;
        self.len -= 1;
        true
    }

    /// Bytes allocated (capacity never shrinks).
    pub fn allocated_bytes(&self) -> usize {
        self.entries.capacity() * std::mem::size_of::<u64>()
    }

    /// Bytes per key at the lowest load after growing (7/16), rounded up: what one more key may cost.
    pub const BYTES_PER_KEY_AT_MOST: usize = (16 * std::mem::size_of::<u64>()).div_ceil(7);
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap;

    /// Checks every key of `model` is found at its slot through `find` and `candidates`, and absent keys
    /// are not found.
    fn agrees(ix: &Index, model: &HashMap<u64, u32>, hash: impl Fn(u64) -> u64, absent: &[u64]) {
        let slot_key: HashMap<u32, u64> = model.iter().map(|(&k, &s)| (s, k)).collect();
        for (&k, &s) in model {
            assert_eq!(ix.find(hash(k), |c| slot_key.get(&c) == Some(&k)), Some(s), "key {k}");
            assert!(ix.candidates(hash(k)).any(|c| c == s), "key {k} among its candidates");
        }
        for &k in absent.iter().filter(|k| !model.contains_key(k)) {
            assert_eq!(ix.find(hash(k), |c| slot_key.get(&c) == Some(&k)), None, "absent key {k}");
        }
        assert_eq!(ix.len, model.len());
        assert!(ix.len * 8 <= ix.entries.len() * 7);
    }

    #[derive(Debug, Clone)]
    enum Op {
        Insert(u64),
        Remove(u64),
    }

    proptest! {
        /// Inserts and removes against a `HashMap`, with a hash of few distinct values (many keys share a
        /// tag and a home, runs wrap around the end of the array), and with a good one.
        #[test]
        fn index_agrees_with_a_map(
            ops in proptest::collection::vec(
                prop_oneof![(0u64..200).prop_map(Op::Insert), (0u64..200).prop_map(Op::Remove)], 1..400),
            weak in any::<bool>(),
        ) {
            let hash = |k: u64| if weak {
                // 8 tags, each shared by many keys, all at home in the last entry of every table up to
                // 2^20 entries: runs collide and wrap around the end of the array.
                u64::from(u32::MAX - ((k % 8) as u32) * (1 << 20)) << 32 | k
            } else {
                k.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ (k << 40)
            };
            let mut ix = Index::new();
            let mut model: HashMap<u64, u32> = HashMap::new();
            let mut next_slot = 0u32;
            for op in &ops {
                match *op {
                    Op::Insert(k) if !model.contains_key(&k) => {
                        ix.insert(hash(k), next_slot);
                        model.insert(k, next_slot);
                        next_slot += 1;
                    }
                    Op::Insert(_) => {}
                    Op::Remove(k) => {
                        let removed = model.remove(&k);
                        prop_assert_eq!(ix.remove(hash(k), removed.unwrap_or(u32::MAX - 1)), removed.is_some());
                    }
                }
                agrees(&ix, &model, hash, &[0, 7, 199, 200, 1000]);
            }
        }
    }

    #[test]
    fn grows_and_keeps_every_key() {
        let mut ix = Index::new();
        for k in 0..10_000u64 {
            ix.insert(k.wrapping_mul(0x9e37_79b9_7f4a_7c15), k as u32);
        }
        assert_eq!(ix.entries.len(), 16_384);
        for k in 0..10_000u64 {
            assert_eq!(ix.find(k.wrapping_mul(0x9e37_79b9_7f4a_7c15), |s| s == k as u32), Some(k as u32));
        }
        for k in (0..10_000u64).step_by(2) {
            assert!(ix.remove(k.wrapping_mul(0x9e37_79b9_7f4a_7c15), k as u32));
        }
        for k in 0..10_000u64 {
            let found = ix.find(k.wrapping_mul(0x9e37_79b9_7f4a_7c15), |s| s == k as u32);
            assert_eq!(found, (k % 2 == 1).then_some(k as u32));
        }
    }
}

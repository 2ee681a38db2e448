//! A bounded connection table for the ELN and NACK agents (DESIGN.md, "The agent contract": a configured
//! number of connections, the least recently active evicted, never unbounded growth).
//!
//! Two `BTreeMap`s: key → (state, last-activity tick) and tick → key. Lookup, touch, insert and eviction
//! are O(log n), and nothing depends on hashing, so iteration order (never used for output anyway) and
//! eviction order are deterministic. These agents see one lookup per packet and no per-packet timers, so
//! Snoop's slab and hand-rolled hasher are not needed here.

use crate::flow::FlowKey;
use std::collections::BTreeMap;

#[derive(Debug)]
pub(crate) struct LruTable<V> {
    map: BTreeMap<FlowKey, (V, u64)>,
    by_age: BTreeMap<u64, FlowKey>,
    tick: u64,
    max: usize,
}

impl<V> LruTable<V> {
    pub fn new(max: usize) -> Self {
        LruTable { map: BTreeMap::new(), by_age: BTreeMap::new(), tick: 0, max }
    }

    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn get(&self, key: &FlowKey) -> Option<&V> {
        self.map.get(key).map(|(v, _)| v)
    }

    /// The state of `key`, marked most recently active.
    pub fn get_mut(&mut self, key: &FlowKey) -> Option<&mut V> {
        let (v, t) = self.map.get_mut(key)?;
        self.by_age.remove(t);
        self.tick += 1;
        *t = self.tick;
        self.by_age.insert(self.tick, *key);
        Some(v)
    }

    /// Inserts (or replaces) `key`. When the table is full the least recently active connection is evicted
    /// and returned. With a bound of zero nothing is stored (`Err(value)` hands the state back).
    pub fn insert(&mut self, key: FlowKey, value: V) -> Result<Option<(FlowKey, V)>, V> {
        if self.max == 0 {
            return Err(value);
        }
        let mut evicted = None;
        if let Some((_, t)) = self.map.remove(&key) {
            self.by_age.remove(&t);
        } else if self.map.len() >= self.max {
            if let Some((_, old)) = self.by_age.pop_first() {
                evicted = self.map.remove(&old).map(|(v, _)| (old, v));
            }
        }
        self.tick += 1;
        self.map.insert(key, (value, self.tick));
        self.by_age.insert(self.tick, key);
        Ok(evicted)
    }

    pub fn remove(&mut self, key: &FlowKey) -> Option<V> {
        let (v, t) = self.map.remove(key)?;
        self.by_age.remove(&t);
        Some(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    fn k(p: u16) -> FlowKey {
        FlowKey { src: Ipv4Addr::new(10, 0, 0, 1), src_port: p, dst: Ipv4Addr::new(10, 0, 0, 2), dst_port: 80 }
    }

    #[test]
    fn evicts_least_recently_active() {
        let mut t = LruTable::new(2);
        assert!(t.insert(k(1), 1).unwrap().is_none());
        assert!(t.insert(k(2), 2).unwrap().is_none());
        t.get_mut(&k(1)); // 2 is now the oldest
        assert_eq!(t.insert(k(3), 3).unwrap(), Some((k(2), 2)));
        assert_eq!(t.len(), 2);
        assert!(t.get(&k(2)).is_none());
        assert_eq!(t.remove(&k(1)), Some(1));
        assert_eq!(t.len(), 1);
        let mut z = LruTable::new(0);
        assert_eq!(z.insert(k(1), 7), Err(7));
    }
}

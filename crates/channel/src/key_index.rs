//! Keys fixed once (a medium's link numbers, the nodes' IPv4 addresses) to their positions, read on every
//! packet: the simulator's node by address and a shared medium's link by number.
//!
//! Such keys come in runs of consecutive ones (a scale copy's N mobiles take consecutive addresses, their N
//! links consecutive numbers), so the index keeps the positions in key order and finds a key's run by binary
//! search over a handful of runs: a few reads of one small array and one of the positions, where a hash map
//! read a bucket scattered over its whole table (4–6 % of a 10,000-mobile cell's event loop each, user guide,
//! docs/src/dev/performance.md, "Scale: many mobiles in one cell"). Keys that make many runs keep a map
//! (foldhash's fixed seed: nothing random); a handful of keys (a topology of a few nodes) are scanned.

use std::collections::HashMap;

/// Above this many runs, the keys are scattered: a map is used instead.
const MAX_RUNS: usize = 64;

/// Up to this many keys are scanned in place: a handful of compares costs less than finding a run (a
/// topology of a few nodes, where the node by address is asked for on every packet routed).
const SCAN_UP_TO: usize = 8;

#[derive(Debug, Clone)]
pub enum KeyIndex {
    /// At most [`SCAN_UP_TO`] keys, each at its own index.
    Few(Vec<u64>),
    /// Runs of consecutive keys, sorted: (first key, where the run starts in `positions`), and the
    /// positions of every run in key order. A run ends where the next one starts.
    Runs {
        runs: Vec<(u64, u32)>,
        positions: Vec<u32>,
    },
    Map(HashMap<u64, usize, foldhash::fast::FixedState>),
}

impl Default for KeyIndex {
    fn default() -> Self {
        KeyIndex::new(&[])
    }
}

impl KeyIndex {
    /// `keys[i]` is at position `i`; no two keys are equal (a repeated key is found at one of its positions).
    pub fn new(keys: &[u64]) -> KeyIndex {
        if keys.len() <= SCAN_UP_TO {
            return KeyIndex::Few(keys.to_vec());
        }
        let mut sorted: Vec<(u64, u32)> = keys.iter().enumerate().map(|(i, &k)| (k, i as u32)).collect();
        sorted.sort_unstable();
        let mut runs: Vec<(u64, u32)> = Vec::new();
        for (j, &(k, _)) in sorted.iter().enumerate() {
            if j == 0 || sorted[j - 1].0.checked_add(1) != Some(k) {
                runs.push((k, j as u32));
            }
        }
        if runs.len() > MAX_RUNS || keys.len() > u32::MAX as usize {
            return KeyIndex::Map(keys.iter().enumerate().map(|(i, &k)| (k, i)).collect());
        }
        KeyIndex::Runs { runs, positions: sorted.into_iter().map(|(_, i)| i).collect() }
    }

    /// The position of `key`, if it is one of the keys.
    #[inline]
    pub fn get(&self, key: u64) -> Option<usize> {
        match self {
            KeyIndex::Few(keys) => keys.iter().position(|&k| k == key),
            KeyIndex::Runs { runs, positions } => {
                let r = runs.partition_point(|&(first, _)| first <= key).checked_sub(1)?;
                let (first, start) = runs[r];
                let end = runs.get(r + 1).map_or(positions.len(), |&(_, s)| s as usize);
                let at = usize::try_from(key - first).ok()?.checked_add(start as usize)?;
                (at < end).then(|| positions[at] as usize)
            }
            KeyIndex::Map(map) => map.get(&key).copied(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Every key is found at its position and nothing else is found, in every form: a handful of keys
        /// (scanned), keys drawn from a few clusters (runs) and scattered ones (many runs: the map),
        /// positions not in key order (nodes are ordered by name).
        #[test]
        fn finds_what_a_map_finds(
            raw in proptest::collection::btree_set(prop_oneof![0u32..40, 1000u32..1030, (u32::MAX - 20)..=u32::MAX, any::<u32>()], 1..200),
            probes in proptest::collection::vec(prop_oneof![0u32..50, 990u32..1040, (u32::MAX - 30)..=u32::MAX, any::<u32>()], 0..100),
            shuffle in any::<u64>(),
        ) {
            let mut keys: Vec<u64> = raw.into_iter().map(u64::from).collect();
            let n = keys.len();
            for i in 0..n {
                keys.swap(i, (shuffle as usize).wrapping_mul(i + 7) % n);
            }
            let index = KeyIndex::new(&keys);
            let map: HashMap<u64, usize> = keys.iter().enumerate().map(|(i, &k)| (k, i)).collect();
            for (i, &k) in keys.iter().enumerate() {
                prop_assert_eq!(index.get(k), Some(i));
            }
            for p in probes.into_iter().map(u64::from) {
                prop_assert_eq!(index.get(p), map.get(&p).copied(), "probe {}", p);
            }
        }
    }

    #[test]
    fn a_scale_cell_is_two_runs_a_handful_scanned_and_scattered_keys_a_map() {
        let mut addrs = vec![u32::from_be_bytes([10, 0, 0, 1]), u32::from_be_bytes([10, 0, 0, 2])];
        addrs.extend((0..10_000u32).map(|i| u32::from_be_bytes([10, 1, 0, 1]) + i));
        let keys: Vec<u64> = addrs.into_iter().map(u64::from).collect();
        assert!(matches!(KeyIndex::new(&keys), KeyIndex::Runs { ref runs, .. } if runs.len() == 2));
        assert!(matches!(KeyIndex::new(&keys[..SCAN_UP_TO]), KeyIndex::Few(_)), "a handful is scanned");
        let scattered: Vec<u64> = (0..100u64).map(|i| i * 1000).collect();
        let index = KeyIndex::new(&scattered);
        assert!(matches!(index, KeyIndex::Map(_)));
        assert_eq!(index.get(5000), Some(5));
        assert_eq!(KeyIndex::new(&[]).get(0x0102_0304), None);
    }

    /// A medium's link numbers, close together or a few far apart: found at their positions, and a link of
    /// no medium (below, inside or beyond them) has none.
    #[test]
    fn positions_of_close_and_far_keys() {
        let close = [40, 41, 43, 42, 50];
        let scattered = [7, 1_000, 50_000];
        for keys in [&close[..], &scattered[..]] {
            let p = KeyIndex::new(keys);
            for (i, &k) in keys.iter().enumerate() {
                assert_eq!(p.get(k), Some(i));
            }
            for absent in [0, 39, 44, 51, 6, 999, 50_001, u64::MAX] {
                assert_eq!(p.get(absent), None, "key {absent}");
            }
        }
    }
}

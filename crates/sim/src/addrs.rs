//! A node by its IPv4 address, looked up on every packet routed (`World::next_hop`).
//!
//! Addresses of a scenario come in runs of consecutive ones (a scale copy's N mobiles take consecutive
//! addresses from their template's), so the index keeps each run's nodes in an array and finds the run by
//! binary search over a handful of runs: a few reads of one small array and one of the run's, where a hash
//! map read a bucket scattered over its whole table (4 % of a 10,000-mobile cell's event loop). Addresses
//! that make many runs keep the map. Addresses are unique (the scenario's validation says so).

use crate::world::FastMap;
use std::net::Ipv4Addr;

/// Above this many runs, the addresses are scattered: a map is used instead.
const MAX_RUNS: usize = 64;

#[derive(Debug)]
pub(crate) enum AddrIndex {
    /// Runs of consecutive addresses, sorted: (first address, where the run's nodes start in `nodes`), and
    /// the nodes of every run in address order. A run ends where the next one starts in `nodes`.
    Runs {
        runs: Vec<(u32, u32)>,
        nodes: Vec<u32>,
    },
    Map(FastMap<Ipv4Addr, usize>),
}

impl AddrIndex {
    /// `addrs[i]` is node `i`'s address; no two are equal.
    pub fn new(addrs: &[Ipv4Addr]) -> AddrIndex {
        let mut sorted: Vec<(u32, u32)> = addrs.iter().enumerate().map(|(i, &a)| (u32::from(a), i as u32)).collect();
        sorted.sort_unstable();
        let mut runs: Vec<(u32, u32)> = Vec::new();
        for (k, &(a, _)) in sorted.iter().enumerate() {
            if k == 0 || sorted[k - 1].0.checked_add(1) != Some(a) {
                runs.push((a, k as u32));
            }
        }
        if runs.len() > MAX_RUNS || addrs.len() > u32::MAX as usize {
            return AddrIndex::Map(addrs.iter().enumerate().map(|(i, &a)| (a, i)).collect());
        }
        AddrIndex::Runs { runs, nodes: sorted.into_iter().map(|(_, i)| i).collect() }
    }

    /// The node with address `addr`, if any.
    #[inline]
    pub fn get(&self, addr: Ipv4Addr) -> Option<usize> {
        match self {
            AddrIndex::Runs { runs, nodes } => {
                let a = u32::from(addr);
                let r = runs.partition_point(|&(first, _)| first <= a).checked_sub(1)?;
                let (first, start) = runs[r];
                let end = runs.get(r + 1).map_or(nodes.len(), |&(_, s)| s as usize);
                let at = start as usize + (a - first) as usize;
                (at < end).then(|| nodes[at] as usize)
            }
            AddrIndex::Map(map) => map.get(&addr).copied(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap;

    proptest! {
        /// Every node is found at its address and nothing else is found, in both forms: addresses drawn
        /// from a few clusters (runs) and scattered ones (many runs: the map).
        #[test]
        fn finds_what_a_map_finds(
            raw in proptest::collection::btree_set(prop_oneof![0u32..40, 1000u32..1030, (u32::MAX - 20)..=u32::MAX, any::<u32>()], 1..200),
            probes in proptest::collection::vec(prop_oneof![0u32..50, 990u32..1040, (u32::MAX - 30)..=u32::MAX, any::<u32>()], 0..100),
            shuffle in any::<u64>(),
        ) {
            let mut addrs: Vec<Ipv4Addr> = raw.into_iter().map(Ipv4Addr::from).collect();
            // Node order is not address order (nodes are ordered by name).
            let n = addrs.len();
            for i in 0..n {
                addrs.swap(i, (shuffle as usize).wrapping_mul(i + 7) % n);
            }
            let index = AddrIndex::new(&addrs);
            let map: HashMap<Ipv4Addr, usize> = addrs.iter().enumerate().map(|(i, &a)| (a, i)).collect();
            for (i, &a) in addrs.iter().enumerate() {
                prop_assert_eq!(index.get(a), Some(i));
            }
            for p in probes.into_iter().map(Ipv4Addr::from) {
                prop_assert_eq!(index.get(p), map.get(&p).copied(), "probe {}", p);
            }
        }
    }

    #[test]
    fn a_scale_cell_is_two_runs_and_scattered_addresses_a_map() {
        let mut addrs = vec![Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2)];
        addrs.extend((0..10_000u32).map(|i| Ipv4Addr::from(u32::from(Ipv4Addr::new(10, 1, 0, 1)) + i)));
        assert!(matches!(AddrIndex::new(&addrs), AddrIndex::Runs { ref runs, .. } if runs.len() == 2));
        let scattered: Vec<Ipv4Addr> = (0..100u32).map(|i| Ipv4Addr::from(i * 1000)).collect();
        let index = AddrIndex::new(&scattered);
        assert!(matches!(index, AddrIndex::Map(_)));
        assert_eq!(index.get(Ipv4Addr::from(5000)), Some(5));
        assert_eq!(AddrIndex::new(&[]).get(Ipv4Addr::new(1, 2, 3, 4)), None);
    }
}

//! Routing tables: each node's next hop toward every other node, by breadth-first search (hop count; ties go
//! to the link listed first). Small topologies keep a dense table per node; large ones (a cell of thousands
//! of mobiles) keep per node its most common next hop and the exceptions to it, so that memory grows with
//! nodes plus links, not with nodes squared, and a mobile's table (one link, every destination behind it)
//! is one entry.

use std::ops::Index;

/// A next hop: (link, direction).
pub type Hop = (usize, usize);

/// Topologies of at most this many nodes keep dense tables (n² entries), as fast as an index.
const DENSE_UP_TO_NODES: usize = 256;

/// One node's next hop toward every node (`routes[to]`), `None` for itself or an unreachable node.
#[derive(Debug, Clone)]
pub(crate) enum Routes {
    Dense(Vec<Option<Hop>>),
    /// `default` toward every node but `own` and the `exceptions` (sorted by destination).
    Sparse {
        own: usize,
        default: Option<Hop>,
        exceptions: Vec<(usize, Option<Hop>)>,
    },
}

impl Default for Routes {
    fn default() -> Self {
        Routes::Dense(Vec::new())
    }
}

impl Index<usize> for Routes {
    type Output = Option<Hop>;

    #[inline]
    fn index(&self, to: usize) -> &Option<Hop> {
        match self {
            Routes::Dense(v) => &v[to],
            Routes::Sparse { own, default, exceptions } => {
                if to == *own {
                    return &None;
                }
                match exceptions.binary_search_by_key(&to, |e| e.0) {
                    Ok(i) => &exceptions[i].1,
                    Err(_) => default,
                }
            }
        }
    }
}

impl Routes {
    /// The compact form of a dense table of node `own`: its most common next hop (the one listed first among
    /// equally common ones) as the default, every other entry an exception; or the dense table itself when
    /// the exceptions would take as much memory (the base station of a cell: one exception per mobile). A
    /// lookup is then an index instead of a binary search over every mobile, on every packet the base
    /// station forwards, and memory still grows with nodes plus links (few nodes have that many exceptions).
    fn sparse(own: usize, first_hop: &[Option<Hop>]) -> Routes {
        let mut hops: Vec<Hop> = first_hop.iter().flatten().copied().collect();
        hops.sort_unstable();
        let mut default = None;
        let mut best = 0;
        for run in hops.chunk_by(|a, b| a == b) {
            if run.len() > best {
                best = run.len();
                default = Some(run[0]);
            }
        }
        let exceptions = first_hop
            .iter()
            .enumerate()
            .filter(|&(to, h)| to != own && *h != default)
            .map(|(to, h)| (to, *h))
            .collect::<Vec<_>>();
        if exceptions.len() * std::mem::size_of::<(usize, Option<Hop>)>() >= std::mem::size_of_val(first_hop) {
            return Routes::Dense(first_hop.to_vec());
        }
        Routes::Sparse { own, default, exceptions }
    }
}

/// Every node's routes over `links` (each a pair of node indices, direction 0 from `ends[0]`); `no_transit`
/// is a node that originates and receives but never relays (the mobile host: a path between two base
/// stations must not cross the air through it).
pub(crate) fn compute(n: usize, links: &[[usize; 2]], no_transit: Option<usize>) -> Vec<Routes> {
    let mut adj: Vec<Vec<(usize, usize, usize)>> = vec![Vec::new(); n]; // (neighbour, link, dir)
    for (i, ends) in links.iter().enumerate() {
        adj[ends[0]].push((ends[1], i, 0));
        adj[ends[1]].push((ends[0], i, 1));
    }
    let dense = n <= DENSE_UP_TO_NODES;
    let mut routes: Vec<Option<Routes>> = vec![None; n];
    // How many nodes a breadth-first search from each node reached (for the leaf shortcut below).
    let mut reached: Vec<Option<usize>> = vec![None; n];
    let mut bfs = Bfs::new(n);
    let mut search = |src: usize, routes: &mut Vec<Option<Routes>>, reached: &mut Vec<Option<usize>>| {
        let count = bfs.run(src, &adj, no_transit);
        reached[src] = Some(count);
        routes[src] =
            Some(if dense { Routes::Dense(bfs.first_hop.clone()) } else { Routes::sparse(src, &bfs.first_hop) });
    };
    // Nodes with several links first, then the leaves: a leaf whose one neighbour relays and reaches every
    // node reaches every other node through that one link, so its table is that link alone (what a search
    // from it would find, without the search: a cell of n mobiles costs n small tables, not n searches).
    let is_leaf = |u: usize| adj[u].len() == 1;
    for src in (0..n).filter(|&u| !is_leaf(u)) {
        search(src, &mut routes, &mut reached);
    }
    for src in (0..n).filter(|&u| is_leaf(u)) {
        let (nb, link, dir) = adj[src][0];
        let nb_relays = Some(nb) != no_transit && !is_leaf(nb);
        if !dense && nb_relays && reached[nb] == Some(n) {
            routes[src] = Some(Routes::Sparse { own: src, default: Some((link, dir)), exceptions: Vec::new() });
        } else {
            search(src, &mut routes, &mut reached);
        }
    }
    routes.into_iter().map(|r| r.expect("every node searched")).collect()
}

/// A breadth-first search's scratch space, reused from node to node.
struct Bfs {
    first_hop: Vec<Option<Hop>>,
    seen: Vec<bool>,
    queue: std::collections::VecDeque<usize>,
}

impl Bfs {
    fn new(n: usize) -> Bfs {
        Bfs { first_hop: vec![None; n], seen: vec![false; n], queue: std::collections::VecDeque::new() }
    }

    /// Fills `first_hop` from `src`; returns how many nodes were reached (`src` included).
    fn run(&mut self, src: usize, adj: &[Vec<(usize, usize, usize)>], no_transit: Option<usize>) -> usize {
        self.first_hop.fill(None);
        self.seen.fill(false);
        self.seen[src] = true;
        self.queue.clear();
        self.queue.push_back(src);
        let mut count = 1;
        while let Some(u) = self.queue.pop_front() {
            if Some(u) == no_transit && u != src {
                continue;
            }
            for &(v, link, dir) in &adj[u] {
                if !self.seen[v] {
                    self.seen[v] = true;
                    count += 1;
                    self.first_hop[v] = if u == src { Some((link, dir)) } else { self.first_hop[u] };
                    self.queue.push_back(v);
                }
            }
        }
        count
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Dense tables straight from a search from every node: the reference the compact ones must equal.
    fn by_search(n: usize, links: &[[usize; 2]], no_transit: Option<usize>) -> Vec<Vec<Option<Hop>>> {
        let mut adj: Vec<Vec<(usize, usize, usize)>> = vec![Vec::new(); n];
        for (i, ends) in links.iter().enumerate() {
            adj[ends[0]].push((ends[1], i, 0));
            adj[ends[1]].push((ends[0], i, 1));
        }
        let mut bfs = Bfs::new(n);
        (0..n)
            .map(|s| {
                bfs.run(s, &adj, no_transit);
                bfs.first_hop.clone()
            })
            .collect()
    }

    fn assert_same(n: usize, links: &[[usize; 2]], no_transit: Option<usize>) {
        let want = by_search(n, links, no_transit);
        let got = compute(n, links, no_transit);
        for (src, (w, g)) in want.iter().zip(&got).enumerate() {
            for to in 0..n {
                assert_eq!(g[to], w[to], "from {src} to {to}");
            }
        }
    }

    /// A star: fixed host 0 – base station 1 – `m` mobiles, plus two base stations joined to mobile 3 (the
    /// mobile does not relay), plus an island of two nodes nobody reaches.
    fn cell(m: usize) -> (usize, Vec<[usize; 2]>) {
        let mut links = vec![[0, 1]];
        links.extend((0..m).map(|i| [1, 2 + i]));
        let bs2 = 2 + m;
        links.push([bs2, 3]);
        links.push([0, bs2]);
        links.push([bs2 + 1, bs2 + 2]);
        (bs2 + 3, links)
    }

    #[test]
    fn compact_tables_equal_a_search_from_every_node() {
        for m in [3, 300] {
            let (n, links) = cell(m);
            assert_same(n, &links, None);
            assert_same(n, &links, Some(3));
            assert_same(n, &links, Some(1));
        }
        // A chain (every inner node has two links) and two nodes alone.
        let chain: Vec<[usize; 2]> = (0..299).map(|i| [i, i + 1]).collect();
        assert_same(300, &chain, None);
        assert_same(300, &chain, Some(150));
        assert_same(2, &[[0, 1]], None);
    }

    #[test]
    fn a_large_cell_costs_one_entry_per_mobile() {
        let mut links = vec![[0, 1]];
        links.extend((0..2000).map(|i| [1, 2 + i]));
        let n = 2002;
        let routes = compute(n, &links, None);
        let entries: usize = routes
            .iter()
            .map(|r| match r {
                Routes::Dense(v) => v.len(),
                Routes::Sparse { exceptions, .. } => 1 + exceptions.len(),
            })
            .sum();
        assert!(entries < 4 * n, "{entries} entries for {n} nodes");
        assert!(matches!(&routes[5], Routes::Sparse { exceptions, .. } if exceptions.is_empty()));
        // The base station, one exception per mobile, keeps a dense row (an index, not a binary search); the
        // fixed host, everything behind the base station, one entry.
        assert!(matches!(&routes[1], Routes::Dense(v) if v.len() == n));
        assert!(matches!(&routes[0], Routes::Sparse { exceptions, .. } if exceptions.is_empty()));
    }
}

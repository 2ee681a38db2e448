//! A sorted list of disjoint, non-adjacent sequence ranges `[start, end)`: the "list of blocks, or maximal
//! contiguous segments of data" of Balakrishnan 1998 §3 ("ELN Implementation", "Data structures"). The ELN agent keeps
//! one for the blocks it saw and one for the holes it recorded; the NACK agent one for what it saw.
//!
//! Sequence numbers compare modulo 2^32 ([`SeqNum`]); every range of one connection lies within a window
//! far below 2^31, so the order is well defined. Each range carries a *stamp* (a counter value set when
//! the range last grew), which the NACK agent uses to list SACK blocks most recent first (RFC 2018 §4).

use lasthop_wire::SeqNum;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Range {
    pub start: SeqNum,
    pub end: SeqNum,
    /// When the range last grew (a per-connection counter; larger is more recent).
    pub stamp: u64,
}

#[derive(Debug, Clone, Default)]
pub(crate) struct Ranges {
    list: Vec<Range>,
}

impl Ranges {
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }
    pub fn len(&self) -> usize {
        self.list.len()
    }
    pub fn as_slice(&self) -> &[Range] {
        &self.list
    }
    pub fn first(&self) -> Option<&Range> {
        self.list.first()
    }

    /// Adds `[start, end)`, coalescing with every range it overlaps or touches (so a segment that fills
    /// the gap between two blocks bridges them into one). Returns how many bytes were not covered before.
    pub fn insert(&mut self, start: SeqNum, end: SeqNum, stamp: u64) -> u32 {
        if start >= end {
            return 0;
        }
        let (mut s, mut e) = (start, end);
        let mut covered: u32 = 0;
        // Ranges overlapping or touching [s, e): a contiguous run, since the list is sorted.
        let first = self.list.partition_point(|r| r.end < start);
        let mut last = first;
        while last < self.list.len() && self.list[last].start <= end {
            let r = self.list[last];
            let ov_s = r.start.max(start);
            let ov_e = r.end.min(end);
            if ov_s < ov_e {
                covered = covered.saturating_add(ov_e.diff(ov_s) as u32);
            }
            s = s.min(r.start);
            e = e.max(r.end);
            last += 1;
        }
        let new_bytes = (end.diff(start) as u32).saturating_sub(covered);
        let stamp =
            if new_bytes > 0 { stamp } else { self.list[first..last].iter().map(|r| r.stamp).max().unwrap_or(stamp) };
        self.list.splice(first..last, [Range { start: s, end: e, stamp }]);
        new_bytes
    }

    /// Removes `[start, end)` (splitting a range it falls inside). Returns the bytes removed.
    pub fn remove(&mut self, start: SeqNum, end: SeqNum) -> u32 {
        if start >= end {
            return 0;
        }
        let mut removed: u32 = 0;
        let mut out = Vec::with_capacity(self.list.len() + 1);
        for r in self.list.drain(..) {
            if r.end <= start || r.start >= end {
                out.push(r);
                continue;
            }
            removed = removed.saturating_add(r.end.min(end).diff(r.start.max(start)) as u32);
            if r.start < start {
                out.push(Range { start: r.start, end: start, stamp: r.stamp });
            }
            if r.end > end {
                out.push(Range { start: end, end: r.end, stamp: r.stamp });
            }
        }
        self.list = out;
        removed
    }

    /// Forgets everything below `seq` (what a cumulative ACK has covered), trimming a range it cuts.
    pub fn trim_below(&mut self, seq: SeqNum) {
        let n = self.list.partition_point(|r| r.end <= seq);
        self.list.drain(..n);
        if let Some(r) = self.list.first_mut() {
            r.start = r.start.max(seq);
        }
    }

    /// The range holding `seq`, if any.
    pub fn containing(&self, seq: SeqNum) -> Option<&Range> {
        let i = self.list.partition_point(|r| r.end <= seq);
        self.list.get(i).filter(|r| r.start <= seq)
    }

    /// Drops the highest range (a bound on memory; see the callers for why that end).
    pub fn pop_highest(&mut self) -> Option<Range> {
        self.list.pop()
    }

    /// Joins the two highest ranges over the gap between them, returning the gap that was bridged.
    pub fn bridge_highest_gap(&mut self) -> Option<(SeqNum, SeqNum)> {
        let n = self.list.len();
        if n < 2 {
            return None;
        }
        let hi = self.list.pop()?;
        let lo = &mut self.list[n - 2];
        let gap = (lo.end, hi.start);
        lo.end = hi.end;
        lo.stamp = lo.stamp.max(hi.stamp);
        Some(gap)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(list: &Ranges) -> Vec<(u32, u32)> {
        list.as_slice().iter().map(|r| (r.start.0, r.end.0)).collect()
    }

    #[test]
    fn insert_coalesces_and_bridges() {
        let mut l = Ranges::default();
        assert_eq!(l.insert(SeqNum(100), SeqNum(200), 1), 100);
        assert_eq!(l.insert(SeqNum(300), SeqNum(400), 2), 100);
        assert_eq!(r(&l), vec![(100, 200), (300, 400)]);
        // Touching extends without creating a new block.
        assert_eq!(l.insert(SeqNum(200), SeqNum(250), 3), 50);
        assert_eq!(r(&l), vec![(100, 250), (300, 400)]);
        // A duplicate adds nothing and keeps the stamp.
        assert_eq!(l.insert(SeqNum(120), SeqNum(130), 9), 0);
        assert_eq!(l.as_slice()[0].stamp, 3);
        // Filling the gap bridges the two blocks.
        assert_eq!(l.insert(SeqNum(240), SeqNum(310), 4), 50);
        assert_eq!(r(&l), vec![(100, 400)]);
        assert_eq!(l.as_slice()[0].stamp, 4);
    }

    #[test]
    fn remove_trim_and_lookup() {
        let mut l = Ranges::default();
        l.insert(SeqNum(100), SeqNum(400), 1);
        assert_eq!(l.remove(SeqNum(200), SeqNum(300)), 100);
        assert_eq!(r(&l), vec![(100, 200), (300, 400)]);
        assert!(l.containing(SeqNum(150)).is_some());
        assert!(l.containing(SeqNum(200)).is_none());
        assert!(l.containing(SeqNum(300)).is_some());
        l.trim_below(SeqNum(350));
        assert_eq!(r(&l), vec![(350, 400)]);
        l.trim_below(SeqNum(400));
        assert!(l.is_empty());
    }

    #[test]
    fn works_across_the_wrap() {
        let mut l = Ranges::default();
        let base = SeqNum(u32::MAX - 50);
        l.insert(base, base + 100, 1);
        l.insert(base + 200, base + 300, 2);
        assert_eq!(l.len(), 2);
        assert!(l.containing(SeqNum(10)).is_some());
        l.trim_below(base + 250);
        assert_eq!(l.first().unwrap().start, base + 250);
    }

    #[test]
    fn bridge_and_pop_highest() {
        let mut l = Ranges::default();
        for i in 0..3u32 {
            l.insert(SeqNum(i * 100), SeqNum(i * 100 + 50), u64::from(i));
        }
        assert_eq!(l.bridge_highest_gap(), Some((SeqNum(150), SeqNum(200))));
        assert_eq!(r(&l), vec![(0, 50), (100, 250)]);
        assert_eq!(l.pop_highest().map(|x| x.start), Some(SeqNum(100)));
        assert_eq!(l.bridge_highest_gap(), None);
    }
}

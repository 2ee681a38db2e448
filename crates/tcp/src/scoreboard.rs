//! The SACK scoreboard of RFC 6675: which sequence ranges above the cumulative ACK the receiver has
//! reported holding. It is advisory only: data leaves the send buffer on cumulative ACKs alone, so a
//! receiver that reneges costs a retransmission, never data (RFC 2018 §8).

/// Merged, sorted, non-adjacent SACKed ranges `[start, end)` in sequence offsets.
#[derive(Debug, Clone, Default)]
pub(crate) struct Scoreboard {
    ranges: Vec<(u64, u64)>,
}

/// A not-SACKed gap `[start, end)` below the highest sent offset, and whether RFC 6675's IsLost holds for it
/// (the same for every octet of a gap, since no SACKed octet lies inside one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Hole {
    pub start: u64,
    pub end: u64,
    pub lost: bool,
}

impl Scoreboard {
    pub fn clear(&mut self) {
        self.ranges.clear();
    }

    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// One past the highest SACKed offset.
    pub fn highest(&self) -> Option<u64> {
        self.ranges.last().map(|r| r.1)
    }

    /// Bytes SACKed in all.
    pub fn sacked_bytes(&self) -> u64 {
        self.ranges.iter().map(|&(a, b)| b - a).sum()
    }

    /// Whether all of `[start, end)` is SACKed.
    pub fn covers(&self, start: u64, end: u64) -> bool {
        let i = self.ranges.partition_point(|&(_, b)| b <= start);
        self.ranges.get(i).is_some_and(|&(a, b)| a <= start && end <= b)
    }

    /// Records `[start, end)` as SACKed. Returns whether any of it was not SACKed before (new
    /// information, which is what makes a SACK-bearing ACK a duplicate ACK worth counting).
    pub fn insert(&mut self, start: u64, end: u64) -> bool {
        if start >= end {
            return false;
        }
        if self.ranges.iter().any(|&(a, b)| a <= start && end <= b) {
            return false;
        }
        let (mut s, mut e) = (start, end);
        // Ranges touching or overlapping the new one merge into it.
        self.ranges.retain(|&(a, b)| {
            if b < s || a > e {
                true
            } else {
                s = s.min(a);
                e = e.max(b);
                false
            }
        });
        let at = self.ranges.partition_point(|&(a, _)| a < s);
        self.ranges.insert(at, (s, e));
        true
    }

    /// Forgets everything below the cumulative ACK `una`.
    pub fn advance(&mut self, una: u64) {
        self.ranges.retain(|&(_, b)| b > una);
        if let Some(first) = self.ranges.first_mut() {
            first.0 = first.0.max(una);
        }
    }

    /// The gaps between `una` and `high` (highest offset sent, exclusive), lowest first. `lost` follows
    /// IsLost: `dupthresh` discontiguous SACKed ranges above, or more than `(dupthresh - 1) * mss` SACKed
    /// bytes above.
    pub fn holes(&self, una: u64, high: u64, mss: u32, dupthresh: u32) -> impl Iterator<Item = Hole> + '_ {
        let lost_bytes = u64::from(dupthresh.saturating_sub(1)) * u64::from(mss);
        let mut cursor = una;
        let mut idx = 0;
        std::iter::from_fn(move || {
            while cursor < high {
                let next = self.ranges.get(idx).copied();
                match next {
                    Some((a, b)) if a <= cursor => {
                        cursor = cursor.max(b);
                        idx += 1;
                    }
                    _ => {
                        let end = next.map_or(high, |(a, _)| a.min(high));
                        let start = cursor;
                        cursor = end;
                        let above = &self.ranges[idx..];
                        let sacked: u64 = above.iter().map(|&(a, b)| b - a).sum();
                        let lost = above.len() as u64 >= u64::from(dupthresh) || sacked > lost_bytes;
                        return Some(Hole { start, end, lost });
                    }
                }
            }
            None
        })
    }

    /// RFC 6675 `pipe`: octets not SACKed and not lost, plus octets retransmitted in this recovery
    /// (everything below `high_rxt`).
    pub fn pipe(&self, una: u64, high: u64, high_rxt: u64, mss: u32, dupthresh: u32) -> u64 {
        self.holes(una, high, mss, dupthresh)
            .map(|h| {
                let len = h.end - h.start;
                let rexmitted = h.end.min(high_rxt).saturating_sub(h.start);
                if h.lost {
                    rexmitted
                } else {
                    len + rexmitted
                }
            })
            .sum()
    }

    pub fn is_lost(&self, off: u64, high: u64, mss: u32, dupthresh: u32) -> bool {
        self.holes(off, high, mss, dupthresh).next().is_some_and(|h| h.start == off && h.lost)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn insert_merges_and_advance_trims() {
        let mut s = Scoreboard::default();
        s.insert(30, 40);
        s.insert(10, 20);
        s.insert(20, 25);
        s.insert(50, 60);
        assert_eq!(s.ranges, vec![(10, 25), (30, 40), (50, 60)]);
        assert!(s.insert(24, 55));
        assert_eq!(s.ranges, vec![(10, 60)]);
        assert!(!s.insert(30, 40), "already SACKed: no new information");
        s.advance(15);
        assert_eq!(s.ranges, vec![(15, 60)]);
        s.advance(60);
        assert!(s.is_empty());
    }

    #[test]
    fn holes_and_is_lost_follow_rfc6675() {
        // mss 10, dupthresh 3: a gap is lost once more than 20 bytes or 3 ranges are SACKed above it.
        let mut s = Scoreboard::default();
        s.insert(10, 20);
        s.insert(30, 50);
        s.insert(60, 70);
        let holes: Vec<_> = s.holes(0, 80, 10, 3).collect();
        assert_eq!(
            holes,
            vec![
                Hole { start: 0, end: 10, lost: true },
                Hole { start: 20, end: 30, lost: true },
                Hole { start: 50, end: 60, lost: false },
                Hole { start: 70, end: 80, lost: false },
            ]
        );
        assert!(s.is_lost(0, 80, 10, 3));
        assert!(!s.is_lost(50, 80, 10, 3));
        // pipe: the two unlost gaps (20) plus what was retransmitted below high_rxt = 5.
        assert_eq!(s.pipe(0, 80, 5, 10, 3), 25);
        assert_eq!(s.pipe(0, 80, 0, 10, 3), 20);
    }
}

//! The event queue: integer-nanosecond time, and a total order on events so that runs repeat exactly.
//!
//! Ordering guarantee: events run in order of time; events scheduled for the same instant run in the order
//! they were scheduled (a monotonically increasing insertion sequence breaks ties). Nothing else — not
//! addresses, not hash order — influences the order, so the same scenario and seed give the same run.

use lasthop_wire::Time;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

struct Entry<E> {
    at: Time,
    seq: u64,
    event: E,
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, other: &Self) -> bool {
        self.at == other.at && self.seq == other.seq
    }
}
impl<E> Eq for Entry<E> {}
impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<E> Ord for Entry<E> {
    // BinaryHeap is a max-heap: reverse so the earliest (time, seq) pops first.
    fn cmp(&self, other: &Self) -> Ordering {
        (other.at, other.seq).cmp(&(self.at, self.seq))
    }
}

/// A priority queue of events of type `E` with the current time.
pub struct Scheduler<E> {
    heap: BinaryHeap<Entry<E>>,
    now: Time,
    next_seq: u64,
    processed: u64,
}

impl<E> Default for Scheduler<E> {
    fn default() -> Self {
        Scheduler { heap: BinaryHeap::with_capacity(1024), now: Time::ZERO, next_seq: 0, processed: 0 }
    }
}

impl<E> Scheduler<E> {
    pub fn now(&self) -> Time {
        self.now
    }

    /// Schedules `event` at `at`; a time in the past is treated as now (events never run backwards).
    pub fn schedule(&mut self, at: Time, event: E) {
        let at = at.max(self.now);
        self.heap.push(Entry { at, seq: self.next_seq, event });
        self.next_seq += 1;
    }

    /// Removes the next event and advances the clock to it.
    pub fn pop(&mut self) -> Option<(Time, E)> {
        let e = self.heap.pop()?;
        self.now = e.at;
        self.processed += 1;
        Some((e.at, e.event))
    }

    pub fn peek_time(&self) -> Option<Time> {
        self.heap.peek().map(|e| e.at)
    }

    /// Events popped so far.
    pub fn processed(&self) -> u64 {
        self.processed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_instant_runs_in_insertion_order() {
        let mut s = Scheduler::default();
        s.schedule(Time(10), "b1");
        s.schedule(Time(5), "a");
        s.schedule(Time(10), "b2");
        s.schedule(Time(10), "b3");
        let order: Vec<_> = std::iter::from_fn(|| s.pop().map(|(_, e)| e)).collect();
        assert_eq!(order, ["a", "b1", "b2", "b3"]);
        assert_eq!(s.now(), Time(10));
        assert_eq!(s.processed(), 4);
    }

    #[test]
    fn past_events_are_clamped_to_now() {
        let mut s = Scheduler::default();
        s.schedule(Time(10), 1);
        s.pop();
        s.schedule(Time(3), 2);
        assert_eq!(s.pop(), Some((Time(10), 2)));
    }
}

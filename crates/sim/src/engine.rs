//! The event queue: integer-nanosecond time, and a total order on events so that runs repeat exactly.
//!
//! Ordering guarantee: events run in order of time; events scheduled for the same instant run in the order
//! they were scheduled (a monotonically increasing insertion sequence breaks ties). Nothing else — not
//! addresses, not hash order — influences the order, so the same scenario and seed give the same run.

use lasthop_wire::Time;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Bits of a [`Key`] below the time: the insertion sequence number, then the slab slot.
const SEQ_BITS: u32 = 40;
const SLOT_BITS: u32 = 24;

/// What the heap orders, packed in one integer so that a comparison is one branch-free `u128` compare:
/// the event's time (high 64 bits), its insertion sequence number (40 bits: 10^12 events per run), and
/// the slab slot where the event itself waits (24 bits: 16 million events pending at once). Sequence
/// numbers are unique, so the slot never decides the order. Keeping the events out of the heap makes
/// every sift move 16 bytes instead of a whole event with its packet handle.
#[derive(PartialEq, Eq, PartialOrd, Ord)]
struct Key(Reverse<u128>);

impl Key {
    fn new(at: Time, seq: u64, slot: u32) -> Key {
        assert!(seq < 1 << SEQ_BITS, "more than 2^40 events in one run");
        assert!(slot < 1 << SLOT_BITS, "more than 2^24 events pending at once");
        Key(Reverse((u128::from(at.0) << 64) | (u128::from(seq) << SLOT_BITS) | u128::from(slot)))
    }
    fn at(&self) -> Time {
        Time((self.0 .0 >> 64) as u64)
    }
    fn slot(&self) -> usize {
        (self.0 .0 & ((1 << SLOT_BITS) - 1)) as usize
    }
    fn seq(&self) -> u64 {
        ((self.0 .0 >> SLOT_BITS) & ((1 << SEQ_BITS) - 1)) as u64
    }
}

/// Events due more than this far ahead wait in a second heap (see [`Scheduler`]). 50 ms puts a packet's
/// next step (a frame's transmission, a hop's delay) and a paced burst's release in the near heap, and the
/// TCP timers (retransmission, ≥ 200 ms; BSD's delayed ACK) in the far one. An endpoint's timer event stays
/// queued when the endpoint re-arms its timer later, so a sender that sets many timers (BBR's pacing
/// releases) leaves stale ones queued; kept out of the near heap they no longer deepen every packet's push
/// and pop. Against 1 s, the plain 10 MB runs count 2.4–4.4 % fewer instructions, the Snoop run 0.1 % more
/// (docs/src/dev/performance.md).
const FAR_NS: u64 = 50_000_000;

/// A priority queue of events of type `E` with the current time.
///
/// The keys live in two heaps: `near` for events due within [`FAR_NS`] of the time they were scheduled and
/// `far` for the rest (TCP's timers, a flow start minutes ahead). A pop takes the earlier of the two tops, so
/// the order is exactly that of one heap (keys are unique); what changes is that the packets and timers of a
/// busy run sift through a heap of what is imminent only.
pub struct Scheduler<E> {
    /// Max-heaps of reversed keys: the earliest (time, sequence) on top.
    near: BinaryHeap<Key>,
    far: BinaryHeap<Key>,
    /// The pending events, indexed by their key's slot; a popped event's slot is reused by a later one.
    slab: Vec<Option<E>>,
    free: Vec<u32>,
    now: Time,
    /// The sequence number of the event popped last (the one playing).
    current_seq: u64,
    next_seq: u64,
    processed: u64,
}

impl<E> Default for Scheduler<E> {
    fn default() -> Self {
        Scheduler {
            near: BinaryHeap::with_capacity(1024),
            far: BinaryHeap::new(),
            slab: Vec::with_capacity(1024),
            free: Vec::with_capacity(1024),
            now: Time::ZERO,
            current_seq: 0,
            next_seq: 0,
            processed: 0,
        }
    }
}

impl<E> Scheduler<E> {
    pub fn now(&self) -> Time {
        self.now
    }

    /// Schedules `event` at `at`; a time in the past is treated as now (events never run backwards).
    pub fn schedule(&mut self, at: Time, event: E) {
        let seq = self.reserve();
        self.schedule_reserved(at, seq, event);
    }

    /// Takes the sequence number of an event that will be scheduled later, with
    /// [`Scheduler::schedule_reserved`]: among the events of its instant it then runs where it would have
    /// run had it been scheduled now. (The simulator queues each flow's start only when the flow before it
    /// starts, instead of ten thousand starts at once, and the order of the run stays the same.)
    pub fn reserve(&mut self) -> u64 {
        self.next_seq += 1;
        self.next_seq - 1
    }

    /// Schedules `event` at `at` under `seq`, a number from [`Scheduler::reserve`] not used before; a time in
    /// the past is treated as now.
    pub fn schedule_reserved(&mut self, at: Time, seq: u64, event: E) {
        debug_assert!(seq < self.next_seq, "a reserved sequence number");
        let at = at.max(self.now);
        let slot = match self.free.pop() {
            Some(slot) => {
                // A free slot is empty (`pop` took its event): nothing to drop, and saying so keeps the drop
                // check, and the copy of the event it forces around it, out of every event queued.
                let old = self.slab[slot as usize].replace(event);
                debug_assert!(old.is_none(), "a free slot is empty");
                std::mem::forget(old);
                slot
            }
            None => {
                self.slab.push(Some(event));
                (self.slab.len() - 1) as u32
            }
        };
        let key = Key::new(at, seq, slot);
        if at.0 - self.now.0 > FAR_NS {
            self.far.push(key);
        } else {
            self.near.push(key);
        }
    }

    /// Removes the next event and advances the clock to it. Inlined: it is half of the event loop's own
    /// work, and the compiler's own choice flips with unrelated changes to the loop.
    #[inline(always)]
    pub fn pop(&mut self) -> Option<(Time, E)> {
        // `Key` is reversed: the greater key is the earlier event.
        let key = match (self.near.peek(), self.far.peek()) {
            (Some(n), Some(f)) if f > n => self.far.pop()?,
            (Some(_), _) => self.near.pop()?,
            (None, _) => self.far.pop()?,
        };
        let slot = key.slot();
        let event = self.slab[slot].take().expect("a queued key has its event");
        self.free.push(slot as u32);
        self.now = key.at();
        self.current_seq = key.seq();
        self.processed += 1;
        Some((self.now, event))
    }

    /// Whether an event at `at` under `seq` (a number from [`Scheduler::reserve`]) would have run before the
    /// event playing now, had it been scheduled: for an event left unscheduled because it would have had
    /// nothing to do unless something else happened first (a link's transmitter going idle).
    pub fn would_have_run(&self, at: Time, seq: u64) -> bool {
        (at, seq) < (self.now, self.current_seq)
    }

    /// Moves the clock to `at` (if later) without an event: the end of a run whose last events were left
    /// out as having nothing to do.
    pub fn advance_to(&mut self, at: Time) {
        self.now = self.now.max(at);
    }

    pub fn peek_time(&self) -> Option<Time> {
        self.near.peek().max(self.far.peek()).map(Key::at)
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

    #[test]
    fn reused_slots_keep_time_and_insertion_order() {
        // Interleaved pops and pushes reuse slab slots out of order; the order stays (time, insertion).
        let mut s = Scheduler::default();
        for (t, e) in [(30, "c"), (10, "a"), (20, "b")] {
            s.schedule(Time(t), e);
        }
        assert_eq!(s.pop(), Some((Time(10), "a")));
        s.schedule(Time(20), "b2");
        s.schedule(Time(15), "a2");
        assert_eq!(s.pop(), Some((Time(15), "a2")));
        s.schedule(Time(20), "b3");
        let rest: Vec<_> = std::iter::from_fn(|| s.pop()).collect();
        assert_eq!(rest, [(Time(20), "b"), (Time(20), "b2"), (Time(20), "b3"), (Time(30), "c")]);
        // Slots: c, a, b; then b2 takes a's, a2 a fourth, b3 a2's.
        assert_eq!(s.slab.len(), 4, "popped slots are reused");
    }

    #[test]
    fn near_and_far_events_interleave_in_time_and_insertion_order() {
        // Far events (beyond FAR_NS when scheduled) and near ones scheduled later for the same instant
        // keep (time, insertion) order across the two heaps.
        let far = FAR_NS + 5;
        let mut s = Scheduler::default();
        s.schedule(Time(far), "far1");
        s.schedule(Time(3 * far), "far3");
        s.schedule(Time(2), "near");
        assert_eq!(s.peek_time(), Some(Time(2)));
        assert_eq!(s.pop(), Some((Time(2), "near")));
        s.schedule(Time(far), "far1-near"); // now within FAR_NS: the near heap, same instant, later
        s.schedule(Time(far - 1), "before");
        let order: Vec<_> = std::iter::from_fn(|| s.pop().map(|(_, e)| e)).collect();
        assert_eq!(order, ["before", "far1", "far1-near", "far3"]);
        assert!(s.near.is_empty() && s.far.is_empty());
    }

    #[test]
    fn a_reserved_event_runs_where_it_would_have_run_had_it_been_scheduled_then() {
        let mut s = Scheduler::default();
        s.schedule(Time(10), "first");
        let seq = s.reserve();
        s.schedule(Time(10), "after the reservation");
        s.schedule(Time(5), "earlier");
        assert_eq!(s.pop(), Some((Time(5), "earlier")));
        s.schedule_reserved(Time(10), seq, "reserved");
        let order: Vec<_> = std::iter::from_fn(|| s.pop().map(|(_, e)| e)).collect();
        assert_eq!(order, ["first", "reserved", "after the reservation"]);
    }

    #[test]
    fn a_reserved_event_would_have_run_before_the_event_playing_if_its_key_is_smaller() {
        let mut s = Scheduler::default();
        let early = s.reserve();
        s.schedule(Time(10), "playing");
        let late = s.reserve();
        assert_eq!(s.pop(), Some((Time(10), "playing")));
        assert!(s.would_have_run(Time(9), late), "an earlier instant");
        assert!(s.would_have_run(Time(10), early), "the same instant, reserved before");
        assert!(!s.would_have_run(Time(10), late), "the same instant, reserved after");
        assert!(!s.would_have_run(Time(11), early), "a later instant");
    }

    proptest::proptest! {
        /// Any mix of schedules (near and far) and pops comes out in (time, insertion) order, as from
        /// one sorted list.
        #[test]
        fn pops_follow_one_total_order(ops in proptest::collection::vec((0u64..4 * FAR_NS, proptest::bool::ANY), 1..200)) {
            let mut s = Scheduler::default();
            let mut reference = std::collections::BTreeMap::new();
            for (i, (delay, pop)) in ops.into_iter().enumerate() {
                if pop {
                    let expected = reference.pop_first().map(|((at, _), e)| (Time(at), e));
                    proptest::prop_assert_eq!(s.pop(), expected);
                } else {
                    let at = s.now().0 + delay;
                    s.schedule(Time(at), i);
                    reference.insert((at, i), i);
                }
            }
            let expected: Vec<_> = reference.into_iter().map(|((at, _), e)| (Time(at), e)).collect();
            proptest::prop_assert_eq!(std::iter::from_fn(|| s.pop()).collect::<Vec<_>>(), expected);
        }
    }
}

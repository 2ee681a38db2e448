//! Half-duplex medium access, sans-IO: which frame goes on a shared wireless medium next. One implementation
//! for both faces: the simulator's wireless links (`lasthop-sim::link`) and the real base station's hop
//! emulator (`lasthop-net::hop`).
//!
//! Each end of a wireless link is a station with two drop-tail transmit queues, high priority for local
//! retransmissions and normal (Balakrishnan 1995 §3.1.2: "two queues at the link layer"); [`Stations`] holds the two
//! stations of one link and says which of them sends next under the link's [`Access`]. Several links can
//! share one [`Medium`] (cells on one channel, Balakrishnan 1995 §6): one frame at a time over all of them, local
//! retransmissions on any link first, the links otherwise taking turns frame by frame.
//!
//! Nothing here reads a clock or draws a random number: the caller asks who goes next when the medium is
//! free, takes that frame, and tells the medium when the frame's air time is over.

use crate::key_index::KeyIndex;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// Who gets a link's half-duplex medium next when both of its stations have frames waiting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Access {
    /// The station that did not send the latest frame goes next if it has a frame waiting; a station alone
    /// sends back to back; each station sends its own local retransmissions first. This is what CSMA/CA
    /// (Balakrishnan 1995's WaveLAN, 802.11) gives two saturated stations that contend for every frame with equal
    /// chances: a mobile's ACK waits for about one data frame, not for the base station's whole queue.
    #[default]
    Turns,
    /// One first-come first-served order over both stations, local retransmissions of either station first:
    /// a frame waits for every frame queued before it in either direction (with a deep base-station queue,
    /// the mobile's ACKs wait behind all of it: 100 frames at 2 Mb/s, ~600 ms).
    Fifo,
}

/// The two stations of one link (index 0 sends toward end 1, index 1 toward end 0), each with a high-priority
/// and a normal drop-tail queue of `capacity` frames. `T` is whatever the face moves (a packet, a frame with
/// its length).
pub struct Stations<T> {
    /// Per station: [high, normal], each frame with its link-wide arrival number.
    queues: [[VecDeque<(u64, T)>; 2]; 2],
    capacity: usize,
    next_order: u64,
    /// The station of the latest frame taken for the air (for [`Access::Turns`]).
    last_on_air: Option<usize>,
}

const HIGH: usize = 0;
const NORMAL: usize = 1;

impl<T> Stations<T> {
    /// Two idle stations whose every queue holds at most `capacity` frames (at least 1).
    pub fn new(capacity: usize) -> Stations<T> {
        Stations { queues: Default::default(), capacity: capacity.max(1), next_order: 0, last_on_air: None }
    }

    /// Queues `frame` at `station`, in its high-priority queue if `priority`; gives it back when that queue
    /// is full (drop-tail). A dropped frame still takes an arrival number, as it arrived.
    pub fn enqueue(&mut self, station: usize, frame: T, priority: bool) -> Result<(), T> {
        let order = self.next_order;
        self.next_order += 1;
        let q = &mut self.queues[station][if priority { HIGH } else { NORMAL }];
        if q.len() >= self.capacity {
            return Err(frame);
        }
        q.push_back((order, frame));
        Ok(())
    }

    /// Whether `station` has a frame waiting.
    pub fn has_frame(&self, station: usize) -> bool {
        !self.queues[station][HIGH].is_empty() || !self.queues[station][NORMAL].is_empty()
    }

    /// Frames waiting at `station`: (high priority, normal).
    pub fn waiting(&self, station: usize) -> (usize, usize) {
        (self.queues[station][HIGH].len(), self.queues[station][NORMAL].len())
    }

    /// How full `station`'s normal queue is, 0.0–1.0 (what a host reports as its queue length).
    pub fn occupancy(&self, station: usize) -> f64 {
        self.queues[station][NORMAL].len() as f64 / self.capacity as f64
    }

    /// The station whose frame goes next when the medium is given to this link, and whether that frame is a
    /// local retransmission (high priority). `Fifo`: the earliest-queued local retransmission of either
    /// station, else the earliest-queued frame. `Turns`: the station that did not send the latest frame if it
    /// has one waiting, else the other; the very first frame goes as under `Fifo`.
    pub fn next(&self, access: Access) -> Option<(usize, bool)> {
        if let (Access::Turns, Some(last)) = (access, self.last_on_air) {
            if let Some(s) = [1 - last, last].into_iter().find(|&s| self.has_frame(s)) {
                return Some((s, !self.queues[s][HIGH].is_empty()));
            }
        }
        let earliest = |class: usize| {
            (0..2).filter_map(|s| self.queues[s][class].front().map(|(o, _)| (*o, s))).min().map(|(_, s)| s)
        };
        earliest(HIGH).map(|s| (s, true)).or_else(|| earliest(NORMAL).map(|s| (s, false)))
    }

    /// Takes `station`'s next frame for the air (its local retransmissions first) and remembers that this
    /// station sent last.
    pub fn take(&mut self, station: usize) -> Option<T> {
        let [high, normal] = &mut self.queues[station];
        let (_, frame) = high.pop_front().or_else(|| normal.pop_front())?;
        self.last_on_air = Some(station);
        Some(frame)
    }

    /// Takes out of both of `station`'s queues every frame for which `matches` holds; returns how many.
    pub fn purge(&mut self, station: usize, mut matches: impl FnMut(&T) -> bool) -> u64 {
        let mut removed = 0;
        for q in &mut self.queues[station] {
            let before = q.len();
            q.retain(|(_, f)| !matches(f));
            removed += (before - q.len()) as u64;
        }
        removed
    }
}

/// Media with more links than this keep a [`Ready`] index (updated by [`Medium::update`]) so that
/// [`Medium::acquire_ready`] is O(log links); smaller ones scan every link, which is cheaper for a few.
pub const INDEX_ABOVE_LINKS: usize = 8;

/// One half-duplex medium shared by several links: at most one frame in the air over all of them.
#[derive(Debug, Clone, Default)]
pub struct Medium {
    /// The links (the owner's indices) that send on this medium, in a fixed order.
    pub links: Vec<usize>,
    busy: bool,
    /// Position in `links` of the link served last, for taking turns.
    last: usize,
    /// With more than [`INDEX_ABOVE_LINKS`] links: what each link would send next, kept up to date by the
    /// owner through [`Medium::update`], so that giving out the medium does not look at every link.
    ready: Option<Ready>,
}

/// Per link of a large medium, the frame it would send next (its [`Stations::next`]), and the positions
/// whose link has a frame waiting and a local retransmission next, ordered, so that the cyclic successor of
/// the link served last is one range query.
#[derive(Debug, Clone, Default)]
struct Ready {
    /// Owner's link index → position in `Medium::links`, read on every queue change (looked up only, never
    /// iterated).
    position: KeyIndex,
    next: Vec<Option<(usize, bool)>>,
    any: std::collections::BTreeSet<usize>,
    high: std::collections::BTreeSet<usize>,
}

impl Ready {
    fn set(&mut self, pos: usize, next: Option<(usize, bool)>) {
        let had = self.next[pos];
        if had == next {
            return;
        }
        self.next[pos] = next;
        match next {
            Some(_) => self.any.insert(pos),
            None => self.any.remove(&pos),
        };
        match next {
            Some((_, true)) => self.high.insert(pos),
            _ => self.high.remove(&pos),
        };
    }

    /// The first position of `set` after `last`, cyclically (`last` itself comes last).
    fn after(set: &std::collections::BTreeSet<usize>, last: usize) -> Option<usize> {
        set.range(last + 1..).next().or_else(|| set.range(..=last).next()).copied()
    }
}

impl Medium {
    pub fn new(links: Vec<usize>) -> Medium {
        Medium { links, busy: false, last: 0, ready: None }
    }

    pub fn is_busy(&self) -> bool {
        self.busy
    }

    /// Whether this medium keeps the index (more than [`INDEX_ABOVE_LINKS`] links, after
    /// [`Medium::reindex`]); if so the owner must call [`Medium::update`] whenever a link's queues change.
    pub fn is_indexed(&self) -> bool {
        self.ready.is_some()
    }

    /// To be called once `links` is complete (and again whenever it changes): builds the index of a medium of
    /// more than [`INDEX_ABOVE_LINKS`] links from each link's `next` (its [`Stations::next`]), or drops it.
    pub fn reindex(&mut self, next: impl Fn(usize) -> Option<(usize, bool)>) {
        if self.links.len() <= INDEX_ABOVE_LINKS {
            self.ready = None;
            return;
        }
        let mut ready = Ready {
            position: KeyIndex::new(&self.links.iter().map(|&l| l as u64).collect::<Vec<_>>()),
            next: vec![None; self.links.len()],
            ..Ready::default()
        };
        for (p, &l) in self.links.iter().enumerate() {
            ready.set(p, next(l));
        }
        self.ready = Some(ready);
    }

    /// Link `link`'s queues changed (a frame queued, taken or purged): `next` is its [`Stations::next`] now.
    /// Does nothing on a medium without the index.
    #[inline]
    pub fn update(&mut self, link: usize, next: Option<(usize, bool)>) {
        if let Some(r) = self.ready.as_mut() {
            let pos = r.position.get(link as u64).expect("a link of this medium");
            r.set(pos, next);
        }
    }

    /// If the medium is free and a frame waits on one of its links, takes the medium and returns (link, station)
    /// of the frame to send: local retransmissions on any link first, then the links take turns, starting
    /// after the one served last. `next(link)` is that link's [`Stations::next`]. With one link this is that
    /// link's own order. On an indexed medium (see [`Medium::reindex`]) the index answers instead, in
    /// O(log links), with the same choice the scan would make. Inlined: half the calls find the medium busy
    /// (every frame queued behind one on the air), and that answer is one load.
    #[inline]
    pub fn acquire(&mut self, next: impl Fn(usize) -> Option<(usize, bool)>) -> Option<(usize, usize)> {
        if self.busy {
            return None;
        }
        let (i, station) = match &self.ready {
            Some(r) => {
                let i = Ready::after(&r.high, self.last).or_else(|| Ready::after(&r.any, self.last))?;
                let station = r.next[i].expect("a ready link").0;
                debug_assert_eq!(next(self.links[i]).map(|n| n.0), Some(station), "the index is out of date");
                (i, station)
            }
            None => self.scan(next)?,
        };
        self.busy = true;
        self.last = i;
        Some((self.links[i], station))
    }

    /// Every link in turn from the one after the last served: the first with a local retransmission next,
    /// else the first with any frame.
    fn scan(&self, next: impl Fn(usize) -> Option<(usize, bool)>) -> Option<(usize, usize)> {
        let n = self.links.len();
        let mut first = None;
        for i in (1..=n).map(|k| (self.last + k) % n) {
            let Some((station, high)) = next(self.links[i]) else { continue };
            if high {
                return Some((i, station));
            }
            first = first.or(Some((i, station)));
        }
        first
    }

    /// The frame on the air is done: the medium is free.
    pub fn finish(&mut self) {
        self.busy = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A frame in the tests: (station, priority, arrival number over the whole test).
    type Frame = (usize, bool, u32);

    #[derive(Debug, Clone)]
    enum Op {
        /// A frame arrives at (link, station), priority or not.
        Arrive { link: usize, station: usize, priority: bool },
        /// The frame on the air (if any) ends.
        Finish,
    }

    impl Op {
        /// The same operation on a medium of `links` links.
        fn on(&self, links: usize) -> Op {
            match *self {
                Op::Arrive { link, station, priority } => Op::Arrive { link: link % links, station, priority },
                Op::Finish => Op::Finish,
            }
        }
    }

    fn op(links: usize) -> impl Strategy<Value = Op> {
        prop_oneof![
            3 => (0..links, 0..2usize, prop::bool::weighted(0.2))
                .prop_map(|(link, station, priority)| Op::Arrive { link, station, priority }),
            2 => Just(Op::Finish),
        ]
    }

    fn access() -> impl Strategy<Value = Access> {
        prop_oneof![Just(Access::Fifo), Just(Access::Turns)]
    }

    /// Plays `ops` on `links` links sharing one medium, acquiring after every step as a host does; returns the
    /// frames in the order they went on the air, with (link, station) and what was waiting at that moment.
    struct Run {
        stations: Vec<Stations<Frame>>,
        medium: Medium,
        on_air: Option<(usize, Frame)>,
        sent: Vec<(usize, Frame)>,
        access: Access,
    }

    impl Run {
        fn new(links: usize, capacity: usize, access: Access) -> Run {
            Run {
                stations: (0..links).map(|_| Stations::new(capacity)).collect(),
                medium: Medium::new((0..links).collect()),
                on_air: None,
                sent: Vec::new(),
                access,
            }
        }

        /// What a host does whenever something changed: start a frame if the medium gives one.
        fn kick(&mut self) {
            let access = self.access;
            let stations = &self.stations;
            if let Some((link, station)) = self.medium.acquire(|l| stations[l].next(access)) {
                assert!(self.on_air.is_none(), "two frames on one medium at once");
                let expected = self.stations[link].next(access).expect("acquired");
                assert_eq!(expected.0, station);
                let frame = self.stations[link].take(station).expect("a frame waits");
                let n = self.stations[link].next(access);
                self.medium.update(link, n);
                assert_eq!(frame.1, expected.1, "the frame taken is the class `next` announced");
                self.on_air = Some((link, frame));
                self.sent.push((link, frame));
            }
        }

        fn apply(&mut self, op: &Op, arrivals: &mut u32) {
            match *op {
                Op::Arrive { link, station, priority } => {
                    let _ = self.stations[link].enqueue(station, (station, priority, *arrivals), priority);
                    *arrivals += 1;
                    let n = self.stations[link].next(self.access);
                    self.medium.update(link, n);
                }
                Op::Finish => {
                    if self.on_air.take().is_some() {
                        self.medium.finish();
                    }
                }
            }
            self.kick();
        }

        fn waiting(&self) -> usize {
            self.stations.iter().map(|s| (0..2).map(|st| s.waiting(st).0 + s.waiting(st).1).sum::<usize>()).sum()
        }
    }

    proptest! {
        /// Never two frames on one medium at once (`kick` asserts it), and work-conserving: whenever the
        /// medium is free after a step, nothing waits.
        #[test]
        fn one_frame_at_a_time_and_work_conserving(
            links in 1..4usize,
            access in access(),
            ops in prop::collection::vec(op(3), 0..200),
        ) {
            let mut run = Run::new(links, 8, access);
            let mut arrivals = 0;
            for op in ops.iter().map(|o| o.on(links)) {
                run.apply(&op, &mut arrivals);
                prop_assert_eq!(run.medium.is_busy(), run.on_air.is_some());
                if !run.medium.is_busy() {
                    prop_assert_eq!(run.waiting(), 0, "the medium idles while frames wait");
                }
            }
        }

        /// Local retransmissions go first: under `Fifo` one waiting anywhere on the medium goes before any
        /// normal frame; under `Turns` a station with one waiting sends it before its normal frames.
        #[test]
        fn priority_frames_first(
            links in 1..4usize,
            access in access(),
            ops in prop::collection::vec(op(3), 0..200),
        ) {
            let mut run = Run::new(links, 8, access);
            let mut arrivals = 0;
            for op in ops.iter().map(|o| o.on(links)) {
                let high: Vec<[bool; 2]> =
                    run.stations.iter().map(|s| [s.waiting(0).0 > 0, s.waiting(1).0 > 0]).collect();
                let before = run.sent.len();
                run.apply(&op, &mut arrivals);
                if run.sent.len() > before {
                    let (link, (station, priority, _)) = *run.sent.last().unwrap();
                    let must = match access {
                        Access::Fifo => high.iter().any(|h| h[0] || h[1]),
                        Access::Turns => high[link][station],
                    };
                    prop_assert!(priority || !must, "a normal frame went while a local retransmission waited");
                }
            }
        }

        /// `Fifo` on one link: frames of one class go on the air in arrival order across both stations.
        #[test]
        fn fifo_preserves_arrival_order(ops in prop::collection::vec(op(1), 0..200)) {
            let mut run = Run::new(1, 1000, Access::Fifo);
            let mut arrivals = 0;
            for op in &ops {
                run.apply(op, &mut arrivals);
            }
            for class in [true, false] {
                let order: Vec<u32> = run.sent.iter().filter(|(_, f)| f.1 == class).map(|(_, f)| f.2).collect();
                prop_assert!(order.windows(2).all(|w| w[0] < w[1]), "out of order: {:?}", order);
            }
        }

        /// `Turns` on one link: while both stations have frames waiting, consecutive frames come from
        /// different stations.
        #[test]
        fn turns_alternate_while_both_wait(ops in prop::collection::vec(op(1), 0..200)) {
            let mut s: Stations<u32> = Stations::new(1000);
            let mut last = None;
            for (i, op) in ops.iter().enumerate() {
                match *op {
                    Op::Arrive { station, priority, .. } => {
                        s.enqueue(station, i as u32, priority).unwrap();
                    }
                    Op::Finish => {
                        let both = s.has_frame(0) && s.has_frame(1);
                        if let Some((station, _)) = s.next(Access::Turns) {
                            if both {
                                if let Some(l) = last {
                                    prop_assert_ne!(station, l, "the same station sent twice while both waited");
                                }
                            }
                            s.take(station).unwrap();
                            last = Some(station);
                        }
                    }
                }
            }
        }
    }

    proptest! {
        /// A medium of many links with the index gives the medium out exactly as the scan over every link
        /// does: the same frames in the same order, with frames queued, taken and purged in between.
        #[test]
        fn the_index_chooses_as_the_scan_does(
            links in (INDEX_ABOVE_LINKS + 1)..(INDEX_ABOVE_LINKS + 8),
            access in access(),
            ops in prop::collection::vec((op(INDEX_ABOVE_LINKS + 8), 0..4u8), 0..400),
        ) {
            let mut scanned = Run::new(links, 4, access);
            let mut indexed = Run::new(links, 4, access);
            indexed.medium.reindex(|l| indexed.stations[l].next(access));
            prop_assert!(indexed.medium.is_indexed() && !scanned.medium.is_indexed());
            let (mut a, mut b) = (0, 0);
            for (op, purge) in &ops {
                let op = op.on(links);
                if *purge == 0 {
                    // A purge of one station's odd-numbered frames, outside any kick (as a feature does).
                    if let Op::Arrive { link, station, .. } = op {
                        for run in [&mut scanned, &mut indexed] {
                            run.stations[link].purge(station, |f| f.2 % 2 == 1);
                            let n = run.stations[link].next(access);
                            run.medium.update(link, n);
                        }
                    }
                }
                scanned.apply(&op, &mut a);
                indexed.apply(&op, &mut b);
                prop_assert_eq!(&scanned.sent, &indexed.sent);
            }
        }
    }

    #[test]
    fn a_small_medium_keeps_no_index() {
        let mut m = Medium::new((0..INDEX_ABOVE_LINKS).collect());
        m.reindex(|_| None);
        assert!(!m.is_indexed());
        m.update(3, Some((0, false)));
        m.links.push(INDEX_ABOVE_LINKS);
        m.reindex(|l| (l == 5).then_some((1, true)));
        assert!(m.is_indexed());
        assert_eq!(m.acquire(|l| (l == 5).then_some((1, true))), Some((5, 1)));
    }

    #[test]
    fn a_full_queue_gives_the_frame_back() {
        let mut s: Stations<u32> = Stations::new(2);
        assert_eq!(s.enqueue(0, 1, false), Ok(()));
        assert_eq!(s.enqueue(0, 2, false), Ok(()));
        assert_eq!(s.enqueue(0, 3, false), Err(3));
        assert_eq!(s.enqueue(0, 4, true), Ok(()), "the priority queue has its own room");
        assert_eq!(s.waiting(0), (1, 2));
        assert_eq!(s.occupancy(0), 1.0);
    }

    #[test]
    fn turns_first_frame_is_first_come_and_a_lone_station_sends_back_to_back() {
        let mut s: Stations<&str> = Stations::new(10);
        s.enqueue(1, "ack", false).unwrap();
        s.enqueue(0, "d1", false).unwrap();
        s.enqueue(0, "d2", false).unwrap();
        assert_eq!(s.next(Access::Turns), Some((1, false)), "first frame: first come");
        assert_eq!(s.take(1), Some("ack"));
        assert_eq!(s.next(Access::Turns), Some((0, false)));
        assert_eq!(s.take(0), Some("d1"));
        assert_eq!(s.next(Access::Turns), Some((0, false)), "alone: back to back");
    }

    #[test]
    fn fifo_makes_the_ack_wait_and_turns_does_not() {
        let fill = |s: &mut Stations<&str>| {
            for d in ["d1", "d2", "d3"] {
                s.enqueue(0, d, false).unwrap();
            }
            s.enqueue(1, "ack", false).unwrap();
        };
        let order = |access| {
            let mut s = Stations::new(10);
            fill(&mut s);
            let mut out = Vec::new();
            while let Some((st, _)) = s.next(access) {
                out.push(s.take(st).unwrap());
            }
            out
        };
        assert_eq!(order(Access::Fifo), ["d1", "d2", "d3", "ack"]);
        assert_eq!(order(Access::Turns), ["d1", "ack", "d2", "d3"]);
    }

    #[test]
    fn purge_takes_matching_frames_from_both_queues() {
        let mut s: Stations<u32> = Stations::new(10);
        for i in 0..6 {
            s.enqueue(0, i, i % 2 == 0).unwrap();
        }
        assert_eq!(s.purge(0, |f| *f >= 3), 3);
        assert_eq!(s.waiting(0), (2, 1));
    }

    #[test]
    fn links_on_one_medium_take_turns_and_priority_jumps_the_turn() {
        let mut links: Vec<Stations<u32>> = (0..2).map(|_| Stations::new(10)).collect();
        for i in 0..2 {
            links[0].enqueue(0, i, false).unwrap();
            links[1].enqueue(0, 10 + i, false).unwrap();
        }
        let mut m = Medium::new(vec![0, 1]);
        let mut served = Vec::new();
        while let Some((l, st)) = m.acquire(|l| links[l].next(Access::Fifo)) {
            assert_eq!(m.acquire(|l| links[l].next(Access::Fifo)), None, "busy until finished");
            served.push(links[l].take(st).unwrap());
            m.finish();
            if served.len() == 1 {
                links[0].enqueue(1, 99, true).unwrap();
            }
        }
        assert_eq!(served, [10, 99, 11, 0, 1]);
    }
}

//! Links: a wired point-to-point link (full duplex, one drop-tail queue each way) and the wireless hop
//! (rate, propagation delay, per-frame MAC overhead, a shared half-duplex medium by default, and two transmit
//! queues per station so that local retransmissions go first: Balakrishnan 1995 §3.1.2, "two queues at the link layer").
//!
//! A half-duplex link sends one frame at a time on a [`Medium`]. By default every half-duplex link is its own
//! medium; links given the same `medium` name (or the cells of overlapping base stations, see
//! [`crate::mobility`]) share one, as Balakrishnan 1995's two WaveLAN cells in one room share one channel (§6): a frame
//! on one link then keeps every other link of the medium waiting. Who sends next is decided by the
//! half-duplex scheduler shared with the real base station's hop emulator, [`lasthop_channel::medium`]:
//! within a link as the link's `access` says (`turns` or `fifo`, see [`Access`]); across links the medium
//! goes to the links with a frame waiting in turn, frame by frame (roughly the per-station fairness of
//! WaveLAN's CSMA/CA), local retransmissions first.

use crate::error_model::ErrorModel;
use crate::scenario::{Duplex, LinkConfig, LinkKind};
use bytes::Bytes;
use lasthop_channel::medium::Stations;
pub use lasthop_channel::medium::{Access, Medium};
use lasthop_wire::pcap::PcapWriter;
use lasthop_wire::Time;
use std::fs::File;
use std::io::BufWriter;

/// A pcap capture of one end's interface, and the file it goes to (for error messages).
pub struct Pcap {
    pub writer: PcapWriter<BufWriter<File>>,
    pub path: std::path::PathBuf,
}

/// One direction of a link: its error model and its counters (its queues are the link's [`Stations`]).
pub struct Direction {
    /// Only for full duplex: this direction's transmitter is sending.
    busy: bool,
    /// Only for full duplex: the end of the frame on the air when it has no end event queued, as nothing
    /// waited behind it when it started (see `Core::launch`): when, and under which reserved sequence number.
    pub(crate) unqueued_done: Option<(Time, u64)>,
    pub error: Box<dyn ErrorModel>,
    pub frames_sent: u64,
    pub frames_lost: u64,
    pub frames_dropped_queue: u64,
    pub bytes_sent: u64,
    pub busy_ns: u64,
}

/// A frame put on the medium: where it goes and whether it survives.
pub struct Transmission {
    pub dir: usize,
    pub packet: Bytes,
    /// When the transmitter is free again.
    pub done_at: Time,
    /// When the frame reaches the far end (if not corrupted).
    pub arrives_at: Time,
    pub corrupted: bool,
}

pub struct Link {
    pub name: String,
    pub kind: LinkKind,
    duplex: Duplex,
    /// Half duplex: how the two directions share the medium when both have frames waiting.
    access: Access,
    /// Each direction's transmit queues (station `d` sends direction `d`).
    queues: Stations<Bytes>,
    /// Node index at each end: direction 0 sends ends[0] → ends[1].
    pub ends: [usize; 2],
    rate_mbps: f64,
    delay_ns: u64,
    overhead_ns: u64,
    pub dirs: [Direction; 2],
    /// Half duplex: the index of the medium this link sends on (set by whoever owns the media).
    pub medium: Option<usize>,
    /// Per end (same index as `ends`): pcap of what that end's interface sent and received.
    pub pcap: [Option<Pcap>; 2],
    /// The ends are out of each other's range: every frame sent, or in flight when this was set, is lost
    /// (mobility sets it when the mobile leaves a cell).
    pub out_of_range: bool,
    /// The airtimes of the last two frame sizes sent, (bytes, ns): a bulk transfer sends almost only
    /// full data frames and ACKs, and this spares the float division and rounding per frame.
    airtime_memo: [(usize, u64); 2],
}

impl Link {
    pub fn new(name: String, cfg: &LinkConfig, ends: [usize; 2], errors: [Box<dyn ErrorModel>; 2]) -> Link {
        let [e0, e1] = errors;
        let dir = |error| Direction {
            busy: false,
            unqueued_done: None,
            error,
            frames_sent: 0,
            frames_lost: 0,
            frames_dropped_queue: 0,
            bytes_sent: 0,
            busy_ns: 0,
        };
        Link {
            name,
            kind: cfg.kind,
            duplex: cfg.duplex(),
            access: cfg.access(),
            queues: Stations::new(cfg.queue_packets),
            ends,
            rate_mbps: cfg.rate_mbps,
            delay_ns: (cfg.delay_ms * 1e6).round() as u64,
            overhead_ns: (cfg.mac_overhead_us * 1e3).round() as u64,
            dirs: [dir(e0), dir(e1)],
            medium: None,
            pcap: [None, None],
            out_of_range: false,
            airtime_memo: [(usize::MAX, 0); 2],
        }
    }

    /// The direction that leaves node `from`.
    pub fn dir_from(&self, from: usize) -> usize {
        if self.ends[0] == from {
            0
        } else {
            1
        }
    }

    /// One-way propagation delay.
    pub fn delay_ns(&self) -> u64 {
        self.delay_ns
    }

    pub fn airtime_ns(&self, bytes: usize) -> u64 {
        // bits / (Mb/s) = µs; keep it in integer ns with one rounding.
        (bytes as f64 * 8.0 * 1e3 / self.rate_mbps).round() as u64 + self.overhead_ns
    }

    /// [`Link::airtime_ns`] through the memo of recent frame sizes (the same value, computed once per size).
    fn airtime_memo_ns(&mut self, bytes: usize) -> u64 {
        match self.airtime_memo {
            [(b, air), _] if b == bytes => air,
            [first, (b, air)] if b == bytes => {
                self.airtime_memo = [(b, air), first];
                air
            }
            [first, _] => {
                let air = self.airtime_ns(bytes);
                self.airtime_memo = [(bytes, air), first];
                air
            }
        }
    }

    /// Queues a packet; false when the queue is full and it was dropped (drop-tail).
    pub fn enqueue(&mut self, dir: usize, packet: Bytes, priority: bool) -> bool {
        let queued = self.queues.enqueue(dir, packet, priority).is_ok();
        if !queued {
            self.dirs[dir].frames_dropped_queue += 1;
        }
        queued
    }

    /// Takes out of both transmit queues of `dir` every frame not yet on the air for which `matches` holds;
    /// returns how many. (A base station that discards what it queued for a mobile that moved away:
    /// `mobility.old_bs_drains = false`.)
    pub fn purge(&mut self, dir: usize, matches: impl Fn(&[u8]) -> bool) -> u64 {
        self.queues.purge(dir, |p| matches(p))
    }

    /// Full duplex: starts the next transmission if a direction's transmitter is free and a frame waits. Call
    /// until None. (Half-duplex links start frames through their [`Medium`].)
    pub fn start_next(&mut self, now: Time) -> Option<Transmission> {
        if self.duplex == Duplex::Half {
            return None;
        }
        let dir = (0..2).find(|&d| !self.dirs[d].busy && self.has_frame(d))?;
        self.dirs[dir].busy = true;
        Some(self.start(now, dir))
    }

    /// Half duplex: the direction whose frame goes next when the medium is given to this link, and whether
    /// that frame is a local retransmission (see [`Stations::next`]).
    pub fn next_on_medium(&self) -> Option<(usize, bool)> {
        self.queues.next(self.access)
    }

    /// Puts the head frame of `dir` on the air (the caller checked that the transmitter or medium is free).
    pub fn start(&mut self, now: Time, dir: usize) -> Transmission {
        let packet = self.queues.take(dir).expect("a frame waits");
        let bytes = packet.len();
        let air = self.airtime_memo_ns(bytes);
        let d = &mut self.dirs[dir];
        let done_at = Time(now.0 + air);
        let corrupted = d.error.corrupts(now, done_at, bytes as u64 * 8);
        d.frames_sent += 1;
        d.bytes_sent += bytes as u64;
        d.busy_ns += air;
        if corrupted {
            d.frames_lost += 1;
        }
        Transmission { dir, packet, done_at, arrives_at: Time(done_at.0 + self.delay_ns), corrupted }
    }

    /// Full duplex: the transmitter of `dir` finished its frame. (A medium is freed by [`Medium::finish`].)
    pub fn finish(&mut self, dir: usize) {
        self.dirs[dir].busy = false;
    }

    pub(crate) fn has_frame(&self, dir: usize) -> bool {
        self.queues.has_frame(dir)
    }

    pub fn is_half_duplex(&self) -> bool {
        self.duplex == Duplex::Half
    }

    /// How full the normal transmit queue of `dir` is, 0.0–1.0 (what a host reports as its queue length).
    pub fn occupancy(&self, dir: usize) -> f64 {
        self.queues.occupancy(dir)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error_model::ErrorModelConfig;

    fn link(duplex: &str) -> Link {
        let cfg: LinkConfig = toml::from_str(&format!(
            "ends = ['a', 'b']\nkind = 'wireless'\nrate_mbps = 2.0\ndelay_ms = 0.5\nmac_overhead_us = 100.0\nqueue_packets = 2\nduplex = '{duplex}'"
        ))
        .unwrap();
        let rng = || crate::rng::stream(1, "test", "err");
        Link::new("w".into(), &cfg, [0, 1], [ErrorModelConfig::None.build(rng()), ErrorModelConfig::None.build(rng())])
    }

    /// A half-duplex link at 1 Mb/s with no overhead nor delay (125 bytes = 1 ms), queues of 10, `access`.
    fn link_access(access: &str) -> Link {
        let cfg: LinkConfig = toml::from_str(&format!(
            "ends = ['bs', 'mh']\nkind = 'wireless'\nrate_mbps = 1.0\nqueue_packets = 10\naccess = '{access}'"
        ))
        .unwrap();
        let rng = || crate::rng::stream(1, "test", "err");
        Link::new("w".into(), &cfg, [0, 1], [ErrorModelConfig::None.build(rng()), ErrorModelConfig::None.build(rng())])
    }

    /// Direction 0 is the base station's (down), 1 the mobile's (up).
    const DOWN: usize = 0;
    const UP: usize = 1;

    /// (µs delivered, direction, frame id) and (µs started, frame id) of every frame.
    type Delivered = Vec<(u64, usize, u8)>;
    type Started = Vec<(u64, u8)>;

    /// Runs a link that is its own medium over `arrivals` (µs, direction, frame id, local retransmission) of
    /// 125-byte frames; returns (µs delivered, direction, id) and (µs started, id) of every frame. At one
    /// instant: the frame on the air finishes, then frames arrive, then the medium is given out.
    fn timeline(l: &mut Link, arrivals: &[(u64, usize, u8, bool)]) -> (Delivered, Started) {
        let mut m = Medium::new(vec![0]);
        let (mut got, mut starts) = (Vec::new(), Vec::new());
        let (mut now, mut next, mut on_air) = (0u64, 0usize, None::<Transmission>);
        loop {
            if let Some(t) = on_air.take_if(|t| t.done_at.0 <= now * 1_000) {
                m.finish();
                got.push((t.arrives_at.0 / 1_000, t.dir, t.packet[0]));
            }
            while next < arrivals.len() && arrivals[next].0 <= now {
                let (_, dir, id, high) = arrivals[next];
                assert!(l.enqueue(dir, Bytes::from(vec![id; 125]), high));
                next += 1;
            }
            if let Some((_, dir)) = m.acquire(|_| l.next_on_medium()) {
                let t = l.start(Time(now * 1_000), dir);
                starts.push((now, t.packet[0]));
                on_air = Some(t);
            }
            let done = on_air.as_ref().map(|t| t.done_at.0 / 1_000);
            match (done, arrivals.get(next).map(|a| a.0)) {
                (None, None) => return (got, starts),
                (d, a) => now = d.unwrap_or(u64::MAX).min(a.unwrap_or(u64::MAX)),
            }
        }
    }

    #[test]
    fn half_duplex_turns_lets_the_mobile_in_after_one_data_frame() {
        // Five data frames queued at the base station at 0; the mobile's ACK at 0.1 ms goes right after the
        // frame on the air, not after the whole queue.
        let mut load: Vec<_> = (0..5).map(|i| (0, DOWN, i, false)).collect();
        load.push((100, UP, 100, false));
        let (got, _) = timeline(&mut link_access("turns"), &load);
        assert_eq!(
            got,
            [
                (1_000, DOWN, 0),
                (2_000, UP, 100),
                (3_000, DOWN, 1),
                (4_000, DOWN, 2),
                (5_000, DOWN, 3),
                (6_000, DOWN, 4)
            ]
        );
        // The same load under fifo: the ACK last, at 6 ms.
        let (got, _) = timeline(&mut link_access("fifo"), &load);
        assert_eq!(got.last(), Some(&(6_000, UP, 100)));
    }

    #[test]
    fn half_duplex_turns_alternates_while_both_stations_wait() {
        // Both stations saturated: strictly one frame each; the first frame ever goes first come first served
        // (here the mobile's, queued first).
        let mut load: Vec<_> = (0..3).map(|i| (0, UP, 100 + i, false)).collect();
        load.extend((0..4).map(|i| (0, DOWN, i, false)));
        let (got, _) = timeline(&mut link_access("turns"), &load);
        let order: Vec<(usize, u8)> = got.into_iter().map(|(_, d, x)| (d, x)).collect();
        assert_eq!(order, [(UP, 100), (DOWN, 0), (UP, 101), (DOWN, 1), (UP, 102), (DOWN, 2), (DOWN, 3)]);
    }

    #[test]
    fn half_duplex_turns_keeps_priority_within_the_base_station() {
        // Down: 0 on the air at 0, 1 and 2 queued, then a local retransmission 9 at 0.5 ms; the mobile's ACK
        // 100 at 0.6 ms. At 1 ms it is the mobile's turn (the base station just sent); then the base station
        // sends its priority frame before its normal ones.
        let mut load: Vec<_> = (0..3).map(|i| (0, DOWN, i, false)).collect();
        load.extend([(500, DOWN, 9, true), (600, UP, 100, false)]);
        let (got, starts) = timeline(&mut link_access("turns"), &load);
        assert_eq!(got, [(1_000, DOWN, 0), (2_000, UP, 100), (3_000, DOWN, 9), (4_000, DOWN, 1), (5_000, DOWN, 2)]);
        assert_eq!(starts, [(0, 0), (1_000, 100), (2_000, 9), (3_000, 1), (4_000, 2)]);
        // Under fifo the local retransmission goes first, then the frames in arrival order: the ACK last.
        let (got, _) = timeline(&mut link_access("fifo"), &load);
        let order: Vec<u8> = got.into_iter().map(|(_, _, x)| x).collect();
        assert_eq!(order, [0, 9, 1, 2, 100]);
    }

    #[test]
    fn half_duplex_turns_station_alone_sends_back_to_back() {
        // No waiting for a turn nobody takes; an ACK arriving while the medium is idle goes at once.
        let load = [(0, DOWN, 0, false), (0, DOWN, 1, false), (0, DOWN, 2, false), (6_000, UP, 100, false)];
        let (got, _) = timeline(&mut link_access("turns"), &load);
        assert_eq!(got, [(1_000, DOWN, 0), (2_000, DOWN, 1), (3_000, DOWN, 2), (7_000, UP, 100)]);
    }

    #[test]
    fn turns_links_sharing_a_medium_still_take_turns_between_links() {
        // Two `turns` links on one medium: between links the medium still goes round frame by frame.
        let mut links = [link_access("turns"), link_access("turns")];
        let mut m = Medium::new(vec![0, 1]);
        for i in 0..2 {
            assert!(links[0].enqueue(DOWN, Bytes::from(vec![i; 125]), false));
            assert!(links[1].enqueue(DOWN, Bytes::from(vec![10 + i; 125]), false));
        }
        assert!(links[0].enqueue(UP, Bytes::from(vec![100; 125]), false));
        let mut order = Vec::new();
        while let Some((l, dir)) = m.acquire(|i| links[i].next_on_medium()) {
            order.push(links[l].start(Time(0), dir).packet[0]);
            m.finish();
        }
        assert_eq!(order, [10, 0, 11, 100, 1]);
    }

    /// Starts the next frame of a half-duplex link that is its own medium.
    fn start_half(l: &mut Link, m: &mut Medium, now: Time) -> Option<Transmission> {
        let (_, dir) = m.acquire(|_| l.next_on_medium())?;
        Some(l.start(now, dir))
    }

    fn pkt(n: usize) -> Bytes {
        Bytes::from(vec![0u8; n])
    }

    #[test]
    fn airtime_includes_overhead_and_delay() {
        let (mut l, mut m) = (link("half"), Medium::new(vec![0]));
        assert!(l.enqueue(0, pkt(1000), false));
        let t = start_half(&mut l, &mut m, Time(0)).unwrap();
        // 8000 bits at 2 Mb/s = 4 ms, plus 100 µs overhead; arrival 0.5 ms later.
        assert_eq!(t.done_at, Time(4_100_000));
        assert_eq!(t.arrives_at, Time(4_600_000));
        assert!(!t.corrupted);
    }

    #[test]
    fn airtime_memo_gives_the_computed_airtime_for_every_size() {
        let mut l = link("half");
        for bytes in [1500, 40, 1500, 52, 40, 1500, 1500, 0, 65535, 52] {
            assert_eq!(l.airtime_memo_ns(bytes), l.airtime_ns(bytes), "{bytes} bytes");
        }
    }

    #[test]
    fn half_duplex_serves_one_frame_at_a_time_in_arrival_order() {
        let (mut l, mut m) = (link("half"), Medium::new(vec![0]));
        l.enqueue(1, pkt(40), false);
        l.enqueue(0, pkt(1000), false);
        let t = start_half(&mut l, &mut m, Time(0)).unwrap();
        assert_eq!(t.dir, 1, "the ACK queued first goes first");
        assert!(start_half(&mut l, &mut m, Time(0)).is_none(), "medium busy");
        assert!(l.start_next(Time(0)).is_none(), "a half-duplex link starts frames only through its medium");
        m.finish();
        assert_eq!(start_half(&mut l, &mut m, t.done_at).unwrap().dir, 0);
    }

    #[test]
    fn full_duplex_sends_both_ways_at_once() {
        let mut l = link("full");
        l.enqueue(1, pkt(40), false);
        l.enqueue(0, pkt(1000), false);
        assert!(l.start_next(Time(0)).is_some());
        assert!(l.start_next(Time(0)).is_some());
    }

    /// `duplex = "full"` on the wireless hop (ns's `duplex-link` with an error model): each direction has its
    /// own transmitter and queues, frames of one direction follow each other back to back, the other direction
    /// never waits for them, and local retransmissions still go first within a direction.
    #[test]
    fn full_duplex_wireless_directions_never_wait_for_each_other() {
        let mut l = link("full");
        assert!(!l.is_half_duplex());
        assert!(l.enqueue(0, pkt(1000), false));
        assert!(l.enqueue(0, pkt(1000), false));
        assert!(l.enqueue(0, pkt(500), true));
        assert!(l.enqueue(1, pkt(40), false));
        let a = l.start_next(Time(0)).unwrap();
        let b = l.start_next(Time(0)).unwrap();
        assert!(l.start_next(Time(0)).is_none(), "both transmitters busy");
        assert_eq!((a.dir, a.packet.len()), (0, 500), "the local retransmission goes first");
        assert_eq!((b.dir, b.packet.len()), (1, 40), "the ACK goes at once, behind no data frame");
        // 40 B at 2 Mb/s = 160 µs plus 100 µs overhead, then 0.5 ms propagation.
        assert_eq!(b.arrives_at, Time(160_000 + 100_000 + 500_000));
        l.finish(1);
        assert!(l.start_next(b.done_at).is_none(), "direction 0 still busy, direction 1 empty");
        l.finish(0);
        let c = l.start_next(a.done_at).unwrap();
        assert_eq!((c.dir, c.done_at), (0, Time(a.done_at.0 + 4_100_000)));
    }

    #[test]
    fn priority_queue_goes_first_and_queues_are_drop_tail() {
        let (mut l, mut m) = (link("half"), Medium::new(vec![0]));
        assert!(l.enqueue(0, pkt(100), false));
        assert!(l.enqueue(0, pkt(101), false));
        assert!(!l.enqueue(0, pkt(102), false), "capacity 2");
        assert_eq!(l.dirs[0].frames_dropped_queue, 1);
        assert!(l.enqueue(1, pkt(40), false));
        assert!(l.enqueue(0, pkt(103), true));
        assert_eq!(start_half(&mut l, &mut m, Time(0)).unwrap().packet.len(), 103);
    }

    #[test]
    fn links_sharing_a_medium_take_turns_and_never_overlap() {
        let mut links = [link("half"), link("half")];
        let mut m = Medium::new(vec![0, 1]);
        // The first link has a long backlog queued before the second link's one frame.
        for _ in 0..2 {
            assert!(links[0].enqueue(0, pkt(1000), false));
        }
        assert!(links[1].enqueue(0, pkt(40), false));
        let mut order = Vec::new();
        let mut now = Time(0);
        while let Some((l, dir)) = m.acquire(|i| links[i].next_on_medium()) {
            assert!(m.acquire(|i| links[i].next_on_medium()).is_none(), "one frame on the medium at a time");
            let t = links[l].start(now, dir);
            now = t.done_at;
            order.push(l);
            m.finish();
        }
        assert_eq!(order, [1, 0, 0], "the second link gets the medium after at most one frame of the first");
        // The medium time of every frame is spent one after another: 40 B + 2 × 1000 B at 2 Mb/s + 3 × 100 µs.
        assert_eq!(now, Time(160_000 + 2 * 4_000_000 + 300_000));
    }

    #[test]
    fn purge_takes_matching_frames_from_both_queues_only() {
        let mut l = link("half");
        assert!(l.enqueue(0, pkt(100), false));
        assert!(l.enqueue(0, pkt(200), false));
        assert!(l.enqueue(0, pkt(100), true));
        assert!(l.enqueue(1, pkt(100), false));
        assert_eq!(l.purge(0, |p| p.len() == 100), 2);
        let t = l.start(Time::ZERO, 0);
        assert_eq!(t.packet.len(), 200, "the other frame stays queued");
        l.finish(0);
        assert!(l.next_on_medium().is_some_and(|(dir, _)| dir == 1), "the other direction is untouched");
        assert_eq!(l.purge(0, |_| true), 0);
    }

    #[test]
    fn local_retransmissions_go_first_across_a_shared_medium() {
        let mut links = [link("half"), link("half")];
        let mut m = Medium::new(vec![0, 1]);
        assert!(links[0].enqueue(0, pkt(1000), false));
        assert!(links[0].enqueue(1, pkt(40), false));
        assert!(links[1].enqueue(0, pkt(500), true));
        let (l, dir) = m.acquire(|i| links[i].next_on_medium()).unwrap();
        assert_eq!((l, links[l].start(Time(0), dir).packet.len()), (1, 500));
    }
}

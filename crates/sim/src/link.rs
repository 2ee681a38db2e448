//! Links: a wired point-to-point link (full duplex, one drop-tail queue each way) and the wireless hop
//! (rate, propagation delay, per-frame MAC overhead, a shared half-duplex medium by default, and two transmit
//! queues per station so that local retransmissions go first: seed 000 §3.1.2, "two queues at the link layer").

use crate::error_model::ErrorModel;
use crate::scenario::{Duplex, LinkConfig, LinkKind};
use bytes::Bytes;
use lasthop_wire::pcap::PcapWriter;
use lasthop_wire::Time;
use std::collections::VecDeque;
use std::fs::File;
use std::io::BufWriter;

pub type Pcap = PcapWriter<BufWriter<File>>;

/// A frame waiting to be sent; `order` is a link-wide arrival counter, used to serve a shared medium in
/// first-come first-served order across its stations.
struct Queued {
    packet: Bytes,
    order: u64,
}

/// One direction of a link: its queues, its error model and its counters.
pub struct Direction {
    high: VecDeque<Queued>,
    normal: VecDeque<Queued>,
    /// Only for full duplex: this direction's transmitter is sending.
    busy: bool,
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
    /// Node index at each end: direction 0 sends ends[0] → ends[1].
    pub ends: [usize; 2],
    rate_mbps: f64,
    delay_ns: u64,
    overhead_ns: u64,
    capacity: usize,
    pub dirs: [Direction; 2],
    /// Only for half duplex: the shared medium is in use.
    medium_busy: bool,
    next_order: u64,
    /// Per end (same index as `ends`): pcap of what that end's interface sent and received.
    pub pcap: [Option<Pcap>; 2],
}

impl Link {
    pub fn new(name: String, cfg: &LinkConfig, ends: [usize; 2], errors: [Box<dyn ErrorModel>; 2]) -> Link {
        let [e0, e1] = errors;
        let dir = |error| Direction {
            high: VecDeque::new(),
            normal: VecDeque::new(),
            busy: false,
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
            ends,
            rate_mbps: cfg.rate_mbps,
            delay_ns: (cfg.delay_ms * 1e6).round() as u64,
            overhead_ns: (cfg.mac_overhead_us * 1e3).round() as u64,
            capacity: cfg.queue_packets,
            dirs: [dir(e0), dir(e1)],
            medium_busy: false,
            next_order: 0,
            pcap: [None, None],
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

    pub fn airtime_ns(&self, bytes: usize) -> u64 {
        // bits / (Mb/s) = µs; keep it in integer ns with one rounding.
        (bytes as f64 * 8.0 * 1e3 / self.rate_mbps).round() as u64 + self.overhead_ns
    }

    /// Queues a packet; false when the queue is full and it was dropped (drop-tail).
    pub fn enqueue(&mut self, dir: usize, packet: Bytes, priority: bool) -> bool {
        let order = self.next_order;
        self.next_order += 1;
        let d = &mut self.dirs[dir];
        let q = if priority { &mut d.high } else { &mut d.normal };
        if q.len() >= self.capacity {
            d.frames_dropped_queue += 1;
            return false;
        }
        q.push_back(Queued { packet, order });
        true
    }

    /// Starts the next transmission if a transmitter is free and a frame waits. Call until None.
    pub fn start_next(&mut self, now: Time) -> Option<Transmission> {
        let dir = match self.duplex {
            Duplex::Full => (0..2).find(|&d| !self.dirs[d].busy && self.has_frame(d))?,
            Duplex::Half => {
                if self.medium_busy {
                    return None;
                }
                self.pick_shared()?
            }
        };
        let q = {
            let d = &mut self.dirs[dir];
            d.high.pop_front().or_else(|| d.normal.pop_front()).expect("has_frame checked")
        };
        let bytes = q.packet.len();
        let air = self.airtime_ns(bytes);
        let d = &mut self.dirs[dir];
        let done_at = Time(now.0 + air);
        let corrupted = d.error.corrupts(now, done_at, bytes as u64 * 8);
        d.frames_sent += 1;
        d.bytes_sent += bytes as u64;
        d.busy_ns += air;
        if corrupted {
            d.frames_lost += 1;
        }
        match self.duplex {
            Duplex::Full => d.busy = true,
            Duplex::Half => self.medium_busy = true,
        }
        Some(Transmission { dir, packet: q.packet, done_at, arrives_at: Time(done_at.0 + self.delay_ns), corrupted })
    }

    /// The transmitter of `dir` (or the shared medium) finished its frame.
    pub fn finish(&mut self, dir: usize) {
        match self.duplex {
            Duplex::Full => self.dirs[dir].busy = false,
            Duplex::Half => self.medium_busy = false,
        }
    }

    fn has_frame(&self, dir: usize) -> bool {
        !self.dirs[dir].high.is_empty() || !self.dirs[dir].normal.is_empty()
    }

    /// On a shared medium: local retransmissions first, then first come first served across stations.
    fn pick_shared(&self) -> Option<usize> {
        let head = |q: &VecDeque<Queued>| q.front().map(|f| f.order);
        let earliest = |sel: &dyn Fn(&Direction) -> Option<u64>| {
            (0..2).filter_map(|d| sel(&self.dirs[d]).map(|o| (o, d))).min().map(|(_, d)| d)
        };
        earliest(&|d| head(&d.high)).or_else(|| earliest(&|d| head(&d.normal)))
    }

    pub fn is_half_duplex(&self) -> bool {
        self.duplex == Duplex::Half
    }

    /// How full the normal transmit queue of `dir` is, 0.0–1.0 (what a host reports as its queue length).
    pub fn occupancy(&self, dir: usize) -> f64 {
        self.dirs[dir].normal.len() as f64 / self.capacity as f64
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

    fn pkt(n: usize) -> Bytes {
        Bytes::from(vec![0u8; n])
    }

    #[test]
    fn airtime_includes_overhead_and_delay() {
        let mut l = link("half");
        assert!(l.enqueue(0, pkt(1000), false));
        let t = l.start_next(Time(0)).unwrap();
        // 8000 bits at 2 Mb/s = 4 ms, plus 100 µs overhead; arrival 0.5 ms later.
        assert_eq!(t.done_at, Time(4_100_000));
        assert_eq!(t.arrives_at, Time(4_600_000));
        assert!(!t.corrupted);
    }

    #[test]
    fn half_duplex_serves_one_frame_at_a_time_in_arrival_order() {
        let mut l = link("half");
        l.enqueue(1, pkt(40), false);
        l.enqueue(0, pkt(1000), false);
        let t = l.start_next(Time(0)).unwrap();
        assert_eq!(t.dir, 1, "the ACK queued first goes first");
        assert!(l.start_next(Time(0)).is_none(), "medium busy");
        l.finish(1);
        assert_eq!(l.start_next(t.done_at).unwrap().dir, 0);
    }

    #[test]
    fn full_duplex_sends_both_ways_at_once() {
        let mut l = link("full");
        l.enqueue(1, pkt(40), false);
        l.enqueue(0, pkt(1000), false);
        assert!(l.start_next(Time(0)).is_some());
        assert!(l.start_next(Time(0)).is_some());
    }

    #[test]
    fn priority_queue_goes_first_and_queues_are_drop_tail() {
        let mut l = link("half");
        assert!(l.enqueue(0, pkt(100), false));
        assert!(l.enqueue(0, pkt(101), false));
        assert!(!l.enqueue(0, pkt(102), false), "capacity 2");
        assert_eq!(l.dirs[0].frames_dropped_queue, 1);
        assert!(l.enqueue(1, pkt(40), false));
        assert!(l.enqueue(0, pkt(103), true));
        assert_eq!(l.start_next(Time(0)).unwrap().packet.len(), 103);
    }
}

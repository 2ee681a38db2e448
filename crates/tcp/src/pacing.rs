//! What the sender does for a rate-based controller (BBR): it paces its transmissions at the
//! controller's rate, and keeps the delivery-rate samples the controller reads on every ACK
//! ([`crate::cc::rate`]). A window-clocked controller has neither, and the sender's paths for it only test
//! that they are absent.
//!
//! Pacing is Linux's fq discipline as BBR runs over it: the sender hands over a TSO burst of up to the
//! controller's [`pacing_burst`](crate::cc::Controller::pacing_burst) segments at once (`tcp_write_xmit`
//! in `net/ipv4/tcp_output.c` sends one skb of at most `tcp_tso_segs` segments per pacing release), and
//! after a burst of `len` bytes the next may leave `len / rate` later (`sch_fq.c`'s `time_next_packet`). A
//! transmission held back is reported through the sender's timer ([`Sender::poll_timeout`]), so a driver
//! that honours the timer needs nothing else.

use crate::cc::rate::{CaState, RateSample};
use crate::cc::{mul_div, Controller};
use crate::sender::Sender;
use bytes::Bytes;
use lasthop_wire::Time;

/// When the next paced burst may leave, whether a transmission is waiting for it, and the burst going out.
#[derive(Debug, Clone, Default)]
pub(crate) struct Pacer {
    release: Time,
    held: bool,
    /// The current burst: when it left, its bytes, and how many more segments may join it at that instant.
    burst_start: Time,
    burst_bytes: u64,
    burst_room: u32,
}

impl Pacer {
    /// Whether a segment ready at `now` must wait; remembers that one does. A segment that can join the
    /// burst leaving at `now` does not wait.
    #[inline]
    pub(crate) fn hold(&mut self, now: Time) -> bool {
        self.held = now < self.release && !(self.burst_room > 0 && now == self.burst_start);
        self.held
    }

    /// A packet of `len` bytes left at `now` at `rate` bytes per second, in bursts of up to `burst`
    /// segments: the next burst leaves when this one's bytes have had their time at the rate.
    pub(crate) fn sent(&mut self, now: Time, len: usize, rate: u64, burst: u32) {
        if self.burst_room > 0 && now == self.burst_start {
            self.burst_room -= 1;
            self.burst_bytes += len as u64;
        } else {
            self.burst_start = now;
            self.burst_bytes = len as u64;
            self.burst_room = burst.saturating_sub(1);
        }
        let gap = mul_div(self.burst_bytes, 1_000_000_000, rate, true);
        self.release = Time::from_nanos(now.as_nanos().saturating_add(gap));
    }

    /// The release time, while a transmission waits for it.
    pub(crate) fn deadline(&self) -> Option<Time> {
        self.held.then_some(self.release)
    }

    /// The timer fired: a held transmission may go.
    pub(crate) fn on_timer(&mut self, now: Time) {
        if self.held && self.release <= now {
            self.held = false;
        }
    }
}

impl Sender {
    /// Whether the data segment the sender has ready must wait for its pacing release; a held segment is
    /// reported through the timer.
    #[inline]
    pub(crate) fn pacing_holds(&mut self, now: Time) -> bool {
        self.pacer.as_mut().is_some_and(|p| p.hold(now))
    }

    /// A data packet just built at `now`: it joins the burst leaving now, or starts one; the next burst
    /// waits the burst's transmission time at the pacing rate.
    #[inline]
    pub(crate) fn paced(&mut self, now: Time, pkt: Bytes) -> Bytes {
        if let Some(p) = &mut self.pacer {
            p.sent(now, pkt.len(), self.cc.pacing_rate().unwrap_or(u64::MAX), self.cc.pacing_burst());
        }
        pkt
    }

    /// An ACK for a controller that reads delivery-rate samples: what it SACKed and whether it is a
    /// duplicate are noted around the ordinary processing (`process_ack`, which notes the cumulative
    /// advance), then the controller reads the sample with the recovery state the ACK left.
    pub(crate) fn sampled_ack(&mut self, now: Time, process: impl FnOnce(&mut Sender)) {
        let prior_in_flight = self.recovery.in_flight(self);
        let dupacks_before = self.stats.dupacks_received;
        let una_before = self.una;
        process(self);
        let mss = u64::from(self.mss);
        let outstanding = self.max.saturating_sub(self.una);
        let duplicate = self.stats.dupacks_received > dupacks_before;
        let in_flight = self.recovery.in_flight(self);
        let partial_ack = self.recovery.in_recovery() && self.una > una_before;
        let ca_state = if self.recovery.in_recovery() {
            CaState::Recovery
        } else if self.una < self.go_back_max {
            CaState::Loss
        } else {
            CaState::Open
        };
        let Some(rate) = &mut self.rate else { return };
        if !self.sack_ok {
            // `tcp_process_loss`: in loss recovery a duplicate ACK counts a delivery only once new data has
            // gone beyond what was outstanding at the timeout (`high_seq`); an advance forgets the count.
            let new_data_sent = self.max > self.go_back_max;
            if duplicate && (ca_state != CaState::Loss || new_data_sent) {
                rate.on_dupack(mss, outstanding);
            } else if ca_state == CaState::Loss && self.una > una_before {
                rate.forget_dupacks();
            }
        }
        let rs = rate.sample(now);
        // `tcp_newreno_mark_lost`: without SACK a partial ACK in recovery marks the new head lost.
        let losses = u32::from(partial_ack && !self.sack_ok);
        let rs = RateSample { prior_in_flight, in_flight, ca_state, losses, ..rs };
        let srtt = self.rto.srtt();
        self.cc.on_rate_sample(now, &rs, srtt);
    }

    /// The application is about to hand over more bytes (Linux's `tcp_sendmsg`): if the sender had less
    /// than a segment left to send and room in its window, what it sent meanwhile was app-limited.
    pub(crate) fn check_app_limited(&mut self) {
        let in_flight = self.recovery.in_flight(self);
        let unsent = self.fin_offset().saturating_sub(self.nxt);
        let window = u64::from(self.cc.window());
        let idle = unsent < u64::from(self.mss) && in_flight < window && self.rexmit_pending.is_none();
        if let (true, Some(rate)) = (idle, &mut self.rate) {
            rate.mark_app_limited(in_flight);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Pacer;
    use crate::cc::bbr::Mode;
    use crate::cc::{AnyController, Controller};
    use crate::harness::Pair;
    use crate::tests::{ack, cfg, drain_sender, established};
    use crate::{TcpConfig, Variant};
    use lasthop_wire::Time;
    use std::time::Duration;

    /// Before any RTT sample BBR paces at 2.885 × its initial window per nominal 1 ms: 4 segments of 1000
    /// bytes, 4 MB/s × 739/256 = 11 546 875 B/s, where a TSO burst is 11 segments (1 ms of data). The whole
    /// initial window leaves as one burst; four 1040-byte packets (1000 bytes, 40 of headers) then hold the
    /// next for ⌈4160 s / 11 546 875⌉ = 360 271 ns. An ACK 100 µs later opens the window: what it allows
    /// waits for that release, reported as the sender's timeout, and then leaves as the next burst.
    #[test]
    fn the_initial_window_leaves_as_one_burst_and_holds_the_next_for_its_transmission_time() {
        let (mut s, first) = established(TcpConfig { initial_cwnd: 4, ..cfg(Variant::Bbr) }, 100_000);
        let t0 = Time::from_millis(100);
        assert_eq!((first.len(), s.pacing_rate(), s.cc.pacing_burst()), (4, Some(11_546_875), 11));
        assert!(s.poll_timeout().unwrap() >= Time::from_millis(1_000), "nothing held: the retransmit timer");
        let t1 = Time::from_nanos(t0.as_nanos() + 100_000);
        s.handle_packet(t1, &ack(1001, &[]));
        assert!(drain_sender(&mut s, t1).is_empty(), "held until the burst's time is up");
        let release = Time::from_nanos(t0.as_nanos() + 360_271);
        assert_eq!(s.poll_timeout(), Some(release));
        s.handle_timeout(release);
        let next = drain_sender(&mut s, release);
        // STARTUP grows cwnd by the segment delivered, to 5, with 3 in flight: both segments go at once.
        assert_eq!(next.len(), 2, "the window the ACK opened goes as one burst");
        assert!(next.iter().all(|seg| seg.rexmit == Some(false)));
        assert_eq!(next[0].off, first[3].off + 1000);
    }

    const RATE: u64 = 1_000_000;

    /// At 1 MB/s in bursts of two, two 1040-byte packets leave together and the third waits their 2080 µs;
    /// it starts the next burst, which its companion joins at the same instant.
    #[test]
    fn a_burst_leaves_at_once_and_the_next_waits_for_all_its_bytes() {
        let mut p = Pacer::default();
        let t = Time::from_millis(10);
        assert!(!p.hold(t));
        p.sent(t, 1040, RATE, 2);
        assert!(!p.hold(t), "the second segment joins the burst");
        p.sent(t, 1040, RATE, 2);
        assert!(p.hold(t), "the burst is full");
        let release = Time::from_micros(10_000 + 2_080);
        assert_eq!(p.deadline(), Some(release));
        assert!(p.hold(Time::from_nanos(release.as_nanos() - 1)));
        p.on_timer(release);
        assert_eq!(p.deadline(), None);
        assert!(!p.hold(release));
        p.sent(release, 1040, RATE, 2);
        assert!(!p.hold(release));
        p.sent(release, 1040, RATE, 2);
        assert!(p.hold(release));
        assert_eq!(p.deadline(), Some(Time::from_micros(10_000 + 2 * 2_080)));
    }

    /// Room left in a burst is not kept for later: a segment ready 1 µs after a lone one waits for the lone
    /// one's 1040 µs; with bursts of one every packet holds the next for its own time.
    #[test]
    fn room_in_a_burst_lasts_only_its_instant() {
        let mut p = Pacer::default();
        let t = Time::from_millis(10);
        p.sent(t, 1040, RATE, 2);
        let later = Time::from_micros(10_001);
        assert!(p.hold(later));
        assert_eq!(p.deadline(), Some(Time::from_micros(11_040)));

        let mut p = Pacer::default();
        p.sent(t, 1040, RATE, 1);
        assert!(p.hold(t), "a burst of one");
        assert_eq!(p.deadline(), Some(Time::from_micros(11_040)));
    }

    /// A window-clocked sender sends its whole window at once and reports only its retransmit timer.
    #[test]
    fn a_window_clocked_sender_does_not_pace() {
        let (s, first) = established(TcpConfig { initial_cwnd: 4, ..cfg(Variant::Cubic) }, 100_000);
        assert_eq!((first.len(), s.pacing_rate()), (4, None));
        assert!(s.poll_timeout().unwrap() >= Time::from_millis(600), "{:?}", s.poll_timeout());
    }

    /// `n` duplicate ACKs of SND.UNA, 1 ms apart from 201 ms, each answered; the time of the last.
    fn duplicate_acks(s: &mut crate::Sender, n: usize) -> Time {
        let mut now = Time::from_millis(200);
        for _ in 0..n {
            now = Time::from_nanos(now.as_nanos() + 1_000_000);
            s.handle_packet(now, &ack(1, &[]));
            drain_sender(s, now);
        }
        now
    }

    /// Without SACK Linux counts each duplicate ACK as a segment delivered (`tcp_add_reno_sack`) and forgets
    /// that count at a retransmit timeout (`tcp_timeout_mark_lost` calls `tcp_reset_reno_sack`,
    /// net/ipv4/tcp_input.c) without taking the deliveries back, so the cumulative ACK that a retransmission
    /// draws after the timeout counts every segment it covers again; in CA_Loss a duplicate ACK counts nothing
    /// until new data has gone beyond `high_seq` (`tcp_process_loss`). Ten segments, the first lost: six
    /// duplicate ACKs (a fast retransmit at the third), then the timeout (cwnd 1). A duplicate ACK in loss
    /// recovery leaves cwnd at 1 (`bbr_set_cwnd` changes nothing for an ACK that delivers nothing); the ACK
    /// of segments 1 to 7 delivers 7, and BBR, in STARTUP below its initial target of 10, adds them: 8.
    #[test]
    fn a_timeout_forgets_the_deliveries_duplicate_acks_counted() {
        let (mut s, first) = established(TcpConfig { initial_cwnd: 10, ..cfg(Variant::Bbr) }, 100_000);
        assert_eq!(first.len(), 10);
        duplicate_acks(&mut s, 6);
        assert_eq!(s.stats().fast_retransmits, 1);
        let rto = s.rtx_deadline.unwrap();
        s.handle_timeout(rto);
        assert_eq!(s.cc.window(), 1000);
        let resent = drain_sender(&mut s, rto);
        assert_eq!((resent.len(), resent[0].off), (1, 1));
        let now = Time::from_nanos(rto.as_nanos() + 1_000_000);
        s.handle_packet(now, &ack(1, &[]));
        assert_eq!(s.cc.window(), 1000, "a duplicate ACK in loss recovery delivers nothing");
        s.handle_packet(Time::from_nanos(now.as_nanos() + 1_000_000), &ack(7001, &[]));
        assert_eq!(s.cc.window(), 8000, "the ACK after the timeout counts all seven segments");
    }

    /// Without SACK, a partial ACK in fast recovery makes Linux mark the new head of the retransmission
    /// queue lost (`tcp_newreno_mark_lost`, net/ipv4/tcp_recovery.c), and BBR takes the segments an ACK
    /// marked lost off cwnd before it grows it (`bbr_set_cwnd_to_recover_or_restore`). Ten segments, the
    /// first and the fifth lost: eight duplicate ACKs (fast retransmit; cwnd 13), then the ACK of 1 to 4,
    /// which starts a new round (packet conservation over): 13 − 1 lost + 1 delivered (the duplicate ACKs
    /// counted eight already; the ACK that fills a hole counts one, `tcp_remove_reno_sacks`) = 13.
    #[test]
    fn a_partial_ack_in_recovery_takes_the_new_lost_segment_off_cwnd() {
        let (mut s, first) = established(TcpConfig { initial_cwnd: 10, ..cfg(Variant::Bbr) }, 100_000);
        assert_eq!(first.len(), 10);
        let now = duplicate_acks(&mut s, 8);
        assert_eq!((s.stats().fast_retransmits, s.cc.window()), (1, 13_000));
        s.handle_packet(Time::from_nanos(now.as_nanos() + 1_000_000), &ack(4001, &[]));
        assert_eq!(s.cc.window(), 13_000);
    }

    /// Over a 250 kB/s bottleneck with 50 ms each way, BBR measures the bottleneck's payload rate (1460 of
    /// every 1500 bytes: 243 333 B/s) within 5 %, leaves STARTUP and DRAIN, and delivers every byte.
    #[test]
    fn bbr_measures_the_bottleneck_through_a_whole_transfer() {
        let c = TcpConfig { initial_cwnd: 10, ..cfg(Variant::Bbr) };
        let mut p = Pair::new(c.clone(), c, 2_000_000);
        p.rate = Some(250_000);
        p.delay = Duration::from_millis(50);
        assert!(p.run(1_000_000));
        assert_eq!(p.read, 2_000_000);
        let AnyController::Bbr(b) = &p.sender.cc else { panic!("not BBR") };
        let payload_rate = 250_000.0 * 1460.0 / 1500.0;
        let ratio = b.max_bw() as f64 / payload_rate;
        assert!((0.95..=1.05).contains(&ratio), "bandwidth estimate {} against {payload_rate}", b.max_bw());
        assert_eq!(b.mode(), Mode::ProbeBw);
        assert_eq!(p.sender.stats().segments_retransmitted, 0);
    }
}

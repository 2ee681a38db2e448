//! What the sender does for a rate-based controller (BBR): it paces its transmissions at the
//! controller's rate, and keeps the delivery-rate samples the controller reads on every ACK
//! ([`crate::cc::rate`]). A window-clocked controller has neither, and the sender's paths for it only test
//! that they are absent.
//!
//! Pacing is Linux's fq discipline as BBR runs over it: after a packet of `len` bytes the next may leave
//! `len / rate` later. A transmission held back is reported through the sender's timer
//! ([`Sender::poll_timeout`]), so a driver that honours the timer needs nothing else.

use crate::cc::rate::{CaState, RateSample};
use crate::cc::Controller;
use crate::sender::Sender;
use bytes::Bytes;
use lasthop_wire::Time;

/// When the next paced transmission may leave, and whether one is waiting for it.
#[derive(Debug, Clone, Default)]
pub(crate) struct Pacer {
    release: Time,
    held: bool,
}

impl Pacer {
    /// Whether a segment ready at `now` must wait; remembers that one does.
    #[inline]
    pub(crate) fn hold(&mut self, now: Time) -> bool {
        self.held = now < self.release;
        self.held
    }

    /// A packet of `len` bytes left at `now` at `rate` bytes per second.
    pub(crate) fn sent(&mut self, now: Time, len: usize, rate: u64) {
        let gap = (len as u128 * 1_000_000_000).div_ceil(u128::from(rate.max(1)));
        self.release = Time::from_nanos(now.as_nanos().saturating_add(gap.min(u128::from(u64::MAX)) as u64));
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

    /// A data packet just built at `now`: the next one waits its transmission time at the pacing rate.
    #[inline]
    pub(crate) fn paced(&mut self, now: Time, pkt: Bytes) -> Bytes {
        if let Some(p) = &mut self.pacer {
            p.sent(now, pkt.len(), self.cc.pacing_rate().unwrap_or(u64::MAX));
        }
        pkt
    }

    /// An ACK for a controller that reads delivery-rate samples: what it SACKed and whether it is a
    /// duplicate are noted around the ordinary processing (`process_ack`, which notes the cumulative
    /// advance), then the controller reads the sample with the recovery state the ACK left.
    pub(crate) fn sampled_ack(&mut self, now: Time, process: impl FnOnce(&mut Sender)) {
        let prior_in_flight = self.recovery.in_flight(self);
        let dupacks_before = self.stats.dupacks_received;
        process(self);
        let mss = u64::from(self.mss);
        let outstanding = self.max.saturating_sub(self.una);
        let duplicate = self.stats.dupacks_received > dupacks_before;
        let in_flight = self.recovery.in_flight(self);
        let ca_state = if self.recovery.in_recovery() {
            CaState::Recovery
        } else if self.una < self.go_back_max {
            CaState::Loss
        } else {
            CaState::Open
        };
        let Some(rate) = &mut self.rate else { return };
        if duplicate && !self.sack_ok {
            rate.on_dupack(mss, outstanding);
        }
        let rs = rate.sample(now);
        let rs = RateSample { prior_in_flight, in_flight, ca_state, ..rs };
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
    use crate::cc::bbr::Mode;
    use crate::cc::AnyController;
    use crate::harness::Pair;
    use crate::tests::{cfg, drain_sender, established};
    use crate::{TcpConfig, Variant};
    use lasthop_wire::Time;
    use std::time::Duration;

    /// Before any RTT sample BBR paces at 2.885 × its initial window per nominal 1 ms: 4 segments of 1000
    /// bytes, 4 MB/s × 739/256 = 11 546 875 B/s. A 1040-byte packet (1000 bytes, 40 of headers) then holds
    /// the next one for ⌈1040 s / 11 546 875⌉ = 90 068 ns, reported as the sender's timeout.
    #[test]
    fn each_segment_holds_the_next_for_its_transmission_time_at_the_pacing_rate() {
        let (mut s, first) = established(TcpConfig { initial_cwnd: 4, ..cfg(Variant::Bbr) }, 100_000);
        let t0 = Time::from_millis(100);
        assert_eq!((first.len(), s.pacing_rate()), (1, Some(11_546_875)));
        let release = Time::from_nanos(t0.as_nanos() + 90_068);
        assert_eq!(s.poll_timeout(), Some(release));
        assert!(drain_sender(&mut s, Time::from_nanos(release.as_nanos() - 1)).is_empty(), "not before");
        s.handle_timeout(release);
        let second = drain_sender(&mut s, release);
        assert_eq!((second.len(), second[0].off), (1, first[0].off + 1000));
        assert_eq!(s.poll_timeout(), Some(Time::from_nanos(release.as_nanos() + 90_068)));
    }

    /// A window-clocked sender sends its whole window at once and reports only its retransmit timer.
    #[test]
    fn a_window_clocked_sender_does_not_pace() {
        let (s, first) = established(TcpConfig { initial_cwnd: 4, ..cfg(Variant::Cubic) }, 100_000);
        assert_eq!((first.len(), s.pacing_rate()), (4, None));
        assert!(s.poll_timeout().unwrap() >= Time::from_millis(600), "{:?}", s.poll_timeout());
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

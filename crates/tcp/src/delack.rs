//! Linux's receive-side acknowledgment engine (`net/ipv4/tcp_input.c` `tcp_event_data_recv`,
//! `__tcp_ack_snd_check`; `tcp_output.c` `tcp_send_delayed_ack`), the receiver's rules under
//! `ack_rules = "linux"`: a delayed-ACK timeout (`ato`) that starts at `TCP_ATO_MIN` 40 ms and follows the
//! gaps between in-order segments, bounded by `TCP_DELACK_MAX` 200 ms; quick-ACK mode (every segment
//! acknowledged at once) for the connection's first segments, after an idle gap longer than the RTO and
//! after a duplicate segment (`tcp_enter_quickack_mode`). Out-of-order segments and the one that fills a
//! hole are acknowledged at once by the receiver's common rules, as by 4.4BSD.

use lasthop_wire::Time;

/// `TCP_ATO_MIN` and `TCP_DELACK_MIN`: HZ / 25.
const ATO_MIN_NS: u64 = 40_000_000;
/// `TCP_DELACK_MAX`: HZ / 5, the default `icsk_delack_max`.
const DELACK_MAX_NS: u64 = 200_000_000;

#[derive(Debug, Clone)]
pub(crate) struct LinuxAcks {
    /// `icsk_ack.ato`, nanoseconds; 0 until the first data segment.
    ato: u64,
    /// `icsk_ack.lrcvtime`: when the last in-order data segment arrived.
    lrcvtime: Time,
    /// `icsk_ack.quick`: segments still to be acknowledged at once.
    quick: u32,
    /// `tcp_incr_quickack`'s grant: the window over two segments, at least 2, at most `TCP_MAX_QUICKACKS`
    /// (the configured `quick_acks`).
    quick_grant: u32,
    /// The receiver's RTO (`icsk_rto`), nanoseconds: an idle gap longer than it restarts quick-ACK mode.
    rto: u64,
}

/// What `tcp_send_delayed_ack` decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DelayedAck {
    /// The pending timer is about to expire: acknowledge now.
    Now,
    /// (Re)arm the delayed-ACK timer for this time.
    At(Time),
}

impl LinuxAcks {
    /// `max_quickacks` is `TCP_MAX_QUICKACKS` (16) as configured; `window` and `mss` bound the grant as
    /// `tcp_incr_quickack` does; `rto` is the receiver's initial RTO until [`set_rto`](Self::set_rto).
    pub(crate) fn new(max_quickacks: u32, window: u32, mss: u32, rto: u64) -> LinuxAcks {
        let by_window = (window / (2 * mss.max(1))).max(2);
        LinuxAcks { ato: 0, lrcvtime: Time::ZERO, quick: 0, quick_grant: by_window.min(max_quickacks), rto }
    }

    /// The receiver's RTO, once its SYN-ACK's RTT is known.
    pub(crate) fn set_rto(&mut self, rto: u64) {
        self.rto = rto;
    }

    /// `tcp_incr_quickack`.
    fn incr_quickack(&mut self) {
        self.quick = self.quick.max(self.quick_grant);
    }

    /// `tcp_enter_quickack_mode`: a duplicate segment (the sender retransmitted what we had, so our ACK
    /// was lost or late) or data after a long silence.
    pub(crate) fn enter_quickack_mode(&mut self) {
        self.incr_quickack();
        self.ato = ATO_MIN_NS;
    }

    /// `tcp_event_data_recv`: an in-order data segment arrived at `now`.
    pub(crate) fn on_data(&mut self, now: Time) {
        if self.ato == 0 {
            // "The _first_ data packet received, initialize delayed ACK engine."
            self.incr_quickack();
            self.ato = ATO_MIN_NS;
        } else {
            let m = now.as_nanos().saturating_sub(self.lrcvtime.as_nanos());
            if m <= ATO_MIN_NS / 2 {
                self.ato = (self.ato >> 1) + ATO_MIN_NS / 2;
            } else if m < self.ato {
                self.ato = ((self.ato >> 1) + m).min(self.rto);
            } else if m > self.rto {
                // "Too long gap. Apparently sender failed to restart window, so that we send ACKs quickly."
                self.incr_quickack();
            }
        }
        self.lrcvtime = now;
    }

    /// `tcp_in_quickack_mode`: this segment is acknowledged at once.
    pub(crate) fn in_quickack_mode(&self) -> bool {
        self.quick > 0
    }

    /// `tcp_dec_quickack_mode`: an ACK went out covering `segments` data segments.
    pub(crate) fn on_ack_sent(&mut self, segments: u32) {
        if self.quick > 0 {
            if segments >= self.quick {
                self.quick = 0;
                // "Leaving quickack mode we deflate ATO."
                self.ato = ATO_MIN_NS;
            } else {
                self.quick -= segments;
            }
        }
    }

    /// `tcp_send_delayed_ack` at `now`, with the delayed-ACK timer set for `pending` if it runs. The
    /// receiver measures no RTT of its own (it sends no data), so `ato` is bounded by `TCP_DELACK_MAX`
    /// only.
    pub(crate) fn delayed_ack(&self, now: Time, pending: Option<Time>) -> DelayedAck {
        let ato = self.ato.clamp(ATO_MIN_NS, DELACK_MAX_NS);
        let timeout = now + std::time::Duration::from_nanos(ato);
        match pending {
            // "If delack timer is about to expire, send ACK now."
            Some(p) if p.as_nanos() <= now.as_nanos() + (ato >> 2) => DelayedAck::Now,
            // "Use new timeout only if there wasn't a older one earlier."
            Some(p) if p < timeout => DelayedAck::At(p),
            _ => DelayedAck::At(timeout),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;
    fn t(ms: u64) -> Time {
        Time::from_millis(ms)
    }

    #[test]
    fn quick_acks_at_the_first_segment_then_ato_follows_the_arrivals() {
        let mut l = LinuxAcks::new(16, 65535, 1460, 200 * MS);
        l.on_data(t(0));
        assert!(l.in_quickack_mode());
        l.on_ack_sent(15);
        assert!(l.in_quickack_mode(), "16 segments granted");
        l.on_ack_sent(1);
        assert!(!l.in_quickack_mode());
        assert_eq!(l.delayed_ack(t(0), None), DelayedAck::At(t(40)), "TCP_ATO_MIN");
        // Back-to-back segments (gap ≤ 20 ms) keep ato at 40 ms; a gap of 30 ms below ato moves it to
        // ato/2 + 30 ms = 50 ms; a gap above ato leaves it.
        l.on_data(t(5));
        assert_eq!(l.ato, 40 * MS);
        l.on_data(t(35));
        assert_eq!(l.ato, 50 * MS);
        l.on_data(t(135));
        assert_eq!(l.ato, 50 * MS);
        assert_eq!(l.delayed_ack(t(135), None), DelayedAck::At(t(185)));
        // A pending timer is kept if earlier, and fires at once when within ato/4.
        assert_eq!(l.delayed_ack(t(135), Some(t(170))), DelayedAck::At(t(170)));
        assert_eq!(l.delayed_ack(t(135), Some(t(147))), DelayedAck::Now);
        // A gap longer than the RTO restarts quick-ACK mode.
        l.on_data(t(400));
        assert!(l.in_quickack_mode());
    }

    #[test]
    fn the_grant_is_bounded_by_the_window_and_ato_by_delack_max() {
        let mut small = LinuxAcks::new(16, 4 * 1460, 1460, 200 * MS);
        small.on_data(t(0));
        assert_eq!(small.quick, 2, "rcv_wnd / (2 · rcv_mss)");
        let mut l = LinuxAcks::new(16, 65535, 1460, 1000 * MS);
        l.on_data(t(0));
        l.on_ack_sent(16);
        l.ato = 900 * MS;
        assert_eq!(l.delayed_ack(t(0), None), DelayedAck::At(t(200)), "TCP_DELACK_MAX");
        l.enter_quickack_mode();
        assert!(l.in_quickack_mode());
        assert_eq!(l.ato, 40 * MS);
    }
}

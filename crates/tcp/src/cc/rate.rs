//! Delivery-rate estimation (Cheng, Cardwell, Yeganeh and Jacobson, "Delivery Rate Estimation",
//! draft-cheng-iccrg-delivery-rate-estimation; Linux's `net/ipv4/tcp_rate.c`), kept by the sender for a
//! controller that asks for it ([`Controller::wants_rate_samples`](super::Controller::wants_rate_samples)).
//!
//! Every transmission snapshots the connection's delivered count, the time of the last delivery and the
//! send time of the most recently delivered segment (`tcp_rate_skb_sent`); the ACK or SACK that first
//! delivers it turns the newest such snapshot into a rate: bytes delivered since, over the longer of the
//! send and the ACK interval (`tcp_rate_gen`). Bytes are counted where Linux counts packets; a duplicate ACK
//! without SACK counts one segment delivered, taken back from the cumulative ACK that follows
//! (`tcp_add_reno_sack`, `tcp_remove_reno_sacks`), except after a retransmit timeout, which forgets the
//! count and so lets that ACK count those segments again, as Linux does. A sample sent while the sender had
//! nothing to send is app-limited (`tcp_rate_check_app_limited`).

use lasthop_wire::Time;
use std::collections::VecDeque;

/// Linux's `icsk_ca_state` as BBR reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum CaState {
    Open,
    /// Fast recovery.
    Recovery,
    /// After a retransmit timeout, until the data outstanding then is acknowledged.
    Loss,
}

/// What one ACK tells a rate-based controller (Linux's `struct rate_sample`, with the connection state
/// `bbr_main` reads beside it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RateSample {
    /// Bytes delivered over `interval_ns`; with `interval_ns` 0 the ACK gave no valid rate.
    pub delivered: u64,
    pub interval_ns: u64,
    /// The connection's delivered count when the sampled segment was sent (`prior_delivered`).
    pub prior_delivered: u64,
    /// The sampled segment went out while the sender had less to send than its window allowed.
    pub is_app_limited: bool,
    /// Bytes this ACK newly acknowledged or SACKed (`acked_sacked`).
    pub acked_sacked: u64,
    /// Bytes in flight before and after the ACK, as the sender gates on them.
    pub prior_in_flight: u64,
    pub in_flight: u64,
    /// The RTT this ACK measured (none for a duplicate or a retransmitted segment, Karn).
    pub rtt_ns: Option<u64>,
    /// The connection's delivered count and when it last grew (`tp->delivered`, `delivered_mstamp`).
    pub total_delivered: u64,
    pub delivered_time: Time,
    pub ca_state: CaState,
    /// Segments this ACK marked lost beyond a fast retransmit's own (part of Linux's `rs->losses`: without
    /// SACK, the new head at a partial ACK in recovery).
    pub losses: u32,
}

/// One transmission's snapshot (`tx` of `tcp_skb_cb`).
#[derive(Debug, Clone, Copy)]
struct Sent {
    end: u64,
    len: u64,
    sent: Time,
    delivered: u64,
    delivered_time: Time,
    first_sent_time: Time,
    app_limited: bool,
    /// Already delivered by a SACK: counted, and no longer a sample.
    sacked: bool,
}

/// The newest delivered segment's snapshot this ACK found.
#[derive(Debug, Clone, Copy)]
struct Prior {
    delivered: u64,
    delivered_time: Time,
    send_elapsed_ns: u64,
    app_limited: bool,
}

#[derive(Debug, Clone, Default)]
pub(crate) struct DeliveryRate {
    /// `tp->delivered`, bytes.
    delivered: u64,
    /// `delivered_mstamp`, `first_tx_mstamp`.
    delivered_time: Time,
    first_sent_time: Time,
    /// `tp->app_limited`: 0, or the delivered count beyond which sending is no longer app-limited.
    app_limited: u64,
    /// Snapshots of segments not yet cumulatively acknowledged, in offset order.
    sent: VecDeque<Sent>,
    /// Bytes the duplicate ACKs of a connection without SACK counted as delivered (`sacked_out`).
    dupack_credit: u64,
    /// `tcp_min_rtt`: samples shorter than it are no rates.
    min_rtt_ns: Option<u64>,
    /// Delivered by this ACK so far, the newest snapshot delivered and the RTT it measured.
    newly: u64,
    prior: Option<Prior>,
    rtt_ns: Option<u64>,
}

impl DeliveryRate {
    /// `tcp_rate_skb_sent`: the segment `[end - len, end)` goes out at `now`; `idle` when nothing was
    /// outstanding before it.
    pub(crate) fn on_send(&mut self, now: Time, end: u64, len: u64, idle: bool) {
        if idle {
            self.first_sent_time = now;
            self.delivered_time = now;
        }
        let rec = Sent {
            end,
            len,
            sent: now,
            delivered: self.delivered,
            delivered_time: self.delivered_time,
            first_sent_time: self.first_sent_time,
            app_limited: self.app_limited != 0,
            sacked: false,
        };
        match self.sent.back() {
            None => self.sent.push_back(rec),
            Some(last) if last.end < end => self.sent.push_back(rec),
            // A retransmission: its snapshot is taken afresh.
            _ => match self.sent.binary_search_by_key(&end, |s| s.end) {
                Ok(i) => self.sent[i] = rec,
                Err(i) => self.sent.insert(i, rec),
            },
        }
    }

    /// `tcp_rate_skb_delivered`: `s` is delivered now.
    fn deliver(&mut self, s: &Sent) {
        self.newly += s.len;
        if self.prior.is_none_or(|p| s.delivered >= p.delivered) {
            self.prior = Some(Prior {
                delivered: s.delivered,
                delivered_time: s.delivered_time,
                send_elapsed_ns: s.sent.as_nanos().saturating_sub(s.first_sent_time.as_nanos()),
                app_limited: s.app_limited,
            });
            self.first_sent_time = s.sent;
        }
    }

    /// A SACK block `[left, right)`: the segments wholly inside it are delivered.
    pub(crate) fn on_sack(&mut self, left: u64, right: u64) {
        let start = self.sent.partition_point(|s| s.end <= left);
        for i in start..self.sent.len() {
            let s = self.sent[i];
            if s.end > right {
                break;
            }
            if !s.sacked && s.end - s.len >= left {
                self.sent[i].sacked = true;
                self.deliver(&s);
            }
        }
    }

    /// A duplicate ACK of a connection without SACK: one segment has left the network, if any is still
    /// counted as outstanding.
    pub(crate) fn on_dupack(&mut self, mss: u64, outstanding: u64) {
        let credit = (self.dupack_credit + mss).min(outstanding.saturating_sub(mss));
        self.newly += credit - self.dupack_credit;
        self.dupack_credit = credit;
    }

    /// A retransmit timeout (`tcp_timeout_mark_lost`), or an ACK advancing SND.UNA in loss recovery
    /// (`tcp_process_loss`), of a connection without SACK: Linux forgets what the duplicate ACKs counted
    /// (`tcp_reset_reno_sack`) but not the deliveries they added, so the cumulative ACK that covers those
    /// segments counts them again.
    pub(crate) fn forget_dupacks(&mut self) {
        self.dupack_credit = 0;
    }

    /// The cumulative ACK reached `una` and measured `rtt_ns`: the segments below it are delivered, less
    /// what duplicate ACKs counted already (at least one segment: the ACK filled a hole).
    pub(crate) fn on_cumulative_ack(&mut self, una: u64, mss: u64, rtt_ns: Option<u64>) {
        self.rtt_ns = rtt_ns;
        let before = self.newly;
        while let Some(s) = self.sent.front().copied() {
            if s.end > una {
                break;
            }
            self.sent.pop_front();
            if !s.sacked {
                self.deliver(&s);
            }
        }
        let acked = self.newly - before;
        if self.dupack_credit > 0 && acked > 0 {
            let counted = acked.saturating_sub(self.dupack_credit).max(acked.min(mss));
            self.dupack_credit = self.dupack_credit.saturating_sub(acked - acked.min(mss));
            self.newly = before + counted;
        }
    }

    /// `tcp_rate_gen`: the sample of this ACK, from what `on_sack`, `on_dupack` and `on_cumulative_ack`
    /// found; the other fields are the sender's.
    pub(crate) fn sample(&mut self, now: Time) -> RateSample {
        let rtt_ns = self.rtt_ns.take();
        if let Some(rtt) = rtt_ns {
            self.min_rtt_ns = Some(self.min_rtt_ns.map_or(rtt, |m| m.min(rtt)));
        }
        let newly = std::mem::take(&mut self.newly);
        self.delivered += newly;
        if self.app_limited != 0 && self.delivered > self.app_limited {
            self.app_limited = 0;
        }
        if newly > 0 {
            self.delivered_time = now;
        }
        let mut rs = RateSample {
            delivered: 0,
            interval_ns: 0,
            prior_delivered: 0,
            is_app_limited: false,
            acked_sacked: newly,
            prior_in_flight: 0,
            in_flight: 0,
            rtt_ns,
            total_delivered: self.delivered,
            delivered_time: self.delivered_time,
            ca_state: CaState::Open,
            losses: 0,
        };
        if let Some(p) = self.prior.take() {
            let ack_elapsed = now.as_nanos().saturating_sub(p.delivered_time.as_nanos());
            let interval = p.send_elapsed_ns.max(ack_elapsed);
            rs.prior_delivered = p.delivered;
            rs.is_app_limited = p.app_limited;
            // A sample shorter than the least RTT comes from ACK compression or a bad estimate: no rate.
            if interval > 0 && interval >= self.min_rtt_ns.unwrap_or(0) {
                rs.delivered = self.delivered - p.delivered;
                rs.interval_ns = interval;
            }
        }
        rs
    }

    /// `tcp_rate_check_app_limited`: the sender has no full segment left to send and its window is not
    /// full, so what it sends next would not measure the path.
    pub(crate) fn mark_app_limited(&mut self, in_flight: u64) {
        self.app_limited = (self.delivered + in_flight).max(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1000;

    fn t(ms: u64) -> Time {
        Time::from_millis(ms)
    }

    /// `n` segments of one MSS sent 1 ms apart from t = 0, the first into an idle connection.
    fn sent(n: u64) -> DeliveryRate {
        let mut r = DeliveryRate::default();
        for i in 0..n {
            r.on_send(t(i), (i + 1) * MSS, MSS, i == 0);
        }
        r
    }

    /// Ten segments sent 1 ms apart from t = 0 (the first into an idle connection: send and delivered
    /// times 0), each acknowledged 100 ms after it was sent. The first ACK delivers 1000 bytes over
    /// max(send phase 0, ACK phase 100 ms). An eleventh segment sent at 100 ms snapshots delivered = 1000,
    /// delivered time 100 ms and the newest delivered segment's send time 0; its ACK at 200 ms reads the
    /// 10 000 bytes delivered since over max(100 − 0, 200 − 100) = 100 ms.
    #[test]
    fn rate_is_delivered_since_the_snapshot_over_the_longer_phase() {
        let mut r = sent(10);
        r.on_cumulative_ack(MSS, MSS, Some(100_000_000));
        let first = r.sample(t(100));
        assert_eq!((first.delivered, first.interval_ns, first.acked_sacked), (MSS, 100_000_000, MSS));
        r.on_send(t(100), 11 * MSS, MSS, false);
        for i in 1..10 {
            r.on_cumulative_ack((i + 1) * MSS, MSS, Some(100_000_000));
            r.sample(t(100 + i));
        }
        r.on_cumulative_ack(11 * MSS, MSS, Some(100_000_000));
        let s = r.sample(t(200));
        assert_eq!((s.prior_delivered, s.delivered, s.interval_ns), (MSS, 10 * MSS, 100_000_000));
        assert!(!s.is_app_limited);
    }

    /// SACKed segments are delivered (and sampled) once; the cumulative ACK that covers them counts only the
    /// hole. Without SACK each duplicate ACK counts a segment, taken back from the cumulative ACK.
    #[test]
    fn sack_and_duplicate_acks_count_each_segment_once() {
        let mut r = sent(4);
        r.on_sack(MSS, 3 * MSS);
        assert_eq!(r.sample(t(100)).acked_sacked, 2 * MSS);
        r.on_sack(MSS, 3 * MSS);
        assert_eq!(r.sample(t(101)).acked_sacked, 0, "a repeated block delivers nothing");
        r.on_cumulative_ack(4 * MSS, MSS, None);
        assert_eq!(r.sample(t(102)).acked_sacked, 2 * MSS);

        let mut r = sent(4);
        r.on_dupack(MSS, 4 * MSS);
        r.on_dupack(MSS, 4 * MSS);
        assert_eq!(r.sample(t(100)).acked_sacked, 2 * MSS);
        r.on_cumulative_ack(4 * MSS, MSS, None);
        assert_eq!(r.sample(t(101)).acked_sacked, 2 * MSS, "4 acknowledged, 2 counted already");
        assert_eq!(r.dupack_credit, 0);
    }

    /// Segments sent after the sender ran out of data are app-limited until the delivered count passes the
    /// mark; a sample shorter than the least RTT is no rate.
    #[test]
    fn app_limited_marks_and_too_short_intervals() {
        let mut r = sent(1);
        r.mark_app_limited(MSS);
        r.on_send(t(1), 2 * MSS, MSS, false);
        r.on_cumulative_ack(MSS, MSS, Some(100_000_000));
        let s = r.sample(t(100));
        assert!(!s.is_app_limited && s.interval_ns > 0);
        r.on_cumulative_ack(2 * MSS, MSS, Some(100_000_000));
        let s = r.sample(t(101));
        assert!(s.is_app_limited);
        // Sent at 1 ms with delivered time 0: max(1 − 0, 101 − 0) = 101 ms, a rate.
        assert_eq!(s.interval_ns, 101_000_000);
        // A retransmission re-snapshots; its ACK after 5 ms (less than the 100 ms least RTT) gives no rate.
        r.on_send(t(200), 3 * MSS, MSS, true);
        r.on_cumulative_ack(3 * MSS, MSS, None);
        let s = r.sample(t(205));
        assert_eq!((s.interval_ns, s.acked_sacked), (0, MSS));
    }
}

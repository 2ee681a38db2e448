//! RACK-TLP loss detection (RFC 8985; Linux `net/ipv4/tcp_recovery.c` `tcp_rack_detect_loss`,
//! `tcp_rack_reo_wnd`, and `tcp_output.c` `tcp_schedule_loss_probe`, `tcp_send_loss_probe`), on with
//! `rack_tlp = true` (the `linux` profile's) and a peer that agreed to SACK, as in Linux:
//!
//! - RACK: a segment is lost when a segment sent after it has been delivered (cumulatively ACKed or
//!   SACKed) and more than RACK.rtt + reo_wnd has passed since it was sent. The reordering window is
//!   min_rtt / 4 (at most SRTT), or 0 before any reordering was seen once recovery runs or DupThresh
//!   segments are SACKed; a segment not yet due arms the reordering timer. A loss starts fast recovery,
//!   which retransmits RACK's lost segments first.
//! - TLP: outside recovery, with data outstanding, a probe timer of 2·SRTT (plus `TCP_RTO_MIN` 200 ms
//!   when one segment is in flight, for the peer's delayed ACK; never later than the RTO) sends one
//!   segment: new data if the peer's window allows, else the last segment again. Its ACK (or SACK) lets
//!   RACK find a tail loss that would otherwise wait for the RTO. A retransmitted probe whose ACK goes
//!   past it was a loss: cwnd is cut to ssthresh once (`tcp_process_tlp_ack`).

use crate::cc::{CongestionEvent, Controller};
use crate::sender::Sender;
use lasthop_wire::Time;
use std::collections::VecDeque;
use std::time::Duration;

/// `TCP_RTO_MIN`: added to the probe timeout when one segment is in flight (the peer may delay its ACK).
const PTO_ONE_SEGMENT_NS: u64 = 200_000_000;
/// `TCP_TIMEOUT_MIN`: 2 jiffies added otherwise.
const PTO_SLACK_NS: u64 = 2_000_000;

/// A segment sent and not yet cumulatively acknowledged.
#[derive(Debug, Clone, Copy)]
struct Sent {
    start: u64,
    end: u64,
    /// When it was last (re)sent.
    xmit: Time,
    retransmitted: bool,
    sacked: bool,
    /// Marked lost by RACK and not resent since.
    lost: bool,
}

#[derive(Debug, Clone, Default)]
pub(crate) struct Rack {
    segs: VecDeque<Sent>,
    /// RACK.xmit_ts and RACK.end_seq: the most recently sent segment known delivered.
    xmit: Option<(Time, u64)>,
    /// RACK.rtt: that segment's RTT, nanoseconds.
    rtt: u64,
    /// The smallest RTT any delivered segment gave (Linux's `tcp_min_rtt`), nanoseconds.
    min_rtt: Option<u64>,
    /// RACK.fack: the highest end delivered.
    fack: u64,
    reordering_seen: bool,
    reo_deadline: Option<Time>,
    tlp_deadline: Option<Time>,
    /// `tlp_high_seq`: SND.MAX when the outstanding probe went; `None` when none is outstanding.
    tlp_high: Option<u64>,
    /// The outstanding probe resent data (`tlp_retrans`).
    tlp_retrans: bool,
    tlp_pending: bool,
    probes: u64,
    marked_lost: u64,
}

impl Rack {
    /// RACK_sent_after: `a` went out after `b` (or with it, and ends beyond it).
    fn sent_after(a: (Time, u64), b: (Time, u64)) -> bool {
        a.0 > b.0 || (a.0 == b.0 && a.1 > b.1)
    }

    fn on_send(&mut self, now: Time, start: u64, end: u64, rexmit: bool) {
        if !rexmit {
            self.segs.push_back(Sent { start, end, xmit: now, retransmitted: false, sacked: false, lost: false });
            return;
        }
        for s in self.segs.iter_mut().filter(|s| s.start < end && s.end > start) {
            (s.xmit, s.retransmitted, s.lost) = (now, true, false);
        }
    }

    /// RACK_update for one newly delivered segment (RFC 8985 §6.2 steps 2 and 3).
    fn delivered(&mut self, s: Sent, now: Time) {
        let rtt = now.as_nanos().saturating_sub(s.xmit.as_nanos());
        if s.retransmitted && self.min_rtt.is_some_and(|m| rtt < m) {
            return; // the ACK may be for the original: no sample
        }
        if !s.retransmitted {
            self.min_rtt = Some(self.min_rtt.map_or(rtt, |m| m.min(rtt)));
        }
        self.rtt = rtt;
        if self.xmit.is_none_or(|x| Rack::sent_after((s.xmit, s.end), x)) {
            self.xmit = Some((s.xmit, s.end));
        }
        if s.end > self.fack {
            self.fack = s.end;
        } else if s.end < self.fack && !s.retransmitted {
            self.reordering_seen = true;
        }
    }

    /// RACK_detect_loss (§6.2 step 5): marks the segments now lost, returns how many, and arms the
    /// reordering timer for the first one not yet due.
    fn detect_loss(&mut self, now: Time, reo_wnd: u64) -> u64 {
        let Some(latest) = self.xmit else { return 0 };
        let mut timeout = 0;
        let mut lost = 0;
        for s in self.segs.iter_mut().filter(|s| !s.sacked && !s.lost) {
            if !Rack::sent_after(latest, (s.xmit, s.end)) {
                continue;
            }
            let due = s.xmit.as_nanos() + self.rtt + reo_wnd;
            if due <= now.as_nanos() {
                s.lost = true;
                lost += 1;
            } else {
                timeout = timeout.max(due - now.as_nanos());
            }
        }
        self.reo_deadline = (timeout > 0).then(|| now + Duration::from_nanos(timeout));
        self.marked_lost += lost;
        lost
    }
}

impl Sender {
    /// A segment `[off, end)` went out at `now`.
    pub(crate) fn rack_on_send(&mut self, now: Time, off: u64, end: u64, rexmit: bool) {
        if !self.sack_ok {
            return; // without SACK, Linux runs no RACK either, and nothing would take the segments off
        }
        let Some(r) = &mut self.rack else { return };
        r.on_send(now, off, end, rexmit);
        if !rexmit {
            self.arm_loss_probe(now);
        }
    }

    /// Whether RACK holds the segment at `off` lost and not yet resent, for SACK recovery's NextSeg.
    pub(crate) fn rack_lost(&self, off: u64) -> bool {
        self.rack.as_ref().is_some_and(|r| r.segs.iter().any(|s| s.lost && s.start <= off && off < s.end))
    }

    /// After an ACK was processed (SND.UNA advanced from `prior_una`): what it delivered updates RACK,
    /// lost segments start recovery, an outstanding probe is settled and the probe timer re-armed.
    pub(crate) fn rack_on_ack(&mut self, now: Time, prior_una: u64) {
        if !self.sack_ok {
            return;
        }
        let Some(mut r) = self.rack.take() else { return };
        while r.segs.front().is_some_and(|s| s.end <= self.una) {
            let s = r.segs.pop_front().expect("checked");
            if !s.sacked {
                r.delivered(s, now);
            }
        }
        let newly_sacked: Vec<Sent> = r
            .segs
            .iter_mut()
            .filter(|s| !s.sacked && self.scoreboard.covers(s.start, s.end))
            .map(|s| {
                s.sacked = true;
                *s
            })
            .collect();
        let mut by_time = newly_sacked;
        by_time.sort_by_key(|s| s.xmit);
        for s in by_time {
            r.delivered(s, now);
        }
        self.settle_probe(&mut r, now, prior_una);
        let lost = r.detect_loss(now, self.reo_wnd(&r));
        self.rack = Some(r);
        if lost > 0 {
            self.on_rack_loss(now);
        }
        self.arm_loss_probe(now);
    }

    /// `tcp_rack_reo_wnd`.
    fn reo_wnd(&self, r: &Rack) -> u64 {
        if !r.reordering_seen {
            let sacked = r.segs.iter().filter(|s| s.sacked).count() as u64;
            if self.recovery.in_recovery() || sacked >= u64::from(self.dupthresh()) {
                return 0;
            }
        }
        let srtt = self.rto.srtt().unwrap_or(u64::MAX);
        (r.min_rtt.unwrap_or(0) / 4).min(srtt)
    }

    /// `tcp_process_tlp_ack`: an ACK past a retransmitted probe means the probe repaired a loss: one
    /// congestion response (`tcp_init_cwnd_reduction` then `tcp_end_cwnd_reduction`: cwnd = ssthresh).
    fn settle_probe(&mut self, r: &mut Rack, now: Time, prior_una: u64) {
        let Some(high) = r.tlp_high else { return };
        if self.una < high {
            return;
        }
        if !r.tlp_retrans {
            r.tlp_high = None;
        } else if self.una > high {
            r.tlp_high = None;
            let halved_flight = self.halved_flight();
            self.cc.on_congestion_event(now, CongestionEvent::FastRetransmit { halved_flight });
            let ssthresh = self.cc.ssthresh();
            self.cc.set_window(ssthresh);
        } else if self.una == prior_una {
            r.tlp_high = None; // a pure duplicate ACK: the original and the probe both arrived
        }
    }

    /// RACK marked segments lost: fast recovery begins (as `tcp_time_to_recover` on `lost_out`), unless
    /// it runs already or the losses are of a window already answered.
    fn on_rack_loss(&mut self, now: Time) {
        if self.recovery.in_recovery() || (self.una < self.recover && !self.may_retransmit_again()) {
            return;
        }
        self.enter_recovery(now);
    }

    /// `tcp_schedule_loss_probe`: outside recovery, with data outstanding, SACK agreed and no probe
    /// outstanding, the probe timer is 2·SRTT (+200 ms with one segment in flight, else 2 ms), never
    /// later than the retransmit timer.
    fn arm_loss_probe(&mut self, now: Time) {
        let Some(r) = &self.rack else { return };
        let allowed = self.sack_ok && self.una < self.max && r.tlp_high.is_none() && !self.recovery.in_recovery();
        let pto = match (allowed, self.rto.srtt()) {
            (true, Some(srtt)) => {
                let one = self.max - self.una <= u64::from(self.mss);
                let pto = now + Duration::from_nanos(2 * srtt + if one { PTO_ONE_SEGMENT_NS } else { PTO_SLACK_NS });
                Some(self.rtx_deadline.map_or(pto, |rto| pto.min(rto)))
            }
            _ => None,
        };
        if let Some(r) = &mut self.rack {
            r.tlp_deadline = pto;
        }
    }

    /// RACK's timers: the reordering timer and the probe timer.
    pub(crate) fn rack_timeout(&self) -> Option<Time> {
        let r = self.rack.as_ref()?;
        crate::sender::earlier(r.reo_deadline, r.tlp_deadline)
    }

    pub(crate) fn rack_on_timeout(&mut self, now: Time) {
        let Some(mut r) = self.rack.take() else { return };
        if r.reo_deadline.is_some_and(|d| d <= now) {
            // `tcp_rack_reo_timeout`.
            let lost = r.detect_loss(now, self.reo_wnd(&r));
            self.rack = Some(r);
            if lost > 0 {
                self.on_rack_loss(now);
            }
            r = self.rack.take().expect("put back");
        }
        if r.tlp_deadline.is_some_and(|d| d <= now) {
            r.tlp_deadline = None;
            r.tlp_pending = true;
        }
        self.rack = Some(r);
    }

    /// `tcp_send_loss_probe`: the probe due now, as (offset, bytes, FIN): one new segment if the peer's
    /// window has room (cwnd does not hold it back), else the last segment sent again. The retransmit
    /// timer restarts (`tcp_rearm_rto`).
    pub(crate) fn take_loss_probe(&mut self, now: Time) -> Option<(u64, u32, bool)> {
        let r = self.rack.as_mut()?;
        if !std::mem::take(&mut r.tlp_pending) || self.una >= self.max || self.recovery.in_recovery() {
            return None;
        }
        let last_sent = r.segs.back().map_or(self.una, |s| s.start.max(self.una));
        let fin_off = self.fin_offset();
        let room = (self.una + u64::from(self.peer_window())).saturating_sub(self.max);
        let new_data =
            self.nxt == self.max && self.max < fin_off && room >= u64::from(self.mss).min(fin_off - self.max);
        let off = if new_data { self.max } else { last_sent };
        let (len, fin) = self.shape(off, if new_data { u64::MAX } else { self.max });
        let r = self.rack.as_mut()?;
        r.probes += 1;
        r.tlp_retrans = off < self.max;
        r.tlp_high = Some(self.max.max(off + u64::from(len) + u64::from(fin)));
        self.rtx_deadline = Some(self.rto.deadline(now));
        Some((off, len, fin))
    }

    /// A go-back (timeout): RACK's marks and timers are void; the segments' send times stay until resent.
    pub(crate) fn rack_forget(&mut self) {
        if let Some(r) = &mut self.rack {
            for s in &mut r.segs {
                (s.lost, s.sacked) = (false, false);
            }
            r.reo_deadline = None;
            r.tlp_deadline = None;
            r.tlp_pending = false;
            r.tlp_high = None;
        }
    }

    /// Loss probes sent (TLP) and segments RACK marked lost.
    pub fn loss_probes(&self) -> u64 {
        self.rack.as_ref().map_or(0, |r| r.probes)
    }

    pub fn rack_marked_lost(&self) -> u64 {
        self.rack.as_ref().map_or(0, |r| r.marked_lost)
    }
}

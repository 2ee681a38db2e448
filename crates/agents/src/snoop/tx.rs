//! Snoop's transmit-timed rules: what a connection knows once the host reports when each frame really
//! starts transmitting (`Agent::handle_transmit`; see "Transmit-timed recovery" in the module docs of `snoop`).
//! They refine Balakrishnan 1995's queue-timed rules, which `conn.rs` keeps: the loss inference of §3.1.2
//! case 3 counted in numbered transmissions instead of packets forwarded, and the round-trip timer of §6
//! based on the hop's unqueued round trip and the receiver's ACK hold instead of the smoothed RTT.

use super::segment::CachedSeg;
use super::window::{WindowedMax, WindowedMin};
use super::Cfg;
use lasthop_wire::Time;

/// How long the least transmission-to-ACK sample stands before a larger one may replace it (ns): long
/// enough to span a busy period (when ACKs wait behind queued frames), short enough to follow a slower hop.
const HOP_RTT_WINDOW: u64 = 10_000_000_000;

/// How long the largest ACK-hold sample stands before a smaller one may replace it (ns): as for the hop RTT.
const ACK_HOLD_WINDOW: u64 = 10_000_000_000;

/// Round-trip timer expiries in a row that do not back off when the timer is transmit-timed.
pub(super) const TX_BACKOFF_GRACE: u32 = 4;

/// A connection's transmit-timed state. Transmissions are numbered per connection from 1 in the order the
/// link starts them; the link delivers in that order, so a higher number received proves every lower one
/// either arrived or is lost.
#[derive(Debug)]
pub(super) struct TxTimed {
    /// Lower bound on the index of the transmission whose arrival made the mobile send the current last
    /// ACK: every DUPACK for it was caused by a later, distinct transmission (the link keeps order).
    ack_base: u64,
    /// Last ACK or DUPACK from the mobile (with `last_tx_at`, when the connection's medium fell quiet).
    last_mh_at: Time,
    /// Start of this connection's latest data transmission.
    last_tx_at: Time,
    /// Data transmissions reported on this connection; the latest one's index (transmission order).
    txc: u64,
    /// Lower bound on the index of the latest transmission known to have reached the mobile.
    rcvd: u64,
    /// The hop's round trip from the start of a transmission to the ACK it causes, with no queue in the
    /// way: the least Karn-clean sample of the last `HOP_RTT_WINDOW` (ns).
    hop_rtt: WindowedMin,
    /// The receiver's ACK pacing: the longest a new ACK came after the connection's medium fell quiet (its
    /// latest transmission or ACK), over the last `ACK_HOLD_WINDOW` (ns). A receiver that delays ACKs (BSD
    /// up to 200 ms, Linux 40 ms and more) holds the ACK of a lone segment that long; the round-trip timer
    /// must not take that silence for a loss.
    ack_hold: WindowedMax,
}

impl TxTimed {
    pub fn new(now: Time) -> TxTimed {
        TxTimed {
            ack_base: 0,
            last_mh_at: now,
            last_tx_at: now,
            txc: 0,
            rcvd: 0,
            hop_rtt: WindowedMin::new(),
            ack_hold: WindowedMax::new(),
        }
    }

    /// Base of the round-trip timer (§6, deviation), once the hop's round trip is measured: twice the hop's
    /// round trip, counted from the latest transmission, and never less than the receiver's longest ACK
    /// hold seen plus one hop round trip of margin, nor than `min_tx_rtx_timeout`.
    pub fn rto_base(&self, cfg: &Cfg) -> Option<u64> {
        let hop = self.hop_rtt.get()?;
        let hold = self.ack_hold.get().map_or(0, |h| h.saturating_add(hop));
        Some(hop.saturating_mul(2).max(hold).max(cfg.min_tx_rtx_timeout))
    }

    /// Numbers a transmission the link has started: its index.
    pub fn number_transmission(&mut self) -> u64 {
        self.txc += 1;
        self.txc
    }

    /// A transmission of a cached segment started at `now`.
    pub fn transmitted_at(&mut self, now: Time) {
        self.last_tx_at = now;
    }

    /// Every transmission so far has been answered or lost (a timer fired after the medium stayed quiet):
    /// the next DUPACK comes from a later one.
    pub fn all_answered(&mut self) {
        self.ack_base = self.ack_base.max(self.txc);
    }

    /// Lower bound on the latest transmission the mobile received, given `dupacks` DUPACKs for the last ACK
    /// (each from a further, distinct transmission).
    pub fn received_bound(&self, dupacks: u32) -> u64 {
        self.ack_base + u64::from(dupacks)
    }

    /// Loss inference for the segment `c` the mobile needs next (the last ACK stops at it): every
    /// transmission of it is lost once the mobile is known to have received a *later* transmission. With
    /// `dupacks` DUPACKs, the latest transmission received is numbered at least
    /// [`received_bound`](Self::received_bound); none of them is the needed segment (or the ACK would have
    /// moved), so a bound at or past its latest transmission means one came after it. Lost ACKs only make
    /// the bound smaller (later inference, never a wrong one). A copy still queued (handed to the link, not
    /// yet transmitted) is never declared lost.
    pub fn head_lost(&self, c: &CachedSeg, dupacks: u32) -> bool {
        c.tx.pending == 0 && c.tx.count > 0 && self.lost_bound(c, dupacks) >= c.tx.last
    }

    /// The bound [`head_lost`](Self::head_lost) compares with `c`'s latest transmission: plus one if its
    /// previous transmission lies after `ack_base` (no DUPACK came from it, so the transmissions that caused
    /// them skip that number).
    pub fn lost_bound(&self, c: &CachedSeg, dupacks: u32) -> u64 {
        self.received_bound(dupacks) + u64::from(c.tx.count > 1 && c.tx.prev > self.ack_base)
    }

    /// A packet with an ACK from the mobile at `now`. `new_ack_sample`: it is a new ACK carrying nothing
    /// (not a DUPACK, no data), so how long after the medium fell quiet it came is a sample of the
    /// receiver's ACK hold, clamped to `max_rtx_timeout`.
    pub fn on_mobile_ack(&mut self, now: Time, new_ack_sample: bool, cfg: &Cfg) {
        let quiet_since = self.last_tx_at.max(self.last_mh_at);
        self.last_mh_at = now;
        if new_ack_sample && self.txc > 0 {
            let hold = now.0.saturating_sub(quiet_since.0);
            self.ack_hold.update(now, hold, cfg.max_rtx_timeout, ACK_HOLD_WINDOW);
        }
    }

    /// A Karn-clean transmission-to-ACK time (`rtt` ns) measured at `now`.
    pub fn sample_hop_rtt(&mut self, now: Time, rtt: u64, cfg: &Cfg) {
        self.hop_rtt.update(now, rtt, cfg.max_rtx_timeout, HOP_RTT_WINDOW);
    }

    /// A new ACK: it was sent on the arrival of a transmission later than every one known received before
    /// it (the old ACK's base plus its `dupacks` DUPACKs) and than `received`, the latest known to have
    /// arrived among the segments it frees.
    pub fn on_new_ack(&mut self, dupacks: u32, received: u64) {
        self.rcvd = self.rcvd.max(self.received_bound(dupacks)).max(received);
        self.ack_base = self.rcvd;
    }

    /// The receiver's longest ACK hold in the current window (ns), once seen.
    pub fn ack_hold(&self) -> Option<u64> {
        self.ack_hold.get()
    }
}

//! Congestion control and loss recovery of the [`Sender`], one file per algorithm, each behind a trait and
//! reached through an enum (static dispatch, as smoltcp's `AnyController`; the traits follow quinn-proto's
//! `congestion::Controller`). `docs/src/dev/adding-a-congestion-control.md` walks through adding one.
//!
//! - A [`Controller`] owns `cwnd` and `ssthresh`: how the window grows on new ACKs and what a congestion
//!   event (fast retransmit, timeout, ELN) does to it. [`aimd`]: slow start and congestion avoidance.
//! - A [`Recovery`] decides what happens between a fast retransmit and the ACK that ends it: the window of
//!   that phase, partial ACKs, and which segment goes next. [`tahoe`], [`reno`], [`newreno`], [`sack`].
//! - [`cubic`], [`westwood`], [`veno`], [`vegas`]: today's window-clocked senders, each as Linux has it;
//!   they read every ACK through [`Controller::on_ack_event`], with a per-ACK RTT from [`AckSampler`].
//! - [`bbr`]: BBR v1, which models the path from delivery-rate samples ([`rate`]) and paces.
//! - [`eln`]: the ELN reaction of Balakrishnan 1998, which retransmits without a congestion response.
//!
//! The sender keeps what every algorithm shares (SND.UNA, SND.MAX, `recover`, the duplicate-ACK count,
//! the scoreboard, the retransmit timer) and calls these at its events (`recovery.rs`).

pub(crate) mod aimd;
pub(crate) mod bbr;
pub(crate) mod cubic;
pub(crate) mod eln;
pub(crate) mod linux;
pub(crate) mod newreno;
pub(crate) mod rate;
pub(crate) mod reno;
pub(crate) mod sack;
pub(crate) mod tahoe;
pub(crate) mod vegas;
pub(crate) mod veno;
pub(crate) mod westwood;

pub(crate) use linux::{AckRtt, AckSampler};

use crate::config::{TcpConfig, Variant};
use crate::rto::Rto;
use crate::sender::Sender;
use lasthop_wire::Time;
use rate::RateSample;

/// `a · b / c`, rounded up when `ceil`, saturating at `u64::MAX`: in `u64` when the product fits (every
/// ACK's case), else in `u128`, the same value either way. A `u128` division is a call of some hundred
/// instructions, and BBR and the pacer divide on every ACK and every segment.
#[inline]
pub(crate) fn mul_div(a: u64, b: u64, c: u64, ceil: bool) -> u64 {
    let c = c.max(1);
    match a.checked_mul(b) {
        Some(p) if ceil => p.div_ceil(c),
        Some(p) => p / c,
        None => {
            let p = u128::from(a) * u128::from(b);
            let q = if ceil { p.div_ceil(u128::from(c)) } else { p / u128::from(c) };
            q.min(u128::from(u64::MAX)) as u64
        }
    }
}

/// What a [`Controller`] reacts to when the sender learns of a loss.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CongestionEvent {
    /// The duplicate ACKs reached the threshold (or SACK showed the loss sooner): fast retransmit.
    FastRetransmit {
        /// RFC 5681 eq. 4 as configured (`TcpConfig::ssthresh_from`): half the flight, at least 2·MSS.
        halved_flight: u32,
    },
    /// Go-back-N from SND.UNA: the retransmit timer expired, or Caceres 1995's handoff signal did what it
    /// would (`Sender::retransmit_now`).
    Timeout {
        /// As for [`FastRetransmit`](Self::FastRetransmit).
        halved_flight: u32,
    },
    /// Balakrishnan 1998's ELN: the receiver's base station reported the segment at SND.UNA lost to wireless
    /// corruption, and it is being retransmitted. Not a sign of congestion.
    Eln,
}

/// One ACK as a controller that measures the path sees it (Linux's `pkts_acked` and `in_ack_event`),
/// outside recovery and during it, duplicate ACKs included.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct AckEvent {
    /// SND.UNA after the ACK (offset).
    pub una: u64,
    /// SND.NXT after the ACK: the next new byte the sender will send (offset).
    pub nxt: u64,
    /// Bytes the cumulative ACK advanced; 0 for a duplicate ACK.
    pub acked: u64,
    /// The RTT this ACK measured, nanoseconds ([`AckSampler`]): none for a duplicate ACK or one that
    /// acknowledges retransmitted data (Karn).
    pub rtt_ns: Option<u64>,
}

/// A congestion controller: the window the sender may have outstanding, and how it moves.
pub(crate) trait Controller {
    /// The congestion window, bytes (during recovery as the [`Recovery`] set it).
    fn window(&self) -> u32;

    /// The slow-start threshold, bytes.
    fn ssthresh(&self) -> u32;

    /// Bytes per second to pace at, for a controller that paces; the classic ones send on ACK clocking.
    fn pacing_rate(&self) -> Option<u64> {
        None
    }

    /// Segments a paced sender may send back to back at one release, as one TSO burst (Linux's
    /// `tso_segs_goal`); the next release is the burst's bytes at the pacing rate later.
    fn pacing_burst(&self) -> u32 {
        1
    }

    /// The connection is set up and the effective MSS known: start from the initial window.
    fn start(&mut self, mss: u32);

    /// `acked` new bytes were cumulatively acknowledged outside recovery. `rtt` holds the estimator,
    /// already updated with this ACK's sample if it gave one.
    fn on_ack(&mut self, now: Time, acked: u64, rtt: &Rto);

    /// A loss was detected; cut the window as the event calls for.
    fn on_congestion_event(&mut self, now: Time, event: CongestionEvent);

    /// Loss recovery sets the window of its phase (Reno's inflation, NewReno's partial deflation,
    /// Tahoe's one segment).
    fn set_window(&mut self, cwnd: u32);

    /// Whether the controller reads every ACK ([`on_ack_event`](Self::on_ack_event)); the sender then
    /// keeps the send times a per-ACK RTT needs. The classic controllers do not, and pay nothing.
    fn wants_ack_events(&self) -> bool {
        false
    }

    /// Every ACK, before [`on_ack`](Self::on_ack) for a new one outside recovery: what it acknowledged
    /// and the RTT it measured. Called only when [`wants_ack_events`](Self::wants_ack_events).
    fn on_ack_event(&mut self, _now: Time, _ack: &AckEvent) {}

    /// Whether the controller models the path from delivery-rate samples
    /// ([`on_rate_sample`](Self::on_rate_sample)); the sender then keeps the per-segment snapshots they
    /// need ([`rate::DeliveryRate`]).
    fn wants_rate_samples(&self) -> bool {
        false
    }

    /// Every ACK, after loss recovery has processed it (Linux's `cong_control`): what it delivered, the
    /// rate it measured, and `srtt_ns`, the smoothed RTT. Called only when
    /// [`wants_rate_samples`](Self::wants_rate_samples).
    fn on_rate_sample(&mut self, _now: Time, _rs: &RateSample, _srtt_ns: Option<u64>) {}
}

/// Every congestion controller, dispatched statically.
#[derive(Debug, Clone)]
pub(crate) enum AnyController {
    Aimd(aimd::Aimd),
    Cubic(cubic::Cubic),
    Westwood(westwood::Westwood),
    Veno(veno::Veno),
    Vegas(vegas::Vegas),
    Bbr(bbr::Bbr),
}

/// Binds `$c` to the controller inside `$any` and evaluates `$body`.
macro_rules! each_controller {
    ($any:expr, $c:ident => $body:expr) => {
        match $any {
            AnyController::Aimd($c) => $body,
            AnyController::Cubic($c) => $body,
            AnyController::Westwood($c) => $body,
            AnyController::Veno($c) => $body,
            AnyController::Vegas($c) => $body,
            AnyController::Bbr($c) => $body,
        }
    };
}

impl AnyController {
    /// The controller a variant runs: the classic ones grow their window by slow start and congestion
    /// avoidance, today's senders by their own rules.
    pub(crate) fn for_variant(cfg: &TcpConfig, mss: u32) -> AnyController {
        match cfg.variant {
            Variant::Tahoe | Variant::Reno | Variant::NewReno | Variant::Sack => {
                AnyController::Aimd(aimd::Aimd::new(cfg, mss))
            }
            Variant::Cubic => AnyController::Cubic(cubic::Cubic::new(cfg, mss)),
            Variant::Westwood => AnyController::Westwood(westwood::Westwood::new(cfg, mss)),
            Variant::Veno => AnyController::Veno(veno::Veno::new(cfg, mss)),
            Variant::Vegas => AnyController::Vegas(vegas::Vegas::new(cfg, mss)),
            Variant::Bbr => AnyController::Bbr(bbr::Bbr::new(cfg, mss)),
        }
    }
}

impl Controller for AnyController {
    #[inline]
    fn window(&self) -> u32 {
        each_controller!(self, c => c.window())
    }
    #[inline]
    fn ssthresh(&self) -> u32 {
        each_controller!(self, c => c.ssthresh())
    }
    #[inline]
    fn pacing_rate(&self) -> Option<u64> {
        each_controller!(self, c => c.pacing_rate())
    }
    #[inline]
    fn pacing_burst(&self) -> u32 {
        each_controller!(self, c => c.pacing_burst())
    }
    #[inline]
    fn start(&mut self, mss: u32) {
        each_controller!(self, c => c.start(mss))
    }
    #[inline]
    fn on_ack(&mut self, now: Time, acked: u64, rtt: &Rto) {
        each_controller!(self, c => c.on_ack(now, acked, rtt))
    }
    #[inline]
    fn on_congestion_event(&mut self, now: Time, event: CongestionEvent) {
        each_controller!(self, c => c.on_congestion_event(now, event))
    }
    #[inline]
    fn set_window(&mut self, cwnd: u32) {
        each_controller!(self, c => c.set_window(cwnd))
    }
    #[inline]
    fn wants_ack_events(&self) -> bool {
        each_controller!(self, c => c.wants_ack_events())
    }
    #[inline]
    fn on_ack_event(&mut self, now: Time, ack: &AckEvent) {
        each_controller!(self, c => c.on_ack_event(now, ack))
    }
    #[inline]
    fn wants_rate_samples(&self) -> bool {
        each_controller!(self, c => c.wants_rate_samples())
    }
    #[inline]
    fn on_rate_sample(&mut self, now: Time, rs: &RateSample, srtt_ns: Option<u64>) {
        each_controller!(self, c => c.on_rate_sample(now, rs, srtt_ns))
    }
}

/// What a new cumulative ACK during recovery leads to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RecoveryAck {
    /// Recovery goes on; the transmission rules send what they allow.
    Continue,
    /// Recovery goes on and the segment now at SND.UNA is lost too: retransmit it at once.
    RetransmitHead,
    /// Recovery is over.
    Over,
}

/// What follows a fast retransmit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AfterFastRetransmit {
    /// Fast recovery, until [`Recovery::on_ack`] answers [`RecoveryAck::Over`] or a timeout ends it.
    Recovery,
    /// No recovery phase: slow start goes on from the highest segment sent.
    SlowStart,
    /// No recovery phase: slow start goes back to SND.UNA and resends what followed the lost segment.
    SlowStartFromUna,
}

/// The segment choice of the sender's transmit path: (offset, data bytes, FIN).
pub(crate) type Segment = (u64, u32, bool);

/// A loss-recovery algorithm: from the fast retransmit to the ACK that ends recovery. Whether recovery
/// is under way is kept by [`LossRecovery`] from the answers of [`on_fast_retransmit`](Self::on_fast_retransmit)
/// and [`on_ack`](Self::on_ack); the methods marked "during recovery" are called only then. A timeout
/// ends any recovery ([`forget`](Self::forget)); what it does to the window is the [`Controller`]'s.
pub(crate) trait Recovery {
    /// Outside recovery: whether the sender's evidence already shows the segment at SND.UNA lost before
    /// the duplicate-ACK threshold (RFC 6675 §5: IsLost(SND.UNA)).
    fn lost_before_threshold(&self, _sender: &Sender) -> bool {
        false
    }

    /// Fast retransmit of the segment at SND.UNA = `una`, after the controller's cut
    /// ([`CongestionEvent::FastRetransmit`]): set the window the next phase starts with, and say which.
    fn on_fast_retransmit(&mut self, cc: &mut AnyController, una: u64, mss: u32, dupthresh: u32)
        -> AfterFastRetransmit;

    /// During recovery: a duplicate ACK.
    fn on_dupack(&mut self, _cc: &mut AnyController, _mss: u32) {}

    /// During recovery: `acked` new bytes were cumulatively acknowledged, SND.UNA is now `una`, and
    /// recovery began with SND.MAX at `recover`.
    fn on_ack(&mut self, cc: &mut AnyController, una: u64, recover: u64, acked: u64, mss: u32) -> RecoveryAck;

    /// During recovery: data up to `end` was just retransmitted.
    fn on_retransmit(&mut self, _end: u64) {}

    /// A go-back to SND.UNA = `una` (timeout or handoff): any recovery ends and its state is forgotten.
    fn forget(&mut self, _una: u64) {}

    /// During recovery: the bytes in flight as this algorithm's transmission rule counts them against
    /// cwnd, when it counts them otherwise than SND.NXT − SND.UNA (SACK's `pipe`). For PRR (`crate::prr`).
    fn pipe(&self, _sender: &Sender) -> Option<u64> {
        None
    }

    /// During recovery: the next segment to send (the retransmission of a lost one, new data, or none).
    /// Outside recovery the sender's ordinary window rules choose.
    fn next_segment(&self, sender: &Sender) -> Option<Segment> {
        sender.next_in_window()
    }
}

/// Every loss-recovery algorithm, dispatched statically.
#[derive(Debug, Clone)]
pub(crate) enum AnyRecovery {
    Tahoe(tahoe::Tahoe),
    Reno(reno::Reno),
    NewReno(newreno::NewReno),
    Sack(sack::Sack),
}

/// Binds `$r` to the algorithm inside `$any` and evaluates `$body`.
macro_rules! each_recovery {
    ($any:expr, $r:ident => $body:expr) => {
        match $any {
            AnyRecovery::Tahoe($r) => $body,
            AnyRecovery::Reno($r) => $body,
            AnyRecovery::NewReno($r) => $body,
            AnyRecovery::Sack($r) => $body,
        }
    };
}

impl AnyRecovery {
    /// The recovery a variant runs once the handshake said whether the peer agreed to SACK
    /// (`sack_ok`); SND.UNA is `una`. SACK recovery without the peer's agreement is NewReno.
    pub(crate) fn for_variant(cfg: &TcpConfig, sack_ok: bool, una: u64) -> AnyRecovery {
        match cfg.variant {
            Variant::Tahoe => AnyRecovery::Tahoe(tahoe::Tahoe::new(cfg)),
            Variant::Reno => AnyRecovery::Reno(reno::Reno),
            Variant::NewReno => AnyRecovery::NewReno(newreno::NewReno::default()),
            Variant::Sack if sack_ok => AnyRecovery::Sack(sack::Sack::new(una)),
            Variant::Sack => AnyRecovery::NewReno(newreno::NewReno::default()),
            // Today's senders recover as Linux does without PRR: by SACK when the peer agreed to it
            // (`[tcp] sack = true`), else NewReno; both end recovery at the controller's ssthresh.
            // BBR too, whose controller sets the window itself ([`bbr`]).
            Variant::Cubic | Variant::Westwood | Variant::Veno | Variant::Vegas | Variant::Bbr if sack_ok => {
                AnyRecovery::Sack(sack::Sack::new(una))
            }
            Variant::Cubic | Variant::Westwood | Variant::Veno | Variant::Vegas | Variant::Bbr => {
                AnyRecovery::NewReno(newreno::NewReno::default())
            }
        }
    }
}

/// The sender's loss recovery: the algorithm, and whether a recovery phase is under way. Outside
/// recovery (nearly every ACK) nothing is dispatched: the sender runs its ordinary rules.
#[derive(Debug, Clone)]
pub(crate) struct LossRecovery {
    in_recovery: bool,
    algorithm: AnyRecovery,
}

impl LossRecovery {
    pub(crate) fn new(algorithm: AnyRecovery) -> LossRecovery {
        LossRecovery { in_recovery: false, algorithm }
    }

    /// In fast recovery (Tahoe never is).
    #[inline]
    pub(crate) fn in_recovery(&self) -> bool {
        self.in_recovery
    }

    pub(crate) fn lost_before_threshold(&self, sender: &Sender) -> bool {
        each_recovery!(&self.algorithm, r => r.lost_before_threshold(sender))
    }

    /// The fast retransmit's phase begins; true when sending goes back to SND.UNA.
    pub(crate) fn on_fast_retransmit(&mut self, cc: &mut AnyController, una: u64, mss: u32, dupthresh: u32) -> bool {
        let next = each_recovery!(&mut self.algorithm, r => r.on_fast_retransmit(cc, una, mss, dupthresh));
        self.in_recovery = next == AfterFastRetransmit::Recovery;
        next == AfterFastRetransmit::SlowStartFromUna
    }

    /// A duplicate ACK; only called during recovery.
    pub(crate) fn on_dupack(&mut self, cc: &mut AnyController, mss: u32) {
        each_recovery!(&mut self.algorithm, r => r.on_dupack(cc, mss))
    }

    /// A new cumulative ACK; only called during recovery.
    pub(crate) fn on_ack(
        &mut self,
        cc: &mut AnyController,
        una: u64,
        recover: u64,
        acked: u64,
        mss: u32,
    ) -> RecoveryAck {
        let next = each_recovery!(&mut self.algorithm, r => r.on_ack(cc, una, recover, acked, mss));
        if next == RecoveryAck::Over {
            self.in_recovery = false;
        }
        next
    }

    #[inline]
    pub(crate) fn on_retransmit(&mut self, end: u64) {
        if self.in_recovery {
            each_recovery!(&mut self.algorithm, r => r.on_retransmit(end))
        }
    }

    pub(crate) fn forget(&mut self, una: u64) {
        self.in_recovery = false;
        each_recovery!(&mut self.algorithm, r => r.forget(una))
    }

    /// The bytes in flight as the transmission rules count them now: during recovery the algorithm's own
    /// count where it has one ([`Recovery::pipe`]), else SND.NXT − SND.UNA.
    pub(crate) fn in_flight(&self, sender: &Sender) -> u64 {
        match self.in_recovery.then(|| self.pipe(sender)).flatten() {
            Some(pipe) => pipe,
            None => sender.nxt - sender.una,
        }
    }

    /// During recovery: the flight as the algorithm counts it ([`Recovery::pipe`]).
    pub(crate) fn pipe(&self, sender: &Sender) -> Option<u64> {
        each_recovery!(&self.algorithm, r => r.pipe(sender))
    }

    #[inline]
    pub(crate) fn next_segment(&self, sender: &Sender) -> Option<Segment> {
        if self.in_recovery {
            each_recovery!(&self.algorithm, r => r.next_segment(sender))
        } else {
            sender.next_in_window()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::mul_div;

    /// The u64 path and the u128 one give the quotient of the exact product, rounded as asked.
    #[test]
    fn mul_div_is_exact_on_both_paths() {
        let exact = |a: u64, b: u64, c: u64| (u128::from(a) * u128::from(b) / u128::from(c)) as u64;
        assert_eq!(mul_div(250_000, 1_000_000_000, 7, false), exact(250_000, 1_000_000_000, 7));
        assert_eq!((mul_div(10, 1, 3, false), mul_div(10, 1, 3, true), mul_div(9, 1, 3, true)), (3, 4, 3));
        assert_eq!(mul_div(u64::MAX, 3, 6, false), u64::MAX / 2, "the product overflows a u64");
        assert_eq!(mul_div(u64::MAX, 3, 6, true), u64::MAX / 2 + 1);
        assert_eq!(mul_div(u64::MAX, u64::MAX, 1, false), u64::MAX, "saturates");
        assert_eq!(mul_div(5, 5, 0, false), 25, "a zero divisor is read as 1");
    }
}

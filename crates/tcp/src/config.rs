//! Configuration and counters of the TCP endpoints. Defaults follow the 4.4BSD stack of Balakrishnan 1995
//! (MSS 1460, 64 KB window, 500 ms slow timer, 200 ms delayed ACK, Reno).

use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Which sender runs: a loss-recovery algorithm with Reno's window growth, or one of today's congestion
/// controls (with NewReno's recovery, or SACK's when `sack` is on and the peer agrees).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Variant {
    /// Fast retransmit, then slow start from one segment (4.3BSD-Tahoe).
    Tahoe,
    /// Fast retransmit and fast recovery (RFC 5681), leaving recovery on the first new ACK.
    #[default]
    Reno,
    /// Reno whose recovery survives partial ACKs (RFC 6582).
    NewReno,
    /// SACK-based conservative loss recovery (RFC 2018, RFC 6675).
    Sack,
    /// CUBIC with HyStart (RFC 9438; Linux `tcp_cubic.c`).
    Cubic,
    /// Westwood+: ssthresh from the estimated bandwidth after a loss (Mascolo 2001; Linux `tcp_westwood.c`).
    Westwood,
    /// Veno: a loss with a small backlog is taken as random and cuts to 4/5 (Fu 2003; Linux `tcp_veno.c`).
    Veno,
    /// Vegas: the window follows the RTT's growth over its base (Brakmo 1995; Linux `tcp_vegas.c`).
    Vegas,
    /// BBR v1: paced at the measured bottleneck bandwidth, window twice its product with the least RTT
    /// (Cardwell 2016; Linux `tcp_bbr.c`).
    Bbr,
}

impl Variant {
    pub const ALL: [Variant; 9] = [
        Variant::Tahoe,
        Variant::Reno,
        Variant::NewReno,
        Variant::Sack,
        Variant::Cubic,
        Variant::Westwood,
        Variant::Veno,
        Variant::Vegas,
        Variant::Bbr,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Variant::Tahoe => "tahoe",
            Variant::Reno => "reno",
            Variant::NewReno => "newreno",
            Variant::Sack => "sack",
            Variant::Cubic => "cubic",
            Variant::Westwood => "westwood",
            Variant::Veno => "veno",
            Variant::Vegas => "vegas",
            Variant::Bbr => "bbr",
        }
    }
}

impl std::fmt::Display for Variant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Variant {
    type Err = String;
    fn from_str(s: &str) -> Result<Variant, String> {
        Variant::ALL.into_iter().find(|v| v.as_str().eq_ignore_ascii_case(s)).ok_or_else(|| {
            format!(
                "unknown TCP variant `{s}`, expected one of tahoe, reno, newreno, sack, cubic, westwood, veno, vegas, bbr"
            )
        })
    }
}

/// Whose retransmission timer the sender runs: see [`TcpConfig::timer`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum TimerStyle {
    /// 4.4BSD's: RFC 6298 smoothing of the measured RTT, the timer counted in `tick_ms` ticks of the slow
    /// timer (expiring on a tick boundary), backoff reset by any new ACK.
    #[default]
    Bsd,
    /// ns-2's one-way `Agent/TCP` of Balakrishnan 1998's time (`tcp/tcp.cc`, `TcpAgent::rtt_update`, `rtt_timeout`,
    /// `rtt_backoff`): the RTT is counted in whole `tick_ms` ticks (`tcpTick_`, at least 1) and smoothed in
    /// ns's fixed point (srtt in 1/8, rttvar in 1/4 tick); RTO = (srtt + 4·rttvar) ticks × backoff, capped
    /// at `max_rto_ms`, at least `min_rto_ms` and at least 2 ticks; the timer is exact (no tick alignment);
    /// the backoff doubles up to ×64, past ×8 srtt is folded into rttvar and forgotten, and only a valid RTT
    /// sample resets it (not any new ACK).
    Ns,
    /// Linux's (`net/ipv4/tcp_input.c` `tcp_rtt_estimator`, `tcp_set_rto`): RFC 6298 smoothing of an RTT
    /// sampled on every ACK (the oldest segment it newly acknowledges, Karn's rule kept), with Linux's
    /// variance: a fall in the RTT moves `mdev` with gain 1/32 instead of 1/4, and `rttvar` follows the
    /// largest `mdev` of the last flight, never below `min_rto_ms`; RTO = SRTT + rttvar, at most
    /// `max_rto_ms`. The timer is exact (jiffies, not a slow timer: `tick_ms` must be 0) and only a
    /// valid RTT sample resets the backoff. The `linux` profile's timer.
    Linux,
}

impl std::fmt::Display for TimerStyle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            TimerStyle::Bsd => "bsd",
            TimerStyle::Ns => "ns",
            TimerStyle::Linux => "linux",
        })
    }
}

/// Knobs of both endpoints. Times are milliseconds as `f64` for readable scenario files; they are turned
/// into integer nanoseconds once, when an endpoint is built.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TcpConfig {
    pub variant: Variant,
    /// MSS offered in the SYN; the effective MSS is the smaller of both ends' offers.
    pub mss: u16,
    /// The receiver's advertised window and the sender's cap on its window, in bytes. Window scaling is
    /// not negotiated, so values above 65535 are advertised as 65535.
    pub max_window: u32,
    /// Initial congestion window, in segments.
    pub initial_cwnd: u32,
    /// Initial slow-start threshold, in bytes.
    pub initial_ssthresh: u32,
    /// Granularity of the retransmit timer (BSD's 500 ms slow timer): the RTO is counted in whole ticks
    /// (rounded up) and the timer expires at that many multiples of this (from time 0) after it was armed,
    /// so a 1 s RTO waits 0.5–1 s. 0 gives an exact timer.
    pub tick_ms: f64,
    pub min_rto_ms: f64,
    pub max_rto_ms: f64,
    /// RTO before the first RTT sample (and for the SYN).
    pub initial_rto_ms: f64,
    pub dupack_threshold: u32,
    /// Delay of an ACK for in-order data; 0 disables delayed ACKs.
    pub delayed_ack_ms: f64,
    /// Send delayed ACKs on 4.4BSD's fast timer instead: at the next multiple of `delayed_ack_ms` from time
    /// 0 (`tcp_fasttimo` runs every 200 ms and flushes every pending delayed ACK), so an ACK waits anywhere
    /// from 0 to `delayed_ack_ms`, 100 ms on average, rather than exactly `delayed_ack_ms`. Default false.
    pub delayed_ack_tick: bool,
    /// ACK at once when this many full segments are unacknowledged.
    pub ack_every: u32,
    /// Offer SACK-permitted. A sender with [`Variant::Sack`] offers it regardless.
    pub sack: bool,
    /// Offer RFC 7323 timestamps: carried and echoed (RFC 7323 §4.3's rule for which one), so they take
    /// option space. The BSD and ns timers still time one segment at a time; Linux's timer also takes an
    /// ACK's RTT from the echo where Karn's rule gives none (an ACK of retransmitted data), resetting the
    /// backoff, as `tcp_ack_update_rtt` does.
    pub timestamps: bool,
    /// ELN-aware sender (Balakrishnan 1998 §3, "ELN Implementation"): an ACK with the ELN bit set reports a loss
    /// to wireless corruption; the sender retransmits the missing segment without any congestion response.
    /// The sender also piggybacks its output-queue occupancy (see `Sender::set_output_queue`) on every
    /// packet for the base station's loss classification. Default false: the ELN bit is ignored, as by
    /// an unmodified stack.
    pub eln: bool,
    /// ELN-marked ACKs with one acknowledgment number after which the missing segment is retransmitted
    /// (Balakrishnan 1998: `eln_rexmt_thresh`, "we set its value to 2"). Default 2; 0 is read as 1.
    pub eln_rexmt_thresh: u32,
    /// Handoff-aware sender (Caceres 1995, "Fast Retransmissions", Fig. 9 (b) "Transmitter on the SH": the
    /// mobile receiver's "specially marked TCP ACK"): an ACK carrying the handoff mark
    /// ([`lasthop_wire::handoff_option`]) makes the sender go back to SND.UNA at once in slow start, as
    /// [`Sender::retransmit_now`](crate::Sender::retransmit_now) does for a mobile sender, or, when its
    /// timeout already went back for the lost window, resend from SND.UNA with no second window cut
    /// (`Sender::on_handoff_mark` says why). Default false:
    /// the mark is ignored and the ACK processed as an ordinary one, as by an unmodified stack.
    pub handoff_aware: bool,
    /// The retransmission timer's algorithm (default `bsd`; `ns` for ns-2's one-way agents, Balakrishnan 1998 §4:
    /// "We use ns as our simulator"; `linux` for Linux's, the `linux` profile's default).
    pub timer: TimerStyle,
    /// A preset of the behaviours below, as one real stack has them ([`Profile`]); a behaviour set
    /// explicitly wins over the profile's. Default none: every behaviour keeps its own default. The
    /// `linux` profile also owns some plain fields ([`TcpConfig::apply_profile`]).
    pub profile: Option<Profile>,
    /// Limited transmit (RFC 3042; RFC 5681 §3.2 step 1): on the first and second duplicate ACK outside
    /// recovery, send one segment of new data each, beyond cwnd by at most two segments, with cwnd
    /// unchanged; those segments are left out of the flight that sets ssthresh (RFC 5681 §3.2 step 2).
    /// Default false (4.4BSD has none).
    pub limited_transmit: Option<bool>,
    /// What ssthresh halves after a loss ([`SsthreshFrom`]). Default `snd_max` (SND.MAX − SND.UNA).
    pub ssthresh_from: Option<SsthreshFrom>,
    /// Which duplicate ACKs may start a second fast retransmit for losses of one window
    /// ([`RecoverGuard`]). Default by variant: `careful` for newreno, sack and today's senders (cubic, westwood,
    /// veno, vegas, bbr), `none` for tahoe and reno.
    pub recover_guard: Option<RecoverGuard>,
    /// The receiver acknowledges this many of the connection's first in-order data segments at once,
    /// not delayed (Linux's quick-ACK mode at the first data, `tcp_event_data_recv`: up to
    /// `TCP_MAX_QUICKACKS` = 16). Default 0: every one may be delayed, as by 4.4BSD.
    pub quick_acks: Option<u32>,
    /// Proportional Rate Reduction during fast recovery (RFC 6937; Linux `tcp_cwnd_reduction`): the
    /// window falls to ssthresh in proportion to the data delivered instead of Reno's halving and
    /// inflation. Default false; true with the `linux` profile.
    pub prr: Option<bool>,
    /// RACK-TLP loss detection (RFC 8985; Linux `tcp_recovery.c`, `tcp_send_loss_probe`) when the peer
    /// agrees to SACK: time-based loss marking with a reordering window of min_rtt/4, and a tail loss
    /// probe at 2·SRTT. Default false; true with the `linux` profile.
    pub rack_tlp: Option<bool>,
    /// Slow start and congestion avoidance count the segments each ACK covers (RFC 3465's byte counting
    /// as Linux does it, in packets: `tcp_slow_start(tp, acked)` adds one segment per segment acknowledged
    /// up to ssthresh, `tcp_cong_avoid_ai(tp, tp->snd_cwnd, acked)` one per window of them), instead of
    /// 4.4BSD's one segment, or MSS²/cwnd, per ACK whatever it covers. With delayed ACKs (one per two
    /// segments) it doubles the growth. For the classic variants (tahoe, reno, newreno, sack); today's
    /// senders always count, as their Linux modules do. Default false; true with the `linux` profile.
    pub count_acked_segments: Option<bool>,
    /// Whose acknowledgment rules the receiver follows ([`AckRules`]). Default `bsd`; `linux` with the
    /// `linux` profile.
    pub ack_rules: Option<AckRules>,
    /// What resets the retransmit timer's exponential backoff ([`BackoffReset`]). Default by `timer`:
    /// `new_ack` for `bsd`, `rtt_sample` for `ns`.
    pub rto_backoff_reset: Option<BackoffReset>,
    /// Whether a fast retransmission restarts a running retransmit timer ([`RtoRestart`]). Default
    /// `retransmit` (it does, as in 4.4BSD).
    pub rto_restart: Option<RtoRestart>,
    /// Persist timer bounds (4.4BSD `TCPTV_PERSMIN` 5 s and `TCPTV_PERSMAX` 60 s, `tcp_setpersist`): while
    /// the peer's window is zero with data waiting, the sender probes it with one byte after an interval
    /// of the RTO (RFC 9293 §3.8.6.1: the first probe after one RTO) doubled per probe already sent, clamped
    /// to these. Probes count no timeout and leave cwnd alone.
    pub persist_min_ms: f64,
    pub persist_max_ms: f64,
    /// Tahoe's fast retransmit also goes back to SND.UNA: after the retransmission, slow start resends
    /// the segments that followed it, "although [they] are already transmitted before" (Eom 2002 §3.2,
    /// Fig. 11: the Tahoe whose erroneous fast retransmits recur every round trip), as ns-2's
    /// `TcpAgent::dupack_action` does (`reset_rtx_timer(0, 0)`: "mild is 0 for timeouts and Tahoe dup
    /// acks", so `t_seqno_ = highest_ack_ + 1`). Default false: SND.NXT is kept, as BSD's fast retransmit
    /// restores it after sending the one segment (`if (SEQ_GT(onxt, tp->snd_nxt)) tp->snd_nxt = onxt`),
    /// and slow start goes on from the highest segment sent. Other variants ignore it.
    pub tahoe_go_back: bool,
    /// BBR's ACK-aggregation allowance (Linux 4.19 on, `bbr_update_ack_aggregation` and
    /// `bbr_ack_aggregation_cwnd` in `net/ipv4/tcp_bbr.c`): once the pipe is full, the window target also
    /// holds the most data recently acknowledged beyond what the bandwidth estimate expected (the larger of
    /// two 5-round-trip windows of it), at most 100 ms of data at that estimate and at most cwnd. Default
    /// true, as today's kernels; false gives Linux 4.9's BBR (Cardwell 2016). BBR only.
    pub bbr_ack_aggregation: bool,
}

/// Presets of the behaviours real stacks differ on, each from its source. Fields not listed are left as
/// configured. `bsd44`: 4.4BSD-Lite as the source papers measured it (`netinet/tcp_input.c`,
/// `tcp_timers.c`, `tcp_output.c`; Wright & Stevens, *TCP/IP Illustrated* vol. 2, chs. 25–29). `linux`: the
/// Linux stack's Reno (`net/ipv4/tcp_input.c`, `tcp_output.c`, `tcp_cong.c`). `rfc`: the standards as
/// written (RFC 3042, RFC 5681, RFC 6582, RFC 6298).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Profile {
    /// No limited transmit; ssthresh = min(cwnd, snd_wnd)/2 in whole segments (`tcp_timers` REXMT and the
    /// fast retransmit of `tcp_input`); no guard against a second fast retransmit (Reno predates
    /// NewReno); every first data segment waits for the delayed ACK (`TF_DELACK`); the backoff
    /// (`t_rxtshift`) is reset only by an RTT sample (`tcp_xmit_timer`); a fast retransmit clears the
    /// retransmit timer and `tcp_output` restarts it.
    Bsd44,
    /// Limited transmit (implicitly: `tcp_add_reno_sack` counts each duplicate ACK as a segment that left,
    /// so `tcp_packets_in_flight` lets one new segment go per duplicate ACK); ssthresh = cwnd/2 in
    /// segments (`tcp_reno_ssthresh`); the careful guard ("Hold old state until something *above*
    /// high_seq is ACKed ... to prevent false fast retransmits (RFC2582)", `tcp_try_undo_recovery`);
    /// quick ACKs for the first 16 data segments (`tcp_event_data_recv` → `tcp_incr_quickack`, with
    /// `TCP_MAX_QUICKACKS` 16 and a 64 KB window); backoff reset by an RTT sample
    /// (`tcp_ack_update_rtt`); the timer re-armed when the head is retransmitted
    /// (`tcp_xmit_retransmit_queue`); Linux's receiver rules ([`AckRules::Linux`]); PRR in recovery
    /// (`tcp_cwnd_reduction`, RFC 6937); RACK-TLP loss detection with SACK (RFC 8985); window growth per
    /// segment acknowledged (RFC 3465; `tcp_slow_start`, `tcp_cong_avoid_ai`). Its plain fields ([`TcpConfig::apply_profile`]): an initial window
    /// of 10 segments (RFC 6928, `TCP_INIT_CWND`), Linux's retransmit timer ([`TimerStyle::Linux`]) with
    /// `TCP_RTO_MIN` 200 ms, `TCP_TIMEOUT_INIT` 1 s and `TCP_RTO_MAX` 120 s.
    Linux,
    /// Limited transmit (RFC 5681 §3.2 step 1 "SHOULD", RFC 3042); ssthresh from the flight size
    /// (RFC 5681 eq. 4); the careful guard (RFC 6582 §3.2 step 2); no quick ACKs (RFC 5681 §4.2 asks
    /// only for an ACK every second segment and within 500 ms); backoff collapsed by a new RTT sample
    /// (RFC 6298 §5, the note after (5.7)); the timer started by a retransmission only when it is not
    /// running (RFC 6298 (5.1)) and restarted by new ACKs (5.3).
    Rfc,
}

/// What the sender halves for ssthresh after a loss (RFC 5681 eq. 4: max(FlightSize/2, 2·SMSS)); at
/// least two segments in every case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SsthreshFrom {
    /// SND.MAX − SND.UNA: everything ever sent and not acknowledged, including data a timeout has
    /// already written off (this simulator's original rule).
    SndMax,
    /// RFC 5681's FlightSize read as data outstanding and not yet known to have left the network:
    /// SND.NXT − SND.UNA (after a go-back, what lies beyond SND.NXT was written off by the timeout) less
    /// the bytes SACKed.
    Flight,
    /// 4.4BSD: min(cwnd, peer's window) rounded down to whole segments (`win = min(tp->snd_wnd,
    /// tp->snd_cwnd) / 2 / tp->t_maxseg`, `tcp_timers.c` and `tcp_input.c`); RFC 5681 §3.1 warns that
    /// cwnd may exceed what is in flight.
    Window,
    /// Linux's Reno: cwnd in whole segments (`tcp_reno_ssthresh`: `max(tp->snd_cwnd >> 1U, 2U)`). In Reno
    /// recovery this simulator's cwnd is the inflated one, unlike Linux's (PRR).
    Cwnd,
}

/// Whether duplicate ACKs that do not cover `recover` (the highest sequence sent when the last fast
/// retransmit or timeout began) may start another fast retransmit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RecoverGuard {
    /// Never (RFC 6582 §3.2 step 2, the "careful" variant of RFC 2582 §6): those losses were already
    /// answered.
    Careful,
    /// Only when cwnd > SMSS and the last advance of the cumulative ACK was at most 4·SMSS (RFC 6582 §4.1,
    /// the ACK heuristic: duplicate ACKs after a timeout that follow a small advance are a new loss,
    /// not the receiver's answer to go-back-N retransmissions of data it already had).
    AckHeuristic,
    /// Always: the third duplicate ACK starts a fast retransmit (4.4BSD Reno, RFC 2582's "less careful"
    /// variant).
    None,
}

/// The receiver's acknowledgment rules beyond what every stack shares (an immediate ACK for an
/// out-of-order segment, for one that fills a hole, and for the second full segment).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AckRules {
    /// 4.4BSD: a fixed delayed-ACK timer of `delayed_ack_ms` (or BSD's fast timer, `delayed_ack_tick`);
    /// `quick_acks` for the connection's first segments only.
    Bsd,
    /// Linux (`tcp_event_data_recv`, `__tcp_ack_snd_check`, `tcp_send_delayed_ack`): the delayed-ACK
    /// timeout `ato` starts at `TCP_ATO_MIN` 40 ms and follows the gaps between in-order segments, at
    /// most `TCP_DELACK_MAX` 200 ms; quick-ACK mode (`quick_acks` segments, at most the window over two
    /// segments) at the first data, after a gap longer than the RTO and after a duplicate segment.
    Linux,
}

/// What resets the retransmit timer's backoff after a timeout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BackoffReset {
    /// Any ACK of new data, including the ACK of a retransmission (this simulator's original `bsd` rule).
    NewAck,
    /// Only a valid RTT sample, so never the ACK of a retransmitted segment (Karn): 4.4BSD
    /// `tcp_xmit_timer` (`t_rxtshift = 0`), RFC 6298 §5, ns-2 `newack`.
    RttSample,
}

/// What (re)starts a running retransmit timer besides a new ACK (RFC 6298 (5.3)) and a timeout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RtoRestart {
    /// A fast retransmission restarts it: 4.4BSD's fast retransmit zeroes `t_timer[TCPT_REXMT]` and
    /// `tcp_output` arms it anew; Linux re-arms it when the head is retransmitted.
    Retransmit,
    /// RFC 6298 (5.1): a retransmission starts the timer only when it is not running; and (5.7) after
    /// the SYN timed out, an RTO below 3 s is raised to 3 s for the data until the first RTT sample.
    Rfc6298,
}

/// The behaviours of [`TcpConfig`] that real stacks differ on, resolved: explicit field, else the
/// profile's, else the default that keeps this simulator's original results.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Behaviours {
    pub limited_transmit: bool,
    pub ssthresh_from: SsthreshFrom,
    pub recover_guard: RecoverGuard,
    pub quick_acks: u32,
    pub ack_rules: AckRules,
    pub prr: bool,
    pub rack_tlp: bool,
    pub count_acked_segments: bool,
    pub rto_backoff_reset: BackoffReset,
    pub rto_restart: RtoRestart,
}

impl Profile {
    fn behaviours(self) -> Behaviours {
        match self {
            Profile::Bsd44 => Behaviours {
                limited_transmit: false,
                ssthresh_from: SsthreshFrom::Window,
                recover_guard: RecoverGuard::None,
                quick_acks: 0,
                ack_rules: AckRules::Bsd,
                prr: false,
                rack_tlp: false,
                count_acked_segments: false,
                rto_backoff_reset: BackoffReset::RttSample,
                rto_restart: RtoRestart::Retransmit,
            },
            Profile::Linux => Behaviours {
                limited_transmit: true,
                ssthresh_from: SsthreshFrom::Cwnd,
                recover_guard: RecoverGuard::Careful,
                quick_acks: 16,
                ack_rules: AckRules::Linux,
                prr: true,
                rack_tlp: true,
                count_acked_segments: true,
                rto_backoff_reset: BackoffReset::RttSample,
                rto_restart: RtoRestart::Retransmit,
            },
            Profile::Rfc => Behaviours {
                limited_transmit: true,
                ssthresh_from: SsthreshFrom::Flight,
                recover_guard: RecoverGuard::Careful,
                quick_acks: 0,
                ack_rules: AckRules::Bsd,
                prr: false,
                rack_tlp: false,
                count_acked_segments: false,
                rto_backoff_reset: BackoffReset::RttSample,
                rto_restart: RtoRestart::Rfc6298,
            },
        }
    }
}

/// What the `linux` profile gives a plain field left unset, from `include/net/tcp.h`.
const LINUX_INITIAL_CWND: u32 = 10; // TCP_INIT_CWND (RFC 6928)
const LINUX_MIN_RTO_MS: f64 = 200.0; // TCP_RTO_MIN, HZ / 5
const LINUX_INITIAL_RTO_MS: f64 = 1000.0; // TCP_TIMEOUT_INIT (RFC 6298 (2.1))
const LINUX_MAX_RTO_MS: f64 = 120_000.0; // TCP_RTO_MAX
const LINUX_DELAYED_ACK_MS: f64 = 40.0; // TCP_DELACK_MIN, TCP_ATO_MIN: where `ato` starts

impl TcpConfig {
    /// The defaults of `profile`: [`TcpConfig::default`] with the profile set and applied.
    pub fn with_profile(profile: Profile) -> TcpConfig {
        let mut c = TcpConfig { profile: Some(profile), ..TcpConfig::default() };
        c.apply_profile(|_| false).expect("nothing given, nothing to contradict");
        c
    }

    /// Gives the plain fields the profile owns the profile's values, unless the configuration gave them
    /// (`given(field)`, for a file: the key is present); a given value the profile cannot run with is an
    /// error naming the field. Only `linux` owns plain fields: `initial_cwnd`, `min_rto_ms`,
    /// `initial_rto_ms` and `max_rto_ms` take Linux's values unless given (a route's `initcwnd`,
    /// `rto_min` set them on a real host), and `delayed_ack_ms` becomes 40 ms, where Linux's `ato` starts;
    /// while `timer` is `linux` and `tick_ms` 0 (Linux's timers run on jiffies: a slow-timer tick, BSD's
    /// fast timer for delayed ACKs or ns's timer contradicts the profile).
    pub fn apply_profile(&mut self, given: impl Fn(&str) -> bool) -> Result<(), (&'static str, String)> {
        if self.profile != Some(Profile::Linux) {
            return Ok(());
        }
        if given("timer") && self.timer != TimerStyle::Linux {
            return Err(("timer", "profile `linux` runs Linux's retransmit timer: leave `timer` unset".into()));
        }
        if given("tick_ms") && self.tick_ms != 0.0 {
            return Err((
                "tick_ms",
                "profile `linux` has no slow-timer tick (Linux's timers run on jiffies): leave `tick_ms` unset".into(),
            ));
        }
        if given("delayed_ack_tick") && self.delayed_ack_tick {
            return Err((
                "delayed_ack_tick",
                "profile `linux` has no fast timer (its delayed ACK is a timer of its own): leave `delayed_ack_tick` unset".into(),
            ));
        }
        self.timer = TimerStyle::Linux;
        self.tick_ms = 0.0;
        if !given("delayed_ack_ms") {
            self.delayed_ack_ms = LINUX_DELAYED_ACK_MS;
        }
        if !given("initial_cwnd") {
            self.initial_cwnd = LINUX_INITIAL_CWND;
        }
        for (field, value, linux) in [
            ("min_rto_ms", &mut self.min_rto_ms, LINUX_MIN_RTO_MS),
            ("initial_rto_ms", &mut self.initial_rto_ms, LINUX_INITIAL_RTO_MS),
            ("max_rto_ms", &mut self.max_rto_ms, LINUX_MAX_RTO_MS),
        ] {
            if !given(field) {
                *value = linux;
            }
        }
        Ok(())
    }

    /// The behaviours in force: each explicit field, else the profile's value, else the default.
    pub fn behaviours(&self) -> Behaviours {
        let p = self.profile.map(Profile::behaviours);
        Behaviours {
            limited_transmit: self.limited_transmit.or(p.map(|p| p.limited_transmit)).unwrap_or(false),
            ssthresh_from: self.ssthresh_from.or(p.map(|p| p.ssthresh_from)).unwrap_or(SsthreshFrom::SndMax),
            recover_guard: self.recover_guard.or(p.map(|p| p.recover_guard)).unwrap_or(match self.variant {
                Variant::NewReno
                | Variant::Sack
                | Variant::Cubic
                | Variant::Westwood
                | Variant::Veno
                | Variant::Vegas
                | Variant::Bbr => RecoverGuard::Careful,
                Variant::Tahoe | Variant::Reno => RecoverGuard::None,
            }),
            quick_acks: self.quick_acks.or(p.map(|p| p.quick_acks)).unwrap_or(0),
            ack_rules: self.ack_rules.or(p.map(|p| p.ack_rules)).unwrap_or(AckRules::Bsd),
            prr: self.prr.or(p.map(|p| p.prr)).unwrap_or(false),
            rack_tlp: self.rack_tlp.or(p.map(|p| p.rack_tlp)).unwrap_or(false),
            count_acked_segments: self.count_acked_segments.or(p.map(|p| p.count_acked_segments)).unwrap_or(false),
            rto_backoff_reset: self.rto_backoff_reset.or(p.map(|p| p.rto_backoff_reset)).unwrap_or(match self.timer {
                TimerStyle::Bsd => BackoffReset::NewAck,
                TimerStyle::Ns | TimerStyle::Linux => BackoffReset::RttSample,
            }),
            rto_restart: self.rto_restart.or(p.map(|p| p.rto_restart)).unwrap_or(RtoRestart::Retransmit),
        }
    }

    /// Range checks of the behaviour and persist fields, and knobs the variant would ignore:
    /// `Err((field, what was expected))`.
    pub fn check_behaviours(&self) -> Result<(), (&'static str, String)> {
        // CUBIC, Westwood+ and Veno set ssthresh by their own rule, not from a halved flight; BBR not at all.
        if self.ssthresh_from.is_some()
            && matches!(self.variant, Variant::Cubic | Variant::Westwood | Variant::Veno | Variant::Bbr)
        {
            return Err((
                "ssthresh_from",
                format!(
                    "no `ssthresh_from` with variant `{}`, which sets ssthresh by its own rule (leave it unset)",
                    self.variant
                ),
            ));
        }
        if self.count_acked_segments.is_some()
            && !matches!(self.variant, Variant::Tahoe | Variant::Reno | Variant::NewReno | Variant::Sack)
        {
            return Err((
                "count_acked_segments",
                format!(
                    "no `count_acked_segments` with variant `{}`, which counts acknowledged segments as its Linux module does (leave it unset)",
                    self.variant
                ),
            ));
        }
        if self.tahoe_go_back
            && !matches!(self.variant, Variant::Tahoe | Variant::Reno | Variant::NewReno | Variant::Sack)
        {
            return Err((
                "tahoe_go_back",
                format!("`tahoe_go_back` is Tahoe's; variant `{}` has no use for it (leave it false)", self.variant),
            ));
        }
        if !self.bbr_ack_aggregation && self.variant != Variant::Bbr {
            return Err((
                "bbr_ack_aggregation",
                format!("`bbr_ack_aggregation` is BBR's; variant `{}` has no use for it (leave it true)", self.variant),
            ));
        }
        let linux = self.profile == Some(Profile::Linux);
        if linux && self.timer != TimerStyle::Linux {
            return Err((
                "timer",
                format!("profile `linux` runs Linux's retransmit timer, not `{}` (leave `timer` unset)", self.timer),
            ));
        }
        if self.timer == TimerStyle::Linux && self.tick_ms != 0.0 {
            return Err((
                "tick_ms",
                format!(
                    "Linux's retransmit timer has no slow-timer tick (it runs on jiffies), got {} ms (leave it unset with profile `linux`, else 0)",
                    self.tick_ms
                ),
            ));
        }
        if self.delayed_ack_tick && self.behaviours().ack_rules == AckRules::Linux {
            return Err((
                "delayed_ack_tick",
                "Linux's acknowledgment rules run their own delayed-ACK timer, not BSD's fast timer (leave it false)"
                    .into(),
            ));
        }
        if self.quick_acks.is_some_and(|n| n > 65_535) {
            return Err(("quick_acks", "expected 0 to 65535 segments".into()));
        }
        let ok = |v: f64| v.is_finite() && v > 0.0 && v <= 3_600_000.0;
        if !ok(self.persist_min_ms) {
            return Err(("persist_min_ms", "expected a time above 0 and at most 3600000 ms".into()));
        }
        if !ok(self.persist_max_ms) || self.persist_max_ms < self.persist_min_ms {
            return Err(("persist_max_ms", "expected a time at least `persist_min_ms` and at most 3600000 ms".into()));
        }
        Ok(())
    }
}

impl Default for TcpConfig {
    fn default() -> TcpConfig {
        TcpConfig {
            variant: Variant::Reno,
            mss: 1460,
            max_window: 65535,
            initial_cwnd: 1,
            initial_ssthresh: 65535,
            tick_ms: 500.0,
            min_rto_ms: 1000.0,
            max_rto_ms: 64000.0,
            initial_rto_ms: 3000.0,
            dupack_threshold: 3,
            delayed_ack_ms: 200.0,
            delayed_ack_tick: false,
            ack_every: 2,
            sack: false,
            timestamps: false,
            eln: false,
            eln_rexmt_thresh: 2,
            handoff_aware: false,
            timer: TimerStyle::Bsd,
            profile: None,
            limited_transmit: None,
            ssthresh_from: None,
            recover_guard: None,
            quick_acks: None,
            ack_rules: None,
            prr: None,
            rack_tlp: None,
            count_acked_segments: None,
            rto_backoff_reset: None,
            rto_restart: None,
            persist_min_ms: 5000.0,
            persist_max_ms: 60000.0,
            tahoe_go_back: false,
            bbr_ack_aggregation: true,
        }
    }
}

/// Longest time a configuration may give, in ms: about 31 years. Every time becomes integer nanoseconds
/// (a `u64` lasts 584 years), and sums of a few such times must not overflow.
pub const MAX_TIME_MS: f64 = 1e12;

impl TcpConfig {
    /// Checks the ranges serde cannot: every value that becomes a count, a size or integer time. Errors
    /// are (field, what was expected), for the caller to place in its file.
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        let positive =
            |v: u32, f: &'static str, what: &str| if v == 0 { Err((f, format!("expected {what}"))) } else { Ok(()) };
        positive(self.max_window, "max_window", "a window of at least 1 byte (0 never lets a byte through)")?;
        positive(self.initial_cwnd, "initial_cwnd", "at least 1 segment")?;
        positive(self.dupack_threshold, "dupack_threshold", "at least 1 duplicate ACK")?;
        positive(self.ack_every, "ack_every", "at least 1 segment")?;
        for (f, v) in [
            ("tick_ms", self.tick_ms),
            ("min_rto_ms", self.min_rto_ms),
            ("max_rto_ms", self.max_rto_ms),
            ("initial_rto_ms", self.initial_rto_ms),
            ("delayed_ack_ms", self.delayed_ack_ms),
        ] {
            if !(v.is_finite() && (0.0..=MAX_TIME_MS).contains(&v)) {
                return Err((f, format!("expected a time from 0 to {MAX_TIME_MS:e} ms, got {v}")));
            }
        }
        if self.min_rto_ms > self.max_rto_ms {
            return Err((
                "min_rto_ms",
                format!("expected at most `max_rto_ms` = {} ms, got {} ms", self.max_rto_ms, self.min_rto_ms),
            ));
        }
        Ok(())
    }
}

/// Milliseconds as configured to whole nanoseconds; negative and NaN become zero.
pub(crate) fn ms(ms: f64) -> Duration {
    let ns = (ms * 1e6).round();
    Duration::from_nanos(if ns.is_nan() || ns <= 0.0 {
        0
    } else if ns >= u64::MAX as f64 {
        u64::MAX
    } else {
        ns as u64
    })
}

/// What a sender did, for the simulator's measurements.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct SenderStats {
    /// Every packet emitted (SYN, data, FIN, pure ACK), first transmissions and retransmissions.
    pub segments_sent: u64,
    pub segments_retransmitted: u64,
    /// Application bytes sent again.
    pub bytes_retransmitted: u64,
    pub timeouts: u64,
    pub fast_retransmits: u64,
    pub dupacks_received: u64,
    /// ACKs with the ELN bit set, processed as such (`TcpConfig::eln` on).
    pub eln_acks_received: u64,
    /// Retransmissions triggered by ELN ACKs, made without a congestion response.
    pub eln_retransmits: u64,
    /// ACKs carrying the handoff mark that found data outstanding (`TcpConfig::handoff_aware` on).
    pub handoff_marks_received: u64,
    /// Packets that could not be read as TCP/IPv4 (truncated, bad header, bad checksum, not TCP).
    pub malformed: u64,
    /// Segments sent by limited transmit (`TcpConfig::limited_transmit`).
    pub limited_transmits: u64,
    /// Times the sender entered persist mode: the peer's window closed with data to send.
    pub persist_entries: u64,
    /// Zero-window probes sent by the persist timer (not counted as retransmissions or timeouts).
    pub persist_probes: u64,
    /// Nanoseconds spent in persist mode, counted when it ends (`Sender::persist_ns` includes a period
    /// still under way).
    pub persist_ns: u64,
}

/// What a receiver did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ReceiverStats {
    /// Segments carrying data or a FIN.
    pub segments_received: u64,
    /// Segments whose data had all been received before.
    pub duplicate_segments: u64,
    pub out_of_order_segments: u64,
    pub acks_sent: u64,
    /// ACKs that repeated the previous acknowledgment number.
    pub dupacks_sent: u64,
    /// ACKs that carried the handoff mark (`Receiver::send_handoff_mark`).
    pub handoff_marks_sent: u64,
    /// ACKs sent because `Receiver::set_window` opened the window.
    pub window_updates_sent: u64,
    pub malformed: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variant_names_round_trip() {
        for v in Variant::ALL {
            assert_eq!(v.to_string().parse::<Variant>().unwrap(), v);
        }
        assert_eq!("NewReno".parse::<Variant>().unwrap(), Variant::NewReno);
        assert_eq!("vegas".parse::<Variant>().unwrap(), Variant::Vegas);
        assert_eq!("BBR".parse::<Variant>().unwrap(), Variant::Bbr);
        assert!("hybla".parse::<Variant>().is_err());
    }

    #[test]
    fn deserializes_with_defaults_and_rejects_unknown_fields() {
        use serde::de::value::{Error, MapDeserializer};
        let d: MapDeserializer<_, Error> = MapDeserializer::new([("variant", "newreno")].into_iter());
        let c = TcpConfig::deserialize(d).unwrap();
        assert_eq!(c, TcpConfig { variant: Variant::NewReno, ..TcpConfig::default() });
        let d: MapDeserializer<_, Error> = MapDeserializer::new([("varient", "sack")].into_iter());
        let e = TcpConfig::deserialize(d).unwrap_err().to_string();
        assert!(e.contains("varient"), "{e}");
        let d: MapDeserializer<_, Error> = MapDeserializer::new([("variant", "cubic")].into_iter());
        assert_eq!(TcpConfig::deserialize(d).unwrap().variant, Variant::Cubic);
        let d: MapDeserializer<_, Error> = MapDeserializer::new([("variant", "bbr")].into_iter());
        assert_eq!(TcpConfig::deserialize(d).unwrap().variant, Variant::Bbr);
        let d: MapDeserializer<_, Error> = MapDeserializer::new([("variant", "hybla")].into_iter());
        assert!(TcpConfig::deserialize(d).is_err());
    }

    #[test]
    fn ms_conversion_is_exact_and_saturating() {
        assert_eq!(ms(500.0), Duration::from_millis(500));
        assert_eq!(ms(0.25), Duration::from_micros(250));
        assert_eq!(ms(-1.0), Duration::ZERO);
        assert_eq!(ms(f64::NAN), Duration::ZERO);
    }
}

#[cfg(test)]
mod validate_tests {
    use super::*;

    /// A field's name and an edit that makes it absurd.
    type Case = (&'static str, fn(&mut TcpConfig));

    #[test]
    fn absurd_values_are_named() {
        assert_eq!(TcpConfig::default().validate(), Ok(()));
        let cases: [Case; 8] = [
            ("max_window", |c| c.max_window = 0),
            ("initial_cwnd", |c| c.initial_cwnd = 0),
            ("dupack_threshold", |c| c.dupack_threshold = 0),
            ("ack_every", |c| c.ack_every = 0),
            ("min_rto_ms", |c| c.min_rto_ms = c.max_rto_ms + 1.0),
            ("max_rto_ms", |c| c.max_rto_ms = 1e300),
            ("tick_ms", |c| c.tick_ms = f64::NAN),
            ("delayed_ack_ms", |c| c.delayed_ack_ms = -1.0),
        ];
        for (field, break_it) in cases {
            let mut c = TcpConfig::default();
            break_it(&mut c);
            assert_eq!(c.validate().map_err(|(f, _)| f), Err(field));
        }
    }

    #[test]
    fn knobs_a_variant_ignores_are_refused_by_name() {
        for v in [Variant::Cubic, Variant::Westwood, Variant::Veno, Variant::Bbr] {
            let c = TcpConfig { variant: v, ssthresh_from: Some(SsthreshFrom::Flight), ..TcpConfig::default() };
            let (field, why) = c.check_behaviours().unwrap_err();
            assert_eq!(field, "ssthresh_from");
            assert!(why.contains(v.as_str()), "{why}");
        }
        let vegas =
            TcpConfig { variant: Variant::Vegas, ssthresh_from: Some(SsthreshFrom::Flight), ..TcpConfig::default() };
        assert_eq!(vegas.check_behaviours(), Ok(()), "Vegas halves the flight after a loss, as Reno");
        for v in Variant::ALL {
            let c = TcpConfig { variant: v, tahoe_go_back: true, ..TcpConfig::default() };
            let today = matches!(v, Variant::Cubic | Variant::Westwood | Variant::Veno | Variant::Vegas | Variant::Bbr);
            assert_eq!(c.check_behaviours().map_err(|(f, _)| f), if today { Err("tahoe_go_back") } else { Ok(()) });
        }
        let linux = TcpConfig { variant: Variant::Cubic, ..TcpConfig::with_profile(Profile::Linux) };
        assert_eq!(linux.check_behaviours(), Ok(()), "a profile's ssthresh_from is not an explicit knob");
    }
}

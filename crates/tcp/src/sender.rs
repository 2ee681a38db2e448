//! The bulk-transfer sender: handshake, segmentation, the window, ACK bookkeeping and the retransmit
//! timer. *How* the sender reacts to loss (duplicate ACKs, partial ACKs, timeouts) lives in
//! `recovery.rs`, which asks the congestion controller and loss recovery of [`crate::cc`] (the ELN-aware
//! retransmission of Balakrishnan 1998 included); this file only routes ELN-marked ACKs there and
//! piggybacks the output-queue option ([`Sender::set_output_queue`]). Persist mode (a
//! zero window from the peer, RFC 9293 §3.8.6.1) runs on its own timer through the same
//! `poll_timeout`/`handle_timeout` contract as the retransmit timer.

use crate::cc::eln::Eln;
use crate::cc::rate::DeliveryRate;
use crate::cc::{AckEvent, AckRtt, AckSampler, AnyController, AnyRecovery, Controller, LossRecovery, Segment};
use crate::config::{ms, Behaviours, RtoRestart, SenderStats, TcpConfig, TimerStyle, Variant};
use crate::pacing::Pacer;
use crate::payload;
use crate::prr::Prr;
use crate::rack::Rack;
use crate::rto::Rto;
use crate::scoreboard::Scoreboard;
use crate::segment::{headers_counted, offset_of, parse_counted, seq_at, ts_now, Incoming};
use bytes::Bytes;
use lasthop_wire::queue_option::{self, QueueOccupancy};
use lasthop_wire::{Headers, SeqNum, TcpFlags, TcpRepr, Time};
use std::net::SocketAddrV4;

/// MSS assumed when the peer's SYN carries no MSS option (RFC 9293 §3.7.1).
const DEFAULT_MSS: u16 = 536;
const TTL: u8 = 64;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Closed,
    SynSent,
    Established,
}

/// Sends `total_bytes` of [`payload`] content, then a FIN, to a [`Receiver`](crate::Receiver).
///
/// A sender made by [`new_open`](Self::new_open) instead keeps its stream open: the application hands it
/// more bytes with [`push`](Self::push) at any time (a persistent-HTTP server answering request after
/// request on one connection, Balakrishnan 1998 §5) and the FIN goes only after [`close`](Self::close). The stream
/// stays one [`payload`] stream, so the receiver's integrity check holds across everything pushed.
///
/// Call [`poll_transmit`](Self::poll_transmit) until it returns `None` after [`connect`](Self::connect)
/// and after every `handle_*` call.
#[derive(Debug)]
pub struct Sender {
    pub(crate) cfg: TcpConfig,
    local: SocketAddrV4,
    remote: SocketAddrV4,
    iss: SeqNum,
    irs: SeqNum,
    total: u64,
    /// The application may still [`push`](Self::push) bytes: no FIN until [`close`](Self::close).
    open: bool,
    state: State,
    /// Effective MSS: the smaller of both ends' offers.
    pub(crate) mss: u32,
    pub(crate) sack_ok: bool,
    ts_ok: bool,
    ts_recent: u32,
    /// Oldest unacknowledged offset (SND.UNA).
    pub(crate) una: u64,
    /// Next offset to send in the ordinary (window-limited) path; below `max` after a timeout (go-back-N).
    pub(crate) nxt: u64,
    /// One past the highest offset ever sent (SND.MAX in BSD, HighData in RFC 6675).
    pub(crate) max: u64,
    peer_wnd: u32,
    /// The congestion controller: cwnd and ssthresh.
    pub(crate) cc: AnyController,
    /// The loss-recovery algorithm and its state.
    pub(crate) recovery: LossRecovery,
    pub(crate) dupacks: u32,
    /// RFC 6582 `recover`: `max` when the last recovery or timeout began.
    pub(crate) recover: u64,
    /// `max` when the sender last went back to SND.UNA in slow start (a timeout or a handoff signal):
    /// while `una` is below it the sender is still resending that window, whose loss has had its
    /// congestion response.
    pub(crate) go_back_max: u64,
    pub(crate) scoreboard: Scoreboard,
    pub(crate) rto: Rto,
    pub(crate) rtx_deadline: Option<Time>,
    /// The one segment being timed, as BSD did: (offset its ACK must reach, when it was sent).
    pub(crate) timing: Option<(u64, Time)>,
    /// Send times for a per-ACK RTT, kept only for a controller that reads every ACK
    /// ([`Controller::wants_ack_events`]) or its rate samples (BBR: the sample's RTT), or for Linux's
    /// retransmit timer, which samples every ACK.
    ack_sampler: Option<AckSampler>,
    /// Delivery-rate snapshots and the pacing release, kept only for a rate-based controller
    /// ([`Controller::wants_rate_samples`], [`Controller::pacing_rate`]; `pacing.rs`).
    pub(crate) rate: Option<DeliveryRate>,
    pub(crate) pacer: Option<Pacer>,
    /// The controller reads every ACK ([`Controller::wants_ack_events`]), asked once here rather than
    /// per ACK: the classic controllers pay nothing for the others'.
    per_ack_events: bool,
    syn_pending: bool,
    ack_pending: bool,
    /// A single retransmission ordered by loss recovery (fast retransmit, NewReno partial ACK).
    pub(crate) rexmit_pending: Option<u64>,
    ident: u16,
    pub(crate) stats: SenderStats,
    last_sent: Option<(u64, bool)>,
    /// The host's interface output-queue occupancy, piggybacked on every packet when ELN is on; `None`
    /// until the host first reports it (then no option is sent: the sender does not claim to know).
    out_queue: Option<QueueOccupancy>,
    /// The ELN reaction (Balakrishnan 1998), consulted only with `cfg.eln` on.
    pub(crate) eln: Eln,
    /// The behaviours real stacks differ on, resolved from `cfg` once.
    pub(crate) beh: Behaviours,
    /// Proportional Rate Reduction's state, with `prr` on (`crate::prr`).
    pub(crate) prr: Option<Prr>,
    /// RACK-TLP's state, with `rack_tlp` on (`crate::rack`); it acts only once SACK is agreed.
    pub(crate) rack: Option<Rack>,
    /// Bytes sent by limited transmit since the cumulative ACK last advanced.
    pub(crate) lt_bytes: u64,
    /// How far the cumulative ACK moved the last time it advanced (RFC 6582 §4.1's highest_ack −
    /// prev_highest_ack).
    pub(crate) last_advance: u64,
    /// Persist mode (RFC 9293 §3.8.6.1): when the next zero-window probe is due; `Some` exactly while the
    /// peer's window is closed with data waiting.
    persist_deadline: Option<Time>,
    /// Probes sent in this persist period: the persist interval doubles with each.
    persist_shift: u32,
    /// When the current persist period began.
    persist_since: Option<Time>,
    probe_pending: bool,
    /// Held still by [`freeze`](Self::freeze) until [`thaw`](Self::thaw).
    frozen: bool,
}

impl Sender {
    pub fn new(cfg: TcpConfig, local: SocketAddrV4, remote: SocketAddrV4, iss: SeqNum, total_bytes: u64) -> Sender {
        let mss = u32::from(cfg.mss.max(1));
        let cc = AnyController::for_variant(&cfg, mss);
        let per_ack_events = cc.wants_ack_events();
        let rto = Rto::new(&cfg);
        Sender {
            ack_sampler: (per_ack_events || cc.wants_rate_samples() || rto.is_linux()).then(AckSampler::default),
            per_ack_events,
            rate: cc.wants_rate_samples().then(DeliveryRate::default),
            pacer: cc.pacing_rate().map(|_| Pacer::default()),
            rto,
            local,
            remote,
            iss,
            irs: SeqNum(0),
            total: total_bytes,
            open: false,
            state: State::Closed,
            mss,
            sack_ok: false,
            ts_ok: false,
            ts_recent: 0,
            una: 0,
            nxt: 0,
            max: 0,
            peer_wnd: 0,
            cc,
            // Replaced once the handshake says whether the peer agreed to SACK.
            recovery: LossRecovery::new(AnyRecovery::for_variant(&cfg, false, 0)),
            dupacks: 0,
            recover: 0,
            go_back_max: 0,
            scoreboard: Scoreboard::default(),
            rtx_deadline: None,
            timing: None,
            syn_pending: false,
            ack_pending: false,
            rexmit_pending: None,
            ident: 0,
            stats: SenderStats::default(),
            last_sent: None,
            out_queue: None,
            eln: Eln::new(&cfg),
            beh: cfg.behaviours(),
            prr: cfg.behaviours().prr.then(Prr::default),
            rack: cfg.behaviours().rack_tlp.then(Rack::default),
            lt_bytes: 0,
            last_advance: 0,
            persist_deadline: None,
            frozen: false,
            persist_shift: 0,
            persist_since: None,
            probe_pending: false,
            cfg,
        }
    }

    /// A sender whose stream starts empty and stays open: give it bytes with [`push`](Self::push), end it
    /// with [`close`](Self::close). Until then it sends no FIN and is never [`is_finished`](Self::is_finished).
    pub fn new_open(cfg: TcpConfig, local: SocketAddrV4, remote: SocketAddrV4, iss: SeqNum) -> Sender {
        let mut s = Sender::new(cfg, local, remote, iss, 0);
        s.open = true;
        s
    }

    /// An open-stream sender already synchronized with a [`Receiver::new_established`](crate::Receiver)
    /// of the same configuration whose initial sequence number is `irs`: no SYN is ever sent and the first
    /// packet is data. This is ns's one-way `Agent/TCP` of Balakrishnan 1998's time (`syn_` false until 2001: "in
    /// 1-way TCP, syn_ indicates we are modeling a SYN exchange", ns-2 `tcp/tcp.cc`), which Balakrishnan 1998's Web
    /// runs used (§4: "We use ns as our simulator"). Both ends take the configured MSS, SACK when
    /// [`TcpConfig::sack`] is on (and, here, offered by the variant) and timestamps when configured; the
    /// peer's window is `max_window`; the RTO is the initial one until the first RTT sample.
    pub fn new_established(
        cfg: TcpConfig,
        local: SocketAddrV4,
        remote: SocketAddrV4,
        iss: SeqNum,
        irs: SeqNum,
    ) -> Sender {
        let mut s = Sender::new_open(cfg, local, remote, iss);
        s.irs = irs;
        s.sack_ok = s.offers_sack() && s.cfg.sack;
        s.ts_ok = s.cfg.timestamps;
        s.peer_wnd = s.cfg.max_window.min(u32::from(u16::MAX));
        s.state = State::Established;
        s.una = 1;
        s.nxt = 1;
        s.max = 1;
        s.recover = 1;
        s.go_back_max = 1;
        s.recovery = LossRecovery::new(AnyRecovery::for_variant(&s.cfg, s.sack_ok, 1));
        s.cc.start(s.mss);
        s
    }

    /// Appends `bytes` application bytes (the next ones of the [`payload`] stream) to an open stream; they
    /// go out on the next [`poll_transmit`](Self::poll_transmit) the window allows. Ignored once the stream
    /// is closed (the bytes after a FIN cannot exist).
    pub fn push(&mut self, bytes: u64) {
        if self.rate.is_some() {
            self.check_app_limited();
        }
        if self.open {
            self.total += bytes;
        }
    }

    /// Ends an open stream: the FIN follows the last byte pushed. No effect on a sender made by `new`.
    pub fn close(&mut self) {
        self.open = false;
    }

    /// Whether the stream is still open for [`push`](Self::push).
    pub fn is_open(&self) -> bool {
        self.open
    }

    /// Application bytes handed to the sender so far.
    pub fn bytes_total(&self) -> u64 {
        self.total
    }

    /// Queues the SYN.
    pub fn connect(&mut self, _now: Time) {
        if self.state == State::Closed {
            self.state = State::SynSent;
            self.syn_pending = true;
        }
    }

    /// Takes in a whole IPv4 packet. Packets of other connections are ignored; unreadable ones are counted
    /// in [`SenderStats::malformed`].
    pub fn handle_packet(&mut self, now: Time, packet: &Bytes) {
        if let Some(headers) = headers_counted(packet, &mut self.stats.malformed) {
            self.handle_parsed(now, packet, &headers);
        }
    }

    /// [`Self::handle_packet`] of a packet whose headers its host has read already (`headers`, from
    /// [`Headers::parse`] of `packet`): they are not read again; the checksums are verified here.
    pub fn handle_parsed(&mut self, now: Time, packet: &Bytes, headers: &Headers) {
        let Some(seg) = parse_counted(packet, headers, self.local, self.remote, &mut self.stats.malformed) else {
            return;
        };
        if seg.repr.flags.contains(TcpFlags::RST) {
            return;
        }
        match self.state {
            State::Closed => {}
            State::SynSent => self.handle_syn_ack(now, &seg),
            State::Established => {
                if seg.repr.flags.contains(TcpFlags::SYN) {
                    // A repeated SYN-ACK means our ACK of it was lost; answer again.
                    if seg.repr.seq == self.irs {
                        self.ack_pending = true;
                    }
                    return;
                }
                if let Some(ack) = seg.repr.ack {
                    self.handle_ack(now, ack, &seg);
                }
            }
        }
    }

    fn handle_syn_ack(&mut self, now: Time, seg: &Incoming) {
        let r = &seg.repr;
        if !r.flags.contains(TcpFlags::SYN) || r.ack != Some(self.iss + 1) {
            return;
        }
        self.irs = r.seq;
        self.mss = u32::from(self.cfg.mss.min(r.mss.unwrap_or(DEFAULT_MSS)).max(1));
        self.sack_ok = self.offers_sack() && r.sack_permitted;
        self.ts_ok = self.cfg.timestamps && r.timestamps.is_some();
        self.ts_recent = r.timestamps.map_or(0, |t| t.0);
        self.peer_wnd = u32::from(r.window);
        self.state = State::Established;
        self.syn_pending = false;
        self.take_rtt_sample(now, 1);
        self.una = 1;
        self.nxt = 1;
        self.max = 1;
        self.recover = 1;
        self.go_back_max = 1;
        self.recovery = LossRecovery::new(AnyRecovery::for_variant(&self.cfg, self.sack_ok, 1));
        self.cc.start(self.mss);
        if self.beh.rto_restart == RtoRestart::Rfc6298 && self.stats.timeouts > 0 {
            // RFC 6298 (5.7): "If the timer expires awaiting the ACK of a SYN segment and the TCP
            // implementation is using an RTO less than 3 seconds, the RTO MUST be re-initialized to 3
            // seconds when data transmission begins".
            self.rto.raise_initial(3_000_000_000);
        }
        self.rto.reset_backoff();
        self.rtx_deadline = None;
        self.ack_pending = true;
    }

    fn handle_ack(&mut self, now: Time, ack: SeqNum, seg: &Incoming) {
        if self.rate.is_some() {
            self.sampled_ack(now, |s| s.process_ack(now, ack, seg));
        } else {
            self.process_ack(now, ack, seg);
        }
    }

    // Inlined into both callers, so that a sender without delivery-rate samples runs it as it always did.
    #[inline(always)]
    fn process_ack(&mut self, now: Time, ack: SeqNum, seg: &Incoming) {
        let r = &seg.repr;
        if self.ts_ok {
            if let Some((tsval, _)) = r.timestamps {
                self.ts_recent = tsval;
            }
        }
        let a = offset_of(self.iss, self.una, ack);
        if a > self.max {
            return; // acknowledges data never sent
        }
        let window = u32::from(r.window);
        let window_changed = window != self.peer_wnd;
        // RFC 9293 §3.10.7.4: only an ACK at or above SND.UNA updates the send window (the receiver sends
        // no data, so SND.WL1 never moves and the SND.WL2 test is this one); an old, reordered ACK must
        // not close a window a later one opened.
        if a >= self.una {
            self.peer_wnd = window;
        }
        let prr_sacked = self.prr_sacked();
        let mut newly_sacked = false;
        if self.sack_ok {
            for &(l, rr) in r.sack.as_slice() {
                let (l, rr) = (offset_of(self.iss, self.una, l), offset_of(self.iss, self.una, rr));
                // Blocks below the cumulative ACK (D-SACK) or beyond what was sent are not scoreboard news.
                if self.una <= l && l < rr && rr <= self.max {
                    newly_sacked |= self.scoreboard.insert(l, rr);
                    if let Some(rate) = &mut self.rate {
                        rate.on_sack(l, rr);
                    }
                }
            }
        }
        if a < self.una {
            return;
        }
        let eln = self.cfg.eln && r.eln;
        // Caceres 1995, Fig. 9 (b): the mobile receiver's "specially marked TCP ACK" says its handoff is over.
        let marked = self.cfg.handoff_aware && r.handoff_mark;
        if a == self.una {
            // RFC 5681's duplicate ACK: nothing new, no data, same window, while data is outstanding.
            // While persisting, repeated ACKs answer zero-window probes, not losses (4.4BSD counts a
            // duplicate ACK only while the retransmit timer runs).
            let pure = seg.payload.is_empty() && !r.flags.contains(TcpFlags::FIN);
            if pure && !window_changed && self.una < self.max && !self.is_persisting() {
                self.stats.dupacks_received += 1;
                if self.per_ack_events {
                    self.cc.on_ack_event(now, &AckEvent { una: self.una, nxt: self.nxt, acked: 0, rtt_ns: None });
                }
                if eln {
                    // Balakrishnan 1998: ELN DUPACKs bypass the dupack counter, fast retransmit and the fast-recovery
                    // inflation altogether; they lead only to the ELN retransmission.
                    self.on_eln_ack(now);
                } else if marked {
                    // The mark repeats the last ACK to carry its signal; it is no evidence of a new loss,
                    // and the go-back below resets the duplicate-ACK count anyway.
                } else if self.cfg.eln && self.eln.reported(a) {
                    // A plain DUPACK for a segment the base station already reported as corrupted
                    // (`Eln::reported` says why it is not counted).
                } else if self.sack_ok && !r.sack.is_empty() && !newly_sacked {
                    // A SACK-bearing DUPACK that reports nothing new repeats evidence already counted (the
                    // base station's NACK, then the FH's own DUPACKs for the same segments; see
                    // `lasthop_agents::nack`). RFC 5681 §2 allows and RFC 6675 §2 makes "new SACK
                    // information" the test, so it is not counted again.
                } else {
                    self.on_dupack(now);
                    self.rack_on_ack(now, a);
                    self.prr_on_ack(prr_sacked, 0, true);
                }
            }
            if marked {
                self.on_handoff_mark(now);
            }
            self.update_persist(now);
            return;
        }
        let acked = a - self.una;
        let rtt = match &mut self.ack_sampler {
            Some(t) => t.on_ack(self.una, a, now),
            None => None,
        }
        .or_else(|| self.echoed_rtt(now, r));
        if let Some(rate) = &mut self.rate {
            rate.on_cumulative_ack(a, u64::from(self.mss), rtt.map(|r| r.newest_ns));
        }
        self.last_advance = acked;
        self.lt_bytes = 0;
        let ns_timer = self.cfg.timer == TimerStyle::Ns;
        if !ns_timer {
            self.take_rtt_sample(now, a);
        }
        self.una = a;
        self.nxt = self.nxt.max(a);
        if let (true, Some(rtt)) = (self.rto.is_linux(), rtt) {
            self.rto.sample_linux(rtt.oldest_ns, self.una, self.max);
        }
        self.scoreboard.advance(a);
        self.rto.on_new_ack();
        // RFC 6298 (5.2, 5.3): stop when all is acknowledged, else restart; not while persisting.
        self.rtx_deadline =
            if self.una >= self.max || self.is_persisting() { None } else { Some(self.rto.deadline(now)) };
        if ns_timer {
            // ns-2 `TcpAgent::newack` re-arms the timer (`newtimer`) before it updates the RTT estimate.
            self.take_rtt_sample(now, a);
        }
        if self.per_ack_events {
            let rtt_ns = rtt.map(|r| r.newest_ns);
            self.cc.on_ack_event(now, &AckEvent { una: self.una, nxt: self.nxt, acked, rtt_ns });
        }
        self.on_new_ack(now, acked);
        self.rack_on_ack(now, a - acked);
        self.prr_on_ack(prr_sacked, acked, false);
        if eln {
            // A new ACK can carry ELN too (Balakrishnan 1998: marking "can (and does) also happen for new ones"):
            // it is the first ELN ACK for the new acknowledgment number.
            self.on_eln_ack(now);
        }
        if marked {
            self.on_handoff_mark(now);
        }
        self.update_persist(now);
    }

    /// A marked ACK from a mobile receiver whose handoff has completed (Caceres 1995, "Fast Retransmissions",
    /// Fig. 9 (b) "Transmitter on the SH": "This special signal can be specially marked TCP ACK"). The
    /// signal stands in for the timeout the handoff would otherwise cost ("Rather than wait for a timeout
    /// due to a handoff, modify the handoff procedure to trigger fast retransmit"), so:
    ///
    /// - normally it does what that timeout would, at once: the go-back of
    ///   [`retransmit_now`](Self::retransmit_now) (SND.UNA, cwnd one segment, ssthresh half the flight);
    /// - when the timeout has come already (a long rendezvous: the timer fired while the mobile heard no
    ///   MSS) and the sender is still resending the window it went back on, that window has had its
    ///   go-back and its congestion response. "Once TCP on SH receives the signal, it can invoke fast
    ///   retransmit procedure. [Basically, SH now knows that next packets sent by MH will be retransmits
    ///   due to handoff at cell crossing.]": what is left is to resend now what went out since into the
    ///   gap, from SND.UNA, at the window slow start has reached; cwnd and ssthresh are kept
    ///   ([`resume_go_back`](Self::resume_go_back)). Going back again would cut a second time for the same
    ///   loss, and collapse the window the mark's own ACK has just opened to one segment, which the
    ///   receiver's delayed ACK then holds for up to `delayed_ack_ms`.
    ///
    /// A mark arriving when nothing is outstanding changes nothing.
    fn on_handoff_mark(&mut self, now: Time) {
        if self.una >= self.max || self.is_persisting() {
            return;
        }
        self.stats.handoff_marks_received += 1;
        // In fast recovery cwnd is inflated by the DUPACKs: not a window to resend from SND.UNA with.
        if self.una < self.go_back_max && !self.recovery.in_recovery() {
            self.resume_go_back(now);
        } else {
            self.retransmit_now(now);
        }
    }

    /// Linux `tcp_ack_update_rtt`'s fallback for an ACK of new data from which Karn's rule takes no RTT
    /// (it covers a retransmitted segment): with timestamps, the time since the echoed one was sent (RFC 7323
    /// §4.1's RTTM rule). It counts as a valid sample, so it resets the timer's backoff. Only with Linux's
    /// timer: the BSD and ns timers time one segment at a time. SACK's RTT, which Linux prefers to the echo,
    /// is not taken.
    fn echoed_rtt(&self, now: Time, r: &TcpRepr) -> Option<AckRtt> {
        let (_, tsecr) = r.timestamps.filter(|_| self.ts_ok && self.rto.is_linux())?;
        // `rcv_tsecr` 0 means no echo; an echo from the future or a wrapped one is no sample.
        let ms = ts_now(now).wrapping_sub(tsecr);
        (tsecr != 0 && ms < i32::MAX as u32 / 1000).then(|| {
            let ns = u64::from(ms) * 1_000_000;
            AckRtt { newest_ns: ns, oldest_ns: ns }
        })
    }

    /// Karn's rule holds because `timing` is cleared whenever anything is retransmitted. Linux's timer
    /// samples every ACK instead (`handle_ack`), and here only the SYN's.
    fn take_rtt_sample(&mut self, now: Time, acked_to: u64) {
        if let Some((end, sent)) = self.timing {
            if acked_to >= end {
                self.timing = None;
                if !self.rto.is_linux() {
                    self.rto.sample(sent, now);
                } else if end == 1 {
                    self.rto.sample_linux(now.as_nanos().saturating_sub(sent.as_nanos()), 1, 1);
                }
            }
        }
    }

    /// The next IPv4 packet to send, if any.
    pub fn poll_transmit(&mut self, now: Time) -> Option<Bytes> {
        self.last_sent = None;
        if self.frozen {
            return None;
        }
        match self.state {
            State::Closed => None,
            State::SynSent => {
                if !self.syn_pending {
                    return None;
                }
                self.syn_pending = false;
                Some(self.emit_syn(now))
            }
            State::Established => self.transmit_established(now),
        }
    }

    fn transmit_established(&mut self, now: Time) -> Option<Bytes> {
        // The application may have pushed bytes into a closed window since the last ACK.
        self.update_persist(now);
        if self.is_persisting() {
            if std::mem::take(&mut self.probe_pending) {
                return Some(self.emit_probe(now));
            }
            return self.ack_pending.then(|| self.emit_pure_ack(now));
        }
        if let Some(off) = self.rexmit_pending.take() {
            if off >= self.una && off < self.max {
                if self.pacing_holds(now) || self.prr.as_ref().is_some_and(Prr::holds_retransmission) {
                    self.rexmit_pending = Some(off);
                    return self.ack_pending.then(|| self.emit_pure_ack(now));
                }
                let (len, fin) = self.shape(off, self.max);
                let pkt = self.emit_data(now, off, len, fin);
                return Some(self.paced(now, pkt));
            }
        }
        if let Some((off, len, fin)) = self.take_loss_probe(now) {
            return Some(self.emit_data(now, off, len, fin));
        }
        let next = self.recovery.next_segment(self);
        if let Some((off, len, fin)) = next {
            if self.pacing_holds(now) {
                return self.ack_pending.then(|| self.emit_pure_ack(now));
            }
            let beyond_cwnd = off + u64::from(len) > self.una + u64::from(self.window());
            if beyond_cwnd && self.limited_transmit_allowance() > 0 {
                // Beyond cwnd: only limited transmit lets it go (RFC 3042), and cwnd stays as it is.
                self.lt_bytes += u64::from(len);
                self.stats.limited_transmits += 1;
            }
            let pkt = self.emit_data(now, off, len, fin);
            return Some(self.paced(now, pkt));
        }
        if self.ack_pending {
            return Some(self.emit_pure_ack(now));
        }
        None
    }

    /// The segment starting at `off` that ends no later than `limit`: (data bytes, FIN included).
    pub(crate) fn shape(&self, off: u64, limit: u64) -> (u32, bool) {
        let fin_off = self.fin_offset();
        let len = u64::from(self.mss).min(fin_off.saturating_sub(off)).min(limit.saturating_sub(off));
        (len as u32, !self.open && off + len == fin_off && limit > fin_off)
    }

    /// Ordinary transmission from `nxt` within min(cwnd, peer window, max_window). Sends only full
    /// segments, the final piece, or anything at all into an empty pipe (BSD's sender silly-window rule).
    pub(crate) fn next_in_window(&self) -> Option<Segment> {
        let fin_off = self.fin_offset();
        if self.nxt > fin_off {
            return None;
        }
        if self.nxt == fin_off {
            // A lone FIN is not held back by the window; an open stream has nothing to send.
            return (!self.open).then_some((self.nxt, 0, true));
        }
        let flight = self.nxt - self.una;
        let window = self.cc.window().saturating_add(self.limited_transmit_allowance()).min(self.peer_window());
        let usable = u64::from(window).saturating_sub(flight);
        let remaining = fin_off - self.nxt;
        let len = u64::from(self.mss).min(remaining).min(usable);
        if len > 0 && (len == u64::from(self.mss) || len == remaining || flight == 0) {
            Some((self.nxt, len as u32, len == remaining && !self.open))
        } else {
            None
        }
    }

    /// The send window: min(cwnd, peer's advertised window, configured maximum).
    pub(crate) fn window(&self) -> u32 {
        self.cc.window().min(self.peer_wnd).min(self.cfg.max_window)
    }

    pub(crate) fn peer_window(&self) -> u32 {
        self.peer_wnd.min(self.cfg.max_window)
    }

    /// Offset of the FIN, or, while the stream is open, one past the last byte pushed.
    pub(crate) fn fin_offset(&self) -> u64 {
        1 + self.total
    }

    pub(crate) fn is_stream_open(&self) -> bool {
        self.open
    }

    pub(crate) fn offers_sack(&self) -> bool {
        self.cfg.sack || self.cfg.variant == Variant::Sack
    }

    fn adv_window(&self) -> u16 {
        self.cfg.max_window.min(u32::from(u16::MAX)) as u16
    }

    fn base_repr(&self, now: Time) -> TcpRepr {
        TcpRepr {
            src_port: self.local.port(),
            dst_port: self.remote.port(),
            window: self.adv_window(),
            timestamps: self.ts_ok.then(|| (ts_now(now), self.ts_recent)),
            ..TcpRepr::default()
        }
    }

    /// The packet of `repr` carrying `payload_len` application bytes from stream offset `stream_offset`,
    /// written straight into the packet (no staging buffer), and the bookkeeping of any segment sent.
    fn finish_emit(&mut self, now: Time, repr: &TcpRepr, stream_offset: u64, payload_len: usize) -> Bytes {
        let (src, dst) = (*self.local.ip(), *self.remote.ip());
        let mut pkt = repr.emit_ipv4_with(src, dst, self.ident, TTL, payload_len, |out| {
            // The bytes are written; their checksum comes from the pattern's running sums.
            payload::append(stream_offset, payload_len, out);
            Some(payload::content_sum(stream_offset, payload_len))
        });
        if let (true, Some(q)) = (self.cfg.eln, self.out_queue) {
            // Balakrishnan 1998: "Piggybacked on each packet from the MH is its instantaneous output queue length."
            // A header with no 4 bytes of option space left goes without (the BS then reads "empty").
            if let Ok(p) = queue_option::insert_ipv4(&pkt, q) {
                pkt = p;
            }
        }
        self.ident = self.ident.wrapping_add(1);
        self.stats.segments_sent += 1;
        if self.rtx_deadline.is_none() && self.max > self.una && !self.is_persisting() {
            self.rtx_deadline = Some(self.rto.deadline(now));
        }
        pkt
    }

    fn emit_syn(&mut self, now: Time) -> Bytes {
        let rexmit = self.max > 0;
        let repr = TcpRepr {
            seq: self.iss,
            flags: TcpFlags::SYN,
            mss: Some(self.cfg.mss),
            sack_permitted: self.offers_sack(),
            timestamps: self.cfg.timestamps.then(|| (ts_now(now), 0)),
            ..self.base_repr(now)
        };
        if rexmit {
            self.stats.segments_retransmitted += 1;
            self.timing = None;
        } else {
            self.timing = Some((1, now));
        }
        self.max = 1;
        self.last_sent = Some((0, rexmit));
        self.finish_emit(now, &repr, 0, 0)
    }

    /// The packet carrying `len` bytes from `off` (and the FIN), no bookkeeping.
    fn data_packet(&mut self, now: Time, off: u64, len: u32, fin: bool) -> Bytes {
        let repr = TcpRepr {
            seq: seq_at(self.iss, off),
            ack: Some(self.irs + 1),
            flags: if fin { TcpFlags::FIN } else { TcpFlags::NONE },
            ..self.base_repr(now)
        };
        self.finish_emit(now, &repr, off - 1, len as usize)
    }

    fn emit_data(&mut self, now: Time, off: u64, len: u32, fin: bool) -> Bytes {
        let rexmit = off < self.max;
        let end = off + u64::from(len) + u64::from(fin);
        if rexmit {
            self.stats.segments_retransmitted += 1;
            self.stats.bytes_retransmitted += u64::from(len);
            self.timing = None; // Karn: no sample may come from a retransmitted segment
            self.recovery.on_retransmit(end);
        } else if self.timing.is_none() {
            self.timing = Some((end, now));
        }
        if let Some(t) = &mut self.ack_sampler {
            t.on_send(end, now, rexmit);
        }
        if let Some(r) = &mut self.rate {
            r.on_send(now, end, end - off, self.max <= self.una);
        }
        if let Some(p) = &mut self.prr {
            p.on_sent();
        }
        self.rack_on_send(now, off, end, rexmit);
        if off <= self.nxt && end > self.nxt {
            self.nxt = end;
        }
        self.max = self.max.max(end);
        self.ack_pending = false;
        self.last_sent = Some((off - 1, rexmit));
        self.data_packet(now, off, len, fin)
    }

    /// A zero-window probe (RFC 9293 §3.8.6.1: "at least one octet of new data (if available)"): the byte
    /// at SND.NXT, or the FIN alone when only it is left. As 4.4BSD's forced output in persist state
    /// (`t_force`), it moves SND.MAX but not SND.NXT, so an unacknowledged probe byte is probed again, and
    /// it is neither timed nor counted as a retransmission.
    fn emit_probe(&mut self, now: Time) -> Bytes {
        let off = self.nxt;
        let (len, fin) = if off < self.fin_offset() { (1, false) } else { (0, true) };
        self.max = self.max.max(off + u64::from(len) + u64::from(fin));
        self.stats.persist_probes += 1;
        self.ack_pending = false;
        self.last_sent = Some((off - 1, false));
        self.data_packet(now, off, len, fin)
    }

    fn emit_pure_ack(&mut self, now: Time) -> Bytes {
        let repr = TcpRepr { seq: seq_at(self.iss, self.nxt), ack: Some(self.irs + 1), ..self.base_repr(now) };
        self.ack_pending = false;
        self.last_sent = Some((self.nxt.saturating_sub(1).min(self.total), false));
        self.finish_emit(now, &repr, 0, 0)
    }

    /// When [`handle_timeout`](Self::handle_timeout) wants to be called (the retransmit timer, the
    /// persist timer while the peer's window is closed, or the release of a paced transmission).
    pub fn poll_timeout(&self) -> Option<Time> {
        if self.is_finished() || self.frozen {
            None
        } else {
            // Called after every event the sender sees: `earlier` keeps it to a few comparisons.
            let timers = earlier(earlier(self.rtx_deadline, self.persist_deadline), self.rack_timeout());
            match &self.pacer {
                None => timers,
                Some(p) => earlier(timers, p.deadline()),
            }
        }
    }

    pub fn handle_timeout(&mut self, now: Time) {
        if self.frozen {
            return;
        }
        if let Some(p) = &mut self.pacer {
            p.on_timer(now);
        }
        if self.persist_deadline.is_some_and(|d| d <= now) {
            self.on_persist_timeout(now);
        }
        if self.rack_timeout().is_some_and(|d| d <= now) {
            self.rack_on_timeout(now);
        }
        match self.rtx_deadline {
            Some(d) if d <= now => self.rtx_deadline = None,
            _ => return,
        }
        match self.state {
            State::Closed => {}
            State::SynSent => {
                self.stats.timeouts += 1;
                self.rto.back_off();
                self.syn_pending = true;
                self.timing = None;
                self.rtx_deadline = Some(self.rto.deadline(now));
            }
            State::Established => {
                if !self.is_finished() {
                    self.on_timeout(now);
                }
            }
        }
    }

    /// Fast retransmit after a handoff for a sending host (Caceres 1995, "Fast Retransmissions"): the mobile
    /// host's network layer calls this when the new MSS acknowledges its greeting, so that TCP retransmits
    /// at once instead of waiting for its coarse timer. A break-before-make handoff typically loses the
    /// whole window (data sent into the old cell, the ACKs the old MSS sent after the mobile left), so a
    /// single retransmission would leave the sender stuck until its timer anyway: the sender does now what
    /// the timeout would do (go back to the oldest unacknowledged byte, cwnd one segment, ssthresh half the
    /// flight: slow start, which "does not congest the new cell"), except that the RTO is not backed off.
    /// The timer restarts from now. Counted in [`SenderStats::fast_retransmits`](crate::SenderStats).
    /// Nothing happens before the connection is set up or when nothing is outstanding.
    pub fn retransmit_now(&mut self, now: Time) {
        // While persisting the window is closed: there is nothing to retransmit into.
        if self.state != State::Established || self.una >= self.max || self.is_persisting() {
            return;
        }
        self.on_handoff_retransmit(now);
    }

    /// Holds the sender still until [`thaw`](Self::thaw): no timer runs ([`poll_timeout`](Self::poll_timeout)
    /// is `None`, [`handle_timeout`](Self::handle_timeout) does nothing) and nothing is sent; ACKs are still
    /// taken in. For a host that knows it is cut off, as M-TCP's mobile does (Brown 1997).
    pub fn freeze(&mut self) {
        self.frozen = true;
    }

    /// Whether [`freeze`](Self::freeze) holds the sender still.
    pub fn is_frozen(&self) -> bool {
        self.frozen
    }

    /// The peer was cut off and the caller held this sender still meanwhile (it neither called
    /// [`handle_timeout`](Self::handle_timeout) nor sent): M-TCP's frozen timers (Brown 1997). Sending
    /// resumes from SND.UNA at once, since what went out before the cut went nowhere, with cwnd, ssthresh
    /// and the RTO as they were (the cut was no congestion), and the timers restart from now.
    pub fn thaw(&mut self, now: Time) {
        self.frozen = false;
        if self.state == State::Established {
            self.rewind();
            if self.una < self.max {
                self.rtx_deadline = Some(self.rto.deadline(now));
            }
        } else if self.rtx_deadline.is_some() {
            self.rtx_deadline = Some(self.rto.deadline(now));
        }
        if self.persist_deadline.is_some() {
            self.persist_deadline = Some(self.persist_deadline_from(now));
        }
    }

    /// Bytes (or the FIN) not yet acknowledged, sent or not.
    fn has_data_waiting(&self) -> bool {
        if self.open {
            self.una < self.fin_offset()
        } else {
            self.una <= self.fin_offset()
        }
    }

    /// In persist mode: the peer's window is closed with data waiting (RFC 9293 §3.8.6.1).
    pub fn is_persisting(&self) -> bool {
        self.persist_deadline.is_some()
    }

    /// Enters or leaves persist mode as the peer's window and the data waiting say.
    fn update_persist(&mut self, now: Time) {
        if self.state != State::Established {
            return;
        }
        let closed = self.peer_window() == 0 && self.has_data_waiting();
        if closed && !self.is_persisting() {
            self.enter_persist(now);
        } else if !closed && self.is_persisting() {
            self.leave_persist(now);
        }
    }

    /// The window closed with data waiting. As 4.4BSD's `tcp_output` ("If window shrank to 0, cancel
    /// pending retransmit and pull snd_nxt back to (closed) window"), the retransmit timer stops and
    /// sending resumes from SND.UNA; cwnd, ssthresh, the RTO and its backoff are left as they are, and
    /// the persist timer is armed for the first probe (RFC 9293 §3.8.6.1: after one RTO).
    fn enter_persist(&mut self, now: Time) {
        self.stats.persist_entries += 1;
        self.persist_since = Some(now);
        self.persist_shift = 0;
        self.rtx_deadline = None;
        self.rexmit_pending = None;
        self.probe_pending = false;
        self.nxt = self.una;
        self.timing = None;
        self.persist_deadline = Some(self.persist_deadline_from(now));
    }

    /// A window update: back to ordinary sending at the cwnd the sender had; the retransmit timer runs
    /// again for whatever is outstanding (a probe byte, say).
    fn leave_persist(&mut self, now: Time) {
        self.persist_deadline = None;
        self.probe_pending = false;
        // Sending resumes from SND.UNA anyway; a retransmission ordered meanwhile (ELN) would repeat it.
        self.rexmit_pending = None;
        self.persist_shift = 0;
        if let Some(since) = self.persist_since.take() {
            self.stats.persist_ns += now.as_nanos().saturating_sub(since.as_nanos());
        }
        if self.una < self.max {
            self.rtx_deadline = Some(self.rto.deadline(now));
        }
    }

    /// The persist timer fired: send a probe and back the timer off (4.4BSD `tcp_setpersist`: the RTO
    /// doubled per probe, clamped to [`persist_min_ms`, `persist_max_ms`]). No timeout is counted and
    /// the congestion window is not touched.
    fn on_persist_timeout(&mut self, now: Time) {
        self.probe_pending = true;
        self.persist_shift = (self.persist_shift + 1).min(16);
        self.persist_deadline = Some(self.persist_deadline_from(now));
    }

    /// When the persist timer armed now expires: the RTO before backoff, doubled per probe already sent,
    /// clamped, in slow-timer ticks like the retransmit timer.
    fn persist_deadline_from(&self, now: Time) -> Time {
        let min = ms(self.cfg.persist_min_ms).as_nanos() as u64;
        let max = (ms(self.cfg.persist_max_ms).as_nanos() as u64).max(min);
        let interval = self.rto.base().saturating_mul(1 << self.persist_shift).clamp(min, max);
        self.rto.deadline_after(now, interval)
    }

    /// Nanoseconds spent in persist mode up to `now`, the current period included.
    pub fn persist_ns(&self, now: Time) -> u64 {
        let current = self.persist_since.map_or(0, |t| now.as_nanos().saturating_sub(t.as_nanos()));
        self.stats.persist_ns + current
    }

    /// All data and the FIN are acknowledged.
    pub fn is_finished(&self) -> bool {
        !self.open && self.state == State::Established && self.una > self.fin_offset()
    }

    pub fn stats(&self) -> &SenderStats {
        &self.stats
    }

    pub fn cwnd(&self) -> u32 {
        self.cc.window()
    }

    pub fn ssthresh(&self) -> u32 {
        self.cc.ssthresh()
    }

    /// The rate a pacing congestion controller asks for (BBR), bytes per second, at which the sender paces
    /// its data segments; `None` for the window-clocked ones, whose transmissions are ACK-clocked.
    pub fn pacing_rate(&self) -> Option<u64> {
        self.cc.pacing_rate()
    }

    /// Every byte pushed so far is acknowledged (an open stream with nothing outstanding is idle).
    pub fn all_acked(&self) -> bool {
        self.state == State::Established && self.una >= self.fin_offset()
    }

    /// Application bytes acknowledged so far.
    pub fn snd_una_offset(&self) -> u64 {
        self.una.saturating_sub(1).min(self.total)
    }

    /// Application bytes sent at least once so far (SND.MAX as a stream offset).
    pub fn snd_max_offset(&self) -> u64 {
        self.max.saturating_sub(1).min(self.total)
    }

    /// The packet last returned by [`poll_transmit`](Self::poll_transmit): stream offset of its first
    /// byte (0 for the SYN; the current send point for a FIN or pure ACK) and whether it was a
    /// retransmission. `None` after a `poll_transmit` that returned `None`.
    pub fn last_sent(&self) -> Option<(u64, bool)> {
        self.last_sent
    }

    /// In fast recovery (Reno, NewReno, SACK); Tahoe never is.
    pub fn in_recovery(&self) -> bool {
        self.recovery.in_recovery()
    }

    /// The host's report of this endpoint's interface output-queue occupancy, as a fraction of the
    /// queue's capacity (clamped to `[0, 1]`; NaN reads as full). With [`TcpConfig::eln`] on, every packet
    /// emitted afterwards carries it in the queue option of [`lasthop_wire::queue_option`], for the ELN
    /// agent at the base station. Call it whenever the occupancy changes, or simply before each
    /// [`poll_transmit`](Self::poll_transmit); until the first call no option is sent.
    pub fn set_output_queue(&mut self, fraction: f64) {
        self.out_queue = Some(QueueOccupancy::from_fraction(fraction));
    }

    /// Whether [`set_output_queue`](Self::set_output_queue) has any effect: only with [`TcpConfig::eln`] on.
    /// A host may skip measuring its queue otherwise.
    pub fn wants_output_queue(&self) -> bool {
        self.cfg.eln
    }

    /// Smoothed RTT in nanoseconds, once measured.
    pub fn srtt(&self) -> Option<u64> {
        self.rto.srtt()
    }

    /// The retransmission timeout a timer armed now would wait (backoff included), in nanoseconds.
    pub fn rto_ns(&self) -> u64 {
        self.rto.current()
    }
}

/// The earlier of two deadlines, either of which may be unset.
#[inline]
pub(crate) fn earlier(a: Option<Time>, b: Option<Time>) -> Option<Time> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, None) => a,
        (None, b) => b,
    }
}

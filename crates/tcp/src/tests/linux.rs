//! State-machine tests of the `linux` profile ([`Profile::Linux`]): hand-built segments in, segments and
//! timers out. Each feature is set against the 4.4BSD default it replaces.

use super::*;
use crate::{Profile, TimerStyle};

fn linux(variant: Variant) -> TcpConfig {
    TcpConfig { variant, sack: variant == Variant::Sack, ..TcpConfig::with_profile(Profile::Linux) }
}

#[test]
fn the_profile_owns_timer_and_window_fields_unless_given_and_refuses_a_slow_timer() {
    let l = TcpConfig::with_profile(Profile::Linux);
    assert_eq!((l.initial_cwnd, l.timer, l.tick_ms), (10, TimerStyle::Linux, 0.0));
    assert_eq!((l.min_rto_ms, l.initial_rto_ms, l.max_rto_ms), (200.0, 1000.0, 120_000.0));
    assert_eq!(l.check_behaviours(), Ok(()));
    // A route's initcwnd or rto_min, given, is kept.
    let mut given =
        TcpConfig { profile: Some(Profile::Linux), initial_cwnd: 4, min_rto_ms: 50.0, ..TcpConfig::default() };
    given.apply_profile(|f| f == "initial_cwnd" || f == "min_rto_ms").unwrap();
    assert_eq!((given.initial_cwnd, given.min_rto_ms, given.max_rto_ms), (4, 50.0, 120_000.0));
    // A BSD tick, or another timer, contradicts the profile: the field is named.
    let mut tick = TcpConfig { profile: Some(Profile::Linux), ..TcpConfig::default() };
    assert_eq!(tick.apply_profile(|f| f == "tick_ms").unwrap_err().0, "tick_ms");
    let mut ns = TcpConfig { profile: Some(Profile::Linux), timer: TimerStyle::Ns, ..TcpConfig::default() };
    assert_eq!(ns.apply_profile(|f| f == "timer").unwrap_err().0, "timer");
    // Built by hand without `apply_profile`, the contradiction is caught by the range checks.
    let raw = TcpConfig { profile: Some(Profile::Linux), ..TcpConfig::default() };
    assert_eq!(raw.check_behaviours().unwrap_err().0, "timer");
    let ticked = TcpConfig { tick_ms: 10.0, ..TcpConfig::with_profile(Profile::Linux) };
    assert_eq!(ticked.check_behaviours().unwrap_err().0, "tick_ms");
    // Other profiles own no plain field.
    let mut bsd = TcpConfig { profile: Some(Profile::Bsd44), ..TcpConfig::default() };
    bsd.apply_profile(|_| false).unwrap();
    assert_eq!(bsd, TcpConfig { profile: Some(Profile::Bsd44), ..TcpConfig::default() });
}

#[test]
fn initial_window_is_ten_segments_for_every_variant() {
    for v in Variant::ALL {
        let (mut s, mut first) = established(linux(v), 1_000_000);
        // A pacing sender (BBR) releases the window over its first pacing intervals, well before any timer
        // could fire: follow its pacing releases for 100 ms after the handshake, with no ACK.
        let mut now = Time::from_millis(100);
        while let Some(t) = s.poll_timeout().filter(|&t| t < Time::from_millis(200)) {
            now = now.max(t);
            s.handle_timeout(now);
            first.extend(drain_sender(&mut s, now));
        }
        assert_eq!(first.iter().filter(|s| s.len > 0).count(), 10, "{v}: RFC 6928's IW10");
        let (_, bsd) = established(cfg(v), 1_000_000);
        assert_eq!(bsd.iter().filter(|s| s.len > 0).count(), 1, "{v}: 4.4BSD starts from one segment");
    }
}

#[test]
fn rto_is_srtt_plus_200_ms_on_an_exact_timer_and_samples_every_ack() {
    let (mut s, first) = established(linux(Variant::Reno), 1_000_000);
    // The SYN's RTT (100 ms) is the first sample: RTO 3 × 100 ms.
    assert_eq!(s.srtt(), Some(100_000_000));
    assert_eq!(s.rto_ns(), 300_000_000);
    let t = Time::from_millis(100);
    assert_eq!(s.poll_timeout(), Some(t + Duration::from_millis(300)), "armed at the first segment, no tick");
    // Every ACK samples (the oldest segment it acknowledges): 20 ms RTTs pull srtt down one by one.
    let mut now = t;
    for (i, seg) in first.iter().enumerate().step_by(2) {
        now = t + Duration::from_millis(20 + i as u64);
        let to = seg.off + u64::from(seg.len) + u64::from(MSS);
        s.handle_packet(now, &ack(to, &[]));
        drain_sender(&mut s, now);
    }
    let srtt = s.srtt().unwrap();
    assert!(srtt < 70_000_000, "five samples, not one per RTT (one would leave 90 ms): srtt {srtt}");
    // rttvar never falls below TCP_RTO_MIN: the RTO is srtt + at least 200 ms, in whole jiffies, and
    // far below BSD's 1 s floor.
    let rto = s.rto_ns();
    assert!(rto >= srtt + 200_000_000 && rto < 300_000_000 && rto % 1_000_000 == 0, "RTO {rto}, srtt {srtt}");
    assert_eq!(s.poll_timeout(), Some(now + Duration::from_nanos(s.rto_ns())));
    // The BSD default on the same path: a 500 ms tick and a 1 s floor.
    let (b, _) = established(cfg(Variant::Reno), 1_000_000);
    assert_eq!(b.rto_ns(), 1_000_000_000);
    assert_eq!(b.poll_timeout(), Some(Time::from_millis(1000)), "on a slow-timer tick");
}

#[test]
fn timeout_fires_after_the_linux_rto_and_backs_off() {
    let (mut s, first) = established(linux(Variant::Cubic), 1_000_000);
    let deadline = s.poll_timeout().unwrap();
    assert_eq!(deadline, Time::from_millis(400));
    s.handle_timeout(deadline);
    let out = drain_sender(&mut s, deadline);
    assert_eq!((out[0].off, out[0].rexmit), (first[0].off, Some(true)));
    assert_eq!(s.cwnd(), MSS, "the loss window");
    assert_eq!(s.poll_timeout(), Some(deadline + Duration::from_millis(600)), "backed off");
}

/// Sends in-order segment `i` (1000 bytes each, from offset 1) at `t` and returns the ACKs it drew.
fn segment(r: &mut Receiver, i: u64, t: Time) -> Vec<(u64, Vec<(u64, u64)>)> {
    r.handle_packet(t, &data(1 + i * 1000, 1000, false));
    acks(r, t)
}

#[test]
fn receiver_quick_acks_the_first_segments_then_delays_40_ms() {
    let mut r = receiver(TcpConfig::with_profile(Profile::Linux));
    let ms = Time::from_millis;
    // tcp_incr_quickack: min(rcv_wnd / (2 · rcv_mss), TCP_MAX_QUICKACKS) = min(32, 16) segments, 10 ms apart.
    for i in 0..16 {
        assert_eq!(segment(&mut r, i, ms(10 + 10 * i)), vec![(1 + (i + 1) * 1000, vec![])], "segment {i}");
    }
    // Out of quick-ACK mode: a lone segment waits for ato, TCP_ATO_MIN 40 ms (not BSD's 200 ms).
    let t = ms(200);
    assert!(segment(&mut r, 16, t).is_empty());
    assert_eq!(r.poll_timeout(), Some(t + Duration::from_millis(40)));
    // The second full segment is acknowledged at once.
    assert_eq!(segment(&mut r, 17, ms(205)), vec![(18_001, vec![])]);
    assert_eq!(r.poll_timeout(), None);
    assert!(segment(&mut r, 18, ms(210)).is_empty());
    r.handle_timeout(ms(250));
    assert_eq!(acks(&mut r, ms(250)), vec![(19_001, vec![])]);
    // 4.4BSD's receiver holds the very first segment for its 200 ms timer.
    let mut bsd = receiver(TcpConfig::default());
    assert!(segment(&mut bsd, 0, ms(10)).is_empty());
    assert_eq!(bsd.poll_timeout(), Some(ms(210)));
}

#[test]
fn receiver_re_enters_quick_ack_mode_after_a_duplicate_and_acks_out_of_order_at_once() {
    let mut r = receiver(TcpConfig { quick_acks: Some(2), sack: true, ..TcpConfig::with_profile(Profile::Linux) });
    let ms = Time::from_millis;
    assert_eq!(segment(&mut r, 0, ms(10)).len(), 1);
    assert_eq!(segment(&mut r, 1, ms(11)).len(), 1);
    assert!(segment(&mut r, 2, ms(12)).is_empty(), "two quick ACKs granted, then delayed");
    assert_eq!(segment(&mut r, 3, ms(13)), vec![(4001, vec![])], "second full segment");
    // A duplicate: acknowledged at once, and the next in-order segments are quick-ACKed again.
    assert_eq!(segment(&mut r, 1, ms(20)), vec![(4001, vec![])]);
    assert_eq!(segment(&mut r, 4, ms(21)), vec![(5001, vec![])]);
    assert_eq!(segment(&mut r, 5, ms(22)), vec![(6001, vec![])]);
    assert!(segment(&mut r, 6, ms(23)).is_empty(), "the grant used up");
    r.handle_timeout(ms(63));
    assert_eq!(acks(&mut r, ms(63)), vec![(7001, vec![])]);
    // Out of order: a duplicate ACK at once with its SACK block; the hole's filling, at once.
    assert_eq!(segment(&mut r, 8, ms(70)), vec![(7001, vec![(8001, 9001)])]);
    assert_eq!(segment(&mut r, 7, ms(71)), vec![(9001, vec![])]);
    // An idle gap longer than the RTO (the SYN-ACK's 10 ms RTT gives srtt + TCP_RTO_MIN = 210 ms)
    // restarts quick-ACK mode.
    assert!(segment(&mut r, 9, ms(80)).is_empty());
    r.handle_timeout(ms(120));
    assert_eq!(acks(&mut r, ms(120)).len(), 1);
    assert_eq!(segment(&mut r, 10, ms(400)), vec![(11_001, vec![])]);
}

/// Twenty segments in flight (IW10 opened once), the first lost; then one duplicate ACK per segment
/// that arrives after it, SACKing it when `sack`. What goes out after each, as (offset, retransmission).
fn recovery_after_one_loss(mut cfg: TcpConfig, sack: bool, dupacks: usize) -> (Sender, Vec<Vec<(u64, bool)>>, u64) {
    cfg.sack = sack;
    let (mut s, first) = established(cfg, 1_000_000);
    let (flight, now) = open_window(&mut s, first, 20, Time::from_millis(100));
    assert_eq!(flight.len(), 20);
    let una = flight[0].off;
    let m = u64::from(MSS);
    let mut out = Vec::new();
    for k in 1..=dupacks as u64 {
        // The ACKs of the segments after the lost one, 50 ms after they went and 1 ms apart.
        let t = now + Duration::from_millis(50 + k);
        let sacks = if sack { vec![(una + m, una + (k + 1) * m)] } else { vec![] };
        s.handle_packet(t, &ack(una, &sacks));
        out.push(drain_sender(&mut s, t).iter().map(|x| (x.off, x.rexmit == Some(true))).collect());
    }
    (s, out, una)
}

#[test]
fn prr_sends_one_segment_per_two_delivered_down_to_ssthresh() {
    for (variant, sack) in [(Variant::Sack, true), (Variant::NewReno, false), (Variant::Cubic, true)] {
        let (mut s, out, una) = recovery_after_one_loss(linux(variant), sack, 18);
        let counts: Vec<usize> = out.iter().map(Vec::len).collect();
        // Two limited transmits, the fast retransmit at the third duplicate ACK, then PRR's proportional
        // part: ssthresh / prior cwnd = 1/2 of what is delivered.
        assert_eq!(&counts[..3], &[1, 1, 1], "{variant}");
        assert_eq!(out[2], vec![(una, true)], "{variant}: the fast retransmit first");
        let after: usize = counts[3..].iter().sum();
        assert!(counts[3..].iter().all(|&n| n <= 1), "{variant}: no burst: {counts:?}");
        // ssthresh / prior cwnd of the 15 delivered: 1/2 for Reno's halving, 0.7 for CUBIC's β.
        let share = 15 * s.ssthresh() as usize / (20 * MSS as usize);
        assert!(after.abs_diff(share) <= 1, "{variant}: {share} of 15 delivered, got {after}: {counts:?}");
        // The ACK of everything ends recovery with cwnd at ssthresh (tcp_end_cwnd_reduction).
        let ssthresh = s.ssthresh();
        let end = s.snd_max_offset() + 1;
        s.handle_packet(Time::from_millis(500), &ack(end, &[]));
        assert!(!s.in_recovery());
        assert_eq!(s.cwnd(), ssthresh, "{variant}");
    }
    // Without PRR (4.4BSD's NewReno, cwnd inflated from ssthresh + 3): nothing new goes until the
    // inflated window passes the flight, then one per duplicate ACK.
    let bsd = TcpConfig { variant: Variant::NewReno, ..TcpConfig::default() };
    let (_, out, _) = recovery_after_one_loss(TcpConfig { initial_cwnd: 10, ..bsd }, false, 18);
    let counts: Vec<usize> = out.iter().map(Vec::len).collect();
    assert_eq!(&counts[..3], &[0, 0, 1]);
    assert!(counts[3..10].iter().all(|&n| n == 0), "Reno's silence: {counts:?}");
}

/// A window lost but for its last three segments (a mobile's handoff: what the old cell had queued is
/// gone): three duplicate ACKs, the fast retransmission, and its ACK is partial. Linux retransmits only
/// within the window PRR sets (`tcp_xmit_retransmit_queue` after `tcp_cwnd_reduction`), and with the
/// flight it counts above ssthresh that window lets nothing go at this ACK: NewReno's next retransmission
/// waits for an ACK that delivers more, or for the timeout.
#[test]
fn prr_holds_the_partial_ack_retransmission_while_the_flight_is_above_ssthresh() {
    let (mut s, first) = established(TcpConfig { initial_cwnd: 10, ..linux(Variant::NewReno) }, 1_000_000);
    let (flight, now) = open_window(&mut s, first, 20, Time::from_millis(100));
    assert_eq!(flight.len(), 20);
    let (una, m) = (flight[0].off, u64::from(MSS));
    let mut sent = Vec::new();
    for k in 1..=3 {
        let t = now + Duration::from_millis(50 + k);
        s.handle_packet(t, &ack(una, &[]));
        sent.extend(drain_sender(&mut s, t).iter().map(|x| (x.off, x.rexmit == Some(true))));
    }
    assert_eq!(sent.last(), Some(&(una, true)), "the fast retransmission at the third duplicate ACK: {sent:?}");
    assert_eq!(s.stats().fast_retransmits, 1);
    // Its ACK: one segment delivered, ceil(ssthresh · 2 / prior cwnd) − 1 = 0 may go.
    let t = now + Duration::from_millis(60);
    s.handle_packet(t, &ack(una + m, &[]));
    assert!(s.in_recovery());
    let held = drain_sender(&mut s, t);
    assert!(
        held.is_empty(),
        "PRR lets nothing go at the partial ACK: {:?}",
        held.iter().map(|x| x.off).collect::<Vec<_>>()
    );
    // A duplicate ACK (a limited transmit arrived) delivers one more: now the hole's next segment goes.
    let t = t + Duration::from_millis(1);
    s.handle_packet(t, &ack(una + m, &[]));
    let out: Vec<(u64, bool)> = drain_sender(&mut s, t).iter().map(|x| (x.off, x.rexmit == Some(true))).collect();
    assert_eq!(out, vec![(una + m, true)]);
}

/// Ten segments (IW10, the whole transfer); the receiver gets the first eight, which it ACKs 50 ms
/// after they went. Returns the sender, the segments and the time of that ACK.
fn tail_lost(cfg: TcpConfig) -> (Sender, Vec<Seg>, Time) {
    let (mut s, first) = established(TcpConfig { sack: true, initial_cwnd: 10, ..cfg }, 10_000);
    assert_eq!(first.len(), 10);
    let t = Time::from_millis(150);
    s.handle_packet(t, &ack(first[8].off, &[]));
    assert!(drain_sender(&mut s, t).is_empty());
    (s, first, t)
}

#[test]
fn tail_loss_probe_recovers_a_tail_loss_without_the_rto() {
    let (mut s, segs, t) = tail_lost(linux(Variant::Sack));
    let rto_at = t + Duration::from_nanos(s.rto_ns());
    // PTO = 2·SRTT + 2 ms (two segments in flight), before the RTO.
    let pto = s.poll_timeout().unwrap();
    assert_eq!(pto, t + Duration::from_nanos(2 * s.srtt().unwrap() + 2_000_000));
    assert!(pto < rto_at);
    s.handle_timeout(pto);
    let probe = drain_sender(&mut s, pto);
    assert_eq!(probe.iter().map(|x| (x.off, x.rexmit)).collect::<Vec<_>>(), vec![(segs[9].off, Some(true))]);
    assert!(probe[0].fin, "the last segment again, with its FIN");
    assert_eq!(s.loss_probes(), 1);
    // The probe is SACKed: RACK sees segment 8, sent before it, overdue, and recovery resends it at once.
    let t2 = pto + Duration::from_millis(50);
    let end = segs[9].off + u64::from(segs[9].len) + 1;
    s.handle_packet(t2, &ack(segs[8].off, &[(segs[9].off, end)]));
    let out = drain_sender(&mut s, t2);
    assert_eq!(out.iter().map(|x| (x.off, x.rexmit)).collect::<Vec<_>>(), vec![(segs[8].off, Some(true))]);
    assert_eq!((s.rack_marked_lost(), s.stats().fast_retransmits), (1, 1));
    s.handle_packet(t2 + Duration::from_millis(50), &ack(end, &[]));
    assert!(s.is_finished());
    assert_eq!(s.stats().timeouts, 0, "no RTO");
    // The 4.4BSD sender with the same losses waits for its retransmit timer.
    let (mut b, _, t) = tail_lost(TcpConfig { variant: Variant::Sack, ..TcpConfig::default() });
    let d = b.poll_timeout().unwrap();
    assert!(d >= t + Duration::from_millis(500), "{d:?}");
    b.handle_timeout(d);
    assert_eq!(b.stats().timeouts, 1);
}

#[test]
fn rack_marks_a_hole_lost_after_rtt_plus_a_quarter_min_rtt_before_dupthresh() {
    let (mut s, first) = established(TcpConfig { sack: true, ..linux(Variant::Sack) }, 1_000_000);
    let m = u64::from(MSS);
    let una = first[0].off;
    // Segments 1 and 2 (of 10, sent at 100 ms) are SACKed 40 ms later, segment 0 not: two SACKed
    // segments are below DupThresh, so RACK waits RACK.rtt + min_rtt/4 from segment 0's send time.
    let t = Time::from_millis(140);
    s.handle_packet(t, &ack(una, &[(una + m, una + 3 * m)]));
    let out = drain_sender(&mut s, t);
    assert!(out.iter().all(|x| x.rexmit == Some(false)), "limited transmit only: {out:?}");
    // RACK.rtt and min_rtt are 40 ms (the segments SACKed), so reo_wnd is 10 ms.
    let reo = Time::from_millis(100 + 40 + 10);
    assert_eq!(s.poll_timeout(), Some(reo), "the reordering timer");
    s.handle_timeout(reo);
    let out = drain_sender(&mut s, reo);
    assert_eq!(out[0].off, una, "segment 0 lost by RACK, retransmitted first");
    assert_eq!(out[0].rexmit, Some(true));
    assert!(s.in_recovery());
    assert_eq!(s.rack_marked_lost(), 1);
}

/// [`established`] with timestamps offered by the sender and echoed in the SYN-ACK.
fn established_with_timestamps(cfg: TcpConfig) -> (Sender, Vec<Seg>) {
    let mut s = Sender::new(cfg, SENDER_ADDR, RECEIVER_ADDR, ISS, 1_000_000);
    s.connect(Time::ZERO);
    assert_eq!(drain_sender(&mut s, Time::ZERO).len(), 1);
    let synack = TcpRepr {
        seq: IRS,
        ack: Some(ISS + 1),
        flags: TcpFlags::SYN,
        mss: Some(MSS as u16),
        timestamps: Some((7, 0)),
        ..TcpRepr::default()
    };
    s.handle_packet(Time::from_millis(100), &to_sender(synack));
    let first = drain_sender(&mut s, Time::from_millis(100));
    (s, first)
}

#[test]
fn with_timestamps_the_ack_of_a_retransmission_is_an_rtt_sample_that_resets_the_backoff() {
    for timestamps in [false, true] {
        let (mut s, first) = established_with_timestamps(TcpConfig { timestamps, ..linux(Variant::Reno) });
        let (flight, _) = open_window(&mut s, first, 4, Time::from_millis(100));
        let (srtt, base_rto) = (s.srtt().unwrap(), s.rto_ns());
        let t1 = s.poll_timeout().unwrap();
        s.handle_timeout(t1);
        assert_eq!(drain_sender(&mut s, t1)[0].off, flight[0].off, "the timeout resends the oldest segment");
        assert_eq!(s.rto_ns(), 2 * base_rto, "backed off");
        // Its ACK 30 ms later, echoing the timestamp the retransmission carried (milliseconds).
        let t2 = t1 + Duration::from_millis(30);
        let echo = (t1.as_nanos() / 1_000_000) as u32;
        let acked =
            TcpRepr { seq: IRS + 1, ack: Some(seq(flight[1].off)), timestamps: Some((9, echo)), ..TcpRepr::default() };
        s.handle_packet(t2, &to_sender(acked));
        drain_sender(&mut s, t2);
        if timestamps {
            // `tcp_ack_update_rtt`: the echo gives 30 ms, folded in with 1/8 weight; the backoff is gone.
            assert_eq!(s.srtt(), Some(srtt - (srtt - 30_000_000) / 8), "the echo's RTT is a sample");
            assert!(s.rto_ns() < base_rto, "backoff reset, RTO {} ns", s.rto_ns());
            assert_eq!(s.poll_timeout(), Some(t2 + Duration::from_nanos(s.rto_ns())));
        } else {
            // Karn's rule: an ACK of retransmitted data measures nothing, so the backoff stays.
            assert_eq!((s.srtt(), s.rto_ns()), (Some(srtt), 2 * base_rto));
        }
    }
}

#[test]
fn the_receiver_echoes_the_timestamp_of_what_its_ack_was_waiting_for() {
    // RFC 7323 §4.3: a segment's TSval is kept for echoing only if it starts at or before what the last
    // ACK acknowledged. Segments 1 and 2 (one delayed ACK), 3 lost, 4 out of order, then 3 resent.
    let mut r = Receiver::new(TcpConfig { timestamps: true, ..cfg(Variant::Reno) }, RECEIVER_ADDR, SENDER_ADDR, IRS);
    let syn = TcpRepr {
        seq: ISS,
        flags: TcpFlags::SYN,
        mss: Some(MSS as u16),
        timestamps: Some((1, 0)),
        ..TcpRepr::default()
    };
    r.handle_packet(Time::ZERO, &to_receiver(syn, &[]));
    assert_eq!(drain_receiver(&mut r, Time::ZERO).len(), 1);
    let mut echoes = |off: u64, tsval: u32| {
        let mut buf = vec![0u8; MSS as usize];
        payload::fill(off - 1, &mut buf);
        let repr = TcpRepr { seq: seq(off), ack: Some(IRS + 1), timestamps: Some((tsval, 0)), ..TcpRepr::default() };
        let now = Time::from_millis(u64::from(tsval));
        r.handle_packet(now, &to_receiver(repr, &buf));
        let acks = std::iter::from_fn(|| r.poll_transmit(now)).collect::<Vec<_>>();
        acks.iter()
            .map(|p| {
                let ip = Ipv4Packet::new_checked(&p[..]).unwrap();
                TcpRepr::parse(&TcpPacket::new_checked(ip.payload()).unwrap()).unwrap().timestamps.unwrap().1
            })
            .collect::<Vec<u32>>()
    };
    assert_eq!(echoes(1, 10), [0u32; 0], "the first segment waits for a second");
    assert_eq!(echoes(1001, 20), [10], "the ACK of two segments echoes the first one's");
    assert_eq!(echoes(3001, 40), [10], "a DUPACK for an out-of-order segment echoes the last in-order one's");
    assert_eq!(echoes(2001, 50), [50], "the ACK of the segment that fills the hole echoes it");
}

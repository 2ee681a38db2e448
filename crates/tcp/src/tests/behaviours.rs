//! State-machine tests of the behaviours real stacks differ on (`TcpConfig::limited_transmit`,
//! `ssthresh_from`, `recover_guard`, `quick_acks`, `rto_backoff_reset`, `rto_restart`) and their profiles.

use super::*;
use crate::{BackoffReset, Profile, RecoverGuard, RtoRestart, SsthreshFrom};

/// A cumulative ACK advertising `window`, with SACK blocks, all in sender offsets.
pub(super) fn ack_win(off: u64, sack: &[(u64, u64)], window: u16) -> Bytes {
    let mut repr = TcpRepr {
        src_port: RECEIVER_ADDR.port(),
        dst_port: SENDER_ADDR.port(),
        seq: IRS + 1,
        ack: Some(seq(off)),
        window,
        ..TcpRepr::default()
    };
    for &(l, r) in sack {
        repr.sack.push(seq(l), seq(r));
    }
    repr.emit_ipv4(*RECEIVER_ADDR.ip(), *SENDER_ADDR.ip(), 0, 64, &[])
}

#[test]
fn defaults_keep_the_original_behaviours_and_profiles_resolve_under_explicit_fields() {
    let b = TcpConfig::default().behaviours();
    assert!(!b.limited_transmit);
    assert_eq!(b.ssthresh_from, SsthreshFrom::SndMax);
    assert_eq!(b.recover_guard, RecoverGuard::None, "Reno as in 4.4BSD has no guard");
    assert_eq!(cfg(Variant::NewReno).behaviours().recover_guard, RecoverGuard::Careful);
    assert_eq!(cfg(Variant::Sack).behaviours().recover_guard, RecoverGuard::Careful);
    assert_eq!((b.quick_acks, b.rto_backoff_reset, b.rto_restart), (0, BackoffReset::NewAck, RtoRestart::Retransmit));
    let ns = TcpConfig { timer: crate::TimerStyle::Ns, ..TcpConfig::default() };
    assert_eq!(ns.behaviours().rto_backoff_reset, BackoffReset::RttSample);

    let bsd = TcpConfig { profile: Some(Profile::Bsd44), ..cfg(Variant::NewReno) }.behaviours();
    assert_eq!((bsd.ssthresh_from, bsd.recover_guard), (SsthreshFrom::Window, RecoverGuard::None));
    assert_eq!(bsd.rto_backoff_reset, BackoffReset::RttSample);
    let linux = TcpConfig { profile: Some(Profile::Linux), ..TcpConfig::default() }.behaviours();
    assert!(linux.limited_transmit);
    assert_eq!((linux.ssthresh_from, linux.quick_acks), (SsthreshFrom::Cwnd, 16));
    let rfc = TcpConfig { profile: Some(Profile::Rfc), quick_acks: Some(2), ..TcpConfig::default() }.behaviours();
    assert_eq!((rfc.ssthresh_from, rfc.rto_restart, rfc.quick_acks), (SsthreshFrom::Flight, RtoRestart::Rfc6298, 2));
}

#[test]
fn range_checks_name_the_field() {
    assert!(TcpConfig::default().check_behaviours().is_ok());
    let bad = TcpConfig { quick_acks: Some(70_000), ..TcpConfig::default() };
    assert_eq!(bad.check_behaviours().unwrap_err().0, "quick_acks");
    for v in [0.0, -1.0, f64::NAN, 1e12] {
        let bad = TcpConfig { persist_min_ms: v, ..TcpConfig::default() };
        assert_eq!(bad.check_behaviours().unwrap_err().0, "persist_min_ms", "{v}");
    }
    let bad = TcpConfig { persist_max_ms: 4000.0, ..TcpConfig::default() };
    assert_eq!(bad.check_behaviours().unwrap_err().0, "persist_max_ms");
}

/// Eight segments in flight, then duplicate ACKs for the first: what goes out after each.
fn dupacks_after_eight(cfg: TcpConfig, n: usize) -> (Sender, Vec<Vec<Seg>>, u64) {
    let (mut s, first) = established(cfg, 1_000_000);
    let (flight, now) = open_window(&mut s, first, 8, Time::from_millis(100));
    assert_eq!(s.cwnd(), 8 * MSS);
    let una = flight[0].off;
    let out = (0..n)
        .map(|_| {
            s.handle_packet(now, &ack(una, &[]));
            drain_sender(&mut s, now)
        })
        .collect();
    (s, out, una)
}

#[test]
fn limited_transmit_sends_one_new_segment_per_early_dupack_without_touching_cwnd() {
    let (s, out, _) = dupacks_after_eight(cfg(Variant::Reno), 2);
    assert!(out.iter().all(Vec::is_empty), "off: nothing before the third dupack");
    assert_eq!(s.stats().limited_transmits, 0);

    let lt = TcpConfig { limited_transmit: Some(true), ..cfg(Variant::Reno) };
    let (s, out, una) = dupacks_after_eight(lt, 3);
    let high = una + 8 * u64::from(MSS);
    for (i, o) in out[..2].iter().enumerate() {
        assert_eq!(o.len(), 1, "dupack {}", i + 1);
        assert_eq!((o[0].off, o[0].len, o[0].rexmit), (high + i as u64 * u64::from(MSS), MSS, Some(false)));
    }
    assert_eq!(s.stats().limited_transmits, 2);
    // The third: fast retransmit; ssthresh from the flight without the two limited-transmit segments.
    assert_eq!((out[2][0].off, out[2][0].rexmit), (una, Some(true)));
    assert_eq!(s.ssthresh(), 4 * MSS, "RFC 5681 §3.2 step 2: 8 segments, not 10");
    assert_eq!(s.cwnd(), 7 * MSS);
}

#[test]
fn limited_transmit_respects_the_peers_window_and_sends_no_old_data() {
    // The peer's window is full at 8 segments: limited transmit may not exceed it.
    let lt = TcpConfig { limited_transmit: Some(true), max_window: 8 * MSS, ..cfg(Variant::Reno) };
    let (s, out, _) = dupacks_after_eight(lt, 2);
    assert!(out.iter().all(Vec::is_empty));
    assert_eq!(s.stats().limited_transmits, 0);
}

#[test]
fn ssthresh_measures_differ_when_sacked_data_and_a_small_peer_window_are_about() {
    let run = |from: SsthreshFrom, window: u16| {
        let c = TcpConfig { ssthresh_from: Some(from), ..cfg(Variant::Sack) };
        let (mut s, first) = established(c, 1_000_000);
        let (flight, now) = open_window(&mut s, first, 8, Time::from_millis(100));
        let una = flight[0].off;
        s.handle_packet(now, &ack_win(una, &[], window)); // a window update: not a dupack
        for k in 1..=3u64 {
            s.handle_packet(now, &ack_win(una, &[(flight[1].off, flight[1].off + k * u64::from(MSS))], window));
        }
        assert_eq!(s.stats().fast_retransmits, 1, "{from:?}");
        s.ssthresh()
    };
    assert_eq!(run(SsthreshFrom::SndMax, 65535), 4 * MSS, "8 segments outstanding");
    // RFC 6675 IsLost holds once two segments above SND.UNA are SACKed: recovery starts at the second.
    assert_eq!(run(SsthreshFrom::Flight, 65535), 3 * MSS, "less the 2 SACKed");
    assert_eq!(run(SsthreshFrom::Window, 65535), 4 * MSS, "min(cwnd, window) = 8 segments");
    assert_eq!(run(SsthreshFrom::Window, 6000), 3 * MSS, "min(cwnd, window) = 6 segments");
    assert_eq!(run(SsthreshFrom::Cwnd, 6000), 4 * MSS, "cwnd alone");
}

#[test]
fn flight_measure_forgets_what_a_timeout_wrote_off() {
    for (from, expect) in [(SsthreshFrom::SndMax, 4 * MSS), (SsthreshFrom::Flight, 2 * MSS)] {
        let c = TcpConfig { ssthresh_from: Some(from), tick_ms: 0.0, ..cfg(Variant::Reno) };
        let (mut s, first) = established(c, 1_000_000);
        let (_, _) = open_window(&mut s, first, 8, Time::from_millis(100));
        let t1 = s.poll_timeout().unwrap();
        s.handle_timeout(t1);
        drain_sender(&mut s, t1);
        // A second timeout during the go-back: only one segment is outstanding since the first.
        let t2 = s.poll_timeout().unwrap();
        s.handle_timeout(t2);
        assert_eq!(s.ssthresh(), expect, "{from:?}");
    }
}

/// Eight segments, a timeout, the retransmission acknowledged with an advance of `advance` segments,
/// then three duplicate ACKs below `recover`: how many fast retransmits.
fn dupacks_below_recover(c: TcpConfig, advance: u64) -> u64 {
    let c = TcpConfig { tick_ms: 0.0, ..c };
    let (mut s, first) = established(c, 1_000_000);
    let (flight, _) = open_window(&mut s, first, 8, Time::from_millis(100));
    let t = s.poll_timeout().unwrap();
    s.handle_timeout(t);
    drain_sender(&mut s, t);
    let t = t + Duration::from_millis(100);
    let una = flight[0].off + advance * u64::from(MSS);
    s.handle_packet(t, &ack(una, &[]));
    drain_sender(&mut s, t);
    for _ in 0..3 {
        s.handle_packet(t, &ack(una, &[]));
    }
    assert!(s.snd_una_offset() + 1 < s.recover, "the duplicate ACKs are below recover");
    s.stats().fast_retransmits
}

#[test]
fn recover_guard_careful_none_and_ack_heuristic() {
    let with = |v: Variant, g: Option<RecoverGuard>| TcpConfig { recover_guard: g, ..cfg(v) };
    assert_eq!(dupacks_below_recover(with(Variant::Reno, None), 1), 1, "Reno, no guard by default");
    assert_eq!(dupacks_below_recover(with(Variant::NewReno, None), 1), 0, "NewReno is careful by default");
    assert_eq!(dupacks_below_recover(with(Variant::Reno, Some(RecoverGuard::Careful)), 1), 0);
    assert_eq!(dupacks_below_recover(with(Variant::Tahoe, Some(RecoverGuard::Careful)), 1), 0);
    assert_eq!(dupacks_below_recover(with(Variant::NewReno, Some(RecoverGuard::None)), 1), 1);
    // RFC 6582 §4.1: an advance of one segment (cwnd 2 > 1 SMSS) is a new loss; of five, the receiver's
    // answer to retransmissions of data it had.
    let h = Some(RecoverGuard::AckHeuristic);
    assert_eq!(dupacks_below_recover(with(Variant::NewReno, h), 1), 1);
    assert_eq!(dupacks_below_recover(with(Variant::NewReno, h), 5), 0);
}

#[test]
fn quick_acks_acknowledge_the_first_data_segments_at_once() {
    let t = Time::from_millis(10);
    let mut r = receiver(TcpConfig { quick_acks: Some(1), ..TcpConfig::default() });
    r.handle_packet(t, &data(1, 1000, false));
    assert_eq!(acks(&mut r, t), vec![(1001, vec![])], "the first segment at once");
    r.handle_packet(t, &data(1001, 1000, false));
    assert!(acks(&mut r, t).is_empty(), "the second waits for the delayed ACK");
    assert!(r.poll_timeout().is_some());

    let mut r = receiver(TcpConfig { profile: Some(Profile::Linux), ..TcpConfig::default() });
    for i in 0..16u64 {
        r.handle_packet(t, &data(1 + 1000 * i, 1000, false));
        assert_eq!(acks(&mut r, t).len(), 1, "segment {i}");
    }
    r.handle_packet(t, &data(16_001, 1000, false));
    assert!(acks(&mut r, t).is_empty(), "the 17th is delayed");
}

#[test]
fn backoff_reset_by_a_new_ack_or_only_by_an_rtt_sample() {
    for reset in [BackoffReset::NewAck, BackoffReset::RttSample] {
        let c = TcpConfig { rto_backoff_reset: Some(reset), tick_ms: 0.0, ..cfg(Variant::Reno) };
        let (mut s, first) = established(c, 1_000_000);
        let (flight, _) = open_window(&mut s, first, 4, Time::from_millis(100));
        let t1 = s.poll_timeout().unwrap();
        s.handle_timeout(t1);
        drain_sender(&mut s, t1);
        // The ACK of the retransmission: Karn gives no sample.
        let t2 = t1 + Duration::from_millis(100);
        s.handle_packet(t2, &ack(flight[1].off, &[]));
        let out = drain_sender(&mut s, t2);
        let expect = match reset {
            BackoffReset::NewAck => 1000,
            BackoffReset::RttSample => 2000, // "using current (possibly backed-off) value" (4.4BSD tcp_input)
        };
        assert_eq!(s.poll_timeout(), Some(t2 + Duration::from_millis(expect)), "{reset:?}");
        // Go-back segments are retransmissions too; the first new segment is timed and its ACK resets.
        let mut t = t2;
        let mut next = out.last().map_or(flight[1].off, |x| x.off + u64::from(x.len));
        while s.rto_ns() > 1_000_000_000 {
            t += Duration::from_millis(100);
            s.handle_packet(t, &ack(next, &[]));
            let out = drain_sender(&mut s, t);
            next = out.last().map_or(next, |x| x.off + u64::from(x.len));
            assert!(t < t2 + Duration::from_secs(2), "{reset:?}: a sample must come within a few round trips");
        }
    }
}

#[test]
fn fast_retransmit_restarts_the_timer_only_with_the_bsd_rule() {
    for restart in [RtoRestart::Retransmit, RtoRestart::Rfc6298] {
        let c = TcpConfig { rto_restart: Some(restart), tick_ms: 0.0, ..cfg(Variant::Reno) };
        let (mut s, first) = established(c, 1_000_000);
        let (flight, now) = open_window(&mut s, first, 8, Time::from_millis(100));
        let before = s.poll_timeout().unwrap();
        let t = now + Duration::from_millis(300);
        for _ in 0..3 {
            s.handle_packet(t, &ack(flight[0].off, &[]));
        }
        assert_eq!(s.stats().fast_retransmits, 1);
        let expect = match restart {
            RtoRestart::Retransmit => t + Duration::from_millis(1000),
            RtoRestart::Rfc6298 => before,
        };
        assert_eq!(s.poll_timeout(), Some(expect), "{restart:?}");
    }
}

#[test]
fn rfc6298_raises_a_short_rto_to_3_s_after_a_syn_timeout() {
    for restart in [RtoRestart::Retransmit, RtoRestart::Rfc6298] {
        let c = TcpConfig { rto_restart: Some(restart), initial_rto_ms: 1000.0, tick_ms: 0.0, ..TcpConfig::default() };
        let mut s = Sender::new(c, SENDER_ADDR, RECEIVER_ADDR, ISS, 100_000);
        s.connect(Time::ZERO);
        drain_sender(&mut s, Time::ZERO);
        s.handle_timeout(Time::from_millis(1000));
        assert!(drain_sender(&mut s, Time::from_millis(1000))[0].syn);
        let synack =
            TcpRepr { seq: IRS, ack: Some(ISS + 1), flags: TcpFlags::SYN, mss: Some(MSS as u16), ..Default::default() };
        s.handle_packet(Time::from_millis(1200), &to_sender(synack));
        assert_eq!(s.srtt(), None, "Karn: no sample from the retransmitted SYN");
        let expect = match restart {
            RtoRestart::Retransmit => 1000,
            RtoRestart::Rfc6298 => 3000,
        };
        assert_eq!(s.rto_ns(), expect * 1_000_000, "{restart:?}");
    }
}

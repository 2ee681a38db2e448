//! State-machine tests of the sender's persist mode (RFC 9293 §3.8.6.1; 4.4BSD `tcp_setpersist`): a
//! zero window arms the persist timer, not the retransmit timer; the probe interval is the RTO doubled per
//! probe, clamped to [`persist_min_ms`, `persist_max_ms`]; a window update resumes sending at the cwnd the
//! sender had.

use super::behaviours::ack_win;
use super::*;

/// A sender with four segments acknowledged in flight and a 1 s RTO (exact timer), and the offset of the
/// next new byte.
fn four_in_flight() -> (Sender, Vec<Seg>, Time) {
    let c = TcpConfig { tick_ms: 0.0, ..cfg(Variant::Reno) };
    let (mut s, first) = established(c, 1_000_000);
    let (flight, now) = open_window(&mut s, first, 4, Time::from_millis(100));
    assert_eq!(s.rto_ns(), 1_000_000_000);
    (s, flight, now)
}

#[test]
fn zero_window_arms_the_persist_timer_and_probes_back_off_between_5_and_60_s() {
    let (mut s, flight, now) = four_in_flight();
    let high = flight.last().unwrap().off + u64::from(MSS);
    let cwnd = s.cwnd();
    let t = now + Duration::from_millis(100);
    s.handle_packet(t, &ack_win(high, &[], 0));
    assert!(s.is_persisting());
    assert!(drain_sender(&mut s, t).is_empty(), "nothing goes into a closed window");
    let cwnd = cwnd + MSS; // the ACK itself opened cwnd by one segment (slow start)
    assert_eq!(s.cwnd(), cwnd);
    // The first probe after one RTO (1 s), raised to the 5 s minimum; then 2, 4, 8, ... s as BSD's
    // `tcp_setpersist` (`t * tcp_backoff[t_rxtshift]`, `TCPT_RANGESET` to 5–60 s): 5, 5, 8, 16, 32, 60, 60.
    let mut due = t + Duration::from_secs(5);
    assert_eq!(s.poll_timeout(), Some(due));
    s.handle_timeout(Time(due.as_nanos() - 1_000_000));
    assert!(drain_sender(&mut s, due).is_empty(), "not early");
    for gap in [5, 5, 8, 16, 32, 60, 60] {
        s.handle_timeout(due);
        let out = drain_sender(&mut s, due);
        assert_eq!(out.len(), 1);
        assert_eq!((out[0].off, out[0].len, out[0].fin), (high, 1, false), "one byte of new data");
        // The probe is refused: the same ACK, still a zero window; it is no duplicate ACK.
        s.handle_packet(due + Duration::from_millis(100), &ack_win(high, &[], 0));
        assert!(drain_sender(&mut s, due).is_empty());
        due += Duration::from_secs(gap);
        assert_eq!(s.poll_timeout(), Some(due), "next probe {gap} s later");
    }
    let st = s.stats().clone();
    assert_eq!((st.persist_entries, st.persist_probes), (1, 7));
    assert_eq!((st.timeouts, st.fast_retransmits, st.dupacks_received, st.segments_retransmitted), (0, 0, 0, 0));
    assert_eq!(s.cwnd(), cwnd, "persisting never shrinks cwnd");

    // A window update: sending resumes at once, a full cwnd from SND.UNA, and the retransmit timer runs.
    let tw = Time(due.as_nanos() - 30_000_000_000);
    s.handle_packet(tw, &ack_win(high, &[], 65535));
    assert!(!s.is_persisting());
    let out = drain_sender(&mut s, tw);
    assert_eq!(out.len() as u32, cwnd / MSS);
    assert_eq!(out[0].off, high);
    assert_eq!(s.cwnd(), cwnd);
    assert_eq!(s.poll_timeout(), Some(tw + Duration::from_secs(1)), "the retransmit timer, not the persist timer");
    assert_eq!(s.stats().persist_ns, tw.as_nanos() - t.as_nanos());
    assert_eq!(s.persist_ns(tw + Duration::from_secs(9)), s.stats().persist_ns, "no period under way");
}

#[test]
fn a_zero_window_ack_of_new_data_keeps_persisting_and_the_next_probe_moves_on() {
    let (mut s, flight, now) = four_in_flight();
    let high = flight.last().unwrap().off + u64::from(MSS);
    let t = now + Duration::from_millis(100);
    s.handle_packet(t, &ack_win(high, &[], 0));
    let due = s.poll_timeout().unwrap();
    s.handle_timeout(due);
    assert_eq!(drain_sender(&mut s, due)[0].off, high);
    // The receiver took the probe byte but its window is still closed.
    s.handle_packet(due + Duration::from_millis(100), &ack_win(high + 1, &[], 0));
    assert!(s.is_persisting());
    assert!(drain_sender(&mut s, due).is_empty());
    let next = s.poll_timeout().unwrap();
    assert_eq!(next, due + Duration::from_secs(5), "the persist timer keeps running");
    s.handle_timeout(next);
    let out = drain_sender(&mut s, next);
    assert_eq!((out[0].off, out[0].len), (high + 1, 1), "the next byte");
    assert_eq!(s.stats().timeouts, 0);
}

#[test]
fn a_window_closing_on_outstanding_data_cancels_the_retransmit_timer_and_resends_from_snd_una() {
    let (mut s, flight, now) = four_in_flight();
    let t = now + Duration::from_millis(50);
    // The first segment is acknowledged and the window closes on the three still in flight.
    s.handle_packet(t, &ack_win(flight[1].off, &[], 0));
    assert!(s.is_persisting());
    assert_eq!(s.poll_timeout(), Some(t + Duration::from_secs(5)), "the persist timer, not the 1 s RTO");
    let due = t + Duration::from_secs(5);
    s.handle_timeout(due);
    let out = drain_sender(&mut s, due);
    assert_eq!((out[0].off, out[0].len), (flight[1].off, 1), "the probe is the byte at SND.UNA");
    assert_eq!(s.stats().timeouts, 0);
    let tw = due + Duration::from_secs(1);
    s.handle_packet(tw, &ack_win(flight[1].off, &[], 65535));
    let out = drain_sender(&mut s, tw);
    assert_eq!(out[0].off, flight[1].off, "go-back from SND.UNA at the cwnd it had");
    assert_eq!(out.len() as u32, s.cwnd() / MSS);
}

#[test]
fn a_closed_window_with_nothing_left_to_send_is_not_persist() {
    let c = TcpConfig { tick_ms: 0.0, ..cfg(Variant::Reno) };
    let (mut s, first) = established(c, u64::from(MSS));
    assert!(first[0].fin, "one segment carries all and the FIN");
    s.handle_packet(Time::from_millis(300), &ack_win(first[0].off + u64::from(MSS) + 1, &[], 0));
    assert!(s.is_finished() && !s.is_persisting());
    assert_eq!(s.poll_timeout(), None);
}

#[test]
fn an_old_reordered_ack_does_not_close_the_window_again() {
    let (mut s, flight, now) = four_in_flight();
    let t = now + Duration::from_millis(50);
    s.handle_packet(t, &ack_win(flight[2].off, &[], 65535));
    s.handle_packet(t, &ack_win(flight[1].off, &[], 0)); // below SND.UNA: RFC 9293 §3.10.7.4
    assert!(!s.is_persisting());
}

#[test]
fn transfer_survives_a_long_closed_window_without_a_timeout() {
    let mut p = Pair::new(TcpConfig::default(), TcpConfig::default(), 300_000);
    // A box on the path advertises a zero window for the receiver from 1 s to 40 s.
    p.ack_window = Box::new(|now| (now >= Time::from_millis(1000) && now < Time::from_millis(40_000)).then_some(0));
    assert!(p.run(1_000_000));
    assert_eq!(p.read, 300_000);
    let st = p.sender.stats();
    assert_eq!(st.timeouts, 0, "{st:?}");
    assert!(st.persist_probes >= 3, "{st:?}");
    assert!(st.persist_ns >= 35_000_000_000, "{st:?}");
    assert_eq!(st.persist_entries, 1);
}

#[test]
fn an_idle_open_stream_persists_only_once_bytes_are_pushed_into_the_closed_window() {
    let mut s = Sender::new_open(cfg(Variant::Reno), SENDER_ADDR, RECEIVER_ADDR, ISS);
    s.connect(Time::ZERO);
    drain_sender(&mut s, Time::ZERO);
    let synack =
        TcpRepr { seq: IRS, ack: Some(ISS + 1), flags: TcpFlags::SYN, mss: Some(MSS as u16), ..TcpRepr::default() };
    s.handle_packet(Time::from_millis(100), &to_sender(synack));
    drain_sender(&mut s, Time::from_millis(100));
    let t = Time::from_millis(300);
    s.handle_packet(t, &ack_win(1, &[], 0));
    assert!(!s.is_persisting(), "nothing waits to be sent");
    assert_eq!(s.poll_timeout(), None);
    s.push(5000);
    let t = Time::from_millis(1_234);
    assert!(drain_sender(&mut s, t).is_empty());
    assert!(s.is_persisting());
    // The default 500 ms slow timer: the 5 s interval is counted in ticks, as the retransmit timer is.
    assert_eq!(s.poll_timeout(), Some(Time::from_millis(6_000)));
    s.handle_timeout(Time::from_millis(6_000));
    let out = drain_sender(&mut s, Time::from_millis(6_000));
    assert_eq!((out[0].off, out[0].len), (1, 1));
    assert_eq!(s.stats().persist_probes, 1);
}

/// M-TCP's mobile end (Brown 1997): a host that knows it is cut off freezes its sender; no timer runs and
/// nothing is sent however long the cut lasts, and the thaw resends from SND.UNA at once with the window and
/// timeout it had (no slow start, no backed-off timer).
#[test]
fn a_frozen_sender_runs_no_timer_sends_nothing_and_thaws_from_snd_una_at_its_window() {
    let (mut s, flight, now) = four_in_flight();
    let cwnd = s.cwnd();
    s.freeze();
    assert!(s.is_frozen());
    assert_eq!(s.poll_timeout(), None, "no timer while frozen");
    // An ACK that was already on its way is taken in; the window it opens is not used until the thaw.
    let t = now + Duration::from_millis(100);
    s.handle_packet(t, &ack_win(flight[1].off, &[], 65535));
    assert!(drain_sender(&mut s, t).is_empty());
    assert_eq!(s.poll_timeout(), None, "still no timer");
    let late = now + Duration::from_secs(30);
    s.handle_timeout(late);
    assert!(drain_sender(&mut s, late).is_empty(), "nothing sent while frozen");
    let cwnd = cwnd + MSS; // the ACK opened cwnd by one segment (slow start)
    assert_eq!(s.cwnd(), cwnd);
    let back = late + Duration::from_secs(1);
    s.thaw(back);
    assert!(!s.is_frozen());
    let out = drain_sender(&mut s, back);
    assert_eq!(out[0].off, flight[1].off, "resent from the first unacknowledged byte");
    assert_eq!(out.len() as u32, cwnd / MSS, "a full window at once");
    assert_eq!(s.cwnd(), cwnd, "no slow start");
    assert_eq!(
        s.poll_timeout(),
        Some(back + Duration::from_secs(1)),
        "the timer restarts from the thaw, not backed off"
    );
    assert_eq!((s.stats().timeouts, s.stats().fast_retransmits), (0, 0));
}

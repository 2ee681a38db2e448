//! M-TCP's supervisor host (`super::super::mtcp`): SH-TCP's ACK rule, the held byte, freeze and resume
//! with hand-built segments, then whole transfers through the relay under wireless loss, disconnections
//! and moves of the relay, checked byte for byte and for end-to-end semantics.

use super::*;
use crate::split::mtcp::silence;
use lasthop_wire::{TcpFlags, TcpRepr};
use proptest::prelude::*;

/// An M-TCP relay with a 3000-byte window whose ends use 1000-byte segments and acknowledge at once; SH-TCP's
/// initial sequence number is 5000, its connection to the mobile's 7000. Both connections are open ([`open`]).
fn small_mtcp() -> SplitRelay {
    let tcp = TcpConfig { mss: 1000, delayed_ack_ms: 0.0, ..TcpConfig::default() };
    let cfg = SplitConfig { buffer_bytes: 3000, wired: tcp.clone(), wireless: tcp };
    let mut relay = SplitRelay::new_mtcp(cfg, FH, MH, SeqNum(5000), SeqNum(7000));
    open(&mut relay);
    relay
}

/// [`small_mtcp`] after 2000 bytes from the fixed host, of which the mobile acknowledged the first 1000.
fn half_acknowledged() -> SplitRelay {
    let mut relay = small_mtcp();
    from_fixed(&mut relay, 0..1000);
    from_fixed(&mut relay, 1000..2000);
    mobile_acks(&mut relay, 1000);
    relay
}

/// [`small_mtcp`] after the mobile acknowledged 500 bytes, then the fixed host sent up to 2000 and the relay
/// sent the mobile what it had; the mobile says nothing more.
fn silent_after_500() -> SplitRelay {
    let mut relay = small_mtcp();
    from_fixed(&mut relay, 0..1000);
    mobile_acks(&mut relay, 500);
    from_fixed(&mut relay, 1000..2000);
    sent(&mut relay);
    relay
}

/// The fixed host's SYN (its ISS 100) and the mobile's SYN-ACK (its ISS 900) through `relay`.
fn open(relay: &mut SplitRelay) {
    relay.handle_packet(Time::ZERO, false, &segment(FH, MH, 100, None, TcpFlags::SYN, 0..0));
    let synack = sent(relay);
    assert!(
        synack.iter().any(|o| o.0 == Toward::Wired && o.3.flags == TcpFlags::SYN && o.3.ack == Some(SeqNum(101))),
        "the fixed host's SYN is answered as the mobile: {synack:?}"
    );
    relay.handle_packet(Time::ZERO, true, &segment(MH, FH, 900, Some(7001), TcpFlags::SYN, 0..0));
    sent(relay);
}

/// Data bytes `data` from the fixed host (acknowledging the SYN-ACK).
fn from_fixed(relay: &mut SplitRelay, data: std::ops::Range<u64>) {
    relay.handle_packet(Time::ZERO, false, &segment(FH, MH, 101 + data.start as u32, Some(5001), TcpFlags::NONE, data));
}

/// The mobile acknowledges `bytes` bytes of the relay's stream (after the relay has sent what it had).
fn mobile_acks(relay: &mut SplitRelay, bytes: u32) {
    sent(relay);
    relay.handle_packet(Time::ZERO, true, &segment(MH, FH, 901, Some(7001 + bytes), TcpFlags::NONE, 0..0));
}

/// (acknowledgment, window) of every ACK the relay sends the fixed host now.
fn acks_to_fixed(out: &[(Toward, Ipv4Addr, Ipv4Addr, TcpRepr, Bytes)]) -> Vec<(u32, u16)> {
    out.iter().filter(|o| o.0 == Toward::Wired).map(|o| (o.3.ack.unwrap().0, o.3.window)).collect()
}

/// Sequence numbers of the data segments the relay sends the mobile now.
fn data_to_mobile(out: &[(Toward, Ipv4Addr, Ipv4Addr, TcpRepr, Bytes)]) -> Vec<u32> {
    out.iter().filter(|o| o.0 == Toward::Mobile && !o.4.is_empty()).map(|o| o.3.seq.0).collect()
}

#[test]
fn sh_tcp_acknowledges_only_what_the_mobile_acknowledged_less_the_last_byte() {
    let mut relay = small_mtcp();
    from_fixed(&mut relay, 0..1000);
    from_fixed(&mut relay, 1000..2000);
    let out = sent(&mut relay);
    assert_eq!(acks_to_fixed(&out), [], "nothing is acknowledged before the mobile acknowledges it");
    assert_eq!(data_to_mobile(&out), [7001], "relayed at once, in slow start");
    mobile_acks(&mut relay, 1000);
    assert_eq!(acks_to_fixed(&sent(&mut relay)), [(101 + 999, 3000)], "the mobile's 1000 bytes less the last");
    mobile_acks(&mut relay, 1000);
    assert_eq!(acks_to_fixed(&sent(&mut relay)), [], "a duplicate from the mobile is not passed on");
    mobile_acks(&mut relay, 2000);
    assert_eq!(acks_to_fixed(&sent(&mut relay)), [(101 + 1999, 3000)]);
    let m = relay.mtcp_stats().unwrap();
    assert_eq!((m.acks, m.held_acks), (2, 2));
    assert_eq!(relay.buffered_bytes(), 0, "the mobile has everything the relay read");
}

#[test]
fn a_cut_off_mobile_freezes_the_sender_with_the_held_byte_and_a_zero_window_until_it_is_back() {
    let mut relay = half_acknowledged();
    sent(&mut relay);
    relay.mobile_unreachable(Time::from_millis(100));
    assert_eq!(acks_to_fixed(&sent(&mut relay)), [(101 + 1000, 0)], "the held byte, with a zero window");
    // Frozen: the relay's own connection to the mobile neither sends nor times out.
    assert_eq!(relay.poll_timeout(), None);
    from_fixed(&mut relay, 2000..3000);
    assert_eq!(sent(&mut relay), [], "new data waits at the relay, unacknowledged");
    // A zero-window probe (a byte the relay has) is answered with the zero window.
    relay.handle_packet(Time::ZERO, false, &segment(FH, MH, 1101, Some(5001), TcpFlags::NONE, 1000..1001));
    assert_eq!(acks_to_fixed(&sent(&mut relay)), [(1101, 0)]);
    relay.mobile_reachable(Time::from_millis(900));
    let out = sent(&mut relay);
    assert_eq!(acks_to_fixed(&out), [(1101, 3000)], "a window update of the same acknowledgment");
    assert_eq!(data_to_mobile(&out), [8001, 9001], "resent from the mobile's last acknowledgment, no slow start");
    assert_eq!(relay.sending().stats().timeouts, 0);
    let m = relay.mtcp_stats().unwrap();
    assert_eq!((m.freezes_cut_off, m.resumes, m.probes_answered), (1, 1, 1));
}

#[test]
fn after_a_resume_the_next_acknowledgment_holds_a_byte_again() {
    let mut relay = half_acknowledged();
    relay.mobile_unreachable(Time::ZERO);
    relay.mobile_reachable(Time::ZERO);
    sent(&mut relay);
    mobile_acks(&mut relay, 2000);
    assert_eq!(acks_to_fixed(&sent(&mut relay)), [(101 + 1999, 3000)]);
}

#[test]
fn a_silent_mobile_freezes_the_sender_before_its_timer_can_expire_and_its_next_ack_resumes_it() {
    let mut relay = silent_after_500();
    let due = relay.poll_timeout().expect("the silence timer runs");
    assert_eq!(due, Time::ZERO + silence(&TcpConfig::default()), "measured from the mobile's last new ACK");
    assert_eq!(silence(&TcpConfig::default()), Duration::from_millis(250), "4.4BSD's 1 s minimum RTO, 500 ms tick");
    relay.handle_timeout(due);
    let out = sent(&mut relay);
    assert_eq!(acks_to_fixed(&out), [(101 + 500, 0)], "the held byte with a zero window");
    assert_eq!(data_to_mobile(&out), [], "the relay's own connection waits for its timer");
    let rto = relay.poll_timeout().expect("the relay's retransmission timer runs");
    relay.handle_timeout(rto);
    assert_eq!(data_to_mobile(&sent(&mut relay)), [7501], "and retransmits, probing for the mobile");
    mobile_acks(&mut relay, 2000);
    assert_eq!(acks_to_fixed(&sent(&mut relay)), [(101 + 1999, 3000)], "resumed by a new ACK, a byte held again");
    let m = relay.mtcp_stats().unwrap();
    assert_eq!((m.freezes_silent, m.resumes), (1, 1));
}

/// A relay whose mobile acknowledged 500 of the 2000 bytes it has and then went silent, at the moment the
/// silence froze the sender (returned).
fn frozen_by_silence() -> (SplitRelay, Time) {
    let mut relay = silent_after_500();
    let due = relay.poll_timeout().unwrap();
    relay.handle_timeout(due);
    assert_eq!(acks_to_fixed(&sent(&mut relay)), [(101 + 500, 0)], "the held byte with a zero window");
    (relay, due)
}

#[test]
fn a_new_cell_under_the_same_supervisor_resumes_the_sender_and_resends_to_the_mobile_at_once() {
    // The mobile leaves its cell unreported: silent, the sender frozen; the relay's timer fires and backs off.
    let (mut relay, _) = frozen_by_silence();
    let rto = relay.poll_timeout().unwrap();
    relay.handle_timeout(rto);
    assert_eq!(data_to_mobile(&sent(&mut relay)), [7501], "lost between the cells");
    let backed_off = relay.poll_timeout().unwrap();
    // The handoff's Notify tells the supervisor host the mobile is in its other cell.
    let now = rto + Duration::from_millis(300);
    assert!(backed_off > now + Duration::from_secs(1), "the next retransmission would wait for the doubled timer");
    relay.mobile_changed_cell(now);
    let out = sent(&mut relay);
    assert_eq!(acks_to_fixed(&out), [(101 + 500, 3000)], "a window update of the same acknowledgment");
    assert_eq!(data_to_mobile(&out)[0], 7501, "resent from the mobile's last acknowledgment at once");
    assert!(relay.poll_timeout().unwrap() < backed_off, "the timer restarted from now");
    mobile_acks(&mut relay, 2000);
    assert_eq!(acks_to_fixed(&sent(&mut relay)), [(101 + 1999, 3000)]);
    let m = relay.mtcp_stats().unwrap();
    assert_eq!((m.freezes_silent, m.resumes), (1, 1));
}

#[test]
fn the_hosts_report_after_a_silent_freeze_holds_the_relays_connection_still_and_the_resume_resends_at_once() {
    let (mut relay, due) = frozen_by_silence();
    // The host reports the mobile gone (the relay leaves at a handoff): no second zero window, and now the
    // relay's own connection is held still too.
    relay.mobile_unreachable(due);
    assert_eq!(sent(&mut relay), [], "nothing more to say");
    assert_eq!(relay.poll_timeout(), None, "no timer runs while cut off");
    relay.mobile_reachable(due + Duration::from_secs(3));
    let out = sent(&mut relay);
    assert_eq!(acks_to_fixed(&out), [(101 + 500, 3000)], "a window update");
    assert_eq!(data_to_mobile(&out)[0], 7501, "resent from the mobile's last acknowledgment at once");
    assert_eq!(relay.sending().stats().timeouts, 0);
    let m = relay.mtcp_stats().unwrap();
    assert_eq!((m.freezes_silent, m.freezes_cut_off, m.resumes), (1, 0, 1), "one freeze, one resume");
}

#[test]
fn a_hole_in_the_senders_stream_is_reported_with_duplicate_acks_of_the_hole_not_the_held_byte() {
    let mut relay = small_mtcp();
    from_fixed(&mut relay, 0..1000);
    from_fixed(&mut relay, 2000..3000); // 1000..2000 was lost on the wired path
    assert_eq!(acks_to_fixed(&sent(&mut relay)), [], "the mobile has not caught up with the hole yet");
    mobile_acks(&mut relay, 1000);
    assert_eq!(
        acks_to_fixed(&sent(&mut relay)),
        [(1101, 3000), (1101, 3000)],
        "up to the hole (the mobile has all before it), then one duplicate for the segment beyond it"
    );
    from_fixed(&mut relay, 3000..4000);
    assert_eq!(acks_to_fixed(&sent(&mut relay)), [(1101, 3000)], "each later segment beyond it: a duplicate");
    from_fixed(&mut relay, 1000..2000);
    let out = sent(&mut relay);
    assert_eq!(acks_to_fixed(&out), [], "the hole filled: acknowledged when the mobile acknowledges");
    assert_eq!(data_to_mobile(&out).first(), Some(&8001), "relayed from the hole on");
    assert_eq!(relay.mtcp_stats().unwrap().hole_dupacks, 1);
}

#[test]
fn the_fin_is_acknowledged_with_every_byte_once_the_mobile_acknowledges_the_relays_fin() {
    let mut relay = small_mtcp();
    from_fixed(&mut relay, 0..1000);
    relay.handle_packet(Time::ZERO, false, &segment(FH, MH, 1101, Some(5001), TcpFlags::FIN, 0..0));
    let out = sent(&mut relay);
    assert_eq!(acks_to_fixed(&out), []);
    assert!(out.iter().any(|o| o.0 == Toward::Mobile && o.3.flags.contains(TcpFlags::FIN)), "{out:?}");
    mobile_acks(&mut relay, 1000);
    assert_eq!(acks_to_fixed(&sent(&mut relay)), [(101 + 999, 3000)]);
    mobile_acks(&mut relay, 1001);
    assert_eq!(acks_to_fixed(&sent(&mut relay)), [(1102, 3000)], "the data and the FIN, nothing held");
    assert!(relay.is_finished());
}

impl Net {
    /// A fixed host sending `total` bytes to the mobile through an M-TCP relay.
    fn mtcp(total: u64) -> Net {
        let mut n = Net::new(SplitConfig::default(), total);
        n.relay = Some(SplitRelay::new_mtcp(SplitConfig::default(), FH, MH, SeqNum(1 << 31), SeqNum(12345)));
        n
    }

    /// Runs until `until`, checking at every step that the fixed sender has never been acknowledged a byte
    /// the mobile has not received.
    fn run_checking_semantics(&mut self, until: Time) {
        while self.now < until {
            let step = (self.now + Duration::from_millis(5)).min(until);
            self.run(step);
            self.now = step;
            let acked = self.sender().snd_una_offset().saturating_sub(1); // less the SYN
            let delivered = self.receiver().delivered_bytes();
            assert!(acked <= delivered + 1, "acknowledged {acked} bytes, the mobile has {delivered} (+ the FIN)");
        }
    }
}

#[test]
fn wireless_losses_are_recovered_by_the_relay_and_never_reach_the_fixed_sender() {
    let total = 300_000;
    let mut n = Net::mtcp(total);
    n.drop_to_mobile = Box::new(|i| i % 13 == 4);
    n.run_checking_semantics(Time::from_secs(60));
    assert_eq!(n.read, total);
    assert!(n.sender().is_finished());
    assert!(n.relay().sending().stats().segments_retransmitted > 0);
    let s = n.sender().stats();
    assert_eq!((s.fast_retransmits, s.timeouts), (0, 0), "the fixed sender never enters loss recovery");
}

#[test]
fn a_cut_off_mobile_leaves_the_fixed_sender_persisting_without_a_timeout_and_it_resumes_at_its_window() {
    let total = 400_000;
    let mut n = Net::mtcp(total);
    n.run(Time::from_millis(400));
    n.cut_off = true;
    n.relay.as_mut().unwrap().mobile_unreachable(n.now);
    n.run_checking_semantics(Time::from_millis(500)); // the zero window and the last ACKs reach the sender
    let cwnd = n.sender().cwnd();
    n.run_checking_semantics(Time::from_secs(10));
    assert!(n.sender().is_persisting(), "frozen in persist mode");
    assert_eq!(n.sender().cwnd(), cwnd, "its window kept");
    n.cut_off = false;
    n.relay.as_mut().unwrap().mobile_reachable(n.now);
    n.run_checking_semantics(Time::from_secs(60));
    assert_eq!(n.read, total);
    assert_eq!(n.sender().stats().timeouts, 0, "no timeout across a 9.6 s disconnection");
    assert_eq!(n.relay().sending().stats().timeouts, 0, "the relay's timers were frozen too");
}

/// What happens to the transfer at one moment of a generated run.
#[derive(Debug, Clone)]
enum Event {
    /// The mobile is out of reach for this long, reported to the relay or not.
    CutOff { ms: u64, reported: bool },
    /// The relay moves to another base station, taking this long (the mobile is cut off meanwhile).
    Move { ms: u64 },
    /// The mobile changes cell under the same supervisor host: what was on the air either way is lost, the
    /// mobile hears the new cell this long after leaving the old one, and the relay is not moved: it learns
    /// of the new cell (the handoff's Notify passing through it) and its connection carries on through it.
    CellChange { ms: u64 },
}

fn event() -> impl Strategy<Value = Event> {
    prop_oneof![
        (50u64..3000, any::<bool>()).prop_map(|(ms, reported)| Event::CutOff { ms, reported }),
        (100u64..1500).prop_map(|ms| Event::Move { ms }),
        (0u64..1500).prop_map(|ms| Event::CellChange { ms }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Whatever the wireless losses, disconnections, moves and changes of cell under the same supervisor
    /// host, every byte reaches the mobile exactly once and in order (the harness checks each byte's
    /// content), the fixed sender is never acknowledged what the mobile has not received, and neither a
    /// reported disconnection nor a change of cell times the fixed sender out.
    #[test]
    fn every_byte_arrives_once_in_order_and_nothing_is_acknowledged_early(
        loss_every in 5u64..40,
        loss_phase in 0u64..5,
        events in proptest::collection::vec((200u64..2000, event()), 0..4),
    ) {
        let total = 200_000;
        let mut n = Net::mtcp(total);
        n.drop_to_mobile = Box::new(move |i| i % loss_every == loss_phase);
        let mut reported_only = true;
        for (gap_ms, e) in events {
            n.run_checking_semantics(n.now + Duration::from_millis(gap_ms));
            n.cut_off = true;
            match e {
                Event::CutOff { ms, reported } => {
                    reported_only &= reported;
                    if reported {
                        n.relay.as_mut().unwrap().mobile_unreachable(n.now);
                    }
                    n.run_checking_semantics(n.now + Duration::from_millis(ms));
                    n.cut_off = false;
                    if reported {
                        n.relay.as_mut().unwrap().mobile_reachable(n.now);
                    }
                }
                Event::Move { ms } => {
                    n.relay.as_mut().unwrap().mobile_unreachable(n.now);
                    n.flush();
                    let moving = n.relay.take();
                    n.run(n.now + Duration::from_millis(ms));
                    n.relay = moving;
                    n.cut_off = false;
                    n.relay.as_mut().unwrap().resume_after_move(n.now);
                }
                Event::CellChange { ms } => {
                    n.in_flight.retain(|_, (to, _)| !matches!(to, At::Mh | At::RelayFromMh));
                    n.run_checking_semantics(n.now + Duration::from_millis(ms));
                    n.cut_off = false;
                    n.relay.as_mut().unwrap().mobile_changed_cell(n.now);
                }
            }
        }
        n.run_checking_semantics(Time::from_secs(400));
        prop_assert_eq!(n.read, total);
        prop_assert!(n.sender().is_finished());
        prop_assert_eq!(n.relay().stats().corrupt_bytes, 0);
        if reported_only {
            prop_assert_eq!(n.sender().stats().timeouts, 0, "reported disconnections only: no sender timeout");
        }
    }
}

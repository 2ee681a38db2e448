//! Eom 2002's *erroneous fast retransmit* (§3.2, Fig. 7, 10, 11): a fast retransmit of a segment the
//! receiver already had. Found from a flow's trace alone, as pure functions, so that a sequence plot can
//! mark them and an experiment can count them.
//!
//! A *fast retransmit* is a retransmission (a segment sent at an offset below the highest already sent)
//! sent at the very instant the third duplicate ACK for that offset reached the sender: the fast-retransmit
//! rule fires on the third duplicate ACK (RFC 5681 §3.2), while a timeout retransmission happens at a timer's
//! expiry, after no ACK. It is *erroneous* when it was "not triggered by packet loss" (§3.2, of Fig. 7's
//! retransmission of 626): the receiver already had the segment when it was sent, or no copy of the segment
//! was ever lost (every copy sent reached the receiver: the original was in flight, as in Fig. 7, where the
//! duplicate ACKs came from go-back-N copies of what the receiver had). lasthop's senders resend whole
//! segments at their original boundaries, so a segment is known by its offset.

/// Fast retransmits in `sent` (time s, stream offset of every segment sent, in order) given `acked` (time
/// s, cumulative ACK as stream offset, of every ACK that reached the sender, in order): (time, offset).
pub fn fast_retransmits(sent: &[(f64, u64)], acked: &[(f64, u64)]) -> Vec<(f64, u64)> {
    // For every ACK, how many duplicates of its value in a row it ends (0 for a new ACK).
    let mut dup_run = Vec::with_capacity(acked.len());
    let mut highest: Option<u64> = None;
    let mut run = 0u32;
    for &(_, a) in acked {
        match highest {
            Some(h) if a == h => run += 1,
            Some(h) if a < h => {}
            _ => {
                highest = Some(a);
                run = 0;
            }
        }
        dup_run.push(run);
    }
    let mut out = Vec::new();
    let mut max_sent: Option<u64> = None;
    let mut j = 0; // first ACK after the segment's instant
    for &(t, off) in sent {
        while j < acked.len() && acked[j].0 <= t {
            j += 1;
        }
        let retransmission = max_sent.is_some_and(|m| off < m);
        max_sent = Some(max_sent.map_or(off, |m| m.max(off)));
        if !retransmission {
            continue;
        }
        // The ACKs that arrived at this very instant: one of them is the third duplicate of `off`.
        let fired = acked[..j]
            .iter()
            .zip(&dup_run[..j])
            .rev()
            .take_while(|((at, _), _)| *at == t)
            .any(|(&(_, a), &r)| a == off && r == 3);
        if fired {
            out.push((t, off));
        }
    }
    out
}

/// Of `fast_retransmits` (time, offset), the erroneous ones, given `sent` (time s, offset of every segment
/// sent) and `received` (time s, offset of every data segment the receiver got, in time order).
pub fn erroneous(fast_retransmits: &[(f64, u64)], sent: &[(f64, u64)], received: &[(f64, u64)]) -> Vec<(f64, u64)> {
    let count = |v: &[(f64, u64)], off: u64| v.iter().filter(|&&(_, o)| o == off).count();
    fast_retransmits
        .iter()
        .copied()
        .filter(|&(t, off)| {
            let had = received.iter().take_while(|(at, _)| *at < t).any(|&(_, o)| o == off);
            had || count(received, off) >= count(sent, off)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Eom 2002 Fig. 11 in miniature (segment k at offset k, times in ms / 1000): 1–4 delivered, 5–8 lost in
    /// a handoff, 9–12 arrive and raise three duplicate ACKs for 5 → fast retransmit of 5 (a real one). The
    /// ACK for 13 then brings 13–17; the receiver already has 13 when three duplicate ACKs for 13 make the
    /// sender retransmit it: erroneous.
    #[test]
    fn a_hand_built_trace_has_one_real_and_one_erroneous_fast_retransmit() {
        let ms = |x: u64| x as f64 / 1000.0;
        let mut sent: Vec<(f64, u64)> = (1..=12).map(|k| (ms(k), k)).collect();
        let mut received: Vec<(f64, u64)> = (1..=4).chain(9..=12).map(|k| (ms(10 + k), k)).collect();
        let mut acked: Vec<(f64, u64)> = (2..=5).map(|k| (ms(20 + k), k)).collect();
        // Three duplicate ACKs for 5 (from 9, 10, 11), the third at 40 ms, and the fast retransmit then.
        acked.extend([(ms(30), 5), (ms(35), 5), (ms(40), 5), (ms(41), 5)]);
        sent.push((ms(40), 5));
        // A timeout retransmission of 6 at 500 ms: no duplicate ACK at that instant, so not fast.
        sent.push((ms(500), 6));
        received.extend([(ms(50), 5), (ms(510), 6), (ms(511), 7), (ms(512), 8)]);
        acked.extend([(ms(520), 13)]);
        sent.extend((13..=17).map(|k| (ms(520), k)));
        received.push((ms(530), 13));
        // Three more duplicate ACKs for 13 reach the sender (Fig. 11: raised by segments the receiver had
        // already acknowledged), the third at 560 ms, and the sender retransmits 13, which the receiver has.
        acked.extend([(ms(540), 13), (ms(550), 13), (ms(560), 13)]);
        sent.push((ms(560), 13));

        let fr = fast_retransmits(&sent, &acked);
        assert_eq!(fr, vec![(ms(40), 5), (ms(560), 13)]);
        // Segment 5's first copy was lost (sent twice, arrived once): a real one.
        assert_eq!(erroneous(&fr, &sent, &received), vec![(ms(560), 13)]);
        // Fig. 7's case: the retransmitted segment had not arrived yet, but its first copy was in flight and
        // arrives later, as does the retransmission: no copy was lost, so the fast retransmit is erroneous.
        let mut late = received.clone();
        late.retain(|&(_, o)| o != 13);
        assert!(erroneous(&fr, &sent, &late).is_empty(), "13 never arrived: lost, a real fast retransmit");
        late.extend([(ms(600), 13), (ms(610), 13)]);
        assert_eq!(erroneous(&fr, &sent, &late), vec![(ms(560), 13)]);
    }

    #[test]
    fn a_fourth_duplicate_or_an_old_ack_does_not_fire_again() {
        let sent = vec![(0.0, 0), (0.0, 1), (0.0, 2), (0.0, 3), (0.0, 4), (0.4, 0)];
        // Four duplicates of 0 after the first ACK; the retransmission coincides with the fourth only.
        let acked = vec![(0.1, 0), (0.2, 0), (0.3, 0), (0.35, 0), (0.4, 0)];
        assert!(fast_retransmits(&sent, &acked).is_empty());
        // At the third it fires; a retransmission sent before any ACK cannot.
        let acked = vec![(0.1, 0), (0.2, 0), (0.3, 0), (0.4, 0)];
        assert_eq!(fast_retransmits(&sent, &acked), vec![(0.4, 0)]);
        assert!(fast_retransmits(&[(0.0, 5), (0.0, 1)], &[]).is_empty());
        // Had before: strictly before the retransmission. Sent twice, received once at the same instant as
        // the retransmission: one copy was lost, so not erroneous.
        assert!(erroneous(&[(0.4, 0)], &sent, &[(0.4, 0)]).is_empty());
        assert_eq!(erroneous(&[(0.4, 0)], &sent, &[(0.39, 0)]), vec![(0.4, 0)]);
    }
}

//! Error models of a wireless hop: what the channel does to each frame (corrupted or not), one model per
//! link direction. The bit-error model is seed 000 §7's "Poisson-distributed bit error model", its two-state
//! Markov (good/bad) variant is the one §7 also tried; new models plug in through [`ErrorModel`].
//!
//! All draws come from the [`SimRng`] handed to [`ErrorModelConfig::build`] and all exponentials from
//! [`rng::exp1`](crate::rng::exp1), so decisions are bit-identical on every machine.

use crate::rng::{exp1, ln_1p, SimRng};
use lasthop_wire::Time;
use rand::{Rng, RngCore, SeedableRng};
use serde::{Deserialize, Serialize};

/// What the channel did to one frame.
pub trait ErrorModel: Send {
    /// Decide whether a frame of `bits` bits that starts transmission at `now` and ends at `end` is corrupted.
    ///
    /// Called once per frame, in non-decreasing order of `now`.
    fn corrupts(&mut self, now: Time, end: Time, bits: u64) -> bool;
    /// Analytic probability that a frame of `bits` bits is lost, where the model has one (for the "ideal
    /// goodput" column), else None.
    fn frame_loss_probability(&self, bits: u64) -> Option<f64>;
}

/// An error model as written in a scenario (`error = { model = "ber", ber = 1.6e-5 }`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(tag = "model", rename_all = "lowercase", deny_unknown_fields)]
pub enum ErrorModelConfig {
    /// An error-free channel (the default).
    #[default]
    None,
    /// Independent bit errors at rate `ber`: exponentially distributed distance between errored bits
    /// (geometric, the exact discrete form), mean `1/ber` bits — seed 000 §7's "Poisson" model.
    Ber { ber: f64 },
    /// Each frame lost independently with probability `loss`, whatever its length.
    Packet { loss: f64 },
    /// A two-state (good/bad) channel: exponentially distributed sojourn times with the given means in
    /// seconds, bit errors at `good_ber` or `bad_ber` depending on the state. A mean of 0 means the channel
    /// is never in that state.
    Markov { good_ber: f64, bad_ber: f64, mean_good_s: f64, mean_bad_s: f64 },
}

/// Shortest mean sojourn accepted for a Markov state (other than 0): 1 µs.
pub const MIN_MEAN_SOJOURN_S: f64 = 1e-6;

impl ErrorModelConfig {
    /// Checks ranges. The message starts with the offending field's name.
    pub fn validate(&self) -> Result<(), String> {
        fn probability(field: &str, what: &str, v: f64) -> Result<(), String> {
            if (0.0..=1.0).contains(&v) {
                Ok(())
            } else {
                Err(format!("{field}: expected {what} in [0, 1], got {v}"))
            }
        }
        fn sojourn(field: &str, v: f64) -> Result<(), String> {
            if !(v.is_finite() && v >= 0.0) {
                Err(format!("{field}: expected a mean sojourn time ≥ 0 s, got {v}"))
            } else if v > 0.0 && v < MIN_MEAN_SOJOURN_S {
                Err(format!("{field}: expected 0 (never in this state) or at least {MIN_MEAN_SOJOURN_S} s, got {v}"))
            } else {
                Ok(())
            }
        }
        match *self {
            ErrorModelConfig::None => Ok(()),
            ErrorModelConfig::Ber { ber } => probability("ber", "a bit-error rate", ber),
            ErrorModelConfig::Packet { loss } => probability("loss", "a probability", loss),
            ErrorModelConfig::Markov { good_ber, bad_ber, mean_good_s, mean_bad_s } => {
                probability("good_ber", "a bit-error rate", good_ber)?;
                probability("bad_ber", "a bit-error rate", bad_ber)?;
                sojourn("mean_good_s", mean_good_s)?;
                sojourn("mean_bad_s", mean_bad_s)?;
                if mean_good_s == 0.0 && mean_bad_s == 0.0 {
                    return Err("mean_good_s, mean_bad_s: expected at least one of them > 0".into());
                }
                Ok(())
            }
        }
    }

    /// The model, drawing from `rng` (give each model its own [`crate::rng::stream`]). Meant for a validated
    /// config; out-of-range values are clamped rather than panicking.
    pub fn build(&self, rng: SimRng) -> Box<dyn ErrorModel> {
        match *self {
            ErrorModelConfig::None => Box::new(NoErrors),
            ErrorModelConfig::Ber { ber } => Box::new(BerModel::new(ber, rng)),
            ErrorModelConfig::Packet { loss } => Box::new(PacketModel::new(loss, rng)),
            ErrorModelConfig::Markov { good_ber, bad_ber, mean_good_s, mean_bad_s } => {
                Box::new(MarkovModel::new(good_ber, bad_ber, mean_good_s, mean_bad_s, rng))
            }
        }
    }

    /// The analytic frame loss probability of the model this config builds (see
    /// [`ErrorModel::frame_loss_probability`]), without building it.
    pub fn frame_loss_probability(&self, bits: u64) -> Option<f64> {
        match *self {
            ErrorModelConfig::None => Some(0.0),
            ErrorModelConfig::Ber { ber } => Some(ber_frame_loss(ber, bits)),
            ErrorModelConfig::Packet { loss } => Some(clamp_probability(loss)),
            ErrorModelConfig::Markov { good_ber, bad_ber, mean_good_s, mean_bad_s } => {
                let pi_bad = stationary_bad(mean_good_s, mean_bad_s);
                Some((1.0 - pi_bad) * ber_frame_loss(good_ber, bits) + pi_bad * ber_frame_loss(bad_ber, bits))
            }
        }
    }
}

/// `1 − (1 − ber)^bits`: the probability that a frame of `bits` bits holds at least one errored bit.
pub fn ber_frame_loss(ber: f64, bits: u64) -> f64 {
    if bits == 0 || ber.is_nan() || ber <= 0.0 {
        0.0
    } else if ber >= 1.0 {
        1.0
    } else {
        -(bits as f64 * ln_1p(-ber)).exp_m1()
    }
}

fn clamp_probability(p: f64) -> f64 {
    if p.is_nan() {
        0.0
    } else {
        p.clamp(0.0, 1.0)
    }
}

/// Long-run fraction of time in the bad state.
fn stationary_bad(mean_good_s: f64, mean_bad_s: f64) -> f64 {
    let (g, b) = (sanitize_mean(mean_good_s), sanitize_mean(mean_bad_s));
    if g + b > 0.0 {
        b / (g + b)
    } else {
        0.0
    }
}

fn sanitize_mean(m: f64) -> f64 {
    if m.is_finite() && m > 0.0 {
        m
    } else if m == f64::INFINITY {
        f64::MAX
    } else {
        0.0
    }
}

/// A channel that never corrupts anything.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoErrors;

impl ErrorModel for NoErrors {
    fn corrupts(&mut self, _now: Time, _end: Time, _bits: u64) -> bool {
        false
    }
    fn frame_loss_probability(&self, _bits: u64) -> Option<f64> {
        Some(0.0)
    }
}

/// The bit-error process at one rate: each bit is in error independently with probability `ber`, simulated
/// by drawing the run of error-free bits before the next errored bit (geometric, as `⌊E / −ln(1−ber)⌋` with
/// `E` standard exponential) and carrying it across frames. One draw per errored bit, none per clean frame;
/// the error positions in the bit stream do not depend on how it is cut into frames.
#[derive(Debug, Clone)]
struct BitErrors {
    mode: BitMode,
    /// Error-free bits before the next errored bit.
    clean: u64,
}

#[derive(Debug, Clone, Copy)]
enum BitMode {
    Never,
    Always,
    /// Rate of the exponential whose floor is the gap: `−ln(1 − ber)`.
    Poisson {
        lambda: f64,
    },
}

impl BitErrors {
    fn new<R: RngCore + ?Sized>(ber: f64, rng: &mut R) -> BitErrors {
        let mode = if ber.is_nan() || ber <= 0.0 {
            BitMode::Never
        } else if ber >= 1.0 {
            BitMode::Always
        } else {
            BitMode::Poisson { lambda: -ln_1p(-ber) }
        };
        let mut b = BitErrors { mode, clean: 0 };
        b.clean = b.gap(rng);
        b
    }

    /// Error-free bits before the next errored bit.
    fn gap<R: RngCore + ?Sized>(&self, rng: &mut R) -> u64 {
        match self.mode {
            BitMode::Never => u64::MAX,
            BitMode::Always => 0,
            // `as` saturates: a gap beyond u64::MAX bits is never reached anyway.
            BitMode::Poisson { lambda } => (exp1(rng) / lambda) as u64,
        }
    }

    /// Passes `bits` bits through the channel; returns how many of them are in error.
    fn pass<R: RngCore + ?Sized>(&mut self, bits: u64, rng: &mut R) -> u64 {
        match self.mode {
            BitMode::Never => 0,
            BitMode::Always => bits,
            BitMode::Poisson { .. } => {
                let mut left = bits;
                let mut errors = 0;
                while self.clean < left {
                    left -= self.clean + 1;
                    errors += 1;
                    self.clean = self.gap(rng);
                }
                self.clean -= left;
                errors
            }
        }
    }
}

/// Independent bit errors at a fixed rate (seed 000 §7's "Poisson" model): a frame is corrupted when at
/// least one of its bits is. Exact for the process, O(1) per frame plus one draw per errored bit.
#[derive(Debug, Clone)]
pub struct BerModel {
    ber: f64,
    bits: BitErrors,
    rng: SimRng,
}

impl BerModel {
    pub fn new(ber: f64, mut rng: SimRng) -> BerModel {
        let bits = BitErrors::new(ber, &mut rng);
        BerModel { ber, bits, rng }
    }

    /// Passes a frame of `bits` bits; returns its number of errored bits.
    pub fn errored_bits(&mut self, bits: u64) -> u64 {
        self.bits.pass(bits, &mut self.rng)
    }
}

impl ErrorModel for BerModel {
    fn corrupts(&mut self, _now: Time, _end: Time, bits: u64) -> bool {
        self.errored_bits(bits) > 0
    }
    fn frame_loss_probability(&self, bits: u64) -> Option<f64> {
        Some(ber_frame_loss(self.ber, bits))
    }
}

/// Each frame lost independently with a fixed probability (one uniform draw per frame).
#[derive(Debug, Clone)]
pub struct PacketModel {
    loss: f64,
    rng: SimRng,
}

impl PacketModel {
    pub fn new(loss: f64, rng: SimRng) -> PacketModel {
        PacketModel { loss: clamp_probability(loss), rng }
    }
}

impl ErrorModel for PacketModel {
    fn corrupts(&mut self, _now: Time, _end: Time, _bits: u64) -> bool {
        // gen::<f64>() is in [0, 1): loss 0 never, loss 1 always.
        self.rng.gen::<f64>() < self.loss
    }
    fn frame_loss_probability(&self, _bits: u64) -> Option<f64> {
        Some(self.loss)
    }
}

/// Two-state (good/bad) channel in simulated time. Sojourn times are exponential (rounded to whole
/// nanoseconds, at least 1 ns); the process starts at time 0 in a state drawn from the stationary
/// distribution, so it is stationary from the start.
///
/// A frame's bits are split across the state changes that fall inside `[now, end)`, in proportion to time,
/// and each part goes through that state's bit-error process (each state keeps its own, so both are exact
/// Bernoulli-per-bit processes over the bits sent in that state). The state trajectory is drawn from its own
/// generator (seeded from the one given), so it depends only on time, not on the traffic offered.
#[derive(Debug, Clone)]
pub struct MarkovModel {
    good: BitErrors,
    bad: BitErrors,
    in_bad: bool,
    /// Time (ns) of the next state change; u64::MAX if there is none.
    next_change: u64,
    mean_good_ns: f64,
    mean_bad_ns: f64,
    pi_bad: f64,
    good_ber: f64,
    bad_ber: f64,
    bit_rng: SimRng,
    state_rng: SimRng,
}

impl MarkovModel {
    pub fn new(good_ber: f64, bad_ber: f64, mean_good_s: f64, mean_bad_s: f64, mut rng: SimRng) -> MarkovModel {
        let state_rng = SimRng::from_seed(rng.gen());
        let mut bit_rng = rng;
        let good = BitErrors::new(good_ber, &mut bit_rng);
        let bad = BitErrors::new(bad_ber, &mut bit_rng);
        let (g, b) = (sanitize_mean(mean_good_s), sanitize_mean(mean_bad_s));
        let mut m = MarkovModel {
            good,
            bad,
            in_bad: false,
            next_change: u64::MAX,
            mean_good_ns: g * 1e9,
            mean_bad_ns: b * 1e9,
            pi_bad: stationary_bad(mean_good_s, mean_bad_s),
            good_ber,
            bad_ber,
            bit_rng,
            state_rng,
        };
        m.in_bad = m.state_rng.gen::<f64>() < m.pi_bad;
        m.next_change = m.sojourn();
        m
    }

    /// Whether the channel is in the bad state at `t` (advances the state process to `t`).
    pub fn is_bad_at(&mut self, t: Time) -> bool {
        self.advance_to(t.as_nanos());
        self.in_bad
    }

    /// A sojourn in the current state (ns); u64::MAX if the channel can never leave it.
    fn sojourn(&mut self) -> u64 {
        let (mean, other) =
            if self.in_bad { (self.mean_bad_ns, self.mean_good_ns) } else { (self.mean_good_ns, self.mean_bad_ns) };
        if other == 0.0 {
            return u64::MAX;
        }
        ((exp1(&mut self.state_rng) * mean).round() as u64).max(1)
    }

    /// Applies every state change at or before `t`.
    fn advance_to(&mut self, t: u64) {
        while self.next_change <= t && self.next_change != u64::MAX {
            self.in_bad = !self.in_bad;
            let d = self.sojourn();
            self.next_change = self.next_change.saturating_add(d);
        }
    }

    fn pass(&mut self, bits: u64) -> u64 {
        let process = if self.in_bad { &mut self.bad } else { &mut self.good };
        process.pass(bits, &mut self.bit_rng)
    }
}

impl ErrorModel for MarkovModel {
    fn corrupts(&mut self, now: Time, end: Time, bits: u64) -> bool {
        let t0 = now.as_nanos();
        let t1 = end.as_nanos().max(t0);
        self.advance_to(t0);
        let span = u128::from(t1 - t0);
        let mut errors = 0;
        let mut sent = 0;
        // Every change strictly inside the frame splits it (after advance_to, next_change > t0, so span > 0).
        while self.next_change < t1 {
            let cut = self.next_change;
            let upto = (u128::from(bits) * u128::from(cut - t0) / span) as u64;
            errors += self.pass(upto - sent);
            sent = upto;
            self.advance_to(cut);
        }
        errors += self.pass(bits - sent);
        errors > 0
    }

    /// The stationary mix `π_good·(1 − (1 − good_ber)^bits) + π_bad·(1 − (1 − bad_ber)^bits)`: exact when
    /// frames are short against the sojourn times (it ignores frames that straddle a state change).
    fn frame_loss_probability(&self, bits: u64) -> Option<f64> {
        Some(
            (1.0 - self.pi_bad) * ber_frame_loss(self.good_ber, bits)
                + self.pi_bad * ber_frame_loss(self.bad_ber, bits),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::stream;
    use std::time::Duration;

    fn rng(name: &str) -> SimRng {
        stream(1, "test.error_model", name)
    }

    /// Runs `frames` back-to-back frames of `bits` bits at `rate_bps`; returns the loss decisions.
    fn run(model: &mut dyn ErrorModel, frames: usize, bits: u64, rate_bps: u64) -> Vec<bool> {
        let airtime = Duration::from_nanos(bits * 1_000_000_000 / rate_bps);
        let mut now = Time::ZERO;
        (0..frames)
            .map(|_| {
                let end = now + airtime;
                let lost = model.corrupts(now, end, bits);
                now = end;
                lost
            })
            .collect()
    }

    fn rate(v: &[bool]) -> f64 {
        v.iter().filter(|&&l| l).count() as f64 / v.len() as f64
    }

    /// P(frame i+1 lost | frame i lost).
    fn loss_after_loss(v: &[bool]) -> f64 {
        let pairs = v.windows(2).filter(|w| w[0]).count();
        v.windows(2).filter(|w| w[0] && w[1]).count() as f64 / pairs as f64
    }

    #[test]
    fn none_never_corrupts() {
        let mut m = ErrorModelConfig::None.build(rng("none"));
        assert!(!run(m.as_mut(), 10_000, 12_000, 2_000_000).contains(&true));
        assert_eq!(m.frame_loss_probability(12_000), Some(0.0));
    }

    #[test]
    fn ber_frame_loss_rate_matches_analytic() {
        let cfg = ErrorModelConfig::Ber { ber: 1.6e-5 };
        let mut m = cfg.build(rng("ber"));
        let observed = rate(&run(m.as_mut(), 200_000, 12_000, 2_000_000));
        let analytic = m.frame_loss_probability(12_000).unwrap();
        assert!((analytic - 0.174_7).abs() < 1e-3, "analytic {analytic}");
        assert_eq!(cfg.frame_loss_probability(12_000), Some(analytic));
        assert!(((observed - analytic) / analytic).abs() < 0.02, "observed {observed}, analytic {analytic}");
    }

    #[test]
    fn ber_mean_inter_error_distance() {
        let ber = 1.6e-5;
        let mut m = BerModel::new(ber, rng("distance"));
        let (frames, bits) = (200_000u64, 12_000u64);
        let errors: u64 = (0..frames).map(|_| m.errored_bits(bits)).sum();
        let mean = (frames * bits) as f64 / errors as f64;
        assert!(((mean * ber) - 1.0).abs() < 0.02, "mean distance {mean}, expected {}", 1.0 / ber);

        // The gaps themselves: mean 1/ber bits between errored bits.
        let mut r = rng("gaps");
        let b = BitErrors::new(ber, &mut r);
        let n = 100_000;
        let total: f64 = (0..n).map(|_| (b.gap(&mut r) + 1) as f64).sum();
        assert!(((total / n as f64) * ber - 1.0).abs() < 0.02);
    }

    #[test]
    fn ber_several_errors_in_one_frame_are_all_consumed() {
        // 12 errors per frame on average: a frame-level Bernoulli would count 1.
        let ber = 1e-3;
        let mut m = BerModel::new(ber, rng("many"));
        let frames = 20_000u64;
        let errors: u64 = (0..frames).map(|_| m.errored_bits(12_000)).sum();
        let per_frame = errors as f64 / frames as f64;
        assert!((per_frame - 12.0).abs() < 0.2, "errors per frame {per_frame}");
    }

    #[test]
    fn ber_errors_do_not_depend_on_framing() {
        // The same bit stream cut into different frames has its errors at the same bits.
        let ber = 1e-3;
        let total = 300_000u64;
        let mut one_bit = BerModel::new(ber, rng("framing"));
        let positions: Vec<u64> = (0..total).filter(|_| one_bit.errored_bits(1) == 1).collect();
        let mut framed = BerModel::new(ber, rng("framing"));
        let mut cut = rng("cuts");
        let mut at = 0;
        let mut seen = 0;
        while at < total {
            let len = cut.gen_range(1..5_000u64).min(total - at);
            let expect = positions.iter().filter(|&&p| p >= at && p < at + len).count() as u64;
            assert_eq!(framed.errored_bits(len), expect, "frame [{at}, {})", at + len);
            seen += expect;
            at += len;
        }
        assert_eq!(seen, positions.len() as u64);
        assert!(seen > 200, "too few errors to mean anything: {seen}");
    }

    #[test]
    fn ber_extremes() {
        for ber in [0.0, 1e-300, f64::MIN_POSITIVE] {
            let mut m = ErrorModelConfig::Ber { ber }.build(rng("zero"));
            assert!(!run(m.as_mut(), 10_000, 1_000_000, 2_000_000).contains(&true), "ber {ber}");
            let p = m.frame_loss_probability(12_000).unwrap();
            assert!(p.is_finite() && p < 1e-290, "ber {ber}: {p}");
        }
        let mut m = ErrorModelConfig::Ber { ber: 1.0 }.build(rng("one"));
        assert!(run(m.as_mut(), 1_000, 1, 2_000_000).iter().all(|&l| l));
        assert_eq!(m.frame_loss_probability(1), Some(1.0));
        // Unvalidated values are clamped, not trusted.
        let mut m = ErrorModelConfig::Ber { ber: 7.0 }.build(rng("seven"));
        assert!(m.corrupts(Time::ZERO, Time::ZERO, 8));
        assert!(!m.corrupts(Time::ZERO, Time::ZERO, 0), "a zero-bit frame holds no errored bit");
        let mut m = ErrorModelConfig::Ber { ber: f64::NAN }.build(rng("nan"));
        assert!(!m.corrupts(Time::ZERO, Time::ZERO, 8));
        // A high rate is still exact and terminates: 0.5 per bit.
        let mut m = BerModel::new(0.5, rng("half"));
        let errors: u64 = (0..100).map(|_| m.errored_bits(12_000)).sum();
        assert!((errors as f64 / 1.2e6 - 0.5).abs() < 0.01);
        assert!((ber_frame_loss(1e-9, 8) / (8e-9 - 28e-18) - 1.0).abs() < 1e-12);
    }

    #[test]
    fn same_seed_same_decisions() {
        for cfg in [
            ErrorModelConfig::Ber { ber: 1e-5 },
            ErrorModelConfig::Packet { loss: 0.1 },
            ErrorModelConfig::Markov { good_ber: 1e-6, bad_ber: 1e-3, mean_good_s: 0.5, mean_bad_s: 0.05 },
        ] {
            let a = run(cfg.build(rng("det")).as_mut(), 50_000, 12_000, 2_000_000);
            let b = run(cfg.build(rng("det")).as_mut(), 50_000, 12_000, 2_000_000);
            let c = run(cfg.build(rng("det2")).as_mut(), 50_000, 12_000, 2_000_000);
            assert_eq!(a, b, "{cfg:?}");
            assert_ne!(a, c, "{cfg:?}");
        }
    }

    /// Pins the decisions: if this fails, every BER result in the project changed.
    #[test]
    fn golden_ber_decisions() {
        let mut m = ErrorModelConfig::Ber { ber: 1.6e-5 }.build(stream(1, "link.w", "error.0"));
        let lost: Vec<usize> =
            run(m.as_mut(), 100, 12_000, 2_000_000).iter().enumerate().filter(|(_, &l)| l).map(|(i, _)| i).collect();
        assert_eq!(lost, vec![2, 10, 24, 41, 42, 59, 74, 94, 99]);
    }

    #[test]
    fn packet_rate_and_independence() {
        let mut m = ErrorModelConfig::Packet { loss: 0.1 }.build(rng("packet"));
        let v = run(m.as_mut(), 200_000, 12_000, 2_000_000);
        assert!((rate(&v) - 0.1).abs() < 0.003, "rate {}", rate(&v));
        assert!((loss_after_loss(&v) - 0.1).abs() < 0.01, "{}", loss_after_loss(&v));
        assert_eq!(m.frame_loss_probability(12_000), Some(0.1));
        let mut never = ErrorModelConfig::Packet { loss: 0.0 }.build(rng("p0"));
        assert!(!run(never.as_mut(), 10_000, 8, 1_000).contains(&true));
        let mut always = ErrorModelConfig::Packet { loss: 1.0 }.build(rng("p1"));
        assert!(run(always.as_mut(), 10_000, 8, 1_000).iter().all(|&l| l));
    }

    const MARKOV: ErrorModelConfig =
        ErrorModelConfig::Markov { good_ber: 1e-6, bad_ber: 1e-3, mean_good_s: 0.5, mean_bad_s: 0.05 };

    #[test]
    fn markov_long_run_loss_is_stationary_mix() {
        // Frames short against the sojourns (1 200 bits at 2 Mb/s: 0.6 ms; bad periods of 50 ms), so few
        // straddle a change: 10 M frames = 100 minutes of channel, ~11 000 bad periods.
        let cfg = ErrorModelConfig::Markov { good_ber: 1e-5, bad_ber: 1e-2, mean_good_s: 0.5, mean_bad_s: 0.05 };
        let mut m = cfg.build(rng("markov"));
        let v = run(m.as_mut(), 10_000_000, 1_200, 2_000_000);
        let analytic = m.frame_loss_probability(1_200).unwrap();
        let pi_bad = 0.05 / 0.55;
        let expect = (1.0 - pi_bad) * ber_frame_loss(1e-5, 1_200) + pi_bad * ber_frame_loss(1e-2, 1_200);
        assert!((analytic - expect).abs() < 1e-12);
        assert_eq!(cfg.frame_loss_probability(1_200), Some(analytic));
        let observed = rate(&v);
        assert!(((observed - analytic) / analytic).abs() < 0.05, "observed {observed}, stationary {analytic}");
    }

    #[test]
    fn markov_time_in_bad_state() {
        let mut m = MarkovModel::new(0.0, 1.0, 0.5, 0.05, rng("time"));
        let samples = 20_000_000u64;
        let bad = (0..samples).filter(|i| m.is_bad_at(Time::from_millis(*i))).count();
        let frac = bad as f64 / samples as f64;
        assert!((frac / (0.05 / 0.55) - 1.0).abs() < 0.05, "fraction bad {frac}");
    }

    #[test]
    fn markov_losses_are_bursty() {
        let mut m = MARKOV.build(rng("burst"));
        let v = run(m.as_mut(), 400_000, 12_000, 2_000_000);
        let (p, after) = (rate(&v), loss_after_loss(&v));
        // Bernoulli at the same rate would give after ≈ p (see packet_rate_and_independence).
        assert!(after > 5.0 * p, "P(loss) {p}, P(loss | previous lost) {after}");
    }

    #[test]
    fn markov_splits_a_frame_across_a_state_change() {
        let mut m = MarkovModel::new(0.0, 1.0, 1.0, 1.0, rng("split"));
        // Force: good until 500 ns, then bad for 1 s.
        m.in_bad = false;
        m.next_change = 500;
        assert!(!m.corrupts(Time::from_nanos(0), Time::from_nanos(500), 1_000), "ends at the change");
        let mut m2 = m.clone();
        assert!(m.corrupts(Time::from_nanos(0), Time::from_nanos(1_000), 1_000), "second half in the bad state");
        // The first 499 ns carry 499 good bits, the 1 ns after the change 1 bad (errored) bit.
        assert!(m2.corrupts(Time::from_nanos(1), Time::from_nanos(501), 500));
    }

    #[test]
    fn markov_zero_mean_state_is_never_entered() {
        let mut m = ErrorModelConfig::Markov { good_ber: 0.0, bad_ber: 1.0, mean_good_s: 1.0, mean_bad_s: 0.0 }
            .build(rng("never-bad"));
        assert!(!run(m.as_mut(), 100_000, 12_000, 2_000_000).contains(&true));
        assert_eq!(m.frame_loss_probability(12_000), Some(0.0));
        let mut m = ErrorModelConfig::Markov { good_ber: 0.0, bad_ber: 1.0, mean_good_s: 0.0, mean_bad_s: 1.0 }
            .build(rng("always-bad"));
        assert!(run(m.as_mut(), 100_000, 12_000, 2_000_000).iter().all(|&l| l));
    }

    #[test]
    fn markov_state_does_not_depend_on_traffic() {
        let mut a = MarkovModel::new(1e-3, 1e-2, 0.01, 0.01, rng("traffic"));
        let mut b = a.clone();
        for i in 0..10_000u64 {
            // b also carries heavy traffic (drawing many bit errors); a carries none.
            let t = Time::from_micros(i * 100);
            assert_eq!(a.is_bad_at(t), b.is_bad_at(t), "at {t:?}");
            b.corrupts(t, t + Duration::from_micros(50), 100_000);
        }
    }

    #[test]
    fn parse_from_toml() {
        #[derive(Deserialize)]
        struct Link {
            #[serde(default)]
            error: ErrorModelConfig,
        }
        let p = |s: &str| toml::from_str::<Link>(s).map(|l| l.error).map_err(|e| e.to_string());
        assert_eq!(p("").unwrap(), ErrorModelConfig::None);
        assert_eq!(p("error = { model = \"none\" }").unwrap(), ErrorModelConfig::None);
        assert_eq!(p("error = { model = \"ber\", ber = 1.6e-5 }").unwrap(), ErrorModelConfig::Ber { ber: 1.6e-5 });
        assert_eq!(p("[error]\nmodel = \"packet\"\nloss = 0.02").unwrap(), ErrorModelConfig::Packet { loss: 0.02 });
        assert_eq!(
            p("error = { model = \"markov\", good_ber = 1e-6, bad_ber = 1e-2, mean_good_s = 1.0, mean_bad_s = 0.1 }")
                .unwrap(),
            ErrorModelConfig::Markov { good_ber: 1e-6, bad_ber: 1e-2, mean_good_s: 1.0, mean_bad_s: 0.1 }
        );
        let e = p("error = { model = \"ber\", ber = 1e-5, loss = 0.1 }").unwrap_err();
        assert!(e.contains("unknown field `loss`"), "{e}");
        let e = p("error = { model = \"gilbert\" }").unwrap_err();
        assert!(e.contains("gilbert") && e.contains("markov"), "{e}");
        let e = p("error = { model = \"ber\" }").unwrap_err();
        assert!(e.contains("missing field `ber`"), "{e}");
        // Round trip.
        let s = toml::to_string(&Link2 { error: MARKOV }).unwrap();
        assert_eq!(toml::from_str::<Link>(&s).unwrap().error, MARKOV);
        #[derive(Serialize)]
        struct Link2 {
            error: ErrorModelConfig,
        }
    }

    #[test]
    fn validation_names_the_field() {
        let err = |c: ErrorModelConfig| c.validate().unwrap_err();
        assert!(ErrorModelConfig::None.validate().is_ok());
        assert!(ErrorModelConfig::Ber { ber: 0.0 }.validate().is_ok());
        assert!(ErrorModelConfig::Ber { ber: 1.0 }.validate().is_ok());
        assert!(MARKOV.validate().is_ok());
        assert!(err(ErrorModelConfig::Ber { ber: -1e-5 }).starts_with("ber: "));
        assert!(err(ErrorModelConfig::Ber { ber: f64::NAN }).starts_with("ber: "));
        assert!(err(ErrorModelConfig::Ber { ber: 1.5 }).contains("[0, 1], got 1.5"));
        assert!(err(ErrorModelConfig::Packet { loss: 2.0 }).starts_with("loss: "));
        assert!(err(ErrorModelConfig::Packet { loss: f64::INFINITY }).starts_with("loss: "));
        let m = |g: f64, b: f64, mg: f64, mb: f64| ErrorModelConfig::Markov {
            good_ber: g,
            bad_ber: b,
            mean_good_s: mg,
            mean_bad_s: mb,
        };
        assert!(err(m(-0.1, 0.1, 1.0, 1.0)).starts_with("good_ber: "));
        assert!(err(m(0.1, 1.1, 1.0, 1.0)).starts_with("bad_ber: "));
        assert!(err(m(0.1, 0.1, -1.0, 1.0)).starts_with("mean_good_s: "));
        assert!(err(m(0.1, 0.1, 1.0, f64::INFINITY)).starts_with("mean_bad_s: "));
        assert!(err(m(0.1, 0.1, 1.0, 1e-9)).starts_with("mean_bad_s: "));
        assert!(err(m(0.1, 0.1, 0.0, 0.0)).contains("at least one"));
        assert!(m(0.1, 0.1, 0.0, 1.0).validate().is_ok());
    }

    #[test]
    fn boxed_models_are_send() {
        fn send<T: Send>(_: T) {}
        send(MARKOV.build(rng("send")));
    }
}

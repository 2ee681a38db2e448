//! Error models of a wireless hop: what the channel does to each frame (corrupted or not), one model per
//! link direction. The bit-error model is Balakrishnan 1995 §7's "Poisson-distributed bit error model", its two-state
//! Markov (good/bad) variant is the one §7 also tried; new models plug in through [`ErrorModel`].
//!
//! The empirical two-state model of Balakrishnan 1998 §4 ("Modeling Wireless Errors") is [`EmpiricalModel`]: error-free
//! and error periods whose durations are drawn from two CDFs read from a file (format: [`Cdfs`], "CDF files"
//! below). The tools that make and fit loss traces for it are in [`crate::fit`].
//!
//! All draws come from the [`SimRng`] handed to [`ErrorModelConfig::build`] and all exponentials from
//! [`rng::exp1`](crate::rng::exp1), so decisions are bit-identical on every machine.

use crate::rng::{exp1, ln_1p, unit_open0, SimRng};
use lasthop_wire::Time;
use rand::{Rng, RngCore, SeedableRng};
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::sync::{Arc, OnceLock};

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
    /// (geometric, the exact discrete form), mean `1/ber` bits — Balakrishnan 1995 §7's "Poisson" model.
    Ber { ber: f64 },
    /// Each frame lost independently with probability `loss`, whatever its length.
    Packet { loss: f64 },
    /// Bursts of exactly `frames` consecutive lost frames ([`BurstModel`]): a burst starts at a frame that
    /// has an errored bit under bit errors at rate `ber` (exponential distance in bits, as `ber`), and the
    /// `frames − 1` frames sent after it in the same direction are lost with it.
    Burst { ber: f64, frames: u32 },
    /// A two-state (good/bad) channel: exponentially distributed sojourn times with the given means in
    /// seconds, bit errors at `good_ber` or `bad_ber` depending on the state. A mean of 0 means the channel
    /// is never in that state.
    Markov { good_ber: f64, bad_ber: f64, mean_good_s: f64, mean_bad_s: f64 },
    /// Balakrishnan 1998 §4's empirical two-state channel ([`EmpiricalModel`]): error-free and error periods with
    /// durations drawn from the two CDFs of a CDF file; every frame sent during an error period is lost, none
    /// sent during an error-free one. Exactly one of `cdfs` (a file, see [`Cdfs`]; a relative path is
    /// resolved against the scenario file's directory by [`ErrorModelConfig::resolve_paths`]) and `builtin`
    /// (a CDF set shipped with lasthop, one of [`BUILTIN_CDFS`]) is given:
    /// `error = { model = "empirical", cdfs = "reinas.toml" }`, `error = { model = "empirical", builtin = "reinas" }`.
    Empirical {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cdfs: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        builtin: Option<String>,
        /// The CDFs once read (by [`ErrorModelConfig::validate`], or given directly to
        /// [`ErrorModelConfig::empirical`]); not part of the scenario text and ignored by `==`.
        #[serde(skip)]
        loaded: LoadedCdfs,
    },
}

/// Longest burst of [`ErrorModelConfig::Burst`], in frames.
pub const MAX_BURST_FRAMES: u32 = 1024;

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
            ErrorModelConfig::Empirical { .. } => self.empirical_cdfs().map(|_| ()),
            ErrorModelConfig::None => Ok(()),
            ErrorModelConfig::Ber { ber } => probability("ber", "a bit-error rate", ber),
            ErrorModelConfig::Packet { loss } => probability("loss", "a probability", loss),
            ErrorModelConfig::Burst { ber, frames } => {
                probability("ber", "a bit-error rate", ber)?;
                if !(1..=MAX_BURST_FRAMES).contains(&frames) {
                    return Err(format!(
                        "frames: expected a burst length of 1 ..= {MAX_BURST_FRAMES} frames, got {frames}"
                    ));
                }
                Ok(())
            }
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
    ///
    /// # Panics
    /// For an `empirical` config whose CDFs cannot be loaded: [`ErrorModelConfig::validate`] loads them
    /// (and keeps them, so the file is read once) and reports that case as an error instead.
    pub fn build(&self, rng: SimRng) -> Box<dyn ErrorModel> {
        match *self {
            ErrorModelConfig::Empirical { .. } => match self.empirical_cdfs() {
                Ok(cdfs) => Box::new(EmpiricalModel::new(cdfs, rng)),
                Err(e) => panic!("empirical error model used without validation: {e}"),
            },
            ErrorModelConfig::None => Box::new(NoErrors),
            ErrorModelConfig::Ber { ber } => Box::new(BerModel::new(ber, rng)),
            ErrorModelConfig::Packet { loss } => Box::new(PacketModel::new(loss, rng)),
            ErrorModelConfig::Burst { ber, frames } => Box::new(BurstModel::new(ber, frames, rng)),
            ErrorModelConfig::Markov { good_ber, bad_ber, mean_good_s, mean_bad_s } => {
                Box::new(MarkovModel::new(good_ber, bad_ber, mean_good_s, mean_bad_s, rng))
            }
        }
    }

    /// The analytic frame loss probability of the model this config builds (see
    /// [`ErrorModel::frame_loss_probability`]), without building it.
    pub fn frame_loss_probability(&self, bits: u64) -> Option<f64> {
        match *self {
            ErrorModelConfig::Empirical { .. } => self.empirical_cdfs().ok().map(|c| c.error_fraction()),
            ErrorModelConfig::None => Some(0.0),
            ErrorModelConfig::Ber { ber } => Some(ber_frame_loss(ber, bits)),
            ErrorModelConfig::Packet { loss } => Some(clamp_probability(loss)),
            ErrorModelConfig::Burst { ber, frames } => Some(burst_frame_loss(ber, frames, bits)),
            ErrorModelConfig::Markov { good_ber, bad_ber, mean_good_s, mean_bad_s } => {
                let pi_bad = stationary_bad(mean_good_s, mean_bad_s);
                Some((1.0 - pi_bad) * ber_frame_loss(good_ber, bits) + pi_bad * ber_frame_loss(bad_ber, bits))
            }
        }
    }
}

impl ErrorModelConfig {
    /// An `empirical` config reading the CDF file at `path` (relative paths: see [`Self::resolve_paths`]).
    pub fn empirical_file(path: impl Into<String>) -> ErrorModelConfig {
        ErrorModelConfig::Empirical { cdfs: Some(path.into()), builtin: None, loaded: LoadedCdfs::default() }
    }

    /// An `empirical` config using a CDF set shipped with lasthop (one of [`BUILTIN_CDFS`]).
    pub fn empirical_builtin(name: impl Into<String>) -> ErrorModelConfig {
        ErrorModelConfig::Empirical { cdfs: None, builtin: Some(name.into()), loaded: LoadedCdfs::default() }
    }

    /// An `empirical` config holding `cdfs` directly (from [`crate::fit::fit`], say). It has no file to
    /// name, so it serializes as `{ model = "empirical" }`, which does not validate when read back.
    pub fn empirical(cdfs: Cdfs) -> ErrorModelConfig {
        let loaded = LoadedCdfs::default();
        let _ = loaded.0.set(Arc::new(cdfs));
        ErrorModelConfig::Empirical { cdfs: None, builtin: None, loaded }
    }

    /// Makes every relative file path in the config relative to `base_dir` (the directory of the scenario
    /// file that names it), so a scenario means the same thing from any working directory. Absolute paths,
    /// builtins and models without files are left alone. Call it after parsing and before
    /// [`Self::validate`] (which reads the file).
    pub fn resolve_paths(&mut self, base_dir: &Path) {
        if let ErrorModelConfig::Empirical { cdfs: Some(path), loaded, .. } = self {
            if Path::new(path.as_str()).is_relative() {
                *path = base_dir.join(path.as_str()).to_string_lossy().into_owned();
                // A cache filled through the old path may hold another file.
                *loaded = LoadedCdfs::default();
            }
        }
    }

    /// The CDFs of an `empirical` config, read on first use and kept (clones share them); an error for
    /// other models. The error starts with the offending field's name, then the file, line
    /// and field inside it (`cdfs: ch.toml:12: error.cdf[3]: …`).
    pub fn empirical_cdfs(&self) -> Result<Arc<Cdfs>, String> {
        let ErrorModelConfig::Empirical { cdfs, builtin, loaded } = self else {
            return Err("model: not an empirical model".into());
        };
        if let Some(c) = loaded.0.get() {
            return Ok(c.clone());
        }
        let read = match (cdfs, builtin) {
            (Some(_), Some(_)) => return Err("cdfs, builtin: expected only one of them".into()),
            (None, None) => {
                return Err(format!(
                    "cdfs: expected `cdfs` (path of a CDF file) or `builtin` (one of: {})",
                    BUILTIN_CDFS.join(", ")
                ))
            }
            (Some(path), None) => Arc::new(read_cdfs(Path::new(path)).map_err(|e| format!("cdfs: {e}"))?),
            (None, Some(name)) => match builtin_cdfs(name) {
                Some(parsed) => parsed.map_err(|e| format!("builtin: {e}"))?,
                None => {
                    return Err(format!("builtin: no builtin channel `{name}` (builtins: {})", BUILTIN_CDFS.join(", ")))
                }
            },
        };
        Ok(loaded.0.get_or_init(|| read).clone())
    }
}

/// The CDFs an `empirical` config has read. Shared by clones of the config (the file is read once however
/// many links and runs use it); equality ignores it (the config's `cdfs`/`builtin` say where it came from).
#[derive(Clone, Default)]
pub struct LoadedCdfs(Arc<OnceLock<Arc<Cdfs>>>);

impl PartialEq for LoadedCdfs {
    fn eq(&self, _other: &LoadedCdfs) -> bool {
        true
    }
}

impl std::fmt::Debug for LoadedCdfs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.get().is_some() { "LoadedCdfs(loaded)" } else { "LoadedCdfs(not loaded)" })
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

/// Independent bit errors at a fixed rate (Balakrishnan 1995 §7's "Poisson" model): a frame is corrupted when at
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

/// Bursts of a fixed number of lost frames, for the ToN'97 comparison's burst experiment (reference [12] of
/// Eom 2002: losses in bursts of 2, 4 and 6 frames). Burst starts follow the bit-error process of
/// [`BerModel`] over the frames sent outside bursts: a frame with an errored bit is lost and opens a burst,
/// and the next `frames − 1` frames in this direction are lost whatever their length (the bit process
/// pauses during a burst). So a burst is exactly `frames` frames long, two bursts never overlap, and with
/// `frames = 1` the model is [`BerModel`].
#[derive(Debug, Clone)]
pub struct BurstModel {
    ber: f64,
    frames: u32,
    bits: BitErrors,
    /// Frames of the current burst still to lose.
    left: u32,
    rng: SimRng,
}

impl BurstModel {
    pub fn new(ber: f64, frames: u32, mut rng: SimRng) -> BurstModel {
        let bits = BitErrors::new(ber, &mut rng);
        BurstModel { ber, frames: frames.clamp(1, MAX_BURST_FRAMES), bits, left: 0, rng }
    }
}

impl ErrorModel for BurstModel {
    fn corrupts(&mut self, _now: Time, _end: Time, bits: u64) -> bool {
        if self.left > 0 {
            self.left -= 1;
            return true;
        }
        if self.bits.pass(bits, &mut self.rng) > 0 {
            self.left = self.frames - 1;
            return true;
        }
        false
    }
    fn frame_loss_probability(&self, bits: u64) -> Option<f64> {
        Some(burst_frame_loss(self.ber, self.frames, bits))
    }
}

/// Long-run fraction of frames of `bits` bits lost by [`BurstModel`]: a burst of `k` frames follows a run of
/// clean frames of mean `(1 − p)/p` (p = the chance a frame opens a burst), so `k·p / (k·p + 1 − p)`.
pub fn burst_frame_loss(ber: f64, frames: u32, bits: u64) -> f64 {
    let p = ber_frame_loss(ber, bits);
    let k = f64::from(frames.clamp(1, MAX_BURST_FRAMES));
    if p <= 0.0 || k == 1.0 {
        p
    } else {
        k * p / (k * p + 1.0 - p)
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

// ---------------------------------------------------------------------------------------------------------
// The empirical two-state model of Balakrishnan 1998 §4, and its CDF files.
// ---------------------------------------------------------------------------------------------------------

/// Balakrishnan 1998 §4's empirical channel: "two linked states, corresponding to the error-free and error durations
/// … It starts in the error-free state where no errors occur, and stays there for an amount of time
/// determined by a lookup into the corresponding CDF. After this time has elapsed, there is an automatic
/// transition to the error state, where all incoming packets are corrupted", and back after a time drawn
/// from the error CDF.
///
/// The paper does not say at which instant of a frame's transmission the state is looked at; here a frame
/// is lost when the channel is in the error state at the **middle** of `[now, end)`. A point decision keeps
/// the long-run fraction of frames lost equal to the fraction of time spent in error
/// ([`Cdfs::error_fraction`], the CDF means) whatever the frame length; the middle (rather than the start)
/// follows the state that covers more of the frame when one change falls inside it, and keeps decisions half
/// a packet away from the state changes of a CDF fitted at the same packet interval (durations that are whole
/// multiples of S/R, see [`crate::fit::fit`]), so a trace replays its run lengths exactly. Frame length in
/// bits plays no part: the states are "error" and "error-free", not bit-error rates.
///
/// Time-driven like [`MarkovModel`]: the state timeline is drawn from the generator alone (durations rounded
/// to whole nanoseconds, at least 1 ns) and does not depend on the traffic offered.
#[derive(Debug, Clone)]
pub struct EmpiricalModel {
    cdfs: Arc<Cdfs>,
    in_error: bool,
    /// Time (ns) of the next state change.
    next_change: u64,
    rng: SimRng,
}

impl EmpiricalModel {
    /// The channel at time 0: error-free, at the start of a full error-free period (as the paper's model
    /// starts).
    pub fn new(cdfs: Arc<Cdfs>, rng: SimRng) -> EmpiricalModel {
        let mut m = EmpiricalModel { cdfs, in_error: false, next_change: 0, rng };
        m.next_change = m.period();
        m
    }

    /// Whether the channel is in the error state at `t` (advances the state process to `t`).
    pub fn in_error_at(&mut self, t: Time) -> bool {
        self.advance_to(t.as_nanos());
        self.in_error
    }

    /// A duration of the current state, ns.
    fn period(&mut self) -> u64 {
        let cdf = if self.in_error { &self.cdfs.error } else { &self.cdfs.error_free };
        // `as` saturates; 1 ns at least so that time always moves on.
        ((cdf.sample(&mut self.rng) * 1e9).round() as u64).max(1)
    }

    fn advance_to(&mut self, t: u64) {
        while self.next_change <= t {
            self.in_error = !self.in_error;
            let d = self.period();
            self.next_change = self.next_change.saturating_add(d);
            if self.next_change == u64::MAX {
                break;
            }
        }
    }
}

impl ErrorModel for EmpiricalModel {
    fn corrupts(&mut self, now: Time, end: Time, _bits: u64) -> bool {
        let (t0, t1) = (now.as_nanos(), end.as_nanos().max(now.as_nanos()));
        self.advance_to(t0 + (t1 - t0) / 2);
        self.in_error
    }

    /// The long-run fraction of time in the error state, `mean_error / (mean_error + mean_error_free)`:
    /// the fraction of frames lost for traffic that does not follow the channel's state.
    fn frame_loss_probability(&self, _bits: u64) -> Option<f64> {
        Some(self.cdfs.error_fraction())
    }
}

/// How values between two points of a [`Cdf`] are drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Interpolation {
    /// Piecewise-linear CDF: a draw that falls between points `i − 1` and `i` is interpolated linearly
    /// between `values_s[i − 1]` and `values_s[i]` (ns-2's `EmpiricalRandomVariable` with interpolation).
    #[default]
    Linear,
    /// Step CDF: the draw is `values_s[i]`, the first point whose `cdf` reaches it (a discrete
    /// distribution, what a histogram of run lengths is; [`crate::fit::fit`] writes this).
    Step,
}

/// The distribution of one state's duration: points `(values_s[i], cdf[i])` with `cdf[i] = P(D ≤ values_s[i])`.
///
/// Sampling is by inversion: `u` uniform in (0, 1], `i` the first point with `cdf[i] ≥ u`; `i = 0` gives
/// `values_s[0]` (so `cdf[0]` is the probability of exactly `values_s[0]`, an atom), otherwise the
/// [`Interpolation`] decides. Invariants (checked by [`Cdf::new`] and the loader): at least one point, as
/// many values as probabilities, values finite, ≥ 0 and non-decreasing, the last one > 0, probabilities in
/// [0, 1] and non-decreasing, the last one 1. Equal neighbours are allowed (equal values make a step inside
/// a linear CDF, equal probabilities a gap).
#[derive(Debug, Clone, PartialEq)]
pub struct Cdf {
    pub values_s: Vec<f64>,
    pub cdf: Vec<f64>,
    pub interpolation: Interpolation,
}

/// Which array of a [`Cdf`] an invariant failed on, and where.
#[derive(Debug, Clone, PartialEq)]
struct CdfFault {
    /// `"values_s"` or `"cdf"`.
    array: &'static str,
    /// Element, or None for the array as a whole.
    index: Option<usize>,
    message: String,
}

impl Cdf {
    /// Checks the invariants (see [`Cdf`]). The error starts with the offending array and element
    /// (`cdf[3]: …`). A last probability within 1e-9 of 1 is taken as exactly 1.
    pub fn new(values_s: Vec<f64>, cdf: Vec<f64>, interpolation: Interpolation) -> Result<Cdf, String> {
        Cdf::checked(values_s, cdf, interpolation).map_err(|f| f.to_string())
    }

    fn checked(values_s: Vec<f64>, mut cdf: Vec<f64>, interpolation: Interpolation) -> Result<Cdf, CdfFault> {
        let fault = |array, index, message: String| Err(CdfFault { array, index, message });
        if values_s.is_empty() {
            return fault("values_s", None, "expected at least one duration".into());
        }
        if cdf.len() != values_s.len() {
            return fault(
                "cdf",
                None,
                format!("expected as many probabilities as durations ({}), got {}", values_s.len(), cdf.len()),
            );
        }
        for (i, &v) in values_s.iter().enumerate() {
            if !(v.is_finite() && v >= 0.0) {
                return fault("values_s", Some(i), format!("expected a finite duration ≥ 0 s, got {v}"));
            }
            if i > 0 && v < values_s[i - 1] {
                return fault(
                    "values_s",
                    Some(i),
                    format!("expected non-decreasing durations, got {v} after {}", values_s[i - 1]),
                );
            }
        }
        if values_s[values_s.len() - 1] <= 0.0 {
            return fault("values_s", Some(values_s.len() - 1), "expected the largest duration to be > 0 s".into());
        }
        for (i, &c) in cdf.iter().enumerate() {
            if !(0.0..=1.0).contains(&c) {
                return fault("cdf", Some(i), format!("expected a probability in [0, 1], got {c}"));
            }
            if i > 0 && c < cdf[i - 1] {
                return fault(
                    "cdf",
                    Some(i),
                    format!("expected non-decreasing probabilities, got {c} after {}", cdf[i - 1]),
                );
            }
        }
        let last = cdf.len() - 1;
        if (cdf[last] - 1.0).abs() > 1e-9 {
            return fault("cdf", Some(last), format!("expected the last probability to be 1, got {}", cdf[last]));
        }
        // Exactly 1, so that every draw u ≤ 1 finds a point.
        cdf[last] = 1.0;
        Ok(Cdf { values_s, cdf, interpolation })
    }

    /// A CDF with the single point `(value_s, 1)`: always `value_s`.
    pub fn constant(value_s: f64) -> Result<Cdf, String> {
        Cdf::new(vec![value_s], vec![1.0], Interpolation::Step)
    }

    /// The duration at probability `u` (clamped to [0, 1]): the inverse CDF described at [`Cdf`].
    pub fn quantile(&self, u: f64) -> f64 {
        let u = if u.is_nan() { 0.0 } else { u.clamp(0.0, 1.0) };
        let i = self.cdf.partition_point(|&c| c < u).min(self.cdf.len() - 1);
        if i == 0 {
            return self.values_s[0];
        }
        match self.interpolation {
            Interpolation::Step => self.values_s[i],
            Interpolation::Linear => {
                let (c0, c1) = (self.cdf[i - 1], self.cdf[i]);
                let (v0, v1) = (self.values_s[i - 1], self.values_s[i]);
                // c0 < u ≤ c1 here, so c1 > c0.
                v0 + (v1 - v0) * ((u - c0) / (c1 - c0))
            }
        }
    }

    /// One draw, in seconds. Consumes exactly one `u64` (IEEE-754 `+ − × ÷` only: bit-identical everywhere).
    pub fn sample<R: RngCore + ?Sized>(&self, rng: &mut R) -> f64 {
        self.quantile(unit_open0(rng))
    }

    /// The mean duration, seconds (exact for the distribution [`Cdf::quantile`] samples).
    pub fn mean_s(&self) -> f64 {
        let mut mean = self.cdf[0] * self.values_s[0];
        for i in 1..self.cdf.len() {
            let mass = self.cdf[i] - self.cdf[i - 1];
            let at = match self.interpolation {
                Interpolation::Step => self.values_s[i],
                Interpolation::Linear => 0.5 * (self.values_s[i - 1] + self.values_s[i]),
            };
            mean += mass * at;
        }
        mean
    }
}

impl std::fmt::Display for CdfFault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.index {
            Some(i) => write!(f, "{}[{i}]: {}", self.array, self.message),
            None => write!(f, "{}: {}", self.array, self.message),
        }
    }
}

/// The two CDFs of Balakrishnan 1998 §4's empirical model, with where they came from.
///
/// # CDF files
///
/// TOML, UTF-8. Durations in seconds, each table one state's [`Cdf`]:
///
/// ```toml
/// # Comments say how the file was made.
/// source = "fit of a 100000-packet trace …"  # free text, may be a '''multi-line''' string (optional)
/// rate_mbps = 1.0        # send rate R of the trace the CDFs were fitted to (optional, information)
/// packet_bytes = 1000    # its packet size S/8 (optional, information)
/// packets = 100000       # packets in that trace (optional, information)
/// lost = 10591           # of which lost (optional, information)
///
/// [error_free]           # durations of the error-free periods
/// interpolation = "step" # or "linear" (the default); see Interpolation
/// values_s = [0.008, 0.016, 0.4]
/// cdf      = [0.25,  0.5,   1.0]
///
/// [error]                # durations of the error periods
/// values_s = [0.008, 0.08]
/// cdf      = [0.6,   1.0]
/// ```
///
/// Unknown keys are errors. [`parse_cdfs`] checks the [`Cdf`] invariants and names the file, line and field
/// of the first violation (`ch.toml:14: error.cdf[2]: expected non-decreasing probabilities, …`).
/// [`write_cdfs`] writes this format back, numbers in shortest round-trip form (so write ∘ parse is exact).
#[derive(Debug, Clone, PartialEq)]
pub struct Cdfs {
    /// Provenance, free text (trailing whitespace dropped).
    pub source: String,
    pub rate_mbps: Option<f64>,
    pub packet_bytes: Option<u32>,
    pub packets: Option<u64>,
    pub lost: Option<u64>,
    pub error_free: Cdf,
    pub error: Cdf,
}

impl Cdfs {
    /// Long-run fraction of time in the error state: `mean_error / (mean_error + mean_error_free)`.
    pub fn error_fraction(&self) -> f64 {
        let (e, f) = (self.error.mean_s(), self.error_free.mean_s());
        e / (e + f)
    }
}

/// The names of the CDF sets shipped with lasthop (`builtin = "…"`).
pub const BUILTIN_CDFS: &[&str] = &["reinas"];

/// The shipped CDF set `name` (one of [`BUILTIN_CDFS`]), parsed; None if there is no such set.
///
/// `reinas` is `channels/reinas.toml` of the source tree (compiled in): a synthetic stand-in with the
/// character Balakrishnan 1998 §4 reports for its Reinas trace; its header says exactly how it was made.
///
/// The compiled-in text never changes, so it is parsed once per process and shared: every scenario that
/// names a builtin validates its channel, and parsing the CDFs cost more than the rest of the validation.
pub fn builtin_cdfs(name: &str) -> Option<Result<Arc<Cdfs>, FileError>> {
    static REINAS: OnceLock<Result<Arc<Cdfs>, FileError>> = OnceLock::new();
    let (text, parsed) = match name {
        "reinas" => (include_str!("../../../channels/reinas.toml"), &REINAS),
        _ => return None,
    };
    Some(
        parsed
            .get_or_init(|| parse_cdfs(text, &format!("builtin `{name}` (channels/{name}.toml)")).map(Arc::new))
            .clone(),
    )
}

/// A file that could not be read or does not follow its format: which file, where in it, what is wrong.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub struct FileError {
    /// The file's path (or another name for the text).
    pub origin: String,
    /// 1-based line, when known.
    pub line: Option<usize>,
    /// The offending field (`error.cdf[3]`), when there is one.
    pub field: Option<String>,
    pub message: String,
}

impl std::fmt::Display for FileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.origin)?;
        if let Some(l) = self.line {
            write!(f, ":{l}")?;
        }
        write!(f, ": ")?;
        if let Some(field) = &self.field {
            write!(f, "{field}: ")?;
        }
        write!(f, "{}", self.message)
    }
}

impl FileError {
    pub fn new(origin: &str, line: Option<usize>, field: Option<String>, message: impl Into<String>) -> FileError {
        FileError { origin: origin.to_string(), line, field, message: message.into() }
    }
}

/// 1-based line of byte offset `at` in `text`.
pub(crate) fn line_at(text: &str, at: usize) -> usize {
    text.as_bytes()[..at.min(text.len())].iter().filter(|&&b| b == b'\n').count() + 1
}

type SpannedArray = toml::Spanned<Vec<toml::Spanned<f64>>>;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCdfs {
    #[serde(default)]
    source: String,
    rate_mbps: Option<toml::Spanned<f64>>,
    packet_bytes: Option<u32>,
    packets: Option<u64>,
    lost: Option<u64>,
    error_free: RawCdf,
    error: RawCdf,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCdf {
    #[serde(default)]
    interpolation: Interpolation,
    values_s: SpannedArray,
    cdf: SpannedArray,
}

/// Reads a CDF file (format: [`Cdfs`]).
pub fn read_cdfs(path: &Path) -> Result<Cdfs, FileError> {
    let origin = path.display().to_string();
    let text =
        std::fs::read_to_string(path).map_err(|e| FileError::new(&origin, None, None, format!("cannot read: {e}")))?;
    parse_cdfs(&text, &origin)
}

/// What is wrong at a TOML syntax error in `text`: the parser's own message, or, where it gives none (the
/// toml crate says nothing about a carriage return without its newline), what it stopped at.
pub fn toml_reason(e: &toml::de::Error, text: &str) -> String {
    let message = e.message().trim();
    if !message.is_empty() {
        return message.to_string();
    }
    let at = e.span().map_or(text.len(), |s| s.start.min(text.len()));
    let (before, after) =
        (text.get(..at).and_then(|t| t.chars().last()), text.get(at..).and_then(|t| t.chars().next()));
    match (before, after) {
        (Some('\r'), _) | (_, Some('\r')) => "a carriage return (\\r) not followed by a newline".into(),
        (_, Some(c)) => format!("invalid TOML: unexpected {c:?}"),
        (_, None) => "invalid TOML: unexpected end of text".into(),
    }
}

/// Parses and checks CDF-file text (format: [`Cdfs`]); `origin` names it in errors.
pub fn parse_cdfs(text: &str, origin: &str) -> Result<Cdfs, FileError> {
    let raw: RawCdfs = toml::from_str(text).map_err(|e| {
        let line = e.span().map(|s| line_at(text, s.start));
        FileError::new(origin, line, None, toml_reason(&e, text))
    })?;
    let table = |name: &str, r: RawCdf| -> Result<Cdf, FileError> {
        let values: Vec<f64> = r.values_s.get_ref().iter().map(|v| *v.get_ref()).collect();
        let cdf: Vec<f64> = r.cdf.get_ref().iter().map(|v| *v.get_ref()).collect();
        Cdf::checked(values, cdf, r.interpolation).map_err(|f| {
            let array = if f.array == "values_s" { &r.values_s } else { &r.cdf };
            let span = match f.index {
                Some(i) => array.get_ref()[i].span(),
                None => array.span(),
            };
            let field = match f.index {
                Some(i) => format!("{name}.{}[{i}]", f.array),
                None => format!("{name}.{}", f.array),
            };
            FileError::new(origin, Some(line_at(text, span.start)), Some(field), f.message)
        })
    };
    if let Some(r) = &raw.rate_mbps {
        if !(r.get_ref().is_finite() && *r.get_ref() > 0.0) {
            let line = Some(line_at(text, r.span().start));
            return Err(FileError::new(
                origin,
                line,
                Some("rate_mbps".into()),
                format!("expected a rate > 0, got {}", r.get_ref()),
            ));
        }
    }
    Ok(Cdfs {
        source: raw.source.trim_end().to_string(),
        rate_mbps: raw.rate_mbps.map(|r| r.into_inner()),
        packet_bytes: raw.packet_bytes,
        packets: raw.packets,
        lost: raw.lost,
        error_free: table("error_free", raw.error_free)?,
        error: table("error", raw.error)?,
    })
}

/// CDF-file text for `cdfs` (format: [`Cdfs`]): a comment header, the metadata, then the two tables with
/// their means as comments. Deterministic; [`parse_cdfs`] gives `cdfs` back exactly.
pub fn write_cdfs(cdfs: &Cdfs) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    out.push_str("# lasthop channel CDFs: the empirical two-state error model of Balakrishnan 1998 §4. Format: the docs of\n");
    out.push_str("# lasthop_sim::error_model::Cdfs. Each table is the CDF of one state's duration, in seconds:\n");
    out.push_str("# cdf[i] = P(duration <= values_s[i]).\n");
    let source = cdfs.source.trim_end();
    if !source.is_empty() {
        let literal_ok =
            !source.contains("'''") && !source.ends_with('\'') && !source.chars().any(|c| c.is_control() && c != '\n');
        if source.contains('\n') && literal_ok {
            let _ = writeln!(out, "source = '''\n{source}\n'''");
        } else {
            let _ = writeln!(out, "source = {}", toml::Value::String(source.to_string()));
        }
    }
    if let Some(r) = cdfs.rate_mbps {
        let _ = writeln!(out, "rate_mbps = {r:?}");
    }
    if let Some(b) = cdfs.packet_bytes {
        let _ = writeln!(out, "packet_bytes = {b}");
    }
    if let Some(n) = cdfs.packets {
        let _ = writeln!(out, "packets = {n}");
    }
    if let Some(n) = cdfs.lost {
        let _ = writeln!(out, "lost = {n}");
    }
    for (name, what, cdf) in [("error_free", "error-free", &cdfs.error_free), ("error", "error", &cdfs.error)] {
        let _ = writeln!(out, "\n[{name}]");
        let _ = writeln!(out, "# {} points; mean {what} duration {:.6} s", cdf.values_s.len(), cdf.mean_s());
        let interpolation = match cdf.interpolation {
            Interpolation::Linear => "linear",
            Interpolation::Step => "step",
        };
        let _ = writeln!(out, "interpolation = \"{interpolation}\"");
        for (key, xs) in [("values_s", &cdf.values_s), ("cdf", &cdf.cdf)] {
            let _ = writeln!(out, "{key} = [");
            for row in xs.chunks(8) {
                let cells: Vec<String> = row.iter().map(|x| format!("{x:?}")).collect();
                let _ = writeln!(out, "    {},", cells.join(", "));
            }
            out.push_str("]\n");
        }
    }
    out
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

    // ----- Empirical model (Balakrishnan 1998 §4) -----

    fn data(name: &str) -> String {
        format!("{}/tests/data/channel/{name}", env!("CARGO_MANIFEST_DIR"))
    }

    fn cdf(values: &[f64], probs: &[f64], interpolation: Interpolation) -> Cdf {
        Cdf::new(values.to_vec(), probs.to_vec(), interpolation).unwrap()
    }

    fn cdfs(error_free: Cdf, error: Cdf) -> Cdfs {
        Cdfs {
            source: String::new(),
            rate_mbps: None,
            packet_bytes: None,
            packets: None,
            lost: None,
            error_free,
            error,
        }
    }

    #[test]
    fn cdf_quantiles_step_and_linear() {
        let step = cdf(&[1.0, 2.0, 5.0], &[0.2, 0.5, 1.0], Interpolation::Step);
        let lin = Cdf { interpolation: Interpolation::Linear, ..step.clone() };
        // Atom at the first point for both.
        for c in [&step, &lin] {
            assert_eq!(c.quantile(0.0), 1.0);
            assert_eq!(c.quantile(0.1), 1.0);
            assert_eq!(c.quantile(0.2), 1.0);
            assert_eq!(c.quantile(1.0), 5.0);
            assert_eq!(c.quantile(7.0), 5.0, "clamped");
            assert_eq!(c.quantile(f64::NAN), 1.0);
        }
        assert_eq!(step.quantile(0.2000001), 2.0);
        assert_eq!(step.quantile(0.5), 2.0);
        assert_eq!(step.quantile(0.75), 5.0);
        assert!((lin.quantile(0.35) - 1.5).abs() < 1e-12);
        assert!((lin.quantile(0.75) - 3.5).abs() < 1e-12);
        assert!((step.mean_s() - (0.2 + 0.3 * 2.0 + 0.5 * 5.0)).abs() < 1e-12);
        assert!((lin.mean_s() - (0.2 + 0.3 * 1.5 + 0.5 * 3.5)).abs() < 1e-12);
        // Equal values make a step inside a linear CDF; equal probabilities a gap that is never drawn.
        let mixed = cdf(&[0.0, 1.0, 1.0, 2.0, 3.0], &[0.0, 0.5, 0.7, 0.7, 1.0], Interpolation::Linear);
        assert!((mixed.quantile(0.25) - 0.5).abs() < 1e-12);
        assert_eq!(mixed.quantile(0.6), 1.0);
        assert!((mixed.quantile(0.85) - 2.5).abs() < 1e-12);
        assert!((mixed.mean_s() - (0.5 * 0.5 + 0.2 * 1.0 + 0.3 * 2.5)).abs() < 1e-12);
    }

    #[test]
    fn single_point_cdf_is_constant() {
        for interpolation in [Interpolation::Step, Interpolation::Linear] {
            let c = cdf(&[0.03], &[1.0], interpolation);
            let mut r = rng("single");
            assert!((0..1000).all(|_| c.sample(&mut r) == 0.03));
            assert_eq!(c.mean_s(), 0.03);
        }
        assert_eq!(Cdf::constant(0.5).unwrap().quantile(0.3), 0.5);
        // A constant model alternates exactly: 20 ms error-free, 10 ms error, decided at mid-frame.
        let c = Arc::new(cdfs(Cdf::constant(0.02).unwrap(), Cdf::constant(0.01).unwrap()));
        let mut m = EmpiricalModel::new(c, rng("alternate"));
        let lost: Vec<bool> =
            (0..9u64).map(|i| m.corrupts(Time::from_millis(5 * i), Time::from_millis(5 * i + 5), 8_000)).collect();
        assert_eq!(lost, [false, false, false, false, true, true, false, false, false]);
        assert!((m.frame_loss_probability(1).unwrap() - 1.0 / 3.0).abs() < 1e-15);
    }

    #[test]
    fn cdf_sampling_matches_mean() {
        let c = cdf(&[0.01, 0.09], &[0.4, 1.0], Interpolation::Linear);
        let mut r = rng("mean");
        let n = 200_000;
        let mean = (0..n).map(|_| c.sample(&mut r)).sum::<f64>() / n as f64;
        assert!((mean / c.mean_s() - 1.0).abs() < 0.01, "sample mean {mean}, exact {}", c.mean_s());
        assert!((c.mean_s() - 0.034).abs() < 1e-12);
    }

    #[test]
    fn cdf_invariants_name_the_element() {
        let e = |v: &[f64], c: &[f64]| Cdf::new(v.to_vec(), c.to_vec(), Interpolation::Linear).unwrap_err();
        assert!(e(&[], &[]).starts_with("values_s: "));
        assert!(e(&[1.0, 2.0], &[1.0]).starts_with("cdf: expected as many"));
        assert!(e(&[-1.0, 2.0], &[0.5, 1.0]).starts_with("values_s[0]: expected a finite duration ≥ 0"));
        assert!(e(&[1.0, f64::NAN], &[0.5, 1.0]).starts_with("values_s[1]: "));
        assert!(e(&[2.0, 1.0], &[0.5, 1.0]).starts_with("values_s[1]: expected non-decreasing"));
        assert!(e(&[0.0, 0.0], &[0.5, 1.0]).starts_with("values_s[1]: expected the largest duration to be > 0"));
        assert!(e(&[1.0, 2.0], &[-0.1, 1.0]).starts_with("cdf[0]: expected a probability in [0, 1]"));
        assert!(e(&[1.0, 2.0, 3.0], &[0.6, 0.5, 1.0]).starts_with("cdf[1]: expected non-decreasing"));
        assert!(e(&[1.0, 2.0], &[0.5, 0.9]).starts_with("cdf[1]: expected the last probability to be 1"));
        // Within 1e-9 of 1 is 1, exactly.
        let c = Cdf::new(vec![1.0, 2.0], vec![0.5, 1.0 - 1e-12], Interpolation::Step).unwrap();
        assert_eq!(c.cdf[1], 1.0);
    }

    const GOOD_FILE: &str = "source = 'x'\n[error_free]\nvalues_s = [0.1, 0.2]\ncdf = [0.5, 1.0]\n\n[error]\nvalues_s = [0.01, 0.02, 0.03]\ncdf = [0.2, 0.6, 1.0]\n";

    #[test]
    fn cdf_file_errors_name_file_line_and_field() {
        assert!(parse_cdfs(GOOD_FILE, "ok.toml").is_ok());
        let bad = |from: &str, to: &str| parse_cdfs(&GOOD_FILE.replace(from, to), "ch.toml").unwrap_err();
        // Not monotone.
        let e = bad("cdf = [0.2, 0.6, 1.0]", "cdf = [0.2, 0.1, 1.0]");
        assert_eq!((e.line, e.field.as_deref()), (Some(8), Some("error.cdf[1]")), "{e}");
        assert!(e.to_string().starts_with("ch.toml:8: error.cdf[1]: expected non-decreasing probabilities"), "{e}");
        // Not ending at 1.
        let e = bad("cdf = [0.5, 1.0]", "cdf = [0.5, 0.9]");
        assert_eq!((e.line, e.field.as_deref()), (Some(4), Some("error_free.cdf[1]")), "{e}");
        assert!(e.message.contains("last probability to be 1"), "{e}");
        // Negative duration.
        let e = bad("values_s = [0.01,", "values_s = [-0.01,");
        assert_eq!((e.line, e.field.as_deref()), (Some(7), Some("error.values_s[0]")), "{e}");
        // Lengths differ: the array is named.
        let e = bad("cdf = [0.2, 0.6, 1.0]", "cdf = [0.6, 1.0]");
        assert_eq!((e.line, e.field.as_deref()), (Some(8), Some("error.cdf")), "{e}");
        // Serde-level errors keep their line.
        let e = bad("[error]\n", "[error]\nvalue_s = 1\n");
        assert!(e.message.contains("unknown field `value_s`") && e.line == Some(7), "{e}");
        let e = bad("[error]\nvalues_s = [0.01, 0.02, 0.03]\ncdf = [0.2, 0.6, 1.0]\n", "");
        assert!(e.message.contains("missing field `error`"), "{e}");
        let e = bad("[error_free]\n", "[error_free]\ninterpolation = \"cubic\"\n");
        assert!(e.message.contains("cubic") && e.line == Some(3), "{e}");
        let e = bad("source = 'x'", "source = 'x'\nrate_mbps = -1");
        assert_eq!((e.line, e.field.as_deref()), (Some(2), Some("rate_mbps")), "{e}");
        // From a file: its path is the origin.
        let e = read_cdfs(Path::new(&data("nonmonotone.toml"))).unwrap_err();
        assert!(
            e.to_string().ends_with(
                "nonmonotone.toml:11: error.cdf[2]: expected non-decreasing probabilities, got 0.5 after 0.6"
            ),
            "{e}"
        );
        let e = read_cdfs(Path::new("/nonexistent/x.toml")).unwrap_err();
        assert!(e.to_string().starts_with("/nonexistent/x.toml: cannot read"), "{e}");
    }

    #[test]
    fn cdf_file_round_trip() {
        let mut c = read_cdfs(Path::new(&data("small.toml"))).unwrap();
        assert_eq!(c.rate_mbps, Some(2.0));
        assert_eq!(c.error.interpolation, Interpolation::Linear);
        assert!((c.error_free.mean_s() - 0.25).abs() < 1e-12 && (c.error.mean_s() - 0.034).abs() < 1e-12);
        assert_eq!(parse_cdfs(&write_cdfs(&c), "again").unwrap(), c);
        c.source = "two\nlines".into();
        c.error.interpolation = Interpolation::Step;
        c.error_free.values_s[0] = 0.1 + 0.2; // not a short decimal
        c.packets = Some(7);
        assert_eq!(parse_cdfs(&write_cdfs(&c), "again").unwrap(), c);
        c.source = "quote ''' inside".into();
        assert_eq!(parse_cdfs(&write_cdfs(&c), "again").unwrap(), c);
    }

    #[test]
    fn empirical_long_run_loss_matches_cdf_means() {
        // Linear CDFs (small.toml): mean error-free 250 ms, mean error 34 ms: 34/284 ≈ 11.97 % of time in error.
        let cfg = ErrorModelConfig::empirical_file(data("small.toml"));
        cfg.validate().unwrap();
        let expect = 0.034 / 0.284;
        assert!((cfg.frame_loss_probability(12_000).unwrap() - expect).abs() < 1e-12);
        let mut m = cfg.build(rng("empirical-long-run"));
        assert_eq!(m.frame_loss_probability(1), Some(cfg.frame_loss_probability(1).unwrap()));
        // Irregular traffic (frames of 0.1–6 ms with gaps of 0–20 ms), ~60 000 channel cycles.
        let mut traffic = rng("traffic");
        let (mut now, mut lost, mut sent) = (0u64, 0u64, 0u64);
        while now < 17_000_000_000_000 {
            let len = traffic.gen_range(100_000..6_000_000u64);
            lost += u64::from(m.corrupts(Time::from_nanos(now), Time::from_nanos(now + len), 8 * 1500));
            sent += 1;
            now += len + traffic.gen_range(0..20_000_000u64);
        }
        let observed = lost as f64 / sent as f64;
        assert!((observed / expect - 1.0).abs() < 0.03, "observed {observed}, CDF means {expect} ({sent} frames)");
    }

    #[test]
    fn empirical_starts_error_free_and_ignores_traffic() {
        let c = Arc::new(read_cdfs(Path::new(&data("small.toml"))).unwrap());
        let mut a = EmpiricalModel::new(c.clone(), rng("traffic-e"));
        let mut b = a.clone();
        // Error-free periods last at least 50 ms.
        assert!(!b.corrupts(Time::ZERO, Time::from_millis(99), 1));
        for i in 0..200_000u64 {
            let t = Time::from_micros(i * 100);
            assert_eq!(a.in_error_at(t), b.in_error_at(t), "at {t:?}");
            b.corrupts(t, t + std::time::Duration::from_micros(50), 100_000);
        }
    }

    #[test]
    fn empirical_same_seed_same_decisions() {
        let cfg = ErrorModelConfig::empirical_file(data("small.toml"));
        cfg.validate().unwrap();
        let a = run(cfg.build(rng("det")).as_mut(), 50_000, 12_000, 2_000_000);
        assert_eq!(a, run(cfg.clone().build(rng("det")).as_mut(), 50_000, 12_000, 2_000_000));
        assert_ne!(a, run(cfg.build(rng("det2")).as_mut(), 50_000, 12_000, 2_000_000));
    }

    /// Pins the empirical model's decisions (sampling, rounding, mid-frame decision) on a hand-made channel.
    #[test]
    fn golden_empirical_decisions() {
        let c = Arc::new(read_cdfs(Path::new(&data("small.toml"))).unwrap());
        let mut m = EmpiricalModel::new(c, stream(1, "link.w", "error.0"));
        let lost: Vec<usize> =
            run(&mut m, 400, 12_000, 2_000_000).iter().enumerate().filter(|(_, &l)| l).map(|(i, _)| i).collect();
        assert_eq!(
            lost,
            [
                50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 87, 88, 89, 90, 91, 92, 93, 94, 95, 96, 97, 98, 99,
                100, 101, 174, 242, 243, 315, 316, 329, 330, 364, 382, 383
            ]
        );
    }

    #[test]
    fn empirical_config_from_toml_and_paths() {
        #[derive(Deserialize)]
        struct Link {
            error: ErrorModelConfig,
        }
        let p = |s: &str| toml::from_str::<Link>(s).map(|l| l.error).map_err(|e| e.to_string());
        let file = p("error = { model = \"empirical\", cdfs = \"ch/x.toml\" }").unwrap();
        assert_eq!(file, ErrorModelConfig::empirical_file("ch/x.toml"));
        let builtin = p("error = { model = \"empirical\", builtin = \"reinas\" }").unwrap();
        assert_eq!(builtin, ErrorModelConfig::empirical_builtin("reinas"));
        assert!(p("error = { model = \"empirical\", cdf = \"x\" }").unwrap_err().contains("unknown field `cdf`"));
        // Round trip through TOML (the loaded CDFs are not part of it).
        #[derive(Serialize)]
        struct Link2<'a> {
            error: &'a ErrorModelConfig,
        }
        assert_eq!(p(&toml::to_string(&Link2 { error: &file }).unwrap()).unwrap(), file);

        // Paths relative to the scenario's directory; absolute paths and builtins untouched.
        let mut f = file.clone();
        f.resolve_paths(Path::new("/scen/dir"));
        assert_eq!(f, ErrorModelConfig::empirical_file("/scen/dir/ch/x.toml"));
        f.resolve_paths(Path::new("/elsewhere"));
        assert_eq!(f, ErrorModelConfig::empirical_file("/scen/dir/ch/x.toml"));
        let mut b = builtin.clone();
        b.resolve_paths(Path::new("/scen"));
        assert_eq!(b, builtin);
        let mut small = ErrorModelConfig::empirical_file("small.toml");
        assert!(small.validate().unwrap_err().starts_with("cdfs: small.toml: cannot read"));
        small.resolve_paths(Path::new(&data("")));
        small.validate().unwrap();

        // Validation: one source, readable, well-formed; the message starts with the field.
        let neither = ErrorModelConfig::Empirical { cdfs: None, builtin: None, loaded: LoadedCdfs::default() };
        assert!(neither.validate().unwrap_err().starts_with("cdfs: expected `cdfs`"));
        let both = ErrorModelConfig::Empirical {
            cdfs: Some("a".into()),
            builtin: Some("reinas".into()),
            loaded: LoadedCdfs::default(),
        };
        assert!(both.validate().unwrap_err().starts_with("cdfs, builtin: "));
        let e = ErrorModelConfig::empirical_builtin("nowhere").validate().unwrap_err();
        assert!(e.starts_with("builtin: no builtin channel `nowhere` (builtins: reinas)"), "{e}");
        let e = ErrorModelConfig::empirical_file(data("nonmonotone.toml")).validate().unwrap_err();
        assert!(e.starts_with("cdfs: ") && e.contains("nonmonotone.toml:11: error.cdf[2]: "), "{e}");
        assert_eq!(ErrorModelConfig::empirical_file("/nonexistent").frame_loss_probability(8), None);

        // Given directly.
        let direct = ErrorModelConfig::empirical(read_cdfs(Path::new(&data("small.toml"))).unwrap());
        direct.validate().unwrap();
        assert!((direct.frame_loss_probability(1).unwrap() - 0.034 / 0.284).abs() < 1e-12);
    }

    #[test]
    fn builtin_reinas_loads() {
        for name in BUILTIN_CDFS {
            let c = builtin_cdfs(name).unwrap().unwrap();
            assert!(c.error_fraction() > 0.0, "{name}");
        }
        assert!(builtin_cdfs("none").is_none());
    }

    #[test]
    fn a_builtin_is_parsed_once_and_shared() {
        let first = builtin_cdfs("reinas").unwrap().unwrap();
        let again = builtin_cdfs("reinas").unwrap().unwrap();
        assert!(Arc::ptr_eq(&first, &again));
        let text = include_str!("../../../channels/reinas.toml");
        assert_eq!(*first, parse_cdfs(text, "channels/reinas.toml").unwrap());
        let config =
            ErrorModelConfig::Empirical { cdfs: None, builtin: Some("reinas".into()), loaded: Default::default() };
        assert!(
            Arc::ptr_eq(&config.empirical_cdfs().unwrap(), &first),
            "a scenario's builtin channel is the shared one"
        );
    }

    /// Lengths of the runs of consecutive lost frames.
    fn runs(v: &[bool]) -> Vec<usize> {
        v.split(|lost| !lost).map(<[bool]>::len).filter(|&n| n > 0).collect()
    }

    #[test]
    fn bursts_are_exactly_the_given_number_of_frames_and_one_frame_bursts_are_the_ber_model() {
        let bits = 1500 * 8;
        for k in [2u32, 4, 6] {
            let mut m = BurstModel::new(2e-6, k, rng("burst"));
            let v = run(&mut m, 200_000, bits, 2_000_000);
            let r = runs(&v);
            assert!(r.len() > 2000, "k = {k}: {} bursts", r.len());
            // Back-to-back bursts merge into a run of a multiple of k; never a partial burst.
            assert!(r.iter().all(|&n| n % k as usize == 0), "k = {k}: {:?}", &r[..20]);
            assert!(r.iter().filter(|&&n| n == k as usize).count() * 10 > r.len() * 9, "k = {k}");
            let p = burst_frame_loss(2e-6, k, bits);
            assert!((rate(&v) - p).abs() < 0.1 * p, "k = {k}: {} against {p}", rate(&v));
            assert_eq!(m.frame_loss_probability(bits), Some(p));
        }
        let mut burst = BurstModel::new(1e-5, 1, rng("same"));
        let mut ber = BerModel::new(1e-5, rng("same"));
        assert_eq!(run(&mut burst, 20_000, bits, 2_000_000), run(&mut ber, 20_000, bits, 2_000_000));
        assert_eq!(burst_frame_loss(1e-5, 1, bits), ber_frame_loss(1e-5, bits));
        assert_eq!(burst_frame_loss(0.0, 6, bits), 0.0);
    }

    #[test]
    fn burst_config_is_range_checked_and_read_from_toml() {
        let c: ErrorModelConfig = toml::from_str("model = \"burst\"\nber = 1.9e-6\nframes = 4").unwrap();
        assert_eq!(c, ErrorModelConfig::Burst { ber: 1.9e-6, frames: 4 });
        c.validate().unwrap();
        for (bad, field) in [
            (ErrorModelConfig::Burst { ber: 1.9e-6, frames: 0 }, "frames: "),
            (ErrorModelConfig::Burst { ber: 1.9e-6, frames: MAX_BURST_FRAMES + 1 }, "frames: "),
            (ErrorModelConfig::Burst { ber: -1.0, frames: 2 }, "ber: "),
            (ErrorModelConfig::Burst { ber: f64::NAN, frames: 2 }, "ber: "),
        ] {
            let e = bad.validate().unwrap_err();
            assert!(e.starts_with(field), "{e}");
        }
    }

    #[test]
    fn a_toml_error_always_says_what_is_wrong() {
        // The toml crate's own message is empty for a lone carriage return.
        for (text, expected) in
            [("a = [1,\r 2]", "carriage return"), ("a = [1,\r\0 2]", "carriage return"), ("a = [1,\0 2]", "array")]
        {
            let e = toml::from_str::<toml::Table>(text).unwrap_err();
            let reason = toml_reason(&e, text);
            assert!(reason.contains(expected), "{text:?}: {reason}");
        }
        let e = parse_cdfs("x = [1,\r 2]", "cdfs.toml").unwrap_err().to_string();
        assert!(e.contains("carriage return"), "{e}");
    }
}

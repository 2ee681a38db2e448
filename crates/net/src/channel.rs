//! Per-frame error models for the emulated wireless hop.
//!
//! **To be replaced by the shared implementation.** The simulator's `lasthop-sim::error_model` (the
//! `ErrorModel` trait and `ErrorModelConfig`) and `lasthop-sim::rng::stream` should move down into a
//! crate both faces may depend on (proposed: a small `lasthop-channel` crate under `lasthop-agents`'
//! level, depending on `lasthop-wire` only), so that the real base station and the simulator lose frames
//! by one implementation. `lasthop-net` must not depend on `lasthop-sim`, so until that move this module
//! keeps a trait with the same signature and the two models the testbed needs (bit errors at a BER with
//! exponential inter-error distance, and per-packet Bernoulli loss). When the shared crate lands, delete
//! this file and re-export its trait and config here.

use lasthop_wire::Time;
use rand::Rng;
use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// Decides whether a frame on the air is corrupted. Same signature as the simulator's trait.
pub trait ErrorModel: Send {
    /// Is a frame of `bits` bits sent from `now` to `end` corrupted?
    fn corrupts(&mut self, now: Time, end: Time, bits: u64) -> bool;
    /// The model's loss probability for a frame of `bits` bits, where it has a closed form.
    fn frame_loss_probability(&self, bits: u64) -> Option<f64>;
}

/// Which error model a direction of the hop uses. Serialised the way the simulator's scenarios spell it
/// (`model = "ber"`, `ber = 3.9e-6`) so configurations carry over unchanged.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
#[serde(tag = "model", rename_all = "lowercase")]
pub enum ErrorModelConfig {
    #[default]
    None,
    /// Independent bit errors: the distance between errors is exponential with mean 1/ber bits.
    Ber { ber: f64 },
    /// Each frame lost with probability `loss`, independently.
    Packet { loss: f64 },
}

impl ErrorModelConfig {
    /// A clear message when a probability is out of range, before any packet is touched.
    pub fn validate(&self) -> Result<(), String> {
        match *self {
            ErrorModelConfig::None => Ok(()),
            ErrorModelConfig::Ber { ber } if ber.is_finite() && (0.0..1.0).contains(&ber) => Ok(()),
            ErrorModelConfig::Ber { ber } => Err(format!("ber must be in [0, 1), got {ber}")),
            ErrorModelConfig::Packet { loss } if loss.is_finite() && (0.0..=1.0).contains(&loss) => Ok(()),
            ErrorModelConfig::Packet { loss } => Err(format!("loss must be in [0, 1], got {loss}")),
        }
    }

    pub fn build(&self, rng: ChaCha8Rng) -> Box<dyn ErrorModel> {
        match *self {
            ErrorModelConfig::None => Box::new(NoErrors),
            ErrorModelConfig::Ber { ber } => Box::new(BitErrors::new(ber, rng)),
            ErrorModelConfig::Packet { loss } => Box::new(PacketLoss { loss, rng }),
        }
    }
}

/// A seeded random stream per (seed, component, name), like the simulator's `rng::stream`, so that the
/// two directions of the hop draw independently and adding a stream does not shift the others.
pub fn stream(seed: u64, component: &str, name: &str) -> ChaCha8Rng {
    // FNV-1a over the names: stable across platforms and Rust versions (unlike `DefaultHasher`).
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in component.bytes().chain([0u8]).chain(name.bytes()) {
        h ^= b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    let mut key = [0u8; 32];
    key[..8].copy_from_slice(&seed.to_le_bytes());
    key[8..16].copy_from_slice(&h.to_le_bytes());
    ChaCha8Rng::from_seed(key)
}

pub struct NoErrors;

impl ErrorModel for NoErrors {
    fn corrupts(&mut self, _now: Time, _end: Time, _bits: u64) -> bool {
        false
    }
    fn frame_loss_probability(&self, _bits: u64) -> Option<f64> {
        Some(0.0)
    }
}

/// Bit errors as a Poisson process in bits (the papers' model): we keep the number of error-free bits
/// left before the next error, so long and short frames are treated consistently.
pub struct BitErrors {
    ber: f64,
    rng: ChaCha8Rng,
    bits_to_next_error: f64,
}

impl BitErrors {
    pub fn new(ber: f64, mut rng: ChaCha8Rng) -> BitErrors {
        let first = Self::draw(ber, &mut rng);
        BitErrors { ber, rng, bits_to_next_error: first }
    }

    fn draw(ber: f64, rng: &mut ChaCha8Rng) -> f64 {
        if ber <= 0.0 {
            return f64::INFINITY;
        }
        // Inverse transform of Exp(ber); 1 - u lies in (0, 1], so the log is finite.
        let u: f64 = rng.gen();
        -(1.0 - u).ln() / ber
    }
}

impl ErrorModel for BitErrors {
    fn corrupts(&mut self, _now: Time, _end: Time, bits: u64) -> bool {
        let bits = bits as f64;
        if self.bits_to_next_error >= bits {
            self.bits_to_next_error -= bits;
            return false;
        }
        // The frame takes at least one error; the next error-free run starts after it.
        self.bits_to_next_error = Self::draw(self.ber, &mut self.rng);
        true
    }
    fn frame_loss_probability(&self, bits: u64) -> Option<f64> {
        Some(1.0 - (1.0 - self.ber).powf(bits as f64))
    }
}

pub struct PacketLoss {
    loss: f64,
    rng: ChaCha8Rng,
}

impl ErrorModel for PacketLoss {
    fn corrupts(&mut self, _now: Time, _end: Time, _bits: u64) -> bool {
        self.rng.gen::<f64>() < self.loss
    }
    fn frame_loss_probability(&self, _bits: u64) -> Option<f64> {
        Some(self.loss)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ber_loss_rate_matches_closed_form() {
        let cfg = ErrorModelConfig::Ber { ber: 3.9e-6 };
        let mut m = cfg.build(stream(7, "hop", "down"));
        let bits = 1500 * 8;
        let n = 200_000;
        let lost = (0..n).filter(|_| m.corrupts(Time::ZERO, Time::ZERO, bits)).count();
        let p = m.frame_loss_probability(bits).unwrap();
        let got = lost as f64 / n as f64;
        assert!((got - p).abs() < 0.1 * p, "measured {got}, expected {p}");
    }

    #[test]
    fn streams_are_independent_and_repeatable() {
        let a: u64 = stream(1, "hop", "down").gen();
        let b: u64 = stream(1, "hop", "up").gen();
        assert_ne!(a, b);
        assert_eq!(a, stream(1, "hop", "down").gen::<u64>());
    }

    #[test]
    fn bad_probabilities_are_refused() {
        assert!(ErrorModelConfig::Ber { ber: -1.0 }.validate().is_err());
        assert!(ErrorModelConfig::Packet { loss: f64::NAN }.validate().is_err());
        assert!(ErrorModelConfig::Ber { ber: 1e-5 }.validate().is_ok());
    }
}

//! Wireless channel models, shared by the simulator and the real base station's hop emulator so that both
//! faces draw errors from one implementation: the error models (none, BER with exponential inter-error
//! distance, per-packet, two-state Markov, the empirical two-state channel of Balakrishnan 1998 §4), the seeded random
//! streams they draw from, the tools that make and fit loss traces, and the half-duplex medium access
//! discipline ([`medium`]).

pub mod error_model;
pub mod fit;
pub mod key_index;
pub mod medium;
pub mod rng;

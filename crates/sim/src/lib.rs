//! lasthop's simulator: a deterministic, packet-level discrete-event model of fixed hosts, wired links, base
//! stations running agents, wireless hops with error models, and mobile hosts running TCP.
//!
//! Entry points: [`Scenario`] (a TOML file, every field defaulted and documented) and [`run`], which plays a
//! scenario to the end and returns [`RunResult`]. Same scenario and seed ⇒ identical results, traces and pcap
//! bytes: time is integer nanoseconds, events at one instant run in insertion order (whether the core or a
//! feature scheduled them; at time zero: features' set-up, the bulk flows' starts last among them, then
//! features' start, each in registration order), and every random stream is seeded from (scenario seed, component, stream name).
//!
//! Layout: the core (`world/`: event queue, links and media, routing, delivery, the core's metrics) and
//! its features behind one seam: `feature.rs` (the `Feature` trait), `registry.rs` (the one registration
//! per family: its validation, build, metrics section and result columns), `registered.rs` (how the core
//! holds a feature) and `context.rs` (what a feature's hooks are handed: the time, a read-only
//! view, its own events and an outbox of requests the core carries out after the hook; no feature gets the
//! world). The features: the Web workload ([`web`], its run in `web/feature.rs`), mobility and handoff
//! ([`mobility`], `mobility/feature.rs`), Mobile IP ([`mobile_ip`], `mobile_ip/feature.rs`), a node that fails
//! ([`failure`]), I-TCP's split connection ([`split`]) and link-level ARQ ([`arq`]).

pub mod agents;
pub mod arq;
mod bulk;
/// The channel models, from `lasthop-channel` (shared with the real base station).
pub use lasthop_channel::{error_model, fit as channel, rng};
mod context;
pub mod engine;
pub mod failure;
pub(crate) mod feature;
pub mod floors;
pub mod link;
pub mod metrics;
pub mod mobile_ip;
pub mod mobility;
mod registered;
mod registry;
mod routes;
pub mod scale;
pub mod scenario;
pub mod split;
pub mod web;
mod world;

pub use metrics::{FlowMetrics, FlowSeries, LinkMetrics, RunResult};
pub use mobile_ip::{MipHandoffMetrics, MobileIpMetrics};
pub use mobility::HandoffMetrics;
pub use registry::{result_columns, row_columns, FamilyMetrics, ResultColumns, RowColumns};
pub use scenario::{Scenario, ScenarioError};
pub use web::WebMetrics;

use std::path::PathBuf;

/// What a run records beyond the metrics.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// Record time series (sequence numbers sent and delivered, ACKs, cwnd) per flow.
    pub trace: bool,
    /// Write one pcap per end of every wireless link into this directory (`<link>-<node>.pcap`).
    pub pcap_dir: Option<PathBuf>,
}

/// Why a run could not be carried out (a scenario that parsed but cannot be built, an I/O error on outputs).
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    #[error("scenario: {0}")]
    Scenario(#[from] ScenarioError),
    #[error("writing {path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    /// Simulated time stopped advancing: ten million events within one simulated microsecond (a duration
    /// so short that something fires without end), with the fields that most likely caused it.
    #[error(
        "the run stopped advancing simulated time at {at_s} s ({events} events within {span_ns} ns); likely cause: {likely}"
    )]
    Stalled { at_s: f64, events: u64, span_ns: u64, likely: String },
}

/// Plays `scenario` to completion (every flow done and every web workload's browsing time over, or the
/// simulated-time limit reached).
pub fn run(scenario: &Scenario, options: &RunOptions) -> Result<RunResult, SimError> {
    world::World::build(scenario, options)?.run()
}

/// [`run`] in its three phases, so that a caller can time them apart (`lasthop run --timing`): [`stage`]
/// builds the world, [`Staged::play`] plays the events, [`Staged::finish`] collects the metrics. The
/// result is the same as [`run`]'s.
pub struct Staged(world::World);

/// Builds the world of `scenario` (see [`Staged`]).
pub fn stage(scenario: &Scenario, options: &RunOptions) -> Result<Staged, SimError> {
    Ok(Staged(world::World::build(scenario, options)?))
}

impl Staged {
    /// Plays every event of the run.
    pub fn play(&mut self) {
        self.0.play();
    }

    /// The run's metrics.
    pub fn finish(self) -> Result<RunResult, SimError> {
        self.0.finish()
    }
}

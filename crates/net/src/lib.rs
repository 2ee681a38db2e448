//! The real base station of lasthop (Linux only): the same sans-IO agents the simulator drives, here
//! forwarding real packets between real hosts with unmodified kernel TCP.
//!
//! Layers, bottom up:
//!
//! - [`channel`]: per-frame error models, re-exported from `lasthop-channel` (the simulator's own, so the
//!   real base station and the simulator lose frames by one implementation);
//! - [`hop`]: the wireless-hop emulator, a sans-IO scheduler of (time, frame) with the simulator's queue
//!   discipline (two drop-tail queues per direction, priority first, rate, delay, errors);
//! - [`forward`]: the forwarding core, sans-IO: Ethernet frames in, the agent chain and the hop, Ethernet
//!   frames out, every frame classified and counted;
//! - [`bs`]: the I/O loop around it (AF_PACKET sockets, `ppoll`, the clock) — [`run_bs`];
//! - [`testbed`]: network namespaces FH, BS, MH joined by veth pairs, a built-in kernel-TCP bulk transfer
//!   through the base station, teardown on every exit path — [`run_testbed_transfer`];
//! - [`handoff`]: handoff on real packets — a home agent, two base stations and a moving mobile host, the
//!   handoff agents on Linux, with kernel TCP end to end — [`handoff::run_handoff_transfer`];
//! - [`split`]: I-TCP's split connection on kernel TCP, a transparent proxy in the base station's namespace
//!   whose connection to the mobile crosses the emulated hop;
//! - [`bench`] and [`bench_sockets`]: the forwarding core timed in memory, and the whole I/O loop timed on
//!   the testbed's sockets between a raw-frame generator and reflector (no kernel TCP).
//!
//! Nothing here panics on bad input from the network: malformed frames are counted and dropped or
//! forwarded by rule ([`forward`] lists the rules).

#[cfg(not(target_os = "linux"))]
compile_error!("lasthop-net is Linux only (AF_PACKET, network namespaces)");

pub mod agents;
pub mod bench;
pub mod bench_sockets;
pub mod bs;
/// The error models of the emulated hop: those of `lasthop-channel`, shared with the simulator (same
/// configuration text: `model = "ber"`, `ber = 3.9e-6`, and `packet`, `markov`, `empirical`).
pub mod channel {
    pub use lasthop_channel::error_model::{ErrorModel, ErrorModelConfig};
    pub use lasthop_channel::rng::stream;
}
pub mod counters;
pub mod forward;
pub mod handoff;
pub mod hop;
pub mod pool;
pub mod split;
pub mod sys;
pub mod tcp_info;
pub mod testbed;

pub use agents::AgentKind;
pub use bs::{run_bs, run_bs_with, serve, BsConfig};
pub use counters::Counters;
pub use forward::{Forwarder, Port};
pub use hop::{Access, Duplex, HopConfig};
pub use testbed::{run_testbed_transfer, run_testbed_transfer_observed, Testbed, TestbedConfig, TestbedResult};

/// Why the base station or the testbed could not do its job.
#[derive(Debug, thiserror::Error)]
pub enum NetError {
    #[error("must run as root for {0} (try sudo)")]
    NotRoot(&'static str),
    #[error("network namespaces are not available here: {0}")]
    NamespacesUnavailable(String),
    #[error("invalid configuration: {0}")]
    Config(String),
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
    #[error("`{command}` failed: {stderr}")]
    Command { command: String, stderr: String },
    #[error("transfer failed: {0}")]
    Transfer(String),
    #[error("interrupted (SIGINT/SIGTERM); the testbed was torn down")]
    Interrupted,
}

impl NetError {
    pub fn io(context: impl Into<String>, source: std::io::Error) -> NetError {
        NetError::Io { context: context.into(), source }
    }
}

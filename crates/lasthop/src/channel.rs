//! `lasthop channel`: make a per-packet loss trace from any error model, and fit the empirical two-state
//! channel of Balakrishnan 1998 §4 (error-free and error durations as CDFs) to a trace.

use anyhow::{anyhow, Context, Result};
use clap::Subcommand;
use lasthop_sim::channel::{fit, read_trace, trace, write_cdfs, write_trace};
use lasthop_sim::error_model::ErrorModelConfig;
use std::path::{Path, PathBuf};

#[derive(Debug, Subcommand)]
pub enum ChannelCommand {
    /// Send a constant-rate UDP stream over an error model and record which packets arrived.
    Trace {
        /// The error model as an inline TOML table, e.g. '{ model = "markov", good_ber = 2e-6, bad_ber = 2e-4,
        /// mean_good_s = 0.8, mean_bad_s = 0.1 }' or '{ model = "ber", ber = 1e-5 }'
        #[arg(long)]
        model: String,
        #[arg(long, default_value_t = 1.0)]
        rate_mbps: f64,
        #[arg(long, default_value_t = 1000)]
        packet_bytes: u32,
        /// Packets to send, at least 1
        #[arg(long, default_value_t = 100_000, value_parser = clap::value_parser!(u64).range(1..))]
        packets: u64,
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Where to write the trace (one line per packet: 1 received, 0 lost)
        #[arg(long)]
        out: PathBuf,
    },
    /// Fit the empirical two-state model to a trace: histograms of run lengths × S/R, written as CDFs.
    Fit {
        /// A trace file (as `lasthop channel trace` writes)
        trace: PathBuf,
        /// Where to write the CDF file (TOML; usable as `error = { model = "empirical", cdfs = "FILE" }`)
        #[arg(long)]
        out: PathBuf,
    },
}

pub fn channel(cmd: ChannelCommand) -> Result<()> {
    match cmd {
        ChannelCommand::Trace { model, rate_mbps, packet_bytes, packets, seed, out } => {
            let mut cfg = parse_model(&model)?;
            cfg.resolve_paths(Path::new(""));
            cfg.validate().map_err(|e| anyhow!("--model: {e}"))?;
            let t = trace(&cfg, rate_mbps, packet_bytes, packets, seed).map_err(|e| anyhow!("trace: {e}"))?;
            write(&out, &write_trace(&t))?;
            println!(
                "{} packets, {} lost ({:.2} %), mean burst {:.2} packets -> {}",
                t.packets(),
                t.lost(),
                100.0 * t.loss_rate(),
                t.mean_burst(),
                out.display()
            );
        }
        ChannelCommand::Fit { trace, out } => {
            let t = read_trace(&trace).map_err(|e| anyhow!("{e}"))?;
            let cdfs = fit(&t).map_err(|e| anyhow!("{}: {e}", trace.display()))?;
            write(&out, &write_cdfs(&cdfs))?;
            println!(
                "fitted {} packets ({:.2} % lost): mean error-free {:.1} ms, mean error {:.1} ms -> {}",
                t.packets(),
                100.0 * t.loss_rate(),
                cdfs.error_free.mean_s() * 1e3,
                cdfs.error.mean_s() * 1e3,
                out.display()
            );
        }
    }
    Ok(())
}

fn parse_model(text: &str) -> Result<ErrorModelConfig> {
    #[derive(serde::Deserialize)]
    struct Wrap {
        error: ErrorModelConfig,
    }
    let w: Wrap = toml::from_str(&format!("error = {text}")).map_err(|e| anyhow!("--model: {}", e.message()))?;
    Ok(w.error)
}

fn write(path: &Path, text: &str) -> Result<()> {
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trace_then_fit_recovers_the_loss_rate() {
        let d = tempfile::tempdir().unwrap();
        let (tr, cdfs) = (d.path().join("t.txt"), d.path().join("c.toml"));
        channel(ChannelCommand::Trace {
            model: "{ model = \"packet\", loss = 0.1 }".into(),
            rate_mbps: 1.0,
            packet_bytes: 1000,
            packets: 20_000,
            seed: 3,
            out: tr.clone(),
        })
        .unwrap();
        channel(ChannelCommand::Fit { trace: tr, out: cdfs.clone() }).unwrap();
        let c = lasthop_sim::error_model::read_cdfs(&cdfs).unwrap();
        assert!((c.error_fraction() - 0.1).abs() < 0.01, "{}", c.error_fraction());
    }

    #[test]
    fn bad_model_is_named() {
        let e = parse_model("{ model = \"bre\" }").unwrap_err().to_string();
        assert!(e.starts_with("--model") && e.contains("bre"), "{e}");
    }
}

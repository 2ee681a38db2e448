//! Loss traces and the fitting of Balakrishnan 1998 §4's empirical channel to them.
//!
//! Balakrishnan 1998 §4 ("Modeling Wireless Errors") builds its error model from measurements: send a constant-rate
//! UDP stream (rate R, packets of S bits, N packets with sequence numbers), note at the receiver which
//! packets arrived, histogram the lengths of the runs of received packets (error-free runs) and of lost
//! packets (error runs), and turn packets into time by multiplying by the packet transmission time S/R.
//! The two resulting CDFs drive the two-state model ([`crate::error_model::EmpiricalModel`]).
//!
//! This module is that pipeline:
//! - [`Trace`]: a per-packet received/lost record at a constant send interval, with its text format
//!   ([`parse_trace`], [`read_trace`], [`write_trace`]);
//! - [`fit`]: trace → [`Cdfs`] (written with [`write_cdfs`], read with [`read_cdfs`]);
//! - [`trace`]: the measurement run in simulation, a constant-rate stream over any error model → [`Trace`],
//!   so a model can be fitted, compared with a measured trace, or turned into an empirical channel.
//!
//! The CDF file format and its loader live with the model in [`crate::error_model`] (re-exported here).
//!
//! # Trace files
//!
//! UTF-8 text, one item per line:
//!
//! ```text
//! # lasthop loss trace          (lines starting with # are comments; blank lines are ignored)
//! rate_mbps = 1                 (send rate R in Mb/s, required)
//! packet_bytes = 1000           (UDP payload S/8 in bytes, required)
//! source = free text            (optional: where the trace comes from; the rest of the line)
//! 1                             (then one line per packet in send order: 1 received, 0 lost)
//! 0
//! ```
//!
//! The `key = value` lines come before the first packet line. Packet `i` is sent at `i·S/R`. Errors name the
//! file and line. (A receiver that logs the sequence numbers it got turns them into a [`Trace`] with
//! [`Trace::from_received`].)

use crate::error_model::ErrorModelConfig;
use crate::rng;
use lasthop_wire::Time;
use std::path::Path;

pub use crate::error_model::{
    builtin_cdfs, parse_cdfs, read_cdfs, write_cdfs, Cdf, Cdfs, EmpiricalModel, FileError, Interpolation, BUILTIN_CDFS,
};

/// Bytes of UDP (8) and IPv4 (20) header on every packet of a [`trace`] run: a frame carries
/// `(packet_bytes + 28) · 8` bits through the error model (what bit-error models see). The send interval,
/// as in the paper, counts the payload only: S/R with S = `packet_bytes · 8`.
pub const UDP_IP_HEADER_BYTES: u32 = 28;

/// A per-packet loss record of a constant-rate stream: packet `i` sent at `i · interval`, `received[i]`
/// whether it arrived.
#[derive(Debug, Clone, PartialEq)]
pub struct Trace {
    /// Send rate R, Mb/s.
    pub rate_mbps: f64,
    /// Payload per packet, bytes (S = 8 · this).
    pub packet_bytes: u32,
    /// Provenance, one line of free text (may be empty).
    pub source: String,
    pub received: Vec<bool>,
}

/// The runs of a [`Trace`], in order, lengths in packets.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Runs {
    /// Runs of received packets.
    pub error_free: Vec<u64>,
    /// Runs of lost packets.
    pub error: Vec<u64>,
}

impl Trace {
    /// The trace of a stream of `packets` packets numbered from 0 of which those in `received_seqs` arrived
    /// (duplicates and numbers ≥ `packets` ignored).
    pub fn from_received(rate_mbps: f64, packet_bytes: u32, packets: u64, received_seqs: &[u64]) -> Trace {
        let mut received = vec![false; packets as usize];
        for &s in received_seqs {
            if let Some(r) = received.get_mut(s as usize) {
                *r = true;
            }
        }
        Trace { rate_mbps, packet_bytes, source: String::new(), received }
    }

    /// The send interval S/R, seconds: the paper's "packet transmission time".
    pub fn interval_s(&self) -> f64 {
        interval_s(self.rate_mbps, self.packet_bytes)
    }

    pub fn packets(&self) -> u64 {
        self.received.len() as u64
    }

    pub fn lost(&self) -> u64 {
        self.received.iter().filter(|&&r| !r).count() as u64
    }

    /// Gross loss rate: lost / sent (0 for an empty trace).
    pub fn loss_rate(&self) -> f64 {
        if self.received.is_empty() {
            0.0
        } else {
            self.lost() as f64 / self.received.len() as f64
        }
    }

    /// The runs of received and of lost packets, each list in trace order.
    pub fn runs(&self) -> Runs {
        let mut runs = Runs::default();
        let mut i = 0;
        while i < self.received.len() {
            let state = self.received[i];
            let start = i;
            while i < self.received.len() && self.received[i] == state {
                i += 1;
            }
            let len = (i - start) as u64;
            if state {
                runs.error_free.push(len)
            } else {
                runs.error.push(len)
            }
        }
        runs
    }

    /// Mean length of a run of lost packets, packets (0 if none is lost).
    pub fn mean_burst(&self) -> f64 {
        let r = self.runs();
        if r.error.is_empty() {
            0.0
        } else {
            r.error.iter().sum::<u64>() as f64 / r.error.len() as f64
        }
    }
}

/// S/R in seconds for `packet_bytes`-byte packets at `rate_mbps`.
/// Stream rates a trace may have, Mb/s: 1 bit/s to 1 Pb/s (as a simulated link's).
pub const RATE_MBPS: std::ops::RangeInclusive<f64> = 1e-6..=1e9;
/// Longest a trace may last, seconds (about 31 years): its run lengths become durations in integer
/// nanoseconds, which must stay exact and far from `u64` overflow when a simulation adds them up.
pub const MAX_TRACE_S: f64 = 1e9;

/// Checks a stream's rate, packet size and length; the error names the field at fault.
fn check_stream(rate_mbps: f64, packet_bytes: u32, packets: u64) -> Result<(), (&'static str, String)> {
    if !RATE_MBPS.contains(&rate_mbps) {
        let (lo, hi) = (RATE_MBPS.start(), RATE_MBPS.end());
        return Err(("rate_mbps", format!("expected a rate from {lo:e} to {hi:e} Mb/s, got {rate_mbps}")));
    }
    if !(1..=65_535).contains(&packet_bytes) {
        return Err(("packet_bytes", format!("expected a size from 1 to 65535 bytes, got {packet_bytes}")));
    }
    let lasts = packets as f64 * interval_s(rate_mbps, packet_bytes);
    if lasts > MAX_TRACE_S {
        return Err((
            "rate_mbps",
            format!(
                "{packets} packets of {packet_bytes} bytes at {rate_mbps} Mb/s last {lasts:e} s; expected at most \
                 {MAX_TRACE_S:e} s (a faster rate or fewer packets)"
            ),
        ));
    }
    Ok(())
}

fn interval_s(rate_mbps: f64, packet_bytes: u32) -> f64 {
    (u64::from(packet_bytes) * 8) as f64 / (rate_mbps * 1e6)
}

/// Reads a trace file (format: module docs, "Trace files").
pub fn read_trace(path: &Path) -> Result<Trace, FileError> {
    let origin = path.display().to_string();
    let text =
        std::fs::read_to_string(path).map_err(|e| FileError::new(&origin, None, None, format!("cannot read: {e}")))?;
    parse_trace(&text, &origin)
}

/// Parses trace text (format: module docs, "Trace files"); `origin` names it in errors.
pub fn parse_trace(text: &str, origin: &str) -> Result<Trace, FileError> {
    let err = |line: usize, field: Option<&str>, msg: String| {
        FileError::new(origin, Some(line), field.map(String::from), msg)
    };
    let (mut rate, mut bytes, mut source) = (None, None, None);
    let mut line_of_key = std::collections::BTreeMap::new();
    let mut received = Vec::new();
    for (n, raw) in text.lines().enumerate() {
        let line = n + 1;
        let l = raw.trim();
        if l.is_empty() || l.starts_with('#') {
            continue;
        }
        match l {
            "1" => received.push(true),
            "0" => received.push(false),
            _ => {
                let Some((key, value)) = l.split_once('=') else {
                    return Err(err(
                        line,
                        None,
                        format!("expected 1 (received), 0 (lost) or `key = value`, got `{l}`"),
                    ));
                };
                let (key, value) = (key.trim(), value.trim());
                line_of_key.insert(key.to_string(), line);
                if !received.is_empty() {
                    return Err(err(line, Some(key), "expected `key = value` lines before the first packet".into()));
                }
                match key {
                    "rate_mbps" => match value.parse::<f64>() {
                        Ok(r) if r.is_finite() && r > 0.0 => rate = Some(r),
                        _ => return Err(err(line, Some(key), format!("expected a rate > 0 in Mb/s, got `{value}`"))),
                    },
                    "packet_bytes" => match value.parse::<u32>() {
                        Ok(b) if b > 0 => bytes = Some(b),
                        _ => return Err(err(line, Some(key), format!("expected a size > 0 in bytes, got `{value}`"))),
                    },
                    "source" => source = Some(value.to_string()),
                    _ => {
                        return Err(err(
                            line,
                            Some(key),
                            "unknown key (expected rate_mbps, packet_bytes or source)".into(),
                        ))
                    }
                }
            }
        }
    }
    let missing =
        |key: &str| FileError::new(origin, None, Some(key.into()), "missing (needed for the send interval S/R)");
    let trace = Trace {
        rate_mbps: rate.ok_or_else(|| missing("rate_mbps"))?,
        packet_bytes: bytes.ok_or_else(|| missing("packet_bytes"))?,
        source: source.unwrap_or_default(),
        received,
    };
    check_stream(trace.rate_mbps, trace.packet_bytes, trace.packets())
        .map_err(|(key, msg)| FileError::new(origin, line_of_key.get(key).copied(), Some(key.into()), msg))?;
    Ok(trace)
}

/// Trace-file text for `trace` (format: module docs, "Trace files"). A line break in `source` becomes a
/// space (the format keeps it on one line).
pub fn write_trace(trace: &Trace) -> String {
    let mut out = String::with_capacity(trace.received.len() * 2 + 256);
    out.push_str("# lasthop loss trace: one line per packet in send order, 1 received, 0 lost; packet i sent at\n");
    out.push_str(&format!(
        "# i * S/R = i * {} s. {} packets, {} lost ({:.4} %).\n",
        trace.interval_s(),
        trace.packets(),
        trace.lost(),
        100.0 * trace.loss_rate()
    ));
    out.push_str(&format!("rate_mbps = {:?}\npacket_bytes = {}\n", trace.rate_mbps, trace.packet_bytes));
    let source = trace.source.replace(['\n', '\r'], " ");
    if !source.trim().is_empty() {
        out.push_str(&format!("source = {}\n", source.trim()));
    }
    for &r in &trace.received {
        out.push_str(if r { "1\n" } else { "0\n" });
    }
    out
}

/// Fits Balakrishnan 1998 §4's empirical model to `trace`: the histograms of the lengths of the runs of received
/// packets (error-free) and of lost packets (error), in packets × S/R seconds, as step CDFs.
///
/// Step, not linear: the measured durations are whole multiples of S/R, and interpolating between adjacent
/// histogram bins would shorten every run by half a packet on average (a large bias on bursts of a few
/// packets). With steps, the fitted model replays the trace's run-length distributions exactly at the same
/// interval (see [`EmpiricalModel`](crate::error_model::EmpiricalModel)).
///
/// Every run is counted, including the first and last, which the trace's ends cut short: that keeps the
/// fitted error fraction equal to the trace's loss rate (within one run), and with many runs their bias is
/// negligible. Needs at least one received and one lost packet.
pub fn fit(trace: &Trace) -> Result<Cdfs, String> {
    check_stream(trace.rate_mbps, trace.packet_bytes, trace.packets()).map_err(|(k, m)| format!("{k}: {m}"))?;
    let runs = trace.runs();
    if runs.error.is_empty() || runs.error_free.is_empty() {
        return Err(format!(
            "the trace needs both received and lost packets to fit ({} packets, {} lost)",
            trace.packets(),
            trace.lost()
        ));
    }
    let bits = u64::from(trace.packet_bytes) * 8;
    let rate_bps = trace.rate_mbps * 1e6;
    let cdf = |lengths: &[u64]| -> Result<Cdf, String> {
        let mut counts = std::collections::BTreeMap::new();
        for &l in lengths {
            *counts.entry(l).or_insert(0u64) += 1;
        }
        let n = lengths.len() as u64;
        let (mut values, mut probs, mut cum) = (Vec::new(), Vec::new(), 0u64);
        for (len, count) in counts {
            cum += count;
            // k·S exact in an f64 up to 2^53 bits, then one rounding: k·S/R correctly rounded.
            values.push((len * bits) as f64 / rate_bps);
            probs.push(cum as f64 / n as f64);
        }
        Cdf::new(values, probs, Interpolation::Step)
    };
    let source = format!(
        "fit (lasthop channel fit) of a {}-packet trace, {} lost, {} Mb/s, {}-byte packets (S/R = {} s){}",
        trace.packets(),
        trace.lost(),
        trace.rate_mbps,
        trace.packet_bytes,
        trace.interval_s(),
        if trace.source.trim().is_empty() { String::new() } else { format!("; trace: {}", trace.source.trim()) },
    );
    Ok(Cdfs {
        source,
        rate_mbps: Some(trace.rate_mbps),
        packet_bytes: Some(trace.packet_bytes),
        packets: Some(trace.packets()),
        lost: Some(trace.lost()),
        error_free: cdf(&runs.error_free)?,
        error: cdf(&runs.error)?,
    })
}

/// Balakrishnan 1998 §4's measurement run, simulated: a constant-rate UDP stream of `packets` packets of
/// `packet_bytes` bytes at `rate_mbps` over the error model `model`, recording which arrived.
///
/// Packet `i` occupies the channel over `[i·S/R, (i+1)·S/R)` (times rounded to ns; S = 8·`packet_bytes`,
/// the paper's "packet transmission time" S/R) and is a frame of `(packet_bytes +` [`UDP_IP_HEADER_BYTES`]`)·8`
/// bits for the model. The model's generator is `rng::stream(seed, "channel.trace", "error")`, so the
/// trace is a pure function of the arguments. `model` is validated first (an `empirical` model reads its
/// file); its error message is returned.
pub fn trace(
    model: &ErrorModelConfig,
    rate_mbps: f64,
    packet_bytes: u32,
    packets: u64,
    seed: u64,
) -> Result<Trace, String> {
    if packets == 0 {
        return Err("packets: expected at least 1 packet".into());
    }
    check_stream(rate_mbps, packet_bytes, packets).map_err(|(k, m)| format!("{k}: {m}"))?;
    model.validate()?;
    let mut m = model.build(rng::stream(seed, "channel.trace", "error"));
    let interval_ns = interval_s(rate_mbps, packet_bytes) * 1e9;
    let at = |i: u64| Time::from_nanos((i as f64 * interval_ns).round() as u64);
    let bits = u64::from(packet_bytes + UDP_IP_HEADER_BYTES) * 8;
    let received = (0..packets).map(|i| !m.corrupts(at(i), at(i + 1), bits)).collect();
    let model_text = toml::to_string(&Wrap { model }).map(|s| s.trim().replace('\n', ", ")).unwrap_or_default();
    Ok(Trace {
        rate_mbps,
        packet_bytes,
        source: format!("lasthop channel trace, seed {seed}, error model {{ {model_text} }}"),
        received,
    })
}

#[derive(serde::Serialize)]
struct Wrap<'a> {
    #[serde(flatten)]
    model: &'a ErrorModelConfig,
}

/// The model `channels/reinas.toml` was fitted to (see the file's `source`): a Gilbert-Elliott channel,
/// about 1.6 % frame loss in the good state and 81 % in the bad one for 1028-byte frames, sojourns of mean
/// 0.8 s and 0.1 s, chosen for an expected gross loss of 10.6 % in bursts of about 3 packets.
pub const REINAS_MODEL: ErrorModelConfig =
    ErrorModelConfig::Markov { good_ber: 2e-6, bad_ber: 2e-4, mean_good_s: 0.8, mean_bad_s: 0.1 };

/// The `source` text of `channels/reinas.toml`.
pub const REINAS_SOURCE: &str = "\
SYNTHETIC stand-in for the Reinas channel of Balakrishnan 1998 §4, NOT a measurement: the paper's traces and CDF
figure are not available. Made to have the character the paper reports for the trace it used: a constant-rate
UDP stream at R = 1 Mb/s with 1000-byte packets (S/R = 8 ms), one experiment of N = 100 000 packets,
gross loss about 10.6 %, losses in bursts.
Process: (1) a two-state Gilbert-Elliott channel, lasthop's `markov` model with good_ber = 2e-6,
bad_ber = 2e-4 (about 1.6 % and 81 % loss for a 1028-byte frame) and exponential sojourns of mean
mean_good_s = 0.8 s, mean_bad_s = 0.1 s, parameters chosen for an expected gross loss of 10.6 % (10.63 %
over 3 million packets) in bursts of about 3 packets; (2) a trace of 100 000 packets over it with seed 2;
(3) the fit of that trace: step CDFs of the run lengths of received (error-free) and lost (error) packets
times S/R. This trace lost 10.49 %.
Regenerate with
  lasthop channel trace --model '{ model = \"markov\", good_ber = 2e-6, bad_ber = 2e-4, mean_good_s = 0.8, mean_bad_s = 0.1 }' --rate-mbps 1 --packet-bytes 1000 --packets 100000 --seed 2 --out reinas.trace
  lasthop channel fit reinas.trace --out reinas.toml
(same arrays, another `source`), or byte for byte with
  LASTHOP_REGENERATE=1 cargo test -p lasthop-channel --lib fit::tests::reinas_file_is_reproducible";

/// `channels/reinas.toml` as [`REINAS_SOURCE`] describes it: trace of [`REINAS_MODEL`], fit, source text.
pub fn reinas_cdfs() -> Cdfs {
    let t = trace(&REINAS_MODEL, 1.0, 1000, 100_000, 2).expect("a valid model");
    let mut c = fit(&t).expect("a trace with losses");
    c.source = REINAS_SOURCE.to_string();
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(name: &str) -> String {
        format!("{}/tests/data/channel/{name}", env!("CARGO_MANIFEST_DIR"))
    }

    /// P(packet i+1 lost | packet i lost).
    fn loss_after_loss(t: &Trace) -> f64 {
        let v = &t.received;
        let pairs = v.windows(2).filter(|w| !w[0]).count();
        v.windows(2).filter(|w| !w[0] && !w[1]).count() as f64 / pairs as f64
    }

    #[test]
    fn runs_and_trace_file() {
        let t = read_trace(Path::new(&data("small.trace"))).unwrap();
        assert_eq!((t.rate_mbps, t.packet_bytes, t.source.as_str()), (1.0, 1000, "hand-written test data"));
        assert_eq!(t.packets(), 12);
        assert_eq!(t.lost(), 4);
        assert_eq!(t.runs(), Runs { error_free: vec![3, 2, 3], error: vec![2, 1, 1] });
        assert!((t.mean_burst() - 4.0 / 3.0).abs() < 1e-12);
        assert_eq!(t.interval_s(), 0.008);
        assert_eq!(parse_trace(&write_trace(&t), "again").unwrap(), t);
        let from_seqs = Trace::from_received(1.0, 1000, 12, &[0, 1, 2, 5, 6, 8, 9, 10, 10, 99]);
        assert_eq!(from_seqs.received, t.received);
        let empty = Trace { received: vec![], ..t.clone() };
        assert_eq!((empty.loss_rate(), empty.mean_burst()), (0.0, 0.0));
        assert_eq!(parse_trace(&write_trace(&empty), "e").unwrap(), empty);
    }

    #[test]
    fn trace_file_errors_name_line_and_field() {
        let head = "# c\nrate_mbps = 1\npacket_bytes = 1000\n";
        let e = parse_trace(&format!("{head}1\n0\nx\n"), "t.trace").unwrap_err();
        assert_eq!(e.to_string(), "t.trace:6: expected 1 (received), 0 (lost) or `key = value`, got `x`");
        let e = parse_trace(&format!("{head}1\nrate_mbps = 2\n"), "t.trace").unwrap_err();
        assert_eq!((e.line, e.field.as_deref()), (Some(5), Some("rate_mbps")));
        let e = parse_trace("rate_mbps = 0\n", "t.trace").unwrap_err();
        assert!(e.to_string().starts_with("t.trace:1: rate_mbps: expected a rate > 0"), "{e}");
        let e = parse_trace("rate_mbps = 1\npacket_bytes = -3\n", "t.trace").unwrap_err();
        assert_eq!((e.line, e.field.as_deref()), (Some(2), Some("packet_bytes")));
        let e = parse_trace("rate_mbps = 1\nrate = 2\n", "t.trace").unwrap_err();
        assert!(e.message.starts_with("unknown key"), "{e}");
        let e = parse_trace("packet_bytes = 10\n1\n", "t.trace").unwrap_err();
        assert_eq!(e.to_string(), "t.trace: rate_mbps: missing (needed for the send interval S/R)");
        let e = read_trace(Path::new("/nonexistent.trace")).unwrap_err();
        assert!(e.to_string().starts_with("/nonexistent.trace: cannot read"));
        // A rate so low that the fitted durations would be astronomical: named at its line.
        let e = parse_trace("# c\nrate_mbps = 1e-300\npacket_bytes = 1000\n1\n0\n", "t.trace").unwrap_err();
        assert_eq!((e.line, e.field.as_deref()), (Some(2), Some("rate_mbps")));
        assert!(e.message.starts_with("expected a rate from 1e-6"), "{e}");
        let slow = format!("rate_mbps = 1e-6\npacket_bytes = 65535\n{}", "1\n0\n".repeat(1000));
        let e = parse_trace(&slow, "t.trace").unwrap_err();
        assert_eq!((e.line, e.field.as_deref()), (Some(1), Some("rate_mbps")));
        assert!(e.message.contains("expected at most 1e9 s"), "{e}");
        let t = Trace { rate_mbps: 1e-300, packet_bytes: 1000, source: String::new(), received: vec![true, false] };
        assert!(fit(&t).unwrap_err().starts_with("rate_mbps: expected a rate"));
        assert_eq!(trace(&REINAS_MODEL, 1.0, 1000, 0, 1).unwrap_err(), "packets: expected at least 1 packet");
    }

    #[test]
    fn fit_builds_step_cdfs_of_run_lengths() {
        let t = read_trace(Path::new(&data("small.trace"))).unwrap();
        let c = fit(&t).unwrap();
        assert_eq!(c.error_free.values_s, [0.016, 0.024]);
        assert_eq!(c.error_free.cdf, [1.0 / 3.0, 1.0]);
        assert_eq!(c.error.values_s, [0.008, 0.016]);
        assert_eq!(c.error.cdf, [2.0 / 3.0, 1.0]);
        assert_eq!(c.error.interpolation, Interpolation::Step);
        assert_eq!((c.rate_mbps, c.packet_bytes, c.packets, c.lost), (Some(1.0), Some(1000), Some(12), Some(4)));
        assert!(c.source.contains("12-packet trace, 4 lost") && c.source.ends_with("trace: hand-written test data"));
        // Error fraction of the fit = the trace's loss rate when the counts of runs are equal.
        assert!((c.error_fraction() - t.loss_rate()).abs() < 1e-12);
        assert_eq!(parse_cdfs(&write_cdfs(&c), "again").unwrap(), c);
        // Nothing to fit.
        let all = Trace { received: vec![true; 5], ..t.clone() };
        assert!(fit(&all).unwrap_err().contains("both received and lost"));
        assert!(fit(&Trace { received: vec![false; 5], ..t.clone() }).is_err());
        assert!(fit(&Trace { rate_mbps: 0.0, ..t.clone() }).unwrap_err().starts_with("rate_mbps"));
    }

    /// fit ∘ trace on a good_ber 0 / bad_ber 1 Markov channel against the exact loss rate and mean burst of
    /// that channel sampled by back-to-back frames of length T (a frame is lost when any part of it is sent
    /// in the bad state). With good periods G ~ Exp(mg), bad ones B ~ Exp(mb) and random phase:
    /// received frames per cycle = E[(G/T − 1)⁺] = (mg/T)·e^(−T/mg), so loss = 1 − mg·e^(−T/mg)/(mg + mb);
    /// bursts per cycle = P(a good period holds a whole frame) = (mg/T)(e^(−T/mg) − e^(−2T/mg)).
    #[test]
    fn fit_of_trace_recovers_markov_loss_and_burst_length() {
        let (mg, mb, t) = (0.4f64, 0.04f64, 0.008f64);
        let (e1, e2) = ((-t / mg).exp(), (-2.0 * t / mg).exp());
        let loss = 1.0 - mg * e1 / (mg + mb);
        let bursts_per_cycle = mg / t * (e1 - e2);
        let burst = (mg + mb) / t * loss / bursts_per_cycle;
        assert!((loss - 0.1089).abs() < 1e-3 && (burst - 6.17).abs() < 0.01, "{loss} {burst}");

        let model = ErrorModelConfig::Markov { good_ber: 0.0, bad_ber: 1.0, mean_good_s: mg, mean_bad_s: mb };
        let tr = trace(&model, 1.0, 1000, 200_000, 11).unwrap();
        let close = |what: &str, got: f64, want: f64| {
            assert!((got / want - 1.0).abs() < 0.10, "{what}: got {got}, exact {want}");
        };
        close("trace loss", tr.loss_rate(), loss);
        close("trace burst", tr.mean_burst(), burst);
        let c = fit(&tr).unwrap();
        close("fitted error fraction", c.error_fraction(), loss);
        close("fitted mean burst", c.error.mean_s() / t, burst);
        // The empirical model built from the fit, traced again with another seed.
        let again = trace(&ErrorModelConfig::empirical(c), 1.0, 1000, 200_000, 12).unwrap();
        close("replayed loss", again.loss_rate(), loss);
        close("replayed burst", again.mean_burst(), burst);
    }

    /// At the fitted interval the empirical model's state changes fall on multiples of S/R and decisions at
    /// mid-packet, so every run it produces is a run length of the fitted trace.
    #[test]
    fn empirical_replays_fitted_run_lengths_exactly() {
        let tr = trace(&REINAS_MODEL, 1.0, 1000, 50_000, 5).unwrap();
        let c = fit(&tr).unwrap();
        let lengths =
            |cdf: &Cdf| -> Vec<u64> { cdf.values_s.iter().map(|v| (v / tr.interval_s()).round() as u64).collect() };
        let (free, err) = (lengths(&c.error_free), lengths(&c.error));
        let replay = trace(&ErrorModelConfig::empirical(c), 1.0, 1000, 50_000, 6).unwrap();
        assert!(replay.received[0], "starts error-free");
        let runs = replay.runs();
        // The last run may be cut by the end of the trace.
        let (nf, ne) = (runs.error_free.len(), runs.error.len());
        assert!(runs.error_free[..nf - 1].iter().all(|l| free.contains(l)));
        assert!(runs.error[..ne - 1].iter().all(|l| err.contains(l)));
    }

    #[test]
    fn trace_is_deterministic_and_frames_carry_headers() {
        let m = ErrorModelConfig::Ber { ber: 1e-5 };
        let a = trace(&m, 1.0, 1000, 20_000, 3).unwrap();
        assert_eq!(a, trace(&m, 1.0, 1000, 20_000, 3).unwrap());
        assert_ne!(a.received, trace(&m, 1.0, 1000, 20_000, 4).unwrap().received);
        assert_eq!(a.source, "lasthop channel trace, seed 3, error model { model = \"ber\", ber = 0.00001 }");
        // Frames of (1000 + 28)·8 bits: loss 1 − (1 − 1e-5)^8224 ≈ 7.9 %.
        let p = crate::error_model::ber_frame_loss(1e-5, 8224);
        assert!((a.loss_rate() - p).abs() < 0.006, "{} vs {p}", a.loss_rate());
        // Bad arguments and models are reported.
        assert!(trace(&m, 0.0, 1000, 1, 1).unwrap_err().starts_with("rate_mbps"));
        assert!(trace(&m, 1.0, 0, 1, 1).unwrap_err().starts_with("packet_bytes"));
        assert!(trace(&ErrorModelConfig::Ber { ber: 2.0 }, 1.0, 1000, 1, 1).unwrap_err().starts_with("ber: "));
        assert!(trace(&ErrorModelConfig::empirical_file("/nonexistent"), 1.0, 1000, 1, 1)
            .unwrap_err()
            .starts_with("cdfs: "));
    }

    /// The shipped channel: Balakrishnan 1998 §4's gross loss of 10.6 % (±1.5 % absolute), in bursts.
    #[test]
    fn shipped_reinas_channel_has_the_papers_character() {
        let cfg = ErrorModelConfig::empirical_builtin("reinas");
        cfg.validate().unwrap();
        let c = cfg.empirical_cdfs().unwrap();
        assert_eq!((c.rate_mbps, c.packet_bytes, c.packets), (Some(1.0), Some(1000), Some(100_000)));
        assert!((c.error_fraction() - 0.106).abs() < 0.015, "CDF means give {}", c.error_fraction());
        // The model over a long run at the paper's rate and packet size.
        let t = trace(&cfg, 1.0, 1000, 1_000_000, 7).unwrap();
        assert!((t.loss_rate() - 0.106).abs() < 0.015, "gross loss {}", t.loss_rate());
        assert!(t.mean_burst() > 2.0, "mean burst {} packets", t.mean_burst());
        assert!(loss_after_loss(&t) > 5.0 * t.loss_rate(), "bursty: P(loss | loss) {}", loss_after_loss(&t));
        // The same file through a path.
        let path = format!("{}/../../channels/reinas.toml", env!("CARGO_MANIFEST_DIR"));
        assert_eq!(read_cdfs(Path::new(&path)).unwrap(), *c);
    }

    /// `channels/reinas.toml` is exactly what its `source` says. `LASTHOP_REGENERATE=1` rewrites it.
    #[test]
    fn reinas_file_is_reproducible() {
        let path = format!("{}/../../channels/reinas.toml", env!("CARGO_MANIFEST_DIR"));
        let cdfs = reinas_cdfs();
        // REINAS_SOURCE quotes this count.
        assert_eq!(cdfs.lost, Some(10_490));
        let text = write_cdfs(&cdfs);
        if std::env::var_os("LASTHOP_REGENERATE").is_some() {
            std::fs::write(&path, &text).unwrap();
        }
        assert!(std::fs::read_to_string(&path).unwrap() == text, "{path} differs from its regeneration");
        assert_eq!(*builtin_cdfs("reinas").unwrap().unwrap(), parse_cdfs(&text, "regenerated").unwrap());
    }
}

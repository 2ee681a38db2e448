//! Floors under a scenario's recurring durations. A timer that is re-armed when it fires, or a period that
//! repeats, must not be so short that a run does nothing but fire it: a 1 ns Snoop persist timer expires a
//! billion times per simulated second. Every such duration is range-checked against its floor when the
//! scenario is read; one-off times (start times, delays, `failure.at_s`) may be zero and need none. The
//! floors sit far below every value the papers, the defaults, `examples/` and `experiments/` use (each
//! constant says how far), so they refuse only the absurd; [`crate::world`] still stops a run whose
//! simulated time stops advancing, whatever the cause.

/// Snoop's timers (`snoop.min_rtx_timeout_ms`, `max_rtx_timeout_ms`, `initial_srtt_ms`,
/// `persist_timeout_ms`) and the NACK agent's silence timer (`nack.timeout_ms`), ms. Snoop's smallest
/// default is the transmit-timed round-trip floor of 5 ms (the paper's is 40 ms, Balakrishnan 1995 §6; its
/// persist timer 200 ms); NACK's default is 50 ms; no example or experiment sets any of them. At 1 ms a
/// connection's timer fires at most 1,000 times per simulated second.
pub const AGENT_TIMER_MS: f64 = 1.0;

/// TCP's clock and timers (`tcp.tick_ms` unless 0, the exact clock; `initial_rto_ms`, `max_rto_ms`,
/// `persist_min_ms`, `persist_max_ms`), ms: Linux's finest clock (1 ms jiffies at HZ = 1000). The examples' ticks are 100 and
/// 500 ms (4.4BSD's slow timer), their smallest RTO setting 500 ms (`min_rto_ms`, which may be 0, as in
/// `examples/web-ns.toml`: the RTO then rests on the measured RTT and the tick).
pub const TCP_TIMER_MS: f64 = 1.0;

/// Link-level ARQ's retransmission timer (`links.*.arq.timeout_ms`), ms. Its default is twice a window of
/// 1,500-byte frames' air time (tens of ms on the papers' 2 Mb/s WaveLAN); no example sets it.
pub const ARQ_TIMER_MS: f64 = 0.1;

/// Periods of mobility (`mobility.interval_s`, `beacon_period_s`, `motion_step_s`), s: the floor
/// `[mobile_ip]` already puts under `handoff_every_s`. The examples hand off every 5 or 8 s and beacon once
/// a second (Balakrishnan 1995 §6); the tests' shortest handoff interval is 0.15 s and the default motion
/// step 0.05 s.
pub const MOBILITY_PERIOD_S: f64 = 0.001;

/// `Err((field, message))` unless `value` is at least `floor` (`unit` names both in the message).
pub(crate) fn at_least(field: &str, value: f64, floor: f64, unit: &str) -> Result<(), (String, String)> {
    if value >= floor {
        return Ok(());
    }
    Err((
        field.to_string(),
        format!(
            "expected at least {floor} {unit} (shorter would fire so often that the run could not end), got {value}"
        ),
    ))
}

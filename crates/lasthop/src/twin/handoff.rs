//! The handoff testbed's simulator twin: the simulator scenario of a handoff testbed configuration
//! (`TestbedConfig` with `handoff` set), two cells and the same hop, handoffs on the same schedule by the same
//! scheme, so that `lasthop twin` and `runner = "twin"` run the real and the simulated handoffs side by side.
//!
//! The testbed's mobile hears one cell at a time: its radio is tuned to one base station, and frames the
//! other sends into its cell are lost (`lasthop_net::handoff::mh`). In the simulator that is scheduled
//! motion in non-overlapping cells with a 0 s rendezvous (Caceres 1995's third case): each cell its own
//! medium, a frame on a cell the mobile has left lost. What the simulator cannot mirror is refused, naming
//! the field.

use lasthop_net::handoff::{HandoffBy, HandoffScheme};
use lasthop_net::{AgentKind, TestbedConfig};

/// Whether a scenario document is a testbed configuration with two base stations (its `handoff` field)
/// rather than a simulator scenario.
pub fn is_handoff_testbed(doc: &toml::Value) -> bool {
    doc.get("handoff").is_some()
}

/// The simulator's sender for the kernel's congestion control `cc`: Linux's `reno` recovers as NewReno
/// (RFC 6582) without SACK and by SACK (RFC 6675) with it; the other controls the simulator has run under
/// the kernel module's name.
pub fn sim_variant(cc: &str, sack: bool) -> Result<&'static str, String> {
    match cc {
        "reno" if sack => Ok("sack"),
        "reno" => Ok("newreno"),
        "cubic" => Ok("cubic"),
        "bbr" => Ok("bbr"),
        "westwood" => Ok("westwood"),
        "veno" => Ok("veno"),
        "vegas" => Ok("vegas"),
        other => Err(format!(
            "`cc` = \"{other}\": the simulator has no sender for this congestion control (it has reno, cubic, \
             bbr, westwood, veno and vegas)"
        )),
    }
}

/// The simulator scenario of the handoff testbed configuration `cfg`, or what the simulator cannot mirror,
/// naming the field.
///
/// FH — HA — BS1, BS2 — MH as in the testbed: the wired links are the testbed's veth pairs (1000 Mb/s, no
/// delay but `wired_delay_ms`, which the testbed's base stations add on their wired side and the scenario
/// puts on the home agent's links to them); each cell is `cfg`'s hop with its bit errors both ways; the
/// mobile starts in BS1's cell and hands off every `handoff_every_s` seconds; each base station beacons
/// every `beacon_every_s`. Snoop at the base stations is queue-timed, as the testbed's handoff base station
/// runs it (its driver does not report transmissions, Balakrishnan 1995 §6). The sender and receiver are set
/// as Linux's, as `examples/twin.toml`'s are.
pub fn scenario_of(cfg: &TestbedConfig) -> Result<toml::Value, String> {
    let Some(scheme) = cfg.handoff else {
        return Err("`handoff`: not set (a testbed configuration without handoffs has one base station)".into());
    };
    let agent = match cfg.agent {
        AgentKind::None => "none",
        AgentKind::Snoop => "snoop",
        other => return Err(format!("`agent` = \"{other}\": the handoff testbed runs none or snoop")),
    };
    if cfg.handoff_by == HandoffBy::Beacons {
        return Err("`handoff_by` = \"beacons\": not supported by the twin. The testbed's radio hears one cell at a \
                    time, while the simulator's beacon-driven motion keeps every cell in range attached, so the \
                    two would not lose the same frames (use the schedule)"
            .into());
    }
    if let Some(n) = cfg.handoff_limit {
        return Err(format!(
            "`handoff_limit` = {n}: not supported by the twin (the simulator's schedule does not stop after a count)"
        ));
    }
    if !(cfg.rate_mbps.is_finite() && cfg.rate_mbps > 0.0) {
        return Err(format!(
            "`rate_mbps` = {}: not supported by the twin (the simulator's cells need a rate; the testbed's 0 is \
             an unlimited hop)",
            cfg.rate_mbps
        ));
    }
    if cfg.max_window == 0 {
        return Err("`max_window` = 0: not supported by the twin (the kernel's own autotuned window has no \
                    counterpart in the simulator's receiver)"
            .into());
    }
    let variant = sim_variant(&cfg.cc, cfg.sack)?;
    let (scheme_name, fast_retransmit) = match scheme {
        HandoffScheme::Multicast => ("multicast", false),
        HandoffScheme::Plain => ("plain", false),
        HandoffScheme::FastRexmit => ("plain", true),
    };
    let error = if cfg.ber > 0.0 {
        format!("{{ model = \"ber\", ber = {:?} }}", cfg.ber)
    } else {
        "{ model = \"none\" }".into()
    };
    let text_of = |v: toml::Value| v.to_string();
    let duplex = text_of(toml::Value::try_from(cfg.duplex).map_err(|e| e.to_string())?);
    let access = text_of(toml::Value::try_from(cfg.access).map_err(|e| e.to_string())?);
    let cell = |bs: &str| {
        format!(
            "[links.cell{n}]\nends = [\"{bs}\", \"mh\"]\nkind = \"wireless\"\nrate_mbps = {rate:?}\ndelay_ms = {delay:?}\n\
             mac_overhead_us = {mac:?}\nqueue_packets = {queue}\nduplex = {duplex}\n{access}error = {error}\n",
            n = &bs[2..],
            rate = cfg.rate_mbps,
            delay = cfg.delay_ms,
            mac = cfg.mac_overhead_us,
            queue = cfg.queue_packets,
            // the simulator takes `access` on a half-duplex link only
            access = if cfg.duplex == lasthop_net::Duplex::Half { format!("access = {access}\n") } else { String::new() },
        )
    };
    let wired = |name: &str, a: &str, b: &str, delay: f64| {
        format!(
            "[links.{name}]\nends = [\"{a}\", \"{b}\"]\nkind = \"wired\"\nrate_mbps = 1000.0\ndelay_ms = {delay:?}\n\
             queue_packets = 100\n"
        )
    };
    let text = format!(
        "seed = {seed}\ntime_limit_s = {limit:?}\n\n\
         [nodes.fh]\naddr = \"10.0.0.1\"\n[nodes.ha]\naddr = \"10.0.0.2\"\n\
         [nodes.bs1]\naddr = \"10.0.1.1\"\nagent = \"{agent}\"\n[nodes.bs2]\naddr = \"10.0.2.1\"\nagent = \"{agent}\"\n\
         [nodes.mh]\naddr = \"10.1.0.1\"\n\n{ether}{ha1}{ha2}{cell1}{cell2}\n\
         [mobility]\nscheme = \"{scheme_name}\"\nmobile = \"mh\"\nhome_agent = \"ha\"\nbase_stations = [\"bs1\", \"bs2\"]\n\
         interval_s = {every:?}\ncells = \"non-overlapping\"\nrendezvous_s = 0.0\nshared_medium = false\n\
         fast_retransmit = {fast_retransmit}\nbuffer_packets = {buffer}\nbeacon_period_s = {beacon:?}\n\
         snoop_transmit_reports = false\n\n\
         [flows.bulk]\nfrom = \"fh\"\nto = \"mh\"\nbytes = {bytes}\n\n\
         [tcp]\nvariant = \"{variant}\"\nprofile = \"linux\"\nsack = {sack}\ntimestamps = true\nmss = 1460\n\
         max_window = {window}\ninitial_ssthresh = 1_000_000_000\n",
        seed = cfg.seed,
        limit = cfg.timeout_s,
        ether = wired("ether", "fh", "ha", 0.0),
        ha1 = wired("ha-bs1", "ha", "bs1", cfg.wired_delay_ms),
        ha2 = wired("ha-bs2", "ha", "bs2", cfg.wired_delay_ms),
        cell1 = cell("bs1"),
        cell2 = cell("bs2"),
        every = cfg.handoff_every_s,
        buffer = cfg.handoff_buffer_packets,
        beacon = cfg.beacon_every_s,
        bytes = cfg.bytes,
        sack = cfg.sack,
        window = cfg.max_window,
    );
    toml::from_str(&text).map_err(|e| format!("internal: the translated scenario is not TOML: {e}\n{text}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use lasthop_sim::mobility::{Cells, SchemeKind};
    use lasthop_sim::scenario::LinkKind;
    use lasthop_sim::Scenario;

    /// The handoff testbed's base configuration (examples/testbed-handoff.toml) with these fields.
    fn config(set: &[(&str, toml::Value)]) -> TestbedConfig {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/testbed-handoff.toml");
        let mut doc: toml::Value = toml::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        for (k, v) in set {
            doc.as_table_mut().unwrap().insert(k.to_string(), v.clone());
        }
        doc.try_into().unwrap()
    }

    fn scenario(cfg: &TestbedConfig) -> Scenario {
        Scenario::from_toml_in(scenario_of(cfg).unwrap(), "twin", std::path::Path::new("")).unwrap()
    }

    #[test]
    fn two_cells_of_the_testbeds_hop_and_its_schedule() {
        let cfg = config(&[
            ("handoff_every_s", 2.0.into()),
            ("ber", 3.9e-6.into()),
            ("agent", "snoop".into()),
            ("wired_delay_ms", 20.0.into()),
            ("seed", 7.into()),
        ]);
        let s = scenario(&cfg);
        assert_eq!(s.seed, 7);
        assert_eq!(s.time_limit_s, cfg.timeout_s);
        for (cell, bs) in [("cell1", "bs1"), ("cell2", "bs2")] {
            let l = &s.links[cell];
            assert_eq!(l.kind, LinkKind::Wireless);
            assert_eq!(l.ends, [bs.to_string(), "mh".to_string()]);
            assert_eq!((l.rate_mbps, l.delay_ms, l.queue_packets), (2.0, 1.0, 100));
            assert_eq!(l.duplex(), lasthop_sim::scenario::Duplex::Half);
            assert_eq!(l.access(), cfg.access);
            assert_eq!(l.error, lasthop_net::channel::ErrorModelConfig::Ber { ber: 3.9e-6 });
            assert!(l.error_reverse.is_none(), "one bit error rate both ways, as the testbed's");
            assert_eq!(s.nodes[bs].agent.0, [AgentKind::Snoop]);
            assert_eq!(s.links[&format!("ha-{bs}")].delay_ms, 20.0, "the testbed's base stations add the wired delay");
        }
        assert_eq!(s.links["ether"].delay_ms, 0.0);
        let m = s.mobility.as_ref().unwrap();
        assert_eq!(m.scheme, SchemeKind::Multicast);
        assert_eq!((m.interval_s, m.first_s), (2.0, None), "a handoff every 2 s from the start, as the testbed's");
        assert_eq!((m.cells, m.rendezvous_s, m.shared_medium), (Cells::NonOverlapping, 0.0, Some(false)));
        assert_eq!((m.buffer_packets, m.beacon_period_s, m.fast_retransmit), (12, 1.0, false));
        assert!(!m.snoop_transmit_reports, "the handoff base station's Snoop is queue-timed");
        assert_eq!(m.base_stations, ["bs1", "bs2"]);
        let flow = &s.flows["bulk"];
        assert_eq!((flow.from.as_str(), flow.to.as_str(), flow.bytes), ("fh", "mh", cfg.bytes));
        let tcp = s.flow_tcp("bulk").unwrap();
        assert_eq!((tcp.variant.as_str(), tcp.sack, tcp.max_window, tcp.mss), ("newreno", false, 65535, 1460));
    }

    #[test]
    fn each_scheme_becomes_the_simulators() {
        for (scheme, sim, fast) in [
            ("multicast", SchemeKind::Multicast, false),
            ("plain", SchemeKind::Plain, false),
            ("fast-rexmit", SchemeKind::Plain, true),
        ] {
            let s = scenario(&config(&[("handoff", scheme.into()), ("handoff_buffer_packets", 48.into())]));
            let m = s.mobility.unwrap();
            assert_eq!((m.scheme, m.fast_retransmit, m.buffer_packets), (sim, fast, 48), "{scheme}");
            assert!(m.interval_s.is_infinite(), "the example never hands off");
        }
        let s = scenario(&config(&[("cc", "cubic".into()), ("sack", true.into()), ("beacon_every_s", 0.0.into())]));
        assert_eq!((s.flow_tcp("bulk").unwrap().variant.as_str(), s.mobility.unwrap().beacon_period_s), ("cubic", 0.0));
        let s = scenario(&config(&[("sack", true.into())]));
        assert_eq!(s.flow_tcp("bulk").unwrap().variant.as_str(), "sack", "the kernel's reno with SACK on");
    }

    #[test]
    fn what_the_simulator_cannot_mirror_is_refused_by_name() {
        for (field, value, says) in [
            ("handoff_by", toml::Value::from("beacons"), "`handoff_by`"),
            ("handoff_limit", 3.into(), "`handoff_limit`"),
            ("cc", "illinois".into(), "`cc` = \"illinois\""),
            ("rate_mbps", 0.0.into(), "`rate_mbps`"),
            ("max_window", 0.into(), "`max_window`"),
        ] {
            let e = scenario_of(&config(&[(field, value)])).unwrap_err();
            assert!(e.starts_with(says) && (e.contains("not supported") || e.contains("has no")), "{field}: {e}");
        }
        let one_station = TestbedConfig::default();
        assert!(scenario_of(&one_station).unwrap_err().starts_with("`handoff`"));
    }
}

//! The `[tcp]` behaviours real stacks differ on, end to end on Balakrishnan 1995's Fig. 7 setup
//! (`examples/snoop.toml`): writing every default explicitly changes nothing, and each profile completes
//! the transfer and moves the result.

use lasthop_sim::{run, RunOptions, Scenario};

/// `examples/snoop.toml` with a 1 MB transfer at `ber`, the base station running `agent`, and `tcp` lines
/// added to its `[tcp]` table.
fn snoop(agent: &str, ber: f64, tcp: &str) -> Scenario {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/snoop.toml")).unwrap();
    let text = text
        .replace("bytes = 10_000_000", "bytes = 1_000_000")
        .replace("agent = \"snoop\"", &format!("agent = \"{agent}\""))
        .replace("ber = 3.9e-6", &format!("ber = {ber}"))
        .replace("mss = 1460\n", &format!("mss = 1460\n{tcp}\n"));
    Scenario::from_str(&text, "snoop.toml").unwrap()
}

fn flow(agent: &str, ber: f64, tcp: &str) -> lasthop_sim::FlowMetrics {
    run(&snoop(agent, ber, tcp), &RunOptions::default()).unwrap().flows.remove(0)
}

#[test]
fn explicit_defaults_give_identical_results() {
    let explicit = "limited_transmit = false\nssthresh_from = \"snd_max\"\nrecover_guard = \"none\"\n\
                    quick_acks = 0\nrto_backoff_reset = \"new_ack\"\nrto_restart = \"retransmit\"\n\
                    persist_min_ms = 5000\npersist_max_ms = 60000";
    for agent in ["none", "snoop"] {
        assert_eq!(flow(agent, 3.81e-6, ""), flow(agent, 3.81e-6, explicit), "{agent}");
    }
}

#[test]
fn every_profile_completes_and_moves_reno_under_bit_errors() {
    let original = flow("none", 7.63e-6, "");
    assert!(original.completed);
    for profile in ["bsd44", "linux", "rfc"] {
        let f = flow("none", 7.63e-6, &format!("profile = \"{profile}\""));
        assert!(f.completed, "{profile}: {f:?}");
        assert_ne!(
            (f.segments_sent, f.duration_s.to_bits()),
            (original.segments_sent, original.duration_s.to_bits()),
            "{profile} changed nothing"
        );
    }
}

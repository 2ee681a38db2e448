//! `[tcp] profile = "linux"` end to end on Balakrishnan 1995's Fig. 7 setup (`examples/snoop.toml`, no
//! agent at the base station) with packet losses on the wireless hop: every variant completes its
//! transfer byte-exact under the profile, and RACK-TLP repairs losses at the tail of a transfer that
//! otherwise cost a retransmit timeout.

use lasthop_sim::{run, FlowMetrics, RunOptions, Scenario};

/// `examples/snoop.toml` moving `bytes` with no agent, `loss` of the wireless hop's packets lost each
/// way, seed `seed`, TCP `variant` and `tcp` lines added to its `[tcp]` table.
fn lossy(bytes: u64, loss: f64, seed: u64, variant: &str, tcp: &str) -> FlowMetrics {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/snoop.toml")).unwrap();
    let text = text
        .replace("bytes = 10_000_000", &format!("bytes = {bytes}"))
        .replace("agent = \"snoop\"", "agent = \"none\"")
        .replace("model = \"ber\"", "model = \"packet\"")
        .replace("ber = 3.9e-6", &format!("loss = {loss}"))
        .replace("variant = \"reno\"", &format!("variant = \"{variant}\""))
        .replace("mss = 1460\n", &format!("mss = 1460\n{tcp}\n"));
    let mut s = Scenario::from_str(&text, "snoop.toml").unwrap();
    s.set_seed(seed);
    run(&s, &RunOptions::default()).unwrap().flows.remove(0)
}

fn byte_exact(f: &FlowMetrics) -> bool {
    f.completed && f.bytes_delivered == f.bytes_total && f.corrupt_bytes == 0
}

#[test]
fn every_variant_completes_byte_exact_under_the_linux_profile() {
    for variant in ["tahoe", "reno", "newreno", "sack", "cubic", "westwood", "veno", "vegas"] {
        for sack in [false, true] {
            let f = lossy(300_000, 0.03, 1, variant, &format!("profile = \"linux\"\nsack = {sack}"));
            assert!(byte_exact(&f), "{variant}, sack {sack}: {f:?}");
            assert!(f.segments_retransmitted > 0, "{variant}: no loss met");
        }
    }
}

/// Short transfers lose their last segments often; with only the RTO to find them a sender waits it
/// out, with TLP it probes at 2·SRTT and RACK sees the hole from the probe's SACK.
#[test]
fn rack_tlp_repairs_tail_losses_that_cost_the_bsd_sender_and_linux_without_it_a_timeout() {
    let (mut bsd, mut linux_no_rack, mut linux) = (0, 0, 0);
    let mut spared = 0;
    for seed in 1..=30 {
        let run = |tcp: &str| lossy(30_000, 0.05, seed, "sack", &format!("sack = true\n{tcp}"));
        let b = run("");
        let n = run("profile = \"linux\"\nrack_tlp = false");
        let l = run("profile = \"linux\"");
        for f in [&b, &n, &l] {
            assert!(byte_exact(f), "seed {seed}: {f:?}");
        }
        bsd += b.sender_timeouts;
        linux_no_rack += n.sender_timeouts;
        linux += l.sender_timeouts;
        if n.sender_timeouts > 0 && l.sender_timeouts == 0 {
            spared += 1;
        }
    }
    assert!(
        linux < linux_no_rack && linux_no_rack <= bsd,
        "timeouts: bsd {bsd}, linux without RACK-TLP {linux_no_rack}, linux {linux}"
    );
    assert!(spared > 0, "no transfer spared a timeout");
}

//! `lasthop reproduce scale --quick` end to end: every run a child `lasthop run` process, one row per run,
//! the deterministic columns the same on a second reproduction, the measured ones present and plausible.

use std::path::Path;
use std::process::Command;

fn reproduce(out: &Path) -> Vec<Vec<String>> {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let status = Command::new(env!("CARGO_BIN_EXE_lasthop"))
        .current_dir(&repo)
        .args(["reproduce", "scale", "--quick", "--jobs", "2", "--check", "--out"])
        .arg(out)
        .status()
        .unwrap();
    assert!(status.success(), "{status}");
    let csv = std::fs::read_to_string(out.join("scale/results.csv")).unwrap();
    csv.lines().map(|l| l.split(',').map(String::from).collect()).collect()
}

#[test]
fn the_quick_scale_experiment_measures_each_run_in_its_own_process() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (first, second) = (reproduce(a.path()), reproduce(b.path()));
    let header = &first[0];
    let col = |name: &str| header.iter().position(|c| c == name).unwrap_or_else(|| panic!("no column {name}"));
    assert_eq!(first.len(), 4, "quick: 1, 10 and 100 mobiles");
    for (i, row) in first[1..].iter().enumerate() {
        let n: u64 = row[col("n_flows")].parse().unwrap();
        assert_eq!(n, [1, 10, 100][i]);
        assert_eq!(row[col("flows_completed")], row[col("n_flows")]);
        assert_eq!(row[col("bytes_delivered")], "2000000");
        assert_eq!(row[col("corrupt_bytes")], "0");
        let rss: u64 = row[col("peak_rss_bytes")].parse().unwrap();
        assert!((1 << 20..1 << 31).contains(&rss), "a child's peak RSS: {rss}");
        let eps: f64 = row[col("events_per_s")].parse().unwrap();
        assert!(eps > 0.0);
        // Five measurements of the same run: the median lies within their spread.
        assert_eq!(row[col("repeats")], "5");
        let (lo, hi): (f64, f64) =
            (row[col("events_per_s_min")].parse().unwrap(), row[col("events_per_s_max")].parse().unwrap());
        assert!(lo <= eps && eps <= hi, "{lo} <= {eps} <= {hi}");
        let per_conn: u64 = row[col("snoop_bytes_per_connection")].parse().unwrap();
        assert!((64..4096).contains(&per_conn), "{per_conn}");
        // Deterministic columns repeat; wall-clock ones are not compared.
        for c in ["n_flows", "flows_completed", "bytes_delivered", "sim_time_s", "events", "snoop_connections_peak"] {
            assert_eq!(row[col(c)], second[i + 1][col(c)], "{c}");
        }
    }
    assert_eq!(first[1][col("sim_bytes_per_flow")], "", "no slope for the run with the fewest flows");
    assert_eq!(first[1][col("events_per_s_ratio")], "1.0");
}

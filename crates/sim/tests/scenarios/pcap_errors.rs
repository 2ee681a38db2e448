//! A pcap that cannot be written fails the run with an error naming the file, instead of a run that looks
//! complete with a truncated capture.

use lasthop_sim::{run, RunOptions, Scenario, SimError};

/// `examples/snoop.toml` with a transfer of `bytes`, and a fresh directory for its pcaps.
fn snoop_with_pcap_dir(bytes: i64, name: &str) -> (Scenario, std::path::PathBuf) {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/snoop.toml")).unwrap();
    let mut v: toml::Value = toml::from_str(&text).unwrap();
    v["flows"]["bulk"]["bytes"] = toml::Value::Integer(bytes);
    let dir = std::env::temp_dir().join(format!("lasthop-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    (Scenario::from_toml(v, name).unwrap(), dir)
}

#[test]
fn a_full_disk_under_a_pcap_fails_the_run_naming_the_file() {
    let (s, dir) = snoop_with_pcap_dir(300_000, "pcap-error");
    // The mobile's capture goes to /dev/full: every write past the buffer fails with ENOSPC.
    let full = dir.join("wavelan-mh.pcap");
    let _ = std::fs::remove_file(&full);
    std::os::unix::fs::symlink("/dev/full", &full).unwrap();
    let result = run(&s, &RunOptions { trace: false, pcap_dir: Some(dir.clone()) });
    std::fs::remove_dir_all(&dir).unwrap();
    match result {
        Err(SimError::Io { path, source }) => {
            assert_eq!(path, full);
            assert_eq!(source.raw_os_error(), Some(28), "ENOSPC expected, got {source}");
        }
        Err(e) => panic!("expected an I/O error on {}, got {e}", full.display()),
        Ok(_) => panic!("the run succeeded although {} could not be written", full.display()),
    }
}

#[test]
fn pcaps_that_can_be_written_leave_the_run_ok() {
    let (s, dir) = snoop_with_pcap_dir(100_000, "pcap-ok");
    let result = run(&s, &RunOptions { trace: false, pcap_dir: Some(dir.clone()) });
    let size = std::fs::metadata(dir.join("wavelan-mh.pcap")).map(|m| m.len());
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(result.is_ok());
    assert!(size.unwrap() > 100_000, "the capture holds the transfer");
}

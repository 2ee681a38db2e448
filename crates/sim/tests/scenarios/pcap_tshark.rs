//! The pcaps the simulator writes open in tshark with no malformed packet and correct IP and TCP checksums.
//! Skips (saying so) where tshark is not installed; CI installs it.

use lasthop_sim::{run, RunOptions, Scenario};
use std::process::Command;

fn tshark(args: &[&str]) -> Option<String> {
    let out = Command::new("tshark").args(args).output().ok()?;
    assert!(out.status.success(), "tshark failed: {}", String::from_utf8_lossy(&out.stderr));
    Some(String::from_utf8(out.stdout).unwrap())
}

#[test]
fn tshark_reads_pcaps_with_good_checksums() {
    if Command::new("tshark").arg("--version").output().is_err() {
        lasthop_net::testbed::skip_or_fail("tshark is not installed (apt-get install tshark); .ci/run installs it");
        return;
    }
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/snoop.toml")).unwrap();
    let mut v: toml::Value = toml::from_str(&text).unwrap();
    v["flows"]["bulk"]["bytes"] = toml::Value::Integer(300_000);
    let s = Scenario::from_toml(v, "pcap test").unwrap();
    let dir = std::env::temp_dir().join(format!("lasthop-pcap-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    run(&s, &RunOptions { trace: false, pcap_dir: Some(dir.clone()) }).unwrap();
    for name in ["wavelan-bs.pcap", "wavelan-mh.pcap"] {
        let path = dir.join(name);
        let path = path.to_str().unwrap();
        let checks = ["-o", "ip.check_checksum:TRUE", "-o", "tcp.check_checksum:TRUE"];
        let count = |filter: &str| {
            let mut args = vec!["-r", path, "-n"];
            args.extend_from_slice(&checks);
            args.extend_from_slice(&["-Y", filter, "-T", "fields", "-e", "frame.number"]);
            tshark(&args).unwrap().lines().count()
        };
        let all = count("frame");
        let tcp = count("tcp");
        let bad = count("_ws.malformed or ip.checksum.status == 0 or tcp.checksum.status == 0");
        let good_tcp = count("tcp.checksum.status == 1");
        assert!(all > 100, "{name}: only {all} frames");
        assert_eq!(tcp, all, "{name}: every frame is TCP");
        assert_eq!(bad, 0, "{name}: malformed or bad checksums");
        assert_eq!(good_tcp, all, "{name}: every TCP checksum verified good");
    }
    std::fs::remove_dir_all(&dir).ok();
}

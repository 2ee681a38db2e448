//! What the integration tests share: reading an example scenario, and editing its TOML before it is parsed.

/// Sets the dotted `path` of a scenario document to `value`, creating the tables on the way.
pub fn set(v: &mut toml::Value, path: &str, value: impl Into<toml::Value>) {
    let mut at = v;
    let parts: Vec<&str> = path.split('.').collect();
    for p in &parts[..parts.len() - 1] {
        at = at.as_table_mut().unwrap().entry(p.to_string()).or_insert(toml::Value::Table(Default::default()));
    }
    at.as_table_mut().unwrap().insert(parts[parts.len() - 1].to_string(), value.into());
}

/// The scenario document of `examples/<name>`.
pub fn example(name: &str) -> toml::Value {
    let path = format!("{}/../../examples/{name}", env!("CARGO_MANIFEST_DIR"));
    toml::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Runs `s` and checks that its first flow completed with every byte delivered intact, none of them
/// acknowledged to the sender without reaching the receiver.
pub fn run_intact(s: &lasthop_sim::Scenario) -> lasthop_sim::RunResult {
    let r = lasthop_sim::run(s, &lasthop_sim::RunOptions::default()).unwrap();
    let f = &r.flows[0];
    assert!(f.completed, "{f:?}");
    assert_eq!((f.bytes_delivered, f.corrupt_bytes), (f.bytes_total, 0), "{f:?}");
    assert_eq!(f.bytes_acked_not_delivered, 0, "{f:?}");
    r
}

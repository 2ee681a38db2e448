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

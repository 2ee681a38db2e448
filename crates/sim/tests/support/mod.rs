//! What the integration tests share: editing a scenario's TOML before it is parsed.

/// Sets the dotted `path` of a scenario document to `value`, creating the tables on the way.
pub fn set(v: &mut toml::Value, path: &str, value: impl Into<toml::Value>) {
    let mut at = v;
    let parts: Vec<&str> = path.split('.').collect();
    for p in &parts[..parts.len() - 1] {
        at = at.as_table_mut().unwrap().entry(p.to_string()).or_insert(toml::Value::Table(Default::default()));
    }
    at.as_table_mut().unwrap().insert(parts[parts.len() - 1].to_string(), value.into());
}

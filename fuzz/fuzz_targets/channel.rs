//! The channel crate's trace and CDF file parsers on arbitrary text: errors, never panics; what parses
//! writes back to text that parses to the same value, and a trace that parses can be fitted or is refused.
#![no_main]
use lasthop_channel::error_model::{parse_cdfs, write_cdfs};
use lasthop_channel::fit::{fit, parse_trace, write_trace, Trace};

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(t) = parse_trace(text, "fuzz.trace") {
        // `write_trace` keeps `source` on one line (a line break in it becomes a space), as documented.
        let one_line = Trace { source: t.source.replace(['\n', '\r'], " ").trim().to_string(), ..t.clone() };
        assert_eq!(parse_trace(&write_trace(&t), "again").expect("written trace parses"), one_line);
        if let Ok(c) = fit(&t) {
            assert_eq!(parse_cdfs(&write_cdfs(&c), "again").expect("fitted CDFs parse"), c);
        }
    }
    if let Ok(c) = parse_cdfs(text, "fuzz.toml") {
        assert_eq!(parse_cdfs(&write_cdfs(&c), "again").expect("written CDFs parse"), c);
    }
});

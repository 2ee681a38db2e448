//! The scenario loader on arbitrary text: an error naming the file and what is wrong, never a panic.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Err(e) = lasthop_sim::Scenario::from_str(text, "fuzz.toml") {
        assert!(e.to_string().starts_with("fuzz.toml: "), "{e}");
    }
});

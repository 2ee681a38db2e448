//! The Snoop agent driven by well-formed segments with fuzzed fields and raw garbage from both sides, timers
//! fired as `poll_timeout` asks, invariants checked after every step (`lasthop_fuzz::drive`).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| lasthop_fuzz::drive(lasthop_fuzz::Subject::Snoop, data));

//! The CLI as a shell pipeline uses it: a reader that closes its end early is not an error.

use std::process::{Command, Stdio};

#[test]
fn listing_experiments_into_a_closed_pipe_exits_cleanly() {
    // The read end is gone before the program writes: its first line meets a broken pipe, as under `| head`
    // once head has read enough.
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let out = Command::new(env!("CARGO_BIN_EXE_lasthop"))
        .arg("experiments")
        .stdout(Stdio::from(writer))
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{:?}: {stderr}", out.status);
    assert!(stderr.is_empty(), "{stderr}");
}

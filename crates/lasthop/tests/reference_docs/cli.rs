//! `docs/src/reference/cli-help.txt` is the `--help` of `lasthop` and of every subcommand, as clap renders
//! it; `cli.md` includes it. `LASTHOP_BLESS=1` rewrites the file after a change to the CLI.

use crate::markdown::{page, repo};
use clap::CommandFactory;
use lasthop::cli::Cli;

/// The long help of `cmd` and of each of its subcommands, depth first, each under a heading line.
fn render(cmd: &mut clap::Command, path: &str, out: &mut String) {
    let help = cmd.render_long_help().to_string();
    out.push_str(&format!("$ {path} --help\n\n{}\n\n", help.trim_end()));
    for sub in cmd.get_subcommands_mut().filter(|s| s.get_name() != "help") {
        let path = format!("{path} {}", sub.get_name());
        render(sub, &path, out);
    }
}

fn help_text() -> String {
    let mut cmd = Cli::command();
    cmd.build();
    let mut out = String::new();
    render(&mut cmd, "lasthop", &mut out);
    out.trim_end().to_string() + "\n"
}

#[test]
fn cli_help_file_is_what_clap_renders() {
    let path = repo().join("docs/src/reference/cli-help.txt");
    let text = help_text();
    if std::env::var_os("LASTHOP_BLESS").is_some() {
        std::fs::write(&path, &text).unwrap();
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == text,
        "{} is not the CLI's help: rerun with LASTHOP_BLESS=1 to rewrite it, and update cli.md if a command \
         was added or removed",
        path.display()
    );
}

#[test]
fn cli_page_has_a_section_per_subcommand() {
    let text = page("cli.md");
    assert!(text.contains("{{#include cli-help.txt}}"), "cli.md must include cli-help.txt");
    let mut cmd = Cli::command();
    cmd.build();
    let mut missing = Vec::new();
    for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
        let mut names = vec![format!("lasthop {}", sub.get_name())];
        names.extend(
            sub.get_subcommands()
                .filter(|s| s.get_name() != "help")
                .map(|s| format!("lasthop {} {}", sub.get_name(), s.get_name())),
        );
        missing.extend(names.into_iter().filter(|n| !text.contains(&format!("## `{n}`"))));
    }
    assert!(missing.is_empty(), "cli.md has no section for {missing:?}");
}

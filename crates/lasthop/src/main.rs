use std::process::ExitCode;

fn main() -> ExitCode {
    match lasthop::cli::main_with(std::env::args_os(), &lasthop::runner::SimRunner) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

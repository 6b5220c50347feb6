//! The `rmld` binary: parse, run, and map outcomes to exit statuses (0: done; 2: bad usage or
//! input; 1: other failures; 130/143: interrupted by SIGINT/SIGTERM, outputs and checkpoint written).

mod cli;

use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = cli::parse();
    match cli::dispatch(&cli) {
        Ok(cli::Finished::Complete) => ExitCode::SUCCESS,
        Ok(cli::Finished::Interrupted { status }) => ExitCode::from(status),
        Err(e) => {
            eprintln!(
                "rmld: error: {}",
                cli::error_text(&e, &cli::options_of(&cli.command))
            );
            if e.is_user_error() {
                ExitCode::from(2)
            } else {
                ExitCode::from(1)
            }
        }
    }
}

//! The `rmld` command line: argument parsing and the commands built on the library.

pub mod args;
mod bench;
mod encode;
mod problem;
mod report;
mod sample;

pub use args::{Cli, Command};

/// Runs the parsed command.
pub fn dispatch(cli: &Cli) -> rmld::Result<()> {
    match &cli.command {
        Command::Sample(args) => sample::sample(args),
        Command::Encode(args) => encode::encode(args),
        Command::Bench(args) => bench::bench(args),
    }
}

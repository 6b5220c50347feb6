//! The `rmld` command line: argument parsing and the commands built on the library.

pub mod args;
mod augment;
mod bench;
mod encode;
mod problem;
mod quality;
mod report;
mod sample;
mod signals;

pub use args::{Cli, Command};

/// How a command ended, when it did not fail.
pub enum Finished {
    /// All work done: exit status 0.
    Complete,
    /// Stopped early by a signal, outputs and a checkpoint written: exit status 128 + signal.
    Interrupted { status: u8 },
}

/// Runs the parsed command.
pub fn dispatch(cli: &Cli) -> rmld::Result<Finished> {
    match &cli.command {
        Command::Sample(args) => sample::sample(args),
        Command::Resume(args) => sample::resume(args),
        Command::Encode(args) => encode::encode(args).map(|()| Finished::Complete),
        Command::Augment(args) => augment::augment(args),
        Command::Bench(args) => bench::bench(args).map(|()| Finished::Complete),
        Command::Quality(args) => quality::quality(args),
    }
}

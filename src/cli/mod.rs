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
/// Parses the command line and resolves `rmld augment`'s preset against the options given.
pub fn parse() -> Cli {
    use clap::{CommandFactory, FromArgMatches};
    let matches = Cli::command().get_matches();
    let mut cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    if let (Command::Augment(args), Some(("augment", sub))) =
        (&mut cli.command, matches.subcommand())
    {
        let given = |id: &str| sub.value_source(id) == Some(clap::parser::ValueSource::CommandLine);
        let preset = args.preset.unwrap_or(if given("method") {
            args::Preset::Paper
        } else {
            args::Preset::Quality
        });
        args.preset = Some(preset);
        preset.apply(args, given);
    }
    cli
}

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

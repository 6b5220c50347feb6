//! The `rmld` command line: parsing, printing, progress bars and signals around `rmld::session`.
//!
//! The library's session layer does the work; this module maps arguments to its settings and
//! setting names back to options in messages.

pub mod args;
mod bench;
mod signals;
mod terminal;

use rmld::session::{judge_images, Augmenter, Encoder, Outcome, Sampler};
use rmld::{Error, Result};

pub use args::{Cli, Command};
use signals::StopRequest;
use terminal::Terminal;

/// How a command ended, when it did not fail.
pub enum Finished {
    /// All work done: exit status 0.
    Complete,
    /// Stopped early by a signal, outputs and a checkpoint written: exit status 128 + signal.
    Interrupted { status: u8 },
}

/// Parses the command line and resolves `rmld augment`'s preset against the options given.
pub fn parse() -> Cli {
    use clap::FromArgMatches;
    let matches = command().get_matches();
    let mut cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    let augment = match (&mut cli.command, matches.subcommand()) {
        (Command::Augment(args), Some(("augment", sub))) => Some((args, sub)),
        (Command::Amortize(args::AmortizeCommand::Train(train)), Some(("amortize", outer))) => {
            match outer.subcommand() {
                Some(("train", sub)) => Some((&mut train.augment, sub)),
                _ => None,
            }
        }
        _ => None,
    };
    if let Some((args, sub)) = augment {
        let given = |id: &str| sub.value_source(id) == Some(clap::parser::ValueSource::CommandLine);
        let preset = args
            .preset
            .unwrap_or(rmld::session::Preset::default_for(given("method")));
        args.preset = Some(preset);
        args::apply_preset(preset, args, given);
        args.given = rmld::session::AugmentSettings::KEPT_WHEN_GIVEN
            .iter()
            .filter(|id| given(id))
            .map(|id| id.to_string())
            .collect();
    }
    cli
}

/// Runs the parsed command.
pub fn dispatch(cli: &Cli) -> Result<Finished> {
    let options = options_of(&cli.command);
    let terminal = |stop: Option<StopRequest>| Terminal::new(stop, options.clone());
    match &cli.command {
        Command::Sample(args) => {
            let terminal = terminal(Some(StopRequest::install()));
            let outcome = Sampler::new(args.settings()).run(&terminal)?;
            Ok(finish(&terminal, &outcome))
        }
        Command::Resume(args) => {
            let terminal = terminal(Some(StopRequest::install()));
            let outcome = Sampler::resume(&args.dir, &terminal)?;
            Ok(finish(&terminal, &outcome))
        }
        Command::Encode(args) => {
            let terminal = terminal(Some(StopRequest::install()));
            let outcome = Encoder::new(args.settings()).run(&terminal)?;
            Ok(finish(&terminal, &outcome))
        }
        Command::Augment(args) => {
            let terminal = terminal(Some(StopRequest::install()));
            let outcome = Augmenter::new(args.settings()).run(&terminal)?;
            Ok(finish(&terminal, &outcome))
        }
        Command::Bench(args) => {
            let terminal = terminal(Some(StopRequest::install()));
            let interrupted = bench::bench(args, &terminal)?;
            Ok(if interrupted {
                Finished::Interrupted {
                    status: terminal.exit_status(),
                }
            } else {
                Finished::Complete
            })
        }
        Command::Merge(args) => {
            let terminal = terminal(None);
            let outcome = rmld::session::merge(&args.out, &args.shards, args.force)?;
            Ok(finish(&terminal, &outcome))
        }
        Command::Dictionary(action) => {
            let terminal = terminal(Some(StopRequest::install()));
            let outcome = match action {
                args::DictionaryCommand::Learn(args) => {
                    rmld::session::DictionaryLearner::new(args.settings()).run(&terminal)?
                }
                args::DictionaryCommand::EdaExperiment(args) => {
                    let outcome = rmld::session::eda_experiment(&args.settings(), &terminal)?;
                    if !outcome.interrupted {
                        bench::plot_fig3(&args.common.out, &outcome.report)?;
                    }
                    outcome
                }
            };
            Ok(finish(&terminal, &outcome))
        }
        Command::Amortize(args::AmortizeCommand::Train(args)) => {
            let terminal = terminal(Some(StopRequest::install()));
            let outcome = rmld::session::AmortizeTrainer::new(args.settings())
                .run(&terminal)
                .map_err(model_as_out)?;
            Ok(finish(&terminal, &outcome))
        }
        Command::Quality(args) => {
            let terminal = terminal(Some(StopRequest::install()));
            let outcome = judge_images(&args.settings(), &terminal)?;
            if outcome.interrupted {
                eprintln!("rmld quality: interrupted; no report written");
            } else if args.json {
                let text = serde_json::to_string_pretty(&outcome.report)
                    .map_err(|e| Error::Internal(format!("cannot format the report: {e}")))?;
                println!("{text}");
                return Ok(Finished::Complete);
            }
            Ok(finish(&terminal, &outcome))
        }
    }
}

/// `rmld amortize train`'s errors with the library's `model` (the model file) named as the
/// setting `--out` sets: the training's `--model` is augment's, which a training refuses.
fn model_as_out(error: Error) -> Error {
    match error {
        Error::Usage { field, message } => Error::Usage {
            field: if field == "model" { "out" } else { field },
            message: message.replace("`model`", "`out`"),
        },
        other => other,
    }
}

/// Prints the summary and turns the outcome into an exit status.
fn finish(terminal: &Terminal, outcome: &Outcome) -> Finished {
    for line in &outcome.summary {
        println!("{}", terminal.with_flags(line));
    }
    if outcome.interrupted {
        Finished::Interrupted {
            status: terminal.exit_status(),
        }
    } else {
        Finished::Complete
    }
}

/// The command line, with `augment --help` showing what the default `quality` preset sets beside
/// each option it changes (the `[default: …]` clap prints is the `paper` preset's), and
/// `encode --help` listing only the options encode uses.
pub fn command() -> clap::Command {
    use clap::CommandFactory;
    let quality = rmld::AugmentSettings::quality();
    let name = |value: &dyn std::fmt::Debug| format!("{value:?}").to_lowercase();
    let overrides = [
        ("method", quality.method.name().to_string()),
        ("target", name(&quality.problem.target)),
        ("pixel_max", quality.problem.pixel_max.to_string()),
        ("lambda", quality.problem.lambda.to_string()),
        ("sigma2", quality.problem.sigma2.to_string()),
        ("tangent_k", quality.problem.tangent_k.to_string()),
        ("tangent_scale", quality.problem.tangent_scale.to_string()),
        ("eta", quality.dynamics.eta.to_string()),
        (
            "leapfrog_steps",
            quality.dynamics.leapfrog_steps.to_string(),
        ),
        ("burn_in", quality.burn_in.to_string()),
        ("reencode", quality.reencode.to_string()),
    ];
    // encode shares the problem's options but uses neither the target nor its noise: hidden there.
    let encode_ignores = [
        "target",
        "sigma2",
        "noise",
        "noise_e",
        "noise_f",
        "tangent_k",
        "tangent_scale",
        "prior",
        "ssgl_v0",
        "ssgl_v1",
        "ssgl_a",
        "ssgl_b",
        "ssgl_nu",
        "ssgl_lambda",
        "ssgl_delta",
        "ssgl_sigma",
        "ssgl_c",
        "ssgl_k0",
        "ssgl_alpha",
        "ssgl_mode",
    ];
    // `--eta -1` is a value to refuse by name, not an unknown option `-1`.
    let negative_numbers = |sub: clap::Command| {
        let ids: Vec<clap::Id> = sub
            .get_arguments()
            .filter(|a| a.get_action().takes_values())
            .map(|a| a.get_id().clone())
            .collect();
        ids.iter().fold(sub, |sub, id| {
            sub.mut_arg(id, |arg| arg.allow_negative_numbers(true))
        })
    };
    Cli::command()
        .mut_subcommands(negative_numbers)
        .mut_subcommand("encode", |encode| {
            encode_ignores.iter().fold(encode, |encode, id| {
                encode.mut_arg(*id, |arg| arg.hide(true))
            })
        })
        .mut_subcommand("augment", |augment| {
            overrides.iter().fold(augment, |augment, (id, value)| {
                augment.mut_arg(*id, |arg| {
                    let note = format!(" [quality preset: {value}]");
                    let help = arg.get_help().map(|h| h.to_string()).unwrap_or_default();
                    let long = arg.get_long_help().map(|h| format!("{h}{note}"));
                    let arg = arg.help(format!("{help}{note}"));
                    match long {
                        Some(long) => arg.long_help(long),
                        None => arg,
                    }
                })
            })
        })
}

/// The error as the command line prints it: a setting's name as its option (`--batch`), for
/// the settings that are options of the command run (`options`, from `options_of`).
pub fn error_text(error: &Error, options: &[String]) -> String {
    let text = match error {
        Error::Usage { field, message } => {
            format!("invalid setting {}: {message}", flag(field, options))
        }
        other => other.to_string(),
    };
    with_flags(&text, options)
}

/// `text` with every setting the library names in backticks (`` `lasso_iterations` ``) written as
/// the option that sets it (`--lasso-iterations`) when `options` has one; other backticked text
/// stays as it is.
pub fn with_flags(text: &str, options: &[String]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(open) = rest.find('`') {
        let Some(len) = rest[open + 1..].find('`') else {
            break;
        };
        let name = &rest[open + 1..open + 1 + len];
        let option = flag(name, options);
        out.push_str(&rest[..open]);
        if option != name && !name.is_empty() {
            out.push_str(&option);
        } else {
            out.push_str(&rest[open..open + len + 2]);
        }
        rest = &rest[open + len + 2..];
    }
    out.push_str(rest);
    out
}

/// The long options of `command` (`rmld resume` runs with `rmld sample`'s settings).
pub fn options_of(command: &Command) -> Vec<String> {
    options_named(match command {
        Command::Sample(_) | Command::Resume(_) => "sample",
        Command::Encode(_) => "encode",
        Command::Augment(_) => "augment",
        Command::Bench(_) => "bench",
        Command::Quality(_) => "quality",
        Command::Merge(_) => "merge",
        Command::Dictionary(args::DictionaryCommand::Learn(_)) => {
            return options_nested("dictionary", "learn")
        }
        Command::Dictionary(args::DictionaryCommand::EdaExperiment(_)) => {
            return options_nested("dictionary", "eda-experiment")
        }
        Command::Amortize(args::AmortizeCommand::Train(_)) => {
            return options_nested("amortize", "train")
        }
    })
}

/// The long options of the nested subcommand `outer inner` (`dictionary learn`).
pub fn options_nested(outer: &str, inner: &str) -> Vec<String> {
    use clap::CommandFactory;
    Cli::command()
        .find_subcommand(outer)
        .and_then(|o| o.find_subcommand(inner))
        .map(|sub| {
            sub.get_arguments()
                .filter_map(|a| a.get_long().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// The long options of the subcommand `name`.
pub fn options_named(name: &str) -> Vec<String> {
    use clap::CommandFactory;
    Cli::command()
        .find_subcommand(name)
        .map(|sub| {
            sub.get_arguments()
                .filter_map(|a| a.get_long().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// The option that sets the library setting `name` (`lasso_iterations` → `--lasso-iterations`;
/// a pair `dim/images` → `--dim/--images`) when `options` has it; other names (options already,
/// or descriptions such as "training images") pass through unchanged.
pub fn flag(name: &str, options: &[String]) -> String {
    if name.starts_with('-') {
        return name.to_string();
    }
    let parts: Vec<String> = name.split('/').map(|one| one.replace('_', "-")).collect();
    if !parts.iter().all(|part| options.contains(part)) {
        return name.to_string();
    }
    parts
        .iter()
        .map(|part| format!("--{part}"))
        .collect::<Vec<_>>()
        .join("/")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(args: &[&str]) -> Vec<String> {
        use clap::Parser;
        let mut all = vec!["rmld"];
        all.extend_from_slice(args);
        options_of(&Cli::parse_from(all).command)
    }

    #[test]
    fn usage_errors_name_the_option() {
        let sample = options(&["sample"]);
        assert_eq!(flag("lasso_iterations", &sample), "--lasso-iterations");
        assert_eq!(flag("lambda", &sample), "--lambda");
        assert_eq!(flag("--tangent-k", &sample), "--tangent-k");
        assert_eq!(flag("out", &options(&["resume", "dir"])), "--out");
        assert_eq!(flag("dim/images", &options(&["bench"])), "--dim/--images");
        // Descriptions and settings the command has no option for pass through.
        assert_eq!(flag("training images", &sample), "training images");
        assert_eq!(flag("images", &options(&["augment"])), "images");
        let e = Error::usage("burn_in", "too long");
        assert_eq!(
            error_text(&e, &sample),
            "invalid setting --burn-in: too long"
        );
    }

    #[test]
    fn backticked_settings_in_messages_become_options() {
        let augment = options(&["augment"]);
        let e = Error::usage(
            "batch",
            "class 0 has 3 images: lower `batch` or leave the class out with `classes`",
        );
        assert_eq!(
            error_text(&e, &augment),
            "invalid setting --batch: class 0 has 3 images: lower --batch or leave the class out \
             with --classes"
        );
        let e = Error::input("x.idx", "needs `data` naming a folder, see `nowhere` and `");
        assert_eq!(
            error_text(&e, &augment),
            "x.idx: needs --data naming a folder, see `nowhere` and `"
        );
    }
}

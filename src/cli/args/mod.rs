//! Command-line arguments: clap parses into these, then into the library's settings structs.
//!
//! One file per command's arguments (`common` holds what several share). Every default clap
//! shows and fills in is the library's own (`SampleSettings::default().chains`, the paper
//! preset's values for `augment`, ...), never a literal repeated here.

mod augment;
mod bench;
mod common;
mod dictionary;
mod encode;
mod quality;
mod sample;

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

pub use augment::{apply_preset, AmortizeTrainArgs, AugmentArgs};
pub use bench::BenchArgs;
pub use dictionary::{DictLearnArgs, EdaExperimentArgs};
pub use encode::EncodeArgs;
pub use quality::QualityArgs;
pub use sample::SampleArgs;

/// Randomized Measurement Langevin Dynamics (RMLD / SpHMC): sample sparse codes X of a dataset
/// under a random measurement matrix A, many chains at once, and turn them into new images A X.
#[derive(Parser, Debug)]
#[command(name = "rmld", version = concat!(env!("CARGO_PKG_VERSION"), " (build ", env!("RMLD_BUILD"), ")"), about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run C chains for K outer iterations and write codes, images, the dictionary, a picture and a report.
    Sample(SampleArgs),
    /// LASSO-encode a dataset with the dictionary (the paper's "Compression": encode, decode with A).
    Encode(EncodeArgs),
    /// Continue an interrupted `rmld sample` from the checkpoint in its output folder; the samples
    /// equal those of an uninterrupted run (on the same backend).
    Resume(ResumeArgs),
    /// Generate a class-conditional augmentation set: new samples per class mixed with the
    /// originals (6:1 by default), written as MNIST-style IDX, NPY codes and labels, a PNG grid per
    /// class and a report.
    Augment(AugmentArgs),
    /// Measure throughput per backend and chain count against this machine's ceiling; writes
    /// bench.json, bench.csv and bench.png.
    Bench(BenchArgs),
    /// Judge generated images with labels against the real data: label preservation (a softmax
    /// classifier trained on the real images), novelty (nearest-neighbour distance to the real
    /// images) and diversity (pairwise distances per class), each calibrated by real test images.
    Quality(QualityArgs),
    /// Join the output folders of the N shards of one run (`--shard i/N`) into OUT: checks that
    /// they come from one configuration and seed and cover every part once, then writes the files
    /// the single run writes (nothing when a check fails).
    Merge(MergeArgs),
    /// Parametric dictionary learning by MH-within-Gibbs (Chaspari et al. 2016): `learn` writes a
    /// dictionary `sample --dictionary` reads; `eda-experiment` reproduces the paper's synthetic
    /// EDA experiment.
    #[command(subcommand)]
    Dictionary(DictionaryCommand),
    /// A learned sampler for augmentation (experimental, CPU; docs/amortized.md): `train` fits
    /// one to augment's MCMC samples and writes the model `augment --sampler amortized` reads.
    #[command(subcommand)]
    Amortize(AmortizeCommand),
}

/// `rmld amortize ...`.
#[derive(Subcommand, Debug)]
pub enum AmortizeCommand {
    /// Run augment's MCMC sampler with these options as the teacher (into MODEL.teacher/), fit a
    /// per-class code sampler to its samples and write it to --out MODEL; interrupted (Ctrl-C),
    /// the same command continues from MODEL.partial.
    Train(AmortizeTrainArgs),
}

/// `rmld dictionary ...`.
#[derive(Subcommand, Debug)]
pub enum DictionaryCommand {
    /// Learn EDA or Gabor atoms from signals and write dictionary.npy (d × p), atoms.png and
    /// report.json; resumable: after an interruption, run the same command again.
    Learn(DictLearnArgs),
    /// Reproduce the paper's synthetic EDA experiment (Section VII-A/B): error vs OMP iterations
    /// (fig3.csv), coherence, Geweke pass rates and MH acceptance beside the paper's.
    EdaExperiment(EdaExperimentArgs),
}

#[derive(Args, Debug)]
pub struct MergeArgs {
    /// The merged run's output folder.
    #[arg(value_name = "OUT")]
    pub out: PathBuf,

    /// The shards' output folders, in any order.
    #[arg(value_name = "SHARD_DIR", required = true)]
    pub shards: Vec<PathBuf>,

    /// Replace the files of a merged run already in OUT (without it, the merge refuses them).
    #[arg(long)]
    pub force: bool,
}

#[derive(Args, Debug)]
pub struct ResumeArgs {
    /// The output folder of the interrupted run (it holds checkpoint.rmld).
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmld::session::{
        AugmentSettings, BenchSettings, DictionarySettings, EdaExperimentSettings, EncodeSettings,
        Preset, QualitySettings, SampleSettings,
    };
    use serde_json::Value;

    fn parse(args: &[&str]) -> Command {
        let mut all = vec!["rmld"];
        all.extend_from_slice(args);
        Cli::parse_from(all).command
    }

    /// Parsed without options, each command's arguments give the library's settings: the
    /// defaults are the library's, and the arguments map onto the settings one to one.
    #[test]
    fn defaults_are_the_librarys() {
        let Command::Sample(sample) = parse(&["sample"]) else {
            panic!("not sample")
        };
        assert_eq!(sample.settings(), SampleSettings::default());
        let Command::Encode(encode) = parse(&["encode"]) else {
            panic!("not encode")
        };
        assert_eq!(encode.settings(), EncodeSettings::default());
        let Command::Augment(augment) = parse(&["augment"]) else {
            panic!("not augment")
        };
        // Before `cli::parse` applies a preset, every option is at its own default: the paper's.
        let mut paper = AugmentSettings::paper();
        paper.preset = None;
        // The one default the command line adds to the library's: the code cache's folder.
        paper.code_cache = rmld::session::default_code_cache();
        assert_eq!(augment.settings(), paper);
    }

    #[test]
    fn presets_fill_what_was_not_given() {
        let Command::Augment(mut augment) = parse(&["augment", "--eta", "0.5"]) else {
            panic!("not augment")
        };
        augment.preset = Some(Preset::Quality);
        apply_preset(Preset::Quality, &mut augment, |id| id == "eta");
        let mut want = AugmentSettings::quality();
        want.dynamics.eta = 0.5;
        want.code_cache = rmld::session::default_code_cache();
        assert_eq!(augment.settings(), want);
    }

    fn json<T: serde::Serialize>(settings: &T) -> Value {
        serde_json::to_value(settings).unwrap()
    }

    /// The value of the setting named `id` anywhere in `settings` (serialised), as text; not in
    /// augment's `fit_scale_to_data`, whose switches share the names of the settings they fit.
    fn setting(settings: &Value, id: &str) -> Option<String> {
        match settings {
            Value::Object(map) => map.get(id).map(text).or_else(|| {
                map.iter()
                    .filter(|(key, _)| *key != "fit_scale_to_data")
                    .find_map(|(_, v)| setting(v, id))
            }),
            _ => None,
        }
    }

    fn text(value: &Value) -> String {
        match value {
            Value::String(s) => s.clone(),
            Value::Array(items) => items.iter().map(text).collect::<Vec<_>>().join(","),
            other => other.to_string(),
        }
    }

    /// The same number (an f32 setting serialises widened: 0.1 as 0.10000000149011612), or the
    /// same text.
    fn same(shown: &str, want: &str) -> bool {
        match (shown.parse::<f64>(), want.parse::<f64>()) {
            (Ok(a), Ok(b)) => a == b || a as f32 == b as f32,
            _ => shown == want,
        }
    }

    /// `--help` shows the library's defaults: every option with a default shows the value of
    /// the library's setting of the same name (the command's settings serialised), except the
    /// few below, whose setting is written in another form (each checked by name).
    #[test]
    fn help_shows_the_librarys_defaults() {
        let mut amortize = json(&AugmentSettings::paper());
        amortize["train"] = json(&rmld::amortize::CodeTrainSettings::default());
        let commands: [(&[&str], Value); 8] = [
            (&["sample"], json(&SampleSettings::default())),
            (&["encode"], json(&EncodeSettings::default())),
            (&["augment"], json(&AugmentSettings::paper())),
            (&["amortize", "train"], amortize),
            (&["bench"], json(&BenchSettings::default())),
            (&["quality"], json(&QualitySettings::default())),
            (
                &["dictionary", "learn"],
                json(&DictionarySettings::default()),
            ),
            (
                &["dictionary", "eda-experiment"],
                json(&EdaExperimentSettings::default()),
            ),
        ];
        let ssgl = json(&rmld::model::Ssgl::default());
        let mut root = super::super::command();
        for (path, settings) in commands {
            let mut command = &mut root;
            for name in path {
                command = command.find_subcommand_mut(name).unwrap();
            }
            let help = command.render_long_help().to_string();
            for arg in command.get_arguments() {
                let id = arg.get_id().as_str();
                let shown: Vec<String> = arg
                    .get_default_values()
                    .iter()
                    .map(|v| v.to_string_lossy().into_owned())
                    .collect();
                if shown.is_empty() {
                    continue;
                }
                let shown = shown.join(",");
                let want = match (id, id.strip_prefix("ssgl_")) {
                    // Written in another form, or a setting of its own type: checked here.
                    ("ratio", _) => format!("{}:1", AugmentSettings::paper().ratio),
                    ("prior" | "bench_prior", _) => rmld::Prior::default().name().into(),
                    ("noise", _) => "fixed".into(),
                    ("noise_e", _) => rmld::model::DEFAULT_NOISE_E.to_string(),
                    ("noise_f", _) => rmld::model::DEFAULT_NOISE_F.to_string(),
                    ("precision", _) => "f32".into(),
                    // Serialised only when not the default.
                    ("data_scale", _) => {
                        assert!(rmld::session::ProblemSettings::default()
                            .data_scale
                            .is_auto());
                        "auto".into()
                    }
                    ("gemm_tile", _) => text(&settings["gemm_tiles"]),
                    // Switches of the command line's own, off.
                    ("no_code_cache" | "peers" | "json", _) => "false".into(),
                    // Serialised only when on.
                    ("without_replacement", _) => {
                        assert!(!rmld::learn::DictionaryHyper::default().without_replacement);
                        "false".into()
                    }
                    ("warm_up_only", _) => {
                        assert!(!rmld::session::ProblemSettings::default().warm_up_only);
                        "false".into()
                    }
                    (_, Some(ssgl_name)) => setting(&ssgl, ssgl_name).unwrap(),
                    _ => setting(&settings, id)
                        .unwrap_or_else(|| panic!("{path:?} --{id}: no setting of that name")),
                };
                assert!(
                    same(&shown, &want),
                    "{path:?} --{id}: shows {shown}, library {want}"
                );
                if arg.is_hide_set()
                    || arg.is_hide_default_value_set()
                    || !arg.get_action().takes_values()
                {
                    continue;
                }
                assert!(
                    help.contains(&format!("[default: {shown}]")),
                    "{path:?} --{id}: --help does not show [default: {shown}]"
                );
            }
        }
    }
}

//! `rmld encode`'s arguments.

use clap::Args;

use rmld::session::EncodeSettings;

use super::common::ProblemArgs;

/// The library's defaults, which the options below show and fill in.
fn encode() -> EncodeSettings {
    EncodeSettings::default()
}

#[derive(Args, Debug)]
pub struct EncodeArgs {
    #[command(flatten)]
    pub problem: ProblemArgs,

    /// Encode only the first N observations (default: all). (`--count` is its old name.)
    #[arg(long, value_name = "N", alias = "count")]
    pub limit: Option<usize>,

    /// The iteration cap. (`--iterations` is its old name.)
    #[arg(long, value_name = "N", default_value_t = encode().lasso_iterations, alias = "iterations")]
    pub lasso_iterations: u32,

    /// Encode each row until its relative duality gap is at most TOL, at most --lasso-iterations
    /// iterations (CPU: ADMM; GPU: FISTA, every iteration); 0 runs every FISTA iteration on the
    /// CPU too. The same rule as augment's, so both give an image the same code
    #[arg(long, value_name = "TOL", default_value_t = encode().lasso_tolerance)]
    pub lasso_tolerance: f32,
}

impl EncodeArgs {
    /// The library's settings.
    pub fn settings(&self) -> EncodeSettings {
        EncodeSettings {
            problem: self.problem.settings(),
            limit: self.limit,
            lasso_iterations: self.lasso_iterations,
            lasso_tolerance: self.lasso_tolerance,
        }
    }
}

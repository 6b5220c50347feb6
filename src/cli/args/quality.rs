//! `rmld quality`'s arguments.

use std::path::PathBuf;

use clap::Args;

use rmld::session::QualitySettings;

#[derive(Args, Debug, Clone)]
pub struct QualityArgs {
    /// The generated images: IDX images (gzip'd or not), or an NPY of shape (N, d) or (N, h, w),
    /// uint8 or float.
    #[arg(long, value_name = "FILE")]
    pub generated: PathBuf,

    /// The class each generated image was generated for: IDX labels, a 1-D integer NPY or text
    /// with one label per line. Default: the IDX labels file beside --generated
    /// (…-labels-idx1-ubyte[.gz]).
    #[arg(long, value_name = "FILE")]
    pub generated_labels: Option<PathBuf>,

    /// The value of a full-intensity pixel in --generated. Default: 255 for uint8 images, 1 for
    /// float images.
    #[arg(long, value_name = "V")]
    pub generated_scale: Option<f32>,

    /// The real training images, as for `rmld augment` (a folder with MNIST-style IDX files, or
    /// one IDX, NPY or CSV file). Default: the embedded optdigits digits. A labelled test split in
    /// the folder (t10k-…) is the reference; without one, a seeded 10% of the training images is
    /// held out instead.
    #[arg(long, value_name = "PATH")]
    pub data: Option<PathBuf>,

    /// Labels for --data when they are not beside it.
    #[arg(long, value_name = "FILE")]
    pub labels: Option<PathBuf>,

    /// Only these classes (comma-separated label values); generated images of other classes are
    /// left out. Default: every class of the training data.
    #[arg(long, value_name = "L,L,...", value_delimiter = ',')]
    pub classes: Option<Vec<u32>>,

    /// Use only the first N training images (before --classes filters them).
    #[arg(long, value_name = "N")]
    pub limit: Option<usize>,

    /// Use only the first N test images (before --classes filters them).
    #[arg(long, value_name = "N")]
    pub test_limit: Option<usize>,

    /// Seed of the held-out split and the diversity subsamples.
    #[arg(long, default_value_t = QualitySettings::default().seed)]
    pub seed: u64,

    /// Write the report (JSON) here, atomically.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,

    /// Replace --out when it exists already.
    #[arg(long)]
    pub force: bool,

    /// Print the report as JSON on stdout (instead of the one-line summary).
    #[arg(long)]
    pub json: bool,
}

impl QualityArgs {
    /// The library's settings (`--json` is the command line's own).
    pub fn settings(&self) -> QualitySettings {
        QualitySettings {
            generated: self.generated.clone(),
            generated_labels: self.generated_labels.clone(),
            generated_scale: self.generated_scale,
            data: self.data.clone(),
            labels: self.labels.clone(),
            classes: self.classes.clone(),
            limit: self.limit,
            test_limit: self.test_limit,
            seed: self.seed,
            out: self.out.clone(),
            force: self.force,
        }
    }
}

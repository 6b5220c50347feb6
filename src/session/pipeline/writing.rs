//! Stage "writing": every output file of an augmentation at the end, so that a stop before leaves none (the generated set as IDX and NPY, the originals with it, the codes, the picture).

use super::encoding::Codes;
use super::stage::{Halt, Step};
use crate::io::labelled::{idx_labels, labels_i64, pixels_u8, write_class_grid};
use crate::io::{self, Dataset, Output};
use crate::orchestrator::{AugmentPlan, AugmentSink};
use crate::session::observer::Observer;
use crate::session::problem::Problem;
use crate::Result;

/// The phase's name.
pub(super) const PHASE: &str = "writing";

/// Generated samples per class shown in the PNG grid, after a few real images.
const GRID_COLUMNS: usize = 12;
const GRID_REAL: usize = 3;

/// The generated set: 0..255 pixels, labels and codes (empty for Kernel HMC), class by class.
pub(super) struct Samples<'a> {
    pub pixels: &'a [u8],
    pub labels: &'a [u32],
    pub codes: &'a [f32],
}

/// The codes of the originals and of the test split, where the run encoded them.
pub(super) struct Encoded<'a> {
    pub originals: Option<Codes>,
    pub test: Option<(Codes, &'a Dataset)>,
}

/// Writes every file; a stop between two files ends the run (the pipeline removes those
/// written). `kernel`: Kernel HMC, which has no codes and no dictionary.
#[allow(clippy::too_many_arguments)]
pub(super) fn write(
    output: &mut Output,
    observer: &dyn Observer,
    (problem, plan, sink): (&Problem, &AugmentPlan, &AugmentSink),
    originals: &Dataset,
    generated: Samples,
    encoded: Encoded,
    (kernel, labelled_codes): (bool, bool),
) -> Step<()> {
    let (h, w) = (problem.dataset.height, problem.dataset.width);
    let (d, p) = (h * w, problem.target.p());
    let g = generated.labels.len();
    let label_bytes = idx_labels(generated.labels)?;
    let mut all_pixels = pixels_u8(originals);
    all_pixels.extend_from_slice(generated.pixels);
    let mut all_labels = originals.labels.clone().unwrap_or_default();
    all_labels.extend_from_slice(generated.labels);
    let n = all_labels.len();
    let all_label_bytes = idx_labels(&all_labels)?;
    type Write<'w> = Box<dyn FnOnce(&std::path::Path) -> Result<()> + 'w>;
    let mut writes: Vec<(&str, Write)> = vec![
        (
            "generated-images-idx3-ubyte.gz",
            Box::new(|path| io::write_idx_images(path, g, h, w, generated.pixels)),
        ),
        (
            "generated-labels-idx1-ubyte.gz",
            Box::new(|path| io::write_idx_labels(path, &label_bytes)),
        ),
    ];
    if !kernel {
        writes.push((
            "generated-codes.npy",
            Box::new(|path| io::write_npy_f32(path, &[g, p], generated.codes)),
        ));
        writes.push((
            "dictionary.npy",
            Box::new(|path| io::write_npy_f32(path, &[d, p], &problem.target.dictionary.a)),
        ));
    }
    writes.push((
        "generated-labels.npy",
        Box::new(|path| io::write_npy_i64(path, &[g], &labels_i64(generated.labels))),
    ));
    writes.push((
        "generated.png",
        Box::new(|path| class_grid(path, problem, plan, sink, generated.pixels)),
    ));
    if let Some(Codes::Stream(mut stream)) = encoded.originals {
        writes.push((
            "codes.npy",
            Box::new(move |_| {
                stream.append(generated.codes)?;
                stream.finish()
            }),
        ));
    }
    writes.push((
        "train-images-idx3-ubyte.gz",
        Box::new(|path| io::write_idx_images(path, n, h, w, &all_pixels)),
    ));
    writes.push((
        "train-labels-idx1-ubyte.gz",
        Box::new(|path| io::write_idx_labels(path, &all_label_bytes)),
    ));
    if labelled_codes {
        writes.push((
            "labels.npy",
            Box::new(|path| io::write_npy_i64(path, &[n], &labels_i64(&all_labels))),
        ));
    }
    if let Some((Codes::Stream(stream), test)) = encoded.test {
        writes.push(("test-codes.npy", Box::new(move |_| stream.finish())));
        writes.push((
            "test-labels.npy",
            Box::new(move |path| {
                let labels = test.labels.clone().unwrap_or_default();
                io::write_npy_i64(path, &[test.n], &labels_i64(&labels))
            }),
        ));
    }
    for (k, (name, write)) in writes.into_iter().enumerate() {
        if observer.stop_requested() {
            return Err(Halt::Stopped);
        }
        output.write(name, write)?;
        observer.phase_advance(k as u64 + 1);
    }
    Ok(())
}

/// generated.png: one row per class, a few real images of the class then its generated samples.
fn class_grid(
    path: &std::path::Path,
    problem: &Problem,
    plan: &AugmentPlan,
    sink: &AugmentSink,
    pixels: &[u8],
) -> Result<()> {
    let (h, w) = (problem.dataset.height, problem.dataset.width);
    let d = h * w;
    let observations = &problem.target.observations;
    let full = problem.dataset.full_scale;
    let mut offset = 0;
    let classes: Vec<(Vec<f32>, &[u8])> = plan
        .classes
        .iter()
        .zip(&sink.kept)
        .map(|(class, &kept)| {
            let [first, count] = class.rows;
            let real = (first..first + count.min(GRID_REAL as u32))
                .flat_map(|i| observations.row(i as usize))
                .map(|v| v * 255.0 / observations.scale / full)
                .collect();
            let mine = &pixels[offset * d..(offset + kept) * d];
            offset += kept;
            (real, mine)
        })
        .collect();
    write_class_grid(path, &classes, (h, w), (GRID_REAL, GRID_COLUMNS))
}

//! Shared by the amortized sampler's tests: a tiny class-conditional code model.
#![allow(dead_code)]

use rmld::amortize::{CodeModel, CodeTrainSettings, ModelShape};

/// A model of 2 classes (labels 3 and 7) over p = 6 atoms, hidden width `hidden`, untrained.
pub fn tiny_model(hidden: usize) -> CodeModel {
    let p = 6;
    let shape = ModelShape {
        height: 2,
        width: 3,
        p,
        dictionary_hash: 42,
        classes: vec![3, 7],
    };
    let codes: Vec<Vec<f32>> = (0..2)
        .map(|c| {
            (0..10 * p)
                .map(|i| ((i * 7 + c * 3) % 11) as f32 / 5.0 - 1.0)
                .collect()
        })
        .collect();
    let settings = CodeTrainSettings {
        hidden,
        fit_steps: 7,
        pairs: 4,
        ..CodeTrainSettings::default()
    };
    CodeModel::new(shape, settings, "teacher".into(), &codes).unwrap()
}

/// `tiny_model` trained its 7 steps per class.
pub fn trained_tiny_model(hidden: usize) -> CodeModel {
    let mut model = tiny_model(hidden);
    for k in 0..2 {
        for _ in 0..7 {
            assert!(model.train_step(k).is_finite());
        }
    }
    model
}

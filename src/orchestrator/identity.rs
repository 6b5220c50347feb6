//! What a run was made from, as hashes that checkpoints and shards carry: the data the chains sample and the dictionary.

use crate::io::hash_values;
use crate::io::Pixels;
use crate::model::Target;

/// xxh3 hashes of the data the chains sample (its shape, scale and values) and of the
/// dictionary (its shape and values).
pub fn input_hashes(target: &Target) -> (u64, u64) {
    let obs = &target.observations;
    let pixels: &[u8] = match &obs.pixels {
        Pixels::U8(v) => v,
        Pixels::F32(v) => bytemuck::cast_slice(v),
    };
    let data = hash_values(
        &[obs.n as u64, obs.d as u64, obs.scale.to_bits() as u64],
        pixels,
    );
    let dict = &target.dictionary;
    (
        data,
        hash_values(
            &[dict.d as u64, dict.p as u64],
            bytemuck::cast_slice(&dict.a),
        ),
    )
}

/// What makes a sampling run this run and no other, as its checkpoints carry it: `rmld resume`
/// refuses a checkpoint whose identity does not match the outputs it would continue, naming
/// what differs.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RunIdentity {
    /// A random id given when the run began, kept when it is resumed (report.json's `run_id`).
    pub run_id: String,
    /// xxh3-64 of the run's settings as canonical JSON (sorted keys), the output folder and
    /// `force` (what may differ on resume) left out.
    pub configuration: u64,
    /// The seed.
    pub seed: u64,
    /// Chains C.
    pub chains: usize,
    /// Outer iterations in all.
    pub samples: u32,
    /// The draws files at the checkpoint (`codes.npy`, `images.npy`).
    pub streams: Vec<StreamMark>,
}

/// A draws file as a checkpoint saw it: its name, its shape (draws first) and the xxh3-64 of
/// its data (the rows' little-endian float32 bytes).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct StreamMark {
    /// The file's name in the output folder.
    pub name: String,
    /// Its shape: draws, then the shape of one draw.
    pub shape: Vec<usize>,
    /// xxh3-64 of its data.
    pub xxh3: u64,
}

impl RunIdentity {
    /// The mark of the draws file `name`.
    pub fn stream(&self, name: &str) -> Option<&StreamMark> {
        self.streams.iter().find(|s| s.name == name)
    }

    /// What differs between this run and one of `seed`, `chains` and `samples` (outer
    /// iterations), in words; empty when none does.
    pub fn differences(&self, (seed, chains, samples): (u64, usize, u32)) -> Vec<String> {
        let other = RunIdentity {
            seed,
            chains,
            samples,
            ..self.clone()
        };
        let mut found = Vec::new();
        if self.seed != other.seed {
            found.push(format!("seed {} vs {}", self.seed, other.seed));
        }
        if self.chains != other.chains {
            found.push(format!("{} vs {} chains", self.chains, other.chains));
        }
        if self.samples != other.samples {
            found.push(format!(
                "{} vs {} outer iterations",
                self.samples, other.samples
            ));
        }
        found
    }
}

/// xxh3-64 of `settings` as canonical JSON (serde_json sorts object keys).
pub fn configuration_hash(settings: &serde_json::Value) -> u64 {
    xxhash_rust::xxh3::xxh3_64(settings.to_string().as_bytes())
}

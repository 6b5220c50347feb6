//! What a run was made from, as hashes that checkpoints and shards carry: the data the chains sample and the dictionary.

use super::checkpoint::hash_values;
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

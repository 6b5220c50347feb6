//! Randomness: the counter-based Philox generator and the streams rmld draws from it.

pub(crate) mod gamma;
pub(crate) mod philox;
pub(crate) mod portable_draws;
pub(crate) mod stream_rng;

pub use gamma::{gamma_from_stream, standard_gamma, tilted_root_gamma};
pub use philox::{
    chain_key, index_from_word, normals_from_block, philox4x32_10, uniform_from_word,
    uniform_open_from_word, Purpose, Stream, SHARED_CHAIN,
};
pub use portable_draws::{chi_squared, standard_normal};
pub use stream_rng::PhiloxRng;

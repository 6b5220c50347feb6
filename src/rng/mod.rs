//! Randomness: the counter-based Philox generator and the streams rmld draws from it.

pub mod philox;

pub use philox::{chain_key, philox4x32_10, Purpose, Stream, SHARED_CHAIN};

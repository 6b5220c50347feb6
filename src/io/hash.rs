//! The xxh3-64 identity of float values (data, dictionaries) that checkpoints and models record.

use xxhash_rust::xxh3::Xxh3;

/// xxh3-64 of float values and a context (dimensions, scale), for data and dictionary identity.
pub fn hash_values(context: &[u64], bytes: &[u8]) -> u64 {
    let mut hasher = Xxh3::new();
    for v in context {
        hasher.update(&v.to_le_bytes());
    }
    hasher.update(bytes);
    hasher.digest()
}

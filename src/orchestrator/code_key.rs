//! What identifies one LASSO encoding's codes in the code cache (`io::code_cache`): the rows, the dictionary, λ, the stop rule and the device (not the CPU's product path: its products sum in one order on all).

use xxhash_rust::xxh3::Xxh3;

use crate::io::code_cache;

/// What identifies one encoding's codes.
pub(crate) struct CodeKey<'a> {
    /// The dictionary A (d × p).
    pub dictionary: &'a [f32],
    /// Rows' dimension d.
    pub d: usize,
    /// Atoms p.
    pub p: usize,
    /// λ.
    pub lam: f32,
    /// The iteration cap.
    pub iterations: u32,
    /// The duality-gap tolerance.
    pub tolerance: f32,
    /// The device that encodes.
    pub device: &'a str,
}

impl CodeKey<'_> {
    /// The key of encoding `rows` (each d values, model units) as these settings do.
    pub fn hash<R: AsRef<[f32]>>(&self, rows: impl Iterator<Item = R>) -> [u8; 16] {
        let mut h = Xxh3::new();
        h.update(env!("CARGO_PKG_VERSION").as_bytes());
        h.update(&code_cache::VERSION.to_le_bytes());
        h.update(self.device.as_bytes());
        for v in [self.d as u64, self.p as u64, self.iterations as u64] {
            h.update(&v.to_le_bytes());
        }
        h.update(&self.lam.to_le_bytes());
        h.update(&self.tolerance.to_le_bytes());
        h.update(bytemuck::cast_slice(self.dictionary));
        let mut count = 0u64;
        for row in rows {
            h.update(bytemuck::cast_slice(row.as_ref()));
            count += 1;
        }
        h.update(&count.to_le_bytes());
        h.digest128().to_le_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key_of(lam: f32, rows: &[Vec<f32>]) -> [u8; 16] {
        let a = [0.5f32; 6];
        CodeKey {
            dictionary: &a,
            d: 2,
            p: 3,
            lam,
            iterations: 10,
            tolerance: 1e-3,
            device: "cpu",
        }
        .hash(rows.iter())
    }

    #[test]
    fn the_key_holds_lambda_and_the_rows() {
        let rows = vec![vec![1.0f32, 2.0], vec![3.0, 4.0]];
        let key = key_of(0.1, &rows);
        assert_ne!(key, key_of(0.2, &rows), "λ is part of the key");
        assert_ne!(key, key_of(0.1, &rows[..1]), "the rows are part of the key");
    }
}

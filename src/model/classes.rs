//! Class-conditional chains: each chain draws its minibatches from, and is judged against the mean of, one class's rows.

use crate::{Error, Result};

/// Which rows of the observations each chain sees (the rows of a class must be contiguous) and
/// the mean each chain's full-data energy uses.
#[derive(Clone, Debug)]
pub struct ChainClasses {
    /// Per chain: (first row, row count) of the rows it draws from: its class's, or the one
    /// image it is anchored to (`Target::with_kind`, local and tangent targets).
    pub rows: Vec<[u32; 2]>,
    /// Per chain: the mean its energy uses (its class's, or its anchor), model units, C × d.
    pub means: Vec<f32>,
    /// Per chain: its class (an index into the classes it was made from), which anchoring keeps:
    /// what per-class step sizes and the GPU's class groups go by.
    pub class: Vec<u32>,
}

impl ChainClasses {
    /// Chains whose class is `class_of_chain[c]`, an index into `ranges` (start, count) and
    /// `class_means` (rows of d).
    pub fn new(
        ranges: &[[u32; 2]],
        class_means: &[f32],
        d: usize,
        class_of_chain: &[u32],
    ) -> Result<Self> {
        if class_means.len() != ranges.len() * d {
            return Err(Error::Internal(format!(
                "{} class means of width {d} for {} classes",
                class_means.len(),
                ranges.len()
            )));
        }
        if let Some(&[_, 0]) = ranges.iter().find(|r| r[1] == 0) {
            return Err(Error::Internal("a class without rows".into()));
        }
        let mut rows = Vec::with_capacity(class_of_chain.len());
        let mut means = Vec::with_capacity(class_of_chain.len() * d);
        for &k in class_of_chain {
            let k = k as usize;
            let range = ranges
                .get(k)
                .ok_or_else(|| Error::Internal(format!("chain class {k} of {}", ranges.len())))?;
            rows.push(*range);
            means.extend_from_slice(&class_means[k * d..(k + 1) * d]);
        }
        Ok(ChainClasses {
            rows,
            means,
            class: class_of_chain.to_vec(),
        })
    }

    /// Number of chains described.
    pub fn chains(&self) -> usize {
        self.rows.len()
    }

    /// Each chain's class, numbered 0, 1, … in the order the classes first appear among the
    /// chains (a shard's chains number their own classes so).
    pub fn numbered(&self) -> Vec<u32> {
        let mut seen: Vec<u32> = Vec::new();
        self.class
            .iter()
            .map(|k| match seen.iter().position(|s| s == k) {
                Some(i) => i as u32,
                None => {
                    seen.push(*k);
                    (seen.len() - 1) as u32
                }
            })
            .collect()
    }
}

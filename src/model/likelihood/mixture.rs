//! The mixture likelihood: −log Σ_i exp(−||A X − x_i||²/(2σ²)) over the chain's class, its
//! per-chain kernel info and the f64 references (the CPU twins are in `backend::kernel_hmc::cpu`,
//! the WGSL in `shaders/kernel_hmc.wgsl`).

use super::kernel_density::{ChainInfo, KernelTarget};
use crate::model::Target;
use crate::Result;

impl Target {
    /// What the mixture kernels read per chain: its rows, 1/σ² as the kernel's 1/h², the scale.
    pub fn mixture_chain_info(&self, chains: usize) -> Result<Vec<ChainInfo>> {
        Ok(self
            .chain_rows(chains)?
            .into_iter()
            .map(|[start, count]| ChainInfo {
                start,
                count,
                inv_h2: self.inv_sigma2(),
                scale: self.observations.scale,
            })
            .collect())
    }

    /// The mixture of chain `chain` as a kernel density in image space (bandwidth² σ²), for the
    /// f64 references.
    fn mixture_density(&self, chains: usize) -> Result<KernelTarget> {
        let rows = self.chain_rows(chains)?;
        let n = rows.len();
        KernelTarget::new(self.observations.clone(), rows, vec![self.sigma2; n])
    }

    /// The mixture's U(X) − const of chain `chain` (of `chains`), in f64 (the reference):
    /// −log Σ_i exp(−||A X − x_i||²/(2σ²)) + lam·||X||₁ over the chain's rows.
    pub fn mixture_energy_f64(&self, chains: usize, chain: usize, x: &[f32]) -> Result<f64> {
        let at = self.image_f32(x);
        Ok(self.mixture_density(chains)?.energy_f64(chain, &at) + self.prior.energy_f64(x))
    }

    /// The mixture's ∇U(X) = Aᵀ(A X − Σ_i w_i x_i)/σ² + lam·sign(X), w the softmax weights over
    /// the chain's rows, in f64 (the reference).
    pub fn mixture_gradient_f64(&self, chains: usize, chain: usize, x: &[f32]) -> Result<Vec<f64>> {
        let at = self.image_f32(x);
        let pixel = self.mixture_density(chains)?.gradient_f64(chain, &at);
        let mut g = self.dictionary.apply_transpose_f64(&pixel);
        for (gj, &xj) in g.iter_mut().zip(x) {
            *gj += self.prior.gradient_f64(xj);
        }
        Ok(g)
    }

    fn image_f32(&self, x: &[f32]) -> Vec<f32> {
        let x64: Vec<f64> = x.iter().map(|&v| v as f64).collect();
        self.dictionary
            .apply_f64(&x64)
            .into_iter()
            .map(|v| v as f32)
            .collect()
    }
}

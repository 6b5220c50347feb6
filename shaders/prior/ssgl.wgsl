// Twin of src/model/prior/ssgl.rs (`ChainState::element`/`gradient`, `element`/`gradient`): the SSGL
// prior with each chain's latent state, as the gradient-step and MH-term kernels call it:
// -log p(x | theta_c) = prior_weight() * sum_j prior_element(c, j, x_j) with weight 1 and
// element kappa0_j |x_j| / sigma + kappa1_j x_j^2 / (2 sigma^2). The state of the group's chains,
// 3p + 2 values per chain (rho, kappa0, kappa1: p each; sigma; delta), is `prior_state`, bound
// only in the pipelines built for this prior (`Kernels::with_state`); c is the chain within the
// group, params.p the coefficients per chain (every family that splices a prior has it).

@group(0) @binding(12) var<storage, read> prior_state: array<f32>;

fn sign_of(v: f32) -> f32 {
    if (v > 0.0) {
        return 1.0;
    }
    if (v < 0.0) {
        return -1.0;
    }
    return 0.0;
}

fn prior_weight() -> f32 {
    return 1.0;
}

// Where chain c's state starts.
fn prior_base(c: u32) -> u32 {
    return c * (3u * params.p + 2u);
}

// 1/sigma of chain c, rounded from sigma as `ChainState::of` rounds it.
fn prior_inv_sigma(base: u32) -> f32 {
    return 1.0 / prior_state[base + 3u * params.p];
}

fn prior_element(c: u32, j: u32, v: f32) -> f32 {
    let base = prior_base(c);
    let inv_sigma = prior_inv_sigma(base);
    let inv_sigma2 = inv_sigma * inv_sigma;
    let kappa0 = prior_state[base + params.p + j];
    let kappa1 = prior_state[base + 2u * params.p + j];
    return kappa0 * abs(v) * inv_sigma + 0.5 * kappa1 * v * v * inv_sigma2;
}

fn prior_gradient(c: u32, j: u32, v: f32) -> f32 {
    let base = prior_base(c);
    let inv_sigma = prior_inv_sigma(base);
    let inv_sigma2 = inv_sigma * inv_sigma;
    let kappa0 = prior_state[base + params.p + j];
    let kappa1 = prior_state[base + 2u * params.p + j];
    return kappa0 * sign_of(v) * inv_sigma + kappa1 * v * inv_sigma2;
}

// Twin of src/model/prior/laplace.rs: the Laplace prior lam ||x||_1, as the gradient-step and
// MH-term kernels call it: -log p(x) = prior_weight() * sum_j prior_element(c, j, x_j) for chain c
// (of the group) and coefficient j, which a prior without per-chain state ignores.

// Mirrored by `LaplaceParams` in src/model/prior/laplace.rs.
struct LaplaceParams {
    lam: f32,
}

@group(0) @binding(14) var<storage, read> prior_params: LaplaceParams;

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
    return prior_params.lam;
}

fn prior_element(c: u32, j: u32, v: f32) -> f32 {
    return abs(v);
}

fn prior_gradient(c: u32, j: u32, v: f32) -> f32 {
    return prior_params.lam * sign_of(v);
}

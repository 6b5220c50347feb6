// Twin of `Gaussian::energy_terms` in src/model/likelihood/gaussian.rs: the Gaussian likelihood
// 1/2 ||A x - m||^2 * precision. It has no step or energy pass (its step's residual is the gathered
// one, and the gradient product reads the residual times chain_precision); the MH terms reduce
// its residuals per element, so U(Z) - U(X) is one sum of differences, never two rounded energies.

fn likelihood_step(c: u32, t: u32) {}

fn likelihood_energy(c: u32, t: u32) {}

// Invocation t's partial sums of ||r_X||^2 and sum_j (r_Z - r_X)_j (r_Z + r_X)_j over chain c's
// pixels (strided by the MH terms' 256 invocations).
fn likelihood_fit(c: u32, t: u32) -> vec2<f32> {
    var a = vec2<f32>(0.0);
    for (var j = t; j < params.d; j += 256u) {
        let rx = residual_x[c * params.d + j];
        let rz = residual_z[c * params.d + j];
        a += vec2<f32>(rx * rx, (rz - rx) * (rz + rx));
    }
    return a;
}

// U(X) and U(Z) - U(X) of chain c from the reduced `fit` and the prior's weighted terms; with
// --noise gibbs (chain_precision holds sqrt(tau)) the chain's terms in noise units.
fn likelihood_terms(c: u32, fit: vec2<f32>, prior: vec2<f32>) -> vec2<f32> {
    let current = 0.5 * fit.x * chain_precision[c] + prior.x;
    let difference = 0.5 * fit.y * chain_precision[c] + prior.y;
    if (params.preconditioned != 0u) {
        return vec2<f32>(chain_precision[c] * current, chain_precision[c] * difference);
    }
    return vec2<f32>(current, difference);
}

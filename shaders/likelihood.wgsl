// The likelihood's passes, compiled with philox.wgsl, workgroup_sum.wgsl, the prior's and the
// likelihood's WGSL (shaders/prior/*.wgsl, shaders/likelihood/*.wgsl) and mh_terms.wgsl into one
// module: the likelihood's WGSL defines `likelihood_step(c, t)` (a step's residual, in place,
// into the one the gradient product reads), `likelihood_energy(c, t)` (a state's cached energy and
// scaled residual), `likelihood_fit(c, t)` and `likelihood_terms(c, fit, prior)` (its part of the
// MH terms), and declares what it reads of its own: `likelihood_params` (binding 16, its params
// struct), `likelihood_chains` (17, per-chain data), `likelihood_scratch` (18, per-chain scratch).
// One 64-wide workgroup per chain for the passes (WG, workgroup_sum.wgsl); 256 for the MH terms.

// Mirrored by `LikelihoodParams` in src/backend/gpu/kernels/likelihood.rs; one slot per step.
struct LikelihoodParams {
    stream: Stream,
    d: u32,
    p: u32,
    batch: u32,          // minibatch size m
    step: u32,           // the step within the outer iteration, a counter word
    u8_data: u32,        // 1: data packed 4 bytes per word; 0: f32 bits
    kinetic: u32,        // 1: add HMC's kinetic difference (the program's MhTerms op)
    delta: f32,          // Delta of the MH proposal norms: eta T (RMLD), h (MALA)
    preconditioned: u32, // 1: --noise gibbs, chain_precision holds sqrt(tau): terms in noise units
}

@group(0) @binding(0) var<uniform> params: LikelihoodParams;

@group(0) @binding(15) var<storage, read> data: array<u32>; // u8 packed 4 per word, or f32 bits
@group(0) @binding(19) var<storage, read_write> step_residual: array<f32>; // chains x d
@group(0) @binding(20) var<storage, read> at: array<f32>;                  // chains x d: A x - a
@group(0) @binding(21) var<storage, read_write> energy: array<f32>;        // chains
@group(0) @binding(22) var<storage, read_write> scaled: array<f32>;        // chains x d

// A step's residual into the one the gradient product reads (after the step's residual product).
@compute @workgroup_size(64)
fn likelihood_step_pass(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    likelihood_step(wg.x, lid.x);
}

// A state's cached energy and scaled residual (after its residual product, before its gradient).
@compute @workgroup_size(64)
fn likelihood_energy_pass(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    likelihood_energy(wg.x, lid.x);
}

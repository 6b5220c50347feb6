// The parameters every kernel reads, mirrored field by field by `Params` in
// src/backend/gpu/kernels.rs. Bound as a uniform with a dynamic offset, one slot per step.
struct Params {
    chains: u32,        // rows in this group of buffers
    chain_offset: u32,  // global index of the group's first chain: keys the generator
    d: u32,
    p: u32,
    n: u32,             // observations in the dataset
    batch: u32,         // minibatch size m
    seed_lo: u32,
    seed_hi: u32,
    outer: u32,
    step: u32,
    noise: u32,         // 1: inject SGHMC noise in gradient_step
    u8_data: u32,       // 1: data packed 4 bytes per word; 0: f32 bits
    y_stride: u32,      // row stride of y in residual_product (0 broadcasts one row)
    lam: f32,
    eta: f32,
    noise_scale: f32,   // sqrt(2 eta), rounded on the host like the CPU (SGHMC and MALA)
    gather_factor: f32, // scale / m, rounded on the host like the CPU
    delta: f32,         // eta T (RMLD), h (MALA)
    step_size: f32,     // FISTA 1/L
    tau: f32,           // FISTA lam/L
    c_u: f32,           // FISTA t/t'
    c_prev: f32,        // FISTA (t-1)/t'
    inv_sigma2: f32,    // 1 / sigma^2, the likelihood's precision
    kinetic: u32,       // 1: mh_terms adds HMC's kinetic difference (the program's MhTerms op)
}

@group(0) @binding(0) var<uniform> params: Params;

// Twin of src/backend/cpu/gradient_step.rs (compiled together with matmul.wgsl, philox.wgsl and the
// prior's file, shaders/prior/*.wgsl, which defines prior_gradient):
// the momentum draw, and the A^T R product with the Algorithm 1 update or the full gradient fused
// into its epilogue, so G never goes through memory.

@group(0) @binding(5) var<storage, read_write> position: array<f32>;
@group(0) @binding(6) var<storage, read_write> momentum: array<f32>;
// The likelihood's precision per chain of the group: 1 / sigma^2 in every entry for a fixed
// sigma^2 (so the products are the uniform's, bit for bit), sqrt(tau_c) with --noise gibbs
// (the gradient in noise units; params.preconditioned is 1).
@group(0) @binding(13) var<storage, read> chain_precision: array<f32>;

// r <- N(0, I) from the stream (seed, chain, outer, 0, Momentum); one Philox block per invocation.
@compute @workgroup_size(64)
fn draw_momentum(@builtin(global_invocation_id) gid: vec3<u32>) {
    let chain = gid.y;
    let block = gid.x;
    if (block * 4u >= params.p) {
        return;
    }
    let counter = vec4<u32>(block, 0u, params.stream.outer, PURPOSE_MOMENTUM);
    let normals = normals_from_block(philox4x32_10(counter, chain_key(params.stream, chain)));
    for (var q = 0u; q < 4u; q++) {
        let j = block * 4u + q;
        if (j < params.p) {
            momentum[chain * params.p + j] = normals[q];
        }
    }
}

// Element j of the SGHMC noise stream (seed, chain, outer, step, SghmcNoise).
fn noise_normal(chain: u32, j: u32) -> f32 {
    let counter = vec4<u32>(j / 4u, params.step, params.stream.outer, PURPOSE_SGHMC_NOISE);
    let normals = normals_from_block(philox4x32_10(counter, chain_key(params.stream, chain)));
    return normals[j % 4u];
}

// g = A^T r * chain_precision[chain] + grad(-log prior)(z); r <- r - eta g - eta r (+ noise); z <- z + eta r. lhs holds A z - ybar.
@compute @workgroup_size(WG_X, WG_Y)
fn gradient_step(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let acc = product_nn(wg, lid);
    let eta = params.eta;
    for (var i = 0u; i < REG_M; i++) {
        let m = tile_row(wg.y, lid.y, i);
        for (var jj = 0u; jj < REG_N; jj++) {
            let n = tile_col(wg.x, lid.x, jj);
            if (m < params.chains && n < params.p) {
                let idx = m * params.p + n;
                let z = position[idx];
                let r = momentum[idx];
                let g = acc[i * REG_N + jj] * chain_precision[m] + prior_gradient(m, n, z);
                var next = r - eta * g - eta * r;
                if (params.noise != 0u) {
                    next += params.noise_scale * noise_normal(m, n);
                }
                momentum[idx] = next;
                if (params.preconditioned != 0u) {
                    // --noise gibbs: chain_precision holds sqrt(tau), the move is in noise units.
                    position[idx] = z + (eta * next) / chain_precision[m];
                } else {
                    position[idx] = z + eta * next;
                }
            }
        }
    }
}

// out = A^T r * chain_precision[chain] + grad(-log prior)(position), the full gradient when lhs holds A x - xbar.
@compute @workgroup_size(WG_X, WG_Y)
fn full_gradient(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let acc = product_nn(wg, lid);
    for (var i = 0u; i < REG_M; i++) {
        let m = tile_row(wg.y, lid.y, i);
        for (var jj = 0u; jj < REG_N; jj++) {
            let n = tile_col(wg.x, lid.x, jj);
            if (m < params.chains && n < params.p) {
                let idx = m * params.p + n;
                out[idx] = acc[i * REG_N + jj] * chain_precision[m] + prior_gradient(m, n, position[idx]);
            }
        }
    }
}

// matmul.wgsl's tile loads for any shape: guarded scalar loads (edges read zeros). The
// dictionary's storage (`dict_at`) comes from dict_f32.wgsl or dict_f16.wgsl.
@group(0) @binding(2) var<storage, read> lhs: array<f32>;

// lhs (chains x K) . A^T with K = p, N = d: A is read along its rows (contiguous in k).
fn product_nt(wg: vec3<u32>, lid: vec3<u32>) -> array<f32, ACC> {
    let tid = lid.y * WG_X + lid.x;
    let row0 = wg.y * TILE_M;
    let col0 = wg.x * TILE_N;
    let kdim = params.p;
    var acc: array<f32, ACC>;
    for (var k0 = 0u; k0 < kdim; k0 += TILE_K) {
        for (var r = 0u; r < TILE_M * TILE_K / INVOCATIONS; r++) {
            let e = tid + r * INVOCATIONS;
            let mk = e / TILE_K;
            let kk = e % TILE_K;
            let gk = k0 + kk;
            var v = 0.0;
            if (row0 + mk < params.chains && gk < kdim) {
                v = lhs[(row0 + mk) * kdim + gk];
            }
            tile_l[slot_l(kk, mk / 4u)][mk % 4u] = v;
            var w = 0.0;
            if (col0 + mk < params.d && gk < kdim) {
                w = dict_at((col0 + mk) * kdim + gk);
            }
            tile_r[slot_r(kk, mk / 4u)][mk % 4u] = w;
        }
        workgroupBarrier();
        accumulate_slice(lid, &acc);
        workgroupBarrier();
    }
    return acc;
}

// lhs (chains x K) . A with K = d, N = p: A is read along its rows (contiguous in n).
fn product_nn(wg: vec3<u32>, lid: vec3<u32>) -> array<f32, ACC> {
    let tid = lid.y * WG_X + lid.x;
    let row0 = wg.y * TILE_M;
    let col0 = wg.x * TILE_N;
    let kdim = params.d;
    var acc: array<f32, ACC>;
    for (var k0 = 0u; k0 < kdim; k0 += TILE_K) {
        for (var r = 0u; r < TILE_M * TILE_K / INVOCATIONS; r++) {
            let e = tid + r * INVOCATIONS;
            let mk = e / TILE_K;
            let kk = e % TILE_K;
            var v = 0.0;
            if (row0 + mk < params.chains && k0 + kk < kdim) {
                v = lhs[(row0 + mk) * kdim + k0 + kk];
            }
            tile_l[slot_l(kk, mk / 4u)][mk % 4u] = v;
            let kn = e / TILE_N;
            let nn = e % TILE_N;
            var w = 0.0;
            if (k0 + kn < kdim && col0 + nn < params.p) {
                w = dict_at((k0 + kn) * params.p + col0 + nn);
            }
            tile_r[slot_r(kn, nn / 4u)][nn % 4u] = w;
        }
        workgroupBarrier();
        accumulate_slice(lid, &acc);
        workgroupBarrier();
    }
    return acc;
}


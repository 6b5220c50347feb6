// matmul.wgsl's tile loads with vec4 loads, for d and p multiples of 4: every row of lhs and A
// then starts on a 16-byte boundary, and a quad is wholly inside or wholly outside the matrix,
// so the guards work per quad. The staged tiles, hence the sums, equal the scalar loads'.

@group(0) @binding(1) var<storage, read> dict: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> lhs: array<vec4<f32>>;

// Stages lhs rows row0.. (row length kdim) over k0..k0+16 into tile_l: one quad per invocation.
fn load_lhs_quads(tid: u32, row0: u32, k0: u32, kdim: u32) {
    let mk = tid / 4u;
    let kq = (tid % 4u) * 4u;
    var v = vec4<f32>(0.0);
    if (row0 + mk < params.chains && k0 + kq < kdim) {
        v = lhs[((row0 + mk) * kdim + k0 + kq) / 4u];
    }
    for (var i = 0u; i < 4u; i++) {
        tile_l[(kq + i) * TILE_M + mk] = v[i];
    }
}

// lhs (chains x K) . A^T with K = p, N = d: A is read along its rows (contiguous in k).
fn product_nt(wg: vec3<u32>, lid: vec3<u32>) -> array<f32, 16> {
    let tid = lid.y * 16u + lid.x;
    let row0 = wg.y * TILE_M;
    let col0 = wg.x * TILE_N;
    let kdim = params.p;
    var acc: array<f32, 16>;
    for (var k0 = 0u; k0 < kdim; k0 += TILE_K) {
        load_lhs_quads(tid, row0, k0, kdim);
        let nk = tid / 4u;
        let kq = (tid % 4u) * 4u;
        var w = vec4<f32>(0.0);
        if (col0 + nk < params.d && k0 + kq < kdim) {
            w = dict[((col0 + nk) * kdim + k0 + kq) / 4u];
        }
        for (var i = 0u; i < 4u; i++) {
            tile_r[(kq + i) * TILE_N + nk] = w[i];
        }
        workgroupBarrier();
        accumulate_slice(lid, &acc);
        workgroupBarrier();
    }
    return acc;
}

// lhs (chains x K) . A with K = d, N = p: A is read along its rows (contiguous in n).
fn product_nn(wg: vec3<u32>, lid: vec3<u32>) -> array<f32, 16> {
    let tid = lid.y * 16u + lid.x;
    let row0 = wg.y * TILE_M;
    let col0 = wg.x * TILE_N;
    let kdim = params.d;
    var acc: array<f32, 16>;
    for (var k0 = 0u; k0 < kdim; k0 += TILE_K) {
        load_lhs_quads(tid, row0, k0, kdim);
        let kn = tid / 16u;
        let nq = (tid % 16u) * 4u;
        var w = vec4<f32>(0.0);
        if (k0 + kn < kdim && col0 + nq < params.p) {
            w = dict[((k0 + kn) * params.p + col0 + nq) / 4u];
        }
        for (var i = 0u; i < 4u; i++) {
            tile_r[kn * TILE_N + nq + i] = w[i];
        }
        workgroupBarrier();
        accumulate_slice(lid, &acc);
        workgroupBarrier();
    }
    return acc;
}

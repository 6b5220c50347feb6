// matmul.wgsl's tile loads with vec4 loads, for d and p multiples of 4: every row of lhs and A
// then starts on a 16-byte boundary, and a quad is wholly inside or wholly outside the matrix,
// so the guards work per quad. The staged tiles, hence the sums, equal the scalar loads'.
// Double-buffered K loop: each invocation stages quads q = tid and tid + INVOCATIONS of each
// slice (both tiles stage 2 quads of each operand per invocation) and holds the next slice's
// four quads in registers; they are fetched (guarded, zeros past the end) right after the
// current slice is staged, so the global loads are in flight while the current slice's FMAs
// run. The dictionary's storage (`dict_quad`) comes from dict_f32_vec4.wgsl or dict_f16_vec4.wgsl.

@group(0) @binding(2) var<storage, read> lhs: array<vec4<f32>>;

// Quad q (0..TILE_M * TILE_K / 4) of lhs rows row0.. (row length kdim) over k0..k0+16.
fn fetch_lhs_quad(q: u32, row0: u32, k0: u32, kdim: u32) -> vec4<f32> {
    let mk = q / (TILE_K / 4u);
    let kq = (q % (TILE_K / 4u)) * 4u;
    var v = vec4<f32>(0.0);
    if (row0 + mk < params.chains && k0 + kq < kdim) {
        v = lhs[((row0 + mk) * kdim + k0 + kq) / 4u];
    }
    return v;
}

// Stages fetch_lhs_quad's quad into tile_l (transposed: four scalar stores).
fn store_lhs_quad(q: u32, v: vec4<f32>) {
    let mk = q / (TILE_K / 4u);
    let kq = (q % (TILE_K / 4u)) * 4u;
    for (var i = 0u; i < 4u; i++) {
        tile_l[slot_l(kq + i, mk / 4u)][mk % 4u] = v[i];
    }
}

// A^T's quad for product_nt: A rows col0.. (row length kdim = p) over k0..k0+16.
fn fetch_dict_nt(q: u32, col0: u32, k0: u32, kdim: u32) -> vec4<f32> {
    let nk = q / (TILE_K / 4u);
    let kq = (q % (TILE_K / 4u)) * 4u;
    var w = vec4<f32>(0.0);
    if (col0 + nk < params.d && k0 + kq < kdim) {
        w = dict_quad(((col0 + nk) * kdim + k0 + kq) / 4u);
    }
    return w;
}

// Stages fetch_dict_nt's quad into tile_r (transposed: four scalar stores).
fn store_dict_nt(q: u32, w: vec4<f32>) {
    let nk = q / (TILE_K / 4u);
    let kq = (q % (TILE_K / 4u)) * 4u;
    for (var i = 0u; i < 4u; i++) {
        tile_r[slot_r(kq + i, nk / 4u)][nk % 4u] = w[i];
    }
}

// lhs (chains x K) . A^T with K = p, N = d: A is read along its rows (contiguous in k).
fn product_nt(wg: vec3<u32>, lid: vec3<u32>) -> array<f32, ACC> {
    let tid = lid.y * WG_X + lid.x;
    let row0 = wg.y * TILE_M;
    let col0 = wg.x * TILE_N;
    let kdim = params.p;
    var acc: array<f32, ACC>;
    let q1 = tid + INVOCATIONS;
    var v0 = fetch_lhs_quad(tid, row0, 0u, kdim);
    var v1 = fetch_lhs_quad(q1, row0, 0u, kdim);
    var w0 = fetch_dict_nt(tid, col0, 0u, kdim);
    var w1 = fetch_dict_nt(q1, col0, 0u, kdim);
    for (var k0 = 0u; k0 < kdim; k0 += TILE_K) {
        store_lhs_quad(tid, v0);
        store_lhs_quad(q1, v1);
        store_dict_nt(tid, w0);
        store_dict_nt(q1, w1);
        workgroupBarrier();
        v0 = fetch_lhs_quad(tid, row0, k0 + TILE_K, kdim);
        v1 = fetch_lhs_quad(q1, row0, k0 + TILE_K, kdim);
        w0 = fetch_dict_nt(tid, col0, k0 + TILE_K, kdim);
        w1 = fetch_dict_nt(q1, col0, k0 + TILE_K, kdim);
        accumulate_slice(lid, &acc);
        workgroupBarrier();
    }
    return acc;
}

// A's quad for product_nn: A rows k0.. (row length p) over col0..col0+TILE_N.
fn fetch_dict_nn(q: u32, col0: u32, k0: u32, kdim: u32) -> vec4<f32> {
    let kn = q / TILE_N4;
    let nq = (q % TILE_N4) * 4u;
    var w = vec4<f32>(0.0);
    if (k0 + kn < kdim && col0 + nq < params.p) {
        w = dict_quad(((k0 + kn) * params.p + col0 + nq) / 4u);
    }
    return w;
}

// lhs (chains x K) . A with K = d, N = p: A is read along its rows (contiguous in n).
fn product_nn(wg: vec3<u32>, lid: vec3<u32>) -> array<f32, ACC> {
    let tid = lid.y * WG_X + lid.x;
    let row0 = wg.y * TILE_M;
    let col0 = wg.x * TILE_N;
    let kdim = params.d;
    var acc: array<f32, ACC>;
    let q1 = tid + INVOCATIONS;
    var v0 = fetch_lhs_quad(tid, row0, 0u, kdim);
    var v1 = fetch_lhs_quad(q1, row0, 0u, kdim);
    var w0 = fetch_dict_nn(tid, col0, 0u, kdim);
    var w1 = fetch_dict_nn(q1, col0, 0u, kdim);
    for (var k0 = 0u; k0 < kdim; k0 += TILE_K) {
        store_lhs_quad(tid, v0);
        store_lhs_quad(q1, v1);
        // Quad q is [kn][nq / 4] with kn = q / TILE_N4, nq / 4 = q % TILE_N4.
        tile_r[slot_r(tid / TILE_N4, tid % TILE_N4)] = w0;
        tile_r[slot_r(q1 / TILE_N4, q1 % TILE_N4)] = w1;
        workgroupBarrier();
        v0 = fetch_lhs_quad(tid, row0, k0 + TILE_K, kdim);
        v1 = fetch_lhs_quad(q1, row0, k0 + TILE_K, kdim);
        w0 = fetch_dict_nn(tid, col0, k0 + TILE_K, kdim);
        w1 = fetch_dict_nn(q1, col0, k0 + TILE_K, kdim);
        accumulate_slice(lid, &acc);
        workgroupBarrier();
    }
    return acc;
}

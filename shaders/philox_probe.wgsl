// Test probe of philox.wgsl: per case (counter, key, n) the raw block, its indices on 0..n and its
// normals, so the tests can compare the WGSL stream with the Rust one.

// Mirrored by `PhiloxProbeParams` in src/backend/gpu/kernels/philox_probe.rs.
struct PhiloxProbeParams {
    cases: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

@group(0) @binding(0) var<uniform> params: PhiloxProbeParams;

@group(0) @binding(1) var<storage, read> cases: array<u32>;      // 8 words: counter, key, n, pad
@group(0) @binding(2) var<storage, read_write> draws: array<u32>; // 12 words: raw, index, normal

@compute @workgroup_size(64)
fn philox_probe(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if (i >= params.cases) {
        return;
    }
    let b = i * 8u;
    let counter = vec4<u32>(cases[b], cases[b + 1u], cases[b + 2u], cases[b + 3u]);
    let key = vec2<u32>(cases[b + 4u], cases[b + 5u]);
    let n = cases[b + 6u];
    let w = philox4x32_10(counter, key);
    let normals = normals_from_block(w);
    for (var q = 0u; q < 4u; q++) {
        draws[i * 12u + q] = w[q];
        draws[i * 12u + 4u + q] = index_from_word(w[q], n);
        draws[i * 12u + 8u + q] = bitcast<u32>(normals[q]);
    }
}

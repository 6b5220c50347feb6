// The dictionary A (d x p, row-major) stored as f16 (`--precision f16`), a quad per two words
// (8 bytes), for matmul_vec4.wgsl: quad q (elements 4q..4q+3) widened to f32.
@group(0) @binding(1) var<storage, read> dict: array<vec2<u32>>;

fn dict_quad(q: u32) -> vec4<f32> {
    let w = dict[q];
    return vec4<f32>(unpack2x16float(w.x), unpack2x16float(w.y));
}

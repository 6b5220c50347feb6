// The dictionary A (d x p, row-major) as f32 quads, for matmul_vec4.wgsl: quad q (elements
// 4q..4q+3).
@group(0) @binding(1) var<storage, read> dict: array<vec4<f32>>;

fn dict_quad(q: u32) -> vec4<f32> {
    return dict[q];
}

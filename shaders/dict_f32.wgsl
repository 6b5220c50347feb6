// The dictionary A (d x p, row-major) as f32, for matmul_scalar.wgsl: element i.
@group(0) @binding(1) var<storage, read> dict: array<f32>;

fn dict_at(i: u32) -> f32 {
    return dict[i];
}

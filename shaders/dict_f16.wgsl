// The dictionary A (d x p, row-major) stored as f16 (`--precision f16`), two per word, element
// 2j in word j's low half (little-endian, as unpack2x16float reads it), for matmul_scalar.wgsl:
// element i widened to f32. unpack2x16float is core WGSL, so no device feature is needed; every
// product still multiplies and sums in f32.
@group(0) @binding(1) var<storage, read> dict: array<u32>;

fn dict_at(i: u32) -> f32 {
    return unpack2x16float(dict[i / 2u])[i % 2u];
}

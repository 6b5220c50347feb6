// The 64-wide workgroup tree sum shared by kernel_hmc.wgsl and tangent.wgsl (concatenated before
// them): WG invocations per workgroup, one f32 slot each.

const WG: u32 = 64u;

var<workgroup> reduce: array<f32, 64>;

// Sum over the workgroup by a tree. Every invocation calls it, in uniform control flow.
fn workgroup_sum(t: u32, v: f32) -> f32 {
    reduce[t] = v;
    workgroupBarrier();
    for (var half = WG / 2u; half > 0u; half >>= 1u) {
        if (t < half) {
            reduce[t] += reduce[t + half];
        }
        workgroupBarrier();
    }
    let result = reduce[0];
    workgroupBarrier();
    return result;
}

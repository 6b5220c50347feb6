// Twin of src/backend/cpu/gather.rs: per-chain minibatch means Ybar (chains x d), each chain
// drawing from its own rows (first, count) of the data (its class, or every row).
// A workgroup serves one chain and 64 columns: its 64 invocations draw 256 indices at a time (one
// Philox block each) into workgroup memory, then each sums its column over them in index order,
// as `Observations::batch_mean` does, so the sums round alike.

// Mirrored by `GatherParams` in src/backend/gpu/kernels/gather.rs.
struct GatherParams {
    stream: Stream,
    d: u32,
    batch: u32,         // minibatch size m
    step: u32,          // the step within the outer iteration, a counter word
    u8_data: u32,       // 1: data packed 4 bytes per word; 0: f32 bits
    gather_factor: f32, // scale / m, rounded on the host like the CPU
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

@group(0) @binding(0) var<uniform> params: GatherParams;

@group(0) @binding(1) var<storage, read> data: array<u32>; // u8 packed 4 per word, or f32 bits
@group(0) @binding(2) var<storage, read_write> ybar: array<f32>;
@group(0) @binding(3) var<storage, read> chain_rows: array<u32>; // (first, count) per global chain

var<workgroup> picks: array<u32, 256>;

fn raw_value(flat: u32) -> f32 {
    if (params.u8_data != 0u) {
        return f32((data[flat / 4u] >> ((flat % 4u) * 8u)) & 0xFFu);
    }
    return bitcast<f32>(data[flat]);
}

@compute @workgroup_size(64)
fn gather(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let chain = wg.y;
    let j = wg.x * 64u + lid.x;
    let global = params.stream.chain_offset + chain;
    let key = chain_key(params.stream, chain);
    let first = chain_rows[2u * global];
    let count = chain_rows[2u * global + 1u];
    var sum = 0.0;
    for (var base = 0u; base < params.batch; base += 256u) {
        let counter = vec4<u32>(base / 4u + lid.x, params.step, params.stream.outer, PURPOSE_MINIBATCH);
        let words = philox4x32_10(counter, key);
        for (var q = 0u; q < 4u; q++) {
            picks[lid.x * 4u + q] = first + index_from_word(words[q], count);
        }
        workgroupBarrier();
        let count = min(256u, params.batch - base);
        if (j < params.d) {
            for (var k = 0u; k < count; k++) {
                sum += raw_value(picks[k] * params.d + j);
            }
        }
        workgroupBarrier();
    }
    if (j < params.d) {
        ybar[chain * params.d + j] = sum * params.gather_factor;
    }
}

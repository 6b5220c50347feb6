// The wide GEMM tile (`GemmTile::Wide`, for GPUs): a 16 x 16 workgroup computes a 128 x 128
// output block in K-slices of 16 staged in workgroup memory (2 x 8 KiB); each invocation keeps an
// 8 x 8 register tile split in 4 x 4 quarters 64 apart: rows lid.y * 4 + i and 64 + lid.y * 4 + i,
// columns lid.x * 4 + j and 64 + lid.x * 4 + j. Per k an invocation reads two lhs quads and two
// dict quads (4 workgroup loads per 64 FMAs, 0.0625). Splitting the columns keeps the dict reads
// conflict-free: 8 consecutive lanes read 8 consecutive quads (one 128-byte phase), where two
// adjacent quads per lane would put lanes x and x + 4 in the same banks. A subgroup's lanes read
// two lhs quads per load (broadcast).

const TILE_M: u32 = 128u;
const TILE_N: u32 = 128u;
const TILE_K: u32 = 16u;
const TILE_M4: u32 = 32u; // TILE_M / 4: quads per staged lhs row
const TILE_N4: u32 = 32u; // TILE_N / 4: quads per staged dict row
const WG_X: u32 = 16u;
const WG_Y: u32 = 16u;
const INVOCATIONS: u32 = 256u; // WG_X * WG_Y
const REG_M: u32 = 8u; // register tile rows (chains)
const REG_N: u32 = 8u; // register tile columns
const ACC: u32 = 64u; // REG_M * REG_N

var<workgroup> tile_l: array<vec4<f32>, 512>; // [k][m / 4], quads permuted by slot_l
var<workgroup> tile_r: array<vec4<f32>, 512>; // [k][n / 4], quads permuted by slot_r

// Output row of register-tile row i.
fn tile_row(wg_y: u32, lid_y: u32, i: u32) -> u32 {
    return wg_y * TILE_M + (i / 4u) * 64u + lid_y * 4u + i % 4u;
}

// Output column of register-tile column j.
fn tile_col(wg_x: u32, lid_x: u32, j: u32) -> u32 {
    return wg_x * TILE_N + (j / 4u) * 64u + lid_x * 4u + j % 4u;
}

// The register tile after the K loop, given the staged slices: acc[i * REG_N + j].
fn accumulate_slice(lid: vec3<u32>, acc: ptr<function, array<f32, ACC>>) {
    for (var k = 0u; k < TILE_K; k++) {
        let a0 = tile_l[slot_l(k, lid.y)];
        let a1 = tile_l[slot_l(k, lid.y + 16u)];
        let b0 = tile_r[slot_r(k, lid.x)];
        let b1 = tile_r[slot_r(k, lid.x + 16u)];
        for (var i = 0u; i < 4u; i++) {
            for (var jj = 0u; jj < 4u; jj++) {
                (*acc)[i * 8u + jj] += a0[i] * b0[jj];
                (*acc)[i * 8u + jj + 4u] += a0[i] * b1[jj];
                (*acc)[(i + 4u) * 8u + jj] += a1[i] * b0[jj];
                (*acc)[(i + 4u) * 8u + jj + 4u] += a1[i] * b1[jj];
            }
        }
    }
}

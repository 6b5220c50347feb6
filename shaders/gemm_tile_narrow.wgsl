// The narrow GEMM tile (`GemmTile::Narrow`): a 16 x 8 workgroup computes a 64 x 64 output block
// (64 chains x 64 columns) in K-slices of 16 staged in workgroup memory (2 x 4 KiB); each
// invocation keeps an 8 x 4 register tile: rows lid.y * 8 + i, columns lid.x * 4 + j.
// Per k an invocation reads two lhs quads and one dict quad (3 workgroup loads per 32 FMAs,
// 0.094): a subgroup's 32 lanes read four lhs quads (broadcast) and 16 consecutive dict quads
// (conflict-free in every 8-lane phase of a 128-bit load). Fits wgpu's downlevel limits.

const TILE_M: u32 = 64u;
const TILE_N: u32 = 64u;
const TILE_K: u32 = 16u;
const TILE_M4: u32 = 16u; // TILE_M / 4: quads per staged lhs row
const TILE_N4: u32 = 16u; // TILE_N / 4: quads per staged dict row
const WG_X: u32 = 16u;
const WG_Y: u32 = 8u;
const INVOCATIONS: u32 = 128u; // WG_X * WG_Y
const REG_M: u32 = 8u; // register tile rows (chains)
const REG_N: u32 = 4u; // register tile columns
const ACC: u32 = 32u; // REG_M * REG_N

var<workgroup> tile_l: array<vec4<f32>, 256>; // [k][m / 4], quads permuted by slot_l
var<workgroup> tile_r: array<vec4<f32>, 256>; // [k][n / 4], quads permuted by slot_r

// Output row of register-tile row i.
fn tile_row(wg_y: u32, lid_y: u32, i: u32) -> u32 {
    return wg_y * TILE_M + lid_y * 8u + i;
}

// Output column of register-tile column j.
fn tile_col(wg_x: u32, lid_x: u32, j: u32) -> u32 {
    return wg_x * TILE_N + lid_x * 4u + j;
}

// The register tile after the K loop, given the staged slices: acc[i * REG_N + j].
fn accumulate_slice(lid: vec3<u32>, acc: ptr<function, array<f32, ACC>>) {
    for (var k = 0u; k < TILE_K; k++) {
        let a0 = tile_l[slot_l(k, lid.y * 2u)];
        let a1 = tile_l[slot_l(k, lid.y * 2u + 1u)];
        let b = tile_r[slot_r(k, lid.x)];
        for (var i = 0u; i < 4u; i++) {
            for (var jj = 0u; jj < 4u; jj++) {
                (*acc)[i * 4u + jj] += a0[i] * b[jj];
                (*acc)[(i + 4u) * 4u + jj] += a1[i] * b[jj];
            }
        }
    }
}

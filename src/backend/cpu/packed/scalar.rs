//! The scalar product kernel: `f32::mul_add` one output at a time, the same chain over k as the SIMD kernels, for any CPU.

use super::tile::{Tile, PANEL};

/// Runs the tile's rows against its panel, row by row.
///
/// # Safety
/// The tile passed [`Tile::check`] and its output rows are its own.
pub unsafe fn run(tile: &Tile) {
    let (k, cols) = (tile.k, tile.cols);
    let mut sums = [0f32; PANEL];
    for r in 0..tile.rows {
        let sums = &mut sums[..cols];
        sums.fill(0.0);
        for (kk, &b) in tile.x[r * k..(r + 1) * k].iter().enumerate() {
            let column = &tile.panel[kk * PANEL..kk * PANEL + cols];
            for (sum, &a) in sums.iter_mut().zip(column) {
                *sum = b.mul_add(a, *sum);
            }
        }
        tile.write(r, 0, sums);
    }
}

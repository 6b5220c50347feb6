//! One kernel call's operands: up to six rows of X (and Y) against one packed 64-column panel, and where their results go.

/// Output columns per panel: four 16-lane registers, eight 8-lane ones.
pub const PANEL: usize = 64;

/// Rows per kernel call: on AVX-512, 6 × 4 accumulators leave registers for the panel's four
/// and the broadcast; on AVX2, 6 × 2 leave the panel's two and the broadcast.
pub const KERNEL_ROWS: usize = 6;

/// `out`'s base pointer, shared by the tasks that write its disjoint blocks.
#[derive(Clone, Copy)]
pub struct OutPtr(pub *mut f32);

// SAFETY: every task writes only its own (rows, panel) block (`PackedOperand::product_on`).
unsafe impl Send for OutPtr {}
unsafe impl Sync for OutPtr {}

/// One kernel call: the tile's rows of X (`rows` of them, each k values) and of Y against one
/// panel (k × 64), written to `out` from (`row`, `column`), row stride `stride`, over the
/// panel's first `cols` columns.
pub struct Tile<'a> {
    /// The rows of X, row-major.
    pub x: &'a [f32],
    /// The panel: `panel[kk·64 + c]` = M[kk][column + c].
    pub panel: &'a [f32],
    /// Terms per output.
    pub k: usize,
    /// Rows.
    pub rows: usize,
    /// Y's rows (full width `stride`), subtracted after the sums.
    pub minus: Option<&'a [f32]>,
    /// Where row 0, column 0 of the whole output lies.
    pub out: OutPtr,
    /// The tile's first output row.
    pub row: usize,
    /// The panel's first output column.
    pub column: usize,
    /// Output row stride (n).
    pub stride: usize,
    /// The panel's columns within n.
    pub cols: usize,
}

impl Tile<'_> {
    /// Checks the bounds the kernels read within through raw pointers.
    pub fn check(&self) {
        assert!(
            (1..=KERNEL_ROWS).contains(&self.rows)
                && self.x.len() == self.rows * self.k
                && self.panel.len() == self.k * PANEL
                && self.cols <= PANEL
                && self.column + self.cols <= self.stride,
            "packed tile: {} rows of {} values against a panel of {} for {} columns",
            self.rows,
            self.x.len(),
            self.panel.len(),
            self.cols
        );
    }

    /// Writes row `r`'s sums for the panel's columns `from..from + sums.len()` (those below
    /// `cols`), minus Y where the product subtracts it.
    ///
    /// # Safety
    /// `out` holds row `row + r` of `stride` values, which no other task writes.
    pub unsafe fn write(&self, r: usize, from: usize, sums: &[f32]) {
        let count = self.cols.saturating_sub(from).min(sums.len());
        if count == 0 {
            return;
        }
        let at = (self.row + r) * self.stride + self.column + from;
        let out = std::slice::from_raw_parts_mut(self.out.0.add(at), count);
        let sums = &sums[..count];
        match self.minus {
            Some(y) => {
                let y = &y[r * self.stride + self.column + from..][..count];
                out.iter_mut()
                    .zip(sums.iter().zip(y))
                    .for_each(|(o, (s, y))| *o = s - y);
            }
            None => out.copy_from_slice(sums),
        }
    }
}

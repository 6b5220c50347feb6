//! Image grids as grayscale PNG: tiles in rows, sections split by a grey band, written atomically.

use std::io::Cursor;
use std::path::Path;

use image::{GrayImage, ImageFormat, Luma};

use super::atomic::write_atomic;
use crate::{Error, Result};

/// Colour of the 1-pixel gaps and border around tiles: dark enough not to read as ink, light
/// enough to separate black-background tiles.
const GAP: u8 = 48;
/// Colour of the band separating sections.
const SEPARATOR: u8 = 128;
/// Thickness of the separator band, in output pixels.
const SEPARATOR_THICKNESS: usize = 3;
/// Largest picture we agree to make, in pixels (the PNG encoder needs it all in memory).
const MAX_PIXELS: usize = 1 << 28;

/// Writes a grid of `height × width` grayscale images as a PNG, atomically.
///
/// `sections` are `(images, n)` pairs, `images` holding `n` images of `height * width` values
/// row-major. Each non-empty section starts a new row of the grid, at most `columns` tiles per
/// row, and sections are separated by a mid-grey band. Values are mapped linearly from
/// `value_range` to 0..=255 and clipped (NaN shows as 0, the black background), and every pixel
/// becomes an `upscale × upscale` block.
pub fn write_png_grid(
    path: &Path,
    sections: &[(&[f32], usize)],
    height: usize,
    width: usize,
    columns: usize,
    value_range: (f32, f32),
    upscale: usize,
) -> Result<()> {
    let img = grid_image(sections, height, width, columns, value_range, upscale)?;
    write_png(path, &img)
}

/// [`write_png_grid`] with `caption` (what the picture shows) written above the grid in a black
/// strip: white capitals of a built-in 5 × 7 font, wrapped to the picture's width.
#[allow(clippy::too_many_arguments)]
pub fn write_png_grid_captioned(
    path: &Path,
    sections: &[(&[f32], usize)],
    height: usize,
    width: usize,
    columns: usize,
    value_range: (f32, f32),
    upscale: usize,
    caption: &str,
) -> Result<()> {
    let grid = grid_image(sections, height, width, columns, value_range, upscale)?;
    let strip = super::caption::caption_strip(caption, grid.width() as usize);
    let total = grid.height() as usize + strip.height() as usize;
    if (grid.width() as usize).saturating_mul(total) > MAX_PIXELS {
        return Err(Error::usage(
            "png grid",
            format!("a {}×{total} picture is too large", grid.width()),
        ));
    }
    let mut img = GrayImage::new(grid.width(), total as u32);
    image::imageops::replace(&mut img, &strip, 0, 0);
    image::imageops::replace(&mut img, &grid, 0, strip.height() as i64);
    write_png(path, &img)
}

/// Encodes `img` as PNG and writes it atomically.
fn write_png(path: &Path, img: &GrayImage) -> Result<()> {
    let mut encoded = Cursor::new(Vec::new());
    img.write_to(&mut encoded, ImageFormat::Png)
        .map_err(|e| Error::Internal(format!("PNG encoding failed: {e}")))?;
    write_atomic(path, |w| w.write_all(encoded.get_ref()))
}

/// The grid of [`write_png_grid`] as an image.
fn grid_image(
    sections: &[(&[f32], usize)],
    height: usize,
    width: usize,
    columns: usize,
    value_range: (f32, f32),
    upscale: usize,
) -> Result<GrayImage> {
    let (lo, hi) = value_range;
    if !(lo.is_finite() && hi.is_finite() && lo < hi) {
        return Err(Error::usage(
            "value_range",
            format!("need finite lo < hi, got ({lo}, {hi})"),
        ));
    }
    if height == 0 || width == 0 || columns == 0 || upscale == 0 {
        return Err(Error::usage(
            "png grid",
            format!("height {height}, width {width}, columns {columns}, upscale {upscale} must all be positive"),
        ));
    }
    let Some(d) = height.checked_mul(width) else {
        return Err(Error::usage(
            "png grid",
            format!("{height}×{width} images are too large"),
        ));
    };
    for (i, &(data, n)) in sections.iter().enumerate() {
        if Some(data.len()) != n.checked_mul(d) {
            return Err(Error::Internal(format!(
                "png grid section {i}: {} values are not {n} images of {height}×{width}",
                data.len()
            )));
        }
    }
    let sections: Vec<(&[f32], usize)> = sections.iter().copied().filter(|&(_, n)| n > 0).collect();
    let Some(widest) = sections.iter().map(|&(_, n)| n).max() else {
        return Err(Error::usage("png grid", "there are no images to draw"));
    };
    let cols = columns.min(widest);
    // Saturating sizes: absurd settings end in the "too large" error below, not an overflow.
    let tile_h = height.saturating_mul(upscale);
    let tile_w = width.saturating_mul(upscale);
    let section_h = |n: usize| {
        n.div_ceil(cols)
            .saturating_mul(tile_h.saturating_add(1))
            .saturating_add(1)
    };
    let total_w = cols
        .saturating_mul(tile_w.saturating_add(1))
        .saturating_add(1);
    let total_h = sections
        .iter()
        .fold(0usize, |acc, &(_, n)| acc.saturating_add(section_h(n)))
        .saturating_add((sections.len() - 1) * SEPARATOR_THICKNESS);
    let too_big = total_w.checked_mul(total_h).is_none_or(|p| p > MAX_PIXELS);
    if too_big || u32::try_from(total_w).is_err() || u32::try_from(total_h).is_err() {
        return Err(Error::usage(
            "png grid",
            format!("a {total_w}×{total_h} picture is too large"),
        ));
    }
    let mut img = GrayImage::from_pixel(total_w as u32, total_h as u32, Luma([GAP]));
    let scale = 255.0 / (hi - lo);
    let mut top = 0;
    for (s, &(data, n)) in sections.iter().enumerate() {
        if s > 0 {
            for y in top..top + SEPARATOR_THICKNESS {
                for x in 0..total_w {
                    img.put_pixel(x as u32, y as u32, Luma([SEPARATOR]));
                }
            }
            top += SEPARATOR_THICKNESS;
        }
        for (k, image) in data.chunks_exact(d).take(n).enumerate() {
            let y0 = top + 1 + (k / cols) * (tile_h + 1);
            let x0 = 1 + (k % cols) * (tile_w + 1);
            for (p, &v) in image.iter().enumerate() {
                // `as u8` saturates and maps NaN to 0.
                let level = Luma([((v - lo) * scale).round().clamp(0.0, 255.0) as u8]);
                let (py, px) = (y0 + (p / width) * upscale, x0 + (p % width) * upscale);
                for y in py..py + upscale {
                    for x in px..px + upscale {
                        img.put_pixel(x as u32, y as u32, level);
                    }
                }
            }
        }
        top += section_h(n);
    }
    Ok(img)
}

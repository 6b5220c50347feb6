//! Post-processing of generated images A X into 8-bit pixels: Gaussian smoothing, soft-thresholding, rescaling.

use serde::{Deserialize, Serialize};

use crate::math::Portable;
use crate::{Error, Result};

/// How generated images become 8-bit pixels; the same for every method (the paper filters every
/// generated image with the same Gaussian smoother and rescales it to 0..255).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct PostProcess {
    /// Standard deviation of the Gaussian smoother in pixels; 0 turns it off.
    pub smooth: f32,
    /// Soft-threshold τ on the 0..255 scale after smoothing (v ← sign(v)·max(|v| − τ, 0)); 0 off.
    pub soft_threshold: f32,
    /// Clip to 0..255, or stretch each image so its brightest pixel is 255 (after clipping
    /// negatives).
    pub rescale: Rescale,
}

/// The final mapping to 0..255.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum Rescale {
    /// Clip to 0..255.
    Clip,
    /// Clip negatives, then scale each image so its maximum is 255.
    Stretch,
}

/// The widest Gaussian smoothing accepted, standard deviation in pixels.
pub const MAX_SMOOTH: f32 = 1000.0;

impl PostProcess {
    /// Checks the settings.
    pub fn validate(&self) -> Result<()> {
        // The kernel has 6σ + 1 taps: past a thousand pixels it is wider than any image and
        // costs time and memory for nothing (`smooth` 1e30 asked for billions of taps).
        if !(self.smooth.is_finite() && (0.0..=MAX_SMOOTH).contains(&self.smooth)) {
            return Err(Error::usage(
                "smooth",
                format!(
                    "must be a number of pixels from 0 to {MAX_SMOOTH}, got {}",
                    self.smooth
                ),
            ));
        }
        if !(self.soft_threshold.is_finite() && self.soft_threshold >= 0.0) {
            return Err(Error::usage(
                "soft_threshold",
                format!(
                    "must be a non-negative value on the 0..255 scale, got {}",
                    self.soft_threshold
                ),
            ));
        }
        Ok(())
    }

    /// Images (rows of height × width, model units where `full_scale` is a full-intensity pixel)
    /// as 8-bit pixels.
    pub fn to_pixels(
        self,
        images: &[f32],
        height: usize,
        width: usize,
        full_scale: f32,
    ) -> Vec<u8> {
        self.to_pixels_sharp(images, (height, width), full_scale, &[])
    }

    /// As [`to_pixels`](Self::to_pixels), but the rows `sharp` marks true are not smoothed
    /// (interpolants between originals: blends of real images, with no sampler's speckle to
    /// smooth away); rows past `sharp`'s end are.
    pub fn to_pixels_sharp(
        self,
        images: &[f32],
        (height, width): (usize, usize),
        full_scale: f32,
        sharp: &[bool],
    ) -> Vec<u8> {
        let d = height * width;
        let kernel = gaussian_kernel(self.smooth);
        let mut out = Vec::with_capacity(images.len());
        let mut row = vec![0f32; d];
        let mut scratch = vec![0f32; d];
        for (i, image) in images.chunks(d.max(1)).enumerate() {
            for (r, &v) in row.iter_mut().zip(image) {
                *r = v * 255.0 / full_scale;
            }
            if kernel.len() > 1 && !sharp.get(i).copied().unwrap_or(false) {
                smooth_separable(&mut row, &mut scratch, height, width, &kernel);
            }
            if self.soft_threshold > 0.0 {
                let t = self.soft_threshold;
                row.iter_mut()
                    .for_each(|v| *v = v.signum() * (v.abs() - t).max(0.0));
            }
            let gain = match self.rescale {
                Rescale::Clip => 1.0,
                Rescale::Stretch => {
                    let max = row.iter().copied().fold(0f32, f32::max);
                    if max > 0.0 {
                        255.0 / max
                    } else {
                        1.0
                    }
                }
            };
            // NaN maps to 0 (`as u8` saturates and sends NaN to 0).
            out.extend(
                row.iter()
                    .map(|&v| (v * gain).round().clamp(0.0, 255.0) as u8),
            );
        }
        out
    }
}

/// The normalised 1-D Gaussian of standard deviation `sigma`, truncated at 3σ; `[1]` when off.
pub fn gaussian_kernel(sigma: f32) -> Vec<f32> {
    if sigma <= 0.0 {
        return vec![1.0];
    }
    let radius = (3.0 * sigma).ceil() as i32;
    let weights: Vec<f32> = (-radius..=radius)
        .map(|i| (-(i * i) as f32 / (2.0 * sigma * sigma)).exp_portable())
        .collect();
    let total: f32 = weights.iter().sum();
    weights.iter().map(|w| w / total).collect()
}

/// Convolves rows then columns with `kernel`, renormalising where it passes the border (so a
/// constant image stays constant).
fn smooth_separable(
    image: &mut [f32],
    scratch: &mut [f32],
    height: usize,
    width: usize,
    kernel: &[f32],
) {
    let radius = (kernel.len() / 2) as isize;
    let pass = |src: &[f32], dst: &mut [f32], along_rows: bool| {
        for y in 0..height {
            for x in 0..width {
                let (mut sum, mut weight) = (0f32, 0f32);
                for (k, &w) in kernel.iter().enumerate() {
                    let offset = k as isize - radius;
                    let (yy, xx) = if along_rows {
                        (y as isize, x as isize + offset)
                    } else {
                        (y as isize + offset, x as isize)
                    };
                    if yy < 0 || xx < 0 || yy >= height as isize || xx >= width as isize {
                        continue;
                    }
                    sum += w * src[yy as usize * width + xx as usize];
                    weight += w;
                }
                dst[y * width + x] = sum / weight;
            }
        }
    };
    pass(image, scratch, true);
    pass(scratch, image, false);
}

/// `Rescale` as it serialises ("clip", "stretch").
pub(crate) fn deserialize_rescale<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> std::result::Result<Rescale, D::Error> {
    let name = String::deserialize(deserializer)?;
    [Rescale::Clip, Rescale::Stretch]
        .into_iter()
        .find(|r| {
            serde_json::to_value(r)
                .ok()
                .and_then(|v| v.as_str().map(|s| s == name))
                == Some(true)
        })
        .ok_or_else(|| {
            serde::de::Error::custom(format!(
                "unknown rescale {name:?}: expected clip or stretch"
            ))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain() -> PostProcess {
        PostProcess {
            smooth: 0.0,
            soft_threshold: 0.0,
            rescale: Rescale::Clip,
        }
    }

    #[test]
    fn rescales_and_clips() {
        let px = plain().to_pixels(&[0.0, 0.5, 1.0, 2.0, -1.0, f32::NAN], 1, 6, 1.0);
        assert_eq!(px, vec![0, 128, 255, 255, 0, 0]);
    }

    #[test]
    fn smoothing_keeps_constants_and_spreads_a_point() {
        let p = PostProcess {
            smooth: 1.0,
            ..plain()
        };
        assert_eq!(p.to_pixels(&[100.0; 25], 5, 5, 255.0), vec![100; 25]);
        // A row marked sharp keeps its point; the next row is smoothed.
        let mut two = vec![0.0; 50];
        two[12] = 255.0;
        two[37] = 255.0;
        let px = p.to_pixels_sharp(&two, (5, 5), 255.0, &[true]);
        assert_eq!(px[12], 255);
        assert_eq!(px[..25].iter().filter(|&&v| v > 0).count(), 1);
        assert!(px[37] < 255 && px[25 + 11] > 0, "{:?}", &px[25..]);
        let mut point = vec![0f32; 25];
        point[12] = 255.0;
        let px = p.to_pixels(&point, 5, 5, 255.0);
        // The centre keeps the largest share, neighbours get equal shares by symmetry.
        assert!(px[12] > px[7] && px[7] > 0);
        assert_eq!(px[7], px[11]);
        assert_eq!(px[7], px[13]);
        assert_eq!(px[7], px[17]);
        let k = gaussian_kernel(1.0);
        assert_eq!(k.len(), 7);
        assert!((k.iter().sum::<f32>() - 1.0).abs() < 1e-6);
    }

    #[test]
    fn soft_threshold_and_stretch() {
        let p = PostProcess {
            soft_threshold: 10.0,
            rescale: Rescale::Stretch,
            ..plain()
        };
        // 5 → 0, 60 → 50, 110 → 100 → stretched so 100 maps to 255.
        assert_eq!(
            p.to_pixels(&[5.0, 60.0, 110.0], 1, 3, 255.0),
            vec![0, 128, 255]
        );
        assert!(PostProcess {
            smooth: -1.0,
            ..plain()
        }
        .validate()
        .is_err());
        assert!(PostProcess {
            soft_threshold: f32::NAN,
            ..plain()
        }
        .validate()
        .is_err());
    }
}

//! Split-R̂ and bulk/tail ESS in the rank-normalised form of Vehtari et al. (2021), and Geweke's z.
//!
//! Draws are given per chain (`chains[c][k]`, all chains of equal length). Autocovariances are
//! computed directly, lag by lag, only as far as Geyer's initial sequence reaches.

use crate::math::Portable;

/// Mean of a slice.
fn mean(x: &[f64]) -> f64 {
    x.iter().sum::<f64>() / x.len().max(1) as f64
}

/// Biased autocovariance of `x` at lag `t` (divided by n), about `m`.
fn autocovariance(x: &[f64], m: f64, t: usize) -> f64 {
    let n = x.len();
    (0..n - t).map(|i| (x[i] - m) * (x[i + t] - m)).sum::<f64>() / n as f64
}

/// Each chain cut in two halves (the first half drops the middle draw when the length is odd).
pub fn split_chains(chains: &[Vec<f64>]) -> Vec<Vec<f64>> {
    let mut out = Vec::with_capacity(2 * chains.len());
    for c in chains {
        let half = c.len() / 2;
        out.push(c[..half].to_vec());
        out.push(c[c.len() - half..].to_vec());
    }
    out
}

/// Effective sample size of `chains` as they are (no splitting, no ranks): Stan's estimator with
/// the multi-chain autocorrelation ρ_t = 1 − (W − mean_c acov_c(t))/var⁺, Geyer's initial
/// positive sequence made monotone, and τ bounded below by 1/log10(M·N). None for fewer than
/// 4 draws per chain or a constant quantity.
pub fn ess_basic(chains: &[Vec<f64>]) -> Option<f64> {
    let m = chains.len();
    let n = chains.iter().map(|c| c.len()).min()?;
    if m == 0 || n < 4 {
        return None;
    }
    let means: Vec<f64> = chains.iter().map(|c| mean(&c[..n])).collect();
    let acov = |t: usize| -> f64 {
        chains
            .iter()
            .zip(&means)
            .map(|(c, &mu)| autocovariance(&c[..n], mu, t))
            .sum::<f64>()
            / m as f64
    };
    let acov0 = acov(0);
    let within = acov0 * n as f64 / (n as f64 - 1.0);
    let between = if m > 1 {
        let grand = mean(&means);
        means.iter().map(|v| (v - grand).powi(2)).sum::<f64>() / (m as f64 - 1.0)
    } else {
        0.0
    };
    let var_plus = within * (n as f64 - 1.0) / n as f64 + between;
    if var_plus.is_nan() || var_plus <= 0.0 || !var_plus.is_finite() {
        return None;
    }
    let rho = |t: usize| 1.0 - (within - acov(t)) / var_plus;
    // ArviZ's `_ess` (arviz.stats.diagnostics) step for step, so that `arviz.summary` of the
    // same draws gives the same ESS: Geyer's initial positive sequence over lag pairs while
    // t < n − 3, the last pair's even term added when positive, then the monotone sequence.
    let mut rho_hat = vec![0.0; n];
    rho_hat[0] = 1.0;
    let (mut even, mut odd) = (1.0, rho(1));
    rho_hat[1] = odd;
    let mut t = 1;
    while t + 3 < n && even + odd > 0.0 {
        even = rho(t + 1);
        odd = rho(t + 2);
        if even + odd >= 0.0 {
            rho_hat[t + 1] = even;
            rho_hat[t + 2] = odd;
        }
        t += 2;
    }
    // max_t = t − 2, which is −1 when the loop never ran (n = 4).
    let max_t = t as isize - 2;
    let last = (max_t + 1) as usize;
    if even > 0.0 {
        rho_hat[last] = even;
    }
    let mut t = 1;
    while (t as isize) <= max_t - 2 {
        let previous = rho_hat[t - 1] + rho_hat[t];
        if rho_hat[t + 1] + rho_hat[t + 2] > previous {
            rho_hat[t + 1] = previous / 2.0;
            rho_hat[t + 2] = previous / 2.0;
        }
        t += 2;
    }
    let draws = (m * n) as f64;
    let tau = (-1.0 + 2.0 * rho_hat[..last].iter().sum::<f64>() + rho_hat[last])
        .max(1.0 / draws.log10_portable());
    Some(draws / tau)
}

/// Φ⁻¹(p) for p in (0, 1): Acklam's rational approximation refined by one Halley step.
pub fn normal_quantile(p: f64) -> f64 {
    const A: [f64; 6] = [
        -3.969683028665376e1,
        2.209460984245205e2,
        -2.759285104469687e2,
        1.383_577_518_672_69e2,
        -3.066479806614716e1,
        2.506628277459239,
    ];
    const B: [f64; 5] = [
        -5.447609879822406e1,
        1.615858368580409e2,
        -1.556989798598866e2,
        6.680131188771972e1,
        -1.328068155288572e1,
    ];
    const C: [f64; 6] = [
        -7.784894002430293e-3,
        -3.223964580411365e-1,
        -2.400758277161838,
        -2.549732539343734,
        4.374664141464968,
        2.938163982698783,
    ];
    const D: [f64; 4] = [
        7.784695709041462e-3,
        3.224671290700398e-1,
        2.445134137142996,
        3.754408661907416,
    ];
    let low = 0.02425;
    let x = if p < low {
        let q = (-2.0 * p.ln_portable()).sqrt();
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    } else if p <= 1.0 - low {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    } else {
        let q = (-2.0 * (1.0 - p).ln_portable()).sqrt();
        -(((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    };
    let e = 0.5 * super::reference::erfc(-x / std::f64::consts::SQRT_2) - p;
    let u = e * (2.0 * std::f64::consts::PI).sqrt() * (x * x / 2.0).exp_portable();
    x - u / (1.0 + x * u / 2.0)
}

/// Rank normalisation: every draw replaced by Φ⁻¹((r − 3/8)/(S + 1/4)), r its rank among all S
/// draws of all chains (ties get their average rank).
pub fn rank_normalise(chains: &[Vec<f64>]) -> Vec<Vec<f64>> {
    let mut all: Vec<(f64, usize, usize)> = chains
        .iter()
        .enumerate()
        .flat_map(|(c, v)| v.iter().enumerate().map(move |(k, &x)| (x, c, k)))
        .collect();
    all.sort_by(|a, b| a.0.total_cmp(&b.0));
    let s = all.len() as f64;
    let mut out: Vec<Vec<f64>> = chains.iter().map(|c| vec![0.0; c.len()]).collect();
    let mut i = 0;
    while i < all.len() {
        let mut j = i;
        while j + 1 < all.len() && all[j + 1].0 == all[i].0 {
            j += 1;
        }
        let rank = (i + j) as f64 / 2.0 + 1.0;
        let z = normal_quantile((rank - 0.375) / (s + 0.25));
        for item in &all[i..=j] {
            out[item.1][item.2] = z;
        }
        i = j + 1;
    }
    out
}

/// R̂ of chains as they are: sqrt(var⁺/W).
fn rhat_basic(chains: &[Vec<f64>]) -> Option<f64> {
    let m = chains.len();
    let n = chains.iter().map(|c| c.len()).min()?;
    if m < 2 || n < 2 {
        return None;
    }
    let means: Vec<f64> = chains.iter().map(|c| mean(&c[..n])).collect();
    let within = chains
        .iter()
        .zip(&means)
        .map(|(c, &mu)| c[..n].iter().map(|v| (v - mu).powi(2)).sum::<f64>() / (n as f64 - 1.0))
        .sum::<f64>()
        / m as f64;
    let grand = mean(&means);
    let between_n = means.iter().map(|v| (v - grand).powi(2)).sum::<f64>() / (m as f64 - 1.0);
    let var_plus = within * (n as f64 - 1.0) / n as f64 + between_n;
    (within > 0.0).then(|| (var_plus / within).sqrt())
}

fn median(x: &mut [f64]) -> f64 {
    x.sort_by(f64::total_cmp);
    let n = x.len();
    if n % 2 == 1 {
        x[n / 2]
    } else {
        0.5 * (x[n / 2 - 1] + x[n / 2])
    }
}

/// Rank-normalised split-R̂: the larger of the bulk R̂ (ranks of the split chains) and the tail
/// R̂ (ranks of the folded draws |x − median|). Near 1 when chains agree; > 1.01 is a warning.
pub fn split_rhat(chains: &[Vec<f64>]) -> Option<f64> {
    bulk_and_tail(&split_chains(chains), rhat_basic)
}

/// The larger of `rhat` on the rank-normalised chains (bulk) and on the rank-normalised folded
/// draws |x − median| (tail); the bulk value alone when the tail has none.
fn bulk_and_tail(split: &[Vec<f64>], rhat: impl Fn(&[Vec<f64>]) -> Option<f64>) -> Option<f64> {
    let bulk = rhat(&rank_normalise(split))?;
    let mut pooled: Vec<f64> = split.iter().flatten().copied().collect();
    let med = median(&mut pooled);
    let folded: Vec<Vec<f64>> = split
        .iter()
        .map(|c| c.iter().map(|v| (v - med).abs()).collect())
        .collect();
    let tail = rhat(&rank_normalise(&folded)).unwrap_or(bulk);
    Some(bulk.max(tail))
}

/// Nested R̂ (Margossian et al. 2024) for many short chains grouped in superchains (chains
/// started alike: from the same image, or the same class): `superchains[c]` is chain c's group,
/// every group the same size. Rank-normalised and split like `split_rhat` (the larger of the
/// bulk and the folded tail value), as arviz-stats' `rhat_nested` computes it; near 1 when the
/// superchains agree. None for fewer than 2 superchains, 4 draws, or unequal groups.
pub fn nested_rhat(chains: &[Vec<f64>], superchains: &[usize]) -> Option<f64> {
    let n = chains.iter().map(|c| c.len()).min()?;
    if chains.len() != superchains.len() || n < 4 || chains.iter().any(|c| c.len() != n) {
        return None;
    }
    // split_chains puts each chain's two halves next to each other; both keep its superchain.
    let ids: Vec<usize> = superchains.iter().flat_map(|&k| [k, k]).collect();
    bulk_and_tail(&split_chains(chains), |c| nested_basic(c, &ids))
}

/// Equations 4-8 of Margossian et al. (2024) on chains as they are: sqrt(1 + B̂_ν / Ŵ_ν), with
/// Ŵ_ν the mean over superchains of (mean within-chain variance + between-chain variance).
fn nested_basic(chains: &[Vec<f64>], ids: &[usize]) -> Option<f64> {
    let mut groups: Vec<usize> = ids.to_vec();
    groups.sort_unstable();
    groups.dedup();
    let size = ids.iter().filter(|&&k| k == groups[0]).count();
    if groups.len() < 2
        || groups
            .iter()
            .any(|&g| ids.iter().filter(|&&k| k == g).count() != size)
    {
        return None;
    }
    let n = chains[0].len();
    let chain_mean: Vec<f64> = chains.iter().map(|c| mean(c)).collect();
    let chain_var: Vec<f64> = chains
        .iter()
        .zip(&chain_mean)
        .map(|(c, &mu)| {
            if n > 1 {
                c.iter().map(|v| (v - mu).powi(2)).sum::<f64>() / (n as f64 - 1.0)
            } else {
                0.0
            }
        })
        .collect();
    let sample_var = |values: &[f64]| {
        let mu = mean(values);
        values.iter().map(|v| (v - mu).powi(2)).sum::<f64>() / (values.len() as f64 - 1.0)
    };
    let mut superchain_mean = Vec::with_capacity(groups.len());
    let mut within = 0.0;
    for &g in &groups {
        let members: Vec<usize> = (0..chains.len()).filter(|&c| ids[c] == g).collect();
        let means: Vec<f64> = members.iter().map(|&c| chain_mean[c]).collect();
        superchain_mean.push(mean(&means));
        let between_chains = if size > 1 { sample_var(&means) } else { 0.0 };
        let within_chains = mean(&members.iter().map(|&c| chain_var[c]).collect::<Vec<_>>());
        within += within_chains + between_chains;
    }
    within /= groups.len() as f64;
    let between = sample_var(&superchain_mean);
    (within > 0.0).then(|| (1.0 + between / within).sqrt())
}

/// Monte Carlo standard error of the mean: the draws' standard deviation over the square root
/// of the ESS of the split chains (ArviZ's `mcse(method="mean")`).
pub fn mcse_mean(chains: &[Vec<f64>]) -> Option<f64> {
    let all: Vec<f64> = chains.iter().flatten().copied().collect();
    if all.len() < 2 {
        return None;
    }
    let mu = mean(&all);
    let sd = (all.iter().map(|v| (v - mu).powi(2)).sum::<f64>() / (all.len() as f64 - 1.0)).sqrt();
    let ess = ess_basic(&split_chains(chains))?;
    Some(sd / ess.sqrt())
}

/// Bulk ESS: the ESS of the rank-normalised split chains.
pub fn ess_bulk(chains: &[Vec<f64>]) -> Option<f64> {
    ess_basic(&rank_normalise(&split_chains(chains)))
}

/// Tail ESS: the smaller ESS of the indicators x ≤ q5% and x ≤ q95% on the split chains, the
/// quantiles of all draws interpolated linearly (R's type 7, as ArviZ computes them).
pub fn ess_tail(chains: &[Vec<f64>]) -> Option<f64> {
    let mut pooled: Vec<f64> = chains.iter().flatten().copied().collect();
    pooled.sort_by(f64::total_cmp);
    if pooled.is_empty() {
        return None;
    }
    let quantile = |q: f64| {
        let h = q * (pooled.len() - 1) as f64;
        let low = h.floor() as usize;
        let high = (low + 1).min(pooled.len() - 1);
        pooled[low] + (h - low as f64) * (pooled[high] - pooled[low])
    };
    [quantile(0.05), quantile(0.95)]
        .iter()
        .filter_map(|&cut| {
            let indicators: Vec<Vec<f64>> = chains
                .iter()
                .map(|c| c.iter().map(|&v| (v <= cut) as u8 as f64).collect())
                .collect();
            ess_basic(&split_chains(&indicators))
        })
        .min_by(f64::total_cmp)
}

/// Geweke's z for one chain: the means of the first 10% and the last 50% of the draws, each
/// variance of the mean estimated as var/ESS (the spectral density at 0 by the initial monotone
/// sequence). None when a part has fewer than 4 draws or no variance.
pub fn geweke_z(chain: &[f64]) -> Option<f64> {
    let n = chain.len();
    let first = &chain[..n / 10];
    let last = &chain[n - n / 2..];
    let part = |x: &[f64]| -> Option<(f64, f64)> {
        let ess = ess_basic(&[x.to_vec()])?;
        let m = mean(x);
        let var = x.iter().map(|v| (v - m).powi(2)).sum::<f64>() / (x.len() as f64 - 1.0);
        Some((m, var / ess))
    };
    let (ma, va) = part(first)?;
    let (mb, vb) = part(last)?;
    let z = (ma - mb) / (va + vb).sqrt();
    z.is_finite().then_some(z)
}

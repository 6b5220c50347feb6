//! Which kernels take the CPU's products (`RMLD_CPU_PATH`): AVX-512, AVX2 or scalar, all in one summation order.
//!
//! Every path sums each output as one fused multiply-add chain over k from zero, so the choice
//! changes the speed and never the bits. By default the widest path the CPU has runs;
//! `RMLD_CPU_PATH` forces one, to check that claim on one machine.

use crate::{Error, Result};

/// The environment variable that forces a path: `avx512`, `avx2`, `scalar` or `auto`.
pub const CPU_PATH_VARIABLE: &str = "RMLD_CPU_PATH";

/// A set of product kernels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CpuPath {
    /// 16-lane fused multiply-adds (AVX-512F).
    Avx512,
    /// 8-lane fused multiply-adds (AVX2 and FMA).
    Avx2,
    /// `f32::mul_add` one output at a time: any CPU.
    Scalar,
}

impl CpuPath {
    /// Every path, widest first.
    pub const ALL: [CpuPath; 3] = [CpuPath::Avx512, CpuPath::Avx2, CpuPath::Scalar];

    /// The name `RMLD_CPU_PATH` takes and reports show.
    pub fn name(self) -> &'static str {
        match self {
            CpuPath::Avx512 => "avx512",
            CpuPath::Avx2 => "avx2",
            CpuPath::Scalar => "scalar",
        }
    }

    /// Whether this CPU can run the path's kernels.
    pub fn supported(self) -> bool {
        match self {
            #[cfg(target_arch = "x86_64")]
            CpuPath::Avx512 => std::arch::is_x86_feature_detected!("avx512f"),
            #[cfg(target_arch = "x86_64")]
            CpuPath::Avx2 => {
                std::arch::is_x86_feature_detected!("avx2")
                    && std::arch::is_x86_feature_detected!("fma")
            }
            #[cfg(not(target_arch = "x86_64"))]
            CpuPath::Avx512 | CpuPath::Avx2 => false,
            CpuPath::Scalar => true,
        }
    }

    /// The widest path this CPU can run.
    pub fn best() -> CpuPath {
        Self::ALL
            .into_iter()
            .find(|path| path.supported())
            .unwrap_or(CpuPath::Scalar)
    }

    /// The path `value` (`RMLD_CPU_PATH`'s value, None when unset) asks for: the best one for
    /// None, "" and "auto"; an unknown name, or a path this CPU cannot run, is refused naming
    /// the variable.
    pub fn asked(value: Option<&str>) -> Result<CpuPath> {
        let value = match value {
            None | Some("") | Some("auto") => return Ok(Self::best()),
            Some(value) => value,
        };
        let refuse = |message: String| Error::Usage {
            field: CPU_PATH_VARIABLE,
            message,
        };
        let Some(path) = Self::ALL.into_iter().find(|path| path.name() == value) else {
            return Err(refuse(format!(
                "expected avx512, avx2, scalar or auto, found {value:?}"
            )));
        };
        if !path.supported() {
            let needs = match path {
                CpuPath::Avx512 => "AVX-512F",
                CpuPath::Avx2 => "AVX2 and FMA",
                CpuPath::Scalar => "nothing",
            };
            return Err(refuse(format!(
                "{value} needs {needs}, which this CPU lacks (it runs {})",
                Self::available_names()
            )));
        }
        Ok(path)
    }

    /// The paths this CPU runs, e.g. "avx2, scalar".
    fn available_names() -> String {
        let names: Vec<&str> = Self::ALL
            .into_iter()
            .filter(|path| path.supported())
            .map(CpuPath::name)
            .collect();
        names.join(", ")
    }

    /// The path this process runs: `RMLD_CPU_PATH`'s, read once; its error when it names an
    /// unknown path or one this CPU lacks (the CPU backend refuses to start on it).
    pub fn selected() -> Result<CpuPath> {
        static SELECTED: std::sync::OnceLock<std::result::Result<CpuPath, String>> =
            std::sync::OnceLock::new();
        let selected = SELECTED.get_or_init(|| {
            let value = std::env::var(CPU_PATH_VARIABLE).ok();
            Self::asked(value.as_deref()).map_err(|e| match e {
                Error::Usage { message, .. } => message,
                other => other.to_string(),
            })
        });
        selected.clone().map_err(|message| Error::Usage {
            field: CPU_PATH_VARIABLE,
            message,
        })
    }

    /// The path the products take: [`Self::selected`], or the best one where the variable was
    /// refused (every entry point that reads it reports that first; the bits are the same).
    pub fn active() -> CpuPath {
        Self::selected().unwrap_or_else(|_| Self::best())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_and_bad_values_are_refused_by_the_variable() {
        for path in CpuPath::ALL.into_iter().filter(|p| p.supported()) {
            assert_eq!(CpuPath::asked(Some(path.name())).unwrap(), path);
        }
        for auto in [None, Some(""), Some("auto")] {
            assert_eq!(CpuPath::asked(auto).unwrap(), CpuPath::best());
        }
        let error = CpuPath::asked(Some("avx1024")).unwrap_err().to_string();
        assert!(
            error.contains(CPU_PATH_VARIABLE) && error.contains("avx1024"),
            "{error}"
        );
        for path in CpuPath::ALL.into_iter().filter(|p| !p.supported()) {
            let error = CpuPath::asked(Some(path.name())).unwrap_err().to_string();
            assert!(
                error.contains(CPU_PATH_VARIABLE) && error.contains("lacks"),
                "{error}"
            );
        }
        assert!(CpuPath::Scalar.supported());
    }
}

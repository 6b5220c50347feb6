//! The library's one error type: bad input names the file, the field and what was expected.

use std::path::PathBuf;

/// Everything the library can fail with. Input errors (`Input`, `Usage`) map to exit status 2 in the
/// binary; everything else to exit status 1.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file could not be read or does not hold what it should.
    #[error("{path}: {message}")]
    Input {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        message: String,
    },
    /// An option or argument is out of range or inconsistent with another.
    #[error("invalid setting {field}: {message}")]
    Usage {
        /// The setting's name (the command line prints its option).
        field: &'static str,
        /// What was expected.
        message: String,
    },
    /// An output could not be written.
    #[error("cannot write {path}: {source}")]
    Output {
        /// The output.
        path: PathBuf,
        /// Why it could not be written.
        #[source]
        source: std::io::Error,
    },
    /// The GPU backend was asked for and cannot be used.
    #[error("GPU backend: {0}")]
    Gpu(String),
    /// Anything else that is not the user's fault.
    #[error("{0}")]
    Internal(String),
}

impl Error {
    /// A bad input file: `path`, then what is wrong with it.
    pub fn input(path: impl Into<PathBuf>, message: impl Into<String>) -> Self {
        Error::Input {
            path: path.into(),
            message: message.into(),
        }
    }

    /// A bad setting: the option's name and what was expected.
    pub fn usage(field: &'static str, message: impl Into<String>) -> Self {
        Error::Usage {
            field,
            message: message.into(),
        }
    }

    /// True when the error is the user's (bad input, usage, or an unwritable output): exit status 2.
    pub fn is_user_error(&self) -> bool {
        matches!(
            self,
            Error::Input { .. } | Error::Usage { .. } | Error::Output { .. }
        )
    }
}

/// The library's result type.
pub type Result<T> = std::result::Result<T, Error>;

//! The `rmld` binary: parse, run, and map outcomes to exit statuses (0: done; 2: bad usage or
//! input; 1: other failures; 130/143: interrupted by SIGINT/SIGTERM, outputs and checkpoint written).

mod cli;

use std::process::ExitCode;

fn main() -> ExitCode {
    quiet_graphics_drivers();
    let cli = cli::parse();
    match cli::dispatch(&cli) {
        Ok(cli::Finished::Complete) => ExitCode::SUCCESS,
        Ok(cli::Finished::Interrupted { status }) => ExitCode::from(status),
        Err(e) => {
            eprintln!(
                "rmld: error: {}",
                cli::error_text(&e, &cli::options_of(&cli.command))
            );
            if e.is_user_error() {
                ExitCode::from(2)
            } else {
                ExitCode::from(1)
            }
        }
    }
}

/// Mesa's window-system code prints "XDG_RUNTIME_DIR is invalid or not set" on every adapter
/// query when the variable does not name a folder (a headless machine, a container, sudo): give
/// the process a private one, so that driver noise stays out of the user's terminal. Runs first,
/// before any thread exists.
fn quiet_graphics_drivers() {
    let usable =
        std::env::var_os("XDG_RUNTIME_DIR").is_some_and(|dir| std::path::Path::new(&dir).is_dir());
    if usable {
        return;
    }
    // One folder per user, reused by every run (not one per process left behind).
    let user = std::env::var("USER")
        .or_else(|_| std::env::var("LOGNAME"))
        .unwrap_or_else(|_| "user".into());
    let dir = std::env::temp_dir().join(format!("rmld-runtime-{user}"));
    if std::fs::create_dir_all(&dir).is_ok() {
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let _ = std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700));
        }
        std::env::set_var("XDG_RUNTIME_DIR", &dir);
    }
}

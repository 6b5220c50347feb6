//! SIGINT and SIGTERM: the first asks the run to stop after the current outer iteration (outputs
//! and a checkpoint are written); a second one exits at once.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use signal_hook::consts::{SIGINT, SIGTERM};

/// The signal that asked the run to stop, if any.
pub struct StopRequest {
    signal: Arc<AtomicUsize>,
}

impl StopRequest {
    /// Installs the handlers (best effort: without them a signal ends the process as usual).
    pub fn install() -> Self {
        let signal = Arc::new(AtomicUsize::new(0));
        let seen = Arc::new(AtomicBool::new(false));
        for sig in [SIGINT, SIGTERM] {
            // Order matters: the shutdown check runs before the flag is set, so it fires on the second.
            let _ = signal_hook::flag::register_conditional_shutdown(sig, 128 + sig, seen.clone());
            let _ = signal_hook::flag::register(sig, seen.clone());
            let _ = signal_hook::flag::register_usize(sig, signal.clone(), sig as usize);
        }
        StopRequest { signal }
    }

    /// True once a signal asked to stop.
    pub fn requested(&self) -> bool {
        self.signal.load(Ordering::Relaxed) != 0
    }

    /// The exit status for the signal received: 128 + its number.
    pub fn exit_status(&self) -> u8 {
        (128 + self.signal.load(Ordering::Relaxed).min(127)) as u8
    }
}

//! The warm-up on its own: the outer iterations up to the burn-in's end, after which `continue_run` goes on as one uninterrupted run would.

use super::{continue_run, Hooks, SampleRun, SampleSink, SamplerSettings};
use crate::backend::Backend;
use crate::model::Target;
use crate::Result;

/// Runs `state`'s warm-up on `backend`: the outer iterations up to `burn_in` or, with an
/// automatic burn-in, up to where its monitor ends it (at most its cap, `burn_in`). Nothing is
/// kept; `progress` is told after each iteration, `stop` asked as `continue_run` asks it (the
/// run comes back `interrupted`). `continue_run` from the returned state draws what the
/// uninterrupted run draws after its warm-up.
pub fn warm_up(
    backend: &mut dyn Backend,
    target: &Target,
    settings: &SamplerSettings,
    state: SampleRun,
    burn_in: u32,
    progress: &mut dyn FnMut(u32),
    stop: &dyn Fn() -> bool,
) -> Result<SampleRun> {
    let mut sink = WarmUp {
        end: burn_in,
        last: state.completed,
    };
    let hooks = Hooks {
        sink: &mut sink,
        progress,
        stop,
        checkpoint_every: 0,
        checkpoint: &mut |_, _| Ok(()),
    };
    continue_run(backend, target, settings, state, hooks)
}

/// Keeps nothing, and is full once the warm-up is over: after `end` iterations, or where an
/// automatic burn-in ended it.
struct WarmUp {
    end: u32,
    last: u32,
}

impl SampleSink for WarmUp {
    fn record(&mut self, outer: u32, _codes: &[f32], _images: &[f32]) -> Result<()> {
        self.last = outer;
        Ok(())
    }

    fn warm_up_ended(&mut self, outer: u32) {
        self.end = outer;
    }

    fn full(&self) -> bool {
        self.last >= self.end
    }
}

//! cargo-fuzz target: the checkpoint reader on arbitrary bytes must never panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rmld::fuzzing::{feed, Reader};

fuzz_target!(|data: &[u8]| {
    feed(Reader::Checkpoint, data);
});

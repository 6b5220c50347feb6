//! cargo-fuzz target: the idx reader on arbitrary bytes must never panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rmld::fuzzing::{feed, Reader};

fuzz_target!(|data: &[u8]| {
    feed(Reader::IdxImages, data);
    feed(Reader::IdxLabels, data);
});

//! `PhiloxRng`: a Philox stream read word by word as a `rand::RngCore`, for `rand`'s uniforms and `rng::portable_draws`.

use rand::RngCore;

use super::philox::Stream;

/// The words of one [`Stream`] in order (block 0's four words, then block 1's, ...), as a
/// `rand::RngCore`. Its draws depend only on the stream's seed, chain, outer iteration, step and
/// purpose, so a sampler that opens one per (signal, iteration) is reproducible on any number of
/// threads and resumes bit for bit.
#[derive(Clone, Debug)]
pub struct PhiloxRng {
    stream: Stream,
    block: u32,
    words: [u32; 4],
    next: usize,
}

impl PhiloxRng {
    /// Reads `stream` from its first word.
    pub fn new(stream: Stream) -> Self {
        PhiloxRng {
            stream,
            block: 0,
            words: [0; 4],
            next: 4,
        }
    }
}

impl RngCore for PhiloxRng {
    fn next_u32(&mut self) -> u32 {
        if self.next == 4 {
            self.words = self.stream.block(self.block);
            self.block = self.block.wrapping_add(1);
            self.next = 0;
        }
        let w = self.words[self.next];
        self.next += 1;
        w
    }

    fn next_u64(&mut self) -> u64 {
        let lo = self.next_u32() as u64;
        let hi = self.next_u32() as u64;
        (hi << 32) | lo
    }

    fn fill_bytes(&mut self, dst: &mut [u8]) {
        for chunk in dst.chunks_mut(4) {
            let w = self.next_u32().to_le_bytes();
            chunk.copy_from_slice(&w[..chunk.len()]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Purpose;

    #[test]
    fn reads_the_stream_in_order() {
        let stream = Stream::new(7, 3, 2, 0, Purpose::DictionaryLearning);
        let mut expected = [0u32; 10];
        stream.fill_u32(&mut expected);
        let mut rng = PhiloxRng::new(stream);
        for (i, &e) in expected.iter().enumerate() {
            let got = rng.next_u32();
            assert_eq!(got, e, "word {i}: got {got}, expected {e}");
        }
    }
}

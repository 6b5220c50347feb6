//! Unrolls WGSL's counted loops with constant trip counts before compilation.
//!
//! WGSL has no unroll hint, and naga hands a loop to the driver as a loop. A register tile
//! (`acc[i * REG_N + jj]` in the products) indexed by a loop counter that the driver does not
//! unroll lives in indexable memory: on an NVIDIA H200 (Vulkan) the products then ran at 2 TFLOP/s,
//! 6% of the raw FMA rate. Unrolled here, every index into the tile is a constant.
//!
//! A loop is unrolled when its header reads `for (var X = 0u; X < N; X++) {` with N a literal or a
//! `const` of the same source (at most [`MAX_TRIP`]) and its body neither leaves (`break`,
//! `continue`, `return`) nor assigns X: each trip becomes a block `{ const X = Ku; body }`, so the
//! statements and their order, hence every sum's bits, are the loop's.

/// The longest loop unrolled.
pub const MAX_TRIP: u32 = 16;

/// `source` with every loop that qualifies (module doc) unrolled, inner loops too.
pub fn unroll_constant_loops(source: &str) -> String {
    let consts = u32_consts(source);
    let mut text = source.to_string();
    let mut from = 0;
    while let Some(offset) = text[from..].find("for (var ") {
        let at = from + offset;
        match unrolled(&text[at..], &consts) {
            Some((length, replacement)) => text.replace_range(at..at + length, &replacement),
            None => from = at + "for (var ".len(),
        }
    }
    text
}

/// The module-scope `const NAME: u32 = Nu;` (or `const NAME = Nu;`) values of `source`.
fn u32_consts(source: &str) -> Vec<(String, u32)> {
    source
        .lines()
        .filter_map(|line| {
            let rest = line.trim_start().strip_prefix("const ")?;
            let (name, value) = rest.split_once('=')?;
            let name = name.split(':').next()?.trim();
            let value = value.split(';').next()?.trim().strip_suffix('u')?;
            Some((name.to_string(), value.parse().ok()?))
        })
        .collect()
}

/// For a loop at the start of `text` that qualifies: the loop's length in bytes and its unrolled
/// text.
fn unrolled(text: &str, consts: &[(String, u32)]) -> Option<(usize, String)> {
    let header_end = text.find('{')?;
    let header = &text[..header_end];
    let inner = header.strip_prefix("for (var ")?.trim_end();
    let inner = inner.strip_suffix(')')?;
    let mut parts = inner.split(';').map(str::trim);
    let (init, condition, step) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() {
        return None;
    }
    let (name, start) = init.split_once('=')?;
    let name = name.trim();
    if start.trim() != "0u" || step != format!("{name}++") {
        return None;
    }
    let bound = condition
        .strip_prefix(name)?
        .trim()
        .strip_prefix('<')?
        .trim();
    let trips = match bound.strip_suffix('u').and_then(|n| n.parse().ok()) {
        Some(n) => n,
        None => consts.iter().find(|(c, _)| c == bound)?.1,
    };
    if trips > MAX_TRIP {
        return None;
    }
    let body_end = header_end + matching_brace(&text[header_end..])?;
    let body = &text[header_end + 1..body_end];
    if leaves_or_assigns(body, name) {
        return None;
    }
    let mut out = String::new();
    for trip in 0..trips {
        out.push_str(&format!("{{ const {name} = {trip}u;{body}}}"));
        if trip + 1 < trips {
            out.push(' ');
        }
    }
    Some((body_end + 1, out))
}

/// The offset of the `}` closing the `{` that `text` starts with.
fn matching_brace(text: &str) -> Option<usize> {
    let mut depth = 0usize;
    for (i, c) in text.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

/// Whether `body` leaves the loop early or writes the counter `name`.
fn leaves_or_assigns(body: &str, name: &str) -> bool {
    let words: Vec<&str> = body
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .collect();
    if words
        .iter()
        .any(|w| matches!(*w, "break" | "continue" | "return"))
    {
        return true;
    }
    let is_word = |c: char| c.is_alphanumeric() || c == '_';
    body.match_indices(name).any(|(i, _)| {
        let before = body[..i].chars().next_back();
        let after = &body[i + name.len()..];
        let whole = !before.is_some_and(|c| is_word(c) || c == '.')
            && !after.chars().next().is_some_and(is_word);
        let after = after.trim_start();
        let writes = [
            "++", "--", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>=",
        ]
        .iter()
        .any(|op| after.starts_with(op))
            || (after.starts_with('=') && !after.starts_with("=="));
        whole && writes
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_counted_loop_becomes_blocks_with_its_counter_constant() {
        let text = "const N: u32 = 3u;\nfn f() { for (var i = 0u; i < N; i++) { a[i] += 1.0; } }";
        let out = unroll_constant_loops(text);
        assert_eq!(
            out,
            "const N: u32 = 3u;\nfn f() { { const i = 0u; a[i] += 1.0; } { const i = 1u; a[i] += 1.0; } { const i = 2u; a[i] += 1.0; } }"
        );
    }

    #[test]
    fn nested_loops_are_unrolled_inside_out_of_order() {
        let text = "for (var i = 0u; i < 2u; i++) { for (var jj = 0u; jj < 2u; jj++) { s += x[i * 2u + jj]; } }";
        let out = unroll_constant_loops(text);
        assert!(!out.contains("for ("), "{out}");
        assert_eq!(out.matches("s += x[i * 2u + jj];").count(), 4, "{out}");
        assert_eq!(out.matches("const jj = 1u;").count(), 2, "{out}");
    }

    #[test]
    fn loops_that_leave_assign_run_long_or_count_at_run_time_stay_loops() {
        for text in [
            "for (var i = 0u; i < 4u; i++) { if (x) { break; } }",
            "for (var i = 0u; i < 4u; i++) { if (x) { continue; } }",
            "for (var i = 0u; i < 4u; i++) { return; }",
            "for (var i = 0u; i < 4u; i++) { i += 1u; }",
            "for (var i = 0u; i < 4u; i++) { i = 2u; }",
            "for (var i = 0u; i < 17u; i++) { s += 1.0; }",
            "for (var i = 0u; i < params.n; i++) { s += 1.0; }",
            "for (var k0 = 0u; k0 < kdim; k0 += TILE_K) { s += 1.0; }",
            "for (var i = 1u; i < 4u; i++) { s += 1.0; }",
        ] {
            assert_eq!(unroll_constant_loops(text), text);
        }
    }

    #[test]
    fn a_comparison_or_a_longer_name_is_not_a_write_of_the_counter() {
        let text = "for (var i = 0u; i < 2u; i++) { if (i == 1u) { ii += 1u; } b.i = 3u; }";
        let out = unroll_constant_loops(text);
        assert!(!out.contains("for ("), "{out}");
    }
}

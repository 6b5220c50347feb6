//! Static counts of the GEMM inner loop, parsed from the WGSL text: workgroup loads per FMA and bank conflicts.
//!
//! The inner loop of each tile (`accumulate_slice` in shaders/gemm_tile_narrow.wgsl and
//! gemm_tile_wide.wgsl, spliced before shaders/matmul.wgsl in the scalar-load and the vec4-load
//! modules) is walked statement by statement: each `for (var v = 0u; v < N; v++)` loop
//! multiplies what it holds by N (constants resolved from the file's `const` lines), each read of a
//! `var<workgroup>` array counts one load of its element type, each `+= x * y` one FMA. Every load's
//! index expression is then evaluated for the 32 lanes of one subgroup (lanes numbered along
//! `local_invocation_id.x` first, from `@workgroup_size`) at every value of the loop variables, and
//! the 4-byte words it touches are mapped to 32 banks: lanes are served in phases of 128 bytes
//! (32 lanes for f32, 8 for vec4), and two different words in one bank within a phase conflict
//! (the same word is a broadcast). `GEMM_STATIC_FILE=path` also prints the counts of another
//! version of the inner loop (e.g. `git show 1db57f1:shaders/matmul.wgsl`) without checking them.

use std::collections::{BTreeMap, BTreeSet, HashMap};

const MATMUL: &str = include_str!("../shaders/matmul.wgsl");
const TILE_NARROW: &str = include_str!("../shaders/gemm_tile_narrow.wgsl");
const TILE_WIDE: &str = include_str!("../shaders/gemm_tile_wide.wgsl");
const BANKS: u64 = 32;
const SUBGROUP: u64 = 32;

/// One workgroup load in the inner loop: the array, its element width in words, its index
/// expression and the loop variables (name, trip count) in scope.
struct Load {
    array: String,
    words: u64,
    index: String,
    loops: Vec<(String, u64)>,
}

struct Counts {
    loads: u64,
    fmas: u64,
    load_list: Vec<Load>,
}

fn consts(src: &str) -> HashMap<String, u64> {
    let mut out = HashMap::new();
    for line in src.lines() {
        let line = line.trim();
        if let Some(rest) = line.strip_prefix("const ") {
            let (name, value) = rest.split_once('=').unwrap();
            let name = name.split(':').next().unwrap().trim().to_string();
            let value = value
                .split(';')
                .next()
                .unwrap()
                .trim()
                .trim_end_matches('u');
            if let Ok(v) = value.parse() {
                out.insert(name, v);
            }
        }
    }
    out
}

/// `var<workgroup> name: array<T, N>` → (name, words per element).
fn workgroup_arrays(src: &str) -> Vec<(String, u64)> {
    let mut out = Vec::new();
    for line in src.lines() {
        if let Some(rest) = line.trim().strip_prefix("var<workgroup>") {
            let (name, ty) = rest.split_once(':').unwrap();
            let words = if ty.contains("vec4<f32>") {
                4
            } else if ty.contains("array<f32") {
                1
            } else {
                panic!("unknown workgroup element type in {line}")
            };
            out.push((name.trim().to_string(), words));
        }
    }
    out
}

fn workgroup_x(src: &str, k: &HashMap<String, u64>) -> u64 {
    let at = src.find("@workgroup_size(").expect("@workgroup_size") + 16;
    let inner = &src[at..at + src[at..].find(')').unwrap()];
    value(inner.split(',').next().unwrap().trim(), k)
}

/// The text between `fn name(...) {` and its closing brace.
fn body<'a>(src: &'a str, name: &str) -> &'a str {
    let start = src.find(&format!("fn {name}(")).expect("function");
    let open = start + src[start..].find('{').unwrap();
    let mut depth = 0;
    for (i, c) in src[open..].char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return &src[open + 1..open + i];
                }
            }
            _ => {}
        }
    }
    panic!("unbalanced braces in {name}")
}

/// `for (var v = 0u; v < BOUND; v++) {` → (v, trip count).
fn for_loop(line: &str, k: &HashMap<String, u64>) -> Option<(String, u64)> {
    let rest = line.trim().strip_prefix("for (var ")?;
    let (var, rest) = rest.split_once('=')?;
    assert!(
        rest.trim().starts_with("0u;"),
        "loops must start at 0: {line}"
    );
    let bound = rest.split(';').nth(1)?.split('<').nth(1)?.trim();
    Some((var.trim().to_string(), value(bound, k)))
}

fn value(token: &str, k: &HashMap<String, u64>) -> u64 {
    let t = token.trim_end_matches('u');
    t.parse()
        .ok()
        .or_else(|| k.get(token).copied())
        .unwrap_or_else(|| panic!("unknown value {token}"))
}

/// The index expression after each `name[` in `line` (bracket-matched).
fn indexes(line: &str, name: &str) -> Vec<String> {
    let mut out = Vec::new();
    let pat = format!("{name}[");
    let mut from = 0;
    while let Some(at) = line[from..].find(&pat) {
        let start = from + at + pat.len();
        let mut depth = 1;
        let mut end = start;
        for (i, c) in line[start..].char_indices() {
            match c {
                '[' => depth += 1,
                ']' => {
                    depth -= 1;
                    if depth == 0 {
                        end = start + i;
                        break;
                    }
                }
                _ => {}
            }
        }
        out.push(line[start..end].to_string());
        from = end;
    }
    out
}

fn count(src: &str) -> Counts {
    let k = consts(src);
    let arrays = workgroup_arrays(src);
    let mut stack: Vec<Option<(String, u64)>> = Vec::new();
    let mut c = Counts {
        loads: 0,
        fmas: 0,
        load_list: Vec::new(),
    };
    for line in body(src, "accumulate_slice").lines() {
        let opened = line.matches('{').count();
        let closed = line.matches('}').count();
        let loops: Vec<(String, u64)> = stack.iter().flatten().cloned().collect();
        let trips: u64 = loops.iter().map(|l| l.1).product();
        if let Some(l) = for_loop(line, &k) {
            stack.push(Some(l));
        } else {
            for (name, words) in &arrays {
                for index in indexes(line, name) {
                    assert!(
                        !line.trim_start().starts_with(name.as_str()),
                        "the inner loop writes {name}: {line}"
                    );
                    c.loads += trips;
                    c.load_list.push(Load {
                        array: name.clone(),
                        words: *words,
                        index,
                        loops: loops.clone(),
                    });
                }
            }
            if line.contains("+=") && line.split("+=").nth(1).unwrap().contains('*') {
                c.fmas += trips;
            }
            for _ in 0..opened {
                stack.push(None);
            }
        }
        for _ in 0..closed {
            stack.pop();
        }
    }
    c
}

/// Evaluates an index expression (+ - * / %, parentheses, u32 literals, names).
fn eval(expr: &str, vars: &HashMap<String, u64>) -> u64 {
    let tokens: Vec<String> = {
        let mut t = Vec::new();
        let mut cur = String::new();
        for ch in expr.chars() {
            if ch.is_alphanumeric() || ch == '_' || ch == '.' {
                cur.push(ch);
            } else {
                if !cur.is_empty() {
                    t.push(std::mem::take(&mut cur));
                }
                if !ch.is_whitespace() {
                    t.push(ch.to_string());
                }
            }
        }
        if !cur.is_empty() {
            t.push(cur);
        }
        t
    };
    fn sum(t: &[String], i: &mut usize, v: &HashMap<String, u64>) -> u64 {
        let mut x = product(t, i, v);
        while *i < t.len() && (t[*i] == "+" || t[*i] == "-") {
            let op = t[*i].clone();
            *i += 1;
            let y = product(t, i, v);
            x = if op == "+" { x + y } else { x - y };
        }
        x
    }
    fn product(t: &[String], i: &mut usize, v: &HashMap<String, u64>) -> u64 {
        let mut x = atom(t, i, v);
        while *i < t.len() && ["*", "/", "%"].contains(&t[*i].as_str()) {
            let op = t[*i].clone();
            *i += 1;
            let y = atom(t, i, v);
            x = match op.as_str() {
                "*" => x * y,
                "/" => x / y,
                _ => x % y,
            };
        }
        x
    }
    fn atom(t: &[String], i: &mut usize, v: &HashMap<String, u64>) -> u64 {
        let tok = t[*i].clone();
        *i += 1;
        if tok == "(" {
            let x = sum(t, i, v);
            assert_eq!(t[*i], ")");
            *i += 1;
            return x;
        }
        value(&tok, v)
    }
    let mut i = 0;
    let x = sum(&tokens, &mut i, vars);
    assert_eq!(i, tokens.len(), "unparsed index expression {expr}");
    x
}

/// The worst number of distinct words one bank serves in one phase, over every instance of the
/// load (every value of its loop variables) for lanes 0..32.
fn worst_conflict(load: &Load, k: &HashMap<String, u64>, wg_x: u64) -> u64 {
    let phase = (BANKS / load.words).max(1);
    let mut worst = 1;
    let instances: u64 = load.loops.iter().map(|l| l.1).product();
    for instance in 0..instances {
        let mut vars = k.clone();
        let mut rest = instance;
        for (name, trips) in &load.loops {
            vars.insert(name.clone(), rest % trips);
            rest /= trips;
        }
        let mut banks: BTreeMap<(u64, u64), BTreeSet<u64>> = BTreeMap::new();
        for lane in 0..SUBGROUP {
            vars.insert("lid.x".into(), lane % wg_x);
            vars.insert("lid.y".into(), lane / wg_x);
            let base = eval(&load.index, &vars) * load.words;
            for w in base..base + load.words {
                banks
                    .entry((lane / phase, w % BANKS))
                    .or_default()
                    .insert(w);
            }
        }
        worst = worst.max(banks.values().map(|s| s.len() as u64).max().unwrap());
    }
    worst
}

fn report(label: &str, src: &str) -> (f64, u64) {
    let c = count(src);
    let k = consts(src);
    let wg_x = workgroup_x(src, &k);
    let ratio = c.loads as f64 / c.fmas as f64;
    println!(
        "{label}: per slice {} workgroup loads, {} FMAs: {ratio:.4} loads per FMA",
        c.loads, c.fmas
    );
    let mut worst = 1;
    for load in &c.load_list {
        let w = worst_conflict(load, &k, wg_x);
        println!(
            "{label}:   {}[{}] ({} words): {w}-way (1 = conflict-free)",
            load.array, load.index, load.words
        );
        worst = worst.max(w);
    }
    (ratio, worst)
}

#[test]
fn gemm_inner_loop_loads_per_fma_and_banks() {
    if let Ok(path) = std::env::var("GEMM_STATIC_FILE") {
        let other = std::fs::read_to_string(&path).expect("GEMM_STATIC_FILE");
        report(&path, &other);
    }
    // Both modules (scalar and vec4 global loads) share each tile's inner loop and layout; the
    // kernels' @workgroup_size is in matmul.wgsl, the constants in the tile's file.
    let narrow = format!("{TILE_NARROW}{MATMUL}");
    let (ratio, worst) = report("gemm_tile_narrow.wgsl", &narrow);
    assert!(
        ratio <= 0.125,
        "narrow: {ratio} workgroup loads per FMA (> 0.125)"
    );
    assert_eq!(worst, 1, "a bank conflict in the narrow tile's inner loop");
    let wide = format!("{TILE_WIDE}{MATMUL}");
    let (ratio, worst) = report("gemm_tile_wide.wgsl", &wide);
    assert!(
        ratio <= 0.0625,
        "wide: {ratio} workgroup loads per FMA (> 0.0625)"
    );
    assert_eq!(worst, 1, "a bank conflict in the wide tile's inner loop");
}

/// The wide tile with its two dict quads adjacent (lid.x * 2, lid.x * 2 + 1: columns 8x..8x+7
/// of one invocation) would have lanes x and x + 4 in one bank: the counter sees it, which is
/// why the wide tile splits its columns 64 apart.
#[test]
fn adjacent_dict_quads_would_conflict() {
    let adjacent = TILE_WIDE
        .replace(
            "tile_r[k * TILE_N4 + lid.x]",
            "tile_r[k * TILE_N4 + lid.x * 2u]",
        )
        .replace(
            "tile_r[k * TILE_N4 + lid.x + 16u]",
            "tile_r[k * TILE_N4 + lid.x * 2u + 1u]",
        );
    assert_ne!(adjacent, TILE_WIDE, "the replacement found the dict reads");
    let (ratio, worst) = report("adjacent dict quads", &format!("{adjacent}{MATMUL}"));
    assert_eq!(ratio, 0.0625);
    assert_eq!(worst, 2);
}

#[test]
fn the_counter_sees_conflicts_and_scalar_loads() {
    // The counter itself: a strided f32 read (stride 32 words: every lane in bank 0) and the
    // old scalar inner loop (8 loads per 16 FMAs).
    let src = "const T: u32 = 16u;\nvar<workgroup> s: array<f32, 1024>;\n@workgroup_size(16, 16)\n\
        fn accumulate_slice() {\n    for (var k = 0u; k < T; k++) {\n        \
        for (var i = 0u; i < 4u; i++) {\n            a[i] = s[k + (lid.y * 16u + lid.x) * 32u + i];\n        \
        }\n        for (var i = 0u; i < 4u; i++) {\n            for (var j = 0u; j < 4u; j++) {\n                \
        acc[i] += a[i] * a[j];\n            }\n        }\n    }\n}\n";
    let (ratio, worst) = report("synthetic", src);
    assert_eq!(ratio, 64.0 / 256.0);
    assert_eq!(worst, 32);
}

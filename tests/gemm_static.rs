//! Static counts of the GEMM kernels, parsed from the WGSL text: workgroup loads per FMA and bank conflicts.
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
//! (the same word is a broadcast). Index expressions may call the module's one-line `u32`
//! functions (`slot_l`, `slot_r`), which are evaluated from their `return` expression.
//!
//! The staging stores (the writes of each K-slice into workgroup memory, in
//! shaders/matmul_vec4.wgsl and matmul_scalar.wgsl) are evaluated the same way, with the
//! functions' `let` lines evaluated per lane in order (those naming values the text does not fix,
//! such as `params.p`, are left out: no store index reads them).
//!
//! `GEMM_STATIC_FILE=path` also prints the counts of another version of the inner loop (e.g.
//! `git show 1db57f1:shaders/matmul.wgsl`) without checking them.

use std::collections::{BTreeMap, BTreeSet, HashMap};

const MATMUL: &str = include_str!("../shaders/matmul.wgsl");
const MATMUL_VEC4: &str = include_str!("../shaders/matmul_vec4.wgsl");
const MATMUL_SCALAR: &str = include_str!("../shaders/matmul_scalar.wgsl");
const TILE_NARROW: &str = include_str!("../shaders/gemm_tile_narrow.wgsl");
const TILE_WIDE: &str = include_str!("../shaders/gemm_tile_wide.wgsl");
const BANKS: u64 = 32;
const SUBGROUP: u64 = 32;

/// One workgroup access: the array, the words it touches per lane (4 for a vec4 element, 1 for
/// a component or an f32), its index expressions (element, then component if any), the loop
/// variables (name, trip count) and the `let` lines (name, expression) in scope before it.
struct Access {
    array: String,
    words: u64,
    index: String,
    component: Option<String>,
    loops: Vec<(String, u64)>,
    lets: Vec<(String, String)>,
}

struct Counts {
    loads: u64,
    fmas: u64,
    load_list: Vec<Access>,
}

/// The module's one-line `u32` functions: name → (parameters, returned expression).
type Functions = HashMap<String, (Vec<String>, String)>;

/// What index expressions may name: the `const` values and the one-line functions.
struct Module {
    consts: HashMap<String, u64>,
    functions: Functions,
}

impl Module {
    fn new(src: &str) -> Module {
        Module {
            consts: consts(src),
            functions: functions(src),
        }
    }
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

/// `fn name(a: u32, b: u32) -> u32 {` followed by `return expr;` and `}`.
fn functions(src: &str) -> Functions {
    let mut out = Functions::new();
    let lines: Vec<&str> = src.lines().map(str::trim).collect();
    for (i, line) in lines.iter().enumerate() {
        let Some(rest) = line.strip_prefix("fn ") else {
            continue;
        };
        if !line.ends_with("-> u32 {") || i + 2 >= lines.len() || lines[i + 2] != "}" {
            continue;
        }
        let Some(expr) = lines[i + 1]
            .strip_prefix("return ")
            .and_then(|e| e.strip_suffix(';'))
        else {
            continue;
        };
        let (name, params) = rest.split_once('(').unwrap();
        let params = params.split(')').next().unwrap();
        let params = params
            .split(',')
            .map(|p| p.split(':').next().unwrap().trim().to_string())
            .collect();
        out.insert(name.trim().to_string(), (params, expr.to_string()));
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
    value(inner.split(',').next().unwrap().trim(), k).expect("the workgroup's x size")
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

/// `for (var v = 0u; v < BOUND; ...) {` → (v, trip count); a bound the text does not fix (the
/// K loop's `kdim`) counts one trip, at v = 0.
fn for_loop(line: &str, k: &HashMap<String, u64>) -> Option<(String, u64)> {
    let rest = line.trim().strip_prefix("for (var ")?;
    let (var, rest) = rest.split_once('=')?;
    assert!(
        rest.trim().starts_with("0u;"),
        "loops must start at 0: {line}"
    );
    let bound = rest.split(';').nth(1)?.split('<').nth(1)?.trim();
    Some((
        var.trim().to_string(),
        try_eval(bound, k, &Functions::new()).unwrap_or(1),
    ))
}

fn value(token: &str, k: &HashMap<String, u64>) -> Option<u64> {
    let t = token.trim_end_matches('u');
    t.parse().ok().or_else(|| k.get(token).copied())
}

/// The index expressions after each `name[` in `line` (bracket-matched): the element's, and the
/// component's when a second bracket follows.
fn indexes(line: &str, name: &str) -> Vec<(String, Option<String>)> {
    let mut out = Vec::new();
    let pat = format!("{name}[");
    let mut from = 0;
    while let Some(at) = line[from..].find(&pat) {
        let start = from + at + pat.len();
        let end = start + closing(&line[start..]);
        let component = line[end + 1..]
            .strip_prefix('[')
            .map(|rest| rest[..closing(rest)].to_string());
        out.push((line[start..end].to_string(), component));
        from = end;
    }
    out
}

/// The offset of the `]` that closes a bracket opened just before `text`.
fn closing(text: &str) -> usize {
    let mut depth = 1;
    for (i, c) in text.char_indices() {
        match c {
            '[' => depth += 1,
            ']' => {
                depth -= 1;
                if depth == 0 {
                    return i;
                }
            }
            _ => {}
        }
    }
    panic!("unbalanced brackets in {text}")
}

/// Walks `function`'s body: reads of the workgroup arrays (those not on the left of `=`), the
/// stores into them (element and component), `+= x * y` FMAs, with the loops and lets in scope.
fn walk(src: &str, function: &str) -> (Counts, Vec<Access>) {
    let k = consts(src);
    let arrays = workgroup_arrays(src);
    let mut stack: Vec<Option<(String, u64)>> = Vec::new();
    let mut lets: Vec<(String, String)> = Vec::new();
    let mut c = Counts {
        loads: 0,
        fmas: 0,
        load_list: Vec::new(),
    };
    let mut stores = Vec::new();
    for line in body(src, function).lines() {
        let opened = line.matches('{').count();
        let closed = line.matches('}').count();
        let loops: Vec<(String, u64)> = stack.iter().flatten().cloned().collect();
        let trips: u64 = loops.iter().map(|l| l.1).product();
        if let Some(l) = for_loop(line, &k) {
            stack.push(Some(l));
        } else {
            let trimmed = line.trim_start();
            for (name, words) in &arrays {
                for (index, component) in indexes(line, name) {
                    let access = Access {
                        array: name.clone(),
                        words: if component.is_some() { 1 } else { *words },
                        index,
                        component,
                        loops: loops.clone(),
                        lets: lets.clone(),
                    };
                    if trimmed.starts_with(name.as_str()) {
                        stores.push(access);
                    } else {
                        c.loads += trips;
                        c.load_list.push(access);
                    }
                }
            }
            if let Some(rest) = trimmed.strip_prefix("let ") {
                if let Some((name, expr)) = rest.split_once('=') {
                    let expr = expr.trim().trim_end_matches(';').to_string();
                    lets.push((name.trim().to_string(), expr));
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
    (c, stores)
}

/// The inner loop's loads and FMAs (it stores nothing into workgroup memory).
fn count(src: &str) -> Counts {
    let (counts, stores) = walk(src, "accumulate_slice");
    assert!(stores.is_empty(), "the inner loop writes workgroup memory");
    counts
}

/// Evaluates an index expression (+ - * / % ^, parentheses, u32 literals, names, calls of the
/// module's one-line functions); None when it names a value `vars` does not hold.
fn try_eval(expr: &str, vars: &HashMap<String, u64>, functions: &Functions) -> Option<u64> {
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
    struct Parser<'a> {
        t: Vec<String>,
        i: usize,
        vars: &'a HashMap<String, u64>,
        functions: &'a Functions,
    }
    impl Parser<'_> {
        fn peek(&self, s: &str) -> bool {
            self.t.get(self.i).is_some_and(|t| t == s)
        }
        fn xor(&mut self) -> Option<u64> {
            let mut x = self.sum()?;
            while self.peek("^") {
                self.i += 1;
                x ^= self.sum()?;
            }
            Some(x)
        }
        fn sum(&mut self) -> Option<u64> {
            let mut x = self.product()?;
            while self.peek("+") || self.peek("-") {
                let plus = self.peek("+");
                self.i += 1;
                let y = self.product()?;
                x = if plus { x + y } else { x - y };
            }
            Some(x)
        }
        fn product(&mut self) -> Option<u64> {
            let mut x = self.atom()?;
            while self.peek("*") || self.peek("/") || self.peek("%") {
                let op = self.t[self.i].clone();
                self.i += 1;
                let y = self.atom()?;
                x = match op.as_str() {
                    "*" => x * y,
                    "/" => x / y,
                    _ => x % y,
                };
            }
            Some(x)
        }
        fn atom(&mut self) -> Option<u64> {
            let tok = self.t.get(self.i)?.clone();
            self.i += 1;
            if tok == "(" {
                let x = self.xor()?;
                assert!(self.peek(")"), "unbalanced parentheses");
                self.i += 1;
                return Some(x);
            }
            if self.peek("(") {
                // A call of a one-line function: its expression with the arguments bound.
                self.i += 1;
                let mut args = vec![self.xor()?];
                while self.peek(",") {
                    self.i += 1;
                    args.push(self.xor()?);
                }
                assert!(self.peek(")"), "unbalanced call of {tok}");
                self.i += 1;
                let (params, body) = self.functions.get(&tok)?;
                assert_eq!(params.len(), args.len(), "arguments of {tok}");
                let mut vars = self.vars.clone();
                vars.extend(params.iter().cloned().zip(args));
                return try_eval(body, &vars, self.functions);
            }
            value(&tok, self.vars)
        }
    }
    let mut p = Parser {
        t: tokens,
        i: 0,
        vars,
        functions,
    };
    let x = p.xor()?;
    assert_eq!(p.i, p.t.len(), "unparsed index expression {expr}");
    Some(x)
}

fn eval(expr: &str, vars: &HashMap<String, u64>, functions: &Functions) -> u64 {
    try_eval(expr, vars, functions).unwrap_or_else(|| panic!("unknown value in {expr}"))
}

/// The worst number of distinct words one bank serves in one phase, over every instance of the
/// access (every value of its loop variables) for lanes 0..32, with `bound` (name, expression)
/// evaluated first (a function's parameters) and then the access's lets.
fn worst_conflict(access: &Access, m: &Module, wg_x: u64, bound: &[(&str, &str)]) -> u64 {
    let phase = (BANKS / access.words).max(1);
    let mut worst = 1;
    let instances: u64 = access.loops.iter().map(|l| l.1).product();
    for instance in 0..instances {
        let mut banks: BTreeMap<(u64, u64), BTreeSet<u64>> = BTreeMap::new();
        for lane in 0..SUBGROUP {
            let mut vars = m.consts.clone();
            vars.insert("lid.x".into(), lane % wg_x);
            vars.insert("lid.y".into(), lane / wg_x);
            for name in ["wg.x", "wg.y", "k0"] {
                vars.insert(name.into(), 0);
            }
            let mut rest = instance;
            for (name, trips) in &access.loops {
                vars.insert(name.clone(), rest % trips);
                rest /= trips;
            }
            for (name, expr) in bound {
                let v = eval(expr, &vars, &m.functions);
                vars.insert(name.to_string(), v);
            }
            for (name, expr) in &access.lets {
                if let Some(v) = try_eval(expr, &vars, &m.functions) {
                    vars.insert(name.clone(), v);
                }
            }
            let element = eval(&access.index, &vars, &m.functions);
            let base = match &access.component {
                Some(c) => element * 4 + eval(c, &vars, &m.functions),
                None => element * access.words,
            };
            for w in base..base + access.words {
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
    let m = Module::new(src);
    let wg_x = workgroup_x(src, &m.consts);
    let ratio = c.loads as f64 / c.fmas as f64;
    println!(
        "{label}: per slice {} workgroup loads, {} FMAs: {ratio:.4} loads per FMA",
        c.loads, c.fmas
    );
    let mut worst = 1;
    for load in &c.load_list {
        let w = worst_conflict(load, &m, wg_x, &[]);
        println!(
            "{label}:   {}[{}] ({} words): {w}-way (1 = conflict-free)",
            load.array, load.index, load.words
        );
        worst = worst.max(w);
    }
    (ratio, worst)
}

/// The worst bank conflict of the staging stores of `function` in `src`, each evaluated with
/// every binding set in `bindings` (a function's parameter `q` is each quad a lane stages).
fn report_stores(label: &str, src: &str, function: &str, bindings: &[&[(&str, &str)]]) -> u64 {
    let (_, stores) = walk(src, function);
    assert!(!stores.is_empty(), "{function} stores nothing");
    let m = Module::new(src);
    let wg_x = workgroup_x(src, &m.consts);
    let mut worst = 1;
    for store in &stores {
        for bound in bindings {
            let w = worst_conflict(store, &m, wg_x, bound);
            let component = store
                .component
                .as_ref()
                .map_or(String::new(), |c| format!("[{c}]"));
            println!(
                "{label} {function} {bound:?}: store {}[{}]{component} ({} words): {w}-way",
                store.array, store.index, store.words
            );
            worst = worst.max(w);
        }
    }
    worst
}

#[test]
fn gemm_inner_loop_loads_per_fma_and_banks() {
    if let Ok(path) = std::env::var("GEMM_STATIC_FILE") {
        let other = std::fs::read_to_string(&path).expect("GEMM_STATIC_FILE");
        report(&path, &other);
    }
    // Both modules (scalar and vec4 global loads) share each tile's inner loop and layout; the
    // kernels' @workgroup_size and the slots are in matmul.wgsl, the constants in the tile's file.
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

/// The vec4-load kernels' staging stores (the K-slices written into workgroup memory once per
/// slice) are conflict-free with each tile: the transposed scalar stores thanks to the slots'
/// XOR, the dictionary's quads of `product_nn` as they are.
#[test]
fn vec4_staging_stores_are_conflict_free() {
    let quads: &[&[(&str, &str)]] = &[
        &[("tid", "lid.y * WG_X + lid.x"), ("q", "tid")],
        &[("tid", "lid.y * WG_X + lid.x"), ("q", "tid + INVOCATIONS")],
    ];
    for (label, tile) in [("narrow", TILE_NARROW), ("wide", TILE_WIDE)] {
        let src = format!("{tile}{MATMUL}{MATMUL_VEC4}");
        for function in ["store_lhs_quad", "store_dict_nt"] {
            let worst = report_stores(label, &src, function, quads);
            assert_eq!(worst, 1, "{label} {function}: a {worst}-way bank conflict");
        }
        let worst = report_stores(label, &src, "product_nn", &[&[]]);
        assert_eq!(worst, 1, "{label} product_nn: a {worst}-way bank conflict");
    }
}

/// Without the slots' XOR the transposed stores put 4 lanes on each bank: the counter sees it.
#[test]
fn plain_staging_layout_would_conflict() {
    let plain = MATMUL.replace(
        "return k * TILE_M4 + (quad ^ ((k / 4u) * 2u));",
        "return k * TILE_M4 + quad;",
    );
    assert_ne!(plain, MATMUL, "the replacement found slot_l");
    let src = format!("{TILE_NARROW}{plain}{MATMUL_VEC4}");
    let quads: &[&[(&str, &str)]] = &[&[("q", "lid.y * WG_X + lid.x")]];
    assert_eq!(report_stores("plain", &src, "store_lhs_quad", quads), 4);
}

/// The scalar-load kernels (any shape; the fallback where d or p is not a multiple of 4) stage
/// element by element; their stores are printed and bounded, not conflict-free: the transposed
/// ones put 4 lanes on a bank (16 with a plain [k][m / 4] layout, the slots' XOR spreading them).
#[test]
fn scalar_staging_stores_are_bounded() {
    for (label, tile) in [("narrow", TILE_NARROW), ("wide", TILE_WIDE)] {
        let src = format!("{tile}{MATMUL}{MATMUL_SCALAR}");
        for function in ["product_nt", "product_nn"] {
            let worst = report_stores(label, &src, function, &[&[]]);
            assert!(
                worst <= 4,
                "{label} {function}: a {worst}-way bank conflict"
            );
        }
    }
}

/// The wide tile with its two dict quads adjacent (lid.x * 2, lid.x * 2 + 1: columns 8x..8x+7
/// of one invocation) would have lanes x and x + 4 in one bank: the counter sees it, which is
/// why the wide tile splits its columns 64 apart.
#[test]
fn adjacent_dict_quads_would_conflict() {
    let adjacent = TILE_WIDE
        .replace("tile_r[slot_r(k, lid.x)]", "tile_r[slot_r(k, lid.x * 2u)]")
        .replace(
            "tile_r[slot_r(k, lid.x + 16u)]",
            "tile_r[slot_r(k, lid.x * 2u + 1u)]",
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

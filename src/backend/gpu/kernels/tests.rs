//! The kernels' layout tests: every params struct (the families', the priors' and the
//! likelihoods') against its WGSL as naga parses it, every declared binding against the WGSL
//! text, and every module validated with each tile, precision, prior and likelihood.

use super::*;
use wgpu::naga;

wgsl_struct! {
    /// The tangent family's params before the likelihoods' own params: a layout unlike gather's,
    /// for the checker's own test.
    pub struct TangentParams {
        /// Observation dimension d.
        d: u32,
        /// Padding to 16 bytes.
        _pad0: u32,
        /// Padding to 16 bytes.
        _pad1: u32,
        /// Padding to 16 bytes.
        _pad2: u32,
    }
}

/// Every prior and likelihood pair the families may be built with.
fn models() -> Vec<ModelWgsl> {
    Prior::DEFAULTS
        .iter()
        .flat_map(|prior| {
            Likelihood::WGSL_MODELS.iter().map(|&likelihood| ModelWgsl {
                prior: prior.wgsl_model(),
                likelihood,
            })
        })
        .collect()
}

/// A family's module source as `Kernels::build` concatenates it, with `model`'s WGSL.
fn source(family: &Family, model: &ModelWgsl) -> String {
    source_tiled(family, model, Precision::F32, GemmTile::Narrow)
}

/// `source` with the dictionary stored in `precision` and the products' `tile`.
fn source_tiled(
    family: &Family,
    model: &ModelWgsl,
    precision: Precision,
    tile: GemmTile,
) -> String {
    family.source(model, precision, tile)
}

/// The WGSL name of a naga type: `u32`, `f32`, a struct's name, or its debug form.
fn wgsl_type(module: &naga::Module, ty: naga::Handle<naga::Type>) -> String {
    let t = &module.types[ty];
    match &t.inner {
        naga::TypeInner::Scalar(naga::Scalar {
            kind: naga::ScalarKind::Uint,
            width: 4,
        }) => "u32".into(),
        naga::TypeInner::Scalar(naga::Scalar {
            kind: naga::ScalarKind::Float,
            width: 4,
        }) => "f32".into(),
        naga::TypeInner::Struct { .. } => t.name.clone().unwrap_or_default(),
        other => format!("{other:?}"),
    }
}

/// Every difference between the WGSL struct `ty` of `module` and the Rust `layout`: name,
/// size, and each member's name, type and offset (nested structs member by member), each
/// named by its path with both values.
fn differences(
    module: &naga::Module,
    ty: naga::Handle<naga::Type>,
    layout: &Layout,
    path: &str,
) -> Vec<String> {
    let mut out = Vec::new();
    let t = &module.types[ty];
    let name = t.name.as_deref().unwrap_or("?");
    if name != layout.name {
        out.push(format!(
            "{path}: struct {name} in the WGSL, {} in Rust",
            layout.name
        ));
    }
    let naga::TypeInner::Struct { members, span } = &t.inner else {
        out.push(format!("{path}: not a struct in the WGSL ({:?})", t.inner));
        return out;
    };
    if *span as usize != layout.size {
        out.push(format!(
            "{path}: size {span} in the WGSL, {} in Rust",
            layout.size
        ));
    }
    for i in 0..members.len().max(layout.members.len()) {
        match (members.get(i), layout.members.get(i)) {
            (Some(w), Some(r)) => {
                let wname = w.name.as_deref().unwrap_or("?");
                let at = format!("{path}.{}", r.name);
                if wname != r.name {
                    out.push(format!(
                        "{path}: member {i} is {wname} in the WGSL, {} in Rust",
                        r.name
                    ));
                }
                let wty = wgsl_type(module, w.ty);
                if wty != r.ty {
                    out.push(format!("{at}: type {wty} in the WGSL, {} in Rust", r.ty));
                }
                if w.offset as usize != r.offset {
                    out.push(format!(
                        "{at}: offset {} in the WGSL, {} in Rust",
                        w.offset, r.offset
                    ));
                }
                if let Some(nested) = r.nested {
                    out.extend(differences(module, w.ty, nested, &at));
                }
            }
            (Some(w), None) => out.push(format!(
                "{path}.{}: at offset {} in the WGSL only",
                w.name.as_deref().unwrap_or("?"),
                w.offset
            )),
            (None, Some(r)) => out.push(format!(
                "{path}.{}: at offset {} in Rust only",
                r.name, r.offset
            )),
            (None, None) => {}
        }
    }
    out
}

/// The differences between a family's WGSL (its `var<uniform> params` at binding 0 and that
/// variable's struct) and the Rust `layout`.
fn family_differences(family: &Family, layout: &Layout) -> Vec<String> {
    models()
        .iter()
        .flat_map(|model| {
            let text = source(family, model);
            variable_differences(&text, family.module, "params", (0, 0), layout)
        })
        .collect()
}

/// The differences between the variable `name` of the WGSL `text` (at (group, binding)
/// `at`: a uniform at binding 0, storage elsewhere) and the Rust `layout`.
fn variable_differences(
    text: &str,
    module: &str,
    name: &str,
    at: (u32, u32),
    layout: &Layout,
) -> Vec<String> {
    let parsed = match naga::front::wgsl::parse_str(text) {
        Ok(parsed) => parsed,
        Err(e) => return vec![format!("{module}: {}", e.emit_to_string(""))],
    };
    let variable = parsed
        .global_variables
        .iter()
        .map(|(_, v)| v)
        .find(|v| v.name.as_deref() == Some(name));
    let Some(variable) = variable else {
        return vec![format!("{module}: no `{name}` variable")];
    };
    let mut out = Vec::new();
    let binding = variable.binding.as_ref().map(|b| (b.group, b.binding));
    let space = if at.1 == 0 {
        matches!(variable.space, naga::AddressSpace::Uniform)
    } else {
        matches!(variable.space, naga::AddressSpace::Storage { .. })
    };
    if !space || binding != Some(at) {
        out.push(format!(
            "{module}: {name} is {:?} at {binding:?}, not at {at:?}",
            variable.space
        ));
    }
    out.extend(differences(&parsed, variable.ty, layout, module));
    out
}

/// Every family's params struct in Rust matches its WGSL struct: name, size, and each
/// member's name, type and offset (parsed by naga, the front end wgpu compiles with); so do
/// every prior's and likelihood's own params (`prior_params`, `likelihood_params`, in the
/// module that splices them) and the prior updates' (`params` of their modules).
#[test]
fn params_match_the_wgsl() {
    let mut all = Vec::new();
    for family in FAMILIES {
        all.extend(family_differences(family, family.params));
    }
    for model in models() {
        let text = source(&likelihood::FAMILY, &model);
        for (name, number, own) in [
            ("prior_params", 14, model.prior),
            ("likelihood_params", 16, model.likelihood),
        ] {
            if let Some(layout) = own.params {
                all.extend(variable_differences(
                    &text,
                    own.name,
                    name,
                    (0, number),
                    layout,
                ));
            }
        }
    }
    for prior in Prior::DEFAULTS {
        if let Some((text, params)) = prior.update_kernel(1, 2, (3, 5)) {
            let name = format!("{} update", prior.name());
            all.extend(variable_differences(
                text,
                &name,
                "params",
                (0, 0),
                params.layout,
            ));
        }
    }
    assert!(
        all.is_empty(),
        "{} differences:\n{}",
        all.len(),
        all.join("\n")
    );
}

/// The comparison reports a wrong layout member by member (so the test above can fail).
#[test]
fn params_check_reports_each_difference() {
    let found = family_differences(&select::FAMILY, &<FistaParams as WgslStruct>::LAYOUT);
    for expected in [
        "select: struct SelectParams in the WGSL, FistaParams in Rust",
        "select: size 16 in the WGSL, 32 in Rust",
        "select: member 2 is _pad0 in the WGSL, lam in Rust",
        "select.lam: type u32 in the WGSL, f32 in Rust",
        "select.tau: at offset 16 in Rust only",
    ] {
        assert!(
            found.iter().any(|f| f == expected),
            "missing {expected:?} in {found:#?}"
        );
    }
    let found = family_differences(&gather::FAMILY, &<TangentParams as WgslStruct>::LAYOUT);
    for expected in [
        "gather: member 0 is stream in the WGSL, d in Rust",
        "gather.d: type Stream in the WGSL, u32 in Rust",
        "gather._pad0: offset 16 in the WGSL, 4 in Rust",
        "gather.gather_factor: at offset 32 in the WGSL only",
    ] {
        assert!(
            found.iter().any(|f| f == expected),
            "missing {expected:?} in {found:#?}"
        );
    }
}

/// Every family's declared layout matches its WGSL: each entry point exists, and each
/// binding is declared in the module's sources with that number, name and access, with
/// every model whose prior and likelihood hold the binding's condition.
#[test]
fn declared_layouts_match_the_wgsl() {
    for family in FAMILIES {
        for model in models() {
            let source = source(family, &model);
            declared_in(family, &model, &source);
        }
    }
}

/// `declared_layouts_match_the_wgsl` for one model's module `source`.
fn declared_in(family: &Family, model: &ModelWgsl, source: &str) {
    {
        for entry in family.entries {
            let function = format!("fn {}(", entry.entry_point);
            assert!(source.contains(&function), "{}: {function}", family.module);
            for binding in entry.bindings.iter().filter(|b| model.holds(b.condition)) {
                let access = if binding.read_only {
                    "read"
                } else {
                    "read_write"
                };
                let declaration = format!(
                    "@group(0) @binding({}) var<storage, {access}> {}:",
                    binding.number, binding.name
                );
                assert!(
                    source.contains(&declaration),
                    "{} {} ({} prior, {} likelihood): {declaration}",
                    family.module,
                    entry.entry_point,
                    model.prior.name,
                    model.likelihood.name
                );
            }
        }
    }
}

/// Every family's module parses and validates (naga, as wgpu does before compiling) with
/// each products' tile, dictionary precision and prior, so a tile that only a GPU would pick
/// is checked without one.
#[test]
fn every_module_validates_with_each_tile() {
    let mut failures = Vec::new();
    for family in FAMILIES {
        for tile in [GemmTile::Narrow, GemmTile::Wide] {
            for precision in [Precision::F32, Precision::F16] {
                for model in models() {
                    let text = source_tiled(family, &model, precision, tile);
                    let (prior, likelihood) = (model.prior.name, model.likelihood.name);
                    let at = format!(
                        "{} ({tile:?}, {precision:?}, {prior} prior, {likelihood} likelihood)",
                        family.module
                    );
                    let module = match naga::front::wgsl::parse_str(&text) {
                        Ok(module) => module,
                        Err(e) => {
                            failures.push(format!("{at}: {}", e.emit_to_string(&text)));
                            continue;
                        }
                    };
                    // unpack2x16float (the f16 dictionary) is core WGSL that naga files
                    // under this capability; wgpu grants it on every adapter we run.
                    let capabilities = naga::valid::Capabilities::default()
                        | naga::valid::Capabilities::SHADER_FLOAT16_IN_FLOAT32;
                    let mut validator = naga::valid::Validator::new(
                        naga::valid::ValidationFlags::all(),
                        capabilities,
                    );
                    if let Err(e) = validator.validate(&module) {
                        failures.push(format!("{at}: {}", e.emit_to_string(&text)));
                    }
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Every index into a register tile (`acc[…]`, `(*acc)[…]`) of every module is a constant once
/// the loops are unrolled (`unroll`): a loop counter left in one put the tile in indexable
/// memory, and the products ran 19 times slower on an NVIDIA H200.
#[test]
fn register_tiles_are_indexed_by_constants_only() {
    let mut failures = Vec::new();
    for family in FAMILIES {
        for tile in [GemmTile::Narrow, GemmTile::Wide] {
            let model = &models()[0];
            let source = source_tiled(family, model, Precision::F32, tile);
            let code = source.lines().map(|l| l.split("//").next().unwrap_or(""));
            let text = code.collect::<Vec<_>>().join("\n");
            let consts: Vec<&str> = text
                .split("const ")
                .skip(1)
                .filter_map(|rest| rest.split([' ', ':', '=']).next())
                .collect();
            for (at, _) in text.match_indices("acc") {
                let rest = &text[at + 3..];
                let Some(index) = rest.strip_prefix(")[").or_else(|| rest.strip_prefix('[')) else {
                    continue;
                };
                let index = &index[..index.find(']').unwrap_or(index.len())];
                let names = index
                    .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                    .filter(|w| w.starts_with(|c: char| c.is_alphabetic() || c == '_'));
                for name in names {
                    if !consts.contains(&name) {
                        failures.push(format!("{} ({tile:?}): acc[{index}]", family.module));
                    }
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

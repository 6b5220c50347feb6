//! Rust structs mirrored member by member by WGSL structs: the typed params of the kernels, the priors and the likelihoods.
//!
//! A struct declared with `wgsl_struct!` is `#[repr(C)]` and `Pod`, and carries its `Layout`
//! (name, size, each member's name, WGSL type and offset), which the backend's layout test
//! compares with the WGSL text as naga parses it. The model declares its priors' and likelihoods'
//! params here, below the backends that upload them.

/// One member of a params struct as Rust lays it out: its name, its WGSL type, its byte offset,
/// and the layout of the struct it holds (None for a scalar).
#[derive(Clone, Copy, Debug)]
pub struct Member {
    /// The field's name (the WGSL member's).
    pub name: &'static str,
    /// The WGSL type it mirrors (`u32`, `f32`, or a struct's name).
    pub ty: &'static str,
    /// Its byte offset (`offset_of!`).
    pub offset: usize,
    /// The nested struct's layout, for a struct member.
    pub nested: Option<&'static Layout>,
}

/// A params struct's layout on the Rust side: the WGSL struct's name, its size and its members
/// in order.
#[derive(Clone, Copy, Debug)]
pub struct Layout {
    /// The struct's name, the same in Rust and WGSL.
    pub name: &'static str,
    /// `size_of` the struct.
    pub size: usize,
    /// Its fields, in order.
    pub members: &'static [Member],
}

/// A Rust struct mirroring a WGSL struct, member by member.
pub trait WgslStruct: bytemuck::Pod {
    /// Its layout, for the bind-group layouts and the layout test.
    const LAYOUT: Layout;
}

/// What a params member is: a 32-bit scalar, or a nested `WgslStruct`.
pub trait WgslMember {
    /// The WGSL type it mirrors.
    const WGSL_TYPE: &'static str;
    /// The nested struct's layout; None for a scalar.
    const NESTED: Option<&'static Layout>;
}

impl WgslMember for u32 {
    const WGSL_TYPE: &'static str = "u32";
    const NESTED: Option<&'static Layout> = None;
}

impl WgslMember for f32 {
    const WGSL_TYPE: &'static str = "f32";
    const NESTED: Option<&'static Layout> = None;
}

/// Typed values as the bytes a buffer holds, with the layout they must match.
#[derive(Clone, Debug)]
pub struct WgslBytes {
    /// The layout of the struct the bytes hold (one or more in a row).
    pub layout: &'static Layout,
    /// The bytes, `layout.size` per value.
    pub bytes: Vec<u8>,
}

impl WgslBytes {
    /// One value.
    pub fn of<T: WgslStruct>(value: &T) -> WgslBytes {
        WgslBytes {
            layout: &T::LAYOUT,
            bytes: bytemuck::bytes_of(value).to_vec(),
        }
    }

    /// Values in a row (a per-chain array).
    pub fn rows<T: WgslStruct>(values: &[T]) -> WgslBytes {
        WgslBytes {
            layout: &T::LAYOUT,
            bytes: bytemuck::cast_slice(values).to_vec(),
        }
    }
}

/// What a backend compiles and binds for a prior or a likelihood: its WGSL, spliced into the
/// kernels that call it, and what that WGSL reads besides the kernels' own bindings.
#[derive(Clone, Copy, Debug)]
pub struct WgslModel {
    /// Its name, unique among the priors or the likelihoods (the compiled pipelines' key).
    pub name: &'static str,
    /// The WGSL functions (and bindings) it defines for the kernels.
    pub wgsl: &'static str,
    /// Its params struct, which its WGSL reads as `prior_params` or `likelihood_params`; None:
    /// it has no hyper-parameters the kernels read.
    pub params: Option<&'static Layout>,
    /// Whether it reads per-chain data (`prior_state`, `likelihood_chains`).
    pub chains: bool,
    /// Whether it writes per-chain scratch (`likelihood_scratch`).
    pub scratch: bool,
}

/// Declares a struct mirrored by the WGSL struct of the same name: `#[repr(C)]`, `Pod`, every
/// field public and documented, its `Layout` built from `offset_of!`. `uniform` structs (a
/// kernel family's params) are padded to a multiple of 16 bytes with `_padN` members, as in the
/// WGSL; storage structs need only 4-byte members.
macro_rules! wgsl_struct {
    ($(#[$doc:meta])* pub struct $name:ident {
        $($(#[$field_doc:meta])* $field:ident: $ty:ty,)+
    }) => {
        $crate::model::wgsl::wgsl_struct!(@define $(#[$doc])* $name { $($(#[$field_doc])* $field: $ty,)+ });
        const _: () = assert!(
            ::std::mem::size_of::<$name>() % 16 == 0,
            "a params struct's size is a multiple of 16 bytes"
        );
    };
    ($(#[$doc:meta])* pub storage struct $name:ident {
        $($(#[$field_doc:meta])* $field:ident: $ty:ty,)+
    }) => {
        $crate::model::wgsl::wgsl_struct!(@define $(#[$doc])* $name { $($(#[$field_doc])* $field: $ty,)+ });
    };
    (@define $(#[$doc:meta])* $name:ident {
        $($(#[$field_doc:meta])* $field:ident: $ty:ty,)+
    }) => {
        $(#[$doc])*
        #[repr(C)]
        #[derive(Clone, Copy, Debug, Default, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
        pub struct $name {
            $($(#[$field_doc])* pub $field: $ty,)+
        }

        impl $crate::model::wgsl::WgslStruct for $name {
            const LAYOUT: $crate::model::wgsl::Layout = $crate::model::wgsl::Layout {
                name: stringify!($name),
                size: ::std::mem::size_of::<$name>(),
                members: &[$($crate::model::wgsl::Member {
                    name: stringify!($field),
                    ty: <$ty as $crate::model::wgsl::WgslMember>::WGSL_TYPE,
                    offset: ::std::mem::offset_of!($name, $field),
                    nested: <$ty as $crate::model::wgsl::WgslMember>::NESTED,
                }),+],
            };
        }

        impl $crate::model::wgsl::WgslMember for $name {
            const WGSL_TYPE: &'static str = stringify!($name);
            const NESTED: Option<&'static $crate::model::wgsl::Layout> =
                Some(&<$name as $crate::model::wgsl::WgslStruct>::LAYOUT);
        }
    };
}

pub(crate) use wgsl_struct;

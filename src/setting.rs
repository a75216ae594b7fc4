//! Settings enums: one macro gives each the same names in serde (checkpoints, URLs), strum
//! (parsing, `VARIANTS` for --help and the page) and Display, so that they cannot drift.

/// Declares a settings enum named by its variants in lower case: `Copy`, `Eq`, serde, strum's
/// `Display`, `EnumString` (`"adamw".parse()`), `AsRefStr` and `VariantNames` (`T::VARIANTS`).
/// Attributes before `enum` (docs, `#[derive(Default)]`) and on variants pass through.
#[macro_export]
macro_rules! setting_enum {
    ($(#[$meta:meta])* $vis:vis enum $name:ident {
        $($(#[$vmeta:meta])* $variant:ident),+ $(,)?
    }) => {
        $(#[$meta])*
        #[derive(
            Debug,
            Clone,
            Copy,
            PartialEq,
            Eq,
            serde::Serialize,
            serde::Deserialize,
            strum::Display,
            strum::EnumString,
            strum::AsRefStr,
            strum::VariantNames,
        )]
        #[serde(rename_all = "lowercase")]
        #[strum(serialize_all = "lowercase")]
        $vis enum $name {
            $($(#[$vmeta])* $variant),+
        }
    };
}

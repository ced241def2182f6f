//! `seed!`: the `DeserializeSeed` + `Visitor` pair every streaming JSON reader of the client
//! (SSE events, Responses/Anthropic events, embeddings and rankings bodies) writes its seeds
//! with, so each seed states only how it reads its part of the document, in place, without
//! building a `Value`.

/// Implements `DeserializeSeed` (by `$deserialize`) and `Visitor` for a seed that reads into
/// `()`, given what the visitor expects and its `visit_*` methods. With `skipping others;` the
/// seed also accepts (and ignores) null, booleans, numbers and arrays, for fields whose other
/// shapes carry nothing the reader needs.
macro_rules! seed {
    ($seed:ident, $deserialize:ident, $expecting:literal, skipping others; $($visit:item)*) => {
        $crate::client::seed::seed! {
            $seed, $deserialize, $expecting,
            $($visit)*
            fn visit_unit<E: serde::de::Error>(self) -> Result<(), E> { Ok(()) }
            fn visit_bool<E: serde::de::Error>(self, _: bool) -> Result<(), E> { Ok(()) }
            fn visit_u64<E: serde::de::Error>(self, _: u64) -> Result<(), E> { Ok(()) }
            fn visit_i64<E: serde::de::Error>(self, _: i64) -> Result<(), E> { Ok(()) }
            fn visit_f64<E: serde::de::Error>(self, _: f64) -> Result<(), E> { Ok(()) }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
                while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
                Ok(())
            }
        }
    };
    ($seed:ident, $deserialize:ident, $expecting:literal, $($visit:item)*) => {
        impl<'de> serde::de::DeserializeSeed<'de> for $seed<'_> {
            type Value = ();
            fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
                d.$deserialize(self)
            }
        }

        impl<'de> serde::de::Visitor<'de> for $seed<'_> {
            type Value = ();
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str($expecting)
            }
            $($visit)*
        }
    };
}

pub(crate) use seed;

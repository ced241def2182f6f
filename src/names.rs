//! How an enum's names in files and flags are declared once: on the enum, with strum's derives.
//!
//! `#[derive(strum::IntoStaticStr, strum::EnumString, strum::VariantArray, strum::VariantNames)]`
//! and `#[strum(to_string = "name", serialize = "alias")]` on a variant give the name written
//! (`<&'static str>::from(v)`), the names read back (`str::parse`, aliases of older files and
//! other tools included) and the list of variants, from the same attributes; [`serde_by_name`]
//! makes serde write and read the same names. A new variant needs nothing more, and
//! [`assert_round_trip`] checks every variant of an enum reads back as itself.

/// Implements `Serialize` and `Deserialize` for a unit enum through its strum names: written as
/// `<&'static str>::from(v)`, read with its `FromStr` (aliases included); an unknown name is
/// refused with the list of names.
macro_rules! serde_by_name {
    ($t:ty) => {
        impl serde::Serialize for $t {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(<&'static str>::from(self))
            }
        }

        impl<'de> serde::Deserialize<'de> for $t {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let name = <String as serde::Deserialize>::deserialize(d)?;
                name.parse().map_err(|_| {
                    serde::de::Error::unknown_variant(&name, <$t as strum::VariantNames>::VARIANTS)
                })
            }
        }
    };
}
pub(crate) use serde_by_name;

/// Asserts that every variant of `T` reads back as itself from its name and that no two
/// variants share a name.
#[cfg(test)]
pub(crate) fn assert_round_trip<T>()
where
    T: strum::VariantArray + Copy + PartialEq + std::fmt::Debug + std::str::FromStr,
    &'static str: From<T>,
{
    let mut seen = std::collections::BTreeSet::new();
    for &v in T::VARIANTS {
        let name = <&'static str>::from(v);
        assert!(seen.insert(name), "{name} names two variants");
        assert_eq!(name.parse::<T>().ok(), Some(v), "{name}");
    }
    assert!("no such name".parse::<T>().is_err());
}

/// [`assert_round_trip`], and serde writes every variant as its name and reads it back.
#[cfg(test)]
pub(crate) fn assert_serde_round_trip<T>()
where
    T: strum::VariantArray
        + Copy
        + PartialEq
        + std::fmt::Debug
        + std::str::FromStr
        + serde::Serialize
        + serde::de::DeserializeOwned,
    &'static str: From<T>,
{
    assert_round_trip::<T>();
    for &v in T::VARIANTS {
        let json = serde_json::to_string(&v).unwrap();
        assert_eq!(json, format!("\"{}\"", <&'static str>::from(v)));
        assert_eq!(serde_json::from_str::<T>(&json).unwrap(), v, "{json}");
    }
    let e = serde_json::from_str::<T>("\"no such name\"").unwrap_err();
    assert!(
        e.to_string().contains("unknown variant `no such name`"),
        "{e}"
    );
}

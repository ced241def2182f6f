//! Tensors as KServe v2 carries them: datatypes, shapes, and the raw little-endian encoding of
//! `raw_input_contents` (BYTES elements as a 4-byte little-endian length + bytes). Also what a
//! server says about a model ([`ModelInfo`]), which decides names, types and shapes.

use serde::Serialize;
use strum::VariantArray;

use crate::proto;

/// A KServe v2 datatype. Its name in model metadata, infer requests and files is declared here
/// once (strum); its name in a Triton model configuration is the protobuf enum's
/// ([`DataType::proto`]).
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    strum::IntoStaticStr,
    strum::EnumString,
    strum::VariantArray,
    strum::VariantNames,
)]
pub enum DataType {
    /// 1 byte, 0 or 1.
    #[strum(to_string = "BOOL")]
    Bool,
    #[allow(missing_docs)]
    #[strum(to_string = "UINT8")]
    U8,
    #[allow(missing_docs)]
    #[strum(to_string = "UINT16")]
    U16,
    #[allow(missing_docs)]
    #[strum(to_string = "UINT32")]
    U32,
    #[allow(missing_docs)]
    #[strum(to_string = "UINT64")]
    U64,
    #[allow(missing_docs)]
    #[strum(to_string = "INT8")]
    I8,
    #[allow(missing_docs)]
    #[strum(to_string = "INT16")]
    I16,
    #[allow(missing_docs)]
    #[strum(to_string = "INT32")]
    I32,
    #[allow(missing_docs)]
    #[strum(to_string = "INT64")]
    I64,
    /// IEEE half precision.
    #[strum(to_string = "FP16")]
    F16,
    /// bfloat16.
    #[strum(to_string = "BF16")]
    Bf16,
    #[allow(missing_docs)]
    #[strum(to_string = "FP32")]
    F32,
    #[allow(missing_docs)]
    #[strum(to_string = "FP64")]
    F64,
    /// Variable-length byte strings (`TYPE_STRING` in model configs).
    #[strum(to_string = "BYTES")]
    Bytes,
}

crate::names::serde_by_name!(DataType);

impl DataType {
    /// Parses a metadata datatype string (`"INT32"`, `"BYTES"`, ...) or a model configuration's
    /// (`"TYPE_INT32"`, `"TYPE_STRING"`), in any case.
    pub fn from_name(s: &str) -> Option<DataType> {
        let s = s.trim().to_ascii_uppercase();
        s.parse().ok().or_else(|| {
            let config = proto::DataType::from_str_name(&s)?;
            let mut all = DataType::VARIANTS.iter().copied();
            all.find(|d| d.proto() == config)
        })
    }

    /// The wire name (`"INT32"`).
    pub fn name(self) -> &'static str {
        self.into()
    }

    /// The model-configuration protobuf enum value; its name (`TYPE_INT32`, `TYPE_STRING`) is
    /// the datatype's name in a model configuration's JSON.
    pub fn proto(self) -> proto::DataType {
        // `TYPE_` and the wire name, but for BYTES, which a configuration calls a string.
        let name = match self {
            DataType::Bytes => "STRING",
            d => d.name(),
        };
        proto::DataType::from_str_name(&format!("TYPE_{name}"))
            .unwrap_or(proto::DataType::TypeInvalid)
    }

    /// The datatype's name in a Triton model configuration (`"TYPE_INT32"`, `"TYPE_STRING"`).
    pub fn config_name(self) -> &'static str {
        self.proto().as_str_name()
    }

    /// Bytes per element, `None` for BYTES.
    pub fn size(self) -> Option<usize> {
        Some(match self {
            DataType::Bool | DataType::U8 | DataType::I8 => 1,
            DataType::U16 | DataType::I16 | DataType::F16 | DataType::Bf16 => 2,
            DataType::U32 | DataType::I32 | DataType::F32 => 4,
            DataType::U64 | DataType::I64 | DataType::F64 => 8,
            DataType::Bytes => return None,
        })
    }
}

/// One declared input or output.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TensorSpec {
    /// Tensor name.
    pub name: String,
    /// Datatype.
    pub datatype: DataType,
    /// Dimensions without the batch dimension (`-1` = variable).
    pub dims: Vec<i64>,
    /// Whether a request may leave it out.
    pub optional: bool,
}

/// What a server says about a model: its metadata and configuration, combined.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelInfo {
    /// Model name.
    pub name: String,
    /// Platform (`ensemble`, `python`, ...).
    pub platform: String,
    /// Backend (`tensorrtllm`, `vllm`, `python`, ...).
    pub backend: String,
    /// 0 = no batching; > 0 = requests carry a leading batch dimension.
    pub max_batch_size: i32,
    /// Decoupled transaction policy (many responses per request).
    pub decoupled: bool,
    /// Inputs.
    pub inputs: Vec<TensorSpec>,
    /// Outputs.
    pub outputs: Vec<TensorSpec>,
}

impl ModelInfo {
    /// The declared input named `name`.
    pub fn input(&self, name: &str) -> Option<&TensorSpec> {
        self.inputs.iter().find(|t| t.name == name)
    }

    /// "a (BYTES [1]), b (INT32 [1], optional)" for messages.
    pub fn describe_inputs(&self) -> String {
        self.inputs
            .iter()
            .map(|t| {
                let dims: Vec<String> = t.dims.iter().map(i64::to_string).collect();
                format!(
                    "{} ({} [{}]{})",
                    t.name,
                    t.datatype.name(),
                    dims.join(","),
                    if t.optional { ", optional" } else { "" }
                )
            })
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The shape a request sends for a tensor of `elements` elements along its variable
    /// dimension: dims with -1 replaced, plus the batch dimension when the model batches.
    pub fn request_shape(&self, spec: &TensorSpec, batch: usize, fill: i64) -> Vec<i64> {
        let mut shape = Vec::with_capacity(spec.dims.len() + 1);
        if self.max_batch_size > 0 {
            shape.push(batch as i64);
        }
        if spec.dims.is_empty() {
            shape.push(fill);
        } else {
            shape.extend(spec.dims.iter().map(|&d| if d < 0 { fill } else { d }));
        }
        shape
    }
}

/// Encodes BYTES elements: each a 4-byte little-endian length followed by its bytes.
pub fn encode_bytes_elements<'a>(items: impl IntoIterator<Item = &'a [u8]>) -> Vec<u8> {
    let mut out = Vec::new();
    for it in items {
        out.extend_from_slice(&(it.len() as u32).to_le_bytes());
        out.extend_from_slice(it);
    }
    out
}

/// Decodes BYTES elements (each a 4-byte little-endian length followed by its bytes); an
/// element its length says runs past the end ends at the end.
pub fn bytes_elements(raw: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut rest = raw;
    std::iter::from_fn(move || {
        let (len, tail) = rest.split_first_chunk::<4>()?;
        let (item, after) = tail.split_at((u32::from_le_bytes(*len) as usize).min(tail.len()));
        rest = after;
        Some(item)
    })
}

/// Why a JSON value cannot be one element of a tensor's datatype. Callers name the input (or
/// the file and field) in front, as a usage error.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ScalarError {
    /// A JSON number that is not a float (never, with serde_json's numbers).
    #[error("{value} is not a number {datatype}")]
    NotNumber {
        /// The value.
        value: serde_json::Number,
        /// The datatype.
        datatype: &'static str,
    },
    /// A string that does not parse as a number.
    #[error("'{0}' is not a number")]
    NotNumberText(String),
    /// A number with a fraction, for an integer type.
    #[error("{0} is not a whole number")]
    NotWhole(serde_json::Number),
    /// A string that does not parse as a whole number.
    #[error("'{0}' is not a whole number")]
    NotWholeText(String),
    /// An array or object.
    #[error("{0} is not a scalar")]
    NotScalar(serde_json::Value),
    /// A whole number out of the datatype's range.
    #[error("{value} does not fit in {datatype}")]
    DoesNotFit {
        /// The value.
        value: i128,
        /// The datatype.
        datatype: &'static str,
    },
    /// A string that is not a boolean.
    #[error("'{0}' is not a boolean")]
    NotBoolText(String),
    /// Another value that is not a boolean.
    #[error("{0} is not a boolean")]
    NotBool(serde_json::Value),
}

/// Encodes one JSON value as a single element of `dt` (raw little-endian). Strings that hold a
/// number are accepted for numeric types (`--extra-inputs temperature:0.7` arrives as a number,
/// `"0.7"` as a string).
pub fn encode_scalar(dt: DataType, v: &serde_json::Value) -> Result<Vec<u8>, ScalarError> {
    use serde_json::Value;
    let as_f64 = || -> Result<f64, ScalarError> {
        match v {
            Value::Number(n) => n.as_f64().ok_or_else(|| ScalarError::NotNumber {
                value: n.clone(),
                datatype: dt.name(),
            }),
            Value::String(s) => s
                .trim()
                .parse()
                .map_err(|_| ScalarError::NotNumberText(s.clone())),
            Value::Bool(b) => Ok(if *b { 1.0 } else { 0.0 }),
            other => Err(ScalarError::NotScalar(other.clone())),
        }
    };
    let as_i128 = || -> Result<i128, ScalarError> {
        match v {
            Value::Number(n) => n
                .as_i64()
                .map(i128::from)
                .or_else(|| n.as_u64().map(i128::from))
                .ok_or_else(|| ScalarError::NotWhole(n.clone())),
            Value::String(s) => s
                .trim()
                .parse()
                .map_err(|_| ScalarError::NotWholeText(s.clone())),
            Value::Bool(b) => Ok(i128::from(*b)),
            other => Err(ScalarError::NotScalar(other.clone())),
        }
    };
    fn fit<T: TryFrom<i128>>(x: i128, dt: DataType) -> Result<T, ScalarError> {
        T::try_from(x).map_err(|_| ScalarError::DoesNotFit {
            value: x,
            datatype: dt.name(),
        })
    }
    Ok(match dt {
        DataType::Bool => {
            let b = match v {
                Value::Bool(b) => *b,
                Value::Number(n) => n.as_f64().is_some_and(|x| x != 0.0),
                Value::String(s) => match s.trim().to_ascii_lowercase().as_str() {
                    "true" | "1" => true,
                    "false" | "0" => false,
                    _ => return Err(ScalarError::NotBoolText(s.clone())),
                },
                other => return Err(ScalarError::NotBool(other.clone())),
            };
            vec![u8::from(b)]
        }
        DataType::U8 => fit::<u8>(as_i128()?, dt)?.to_le_bytes().to_vec(),
        DataType::U16 => fit::<u16>(as_i128()?, dt)?.to_le_bytes().to_vec(),
        DataType::U32 => fit::<u32>(as_i128()?, dt)?.to_le_bytes().to_vec(),
        DataType::U64 => fit::<u64>(as_i128()?, dt)?.to_le_bytes().to_vec(),
        DataType::I8 => fit::<i8>(as_i128()?, dt)?.to_le_bytes().to_vec(),
        DataType::I16 => fit::<i16>(as_i128()?, dt)?.to_le_bytes().to_vec(),
        DataType::I32 => fit::<i32>(as_i128()?, dt)?.to_le_bytes().to_vec(),
        DataType::I64 => fit::<i64>(as_i128()?, dt)?.to_le_bytes().to_vec(),
        DataType::F32 => (as_f64()? as f32).to_le_bytes().to_vec(),
        DataType::F64 => as_f64()?.to_le_bytes().to_vec(),
        DataType::F16 => half::f16::from_f32(as_f64()? as f32).to_le_bytes().to_vec(),
        DataType::Bf16 => half::bf16::from_f32(as_f64()? as f32)
            .to_le_bytes()
            .to_vec(),
        DataType::Bytes => {
            let s = match v {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            encode_bytes_elements([s.as_bytes()])
        }
    })
}

/// One element of a tensor's little-endian buffer (`c`: [`DataType::size`] bytes) as a JSON
/// value, the reading counterpart of [`encode_scalar`]: half-precision values as their float
/// value, NaN and infinities as `null` (JSON has neither), BYTES as `null` (their elements have
/// no fixed size; see [`encode_bytes_elements`]).
pub fn element_value(dt: DataType, c: &[u8]) -> serde_json::Value {
    use serde_json::Value;
    let mut b8 = [0u8; 8];
    let n = c.len().min(8);
    b8[..n].copy_from_slice(&c[..n]);
    let u = u64::from_le_bytes(b8);
    let float = |v: f64| serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number);
    match dt {
        DataType::Bool => Value::Bool(u & 0xff != 0),
        DataType::U8 | DataType::U16 | DataType::U32 | DataType::U64 => Value::from(u),
        DataType::I8 => Value::from(u as u8 as i8),
        DataType::I16 => Value::from(u as u16 as i16),
        DataType::I32 => Value::from(u as u32 as i32),
        DataType::I64 => Value::from(u as i64),
        DataType::F16 => float(half::f16::from_bits(u as u16).to_f64()),
        DataType::Bf16 => float(half::bf16::from_bits(u as u16).to_f64()),
        DataType::F32 => float(f64::from(f32::from_bits(u as u32))),
        DataType::F64 => float(f64::from_bits(u)),
        DataType::Bytes => Value::Null,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    /// Every datatype reads back from its metadata name and its model-configuration name, and
    /// each has a configuration name of its own.
    #[test]
    fn names_round_trip() {
        crate::names::assert_serde_round_trip::<DataType>();
        let mut config_names = std::collections::BTreeSet::new();
        for &d in DataType::VARIANTS {
            assert_eq!(DataType::from_name(d.name()), Some(d));
            assert_eq!(DataType::from_name(&d.name().to_lowercase()), Some(d));
            assert_eq!(DataType::from_name(d.config_name()), Some(d));
            assert!(config_names.insert(d.config_name()), "{d:?}");
        }
        assert_eq!(DataType::from_name("TYPE_STRING"), Some(DataType::Bytes));
        assert_eq!(DataType::F16.config_name(), "TYPE_FP16");
        assert_eq!(DataType::from_name("TYPE_INVALID"), None);
    }

    #[test]
    fn scalar_encodings() {
        let ok: [(DataType, Value, &[u8]); 6] = [
            (DataType::I32, json!(256), &256i32.to_le_bytes()),
            (DataType::U32, json!("7"), &7u32.to_le_bytes()),
            (DataType::Bool, json!(true), &[1]),
            (DataType::Bool, json!("false"), &[0]),
            (DataType::F32, json!(0.5), &0.5f32.to_le_bytes()),
            (DataType::Bytes, json!("hi"), &[2, 0, 0, 0, b'h', b'i']),
        ];
        for (dt, v, want) in ok {
            assert_eq!(encode_scalar(dt, &v).unwrap(), want, "{dt:?} {v}");
        }
        for (dt, v) in [
            (DataType::I8, json!(300)),
            (DataType::U32, json!(-1)),
            (DataType::I32, json!("abc")),
        ] {
            assert!(encode_scalar(dt, &v).is_err(), "{dt:?} {v}");
        }
    }

    #[test]
    fn half_precision() {
        let f16 = |v: f64| encode_scalar(DataType::F16, &json!(v)).unwrap();
        assert_eq!(f16(1.0), 0x3c00u16.to_le_bytes());
        assert_eq!(f16(-2.0), 0xc000u16.to_le_bytes());
        assert_eq!(f16(65504.0), 0x7bffu16.to_le_bytes());
        assert_eq!(f16(1e6), 0x7c00u16.to_le_bytes());
        assert_eq!(f16(0.0), [0, 0]);
        let bf16 = |v: f64| encode_scalar(DataType::Bf16, &json!(v)).unwrap();
        assert_eq!(bf16(1.0), 0x3f80u16.to_le_bytes());
        assert_eq!(bf16(-0.5), 0xbf00u16.to_le_bytes());
        // Read back as their values; infinity has no JSON number.
        assert_eq!(element_value(DataType::F16, &f16(-2.0)), json!(-2.0));
        assert_eq!(
            element_value(DataType::F16, &0x0001u16.to_le_bytes()),
            json!(2f64.powi(-24))
        );
        assert_eq!(element_value(DataType::F16, &f16(1e6)), Value::Null);
        assert_eq!(element_value(DataType::Bf16, &bf16(-0.5)), json!(-0.5));
    }

    #[test]
    fn elements_read_back() {
        for (dt, v) in [
            (DataType::Bool, json!(true)),
            (DataType::U8, json!(200)),
            (DataType::U64, json!(u64::MAX)),
            (DataType::I8, json!(-100)),
            (DataType::I16, json!(-30000)),
            (DataType::I32, json!(-7)),
            (DataType::I64, json!(i64::MIN)),
            (DataType::F32, json!(0.5)),
            (DataType::F64, json!(-1.25)),
        ] {
            assert_eq!(
                element_value(dt, &encode_scalar(dt, &v).unwrap()),
                v,
                "{dt:?}"
            );
        }
    }

    #[test]
    fn shapes_with_batch() {
        let spec = TensorSpec {
            name: "text_input".into(),
            datatype: DataType::Bytes,
            dims: vec![1],
            optional: false,
        };
        let mut m = ModelInfo {
            name: "m".into(),
            platform: String::new(),
            backend: String::new(),
            max_batch_size: 64,
            decoupled: true,
            inputs: vec![spec.clone()],
            outputs: vec![],
        };
        assert_eq!(m.request_shape(&spec, 1, 1), [1, 1]);
        m.max_batch_size = 0;
        assert_eq!(m.request_shape(&spec, 1, 1), [1]);
        let var = TensorSpec {
            dims: vec![-1],
            ..spec
        };
        assert_eq!(m.request_shape(&var, 1, 5), [5]);
        assert_eq!(m.describe_inputs(), "text_input (BYTES [1])");
    }
}

//! Parquet files (the Hugging Face hub's format) and Arrow files (the `datasets` library's
//! cache, written as Arrow IPC streams; IPC files are read too) as rows of JSON values, so one
//! reader of fields ([`super::rows`]) serves every format. Texts, integers, floats, booleans,
//! lists (a row's `choices`) and dictionary-encoded columns become their JSON values; columns of
//! other types read as null, which the field checks then name.

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::Path;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Float32Type, Float64Type, Int8Type, Int16Type, Int32Type, Int64Type, UInt8Type, UInt16Type,
    UInt32Type, UInt64Type,
};
use arrow_array::{Array, RecordBatch};
use arrow_schema::{ArrowError, DataType};
use serde_json::{Value, json};

use super::ScoredError;
use super::rows::{Located, Row};

/// The rows of a Parquet file, each located as `file row N` (1-based).
pub fn read_parquet(path: &Path) -> Result<Vec<Located>, ScoredError> {
    let file = open(path)?;
    let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)
        .and_then(|b| b.build())
        .map_err(|e| bad(path, &e.to_string()))?;
    rows_of(reader, path)
}

/// The rows of an Arrow IPC stream (the `datasets` cache) or IPC file.
pub fn read_arrow(path: &Path) -> Result<Vec<Located>, ScoredError> {
    let mut magic = [0u8; 6];
    let is_file = open(path)?.read_exact(&mut magic).is_ok() && &magic == b"ARROW1";
    let file = open(path)?;
    if is_file {
        let reader = arrow_ipc::reader::FileReader::try_new(file, None)
            .map_err(|e| bad(path, &e.to_string()))?;
        return rows_of(reader, path);
    }
    let reader = arrow_ipc::reader::StreamReader::try_new(BufReader::new(file), None)
        .map_err(|e| bad(path, &e.to_string()))?;
    rows_of(reader, path)
}

fn open(path: &Path) -> Result<File, ScoredError> {
    File::open(path).map_err(|e| ScoredError(format!("cannot read {}: {e}", path.display())))
}

fn bad(path: &Path, e: &str) -> ScoredError {
    ScoredError(format!(
        "{}: not a readable Parquet or Arrow file: {e}",
        path.display()
    ))
}

fn rows_of(
    batches: impl Iterator<Item = Result<RecordBatch, ArrowError>>,
    path: &Path,
) -> Result<Vec<Located>, ScoredError> {
    let mut out = Vec::new();
    for batch in batches {
        let batch = batch.map_err(|e| bad(path, &e.to_string()))?;
        let schema = batch.schema();
        for i in 0..batch.num_rows() {
            let row: Row = schema
                .fields()
                .iter()
                .zip(batch.columns())
                .map(|(f, col)| (f.name().clone(), value(col.as_ref(), i)))
                .collect();
            let at = format!("{} row {}", path.display(), out.len() + 1);
            out.push((row, at));
        }
    }
    Ok(out)
}

/// Element `i` of `a` as JSON.
fn value(a: &dyn Array, i: usize) -> Value {
    if a.is_null(i) {
        return Value::Null;
    }
    match a.data_type() {
        DataType::Utf8 => json!(a.as_string::<i32>().value(i)),
        DataType::LargeUtf8 => json!(a.as_string::<i64>().value(i)),
        DataType::Utf8View => json!(a.as_string_view().value(i)),
        DataType::Boolean => json!(a.as_boolean().value(i)),
        DataType::Int8 => json!(a.as_primitive::<Int8Type>().value(i)),
        DataType::Int16 => json!(a.as_primitive::<Int16Type>().value(i)),
        DataType::Int32 => json!(a.as_primitive::<Int32Type>().value(i)),
        DataType::Int64 => json!(a.as_primitive::<Int64Type>().value(i)),
        DataType::UInt8 => json!(a.as_primitive::<UInt8Type>().value(i)),
        DataType::UInt16 => json!(a.as_primitive::<UInt16Type>().value(i)),
        DataType::UInt32 => json!(a.as_primitive::<UInt32Type>().value(i)),
        DataType::UInt64 => json!(a.as_primitive::<UInt64Type>().value(i)),
        DataType::Float32 => json!(a.as_primitive::<Float32Type>().value(i)),
        DataType::Float64 => json!(a.as_primitive::<Float64Type>().value(i)),
        DataType::List(_) => list(a.as_list::<i32>().value(i).as_ref()),
        DataType::LargeList(_) => list(a.as_list::<i64>().value(i).as_ref()),
        DataType::FixedSizeList(..) => list(a.as_fixed_size_list().value(i).as_ref()),
        DataType::Dictionary(..) => match a.as_any_dictionary_opt() {
            Some(d) => {
                let key = d.normalized_keys()[i];
                value(d.values().as_ref(), key)
            }
            None => Value::Null,
        },
        _ => Value::Null,
    }
}

fn list(items: &dyn Array) -> Value {
    Value::Array((0..items.len()).map(|j| value(items, j)).collect())
}

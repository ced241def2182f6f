//! Reading KServe v2 responses straight from protobuf bytes, without building message structs:
//! a streamed token would otherwise cost several heap allocations (strings, a parameter map,
//! output vectors). Only the fields a load generator needs are looked at; everything else is
//! skipped by wire type, as protobuf allows.
//!
//! Field numbers (Triton `grpc_service.proto`): ModelStreamInferResponse {error_message = 1,
//! infer_response = 2}; ModelInferResponse {id = 3, parameters = 4 (map entry {key = 1, value =
//! 2}), outputs = 5, raw_output_contents = 6}; InferOutputTensor {name = 1, shape = 3,
//! contents = 5}; InferTensorContents {int_contents = 2, uint_contents = 4, bytes_contents = 8};
//! InferParameter {bool_param = 1}.
//!
//! The server's own token count, when the model returns one: `num_output_tokens` (Triton's vLLM
//! backend, a count per response), else `output_ids` (TensorRT-LLM: the tokens themselves; their
//! number is the product of the tensor's shape, beam width 1), else `sequence_length`
//! (TensorRT-LLM: a count per response). Counts are INT32/UINT32, read from `raw_output_contents`
//! or typed contents.

/// What one response carried.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct ResponseInfo {
    /// Bytes of text appended (0 for an empty or flags-only response).
    pub text_bytes: usize,
    /// `triton_final_response` when present.
    pub final_flag: Option<bool>,
    /// Number of output tensors in the response.
    pub outputs: u32,
    /// Whether the response is a stream error (`error_message` set).
    pub has_error: bool,
    /// Output tokens this response carries by the server's count, when the model returns one.
    pub tokens: Option<u32>,
}

/// Outputs that say how many tokens a response carries, best first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum CountOutput {
    /// `num_output_tokens`: the count itself.
    NumOutputTokens,
    /// `output_ids`: the tokens; the count is the shape's product.
    OutputIds,
    /// `sequence_length`: the count itself.
    SequenceLength,
}

impl CountOutput {
    fn of(name: &[u8]) -> Option<CountOutput> {
        match name {
            b"num_output_tokens" => Some(CountOutput::NumOutputTokens),
            b"output_ids" => Some(CountOutput::OutputIds),
            b"sequence_length" => Some(CountOutput::SequenceLength),
            _ => None,
        }
    }
}

/// What [`read_output_tensor`] found in one output.
struct OutputTensor {
    is_text: bool,
    appended: usize,
    count: Option<CountOutput>,
    /// The product of its shape.
    elements: u64,
    /// Its first integer from typed contents, when it has them.
    first_int: Option<u32>,
}

/// A malformed protobuf message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WireError(pub &'static str);

impl std::fmt::Display for WireError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "malformed protobuf: {}", self.0)
    }
}

struct Reader<'a> {
    b: &'a [u8],
    i: usize,
}

impl<'a> Reader<'a> {
    fn new(b: &'a [u8]) -> Self {
        Reader { b, i: 0 }
    }

    fn done(&self) -> bool {
        self.i >= self.b.len()
    }

    fn varint(&mut self) -> Result<u64, WireError> {
        let mut v: u64 = 0;
        for shift in (0..64).step_by(7) {
            let byte = *self.b.get(self.i).ok_or(WireError("truncated varint"))?;
            self.i += 1;
            v |= u64::from(byte & 0x7f) << shift;
            if byte < 0x80 {
                return Ok(v);
            }
        }
        Err(WireError("varint longer than 10 bytes"))
    }

    fn bytes(&mut self) -> Result<&'a [u8], WireError> {
        let len = self.varint()? as usize;
        let end = self
            .i
            .checked_add(len)
            .filter(|&e| e <= self.b.len())
            .ok_or(WireError("length past the end"))?;
        let s = &self.b[self.i..end];
        self.i = end;
        Ok(s)
    }

    /// (field number, wire type)
    fn key(&mut self) -> Result<(u32, u8), WireError> {
        let k = self.varint()?;
        Ok(((k >> 3) as u32, (k & 7) as u8))
    }

    fn skip(&mut self, wire_type: u8) -> Result<(), WireError> {
        match wire_type {
            0 => self.varint().map(|_| ()),
            1 => self.advance(8),
            2 => self.bytes().map(|_| ()),
            5 => self.advance(4),
            _ => Err(WireError("unsupported wire type")),
        }
    }

    fn advance(&mut self, n: usize) -> Result<(), WireError> {
        if self.i + n > self.b.len() {
            return Err(WireError("fixed-width field past the end"));
        }
        self.i += n;
        Ok(())
    }
}

/// Reads a `ModelStreamInferResponse`. Text of the `text_output` tensor (or of the only output)
/// is appended to `text` when given (tensor profiling passes `None`: outputs are only counted);
/// a stream error's message is appended to `error`.
pub fn read_stream_response(
    msg: &[u8],
    mut text: Option<&mut String>,
    error: &mut String,
) -> Result<ResponseInfo, WireError> {
    let mut r = Reader::new(msg);
    let mut info = ResponseInfo::default();
    let error_start = error.len();
    while !r.done() {
        match r.key()? {
            (1, 2) => {
                // A repeated scalar field: the last occurrence wins, as protobuf decoders do.
                let e = r.bytes()?;
                error.truncate(error_start);
                error.push_str(&String::from_utf8_lossy(e));
                info.has_error = !e.is_empty();
            }
            (2, 2) => {
                let inner = r.bytes()?;
                let i = read_infer_response(inner, text.as_deref_mut())?;
                info.text_bytes += i.text_bytes;
                info.outputs += i.outputs;
                info.final_flag = i.final_flag.or(info.final_flag);
                info.tokens = match (info.tokens, i.tokens) {
                    (Some(a), Some(b)) => Some(a.saturating_add(b)),
                    (a, b) => a.or(b),
                };
            }
            (_, wt) => r.skip(wt)?,
        }
    }
    Ok(info)
}

/// Reads a stream's `ModelStreamInferResponse`s, remembering the bytes of its token responses
/// before their text: a server encodes every token of a request the same way (model, id,
/// parameters, output description) and only the last field, the raw `text_output` element,
/// differs. A response that is one `infer_response` whose bytes start with the remembered ones
/// and end in one raw BYTES element is read with a comparison instead of a walk over every
/// field (per-message protobuf walking was the largest user-space cost of a gRPC stream).
///
/// Exact, like [`super::events::EventReader`]: the remembered bytes come from a response the
/// full reader read, whose whole text was that one element, stored last and alone; the same
/// bytes before another such element mean the same outputs, flags and text index.
#[derive(Debug, Default)]
pub struct StreamShape {
    /// `infer_response`'s bytes before its raw text field.
    prefix: Vec<u8>,
    /// What the rest of such a response says (its text aside).
    info: ResponseInfo,
}

impl StreamShape {
    /// Reads one response like [`read_stream_response`].
    pub fn read(
        &mut self,
        msg: &[u8],
        text: Option<&mut String>,
        error: &mut String,
    ) -> Result<ResponseInfo, WireError> {
        let Some(text) = text else {
            return read_stream_response(msg, None, error);
        };
        if let Some(n) = self.same_shape(msg, text) {
            return Ok(ResponseInfo {
                text_bytes: n,
                ..self.info
            });
        }
        let before = text.len();
        let info = read_stream_response(msg, Some(&mut *text), error)?;
        if !info.has_error && info.text_bytes > 0 {
            self.learn(msg, &text.as_bytes()[before..], info);
        }
        Ok(info)
    }

    /// `infer_response`'s bytes when `msg` is that field alone.
    fn inner(msg: &[u8]) -> Option<&[u8]> {
        let mut r = Reader::new(msg);
        if r.key().ok()? != (2, 2) {
            return None;
        }
        let inner = r.bytes().ok()?;
        r.done().then_some(inner)
    }

    /// The text of a one-element raw BYTES field, `[tag][len][u32 le n][n bytes]`, that is all
    /// of `rest`.
    fn raw_text(rest: &[u8]) -> Option<&[u8]> {
        let mut r = Reader::new(rest);
        if r.key().ok()? != (6, 2) {
            return None;
        }
        let blob = r.bytes().ok()?;
        if !r.done() || blob.len() < 4 {
            return None;
        }
        let n = u32::from_le_bytes([blob[0], blob[1], blob[2], blob[3]]) as usize;
        (n == blob.len() - 4).then(|| &blob[4..])
    }

    #[inline]
    fn same_shape(&self, msg: &[u8], text: &mut String) -> Option<usize> {
        if self.prefix.is_empty() {
            return None;
        }
        let inner = Self::inner(msg)?;
        let rest = inner.strip_prefix(self.prefix.as_slice())?;
        let t = std::str::from_utf8(Self::raw_text(rest)?).ok()?;
        text.push_str(t);
        Some(t.len())
    }

    /// Remembers `msg`'s shape if its whole text (`appended`, read losslessly) was its only raw
    /// field, stored last.
    fn learn(&mut self, msg: &[u8], appended: &[u8], info: ResponseInfo) {
        let Some(inner) = Self::inner(msg) else {
            return;
        };
        let mut r = Reader::new(inner);
        let (mut last, mut raws) = (0, 0);
        while !r.done() {
            last = r.i;
            let Ok((field, wt)) = r.key() else { return };
            raws += usize::from(field == 6);
            if r.skip(wt).is_err() {
                return;
            }
        }
        if raws == 1 && Self::raw_text(&inner[last..]) == Some(appended) {
            self.prefix.clear();
            self.prefix.extend_from_slice(&inner[..last]);
            self.info = ResponseInfo {
                text_bytes: 0,
                ..info
            };
        }
    }
}

/// Reads a `ModelInferResponse`, appending its text output to `text` when given, and the
/// server's token count when an output says it.
pub fn read_infer_response(
    msg: &[u8],
    mut text: Option<&mut String>,
) -> Result<ResponseInfo, WireError> {
    let mut info = ResponseInfo::default();
    // First pass: which output index is the text, which one counts tokens, and the final flag.
    // Outputs precede raw contents in Triton's encoding, but protobuf does not promise field
    // order, so raw contents are read in a second pass, from the first of them on.
    let mut text_index: Option<u32> = None;
    // (which output, its index, its shape's product, its typed first integer)
    let mut count: Option<(CountOutput, u32, u64, Option<u32>)> = None;
    let mut r = Reader::new(msg);
    let mut contents_text = 0usize;
    let mut raw_start: Option<usize> = None;
    while !r.done() {
        let at = r.i;
        match r.key()? {
            (4, 2) => {
                if let Some(f) = read_final_param(r.bytes()?)? {
                    info.final_flag = Some(f);
                }
            }
            (5, 2) => {
                let out = read_output_tensor(r.bytes()?, text.as_deref_mut())?;
                if out.is_text && text_index.is_none() {
                    text_index = Some(info.outputs);
                }
                if let Some(c) = out.count
                    && count.is_none_or(|(best, ..)| c < best)
                {
                    count = Some((c, info.outputs, out.elements, out.first_int));
                }
                contents_text += out.appended;
                info.outputs += 1;
            }
            (6, wt) => {
                raw_start.get_or_insert(at);
                r.skip(wt)?;
            }
            (_, wt) => r.skip(wt)?,
        }
    }
    // A single output is the text even when it has another name.
    let wanted = text_index.or(if info.outputs == 1 { Some(0) } else { None });
    let count_raw = match count {
        Some((CountOutput::OutputIds, _, n, _)) => {
            info.tokens = Some(n.min(u64::from(u32::MAX)) as u32);
            None
        }
        Some((_, _, _, Some(v))) => {
            info.tokens = Some(v);
            None
        }
        Some((_, index, ..)) => Some(index),
        None => None,
    };
    if text.is_none() && count_raw.is_none() {
        return Ok(info);
    }
    let mut raw_text = 0usize;
    if let Some(start) = raw_start {
        let mut r = Reader { b: msg, i: start };
        let mut idx = 0u32;
        while !r.done() {
            match r.key()? {
                (6, 2) => {
                    let blob = r.bytes()?;
                    if Some(idx) == wanted
                        && let Some(t) = text.as_deref_mut()
                    {
                        raw_text += append_bytes_tensor(blob, t)?;
                    }
                    if Some(idx) == count_raw && blob.len() >= 4 {
                        info.tokens =
                            Some(u32::from_le_bytes([blob[0], blob[1], blob[2], blob[3]]));
                    }
                    idx += 1;
                }
                (_, wt) => r.skip(wt)?,
            }
        }
    }
    info.text_bytes = contents_text + raw_text;
    Ok(info)
}

/// A parameters map entry: returns the bool if it is `triton_final_response`.
fn read_final_param(entry: &[u8]) -> Result<Option<bool>, WireError> {
    let mut r = Reader::new(entry);
    let mut is_final = false;
    let mut value: Option<bool> = None;
    while !r.done() {
        match r.key()? {
            (1, 2) => is_final = r.bytes()? == b"triton_final_response",
            (2, 2) => {
                let p = r.bytes()?;
                let mut pr = Reader::new(p);
                while !pr.done() {
                    match pr.key()? {
                        (1, 0) => value = Some(pr.varint()? != 0),
                        (_, wt) => pr.skip(wt)?,
                    }
                }
            }
            (_, wt) => r.skip(wt)?,
        }
    }
    Ok(if is_final {
        Some(value.unwrap_or(false))
    } else {
        None
    })
}

/// An output tensor: is it named `text_output` (text appended from typed `bytes_contents`), or
/// one that counts tokens (its shape's product and first typed integer).
fn read_output_tensor(t: &[u8], mut text: Option<&mut String>) -> Result<OutputTensor, WireError> {
    let mut r = Reader::new(t);
    let mut out = OutputTensor {
        is_text: false,
        appended: 0,
        count: None,
        elements: 1,
        first_int: None,
    };
    let mut contents: Option<&[u8]> = None;
    while !r.done() {
        match r.key()? {
            (1, 2) => {
                let name = r.bytes()?;
                out.is_text = name == b"text_output";
                out.count = CountOutput::of(name);
            }
            (3, 2) => {
                let mut p = Reader::new(r.bytes()?);
                while !p.done() {
                    out.elements = out.elements.saturating_mul(p.varint()?);
                }
            }
            (3, 0) => out.elements = out.elements.saturating_mul(r.varint()?),
            (5, 2) => contents = Some(r.bytes()?),
            (_, wt) => r.skip(wt)?,
        }
    }
    let Some(c) = contents else {
        return Ok(out);
    };
    let mut r = Reader::new(c);
    while !r.done() {
        match r.key()? {
            (8, 2) if out.is_text => {
                let s = r.bytes()?;
                if let Some(text) = text.as_deref_mut() {
                    out.appended += push_lossy(s, text);
                }
            }
            // int_contents / uint_contents, packed or not: the count is the first element.
            (2 | 4, 2) if out.count.is_some() => {
                let mut p = Reader::new(r.bytes()?);
                if !p.done() {
                    out.first_int.get_or_insert(p.varint()? as u32);
                }
            }
            (2 | 4, 0) if out.count.is_some() => {
                let v = r.varint()? as u32;
                out.first_int.get_or_insert(v);
            }
            (_, wt) => r.skip(wt)?,
        }
    }
    Ok(out)
}

/// A raw BYTES tensor: elements of 4-byte little-endian length + bytes. Appends every element;
/// a length that overruns the blob is a malformed response, not text.
fn append_bytes_tensor(blob: &[u8], text: &mut String) -> Result<usize, WireError> {
    let mut i = 0;
    let mut total = 0;
    while i < blob.len() {
        let Some(prefix) = blob.get(i..i + 4) else {
            return Err(WireError(
                "BYTES element shorter than its 4-byte length prefix",
            ));
        };
        let len = u32::from_le_bytes([prefix[0], prefix[1], prefix[2], prefix[3]]) as usize;
        let end = i + 4 + len;
        let Some(item) = blob.get(i + 4..end) else {
            return Err(WireError("BYTES element length overruns the tensor"));
        };
        total += push_lossy(item, text);
        i = end;
    }
    Ok(total)
}

fn push_lossy(b: &[u8], text: &mut String) -> usize {
    match std::str::from_utf8(b) {
        Ok(s) => text.push_str(s),
        Err(_) => text.push_str(&String::from_utf8_lossy(b)),
    }
    b.len()
}

/// `v` in decimal, written into the tail of `buf` (no allocation); returns the digits.
pub fn decimal(mut v: u64, buf: &mut [u8; 20]) -> &[u8] {
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    &buf[i..]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::model_infer_response::InferOutputTensor;
    use crate::proto::{
        InferParameter, InferTensorContents, ModelInferResponse, ModelStreamInferResponse,
        infer_parameter,
    };
    use prost::Message;

    fn bytes_tensor_raw(items: &[&[u8]]) -> Vec<u8> {
        let mut v = Vec::new();
        for i in items {
            v.extend_from_slice(&(i.len() as u32).to_le_bytes());
            v.extend_from_slice(i);
        }
        v
    }

    fn bytes_tensor(items: &[&str]) -> Vec<u8> {
        let mut v = Vec::new();
        for s in items {
            v.extend_from_slice(&(s.len() as u32).to_le_bytes());
            v.extend_from_slice(s.as_bytes());
        }
        v
    }

    fn response(
        outputs: &[&str],
        raw: Vec<Vec<u8>>,
        final_flag: Option<bool>,
    ) -> ModelInferResponse {
        let mut params = std::collections::HashMap::new();
        params.insert(
            "other".to_string(),
            InferParameter {
                parameter_choice: Some(infer_parameter::ParameterChoice::StringParam("x".into())),
            },
        );
        if let Some(f) = final_flag {
            params.insert(
                "triton_final_response".to_string(),
                InferParameter {
                    parameter_choice: Some(infer_parameter::ParameterChoice::BoolParam(f)),
                },
            );
        }
        ModelInferResponse {
            model_name: "gpt2".into(),
            model_version: "1".into(),
            id: "42".into(),
            parameters: params,
            outputs: outputs
                .iter()
                .map(|n| InferOutputTensor {
                    name: n.to_string(),
                    datatype: "BYTES".into(),
                    shape: vec![1, 1],
                    ..Default::default()
                })
                .collect(),
            raw_output_contents: raw,
        }
    }

    fn stream_msg(resp: ModelInferResponse, error: &str) -> Vec<u8> {
        ModelStreamInferResponse {
            error_message: error.into(),
            infer_response: Some(resp),
        }
        .encode_to_vec()
    }

    /// Reads one stream message that must parse: its info, text and error message.
    fn read_whole(msg: &[u8]) -> (ResponseInfo, String, String) {
        let (mut text, mut err) = (String::new(), String::new());
        let info = read_stream_response(msg, Some(&mut text), &mut err).unwrap();
        (info, text, err)
    }

    /// A stream read through one [`StreamShape`] gives, message by message, exactly what
    /// [`read_stream_response`] gives each alone, and token messages take the remembered shape.
    #[test]
    fn stream_shape_agrees_with_the_full_reader() {
        let token = |t: &[u8], id: &str| {
            let mut r = response(&["text_output"], vec![bytes_tensor_raw(&[t])], None);
            r.parameters.clear();
            r.id = id.into();
            stream_msg(r, "")
        };
        let mut msgs = vec![
            token(b" the", "1"),
            token(b" of", "1"),
            token(b"", "1"),
            token("é✓".as_bytes(), "1"),
            token(b"\xff\xfe", "1"),
            token(b" x", "2"),
            stream_msg(
                response(&["text_output"], vec![bytes_tensor(&["a", "b"])], None),
                "",
            ),
            stream_msg(
                response(&["text_output"], vec![bytes_tensor(&["c"])], Some(true)),
                "",
            ),
            stream_msg(response(&["text_output"], vec![], Some(true)), ""),
            stream_msg(
                response(
                    &["a", "text_output"],
                    vec![bytes_tensor(&["no"]), bytes_tensor(&["yes"])],
                    None,
                ),
                "",
            ),
            stream_msg(
                response(&["text_output"], vec![bytes_tensor(&["e"])], None),
                "boom",
            ),
        ];
        let mut cut = token(b" cut", "1");
        cut.truncate(cut.len() - 2);
        msgs.push(cut);
        let mut shape = StreamShape::default();
        for round in 0..msgs.len() {
            for i in 0..msgs.len() {
                let m = &msgs[(i * (round + 1)) % msgs.len()];
                let (mut a, mut b, mut ea, mut eb) = (
                    String::from("p"),
                    String::from("p"),
                    String::new(),
                    String::new(),
                );
                let ra = shape.read(m, Some(&mut a), &mut ea);
                let rb = read_stream_response(m, Some(&mut b), &mut eb);
                assert_eq!(ra, rb);
                assert_eq!((a, ea), (b, eb));
            }
        }
        let mut shape = StreamShape::default();
        shape
            .read(
                &token(b" a", "7"),
                Some(&mut String::new()),
                &mut String::new(),
            )
            .unwrap();
        let mut t = String::new();
        assert_eq!(shape.same_shape(&token(b" bcd", "7"), &mut t), Some(4));
        assert_eq!(t, " bcd");
        assert_eq!(shape.same_shape(&token(b" bcd", "8"), &mut t), None);
    }

    /// A token response and an empty final one: the text each carries and what the reader says.
    #[test]
    fn token_and_empty_final_responses() {
        let token = response(
            &["cum_log_probs", "text_output"],
            vec![vec![0; 4], bytes_tensor(&[" hello"])],
            Some(false),
        );
        let token_info = ResponseInfo {
            text_bytes: 6,
            final_flag: Some(false),
            outputs: 2,
            ..ResponseInfo::default()
        };
        let last = response(&[], vec![], Some(true));
        let last_info = ResponseInfo {
            final_flag: Some(true),
            ..ResponseInfo::default()
        };
        for (r, want_text, want) in [(token, " hello", token_info), (last, "", last_info)] {
            let (info, text, err) = read_whole(&stream_msg(r, ""));
            assert_eq!((info, text.as_str(), err.as_str()), (want, want_text, ""));
        }
    }

    /// The server's count: `output_ids` by its shape, `sequence_length` and `num_output_tokens`
    /// by value (raw or typed contents), `num_output_tokens` first; summed over a stream.
    #[test]
    fn token_counts_from_count_outputs() {
        let count_out = |name: &str, dt: &str, shape: Vec<i64>| InferOutputTensor {
            name: name.into(),
            datatype: dt.into(),
            shape,
            ..Default::default()
        };
        let read = |r: ModelInferResponse| {
            let (mut text, mut err) = (String::new(), String::new());
            let info = read_stream_response(&stream_msg(r, ""), Some(&mut text), &mut err).unwrap();
            (info.tokens, text)
        };
        // TensorRT-LLM: text, output_ids [1, 1, 3] and sequence_length [1, 1] = 3, all raw.
        let mut r = response(&["text_output"], vec![bytes_tensor_raw(&[b" a b c"])], None);
        r.outputs
            .push(count_out("output_ids", "INT32", vec![1, 1, 3]));
        r.outputs
            .push(count_out("sequence_length", "INT32", vec![1, 1]));
        r.raw_output_contents
            .push([5i32, 6, 7].iter().flat_map(|v| v.to_le_bytes()).collect());
        r.raw_output_contents.push(3i32.to_le_bytes().to_vec());
        assert_eq!(read(r.clone()), (Some(3), " a b c".to_string()));
        // sequence_length alone, raw: its value.
        let mut s = response(&["text_output"], vec![bytes_tensor_raw(&[b"x"])], None);
        s.outputs
            .push(count_out("sequence_length", "INT32", vec![1]));
        s.raw_output_contents.push(9i32.to_le_bytes().to_vec());
        assert_eq!(read(s).0, Some(9));
        // vLLM backend: num_output_tokens in typed contents wins over output_ids.
        let mut v = r.clone();
        let mut n = count_out("num_output_tokens", "UINT32", vec![1]);
        n.contents = Some(InferTensorContents {
            uint_contents: vec![2],
            ..Default::default()
        });
        v.outputs.push(n);
        assert_eq!(read(v).0, Some(2));
        // No count output: none.
        let plain = response(&["text_output"], vec![bytes_tensor_raw(&[b"x"])], None);
        assert_eq!(read(plain).0, None);
        // A stream's messages sum: two token responses through one StreamShape.
        let mut shape = StreamShape::default();
        let (mut text, mut err) = (String::new(), String::new());
        let mut total = 0;
        for _ in 0..2 {
            let msg = stream_msg(r.clone(), "");
            total += shape
                .read(&msg, Some(&mut text), &mut err)
                .unwrap()
                .tokens
                .unwrap();
        }
        assert_eq!(
            total, 6,
            "every message is read in full: none takes the remembered shape"
        );
    }

    #[test]
    fn single_output_with_other_name_and_multiple_elements() {
        let r = response(&["OUTPUT0"], vec![bytes_tensor(&["a", "bc"])], None);
        let mut text = String::new();
        let info = read_infer_response(&r.encode_to_vec(), Some(&mut text)).unwrap();
        assert_eq!(text, "abc");
        assert_eq!(info.final_flag, None);
    }

    #[test]
    fn typed_bytes_contents() {
        let mut r = response(&["text_output"], vec![], Some(true));
        r.outputs[0].contents = Some(InferTensorContents {
            bytes_contents: vec![b" typed".to_vec()],
            ..Default::default()
        });
        let mut text = String::new();
        let info = read_infer_response(&r.encode_to_vec(), Some(&mut text)).unwrap();
        assert_eq!(text, " typed");
        assert_eq!(info.text_bytes, 6);
    }

    #[test]
    fn overrunning_length_prefix_is_malformed() {
        let r = response(
            &["text_output"],
            vec![vec![200, 0, 0, 0, b'x']],
            Some(false),
        );
        let mut text = String::new();
        assert!(read_infer_response(&r.encode_to_vec(), Some(&mut text)).is_err());
    }

    #[test]
    fn stream_error() {
        let msg = ModelStreamInferResponse {
            error_message: "queue full".into(),
            infer_response: None,
        }
        .encode_to_vec();
        let (info, text, err) = read_whole(&msg);
        assert!(info.has_error);
        assert_eq!((text.as_str(), err.as_str()), ("", "queue full"));
    }

    #[test]
    fn truncated_messages_are_errors_not_panics() {
        let r = response(&["text_output"], vec![bytes_tensor(&["xyz"])], Some(true));
        let msg = stream_msg(r, "");
        for cut in 0..msg.len() {
            let (mut text, mut err) = (String::new(), String::new());
            let _ = read_stream_response(&msg[..cut], Some(&mut text), &mut err);
        }
        // Arbitrary bytes never panic either.
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..2000 {
            let mut buf = Vec::new();
            for _ in 0..(x % 64) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                buf.push(x as u8);
            }
            let (mut text, mut err) = (String::new(), String::new());
            let _ = read_stream_response(&buf, Some(&mut text), &mut err);
        }
    }
}

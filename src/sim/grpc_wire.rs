//! A model's fixed gRPC response fragments ([`ModelWire`]), encoded once when the model is
//! loaded (held by its `state::ModelEntry`) and spliced into every response by [`super::grpc`].

use bytes::{BufMut, Bytes, BytesMut};
use prost::Message as _;

use super::models::ModelSpec;
use crate::proto;

/// Precomputed protobuf fragments of one model's responses (fields of `ModelInferResponse`).
#[derive(Debug, Clone)]
pub(crate) struct ModelWire {
    /// Fields 1-2: `model_name`, `model_version`.
    name_version: Bytes,
    /// Field 5: the `text_output` tensor description (BYTES, one element).
    pub(crate) outputs: Bytes,
}

impl ModelWire {
    /// Encodes the fixed parts of `spec`'s responses.
    pub(crate) fn new(spec: &ModelSpec) -> Self {
        let name_version = proto::ModelInferResponse {
            model_name: spec.name.clone(),
            model_version: spec.version.clone(),
            ..Default::default()
        };
        let outputs = proto::ModelInferResponse {
            outputs: vec![text_output_tensor(spec)],
            ..Default::default()
        };
        ModelWire {
            name_version: Bytes::from(name_version.encode_to_vec()),
            outputs: Bytes::from(outputs.encode_to_vec()),
        }
    }

    /// Fields 1-3 for a request with `id`.
    pub(crate) fn head(&self, id: &str) -> Bytes {
        if id.is_empty() {
            return self.name_version.clone();
        }
        let id_field = proto::ModelInferResponse {
            id: id.to_owned(),
            ..Default::default()
        };
        let mut b = BytesMut::with_capacity(self.name_version.len() + id.len() + 8);
        b.put_slice(&self.name_version);
        id_field.encode(&mut b).ok();
        b.freeze()
    }
}

/// The `text_output` tensor's description in a response (BYTES, the model's output shape).
pub(crate) fn text_output_tensor(
    spec: &ModelSpec,
) -> proto::model_infer_response::InferOutputTensor {
    proto::model_infer_response::InferOutputTensor {
        name: "text_output".to_owned(),
        datatype: "BYTES".to_owned(),
        shape: spec.single_output_shape().to_vec(),
        parameters: Default::default(),
        contents: None,
    }
}

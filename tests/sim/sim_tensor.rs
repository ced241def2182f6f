//! Tensor models of the simulator over real sockets: KServe v2 inference over gRPC (raw and typed
//! contents) and HTTP (JSON and the binary tensor extension), Triton's validation errors, the
//! dynamic batcher as statistics and Prometheus show it. Timing bounds are loose: these run on
//! small shared machines. Phase durations in the statistics come from the simulated schedule,
//! so those are asserted exactly.

use crate::common;

use common::{Grpc, grpc, http_client, input, start};
use std::collections::HashMap;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use ttftbench::proto;
use ttftbench::sim::{
    DataType, EngineConfig, ModelSpec, SimConfig, SimHandle, TensorSpec, TensorTiming,
};

const IMAGE_BYTES: usize = 3 * 640 * 640 * 4;

/// A request with every input in `raw_input_contents`.
fn raw_request(
    model: &str,
    id: &str,
    inputs: Vec<(&str, &str, Vec<i64>, Vec<u8>)>,
) -> proto::ModelInferRequest {
    let mut r = proto::ModelInferRequest {
        model_name: model.into(),
        id: id.into(),
        ..Default::default()
    };
    for (name, dt, shape, data) in inputs {
        r.inputs.push(input(name, dt, &shape));
        r.raw_input_contents.push(data);
    }
    r
}

fn image_request(id: &str, batch: usize) -> proto::ModelInferRequest {
    raw_request(
        "yolov8s",
        id,
        vec![(
            "images",
            "FP32",
            vec![batch as i64, 3, 640, 640],
            vec![0u8; IMAGE_BYTES * batch],
        )],
    )
}

fn bert_request(id: &str, batch: usize, seq: usize) -> proto::ModelInferRequest {
    raw_request(
        "text_classifier",
        id,
        vec![(
            "input_ids",
            "INT64",
            vec![batch as i64, seq as i64],
            vec![1u8; 8 * batch * seq],
        )],
    )
}

fn resnet_request(model: &str, batch: usize) -> proto::ModelInferRequest {
    let (dt, size) = if model.ends_with("int8") {
        ("INT8", 1)
    } else {
        ("FP32", 4)
    };
    raw_request(
        model,
        "",
        vec![(
            "input",
            dt,
            vec![batch as i64, 3, 224, 224],
            vec![0u8; 3 * 224 * 224 * size * batch],
        )],
    )
}

/// A binary-extension HTTP body: the JSON header, then the blobs.
fn binary_body(header: &Value, blobs: &[&[u8]]) -> (Vec<u8>, usize) {
    let mut body = header.to_string().into_bytes();
    let json_len = body.len();
    for b in blobs {
        body.extend_from_slice(b);
    }
    (body, json_len)
}

async fn post_binary(
    c: &reqwest::Client,
    url: String,
    header: &Value,
    blobs: &[&[u8]],
) -> reqwest::Response {
    let (body, json_len) = binary_body(header, blobs);
    c.post(url)
        .header("Content-Type", "application/octet-stream")
        .header("Inference-Header-Content-Length", json_len.to_string())
        .body(body)
        .send()
        .await
        .expect("send")
}

/// `model_stats[0]` of one model over HTTP.
async fn http_stats(c: &reqwest::Client, h: &SimHandle, model: &str) -> Value {
    let v: Value = c
        .get(format!("{}/v2/models/{model}/stats", h.http_url()))
        .send()
        .await
        .expect("send")
        .json()
        .await
        .expect("json");
    v["model_stats"][0].clone()
}

async fn grpc_stats(g: &mut Grpc, model: &str) -> proto::ModelStatistics {
    g.model_statistics(proto::ModelStatisticsRequest {
        name: model.into(),
        version: String::new(),
    })
    .await
    .expect("stats")
    .into_inner()
    .model_stats
    .remove(0)
}

fn n(v: &Value, path: &str) -> u64 {
    v.pointer(path)
        .and_then(Value::as_u64)
        .unwrap_or_else(|| panic!("{path} in {v}"))
}

/// The value of a Prometheus sample `name{labels}`.
fn prom(text: &str, name: &str, model: &str) -> u64 {
    let prefix = format!("{name}{{model=\"{model}\",version=\"1\"}} ");
    text.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .unwrap_or_else(|| panic!("no {prefix:?} in metrics"))
        .trim()
        .parse()
        .expect("integer sample")
}

#[tokio::test]
async fn tensor_models_describe_themselves() {
    let h = start(SimConfig::default()).await;
    let c = http_client();
    let base = h.http_url();
    let md: Value = c
        .get(format!("{base}/v2/models/yolov8s"))
        .send()
        .await
        .expect("send")
        .json()
        .await
        .expect("json");
    assert_eq!(
        md["inputs"][0],
        json!({"name": "images", "datatype": "FP32", "shape": [-1, 3, 640, 640]})
    );
    assert_eq!(
        md["outputs"][0],
        json!({"name": "output0", "datatype": "FP32", "shape": [-1, 84, 100]})
    );
    let cfg: Value = c
        .get(format!("{base}/v2/models/yolov8s/config"))
        .send()
        .await
        .expect("send")
        .json()
        .await
        .expect("json");
    assert_eq!(cfg["max_batch_size"], 8);
    assert_eq!(
        cfg["dynamic_batching"]["preferred_batch_size"],
        json!([4, 8])
    );
    assert_eq!(cfg["dynamic_batching"]["max_queue_delay_microseconds"], 100);
    assert_eq!(cfg["model_transaction_policy"]["decoupled"], false);
    let mut g = grpc(&h).await;
    let bert = g
        .model_config(proto::ModelConfigRequest {
            name: "text_classifier".into(),
            version: String::new(),
        })
        .await
        .expect("config")
        .into_inner()
        .config
        .expect("config");
    assert_eq!(bert.max_batch_size, 8);
    assert_eq!(bert.instance_group[0].count, 2);
    assert!(bert.input[1].optional, "attention_mask is optional");
    assert_eq!(bert.input[0].dims, vec![-1]);
    let int8 = g
        .model_metadata(proto::ModelMetadataRequest {
            name: "resnet_int8".into(),
            version: String::new(),
        })
        .await
        .expect("md")
        .into_inner();
    assert_eq!(int8.platform, "tensorrt_plan");
    assert_eq!(int8.inputs[0].datatype, "INT8");
    assert_eq!(int8.outputs[0].shape, vec![-1, 1000]);
    let nostream = g
        .model_config(proto::ModelConfigRequest {
            name: "gpt2_nostream".into(),
            version: String::new(),
        })
        .await
        .expect("config")
        .into_inner()
        .config
        .expect("config");
    assert_eq!(
        nostream.model_transaction_policy.map(|p| p.decoupled),
        Some(false)
    );
    h.shutdown().await;
}

#[tokio::test]
async fn grpc_raw_and_typed_contents() {
    let h = start(SimConfig::default()).await;
    let mut g = grpc(&h).await;

    let r = g
        .model_infer(image_request("img-1", 2))
        .await
        .expect("infer")
        .into_inner();
    assert_eq!(
        (
            r.model_name.as_str(),
            r.model_version.as_str(),
            r.id.as_str()
        ),
        ("yolov8s", "1", "img-1")
    );
    assert_eq!(r.outputs.len(), 1);
    assert_eq!(
        (r.outputs[0].name.as_str(), r.outputs[0].datatype.as_str()),
        ("output0", "FP32")
    );
    assert_eq!(r.outputs[0].shape, vec![2, 84, 100]);
    assert_eq!(r.raw_output_contents.len(), 1);
    assert_eq!(r.raw_output_contents[0].len(), 2 * 84 * 100 * 4);
    assert!(r.raw_output_contents[0].iter().all(|&b| b == 0));

    // Typed contents, the optional input, a named output, a versioned request.
    let mut req = proto::ModelInferRequest {
        model_name: "text_classifier".into(),
        model_version: "1".into(),
        id: "typed".into(),
        inputs: vec![
            input("input_ids", "INT64", &[2, 5]),
            input("attention_mask", "INT64", &[2, 5]),
        ],
        outputs: vec![proto::model_infer_request::InferRequestedOutputTensor {
            name: "logits".into(),
            parameters: HashMap::new(),
        }],
        ..Default::default()
    };
    for i in &mut req.inputs {
        i.contents = Some(proto::InferTensorContents {
            int64_contents: (0..10).collect(),
            ..Default::default()
        });
    }
    let r = g.model_infer(req).await.expect("typed").into_inner();
    assert_eq!(r.id, "typed");
    assert_eq!(r.outputs[0].shape, vec![2, 2]);
    assert_eq!(r.raw_output_contents[0].len(), 16);

    // A 1-byte datatype.
    let r = g
        .model_infer(resnet_request("resnet_int8", 3))
        .await
        .expect("int8")
        .into_inner();
    assert_eq!(r.outputs[0].shape, vec![3, 1000]);
    assert_eq!(r.raw_output_contents[0].len(), 3 * 1000 * 4);

    // A tensor model answers on ModelStreamInfer too: one final response per request.
    let reqs = vec![bert_request("s1", 1, 8), bert_request("s2", 4, 8)];
    let mut inbound = g
        .model_stream_infer(tokio_stream::iter(reqs))
        .await
        .expect("stream")
        .into_inner();
    let mut got = Vec::new();
    while let Some(m) = inbound.message().await.expect("message") {
        assert!(m.error_message.is_empty(), "{}", m.error_message);
        let r = m.infer_response.expect("response");
        let final_flag = match r.parameters.get("triton_final_response") {
            Some(proto::InferParameter {
                parameter_choice: Some(proto::infer_parameter::ParameterChoice::BoolParam(b)),
            }) => *b,
            other => panic!("no final flag: {other:?}"),
        };
        assert!(final_flag);
        assert_eq!(r.model_name, "text_classifier");
        got.push((r.id.clone(), r.outputs[0].shape.clone()));
    }
    got.sort();
    assert_eq!(
        got,
        vec![("s1".into(), vec![1, 2]), ("s2".into(), vec![4, 2])]
    );

    let s = grpc_stats(&mut g, "yolov8s").await;
    assert_eq!(s.inference_count, 2);
    assert_eq!(s.execution_count, 1);
    let b = grpc_stats(&mut g, "text_classifier").await;
    assert_eq!(b.inference_count, 2 + 1 + 4);
    assert_eq!(
        b.inference_stats.and_then(|st| st.success).map(|d| d.count),
        Some(3)
    );
    h.shutdown().await;
}

#[tokio::test]
async fn http_json_and_binary() {
    let h = start(SimConfig::default()).await;
    let c = http_client();
    let base = h.http_url();

    // JSON in, JSON out (nested data, id echoed).
    let body = json!({"id": "j1", "inputs": [
        {"name": "input_ids", "datatype": "INT64", "shape": [2, 3], "data": [[101, 2023, 102], [101, 2003, 102]]}
    ]});
    let r = c
        .post(format!("{base}/v2/models/text_classifier/infer"))
        .json(&body)
        .send()
        .await
        .expect("send");
    assert_eq!(r.status(), 200);
    assert_eq!(
        r.headers().get("content-type").map(|v| v.as_bytes()),
        Some(b"application/json".as_slice())
    );
    let v: Value = r.json().await.expect("json");
    assert_eq!(
        v,
        json!({"id": "j1", "model_name": "text_classifier", "model_version": "1",
            "outputs": [{"name": "logits", "datatype": "FP32", "shape": [2, 2], "data": [0, 0, 0, 0]}]})
    );

    // Binary in, binary out (perf_analyzer's default over HTTP), versioned route.
    let image = vec![0u8; IMAGE_BYTES];
    let header = json!({
        "inputs": [{"name": "images", "datatype": "FP32", "shape": [1, 3, 640, 640],
            "parameters": {"binary_data_size": IMAGE_BYTES}}],
        "outputs": [{"name": "output0", "parameters": {"binary_data": true}}]
    });
    let r = post_binary(
        &c,
        format!("{base}/v2/models/yolov8s/versions/1/infer"),
        &header,
        &[&image],
    )
    .await;
    assert_eq!(r.status(), 200);
    let hlen: usize = r
        .headers()
        .get("inference-header-content-length")
        .and_then(|v| v.to_str().ok())
        .and_then(|s| s.parse().ok())
        .expect("Inference-Header-Content-Length");
    assert_eq!(
        r.headers().get("content-type").map(|v| v.as_bytes()),
        Some(b"application/octet-stream".as_slice())
    );
    let blob_len = 84 * 100 * 4;
    assert_eq!(r.content_length(), Some((hlen + blob_len) as u64));
    let bytes = r.bytes().await.expect("body");
    assert_eq!(bytes.len(), hlen + blob_len);
    let head: Value = serde_json::from_slice(&bytes[..hlen]).expect("json header");
    assert_eq!(head["model_name"], "yolov8s");
    assert_eq!(head["outputs"][0]["shape"], json!([1, 84, 100]));
    assert_eq!(
        head["outputs"][0]["parameters"]["binary_data_size"],
        blob_len
    );
    assert!(head["outputs"][0].get("data").is_none());

    // A larger answer (4 × 33.6 KB) streams the shared output buffer, still with a length.
    let images = vec![0u8; 4 * IMAGE_BYTES];
    let header = json!({
        "inputs": [{"name": "images", "datatype": "FP32", "shape": [4, 3, 640, 640],
            "parameters": {"binary_data_size": images.len()}}],
        "parameters": {"binary_data_output": true}
    });
    let r = post_binary(
        &c,
        format!("{base}/v2/models/yolov8s/infer"),
        &header,
        &[&images],
    )
    .await;
    assert_eq!(r.status(), 200);
    let hlen: usize = r
        .headers()
        .get("inference-header-content-length")
        .and_then(|v| v.to_str().ok())
        .and_then(|s| s.parse().ok())
        .expect("header length");
    assert_eq!(r.content_length(), Some((hlen + 4 * blob_len) as u64));
    let bytes = r.bytes().await.expect("body");
    assert_eq!(bytes.len(), hlen + 4 * blob_len);
    let head: Value = serde_json::from_slice(&bytes[..hlen]).expect("json header");
    assert_eq!(head["outputs"][0]["shape"], json!([4, 84, 100]));

    // Request-wide binary_data_output, small answer (sent as one buffer).
    let header = json!({
        "parameters": {"binary_data_output": true},
        "inputs": [{"name": "input_ids", "datatype": "INT64", "shape": [1, 4],
            "parameters": {"binary_data_size": 32}}]
    });
    let r = post_binary(
        &c,
        format!("{base}/v2/models/text_classifier/infer"),
        &header,
        &[&[0u8; 32]],
    )
    .await;
    assert_eq!(r.status(), 200);
    let hlen: usize = r
        .headers()
        .get("inference-header-content-length")
        .and_then(|v| v.to_str().ok())
        .and_then(|s| s.parse().ok())
        .expect("header length");
    let bytes = r.bytes().await.expect("body");
    assert_eq!(bytes.len(), hlen + 8);

    // Binary in, JSON out: the output asked without binary_data.
    let header = json!({
        "inputs": [{"name": "input", "datatype": "FP32", "shape": [2, 3, 224, 224],
            "parameters": {"binary_data_size": 2 * 3 * 224 * 224 * 4}}],
        "outputs": [{"name": "output", "parameters": {"binary_data": false}}]
    });
    let r = post_binary(
        &c,
        format!("{base}/v2/models/resnet_fp16/infer"),
        &header,
        &[&vec![0u8; 2 * 3 * 224 * 224 * 4]],
    )
    .await;
    assert_eq!(r.status(), 200);
    assert!(r.headers().get("inference-header-content-length").is_none());
    let v: Value = r.json().await.expect("json");
    assert_eq!(v["outputs"][0]["shape"], json!([2, 1000]));
    assert_eq!(v["outputs"][0]["data"].as_array().map(Vec::len), Some(2000));

    // JSON INT8 data.
    let body = json!({"inputs": [{"name": "input", "datatype": "INT8", "shape": [1, 3, 224, 224],
        "data": vec![-3i8; 3 * 224 * 224]}]});
    let r = c
        .post(format!("{base}/v2/models/resnet_int8/infer"))
        .json(&body)
        .send()
        .await
        .expect("send");
    assert_eq!(r.status(), 200);

    let s = http_stats(&c, &h, "resnet_fp16").await;
    assert_eq!(n(&s, "/inference_count"), 2);
    assert_eq!(n(&s, "/batch_stats/0/batch_size"), 2);
    h.shutdown().await;
}

/// Sends `req` over gRPC and returns the INVALID_ARGUMENT message.
async fn grpc_error(g: &mut Grpc, req: proto::ModelInferRequest) -> String {
    let e = g.model_infer(req).await.expect_err("invalid");
    assert_eq!(e.code(), tonic::Code::InvalidArgument, "{}", e.message());
    e.message().to_owned()
}

/// Posts a binary-extension request and returns the 400 message.
async fn http_error(
    c: &reqwest::Client,
    h: &SimHandle,
    model: &str,
    header: Value,
    blobs: &[&[u8]],
) -> String {
    let r = post_binary(
        c,
        format!("{}/v2/models/{model}/infer", h.http_url()),
        &header,
        blobs,
    )
    .await;
    assert_eq!(r.status(), 400);
    let v: Value = r.json().await.expect("json error");
    v["error"].as_str().expect("error string").to_owned()
}

fn strings_model() -> ModelSpec {
    ModelSpec::tensor(
        "strings",
        4,
        vec![TensorSpec::new("text", DataType::Bytes, &[-1])],
        vec![TensorSpec::new("scores", DataType::F32, &[3])],
    )
    .with_dynamic_batching(&[], 0)
}

fn bytes_elements(items: &[&str]) -> Vec<u8> {
    let mut v = Vec::new();
    for s in items {
        v.extend_from_slice(&(s.len() as u32).to_le_bytes());
        v.extend_from_slice(s.as_bytes());
    }
    v
}

#[tokio::test]
async fn validation_errors_say_what_was_expected() {
    let mut models = ModelSpec::defaults();
    models.push(strings_model());
    let h = start(SimConfig {
        models,
        ..SimConfig::default()
    })
    .await;
    let mut g = grpc(&h).await;
    let c = http_client();
    let img = || vec![0u8; IMAGE_BYTES];
    let yolo = |name: &str, dt: &str, shape: Vec<i64>, data: Vec<u8>| {
        raw_request("yolov8s", "", vec![(name, dt, shape, data)])
    };

    let e = grpc_error(&mut g, yolo("image", "FP32", vec![1, 3, 640, 640], img())).await;
    assert!(
        e.starts_with("unexpected inference input 'image' for model 'yolov8s'"),
        "{e}"
    );
    assert!(e.contains("[\"images\"]"), "lists the real inputs: {e}");
    let e = grpc_error(&mut g, yolo("images", "FP16", vec![1, 3, 640, 640], img())).await;
    assert_eq!(
        e,
        "inference input 'images' data-type is 'FP16', but model 'yolov8s' expects 'FP32'"
    );
    let e = grpc_error(&mut g, yolo("images", "FP32", vec![3, 640, 640], img())).await;
    assert!(
        e.starts_with(
            "unexpected shape for input 'images' for model 'yolov8s'. Expected [-1,3,640,640], got [3,640,640]. NOTE: max_batch_size is 8"
        ),
        "{e}"
    );
    let e = grpc_error(&mut g, yolo("images", "FP32", vec![1, 3, 320, 320], img())).await;
    assert!(
        e.contains("Expected [-1,3,640,640], got [1,3,320,320]"),
        "{e}"
    );
    let e = grpc_error(&mut g, yolo("images", "FP32", vec![9, 3, 640, 640], img())).await;
    assert!(
        e.starts_with("inference request batch-size must be <= 8 for 'yolov8s'"),
        "{e}"
    );
    let e = grpc_error(
        &mut g,
        yolo("images", "FP32", vec![1, 3, 640, 640], vec![0; 100]),
    )
    .await;
    assert!(
        e.starts_with("input byte size mismatch for input 'images' for model 'yolov8s'. Expected 4915200, got 100"),
        "{e}"
    );
    let mut r = bert_request("", 1, 4);
    r.inputs.clear();
    r.raw_input_contents.clear();
    let e = grpc_error(&mut g, r).await;
    assert!(
        e.contains("missing required input(s) [\"input_ids\"]"),
        "{e}"
    );
    let r = raw_request(
        "text_classifier",
        "",
        vec![
            ("input_ids", "INT64", vec![2, 4], vec![0; 64]),
            ("attention_mask", "INT64", vec![1, 4], vec![0; 32]),
        ],
    );
    let e = grpc_error(&mut g, r).await;
    assert!(
        e.contains("'input_ids' has batch size 2, 'attention_mask' has 1"),
        "{e}"
    );
    let mut r = bert_request("", 1, 4);
    r.inputs[0].contents = Some(proto::InferTensorContents {
        int64_contents: vec![1, 2, 3, 4],
        ..Default::default()
    });
    let e = grpc_error(&mut g, r).await;
    assert!(
        e.starts_with("contents field must not be specified when using raw_input_contents"),
        "{e}"
    );
    let mut r = bert_request("", 1, 4);
    r.raw_input_contents.clear();
    r.inputs[0].contents = Some(proto::InferTensorContents {
        int_contents: vec![1, 2, 3, 4],
        ..Default::default()
    });
    let e = grpc_error(&mut g, r).await;
    assert!(
        e.contains("shape [1,4] needs 4, contents.int64_contents has 0"),
        "{e}"
    );
    let mut r = bert_request("", 1, 4);
    r.outputs
        .push(proto::model_infer_request::InferRequestedOutputTensor {
            name: "probabilities".into(),
            parameters: HashMap::new(),
        });
    let e = grpc_error(&mut g, r).await;
    assert!(
        e.starts_with("unexpected inference output 'probabilities' for model 'text_classifier'"),
        "{e}"
    );
    // BYTES framing.
    let strings = |data: Vec<u8>, count: i64| {
        raw_request("strings", "", vec![("text", "BYTES", vec![1, count], data)])
    };
    assert!(
        g.model_infer(strings(bytes_elements(&["a", "bc"]), 2))
            .await
            .is_ok()
    );
    let e = grpc_error(&mut g, strings(bytes_elements(&["a"]), 2)).await;
    assert!(
        e.starts_with(
            "expected 2 string elements for inference input 'text' for model 'strings', got 1"
        ),
        "{e}"
    );
    let mut bad = bytes_elements(&["a"]);
    bad.extend_from_slice(&50u32.to_le_bytes());
    bad.extend_from_slice(b"xy");
    let e = grpc_error(&mut g, strings(bad, 2)).await;
    assert!(e.contains("claims 50 bytes but only 2 bytes remain"), "{e}");
    assert!(e.contains("4-byte little-endian length"), "{e}");

    // The same checks over HTTP, plus the binary extension's own.
    let e = http_error(
        &c,
        &h,
        "yolov8s",
        json!({"inputs": [{"name": "images", "datatype": "FP32", "shape": [16, 3, 640, 640],
            "parameters": {"binary_data_size": 8}}]}),
        &[&[0u8; 8]],
    )
    .await;
    assert!(
        e.starts_with("inference request batch-size must be <= 8 for 'yolov8s'"),
        "{e}"
    );
    let e = http_error(
        &c,
        &h,
        "yolov8s",
        json!({"inputs": [{"name": "images", "datatype": "FP32", "shape": [1, 3, 640, 640],
            "parameters": {"binary_data_size": IMAGE_BYTES}}]}),
        &[&[0u8; 1000]],
    )
    .await;
    assert!(
        e.contains("binary_data_size 4915200 is more than the 1000 bytes"),
        "{e}"
    );
    let e = http_error(
        &c,
        &h,
        "text_classifier",
        json!({"inputs": [{"name": "input_ids", "datatype": "INT64", "shape": [1, 2],
            "parameters": {"binary_data_size": 16}}]}),
        &[&[0u8; 20]],
    )
    .await;
    assert!(
        e.starts_with("4 bytes of binary data left after the last input"),
        "{e}"
    );
    let e = http_error(
        &c,
        &h,
        "text_classifier",
        json!({"inputs": [{"name": "input_ids", "datatype": "INT32", "shape": [1, 2], "data": [1, 2]}]}),
        &[],
    )
    .await;
    assert_eq!(
        e,
        "inference input 'input_ids' data-type is 'INT32', but model 'text_classifier' expects 'INT64'"
    );
    let e = http_error(
        &c,
        &h,
        "text_classifier",
        json!({"inputs": [{"name": "input_ids", "datatype": "INT64", "shape": [1, 3], "data": [1, 2]}]}),
        &[],
    )
    .await;
    assert!(e.contains("shape [1,3] needs 3, 'data' has 2"), "{e}");
    let e = http_error(
        &c,
        &h,
        "text_classifier",
        json!({"inputs": [{"name": "input_ids", "datatype": "INT64", "shape": [1, 2], "data": [1, "two"]}]}),
        &[],
    )
    .await;
    assert!(e.contains("\"two\" is not a valid INT64 element"), "{e}");
    let e = http_error(
        &c,
        &h,
        "strings",
        json!({"inputs": [{"name": "text", "datatype": "BYTES", "shape": [1, 1],
            "parameters": {"binary_data_size": 6}}]}),
        &[&[9, 0, 0, 0, b'h', b'i']],
    )
    .await;
    assert!(e.contains("claims 9 bytes but only 2 bytes remain"), "{e}");
    // Binary data without the header-length header: the JSON parser says why it failed.
    let r = c
        .post(format!("{}/v2/models/text_classifier/infer", h.http_url()))
        .body(
            binary_body(
                &json!({"inputs": [{"name": "input_ids", "datatype": "INT64", "shape": [1, 1],
                    "parameters": {"binary_data_size": 8}}]}),
                &[&[0u8; 8]],
            )
            .0,
        )
        .send()
        .await
        .expect("send");
    assert_eq!(r.status(), 400);
    let v: Value = r.json().await.expect("json");
    assert!(
        v["error"]
            .as_str()
            .is_some_and(|e| e.contains("Inference-Header-Content-Length")),
        "{v}"
    );

    // Invalid requests count as failures, not inferences.
    let s = http_stats(&c, &h, "yolov8s").await;
    assert_eq!(n(&s, "/inference_count"), 0);
    assert_eq!(n(&s, "/inference_stats/fail/count"), 8);
    h.shutdown().await;
}

#[tokio::test]
async fn dynamic_batching_shows_in_stats_and_metrics() {
    let h = start(SimConfig::default()).await;
    let g = grpc(&h).await;
    let c = http_client();
    // Closed loop, 8 concurrent clients × 12 requests on text_classifier (2 instances, no
    // queue delay): requests pile up while both instances are busy, so executions batch them.
    let clients = 8;
    let per_client = 12;
    let t0 = Instant::now();
    let tasks: Vec<_> = (0..clients)
        .map(|w| {
            let mut g = g.clone();
            tokio::spawn(async move {
                for i in 0..per_client {
                    let r = g
                        .model_infer(bert_request(&format!("{w}-{i}"), 1, 16))
                        .await
                        .expect("infer")
                        .into_inner();
                    assert_eq!(r.id, format!("{w}-{i}"));
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.expect("client");
    }
    let elapsed = t0.elapsed();
    let total = (clients * per_client) as u64;
    let s = http_stats(&c, &h, "text_classifier").await;
    assert_eq!(n(&s, "/inference_count"), total);
    let execs = n(&s, "/execution_count");
    assert!(
        execs < total,
        "dynamic batching must merge requests: {execs} executions for {total} inferences"
    );
    let batches = s["batch_stats"].as_array().expect("batch_stats");
    assert!(batches.iter().any(|b| n(b, "/batch_size") > 1), "{s}");
    let (mut elems, mut count) = (0, 0);
    for b in batches {
        let size = n(b, "/batch_size");
        let k = n(b, "/compute_infer/count");
        assert_eq!(n(b, "/compute_input/count"), k);
        assert_eq!(n(b, "/compute_output/count"), k);
        // text_classifier: 1000 + 250 × batch µs of compute_infer per execution, exactly.
        assert_eq!(n(b, "/compute_infer/ns"), k * (1000 + 250 * size) * 1000);
        elems += size * k;
        count += k;
    }
    assert_eq!((elems, count), (total, execs));
    for phase in [
        "success",
        "queue",
        "compute_input",
        "compute_infer",
        "compute_output",
    ] {
        assert_eq!(
            n(&s, &format!("/inference_stats/{phase}/count")),
            total,
            "{phase}"
        );
    }
    // Executions run back to back on two instances, each at least 1.25 ms.
    assert!(
        elapsed >= Duration::from_micros(1250) * (execs as u32 / 2),
        "{elapsed:?} for {execs} executions"
    );
    assert!(
        elapsed < Duration::from_secs(20),
        "stuck scheduler? {elapsed:?}"
    );

    // gRPC statistics say the same.
    let mut g2 = g.clone();
    let gs = grpc_stats(&mut g2, "text_classifier").await;
    assert_eq!(gs.inference_count, total);
    assert_eq!(gs.execution_count, execs);
    assert_eq!(gs.batch_stats.len(), batches.len());
    assert_eq!(
        gs.batch_stats
            .iter()
            .map(|b| b.batch_size * b.compute_infer.map_or(0, |d| d.count))
            .sum::<u64>(),
        total
    );

    // Prometheus agrees with the statistics extension.
    let text = c
        .get(h.metrics_url())
        .send()
        .await
        .expect("send")
        .text()
        .await
        .expect("text");
    assert_eq!(prom(&text, "nv_inference_count", "text_classifier"), total);
    assert_eq!(
        prom(&text, "nv_inference_exec_count", "text_classifier"),
        execs
    );
    assert_eq!(
        prom(&text, "nv_inference_request_success", "text_classifier"),
        total
    );
    assert_eq!(
        prom(
            &text,
            "nv_inference_compute_infer_duration_us",
            "text_classifier"
        ),
        n(&s, "/inference_stats/compute_infer/ns") / 1000
    );
    assert_eq!(
        prom(&text, "nv_inference_queue_duration_us", "text_classifier"),
        n(&s, "/inference_stats/queue/ns") / 1000
    );
    assert_eq!(
        prom(
            &text,
            "nv_inference_pending_request_count",
            "text_classifier"
        ),
        0
    );
    h.shutdown().await;
}

#[tokio::test]
async fn yolov8s_batches_under_concurrency_over_http_binary() {
    // Uploading 4.9 MB images takes milliseconds on a loaded test machine, so concurrent
    // requests may arrive further apart than the default 100 µs queue delay; 20 ms makes them
    // meet in the queue every time.
    let h = start(SimConfig {
        models: vec![ModelSpec::yolov8s().with_dynamic_batching(&[4, 8], 20_000)],
        ..SimConfig::default()
    })
    .await;
    let c = http_client();
    let url = format!("{}/v2/models/yolov8s/infer", h.http_url());
    let image = std::sync::Arc::new(vec![0u8; IMAGE_BYTES]);
    let header = json!({
        "inputs": [{"name": "images", "datatype": "FP32", "shape": [1, 3, 640, 640],
            "parameters": {"binary_data_size": IMAGE_BYTES}}],
        "outputs": [{"name": "output0", "parameters": {"binary_data": true}}]
    });
    let tasks: Vec<_> = (0..4)
        .map(|_| {
            let (c, url, image, header) = (c.clone(), url.clone(), image.clone(), header.clone());
            tokio::spawn(async move {
                for _ in 0..5 {
                    let r = post_binary(&c, url.clone(), &header, &[&image]).await;
                    assert_eq!(r.status(), 200);
                    r.bytes().await.expect("body");
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.expect("client");
    }
    let s = http_stats(&c, &h, "yolov8s").await;
    assert_eq!(n(&s, "/inference_count"), 20);
    assert!(n(&s, "/execution_count") < 20, "{s}");
    assert_eq!(n(&s, "/inference_stats/queue/count"), 20);
    let sizes: u64 = s["batch_stats"]
        .as_array()
        .expect("batch_stats")
        .iter()
        .map(|b| n(b, "/batch_size") * n(b, "/compute_input/count"))
        .sum();
    assert_eq!(sizes, 20);
    h.shutdown().await;
}

#[tokio::test]
async fn compute_time_grows_with_batch_size_and_int8_is_faster() {
    let h = start(SimConfig::default()).await;
    let mut g = grpc(&h).await;
    let mut latency = HashMap::new();
    for model in ["resnet_fp16", "resnet_int8"] {
        for b in [1usize, 4, 16] {
            let t = Instant::now();
            g.model_infer(resnet_request(model, b))
                .await
                .expect("infer");
            latency.insert((model, b), t.elapsed());
        }
    }
    let c = http_client();
    let infer_ns = |s: &Value, b: u64| {
        s["batch_stats"]
            .as_array()
            .expect("batch_stats")
            .iter()
            .find(|x| n(x, "/batch_size") == b)
            .map(|x| n(x, "/compute_infer/ns"))
            .unwrap_or_else(|| panic!("no batch {b} in {s}"))
    };
    let fp16 = http_stats(&c, &h, "resnet_fp16").await;
    let int8 = http_stats(&c, &h, "resnet_int8").await;
    for b in [1u64, 4, 16] {
        // Exact: the phases come from the simulated schedule.
        assert_eq!(infer_ns(&fp16, b), (1500 + 650 * b) * 1000);
        assert_eq!(infer_ns(&int8, b), (1000 + 350 * b) * 1000);
    }
    assert_eq!(n(&fp16, "/execution_count"), 3);
    assert_eq!(n(&fp16, "/inference_count"), 21);
    // Client-side: a batch of 16 (11.9 ms of compute) takes longer than a batch of 1 (2.2 ms).
    let l = |m, b| latency[&(m, b)];
    assert!(l("resnet_fp16", 16) > l("resnet_fp16", 1), "{latency:?}");
    assert!(l("resnet_fp16", 16) >= Duration::from_micros(1500 + 650 * 16));
    assert!(l("resnet_int8", 16) >= Duration::from_micros(1000 + 350 * 16));

    // A lone batch-1 request of yolov8s waits the 100 µs queue delay (1 is not a preferred size).
    g.model_infer(image_request("q", 1)).await.expect("infer");
    let y = http_stats(&c, &h, "yolov8s").await;
    assert!(n(&y, "/inference_stats/queue/ns") >= 100_000, "{y}");
    // compute_input: 200 µs per image.
    assert_eq!(n(&y, "/inference_stats/compute_input/ns"), 200_000);
    h.shutdown().await;
}

#[tokio::test]
async fn batch_size_limit_is_max_batch_size() {
    let h = start(SimConfig::default()).await;
    let mut g = grpc(&h).await;
    let r = g
        .model_infer(resnet_request("resnet_fp16", 16))
        .await
        .expect("16 fits");
    assert_eq!(r.into_inner().outputs[0].shape, vec![16, 1000]);
    let e = grpc_error(&mut g, resnet_request("resnet_fp16", 17)).await;
    assert!(
        e.starts_with("inference request batch-size must be <= 16 for 'resnet_fp16'"),
        "{e}"
    );
    let e = grpc_error(&mut g, resnet_request("resnet_int8", 0)).await;
    assert!(e.contains("batch-size must be >= 1"), "{e}");
    h.shutdown().await;
}

#[tokio::test]
async fn instant_mode_and_custom_models() {
    // Instant: no batcher, every request its own zero-length execution.
    let custom = ModelSpec::tensor(
        "flat",
        0,
        vec![TensorSpec::new("x", DataType::F32, &[4])],
        vec![
            TensorSpec::new("y", DataType::F32, &[2]),
            TensorSpec::new("flag", DataType::Bool, &[1]),
        ],
    )
    .with_timing(TensorTiming {
        base_us: 300,
        per_item_us: 0,
        input_us_per_item: 0,
        output_us_per_item: 0,
        instance_count: 1,
    });
    let h = start(SimConfig {
        engine: EngineConfig::instant(),
        models: vec![ModelSpec::yolov8s(), custom.clone()],
        ..SimConfig::default()
    })
    .await;
    let mut g = grpc(&h).await;
    for _ in 0..3 {
        g.model_infer(image_request("", 2)).await.expect("infer");
    }
    let s = grpc_stats(&mut g, "yolov8s").await;
    assert_eq!((s.inference_count, s.execution_count), (6, 3));
    assert_eq!(s.batch_stats.len(), 1);
    assert_eq!(s.batch_stats[0].batch_size, 2);
    h.shutdown().await;

    // A model without a batch dimension and without dynamic batching, two outputs, JSON.
    let h = start(SimConfig {
        models: vec![custom],
        ..SimConfig::default()
    })
    .await;
    let c = http_client();
    let v: Value = c
        .post(format!("{}/v2/models/flat/infer", h.http_url()))
        .json(&json!({"inputs": [{"name": "x", "datatype": "FP32", "shape": [4], "data": [1.5, 2, 3, 4]}]}))
        .send()
        .await
        .expect("send")
        .json()
        .await
        .expect("json");
    assert_eq!(
        v["outputs"],
        json!([{"name": "y", "datatype": "FP32", "shape": [2], "data": [0, 0]},
               {"name": "flag", "datatype": "BOOL", "shape": [1], "data": [false]}])
    );
    let e = http_error(
        &c,
        &h,
        "flat",
        json!({"inputs": [{"name": "x", "datatype": "FP32", "shape": [1, 4], "data": [1, 2, 3, 4]}]}),
        &[],
    )
    .await;
    assert!(e.contains("Expected [4], got [1,4]"), "{e}");
    let s = http_stats(&c, &h, "flat").await;
    assert_eq!(n(&s, "/batch_stats/0/batch_size"), 1);
    assert_eq!(n(&s, "/inference_stats/compute_infer/ns"), 300_000);
    h.shutdown().await;
}

#[tokio::test]
async fn non_decoupled_text_model_answers_once() {
    let h = start(SimConfig {
        engine: EngineConfig::instant(),
        ..SimConfig::default()
    })
    .await;
    let mut g = grpc(&h).await;
    let mut req = raw_request(
        "gpt2_nostream",
        "n1",
        vec![
            (
                "text_input",
                "BYTES",
                vec![1, 1],
                bytes_elements(&["Hello"]),
            ),
            (
                "max_tokens",
                "INT32",
                vec![1, 1],
                5i32.to_le_bytes().to_vec(),
            ),
            ("stream", "BOOL", vec![1, 1], vec![1]),
        ],
    );
    let r = g
        .model_infer(req.clone())
        .await
        .expect("infer")
        .into_inner();
    assert_eq!(
        (r.id.as_str(), r.outputs[0].name.as_str()),
        ("n1", "text_output")
    );
    // Streaming asked on a model that is not decoupled: still exactly one response.
    req.id = "n2".into();
    let mut inbound = g
        .model_stream_infer(tokio_stream::iter(vec![req]))
        .await
        .expect("stream")
        .into_inner();
    let mut count = 0;
    while let Some(m) = inbound.message().await.expect("message") {
        assert!(m.error_message.is_empty(), "{}", m.error_message);
        count += 1;
    }
    assert_eq!(count, 1);
    h.shutdown().await;
}

#[tokio::test]
async fn tensor_models_refuse_the_generate_route() {
    let h = start(SimConfig::default()).await;
    let c = http_client();
    let r = c
        .post(format!("{}/v2/models/yolov8s/generate", h.http_url()))
        .json(&json!({"text_input": "hi"}))
        .send()
        .await
        .expect("send");
    assert_eq!(r.status(), 400);
    let v: Value = r.json().await.expect("json");
    assert!(
        v["error"]
            .as_str()
            .is_some_and(|e| e.contains("tensor model") && e.contains("/infer")),
        "{v}"
    );
    h.shutdown().await;
}

#[tokio::test]
async fn queue_limit_and_faults_apply_to_tensor_models() {
    // One slow instance and room for one waiting request: the third concurrent request is
    // refused at once.
    let slow = ModelSpec::tensor(
        "slow",
        4,
        vec![TensorSpec::new("x", DataType::F32, &[1])],
        vec![TensorSpec::new("y", DataType::F32, &[1])],
    )
    .with_timing(TensorTiming {
        base_us: 300_000,
        ..TensorTiming::default()
    });
    let slow = ModelSpec {
        engine: Some(EngineConfig {
            max_queue: 1,
            ..EngineConfig::default()
        }),
        ..slow
    };
    let h = start(SimConfig {
        models: vec![slow],
        ..SimConfig::default()
    })
    .await;
    let g = grpc(&h).await;
    let req = || raw_request("slow", "", vec![("x", "FP32", vec![1, 1], vec![0; 4])]);
    let first = {
        let mut g = g.clone();
        let r = req();
        tokio::spawn(async move { g.model_infer(r).await })
    };
    tokio::time::sleep(Duration::from_millis(50)).await;
    let second = {
        let mut g = g.clone();
        let r = req();
        tokio::spawn(async move { g.model_infer(r).await })
    };
    tokio::time::sleep(Duration::from_millis(50)).await;
    let e = g.clone().model_infer(req()).await.expect_err("queue full");
    assert_eq!(e.code(), tonic::Code::ResourceExhausted);
    assert_eq!(e.message(), "queue full");
    assert!(first.await.expect("join").is_ok());
    assert!(second.await.expect("join").is_ok());
    let c = http_client();
    let s = http_stats(&c, &h, "slow").await;
    assert_eq!(n(&s, "/inference_count"), 2);
    assert_eq!(n(&s, "/inference_stats/fail/count"), 1);
    // The second request queued for the rest of the first one's execution.
    assert!(n(&s, "/inference_stats/queue/ns") >= 200_000_000, "{s}");
    h.shutdown().await;

    // Every second request hits an injected error; `unavailable` refuses everything.
    let h = start(SimConfig {
        faults: ttftbench::sim::FaultConfig {
            error_rate: 0.5,
            ..Default::default()
        },
        engine: EngineConfig::instant(),
        ..SimConfig::default()
    })
    .await;
    let mut g = grpc(&h).await;
    assert!(g.model_infer(bert_request("1", 1, 4)).await.is_ok());
    let e = g
        .model_infer(bert_request("2", 1, 4))
        .await
        .expect_err("injected");
    assert_eq!(e.code(), tonic::Code::Internal);
    assert!(e.message().contains("fault injection"), "{}", e.message());
    let c = http_client();
    let r = c
        .post(format!("{}/v2/models/text_classifier/infer", h.http_url()))
        .json(&json!({"inputs": [{"name": "input_ids", "datatype": "INT64", "shape": [1, 1], "data": [1]}]}))
        .send()
        .await
        .expect("send");
    assert_eq!(r.status(), 200, "request 3 passes");
    let r = c
        .post(format!("{}/v2/models/text_classifier/infer", h.http_url()))
        .json(&json!({"inputs": [{"name": "input_ids", "datatype": "INT64", "shape": [1, 1], "data": [1]}]}))
        .send()
        .await
        .expect("send");
    assert_eq!(r.status(), 500, "request 4 hits the fault");
    let text = c
        .get(h.metrics_url())
        .send()
        .await
        .expect("send")
        .text()
        .await
        .expect("text");
    assert!(text.contains(
        "nv_inference_request_failure{model=\"text_classifier\",reason=\"BACKEND\",version=\"1\"} 2"
    ));
    h.shutdown().await;

    let h = start(SimConfig {
        faults: ttftbench::sim::FaultConfig {
            unavailable: true,
            ..Default::default()
        },
        ..SimConfig::default()
    })
    .await;
    let mut g = grpc(&h).await;
    let e = g
        .model_infer(image_request("", 1))
        .await
        .expect_err("unavailable");
    assert_eq!(e.code(), tonic::Code::Unavailable);
    h.shutdown().await;
}

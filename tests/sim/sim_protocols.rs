//! The simulated server over real sockets: every protocol it speaks, driven by ordinary clients
//! (reqwest for HTTP, the generated tonic client for gRPC). Timing assertions are loose on
//! purpose: these run on small shared machines.

use crate::common;

use common::{Grpc, grpc, http_client, input, start};
use std::collections::HashMap;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use ttftbench::proto;
use ttftbench::sim::{EngineConfig, FaultConfig, ModelSpec, SimConfig, SimHandle};
use ttftbench::workload::tokenizer::Tokenizer;

async fn start_instant() -> SimHandle {
    start(SimConfig {
        engine: EngineConfig::instant(),
        ..SimConfig::default()
    })
    .await
}

/// SSE `data:` payloads of a complete body.
fn sse_events(body: &str) -> Vec<String> {
    body.split("\n\n")
        .filter(|e| !e.trim().is_empty())
        .map(|e| {
            e.strip_prefix("data: ")
                .unwrap_or_else(|| panic!("not a data event: {e:?}"))
                .to_owned()
        })
        .collect()
}

fn count_tokens(text: &str) -> usize {
    Tokenizer::builtin_gpt2().count(text)
}

fn bytes_el(s: &str) -> Vec<u8> {
    let mut v = (s.len() as u32).to_le_bytes().to_vec();
    v.extend_from_slice(s.as_bytes());
    v
}

fn bool_param(b: bool) -> proto::InferParameter {
    proto::InferParameter {
        parameter_choice: Some(proto::infer_parameter::ParameterChoice::BoolParam(b)),
    }
}

/// A TensorRT-LLM-layout request, as perf_analyzer sends it (raw contents, batch dim).
fn trt_request(
    model: &str,
    id: &str,
    prompt: &str,
    max_tokens: i32,
    stream: bool,
    empty_final: bool,
) -> proto::ModelInferRequest {
    let mut r = proto::ModelInferRequest {
        model_name: model.into(),
        id: id.into(),
        inputs: vec![
            input("text_input", "BYTES", &[1, 1]),
            input("max_tokens", "INT32", &[1, 1]),
            input("stream", "BOOL", &[1, 1]),
            input("exclude_input_in_output", "BOOL", &[1, 1]),
        ],
        raw_input_contents: vec![
            bytes_el(prompt),
            max_tokens.to_le_bytes().to_vec(),
            vec![u8::from(stream)],
            vec![1],
        ],
        ..Default::default()
    };
    r.parameters.insert(
        "triton_enable_empty_final_response".into(),
        bool_param(empty_final),
    );
    r
}

/// A vLLM-layout request with typed contents and string-valued sampling parameters.
fn vllm_request(id: &str, prompt: &str, max_tokens: u32) -> proto::ModelInferRequest {
    let mut text = input("text_input", "BYTES", &[1]);
    text.contents = Some(proto::InferTensorContents {
        bytes_contents: vec![prompt.as_bytes().to_vec()],
        ..Default::default()
    });
    let mut stream = input("stream", "BOOL", &[1]);
    stream.contents = Some(proto::InferTensorContents {
        bool_contents: vec![true],
        ..Default::default()
    });
    let mut sp = input("sampling_parameters", "BYTES", &[1]);
    let json = format!("{{\"max_tokens\": \"{max_tokens}\"}}");
    sp.contents = Some(proto::InferTensorContents {
        bytes_contents: vec![json.into_bytes()],
        ..Default::default()
    });
    let mut r = proto::ModelInferRequest {
        model_name: "vllm_model".into(),
        id: id.into(),
        inputs: vec![text, stream, sp],
        ..Default::default()
    };
    r.parameters.insert(
        "triton_enable_empty_final_response".into(),
        bool_param(true),
    );
    r
}

fn final_flag(r: &proto::ModelInferResponse) -> bool {
    match r
        .parameters
        .get("triton_final_response")
        .and_then(|p| p.parameter_choice.clone())
    {
        Some(proto::infer_parameter::ParameterChoice::BoolParam(b)) => b,
        _ => true,
    }
}

fn output_text(r: &proto::ModelInferResponse) -> Option<String> {
    let raw = r.raw_output_contents.first()?;
    let len = u32::from_le_bytes(raw[..4].try_into().ok()?) as usize;
    assert_eq!(len + 4, raw.len(), "BYTES element length prefix");
    Some(String::from_utf8(raw[4..].to_vec()).expect("utf8"))
}

/// Sends `requests` on one `ModelStreamInfer` call and collects every response.
async fn stream_call(
    c: &mut Grpc,
    requests: Vec<proto::ModelInferRequest>,
) -> Result<Vec<proto::ModelStreamInferResponse>, tonic::Status> {
    let mut inbound = c
        .model_stream_infer(tokio_stream::iter(requests))
        .await?
        .into_inner();
    let mut out = Vec::new();
    while let Some(m) = inbound.message().await? {
        out.push(m);
    }
    Ok(out)
}

async fn get_json(c: &reqwest::Client, url: String) -> Value {
    let r = c.get(&url).send().await.expect("send");
    assert!(r.status().is_success(), "{url}: {}", r.status());
    r.json().await.expect("json")
}

#[tokio::test]
async fn health_metadata_config_and_index() {
    let h = start_instant().await;
    let c = http_client();
    let base = h.http_url();
    for path in [
        "/v2/health/live",
        "/v2/health/ready",
        "/v2/models/gpt2/ready",
        "/v2/models/vllm_model/versions/1/ready",
    ] {
        let r = c.get(format!("{base}{path}")).send().await.expect("send");
        assert_eq!(r.status(), 200, "{path}");
        assert!(
            r.bytes().await.expect("body").is_empty(),
            "{path} has an empty body"
        );
    }
    let meta = get_json(&c, format!("{base}/v2")).await;
    let ext: Vec<&str> = meta["extensions"]
        .as_array()
        .expect("extensions")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    for e in [
        "statistics",
        "binary_tensor_data",
        "parameters",
        "model_configuration",
    ] {
        assert!(ext.contains(&e), "{e} missing from {ext:?}");
    }

    let gpt2 = get_json(&c, format!("{base}/v2/models/gpt2")).await;
    assert_eq!(gpt2["platform"], "ensemble");
    assert_eq!(gpt2["versions"], json!(["1"]));
    assert_eq!(
        gpt2["inputs"][0],
        json!({"name": "text_input", "datatype": "BYTES", "shape": [-1, 1]})
    );
    let v = get_json(&c, format!("{base}/v2/models/vllm_model/versions/1")).await;
    assert_eq!(v["inputs"][0]["shape"], json!([1]));

    let cfg = get_json(&c, format!("{base}/v2/models/gpt2/config")).await;
    assert_eq!(cfg["max_batch_size"], 64);
    assert_eq!(cfg["model_transaction_policy"]["decoupled"], true);
    let names: Vec<&str> = cfg["input"]
        .as_array()
        .expect("input")
        .iter()
        .filter_map(|i| i["name"].as_str())
        .collect();
    assert_eq!(
        names,
        [
            "text_input",
            "max_tokens",
            "stream",
            "exclude_input_in_output",
            "min_tokens",
            "temperature",
            "end_id",
            "pad_id"
        ]
    );
    let vcfg = get_json(&c, format!("{base}/v2/models/vllm_model/config")).await;
    assert_eq!(
        (vcfg["backend"].as_str(), vcfg["max_batch_size"].as_i64()),
        (Some("vllm"), Some(0))
    );

    let index: Value = c
        .post(format!("{base}/v2/repository/index"))
        .send()
        .await
        .expect("send")
        .json()
        .await
        .expect("json");
    let names: Vec<&str> = index
        .as_array()
        .expect("index")
        .iter()
        .filter_map(|m| m["name"].as_str())
        .collect();
    assert_eq!(
        names,
        [
            "gpt2",
            "vllm_model",
            "gpt2_nostream",
            "yolov8s",
            "bert_classifier",
            "text_classifier",
            "resnet_fp16",
            "resnet_int8",
            "reasoning_vllm",
            "reasoning_sglang"
        ]
    );
    assert_eq!(
        index[0],
        json!({"name": "gpt2", "version": "1", "state": "READY"})
    );
    assert_eq!(get_json(&c, format!("{base}/v2/models")).await, index);

    // gRPC side.
    let mut g = grpc(&h).await;
    assert!(
        g.server_live(proto::ServerLiveRequest {})
            .await
            .expect("live")
            .into_inner()
            .live
    );
    assert!(
        g.server_ready(proto::ServerReadyRequest {})
            .await
            .expect("ready")
            .into_inner()
            .ready
    );
    let md = g
        .server_metadata(proto::ServerMetadataRequest {})
        .await
        .expect("md")
        .into_inner();
    assert!(md.extensions.iter().any(|e| e == "statistics"));
    let mm = g
        .model_metadata(proto::ModelMetadataRequest {
            name: "gpt2".into(),
            version: String::new(),
        })
        .await
        .expect("mm")
        .into_inner();
    assert_eq!(
        (
            mm.inputs[1].name.as_str(),
            mm.inputs[1].datatype.as_str(),
            mm.inputs[1].shape.clone()
        ),
        ("max_tokens", "INT32", vec![-1, 1])
    );
    let mc = g
        .model_config(proto::ModelConfigRequest {
            name: "vllm_model".into(),
            version: "1".into(),
        })
        .await
        .expect("mc")
        .into_inner();
    let mc = mc.config.expect("config");
    assert_eq!((mc.backend.as_str(), mc.max_batch_size), ("vllm", 0));
    assert_eq!(mc.model_transaction_policy.map(|p| p.decoupled), Some(true));
    assert!(
        g.model_ready(proto::ModelReadyRequest {
            name: "gpt2".into(),
            version: "1".into()
        })
        .await
        .expect("mr")
        .into_inner()
        .ready
    );
    let idx = g
        .repository_index(proto::RepositoryIndexRequest::default())
        .await
        .expect("idx")
        .into_inner();
    assert_eq!(idx.models.len(), ModelSpec::defaults().len());
    h.shutdown().await;
}

#[tokio::test]
async fn unknown_model_errors_on_every_protocol() {
    let h = start_instant().await;
    let c = http_client();
    let base = h.http_url();
    let r = c
        .get(format!("{base}/v2/models/nope"))
        .send()
        .await
        .expect("send");
    assert_eq!(r.status(), 400);
    assert_eq!(
        r.json::<Value>().await.expect("json"),
        json!({"error": "Request for unknown model: 'nope' is not found"})
    );
    let r = c
        .post(format!("{base}/v2/models/nope/generate"))
        .json(&json!({"text_input": "x"}))
        .send()
        .await
        .expect("send");
    assert_eq!(r.status(), 400);
    let r = c
        .get(format!("{base}/v2/models/gpt2/versions/7"))
        .send()
        .await
        .expect("send");
    assert_eq!(r.status(), 400);
    let r = c
        .post(format!("{base}/v1/chat/completions"))
        .json(&json!({"model": "nope", "messages": [{"role": "user", "content": "x"}]}))
        .send()
        .await
        .expect("send");
    assert_eq!(r.status(), 404);
    assert_eq!(
        r.json::<Value>().await.expect("json"),
        json!({"error": {"message": "The model `nope` does not exist.", "type": "NotFoundError", "code": 404}})
    );

    let mut g = grpc(&h).await;
    let e = g
        .model_metadata(proto::ModelMetadataRequest {
            name: "nope".into(),
            version: String::new(),
        })
        .await
        .expect_err("unknown");
    assert_eq!(e.code(), tonic::Code::NotFound);
    assert_eq!(
        e.message(),
        "Request for unknown model: 'nope' is not found"
    );
    let out = stream_call(&mut g, vec![trt_request("nope", "r1", "x", 2, true, false)])
        .await
        .expect("stream");
    assert_eq!(out.len(), 1);
    assert_eq!(
        out[0].error_message,
        "Request for unknown model: 'nope' is not found"
    );
    assert_eq!(
        out[0].infer_response.as_ref().map(|r| r.id.as_str()),
        Some("r1")
    );
    // Bad tensors: Triton-style message naming what was expected.
    let mut bad = trt_request("gpt2", "r2", "x", 2, true, false);
    bad.inputs[1].datatype = "INT64".into();
    let out = stream_call(&mut g, vec![bad]).await.expect("stream");
    assert!(
        out[0].error_message.contains("expecting INT32"),
        "{}",
        out[0].error_message
    );
    // Bad JSON over HTTP.
    let r = c
        .post(format!("{base}/v2/models/gpt2/generate"))
        .body("{not json")
        .send()
        .await
        .expect("send");
    assert_eq!(r.status(), 400);
    assert!(r.text().await.expect("text").contains("JSON"));
    h.shutdown().await;
}

#[tokio::test]
async fn generate_and_generate_stream() {
    let h = start_instant().await;
    let c = http_client();
    let base = h.http_url();

    // Non-streaming; the prompt is echoed unless exclude_input_in_output is true.
    let v: Value = c
        .post(format!("{base}/v2/models/gpt2/generate"))
        .json(
            &json!({"text_input": "Hello world", "max_tokens": 7, "exclude_input_in_output": true}),
        )
        .send()
        .await
        .expect("send")
        .json()
        .await
        .expect("json");
    assert_eq!(
        (v["model_name"].as_str(), v["model_version"].as_str()),
        (Some("gpt2"), Some("1"))
    );
    assert_eq!(count_tokens(v["text_output"].as_str().expect("text")), 7);
    let v: Value = c
        .post(format!("{base}/v2/models/gpt2/generate"))
        .json(&json!({"text_input": "Hello world", "parameters": {"max_tokens": 3}}))
        .send()
        .await
        .expect("send")
        .json()
        .await
        .expect("json");
    assert!(
        v["text_output"]
            .as_str()
            .expect("text")
            .starts_with("Hello world")
    );

    // Streaming: one token per event, exact count, no [DONE].
    for (model, body) in [
        (
            "gpt2",
            json!({"text_input": "Tell me a story", "max_tokens": 25, "stream": true}),
        ),
        (
            "vllm_model",
            json!({"text_input": "Tell me a story", "sampling_parameters": "{\"max_tokens\": \"25\"}"}),
        ),
    ] {
        let r = c
            .post(format!("{base}/v2/models/{model}/generate_stream"))
            .json(&body)
            .send()
            .await
            .expect("send");
        assert_eq!(r.status(), 200);
        assert!(
            r.headers()["content-type"]
                .to_str()
                .expect("ct")
                .starts_with("text/event-stream")
        );
        let body = r.text().await.expect("body");
        assert!(!body.contains("[DONE]"));
        let events = sse_events(&body);
        assert_eq!(events.len(), 25, "{model}");
        let mut text = String::new();
        for e in &events {
            let v: Value = serde_json::from_str(e).expect("event json");
            assert_eq!(v["model_name"], model);
            let t = v["text_output"].as_str().expect("text_output");
            assert_eq!(count_tokens(t), 1);
            text.push_str(t);
        }
        assert_eq!(count_tokens(&text), 25);
    }
    // `id` is echoed in every event.
    let body = c
        .post(format!("{base}/v2/models/gpt2/generate_stream"))
        .json(&json!({"id": "abc", "text_input": "x", "max_tokens": 2}))
        .send()
        .await
        .expect("send")
        .text()
        .await
        .expect("body");
    for e in sse_events(&body) {
        let v: Value = serde_json::from_str(&e).expect("json");
        assert_eq!(v["id"], "abc");
    }
    h.shutdown().await;
}

#[tokio::test]
async fn openai_chat_and_completions() {
    let h = start_instant().await;
    let c = http_client();
    let base = h.http_url();
    let models = get_json(&c, format!("{base}/v1/models")).await;
    assert_eq!(models["object"], "list");
    assert_eq!(models["data"][0]["id"], "gpt2");
    assert_eq!(models["data"][0]["object"], "model");

    // Streaming chat with usage.
    let body = c
        .post(format!("{base}/v1/chat/completions"))
        .json(&json!({"model": "gpt2", "messages": [{"role": "user", "content": "Hi there, how are you?"}],
            "max_tokens": 12, "stream": true, "stream_options": {"include_usage": true}}))
        .send().await.expect("send").text().await.expect("body");
    let events = sse_events(&body);
    assert_eq!(events.last().map(String::as_str), Some("[DONE]"));
    let chunks: Vec<Value> = events[..events.len() - 1]
        .iter()
        .map(|e| serde_json::from_str(e).expect("chunk"))
        .collect();
    assert_eq!(chunks.len(), 1 + 12 + 1 + 1, "role, tokens, finish, usage");
    assert_eq!(
        chunks[0]["choices"][0]["delta"],
        json!({"role": "assistant", "content": ""})
    );
    let text: String = chunks[1..13]
        .iter()
        .map(|c| {
            c["choices"][0]["delta"]["content"]
                .as_str()
                .expect("content")
        })
        .collect();
    assert_eq!(count_tokens(&text), 12);
    assert_eq!(chunks[13]["choices"][0]["finish_reason"], "length");
    assert_eq!(chunks[13]["choices"][0]["delta"], json!({}));
    assert_eq!(chunks[14]["choices"], json!([]));
    assert_eq!(chunks[14]["usage"]["completion_tokens"], 12);
    assert_eq!(
        chunks[14]["usage"]["prompt_tokens"],
        count_tokens("Hi there, how are you?")
    );
    assert!(
        chunks
            .iter()
            .all(|c| c["object"] == "chat.completion.chunk" && c["id"] == chunks[0]["id"])
    );

    // Without include_usage: no usage chunk.
    let body = c
        .post(format!("{base}/v1/chat/completions"))
        .json(&json!({"model": "vllm_model", "messages": [{"role": "user", "content": "x"}], "max_completion_tokens": 3, "stream": true}))
        .send().await.expect("send").text().await.expect("body");
    assert_eq!(sse_events(&body).len(), 1 + 3 + 1 + 1);

    // Non-streaming chat.
    let v: Value = c
        .post(format!("{base}/v1/chat/completions"))
        .json(&json!({"model": "gpt2", "messages": [{"role": "user", "content": "Hello"}], "max_tokens": 5}))
        .send().await.expect("send").json().await.expect("json");
    assert_eq!(v["object"], "chat.completion");
    assert_eq!(
        count_tokens(
            v["choices"][0]["message"]["content"]
                .as_str()
                .expect("content")
        ),
        5
    );
    assert_eq!(
        v["usage"],
        json!({"prompt_tokens": 1, "completion_tokens": 5, "total_tokens": 6})
    );

    // Completions, both ways.
    let v: Value = c
        .post(format!("{base}/v1/completions"))
        .json(&json!({"model": "gpt2", "prompt": "Once upon a time", "max_tokens": 9}))
        .send()
        .await
        .expect("send")
        .json()
        .await
        .expect("json");
    assert_eq!(v["object"], "text_completion");
    assert_eq!(
        count_tokens(v["choices"][0]["text"].as_str().expect("text")),
        9
    );
    assert_eq!(v["usage"]["prompt_tokens"], 4);
    let body = c
        .post(format!("{base}/v1/completions"))
        .json(&json!({"model": "gpt2", "prompt": "Once upon a time", "max_tokens": "4", "stream": true}))
        .send().await.expect("send").text().await.expect("body");
    let events = sse_events(&body);
    assert_eq!(events.len(), 4 + 1 + 1, "tokens, finish, [DONE]");
    let text: String = events[..4]
        .iter()
        .map(|e| {
            serde_json::from_str::<Value>(e).expect("json")["choices"][0]["text"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        })
        .collect();
    assert_eq!(count_tokens(&text), 4);
    h.shutdown().await;
}

#[tokio::test]
async fn grpc_stream_multiplexes_and_follows_final_response_rules() {
    let h = start_instant().await;
    let mut g = grpc(&h).await;

    // Two requests on one stream, with and without an empty final response.
    let out = stream_call(
        &mut g,
        vec![
            trt_request("gpt2", "a", "Hello", 5, true, true),
            trt_request("gpt2", "b", "Hello again", 3, true, false),
        ],
    )
    .await
    .expect("stream");
    let mut by_id: HashMap<String, Vec<proto::ModelInferResponse>> = HashMap::new();
    for m in out {
        assert!(m.error_message.is_empty(), "{}", m.error_message);
        let r = m.infer_response.expect("response");
        assert_eq!(
            (r.model_name.as_str(), r.model_version.as_str()),
            ("gpt2", "1")
        );
        by_id.entry(r.id.clone()).or_default().push(r);
    }
    let a = &by_id["a"];
    assert_eq!(a.len(), 6, "5 tokens + empty final");
    assert!(a[..5].iter().all(|r| !final_flag(r)
        && r.outputs[0].name == "text_output"
        && r.outputs[0].datatype == "BYTES"));
    assert_eq!(a[0].outputs[0].shape, vec![1, 1]);
    assert!(a[5].outputs.is_empty() && a[5].raw_output_contents.is_empty() && final_flag(&a[5]));
    let text: String = a[..5].iter().filter_map(output_text).collect();
    assert_eq!(count_tokens(&text), 5);
    let b = &by_id["b"];
    assert_eq!(b.len(), 3, "last token carries final");
    assert!(!final_flag(&b[0]) && !final_flag(&b[1]) && final_flag(&b[2]));

    // vLLM layout: final on the last token even when empty finals are enabled.
    let out = stream_call(&mut g, vec![vllm_request("v", "Hi", 4)])
        .await
        .expect("stream");
    let rs: Vec<_> = out
        .into_iter()
        .map(|m| m.infer_response.expect("r"))
        .collect();
    assert_eq!(rs.len(), 4);
    assert!(final_flag(&rs[3]) && !final_flag(&rs[2]));
    assert_eq!(rs[0].outputs[0].shape, vec![1]);

    // stream=false: one response with the whole text (TensorRT-LLM semantics).
    let out = stream_call(
        &mut g,
        vec![trt_request("gpt2", "s", "Hi", 6, false, false)],
    )
    .await
    .expect("stream");
    assert_eq!(out.len(), 1);
    let r = out[0].infer_response.as_ref().expect("r");
    assert!(final_flag(r));
    assert_eq!(count_tokens(&output_text(r).expect("text")), 6);

    // ModelInfer refuses decoupled models with Triton's message.
    let e = g
        .model_infer(trt_request("gpt2", "u", "Hi", 2, false, false))
        .await
        .expect_err("decoupled");
    assert_eq!(
        e.message(),
        "ModelInfer RPC doesn't support models with decoupled transaction policy"
    );
    h.shutdown().await;
}

#[tokio::test]
async fn non_decoupled_model_answers_model_infer_and_http_infer() {
    let mut spec = ModelSpec::tensorrt_llm("gpt2_sync");
    spec.decoupled = false;
    let h = start(SimConfig {
        engine: EngineConfig::instant(),
        models: vec![spec],
        ..SimConfig::default()
    })
    .await;
    let mut g = grpc(&h).await;
    let r = g
        .model_infer(trt_request("gpt2_sync", "u1", "Hi", 4, false, false))
        .await
        .expect("infer")
        .into_inner();
    assert_eq!(r.id, "u1");
    assert_eq!(count_tokens(&output_text(&r).expect("text")), 4);

    let c = http_client();
    let body = json!({"id": "h1", "inputs": [
        {"name": "text_input", "datatype": "BYTES", "shape": [1, 1], "data": ["Hi"]},
        {"name": "max_tokens", "datatype": "INT32", "shape": [1, 1], "data": [[3]]},
        {"name": "exclude_input_in_output", "datatype": "BOOL", "shape": [1, 1], "data": [true]}
    ]});
    let v: Value = c
        .post(format!("{}/v2/models/gpt2_sync/infer", h.http_url()))
        .json(&body)
        .send()
        .await
        .expect("send")
        .json()
        .await
        .expect("json");
    assert_eq!(v["id"], "h1");
    assert_eq!(v["outputs"][0]["datatype"], "BYTES");
    assert_eq!(
        count_tokens(v["outputs"][0]["data"][0].as_str().expect("data")),
        3
    );
    h.shutdown().await;
}

fn stat(v: &Value, model: &str, path: &str) -> u64 {
    let m = v["model_stats"]
        .as_array()
        .expect("model_stats")
        .iter()
        .find(|m| m["name"] == model)
        .expect("model");
    m.pointer(path)
        .and_then(Value::as_u64)
        .unwrap_or_else(|| panic!("{path} in {m}"))
}

#[tokio::test]
async fn statistics_and_metrics_count_both_protocols() {
    let h = start_instant().await;
    let c = http_client();
    let base = h.http_url();
    let before = get_json(&c, format!("{base}/v2/models/stats")).await;
    for _ in 0..3 {
        c.post(format!("{base}/v2/models/gpt2/generate"))
            .json(&json!({"text_input": "x", "max_tokens": 2}))
            .send()
            .await
            .expect("send")
            .bytes()
            .await
            .expect("body");
    }
    let mut g = grpc(&h).await;
    stream_call(
        &mut g,
        vec![
            trt_request("gpt2", "1", "x", 2, true, true),
            trt_request("gpt2", "2", "x", 2, true, true),
        ],
    )
    .await
    .expect("stream");
    let after = get_json(&c, format!("{base}/v2/models/gpt2/stats")).await;
    let delta = |p: &str| stat(&after, "gpt2", p) - stat(&before, "gpt2", p);
    assert_eq!(delta("/inference_count"), 5);
    assert_eq!(delta("/execution_count"), 5);
    assert_eq!(delta("/inference_stats/success/count"), 5);
    assert_eq!(delta("/inference_stats/queue/count"), 5);
    assert_eq!(delta("/inference_stats/compute_infer/count"), 5);
    assert_eq!(delta("/inference_stats/fail/count"), 0);
    assert!(stat(&after, "gpt2", "/last_inference") > 1_600_000_000_000);
    let m = &after["model_stats"][0];
    assert_eq!(m["batch_stats"], json!([]));
    assert_eq!(
        m["inference_stats"]["cache_hit"],
        json!({"count": 0, "ns": 0})
    );

    let gs = g
        .model_statistics(proto::ModelStatisticsRequest {
            name: "gpt2".into(),
            version: String::new(),
        })
        .await
        .expect("stats")
        .into_inner();
    assert_eq!(gs.model_stats[0].inference_count, 5);
    let all = g
        .model_statistics(proto::ModelStatisticsRequest::default())
        .await
        .expect("stats")
        .into_inner();
    assert_eq!(all.model_stats.len(), ModelSpec::defaults().len());

    let text = c
        .get(h.metrics_url())
        .send()
        .await
        .expect("metrics")
        .text()
        .await
        .expect("text");
    for line in [
        "nv_inference_request_success{model=\"gpt2\",version=\"1\"} 5",
        "nv_inference_count{model=\"gpt2\",version=\"1\"} 5",
        "nv_inference_request_failure{model=\"gpt2\",reason=\"REJECTED\",version=\"1\"} 0",
        "nv_inference_pending_request_count{model=\"gpt2\",version=\"1\"} 0",
        "nv_inference_first_response_histogram_ms_count{model=\"gpt2\",version=\"1\"} 5",
        "ttftbench_sim_first_response_us_count{model=\"gpt2\",version=\"1\"} 5",
        "# TYPE ttftbench_sim_first_response_us summary",
        "# TYPE nv_inference_queue_duration_us counter",
        "# TYPE nv_inference_compute_infer_duration_us counter",
    ] {
        assert!(text.contains(line), "missing {line:?}");
    }
    assert!(h.first_response_histogram("gpt2").expect("hist").len() == 5);
    h.shutdown().await;
}

#[tokio::test]
async fn engine_timing_queueing_shows_in_counters() {
    // Fast engine, 2 slots: 6 concurrent requests must queue.
    let engine = EngineConfig {
        max_batch: 2,
        prefill_base_us: 1000,
        prefill_us_per_token: 0,
        decode_base_us: 2000,
        decode_us_per_seq: 0,
        max_queue: 0,
        ..EngineConfig::default()
    };
    let h = start(SimConfig {
        engine,
        ..SimConfig::default()
    })
    .await;
    let c = http_client();
    let url = format!("{}/v2/models/gpt2/generate_stream", h.http_url());
    let t0 = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..6 {
        let (c, url) = (c.clone(), url.clone());
        tasks.push(tokio::spawn(async move {
            let start = Instant::now();
            let mut r = c
                .post(&url)
                .json(&json!({"text_input": "hi", "max_tokens": 10}))
                .send()
                .await
                .expect("send");
            let mut first = None;
            let mut body = Vec::new();
            while let Some(chunk) = r.chunk().await.expect("chunk") {
                first.get_or_insert_with(|| start.elapsed());
                body.extend_from_slice(&chunk);
            }
            (
                first.expect("first token"),
                sse_events(&String::from_utf8(body).expect("utf8")).len(),
            )
        }));
    }
    let mut ttfts = Vec::new();
    for t in tasks {
        let (ttft, n) = t.await.expect("join");
        assert_eq!(n, 10);
        ttfts.push(ttft);
    }
    let wall = t0.elapsed();
    ttfts.sort();
    // 60 tokens through 2 slots is at least 30 steps of 2 ms, whatever the arrival order.
    assert!(wall >= Duration::from_millis(60), "{wall:?}");
    assert!(ttfts[0] >= Duration::from_millis(3), "{ttfts:?}");
    // The last requests waited for two earlier ones to finish (~20 ms each).
    assert!(
        ttfts[5] >= Duration::from_millis(30),
        "the last wave queued: {ttfts:?}"
    );

    let stats = get_json(&c, format!("{}/v2/models/gpt2/stats", h.http_url())).await;
    let queue_ns = stat(&stats, "gpt2", "/inference_stats/queue/ns");
    let infer_ns = stat(&stats, "gpt2", "/inference_stats/compute_infer/ns");
    assert_eq!(stat(&stats, "gpt2", "/inference_stats/success/count"), 6);
    // Four requests queued behind one or two 21 ms generations.
    assert!(queue_ns >= 60_000_000, "queue {queue_ns}");
    // In a slot, each request needs one prefill step (≥ 3 ms) and nine 2 ms decode steps.
    assert!(infer_ns >= 6 * 21_000_000, "infer {infer_ns}");
    let execs = stat(&stats, "gpt2", "/execution_count");
    assert!((3..=6).contains(&execs), "admission batches: {execs}");
    let text = c
        .get(h.metrics_url())
        .send()
        .await
        .expect("m")
        .text()
        .await
        .expect("t");
    let queue_us = queue_ns / 1000;
    assert!(text.contains(&format!(
        "nv_inference_queue_duration_us{{model=\"gpt2\",version=\"1\"}} {queue_us}"
    )));
    h.shutdown().await;
}

#[tokio::test]
async fn queue_full_is_refused() {
    let engine = EngineConfig {
        max_batch: 1,
        max_queue: 1,
        ..EngineConfig::default()
    };
    let h = start(SimConfig {
        engine,
        ..SimConfig::default()
    })
    .await;
    let c = http_client();
    let url = format!("{}/v2/models/gpt2/generate_stream", h.http_url());
    // Two long requests occupy the slot and the single queue place.
    let mut held = Vec::new();
    for _ in 0..2 {
        let r = c
            .post(&url)
            .json(&json!({"text_input": "x", "max_tokens": 200}))
            .send()
            .await
            .expect("send");
        assert_eq!(r.status(), 200);
        held.push(r);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let r = c
        .post(&url)
        .json(&json!({"text_input": "x", "max_tokens": 2}))
        .send()
        .await
        .expect("send");
    assert_eq!(r.status(), 503);
    assert_eq!(
        r.json::<Value>().await.expect("json"),
        json!({"error": "queue full"})
    );
    let mut g = grpc(&h).await;
    let out = stream_call(&mut g, vec![trt_request("gpt2", "q", "x", 2, true, false)])
        .await
        .expect("stream");
    assert_eq!(out[0].error_message, "queue full");
    let text = c
        .get(h.metrics_url())
        .send()
        .await
        .expect("m")
        .text()
        .await
        .expect("t");
    assert!(
        text.contains(
            "nv_inference_request_failure{model=\"gpt2\",reason=\"REJECTED\",version=\"1\"} 2"
        ),
        "{text}"
    );
    assert!(text.contains("nv_inference_pending_request_count{model=\"gpt2\",version=\"1\"} 1"));
    drop(held);
    h.shutdown().await;
}

#[tokio::test]
async fn faults_error_cut_and_malformed() {
    let faults = FaultConfig {
        error_rate: 0.5,
        ..FaultConfig::default()
    };
    let h = start(SimConfig {
        engine: EngineConfig::instant(),
        faults,
        ..SimConfig::default()
    })
    .await;
    let c = http_client();
    let url = format!("{}/v2/models/gpt2/generate_stream", h.http_url());
    let mut statuses = Vec::new();
    for _ in 0..4 {
        let r = c
            .post(&url)
            .json(&json!({"text_input": "x", "max_tokens": 2}))
            .send()
            .await
            .expect("send");
        statuses.push(r.status().as_u16());
        if r.status() == 500 {
            assert!(
                r.json::<Value>().await.expect("json")["error"]
                    .as_str()
                    .expect("error")
                    .contains("fault")
            );
        }
    }
    assert_eq!(statuses, [200, 500, 200, 500], "every 2nd request fails");
    let mut g = grpc(&h).await;
    let out = stream_call(&mut g, vec![trt_request("gpt2", "e1", "x", 2, true, false)])
        .await
        .expect("stream");
    assert_eq!(out.len(), 2, "request 5 succeeds");
    let out = stream_call(&mut g, vec![trt_request("gpt2", "e2", "x", 2, true, false)])
        .await
        .expect("stream");
    assert!(
        out[0].error_message.contains("fault"),
        "request 6 fails: {out:?}"
    );
    h.shutdown().await;

    let faults = FaultConfig {
        cut_rate: 1.0,
        ..FaultConfig::default()
    };
    let h = start(SimConfig {
        engine: EngineConfig::instant(),
        faults,
        ..SimConfig::default()
    })
    .await;
    let r = c
        .post(format!("{}/v2/models/gpt2/generate_stream", h.http_url()))
        .json(&json!({"text_input": "x", "max_tokens": 10}))
        .send()
        .await
        .expect("send");
    assert_eq!(r.status(), 200);
    assert!(
        r.text().await.is_err(),
        "the chunked body must be cut, not terminated"
    );
    let r = c
        .post(format!("{}/v1/chat/completions", h.http_url()))
        .json(&json!({"model": "gpt2", "messages": [{"role": "user", "content": "x"}], "max_tokens": 10, "stream": true}))
        .send().await.expect("send");
    let mut received = Vec::new();
    let mut r = r;
    let err = loop {
        match r.chunk().await {
            Ok(Some(c)) => received.extend_from_slice(&c),
            Ok(None) => panic!("stream ended cleanly"),
            Err(e) => break e,
        }
    };
    let got = String::from_utf8_lossy(&received);
    assert_eq!(
        sse_events(&got).len(),
        1 + 5,
        "role chunk + half the tokens before the cut: {err}"
    );
    assert!(!got.contains("[DONE]"));
    let mut g = grpc(&h).await;
    let mut inbound = g
        .model_stream_infer(tokio_stream::iter(vec![trt_request(
            "gpt2", "c", "x", 10, true, false,
        )]))
        .await
        .expect("open")
        .into_inner();
    let mut n = 0;
    let status = loop {
        match inbound.message().await {
            Ok(Some(_)) => n += 1,
            Ok(None) => panic!("stream ended without the cut"),
            Err(s) => break s,
        }
    };
    assert_eq!((n, status.code()), (5, tonic::Code::Aborted));
    h.shutdown().await;

    let faults = FaultConfig {
        malformed_rate: 1.0,
        ..FaultConfig::default()
    };
    let h = start(SimConfig {
        engine: EngineConfig::instant(),
        faults,
        ..SimConfig::default()
    })
    .await;
    let body = c
        .post(format!("{}/v2/models/gpt2/generate_stream", h.http_url()))
        .json(&json!({"text_input": "x", "max_tokens": 4}))
        .send()
        .await
        .expect("send")
        .text()
        .await
        .expect("body");
    let events = sse_events(&body);
    assert_eq!(events.len(), 5);
    let bad: Vec<_> = events
        .iter()
        .filter(|e| serde_json::from_str::<Value>(e).is_err())
        .collect();
    assert_eq!(bad.len(), 1, "{events:?}");
    assert!(
        serde_json::from_str::<Value>(&events[2]).is_err(),
        "malformed event sits in the middle"
    );
    h.shutdown().await;
}

#[tokio::test]
async fn stall_delays_the_first_token() {
    let faults = FaultConfig {
        stall_rate: 1.0,
        stall_ms: 150,
        ..FaultConfig::default()
    };
    let h = start(SimConfig {
        engine: EngineConfig::instant(),
        faults,
        ..SimConfig::default()
    })
    .await;
    let c = http_client();
    let t0 = Instant::now();
    let body = c
        .post(format!("{}/v2/models/gpt2/generate_stream", h.http_url()))
        .json(&json!({"text_input": "x", "max_tokens": 3}))
        .send()
        .await
        .expect("send")
        .text()
        .await
        .expect("body");
    assert!(t0.elapsed() >= Duration::from_millis(150));
    assert_eq!(sse_events(&body).len(), 3);
    h.shutdown().await;
}

#[tokio::test]
async fn unavailable_access_token_and_api_key() {
    let cfg = SimConfig {
        engine: EngineConfig::instant(),
        faults: FaultConfig {
            unavailable: true,
            ..FaultConfig::default()
        },
        api_key: Some("sk-test".into()),
        access_token: Some("secret".into()),
        ..SimConfig::default()
    };
    let h = start(cfg).await;
    let c = http_client();
    let base = h.http_url();

    let r = c
        .post(format!("{base}/v2/models/gpt2/generate"))
        .json(&json!({"text_input": "x"}))
        .send()
        .await
        .expect("send");
    assert_eq!(r.status(), 503);
    let mut g = grpc(&h).await;
    let e = stream_call(&mut g, vec![trt_request("gpt2", "x", "x", 2, true, false)])
        .await
        .expect_err("unavailable");
    assert_eq!(e.code(), tonic::Code::Unavailable);
    // Health and metadata keep answering.
    assert_eq!(
        c.get(format!("{base}/v2/health/live"))
            .send()
            .await
            .expect("send")
            .status(),
        200
    );

    // Statistics need the access token.
    let r = c
        .get(format!("{base}/v2/models/gpt2/stats"))
        .send()
        .await
        .expect("send");
    assert_eq!(r.status(), 403);
    assert_eq!(
        r.json::<Value>().await.expect("json"),
        json!({"error": "This API is restricted, expecting header 'triton-access-token'"})
    );
    let r = c
        .get(format!("{base}/v2/models/stats"))
        .header("triton-access-token", "secret")
        .send()
        .await
        .expect("send");
    assert_eq!(r.status(), 200);
    let e = g
        .model_statistics(proto::ModelStatisticsRequest::default())
        .await
        .expect_err("restricted");
    assert_eq!(e.code(), tonic::Code::PermissionDenied);
    assert_eq!(
        e.message(),
        "This API is restricted, expecting header 'triton-access-token'"
    );
    let mut req = tonic::Request::new(proto::ModelStatisticsRequest::default());
    req.metadata_mut()
        .insert("triton-access-token", "secret".parse().expect("ascii"));
    assert_eq!(
        g.model_statistics(req)
            .await
            .expect("allowed")
            .into_inner()
            .model_stats
            .len(),
        ModelSpec::defaults().len()
    );

    // OpenAI routes need the bearer key.
    let r = c
        .get(format!("{base}/v1/models"))
        .send()
        .await
        .expect("send");
    assert_eq!(r.status(), 401);
    let v: Value = r.json().await.expect("json");
    assert_eq!(v["error"]["code"], "invalid_api_key");
    assert_eq!(v["error"]["message"], "Incorrect API key provided");
    let r = c
        .get(format!("{base}/v1/models"))
        .bearer_auth("sk-test")
        .send()
        .await
        .expect("send");
    assert_eq!(r.status(), 200);
    let r = c
        .get(format!("{base}/v1/models"))
        .bearer_auth("wrong")
        .send()
        .await
        .expect("send");
    assert_eq!(r.status(), 401);
    h.shutdown().await;
}

#[tokio::test]
async fn http2_prior_knowledge_streams_too() {
    let h = start_instant().await;
    let _ = rustls::crypto::ring::default_provider().install_default();
    let c = reqwest::Client::builder()
        .no_proxy()
        .http2_prior_knowledge()
        .build()
        .expect("h2 client");
    let r = c
        .post(format!("{}/v1/chat/completions", h.http_url()))
        .json(&json!({"model": "gpt2", "messages": [{"role": "user", "content": "x"}], "max_tokens": 8, "stream": true}))
        .send()
        .await
        .expect("send");
    assert_eq!(r.version(), reqwest::Version::HTTP_2);
    let events = sse_events(&r.text().await.expect("body"));
    assert_eq!(events.len(), 1 + 8 + 1 + 1);
    h.shutdown().await;
}

#[tokio::test]
async fn shutdown_ends_streams_in_flight() {
    let h = start(SimConfig::default()).await;
    let c = http_client();
    let r = c
        .post(format!("{}/v2/models/gpt2/generate_stream", h.http_url()))
        .json(&json!({"text_input": "x", "max_tokens": 100000}))
        .send()
        .await
        .expect("send");
    assert_eq!(r.status(), 200);
    let t0 = Instant::now();
    let reader = tokio::spawn(async move { r.text().await });
    tokio::time::sleep(Duration::from_millis(30)).await;
    h.shutdown().await;
    let body = reader
        .await
        .expect("join")
        .expect("body ends cleanly with an error event");
    assert!(
        body.contains("\"error\""),
        "{}",
        &body[body.len().saturating_sub(200)..]
    );
    assert!(
        t0.elapsed() < Duration::from_secs(4),
        "shutdown did not wait for the 100k-token stream"
    );
}

//! The per-token and per-request work of the load generator, one step at a time: SSE framing,
//! reading a token event's JSON, reading a KServe stream response's protobuf, recording into a
//! histogram, folding a request into the level's aggregate, and writing its `requests.jsonl` row.
//! Allocation counts are shown: the per-token steps should allocate nothing.
//!
//! Run with `cargo bench --bench hot_path`.

use divan::{Bencher, black_box};
use prost::Message;
use ttftbench::artifact::records::write_row;
use ttftbench::client::events::{EventReader, parse_event};
use ttftbench::client::sse::{EventSink, SseParser};
use ttftbench::client::wire::read_stream_response;
use ttftbench::proto::model_infer_response::InferOutputTensor;
use ttftbench::proto::{
    InferParameter, ModelInferResponse, ModelStreamInferResponse, infer_parameter,
};
use ttftbench::record::{Clock, Phase, RequestRecord};
use ttftbench::stats::{Aggregate, Dist};

#[global_allocator]
static ALLOC: divan::AllocProfiler = divan::AllocProfiler::system();

fn main() {
    divan::main();
}

const CHUNK: &str = r#"{"id":"chatcmpl-42","object":"chat.completion.chunk","created":1764400000,"model":"gpt2","choices":[{"index":0,"delta":{"content":" the"},"finish_reason":null}]}"#;

/// A 100-token OpenAI chat stream as the bytes of its body.
fn stream_bytes() -> Vec<u8> {
    let mut s = String::new();
    for _ in 0..100 {
        s.push_str("data: ");
        s.push_str(CHUNK);
        s.push_str("\n\n");
    }
    s.push_str("data: [DONE]\n\n");
    s.into_bytes()
}

/// SSE framing of a 100-event stream, read in one piece and event by event.
#[divan::bench(args = [true, false])]
fn sse_100_events(b: Bencher, one_read: bool) {
    let body = stream_bytes();
    let pieces: Vec<&[u8]> = if one_read {
        vec![&body]
    } else {
        body.split_inclusive(|c| *c == b'\n').collect()
    };
    let mut p = SseParser::new();
    b.bench_local(|| {
        let mut n = 0usize;
        for piece in &pieces {
            let _ = p.feed(piece, |_, d| n += d.len());
        }
        black_box(n)
    });
}

/// One token event's JSON: the common shape (fast scanner) and one with escapes (full reader).
#[divan::bench(args = ["plain", "escaped"])]
fn event_json(b: Bencher, kind: &str) {
    let data = if kind == "plain" {
        CHUNK.to_string()
    } else {
        CHUNK.replace(r#"" the""#, r#""line\nbreak \"q\"""#)
    };
    let mut text = String::with_capacity(1 << 16);
    b.bench_local(|| {
        if text.len() > 60_000 {
            text.clear();
        }
        black_box(
            parse_event(data.as_bytes(), &mut text)
                .map(|i| i.content_bytes)
                .unwrap_or(0),
        )
    });
}

/// The 100 token events of one stream read through one [`EventReader`], as a stream is read:
/// the first event is scanned field by field, the rest match its remembered shape.
#[divan::bench]
fn event_json_stream_100(b: Bencher) {
    let events: Vec<String> = (0..100)
        .map(|i| CHUNK.replace(" the", [" the", " of", " and", " to"][i % 4]))
        .collect();
    let mut text = String::with_capacity(1 << 16);
    let mut reader = EventReader::new();
    b.bench_local(|| {
        text.clear();
        let mut n = 0;
        for e in &events {
            n += reader
                .read(e.as_bytes(), &mut text)
                .map(|i| i.content_bytes)
                .unwrap_or(0);
        }
        black_box(n)
    });
}

/// A 100-token stream read in one piece, framed and its JSON read, as a one-write response is:
/// with the token events read straight from the stream (`shortcut`), or framed first and then
/// read (`framed`).
#[divan::bench(args = ["shortcut", "framed"])]
fn sse_and_json_100_events(b: Bencher, how: &str) {
    struct Sink {
        reader: EventReader,
        text: String,
        shortcut: bool,
    }
    impl EventSink for Sink {
        fn lines(&mut self, at: &[u8]) -> usize {
            if !self.shortcut {
                return 0;
            }
            let run = self
                .reader
                .read_run(at, &mut self.text, usize::MAX, |_, _| {});
            run.bytes
        }
        fn event(&mut self, _: &[u8], data: &[u8]) {
            let _ = self.reader.read(data, &mut self.text);
        }
    }
    let body = stream_bytes();
    let mut p = SseParser::new();
    let mut sink = Sink {
        reader: EventReader::new(),
        text: String::with_capacity(1 << 16),
        shortcut: how == "shortcut",
    };
    b.bench_local(|| {
        sink.text.clear();
        let _ = p.feed_to(&body, &mut sink);
        black_box(sink.text.len())
    });
}

/// One `ModelStreamInferResponse` carrying a token, read without decoding into structs.
#[divan::bench]
fn kserve_stream_response(b: Bencher) {
    let mut raw = Vec::new();
    raw.extend_from_slice(&4u32.to_le_bytes());
    raw.extend_from_slice(b" the");
    let mut params = std::collections::HashMap::new();
    params.insert(
        "triton_final_response".to_string(),
        InferParameter {
            parameter_choice: Some(infer_parameter::ParameterChoice::BoolParam(false)),
        },
    );
    let msg = ModelStreamInferResponse {
        error_message: String::new(),
        infer_response: Some(ModelInferResponse {
            model_name: "gpt2".into(),
            model_version: "1".into(),
            id: "123456".into(),
            parameters: params,
            outputs: vec![InferOutputTensor {
                name: "text_output".into(),
                datatype: "BYTES".into(),
                shape: vec![1, 1],
                ..Default::default()
            }],
            raw_output_contents: vec![raw],
        }),
    }
    .encode_to_vec();
    let (mut text, mut err) = (String::with_capacity(1 << 16), String::new());
    b.bench_local(|| {
        if text.len() > 60_000 {
            text.clear();
        }
        black_box(
            read_stream_response(&msg, Some(&mut text), &mut err)
                .map(|i| i.text_bytes)
                .unwrap_or(0),
        )
    });
}

/// prost's full decode of the same message, for comparison.
#[divan::bench]
fn kserve_stream_response_prost(b: Bencher) {
    let msg = ModelStreamInferResponse {
        error_message: String::new(),
        infer_response: Some(ModelInferResponse {
            model_name: "gpt2".into(),
            id: "123456".into(),
            outputs: vec![InferOutputTensor {
                name: "text_output".into(),
                datatype: "BYTES".into(),
                ..Default::default()
            }],
            raw_output_contents: vec![b"\x04\x00\x00\x00 the".to_vec()],
            ..Default::default()
        }),
    }
    .encode_to_vec();
    b.bench_local(|| {
        black_box(
            ModelStreamInferResponse::decode(msg.as_slice()).map(|m| m.infer_response.is_some()),
        )
    });
}

/// One histogram sample.
#[divan::bench]
fn histogram_record(b: Bencher) {
    let mut d = Dist::new();
    let mut v = 1_000_000u64;
    b.bench_local(|| {
        v = v.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1) % 2_000_000_000 + 1;
        d.record(black_box(v));
    });
}

fn record(i: u64) -> RequestRecord {
    RequestRecord {
        sent: Default::default(),
        tools: Default::default(),
        phase: Phase::Measure,
        seq: i,
        prompt_index: (i % 100) as u32,
        intended_ns: i * 1_000_000,
        sent_ns: i * 1_000_000 + 500,
        send_done_ns: Some(i * 1_000_000 + 9_000),
        first_byte_ns: Some(i * 1_000_000 + 20_000_000),
        first_token_ns: Some(i * 1_000_000 + 25_000_000),
        second_token_ns: Some(i * 1_000_000 + 30_000_000),
        first_output_token_ns: None,
        last_token_ns: Some(i * 1_000_000 + 520_000_000),
        end_ns: i * 1_000_000 + 520_100_000,
        isl: 200,
        osl: 100,
        server_osl: None,
        tokenizer_osl: None,
        server_isl: None,
        server_timings: None,
        client_isl: None,
        reasoning_tokens: None,
        server_reasoning_tokens: None,
        requested_osl: 100,
        chunks: 100,
        responses: 101,
        lossy_text: false,
        reconnected: false,
        connection_reused: None,
        answer: None,
        conversation: None,
        error: None,
    }
}

/// Folding one finished request (with its 99 inter-chunk gaps) into the level's aggregate.
#[divan::bench]
fn aggregate_record(b: Bencher) {
    let mut agg = Aggregate::new();
    let gaps: Vec<u64> = (0..99).map(|i| 5_000_000 + i * 1000).collect();
    let mut i = 0;
    b.bench_local(|| {
        i += 1;
        agg.record(black_box(&record(i)), &gaps, &[]);
    });
}

/// The same with the gaps of a stream read at once: 99 gaps of 0.
#[divan::bench]
fn aggregate_record_one_read(b: Bencher) {
    let mut agg = Aggregate::new();
    let gaps = vec![0u64; 99];
    let mut i = 0;
    b.bench_local(|| {
        i += 1;
        agg.record(black_box(&record(i)), &gaps, &[]);
    });
}

/// One `requests.jsonl` row.
#[divan::bench]
fn record_row(b: Bencher) {
    let clock = Clock::start();
    let mut out = Vec::with_capacity(1 << 20);
    let ids = ttftbench::client::request_id::RequestIds::new("20261201T205610Z-4f1a9c", None);
    let mut i = 0;
    b.bench_local(|| {
        i += 1;
        if out.len() > 900_000 {
            out.clear();
        }
        let rec = black_box(record(i));
        let id = ids.id(rec.seq);
        write_row(&mut out, "concurrency8", &clock, &rec, Some(&id)).unwrap_or(());
    });
}

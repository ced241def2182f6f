//! Request ids: each request names itself `RUN-SEQ` (the run id of its artifacts and the
//! request's `seq` in `requests.jsonl`), in an HTTP header (`X-Request-ID` by default,
//! `--request-id-header`) and in KServe's `id` field over gRPC, so a slow request found in
//! `requests.jsonl` can be found in the server's logs, and a line of those logs leads back to
//! its run. The pieces are encoded once per run; a request appends its decimal `seq` only.

use std::fmt;

use super::wire::decimal;

/// How a run's requests name themselves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestIds {
    /// `RUN-`.
    prefix: Box<str>,
    /// `Name: RUN-`: the header line up to the sequence number (`None`: no header).
    header: Option<Box<[u8]>>,
}

/// Field 3 (`id`) of a `ModelInferRequest`: tag, length, at most 126 bytes of id.
pub struct IdField {
    buf: [u8; 128],
    len: usize,
}

impl IdField {
    /// The bare decimal `id` (requests sent outside a run: `doctor`, discovery): protobuf
    /// fields may come in any order, so the body is encoded once and each request only appends
    /// its id field after it.
    pub fn numeric(id: u64) -> IdField {
        IdField::new(b"", id)
    }

    /// `prefix` followed by `seq` in decimal (`prefix` at most 100 bytes, so the one-byte
    /// length always fits).
    fn new(prefix: &[u8], seq: u64) -> IdField {
        let mut digits = [0; 20];
        let d = decimal(seq, &mut digits);
        let n = prefix.len() + d.len();
        let mut f = IdField {
            buf: [0; 128],
            len: 2 + n,
        };
        f.buf[0] = 0x1a; // field 3, wire type 2 (length-delimited)
        f.buf[1] = n as u8;
        f.buf[2..2 + prefix.len()].copy_from_slice(prefix);
        f.buf[2 + prefix.len()..f.len].copy_from_slice(d);
        f
    }

    /// The encoded field.
    pub fn bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

impl RequestIds {
    /// The ids of run `run_id`, sent in header `header` over HTTP (`None`: in no header). The
    /// header name must be an HTTP token (checked by the plan).
    pub fn new(run_id: &str, header: Option<&str>) -> RequestIds {
        // Room for the gRPC field's one-byte length: at most 99 bytes of run id (cut at a
        // character boundary), the dash and 20 digits of seq always fit.
        let mut end = run_id.len().min(99);
        while !run_id.is_char_boundary(end) {
            end -= 1;
        }
        let prefix = format!("{}-", &run_id[..end]);
        RequestIds {
            header: header.map(|h| format!("{h}: {prefix}").into_bytes().into_boxed_slice()),
            prefix: prefix.into_boxed_str(),
        }
    }

    /// Appends the header line `Name: RUN-SEQ\r\n` to a request head (nothing without a header).
    #[inline]
    pub fn push_header(&self, seq: u64, head: &mut Vec<u8>) {
        if let Some(h) = &self.header {
            head.extend_from_slice(h);
            head.extend_from_slice(decimal(seq, &mut [0; 20]));
            head.extend_from_slice(b"\r\n");
        }
    }

    /// KServe's `id` field for request `seq`, protobuf-encoded.
    pub fn grpc_field(&self, seq: u64) -> IdField {
        IdField::new(self.prefix.as_bytes(), seq)
    }

    /// Request `seq`'s id as text (what `requests.jsonl` records).
    pub fn id(&self, seq: u64) -> RequestId<'_> {
        RequestId {
            prefix: &self.prefix,
            seq,
        }
    }
}

/// One request's id, shown without allocating.
#[derive(Debug, Clone, Copy)]
pub struct RequestId<'a> {
    prefix: &'a str,
    seq: u64,
}

impl fmt::Display for RequestId<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}", self.prefix, self.seq)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::ModelInferRequest;
    use prost::Message;

    #[test]
    fn one_id_in_the_header_the_grpc_field_and_the_records() {
        let ids = RequestIds::new("20261201T205610Z-4f1a9c", Some("X-Request-ID"));
        let mut head = b"POST / HTTP/1.1\r\n".to_vec();
        ids.push_header(42, &mut head);
        assert_eq!(
            head,
            b"POST / HTTP/1.1\r\nX-Request-ID: 20261201T205610Z-4f1a9c-42\r\n"
        );
        assert_eq!(ids.id(42).to_string(), "20261201T205610Z-4f1a9c-42");
        let f = ids.grpc_field(42);
        assert_eq!(f.bytes()[..2], [0x1a, 26]);
        assert_eq!(&f.bytes()[2..], b"20261201T205610Z-4f1a9c-42");
        let mut none = Vec::new();
        RequestIds::new("r", None).push_header(1, &mut none);
        assert!(none.is_empty(), "no header asked for");
    }

    #[test]
    fn request_id_appended_decodes() {
        let req = ModelInferRequest {
            model_name: "gpt2".into(),
            ..Default::default()
        };
        let mut out = req.encode_to_vec();
        out.extend_from_slice(IdField::numeric(1234567).bytes());
        out.extend_from_slice(RequestIds::new("run", None).grpc_field(7).bytes());
        let back = ModelInferRequest::decode(out.as_slice()).unwrap();
        assert_eq!(back.model_name, "gpt2");
        assert_eq!(
            back.id, "run-7",
            "the last id field wins, as protobuf merges"
        );
    }

    #[test]
    fn the_longest_id_fits_the_field() {
        for run in ["r".repeat(300), "é".repeat(300)] {
            let f = RequestIds::new(&run, None).grpc_field(u64::MAX);
            assert_eq!(usize::from(f.bytes()[1]), f.bytes().len() - 2);
            assert!(f.bytes().len() <= 128);
        }
    }
}

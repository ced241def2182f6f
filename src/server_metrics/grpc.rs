//! The server view's own gRPC requests: it asks the server for statistics and metadata with
//! its own calls (the run's `-H` metadata on each), never through the load client, whose
//! code path is what the run measures.

use tonic::metadata::{KeyAndValueRef, MetadataMap};

/// `req` with the run's `-H` metadata (PyTriton's access token among them) added.
pub fn with_metadata<T>(mut req: tonic::Request<T>, md: &MetadataMap) -> tonic::Request<T> {
    let m = req.metadata_mut();
    for kv in md.iter() {
        if let KeyAndValueRef::Ascii(k, v) = kv {
            m.append(k.clone(), v.clone());
        }
    }
    req
}

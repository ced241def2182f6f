//! Can this process hold the load asked for? Open files and requests in flight, checked once
//! when a session is prepared, before anything is sent; the answers are warnings the front ends
//! print with the probe's notices.

/// Requests in flight per client core beyond which a warning is given: twice the most measured
/// so far (10 000 streams in flight on 2 cores with 0 errors, `scripts/bench_client.sh`, README).
/// Past it the generator's own scheduling delays join the latencies and requests time out in
/// the client's queue rather than at the server.
pub const IN_FLIGHT_PER_CORE: usize = 10_000;

/// Descriptors taken besides the connections: files, the runtime, discovery and metrics calls.
const SPARE_FILES: u64 = 64;

/// Warnings for `in_flight` requests at once (each worker has a connection of its own, over
/// HTTP/1.1 and gRPC alike).
pub fn warnings(in_flight: usize) -> Vec<String> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut out = Vec::new();
    if let Some((soft, _)) = crate::record::open_file_limit()
        && let Some(w) = files_warning(in_flight, soft)
    {
        out.push(w);
    }
    if let Some(w) = in_flight_warning(in_flight, cores) {
        out.push(w);
    }
    out
}

fn files_warning(in_flight: usize, limit: u64) -> Option<String> {
    let need = in_flight as u64 + SPARE_FILES;
    (need > limit).then(|| {
        format!(
            "warning: {in_flight} requests in flight need about {need} open files, and this process may open {limit}: raise the limit (ulimit -n {need}; the hard limit with ulimit -Hn, or LimitNOFILE= for a service), or lower the concurrency, or connections will fail with \"too many open files\""
        )
    })
}

fn in_flight_warning(in_flight: usize, cores: usize) -> Option<String> {
    let hold = IN_FLIGHT_PER_CORE * cores.max(1);
    (in_flight > hold).then(|| {
        format!(
            "warning: {in_flight} requests in flight is far beyond what this client can hold on {cores} core(s) (about {hold}): its own queueing will be in the latencies and requests may time out before the server sees them; lower the concurrency, or split the load over several processes or machines"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_warning_counts_a_connection_per_request_in_flight() {
        assert!(files_warning(1000, 2048).is_none());
        let w = files_warning(5000, 1024).unwrap();
        assert!(w.contains("about 5064 open files"), "{w}");
        assert!(w.contains("ulimit -n 5064"), "{w}");
    }

    #[test]
    fn in_flight_warning_past_the_measured_hold() {
        assert!(in_flight_warning(20_000, 2).is_none());
        let w = in_flight_warning(100_000, 2).unwrap();
        assert!(w.contains("100000 requests in flight"), "{w}");
        assert!(w.contains("about 20000"), "{w}");
    }
}

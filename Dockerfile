# ttftbench in a container, for shards on Kubernetes (deploy/k8s/, README "Beyond one machine").
# Build: docker build -t ttftbench:0.1.0 .   (context: the repository root; .dockerignore keeps
# target/ out). The build stage compiles the release binary (protobuf is compiled in Rust by
# build.rs: no protoc needed); the run stage is a slim Debian with CA certificates (https
# targets), the binary, and an unprivileged user.

FROM docker.io/library/rust:1.88-slim-bookworm AS build
WORKDIR /src
COPY Cargo.toml Cargo.lock build.rs ./
COPY proto ./proto
COPY assets ./assets
COPY src ./src
COPY benches ./benches
COPY examples ./examples
RUN cargo build --release --locked --bin ttftbench \
    && strip target/release/ttftbench

FROM docker.io/library/debian:bookworm-slim
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --uid 10001 --user-group --no-create-home --shell /usr/sbin/nologin ttftbench \
    && mkdir /results \
    && chown ttftbench:ttftbench /results
COPY --from=build /src/target/release/ttftbench /usr/local/bin/ttftbench
USER 10001:10001
WORKDIR /results
ENTRYPOINT ["/usr/local/bin/ttftbench"]
CMD ["--help"]

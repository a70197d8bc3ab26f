# toolgate as a static binary on a distroless base: no shell, no package
# manager, runs as the unprivileged "nonroot" user (65532).
#   make image   (or: docker build -t toolgate --build-arg VERSION=v0.1.0 --build-arg REVISION=$(git rev-parse HEAD) .)
#   docker run -p 50051:50051 toolgate

FROM golang:1.26 AS build
WORKDIR /src
# Modules first, so that source edits reuse the download layer.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# The context has no .git, so Go cannot stamp the revision: make image
# passes the version and revision (toolgate version prints them).
ARG VERSION=dev
ARG REVISION=
# CGO off: a static binary with Go's own resolver, nothing to link at run time.
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w -X main.buildVersion=${VERSION} -X main.buildRevision=${REVISION}" \
      -o /out/toolgate ./cmd/toolgate && \
    CGO_ENABLED=0 go build -trimpath -ldflags="-s -w -X main.buildVersion=${VERSION} -X main.buildRevision=${REVISION}" \
      -o /out/toolgate-hook ./cmd/toolgate-hook

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/toolgate /toolgate
# The hook binary beside it, for an agent's container to copy out.
COPY --from=build /out/toolgate-hook /toolgate-hook
USER nonroot:nonroot
# gRPC, Prometheus /metrics.
EXPOSE 50051 9464
ENTRYPOINT ["/toolgate"]
# Inside a container loopback is unreachable from outside, so the default
# command listens on all interfaces (and the server warns while neither TLS
# nor tokens are configured). With no --config it serves the embedded
# default policy; mount a config and pass --config to change it.
CMD ["serve", "--listen", "0.0.0.0:50051", "--metrics-listen", "0.0.0.0:9464"]

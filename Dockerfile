# Static binary on a minimal non-root base image, for linux/amd64, linux/arm64 and linux/arm/v7
# (Raspberry Pis beside amd64 boxes): the build stage runs on the builder's own platform and
# cross-compiles, so no emulation is needed.
#   docker buildx build --platform linux/amd64,linux/arm64,linux/arm/v7 -t <image> .
# Both base images are pinned by the digest of their multi-platform index, the tag beside it
# saying what it is: a tag that moves cannot change what a release ships. Dependabot's docker
# updates move the digests, and a test (pins_test.go) refuses a FROM without one.
FROM --platform=$BUILDPLATFORM golang:1.26@sha256:3c3e25a4da13fd0478eed2df1eb35a0e667094a7124d3993a6a1d30f71c17e79 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev COMMIT="" DATE=""
ARG TARGETOS TARGETARCH TARGETVARIANT
# grpcnotrace leaves out gRPC's x/net/trace (and html/template), which the operator never enables.
RUN GOARM="${TARGETVARIANT#v}" CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH \
    go build -tags grpcnotrace -trimpath -ldflags "-s -w -X main.version=${VERSION} -X main.commit=${COMMIT} -X main.date=${DATE}" -o /router-hosts-operator .

FROM gcr.io/distroless/static-debian12:nonroot@sha256:aef9602f8710ec12bde19d593fed1f76c708531bb7aba205110f1029786ead7b
COPY --from=build /router-hosts-operator /router-hosts-operator
USER 65532:65532
ENTRYPOINT ["/router-hosts-operator"]

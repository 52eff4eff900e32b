# Static binary on a minimal non-root base image, for linux/amd64, linux/arm64 and linux/arm/v7
# (Raspberry Pis beside amd64 boxes): the build stage runs on the builder's own platform and
# cross-compiles, so no emulation is needed.
#   docker buildx build --platform linux/amd64,linux/arm64,linux/arm/v7 -t <image> .
FROM --platform=$BUILDPLATFORM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev COMMIT="" DATE=""
ARG TARGETOS TARGETARCH TARGETVARIANT
# grpcnotrace leaves out gRPC's x/net/trace (and html/template), which the operator never enables.
RUN GOARM="${TARGETVARIANT#v}" CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH \
    go build -tags grpcnotrace -trimpath -ldflags "-s -w -X main.version=${VERSION} -X main.commit=${COMMIT} -X main.date=${DATE}" -o /router-hosts-operator .

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /router-hosts-operator /router-hosts-operator
USER 65532:65532
ENTRYPOINT ["/router-hosts-operator"]

# Static binary on a minimal non-root base image.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
# grpcnotrace leaves out gRPC's x/net/trace (and html/template), which the operator never enables.
RUN CGO_ENABLED=0 go build -tags grpcnotrace -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /router-hosts-operator .

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /router-hosts-operator /router-hosts-operator
USER 65532:65532
ENTRYPOINT ["/router-hosts-operator"]

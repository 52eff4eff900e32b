package operator

import (
	"net/http"
	"time"

	"github.com/router-hosts-operator/router-hosts-operator/webhook"
)

// serverLimits bound how long and how much one client may hold an HTTP server of the operator,
// so that a connection that never finishes its request (slowloris), never reads its answer or
// stays idle cannot pin a goroutine and its buffers for good.
type serverLimits struct {
	// ReadHeader is the time from accepting a connection (or the end of the previous request
	// on it) to the end of the request's headers; Read adds the body.
	ReadHeader, Read time.Duration
	// Write is the time from the end of the request's headers to the end of the answer.
	Write time.Duration
	// Idle is how long a kept-alive connection may wait for its next request.
	Idle time.Duration
	// MaxHeaderBytes bounds the request line and headers (Go's default is 1 MiB).
	MaxHeaderBytes int
}

// probeLimits are the metrics and health server's. Its clients are the kubelet (a probe
// times out after 5 s), Prometheus (a scrape times out after 10 s by default) and people;
// none sends a body, and every answer is built from memory. Idle outlasts a one-minute
// scrape interval, so that Prometheus keeps its connection between scrapes.
var probeLimits = serverLimits{
	ReadHeader: 5 * time.Second, Read: 10 * time.Second, Write: 30 * time.Second, Idle: 90 * time.Second,
	MaxHeaderBytes: 16 << 10,
}

// webhookLimits are the external-dns webhook's. external-dns gives a whole request 15 s (its
// read and write timeouts added), and the webhook answers within webhook.DefaultAnswerWithin;
// Write leaves that answer, a 503 when router-hosts is slow, time to go out. Idle outlasts
// external-dns's one-minute loop.
var webhookLimits = serverLimits{
	ReadHeader: 5 * time.Second, Read: 15 * time.Second, Write: webhook.DefaultAnswerWithin + 10*time.Second, Idle: 90 * time.Second,
	MaxHeaderBytes: 16 << 10,
}

// server is an http.Server for h within l.
func (l serverLimits) server(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: l.ReadHeader,
		ReadTimeout:       l.Read,
		WriteTimeout:      l.Write,
		IdleTimeout:       l.Idle,
		MaxHeaderBytes:    l.MaxHeaderBytes,
	}
}

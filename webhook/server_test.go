package webhook

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
)

// slowReader is a router that does not answer until released.
type slowReader struct{ release chan struct{} }

func (r slowReader) Records(ctx context.Context) ([]endpoint.Record, error) {
	select {
	case <-r.release:
	case <-ctx.Done():
	}
	return nil, ctx.Err()
}

// TestASlowRouterIsA503InTime: external-dns takes a timeout for a hard error that stops it,
// and a 503 for a soft one it retries; a router that does not answer is a 503 within the
// webhook's time.
func TestASlowRouterIsA503InTime(t *testing.T) {
	r := slowReader{release: make(chan struct{})}
	defer close(r.release)
	log := logrus.New()
	log.SetLevel(logrus.ErrorLevel)
	s := New(Config{Reader: r, Owner: ownsAll, AnswerWithin: 100 * time.Millisecond, Log: log})
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	start := time.Now()
	resp, err := http.Get(srv.URL + "/records")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("status %d, want 503", resp.StatusCode)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("answered after %v", took)
	}
}

// TestADroppedRecordIsLoggedOnce: external-dns sends its records every loop; a record
// router-hosts cannot hold is said once, not every minute.
func TestADroppedRecordIsLoggedOnce(t *testing.T) {
	log, hook := logtest.NewNullLogger()
	s := New(Config{Reader: slowReader{}, Owner: ownsAll, Log: log})
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	for i := 0; i < 3; i++ {
		resp, err := http.Post(srv.URL+"/adjustendpoints", MediaType,
			strings.NewReader(`[{"dnsName":"alias.lan","recordType":"CNAME","targets":["web.lan"]},{"dnsName":"web.lan","recordType":"A","targets":["10.0.0.1"]}]`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != MediaType {
			t.Fatalf("adjust: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
		}
	}
	if n := len(hook.AllEntries()); n != 1 {
		t.Fatalf("%d log lines for one dropped record over three loops, want 1", n)
	}
}

// TestRequestsThatAreNotExternalDNSsAreRefused: a POST in another media type than the
// protocol's (or JSON) is a 415, a list of more records than the webhook takes a 413 naming
// the list; what external-dns sends, up to the limits, is accepted.
func TestRequestsThatAreNotExternalDNSsAreRefused(t *testing.T) {
	log := logrus.New()
	log.SetOutput(io.Discard)
	s := New(Config{Reader: slowReader{}, Owner: ownsAll, Log: log})
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	records := func(n int) string {
		return "[" + strings.TrimSuffix(strings.Repeat(`{"dnsName":"web.lan","recordType":"A","targets":["10.0.0.1"]},`, n), ",") + "]"
	}
	for _, c := range []struct {
		name, path, contentType, body string
		code                          int
		// says is in the answer's body.
		says string
	}{
		{"external-dns's media type", "/adjustendpoints", MediaType, records(1), http.StatusOK, "web.lan"},
		{"its parameters spaced", "/adjustendpoints", "application/external.dns.webhook+json; version=1", records(1), http.StatusOK, "web.lan"},
		{"plain JSON", "/adjustendpoints", "application/json; charset=utf-8", records(1), http.StatusOK, "web.lan"},
		{"no Content-Type", "/adjustendpoints", "", records(1), http.StatusUnsupportedMediaType, "no Content-Type"},
		{"a form", "/records", "application/x-www-form-urlencoded", `{"create":[]}`, http.StatusUnsupportedMediaType, "application/x-www-form-urlencoded"},
		{"text", "/adjustendpoints", "text/plain", records(1), http.StatusUnsupportedMediaType, "text/plain"},
		{"another version of the protocol", "/adjustendpoints", "application/external.dns.webhook+json;version=2", records(1), http.StatusUnsupportedMediaType, "version=2"},
		{"as many records as it takes", "/adjustendpoints", MediaType, records(MaxRecords), http.StatusOK, "web.lan"},
		{"one record too many", "/adjustendpoints", MediaType, records(MaxRecords + 1), http.StatusRequestEntityTooLarge,
			"more than 10000 records in the request: the webhook takes at most 10000 in one list"},
		{"many tiny records", "/adjustendpoints", MediaType, "[" + strings.TrimSuffix(strings.Repeat("{},", 100000), ",") + "]", http.StatusRequestEntityTooLarge, "in the request"},
		{"too many records to create", "/records", MediaType, `{"delete":[],"create":` + records(MaxRecords+1) + `}`, http.StatusRequestEntityTooLarge, "records in create"},
		{"not JSON", "/adjustendpoints", MediaType, "[{", http.StatusBadRequest, "reading the request body"},
	} {
		t.Run(c.name, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodPost, srv.URL+c.path, strings.NewReader(c.body))
			if err != nil {
				t.Fatal(err)
			}
			if c.contentType != "" {
				req.Header.Set("Content-Type", c.contentType)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != c.code || !strings.Contains(string(body), c.says) {
				t.Fatalf("%d %.300s\nwant %d and %q", resp.StatusCode, body, c.code, c.says)
			}
		})
	}
}

// TestABodyOverTheLimitIsNotReadWhole: a body over MaxBody is a 413 once the webhook has read
// MaxBody of it (or at once, when its length says so), and the connection is closed rather
// than drained; a client that would send 256 MiB gets to send little of it.
func TestABodyOverTheLimitIsNotReadWhole(t *testing.T) {
	log := logrus.New()
	log.SetOutput(io.Discard)
	s := New(Config{Reader: slowReader{}, Owner: ownsAll, Log: log})
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	const sent = 256 << 20
	for _, c := range []struct {
		name, framing string
		// chunk frames one piece of the body.
		chunk func(p []byte) []byte
	}{
		{"its length declared", fmt.Sprintf("Content-Length: %d", sent), func(p []byte) []byte { return p }},
		{"chunked", "Transfer-Encoding: chunked", func(p []byte) []byte { return append(fmt.Appendf(nil, "%x\r\n", len(p)), append(p, "\r\n"...)...) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", srv.Listener.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if _, err := fmt.Fprintf(conn, "POST /adjustendpoints HTTP/1.1\r\nHost: x\r\nContent-Type: %s\r\n%s\r\n\r\n", MediaType, c.framing); err != nil {
				t.Fatal(err)
			}
			written := make(chan int, 1)
			go func() {
				piece := c.chunk(append([]byte("["), bytes.Repeat([]byte(`{"dnsName":"web.lan"},`), 64<<10/22)...))
				n := 0
				for n < sent {
					if _, err := conn.Write(piece); err != nil {
						break
					}
					n += len(piece)
				}
				written <- n
			}()
			_ = conn.SetReadDeadline(time.Now().Add(20 * time.Second))
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusRequestEntityTooLarge {
				t.Fatalf("%d %s, want 413", resp.StatusCode, body)
			}
			var n int
			select {
			case n = <-written:
			case <-time.After(20 * time.Second):
				t.Fatal("the server still reads the body")
			}
			// Beyond MaxBody, only what the sockets' buffers hold got through.
			if n >= sent/4 {
				t.Fatalf("the client sent %d MiB of a %d MiB body before the server closed the connection", n>>20, sent>>20)
			}
		})
	}
}

// ownsAll owns every entry of a read.
func ownsAll([]endpoint.Record) func(*endpoint.Record) bool {
	return func(*endpoint.Record) bool { return true }
}

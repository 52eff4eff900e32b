package webhook

import (
	"context"
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
	s := New(Config{Reader: r, Owns: func(*endpoint.Record) bool { return true }, AnswerWithin: 100 * time.Millisecond, Log: log})
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
	s := New(Config{Reader: slowReader{}, Owns: func(*endpoint.Record) bool { return true }, Log: log})
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

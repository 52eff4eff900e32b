package health

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/router-hosts-operator/router-hosts-operator/provider"
)

func TestReadyz(t *testing.T) {
	refused := fmt.Errorf("Readiness: %w: %w", provider.ErrAuthentication, errors.New("remote error: tls: unknown certificate authority"))
	tests := []struct {
		name     string
		synced   bool
		ping     error
		code     int
		wantBody string // prefix
	}{
		{"ready", true, nil, http.StatusOK, "ok"},
		{"caches not synced", false, nil, http.StatusServiceUnavailable, "informer caches not synced"},
		{"authentication refused", true, refused, http.StatusServiceUnavailable, "AuthenticationFailed: " + refused.Error()},
		{"unreachable", true, errors.New("Readiness: connection refused"), http.StatusServiceUnavailable, "router-hosts not reachable: Readiness: connection refused"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := New(time.Minute, func() bool { return tc.synced }, func(context.Context) error { return tc.ping })
			rec := httptest.NewRecorder()
			c.Readyz(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
			if rec.Code != tc.code {
				t.Fatalf("code = %d, want %d", rec.Code, tc.code)
			}
			if body := rec.Body.String(); !strings.HasPrefix(body, tc.wantBody) {
				t.Fatalf("body = %q, want it to start with %q", body, tc.wantBody)
			}
		})
	}
}

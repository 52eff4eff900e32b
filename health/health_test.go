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

// TestProbes: readiness is the process's (the router is down in every readiness case), the
// router's state is /routerz's.
func TestProbes(t *testing.T) {
	refused := fmt.Errorf("Readiness: %w: %w", provider.ErrAuthentication, errors.New("remote error: tls: unknown certificate authority"))
	unreachable := errors.New("Readiness: connection refused")
	tests := []struct {
		name     string
		handler  func(*Checker) http.HandlerFunc
		synced   bool
		leading  bool
		ping     error
		code     int
		wantBody string // prefix
	}{
		{"ready, leader", readyz, true, true, unreachable, http.StatusOK, "ok (leader)"},
		{"ready, standby", readyz, true, false, unreachable, http.StatusOK, "ok (standby)"},
		{"caches not synced", readyz, false, true, nil, http.StatusServiceUnavailable, "informer caches not synced"},
		{"router answers", routerz, true, true, nil, http.StatusOK, "ok"},
		{"router refuses the certificate", routerz, true, true, refused, http.StatusServiceUnavailable, "AuthenticationFailed: " + refused.Error()},
		{"router unreachable", routerz, true, true, unreachable, http.StatusServiceUnavailable, "router-hosts not reachable: Readiness: connection refused"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := New(time.Minute, func() bool { return tc.synced }, func(context.Context) error { return tc.ping })
			c.SetLeading(tc.leading)
			rec := httptest.NewRecorder()
			tc.handler(c)(rec, httptest.NewRequest(http.MethodGet, "/", nil))
			if rec.Code != tc.code {
				t.Fatalf("code = %d, want %d", rec.Code, tc.code)
			}
			if body := rec.Body.String(); !strings.HasPrefix(body, tc.wantBody) {
				t.Fatalf("body = %q, want it to start with %q", body, tc.wantBody)
			}
		})
	}
}

func readyz(c *Checker) http.HandlerFunc  { return c.Readyz }
func routerz(c *Checker) http.HandlerFunc { return c.Routerz }

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
	unreachable := func(context.Context) error { return errors.New("Readiness: connection refused") }
	tests := []struct {
		name     string
		synced   bool
		leading  bool
		code     int
		wantBody string // prefix
	}{
		{"leader", true, true, http.StatusOK, "ok (leader)"},
		{"standby", true, false, http.StatusOK, "ok (standby)"},
		{"caches not synced", false, true, http.StatusServiceUnavailable, "informer caches not synced"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// The router is down in every case: readiness is the process's, never the router's.
			c := New(time.Minute, func() bool { return tc.synced }, unreachable)
			c.SetLeading(tc.leading)
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

func TestRouterz(t *testing.T) {
	refused := fmt.Errorf("Readiness: %w: %w", provider.ErrAuthentication, errors.New("remote error: tls: unknown certificate authority"))
	tests := []struct {
		name     string
		ping     error
		code     int
		wantBody string // prefix
	}{
		{"answers", nil, http.StatusOK, "ok"},
		{"authentication refused", refused, http.StatusServiceUnavailable, "AuthenticationFailed: " + refused.Error()},
		{"unreachable", errors.New("Readiness: connection refused"), http.StatusServiceUnavailable, "router-hosts not reachable: Readiness: connection refused"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := New(time.Minute, func() bool { return true }, func(context.Context) error { return tc.ping })
			rec := httptest.NewRecorder()
			c.Routerz(rec, httptest.NewRequest(http.MethodGet, "/routerz", nil))
			if rec.Code != tc.code {
				t.Fatalf("code = %d, want %d", rec.Code, tc.code)
			}
			if body := rec.Body.String(); !strings.HasPrefix(body, tc.wantBody) {
				t.Fatalf("body = %q, want it to start with %q", body, tc.wantBody)
			}
		})
	}
}

package provider

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestAuthFailureSaysWhichSideRefused: a refused server certificate is an authentication
// failure, waited out as one, whose sentence says that the operator refused; any other is the
// server's refusal.
func TestAuthFailureSaysWhichSideRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"the operator refused the server's certificate", fmt.Errorf("%w: x509: certificate signed by unknown authority", ErrServerCertificate), "the operator refused router-hosts' certificate"},
		{"the server refused the operator's", fmt.Errorf("%w: remote error: tls: bad certificate", ErrAuthentication), "router-hosts refused the TLS authentication"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !errors.Is(tc.err, ErrAuthentication) {
				t.Errorf("%v is no ErrAuthentication", tc.err)
			}
			if got := AuthFailure(tc.err); !strings.HasPrefix(got, tc.want) || !strings.HasPrefix(tc.err.Error(), got) {
				t.Errorf("AuthFailure(%v) = %q, want it to start %q and the error with it", tc.err, got, tc.want)
			}
		})
	}
}

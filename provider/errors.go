// Package provider holds what the router-hosts providers share with their callers: errors whose
// kind decides how the controller and the health checks react.
package provider

import "errors"

// ErrAuthentication is wrapped by a read or write that failed because the TLS handshake with
// router-hosts failed for authentication reasons: the server refused our client certificate
// (signed by another CA, expired, missing) or the server's certificate did not verify against
// our CA (CA mismatch, wrong name). Callers test for it with errors.Is because retrying at once
// cannot help: the same certificates fail the same way until the certificate files change or
// the resync interval comes round, so the controller waits for either instead of retrying in a
// tight loop, and readiness reports it as AuthenticationFailed rather than as an outage.
var ErrAuthentication = errors.New("router-hosts refused the TLS authentication")

// ErrServerCertificate is the half of ErrAuthentication where the operator is the one that
// refused: router-hosts' certificate did not verify against the operator's CA (--tls-ca, or
// the Secret's ca.crt), or not for the name dialled. It is an ErrAuthentication
// (errors.Is), so that it is waited out the same way, but its text says which side refused,
// since the fix is on the operator's side.
var ErrServerCertificate error = serverCertificate{}

type serverCertificate struct{}

func (serverCertificate) Error() string {
	return "the operator refused router-hosts' certificate (check the CA, --tls-ca or the Secret's ca.crt, and the name, --tls-server-name)"
}

// Is makes a refused server certificate an ErrAuthentication.
func (serverCertificate) Is(target error) bool { return target == ErrAuthentication }

// AuthFailure is the sentence that says which side refused the TLS authentication err failed
// on: the operator, router-hosts' certificate (ErrServerCertificate), or router-hosts, the
// operator's.
func AuthFailure(err error) string {
	if errors.Is(err, ErrServerCertificate) {
		return ErrServerCertificate.Error()
	}
	return ErrAuthentication.Error()
}

// ErrCompactionUnsupported is wrapped by a compaction router-hosts would not do: a server older
// than 0.10.7 has no CompactAggregates (Unimplemented), and one may refuse the caller the RPC
// (PermissionDenied). Either answers every later call the same way, so callers stop asking
// rather than retrying; the entries are as they were, only their logs stay long.
var ErrCompactionUnsupported = errors.New("router-hosts does not compact aggregates for the operator")

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

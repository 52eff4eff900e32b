package routerhosts

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/credentials"
)

// reloadingFiles holds the client key pair and CA pool and re-reads them when a file's
// modification time or size changes, so a Secret rotated by cert-manager takes effect at the
// next handshake without a restart. A stat per handshake is cheap; handshakes are rare.
type reloadingFiles struct {
	caFile, certFile, keyFile string
	// loaded, when set, is told of every read of changed files: the certificate in use after
	// it, and why the files could not be loaded when they could not. It runs under the lock, so
	// it must not call load.
	loaded func(cert *tls.Certificate, err error)

	mu sync.Mutex
	// stamped is the files' stamp when the material in use was read; failed is the stamp of
	// the last read that failed, which is not tried again (nor reported again) until the files
	// change once more.
	stamped, failed string
	cert            *tls.Certificate
	pool            *x509.CertPool
}

// keyMaterial is where the client's key pair and the CA come from: files re-read when they
// change (reloadingFiles), or PEM held in memory (PEM, from a Secret).
type keyMaterial interface {
	// load returns the key pair and the CA pool to use now.
	load() (*tls.Certificate, *x509.CertPool, error)
	// stamp changes whenever load's answer may have.
	stamp() (string, error)
	// inUse identifies what load answers now; it changes when changed material took effect.
	inUse() string
}

// PEM is mTLS material held in memory: a Secret's ca.crt, tls.crt and tls.key.
type PEM struct {
	cert *tls.Certificate
	pool *x509.CertPool
	sum  string
}

// ParsePEM checks and holds a CA bundle, a client certificate and its key.
func ParsePEM(ca, cert, key []byte) (*PEM, error) {
	pair, err := tls.X509KeyPair(cert, key)
	if err != nil {
		return nil, fmt.Errorf("client certificate and key: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return nil, errors.New("the CA holds no PEM certificate")
	}
	h := sha256.New()
	for _, b := range [][]byte{ca, cert, key} {
		h.Write(b)
		h.Write([]byte{0})
	}
	return &PEM{cert: &pair, pool: pool, sum: hex.EncodeToString(h.Sum(nil))}, nil
}

// Equal reports whether both hold the same material.
func (p *PEM) Equal(o *PEM) bool { return p == o || (p != nil && o != nil && p.sum == o.sum) }

func (p *PEM) load() (*tls.Certificate, *x509.CertPool, error) { return p.cert, p.pool, nil }
func (p *PEM) stamp() (string, error)                          { return p.sum, nil }
func (p *PEM) inUse() string                                   { return p.sum }

// load returns the current key pair and pool, re-reading them if any file changed. When a
// reload fails (a rotation caught half-written, a file that does not parse or went missing)
// the previous material stays in use and the failure is reported once, not at every
// handshake: a certificate that silently stays in use is one that expires unannounced.
func (r *reloadingFiles) load() (*tls.Certificate, *x509.CertPool, error) {
	stamp, err := r.stamp()
	if err != nil {
		// A file that cannot be stat'ed has no stamp; the error stands for one, so that the same
		// missing file is reported once.
		stamp = "error: " + err.Error()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cert != nil && (stamp == r.stamped || stamp == r.failed) {
		return r.cert, r.pool, nil
	}
	var (
		cert *tls.Certificate
		pool *x509.CertPool
	)
	if err == nil {
		cert, pool, err = readTLSFiles(r.caFile, r.certFile, r.keyFile)
	}
	switch {
	case err != nil && r.cert == nil:
		// Nothing to fall back on (the first read): the caller fails.
		return nil, nil, err
	case err != nil:
		r.failed = stamp
		r.notify(r.cert, err)
		return r.cert, r.pool, nil
	}
	r.stamped, r.failed, r.cert, r.pool = stamp, "", cert, pool
	r.notify(cert, nil)
	return cert, pool, nil
}

func (r *reloadingFiles) inUse() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stamped
}

func (r *reloadingFiles) notify(cert *tls.Certificate, err error) {
	if r.loaded != nil {
		r.loaded(cert, err)
	}
}

// notAfter is when the leaf of cert expires; zero when it cannot be told.
func notAfter(cert *tls.Certificate) time.Time {
	if cert == nil {
		return time.Time{}
	}
	leaf := cert.Leaf
	if leaf == nil && len(cert.Certificate) > 0 {
		leaf, _ = x509.ParseCertificate(cert.Certificate[0])
	}
	if leaf == nil {
		return time.Time{}
	}
	return leaf.NotAfter
}

func (r *reloadingFiles) stamp() (string, error) {
	s := ""
	for _, f := range []string{r.caFile, r.certFile, r.keyFile} {
		fi, err := os.Stat(f)
		if err != nil {
			return "", fmt.Errorf("TLS file: %w", err)
		}
		s += fmt.Sprintf("%d/%d;", fi.ModTime().UnixNano(), fi.Size())
	}
	return s, nil
}

func readTLSFiles(caFile, certFile, keyFile string) (*tls.Certificate, *x509.CertPool, error) {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, nil, fmt.Errorf("loading client certificate %s and key %s: %w", certFile, keyFile, err)
	}
	caPEM, err := os.ReadFile(caFile)
	if err != nil {
		return nil, nil, fmt.Errorf("reading CA %s: %w", caFile, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, nil, fmt.Errorf("CA %s holds no PEM certificate", caFile)
	}
	return &cert, pool, nil
}

// verifiedName is the name the server's certificate must carry: serverName when it is set,
// else the host of endpoint (host:port or [v6]:port), a DNS name or an IP address.
func verifiedName(endpoint, serverName string) (string, error) {
	if serverName != "" {
		return serverName, nil
	}
	host, _, err := net.SplitHostPort(endpoint)
	if err != nil {
		return "", fmt.Errorf("router-hosts endpoint %q is not host:port: %w", endpoint, err)
	}
	if host == "" {
		return "", fmt.Errorf("router-hosts endpoint %q names no host to verify the server's certificate against", endpoint)
	}
	return host, nil
}

// newTLSConfig builds a TLS 1.3 client configuration that presents the client certificate and
// verifies the server against the CA, both read from files at each handshake. serverName is
// sent as the server name when set; verifyName is the name or IP address the server's
// certificate must carry (verifiedName).
func newTLSConfig(files keyMaterial, serverName, verifyName string) *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS13,
		ServerName: serverName,
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			cert, _, err := files.load()
			return cert, err
		},
		// Verification is done below against the reloaded pool, which the standard RootCAs
		// field cannot follow.
		InsecureSkipVerify: true,
		VerifyConnection: func(cs tls.ConnectionState) error {
			return verifyServer(files, cs.PeerCertificates, verifyName, time.Now())
		},
	}
}

// verifyServer makes the check crypto/tls would make with RootCAs set: the chain to the CA, the
// serverAuth usage, and the name against verifyName. The name is not cs.ServerName: crypto/tls
// leaves that empty when an IP address is dialled (no SNI for IP literals), and an empty name
// checks nothing, so a certificate the CA issued for any other server (or a client certificate
// without extended key usages) would pass. The name check is what refuses them.
func verifyServer(files keyMaterial, certs []*x509.Certificate, verifyName string, now time.Time) error {
	if verifyName == "" {
		return errors.New("verifying router-hosts server certificate: no server name or address to verify it against")
	}
	_, pool, err := files.load()
	if err != nil {
		return err
	}
	if len(certs) == 0 {
		return errors.New("server presented no certificate")
	}
	inter := x509.NewCertPool()
	for _, c := range certs[1:] {
		inter.AddCert(c)
	}
	// DNSName takes an IP address too: Verify then matches it against the IP SANs.
	_, err = certs[0].Verify(x509.VerifyOptions{
		DNSName: verifyName, Roots: pool, Intermediates: inter,
		CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
	var hostErr x509.HostnameError
	switch {
	case errors.As(err, &hostErr):
		return fmt.Errorf("verifying router-hosts server certificate: it is valid for %s, not %s: %w", certNames(certs[0]), verifyName, err)
	case err != nil:
		return fmt.Errorf("verifying router-hosts server certificate: %w", err)
	}
	return nil
}

// certNames lists the DNS names and IP addresses a certificate is valid for, for errors that
// say what a refused server is instead.
func certNames(c *x509.Certificate) string {
	names := slices.Clone(c.DNSNames)
	for _, ip := range c.IPAddresses {
		names = append(names, ip.String())
	}
	if len(names) == 0 {
		return "no DNS name or IP address"
	}
	return strings.Join(names, ", ")
}

// acceptWait bounds how long a new connection waits for the server's first bytes after the
// TLS handshake. HTTP/2 servers (grpc-go, hyper) send their SETTINGS at once, so this is one
// round trip in practice; a server that waits for our preface instead only delays the first
// call by this much.
const acceptWait = time.Second

// newTransportCredentials is the mTLS transport of New: newTLSConfig's configuration, plus a
// read after the handshake that confirms the server accepted our certificate.
func newTransportCredentials(files keyMaterial, serverName, verifyName string) credentials.TransportCredentials {
	return acceptedCreds{credentials.NewTLS(newTLSConfig(files, serverName, verifyName))}
}

// acceptedCreds waits, after the handshake, for the server's first message before handing the
// connection to gRPC. In TLS 1.3 our side of the handshake ends before the server has checked
// our certificate, so a refusal arrives as an alert on the first read. gRPC writes its preface
// meanwhile, and that write often loses the race to the closed socket and fails with a bare
// "broken pipe" that says nothing of the certificate. Reading first makes a refusal a
// handshake error that names the alert, every time.
type acceptedCreds struct {
	credentials.TransportCredentials
}

func (c acceptedCreds) ClientHandshake(ctx context.Context, authority string, raw net.Conn) (net.Conn, credentials.AuthInfo, error) {
	conn, info, err := c.TransportCredentials.ClientHandshake(ctx, authority, raw)
	if err != nil {
		return nil, nil, err
	}
	deadline := time.Now().Add(acceptWait)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	if err := conn.SetReadDeadline(deadline); err != nil {
		return conn, info, nil
	}
	var first [1]byte
	n, err := conn.Read(first[:])
	_ = conn.SetReadDeadline(time.Time{})
	var opErr *net.OpError
	switch {
	case n > 0:
		return &replayConn{Conn: conn, first: first[0], pending: true}, info, nil
	case errors.As(err, &opErr) && opErr.Op == "remote error":
		// crypto/tls reports a received alert as a "remote error".
		_ = conn.Close()
		return nil, nil, fmt.Errorf("router-hosts closed the connection at the end of the handshake: %w", err)
	default:
		// No answer yet (the server waits for us), or the connection failed some other way: the
		// TLS connection keeps a fatal read error, so gRPC meets it on its own first read.
		return conn, info, nil
	}
}

func (c acceptedCreds) Clone() credentials.TransportCredentials {
	return acceptedCreds{c.TransportCredentials.Clone()}
}

// replayConn gives back the byte acceptedCreds read before gRPC reads anything.
type replayConn struct {
	net.Conn
	first   byte
	pending bool
}

func (c *replayConn) Read(p []byte) (int, error) {
	if c.pending && len(p) > 0 {
		p[0], c.pending = c.first, false
		return 1, nil
	}
	return c.Conn.Read(p)
}

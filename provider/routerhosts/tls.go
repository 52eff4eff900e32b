package routerhosts

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"
)

// reloadingFiles holds the client key pair and CA pool and re-reads them when a file's
// modification time or size changes, so a Secret rotated by cert-manager takes effect at the
// next handshake without a restart. A stat per handshake is cheap; handshakes are rare.
type reloadingFiles struct {
	caFile, certFile, keyFile string

	mu    sync.Mutex
	stamp string
	cert  *tls.Certificate
	pool  *x509.CertPool
}

// load returns the current key pair and pool, re-reading them if any file changed. When a
// reload fails (a rotation caught half-written) the previous material stays in use.
func (r *reloadingFiles) load() (*tls.Certificate, *x509.CertPool, error) {
	stamp, err := r.stampFiles()
	r.mu.Lock()
	defer r.mu.Unlock()
	if err == nil && stamp == r.stamp && r.cert != nil {
		return r.cert, r.pool, nil
	}
	cert, pool, lerr := readTLSFiles(r.caFile, r.certFile, r.keyFile)
	if err == nil {
		err = lerr
	}
	if err != nil {
		if r.cert != nil {
			return r.cert, r.pool, nil
		}
		return nil, nil, err
	}
	r.stamp, r.cert, r.pool = stamp, cert, pool
	return cert, pool, nil
}

func (r *reloadingFiles) stampFiles() (string, error) {
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

// newTLSConfig builds a TLS 1.3 client configuration that presents the client certificate and
// verifies the server against the CA, both read from files at each handshake.
func newTLSConfig(files *reloadingFiles, serverName string) *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS13,
		ServerName: serverName,
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			cert, _, err := files.load()
			return cert, err
		},
		// Verification is done below against the reloaded pool, which the standard RootCAs
		// field cannot follow; it is the same chain and name check the default would make.
		InsecureSkipVerify: true,
		VerifyConnection: func(cs tls.ConnectionState) error {
			_, pool, err := files.load()
			if err != nil {
				return err
			}
			if len(cs.PeerCertificates) == 0 {
				return errors.New("server presented no certificate")
			}
			inter := x509.NewCertPool()
			for _, c := range cs.PeerCertificates[1:] {
				inter.AddCert(c)
			}
			_, err = cs.PeerCertificates[0].Verify(x509.VerifyOptions{
				DNSName: cs.ServerName, Roots: pool, Intermediates: inter,
				CurrentTime: time.Now(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
			})
			if err != nil {
				return fmt.Errorf("verifying router-hosts server certificate: %w", err)
			}
			return nil
		},
	}
}

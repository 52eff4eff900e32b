package rhtestserver

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// ca is a throwaway certificate authority; each test server makes its own, so no test ever
// depends on certificates checked into the tree.
type ca struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

// LeafProfile is what a leaf certificate says of its holder beside its common name: the names it
// is valid for and what it may be used for.
type LeafProfile struct {
	DNSNames []string
	IPs      []net.IP
	// Usages are the extended key usages. None means the certificate may serve any purpose, as
	// the standard verifier reads it (and as router-hosts accepts for clients).
	Usages []x509.ExtKeyUsage
}

// ServerProfile is the test server's: localhost, 127.0.0.1 and ::1, for serverAuth, the names
// a client on the same machine dials.
func ServerProfile() LeafProfile {
	return LeafProfile{DNSNames: []string{"localhost"}, IPs: []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("::1")},
		Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
}

// clientProfile is the operator's client certificate: no names, clientAuth.
func clientProfile() LeafProfile {
	return LeafProfile{Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
}

func newCA(name string) (*ca, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("CA key: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("parsing CA certificate: %w", err)
	}
	return &ca{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}, nil
}

// write writes the CA's certificate and key into certFile and keyFile.
func (c *ca) write(certFile, keyFile string) error {
	if err := os.WriteFile(certFile, c.pem, 0o600); err != nil {
		return fmt.Errorf("writing CA: %w", err)
	}
	return writeKey(keyFile, c.key)
}

// loadCA reads back a CA that write wrote.
func loadCA(certFile, keyFile string) (*ca, error) {
	certPEM, err := os.ReadFile(certFile)
	if err != nil {
		return nil, fmt.Errorf("reading CA: %w", err)
	}
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("loading CA %s: %w", certFile, err)
	}
	key, ok := pair.PrivateKey.(*ecdsa.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("CA key %s is not ECDSA", keyFile)
	}
	cert, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return nil, fmt.Errorf("parsing CA %s: %w", certFile, err)
	}
	return &ca{cert: cert, key: key, pem: certPEM}, nil
}

// issue writes a leaf certificate for id and its key, signed by c, to certFile and keyFile.
func (c *ca) issue(certFile, keyFile, cn string, id LeafProfile) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("leaf key: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: id.Usages,
		DNSNames: id.DNSNames, IPAddresses: id.IPs,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, c.cert, &key.PublicKey, c.key)
	if err != nil {
		return fmt.Errorf("leaf certificate: %w", err)
	}
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		return fmt.Errorf("writing %s: %w", certFile, err)
	}
	return writeKey(keyFile, key)
}

func writeKey(keyFile string, key *ecdsa.PrivateKey) error {
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return fmt.Errorf("marshal key: %w", err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		return fmt.Errorf("writing %s: %w", keyFile, err)
	}
	return nil
}

// serial returns a random positive serial number, so certificates from different test CAs
// never collide.
func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	return n
}

// WriteForeignClientCert writes foreign.crt and foreign.key into dir: a well-formed client
// certificate signed by a CA no test server trusts, for tests that a wrong CA is refused.
func WriteForeignClientCert(dir string) (certFile, keyFile string, err error) {
	other, err := newCA("foreign CA")
	if err != nil {
		return "", "", err
	}
	certFile, keyFile = filepath.Join(dir, "foreign.crt"), filepath.Join(dir, "foreign.key")
	if err := other.issue(certFile, keyFile, "foreign client", clientProfile()); err != nil {
		return "", "", fmt.Errorf("foreign client certificate: %w", err)
	}
	return certFile, keyFile, nil
}

// PKI is a CA with a server certificate and a client certificate it signed, as files in one
// directory: what a router-hosts server and its client need. The server certificate names
// localhost, 127.0.0.1 and ::1 (ServerProfile), the client certificate has the clientAuth
// usage and no names.
type PKI struct{ Dir string }

// WritePKI writes a fresh PKI into dir (created if missing).
func WritePKI(dir string) (PKI, error) {
	authority, err := newCA("router-hosts test CA")
	if err != nil {
		return PKI{}, err
	}
	return writePKI(dir, authority, ServerProfile())
}

// WriteImpostorPKI writes into dir (created if missing) a PKI whose CA is real's, the very
// certificate and key, and whose server certificate says id instead: a server holding it passes
// the chain check of every client of real's CA, and accepts their client certificates, so only
// the check of the name (or of the usage) tells it from the real server.
func WriteImpostorPKI(dir string, real PKI, id LeafProfile) (PKI, error) {
	authority, err := loadCA(real.CAFile(), real.caKeyFile())
	if err != nil {
		return PKI{}, err
	}
	return writePKI(dir, authority, id)
}

// writePKI writes authority and a server certificate for server and a client certificate, both
// signed by it, into dir.
func writePKI(dir string, authority *ca, server LeafProfile) (PKI, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return PKI{}, fmt.Errorf("creating %s: %w", dir, err)
	}
	p := PKI{Dir: dir}
	if err := authority.write(p.CAFile(), p.caKeyFile()); err != nil {
		return PKI{}, err
	}
	if err := authority.issue(p.ServerCertFile(), p.ServerKeyFile(), "router-hosts test server", server); err != nil {
		return PKI{}, err
	}
	if err := authority.issue(p.CertFile(), p.KeyFile(), "router-hosts-operator", clientProfile()); err != nil {
		return PKI{}, err
	}
	return p, nil
}

// CAFile is the CA that signed both the server's and the client's certificates; the operator
// verifies the server with it.
func (p PKI) CAFile() string { return filepath.Join(p.Dir, "ca.crt") }

// caKeyFile is the CA's private key, kept so that WriteImpostorPKI can sign with the same CA.
func (p PKI) caKeyFile() string { return filepath.Join(p.Dir, "ca.key") }

// ServerCertFile and ServerKeyFile are the server's certificate (serverAuth) and key.
func (p PKI) ServerCertFile() string { return filepath.Join(p.Dir, "server.crt") }

// ServerKeyFile is the private key of ServerCertFile.
func (p PKI) ServerKeyFile() string { return filepath.Join(p.Dir, "server.key") }

// CertFile is the client certificate (clientAuth) the operator presents.
func (p PKI) CertFile() string { return filepath.Join(p.Dir, "tls.crt") }

// KeyFile is the private key of CertFile.
func (p PKI) KeyFile() string { return filepath.Join(p.Dir, "tls.key") }

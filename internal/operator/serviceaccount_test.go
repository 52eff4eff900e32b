package operator

import (
	"encoding/base64"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"

	"github.com/router-hosts-operator/router-hosts-operator/internal/clusterconfig"
	"github.com/router-hosts-operator/router-hosts-operator/registry"
)

// jwt is a token of these claims in the JWS compact form the apiserver signs them in; the
// signature is none, since nothing checks it.
func jwt(claims string) string {
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"RS256","kid":"k"}`)) + "." + enc([]byte(claims)) + ".c2lnbmF0dXJl"
}

// The claims the apiserver writes: a projected token as the kubelet mounts it (bound to the
// pod), and a legacy token of a kubernetes.io/service-account-token Secret.
const (
	projectedClaims = `{"aud":["https://kubernetes.default.svc"],"exp":1900000000,"iat":1800000000,"iss":"https://kubernetes.default.svc",
		"jti":"0f6c","kubernetes.io":{"namespace":"external-dns","node":{"name":"n1","uid":"d0e1"},
		"pod":{"name":"external-dns-7d9f-abcde","uid":"9c1a"},"serviceaccount":{"name":"external-dns","uid":"4b0f2c7e-1d3a-4e5f-9a8b-7c6d5e4f3a2b"},
		"warnafter":1800003607},"nbf":1800000000,"sub":"system:serviceaccount:external-dns:external-dns"}`
	legacyClaims = `{"iss":"kubernetes/serviceaccount","kubernetes.io/serviceaccount/namespace":"dns",
		"kubernetes.io/serviceaccount/secret.name":"edns-token-x7k2p","kubernetes.io/serviceaccount/service-account.name":"edns",
		"kubernetes.io/serviceaccount/service-account.uid":"a1b2c3d4-0000-4000-8000-000000000001","sub":"system:serviceaccount:dns:edns"}`
)

func TestParseServiceAccountToken(t *testing.T) {
	projected := serviceAccount{Namespace: "external-dns", Name: "external-dns", UID: "4b0f2c7e-1d3a-4e5f-9a8b-7c6d5e4f3a2b"}
	for _, c := range []struct {
		name  string
		token string
		want  serviceAccount
		err   string // a part of the error; "" when the token is read
	}{
		{"projected", jwt(projectedClaims), projected, ""},
		{"legacy", jwt(legacyClaims), serviceAccount{Namespace: "dns", Name: "edns", UID: "a1b2c3d4-0000-4000-8000-000000000001"}, ""},
		{"with the file's newline", jwt(projectedClaims) + "\n", projected, ""},
		{"claims padded with =", func() string {
			p := strings.Split(jwt(`{"kubernetes.io":{"serviceaccount":{"uid":"u12"}}}`), ".")
			p[1] = base64.URLEncoding.EncodeToString([]byte(`{"kubernetes.io":{"serviceaccount":{"uid":"u12"}}}`))
			return strings.Join(p, ".")
		}(), serviceAccount{UID: "u12"}, ""},
		{"empty", "", serviceAccount{}, "not a JWT"},
		{"one part", "opaque-token", serviceAccount{}, "not a JWT: 1"},
		{"five parts (JWE)", "a.b.c.d.e", serviceAccount{}, "not a JWT: 5"},
		{"claims not base64url", "eyJ.!!!.sig", serviceAccount{}, "decoding the JWT's claims"},
		{"claims not JSON", jwt("not json"), serviceAccount{}, "reading the JWT's claims"},
		{"claims an array", jwt(`["kubernetes.io"]`), serviceAccount{}, "reading the JWT's claims"},
		{"no service account", jwt(`{"iss":"https://issuer","sub":"someone"}`), serviceAccount{}, "no service account's UID"},
		{"a service account without UID", jwt(`{"kubernetes.io":{"namespace":"x","serviceaccount":{"name":"y"}}}`), serviceAccount{}, "no service account's UID"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := parseServiceAccountToken([]byte(c.token))
			switch {
			case c.err == "" && err != nil:
				t.Fatalf("error %v, want %+v", err, c.want)
			case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
				t.Fatalf("got %+v, %v; want an error with %q", got, err, c.err)
			case got != c.want:
				t.Fatalf("got %+v, want %+v", got, c.want)
			}
		})
	}
}

// TestWebhookIdentity: --cluster-id pins the webhook's identity; otherwise it is derived from
// the service account of the token file, the same for every token of one service account and
// another for another's; a token file that is missing or names no service account refuses.
func TestWebhookIdentity(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	projected := write("projected", jwt(projectedClaims))
	rotated := write("rotated", jwt(strings.Replace(projectedClaims, `"jti":"0f6c"`, `"jti":"77aa"`, 1)))
	other := write("other", jwt(strings.Replace(projectedClaims, "4b0f2c7e", "5c1e3d8f", 1)))
	legacy := write("legacy", jwt(legacyClaims))
	garbled := write("garbled", "not a token\n")
	missing := filepath.Join(dir, "missing")

	ids := map[string]string{}
	for _, c := range []struct {
		name, clusterID, file string
		from, err             string
	}{
		{"pinned", "0123abcd", missing, "--cluster-id", ""},
		{"projected", "", projected, "service account external-dns/external-dns", ""},
		{"rotated", "", rotated, "service account external-dns/external-dns", ""},
		// Another cluster's external-dns: the same namespace and name, another UID.
		{"other", "", other, "service account external-dns/external-dns", ""},
		{"legacy", "", legacy, "service account dns/edns", ""},
		{"missing", "", missing, "", "no such file"},
		{"garbled", "", garbled, "", garbled + ": not a JWT"},
	} {
		t.Run(c.name, func(t *testing.T) {
			id, from, err := webhookIdentityOf(&Config{Settings: clusterconfig.Settings{Config: registry.Config{ClusterID: c.clusterID}}, ServiceAccountTokenFile: c.file})
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) || !strings.Contains(err.Error(), "run it in a pod") || !strings.Contains(err.Error(), "--cluster-id") {
					t.Fatalf("got %q from %q, %v; want a refusal with %q that says how to fix it", id, from, err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if from != c.from {
				t.Errorf("from %q, want %q", from, c.from)
			}
			if _, err := registry.New(registry.Config{ClusterName: WebhookCluster, ClusterID: id}); err != nil {
				t.Errorf("identity %q: %v", id, err)
			}
			ids[c.name] = id
		})
	}
	if ids["pinned"] != "0123abcd" {
		t.Errorf("pinned: %q, want the --cluster-id", ids["pinned"])
	}
	if ids["projected"] != ids["rotated"] {
		t.Errorf("two tokens of one service account: identities %q and %q, want one", ids["projected"], ids["rotated"])
	}
	if ids["projected"] == ids["other"] || ids["projected"] == ids["legacy"] {
		t.Errorf("three service accounts' identities %q, %q, %q: want three", ids["projected"], ids["other"], ids["legacy"])
	}
}

// TestTheWebhookRefusesToStartWithoutAnIdentity: without a token file and --cluster-id the
// webhook does not start, and says how to give it an identity.
func TestTheWebhookRefusesToStartWithoutAnIdentity(t *testing.T) {
	cfg, err := ParseFlags([]string{"webhook", "--router-hosts-endpoint=router.lan:50051", "--tls-ca=ca.crt", "--tls-cert=tls.crt", "--tls-key=tls.key",
		"--service-account-token-file=" + filepath.Join(t.TempDir(), "token")}, Build{Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	log := logrus.New()
	log.SetOutput(io.Discard)
	w, err := NewWebhook(cfg, log, nil)
	if err == nil {
		w.Close()
		t.Fatal("the webhook started without an identity")
	}
	if !strings.Contains(err.Error(), "the webhook has no identity") || !strings.Contains(err.Error(), "run it in a pod, whose service-account token gives it an identity, or set --cluster-id") {
		t.Fatalf("refused with %q; want the missing identity and how to give one", err)
	}
}

package operator

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/router-hosts-operator/router-hosts-operator/registry"
)

// serviceAccount is the service account a token was issued to.
type serviceAccount struct {
	Namespace, Name, UID string
}

// String is the service account as namespace/name, for the logs.
func (sa serviceAccount) String() string { return sa.Namespace + "/" + sa.Name }

// tokenClaims are the claims of a service-account token that name its service account: a
// projected token's (what the kubelet mounts since Kubernetes 1.22) under kubernetes.io, and a
// legacy Secret-based token's as flat claims.
type tokenClaims struct {
	Kubernetes *struct {
		Namespace      string `json:"namespace"`
		ServiceAccount struct {
			Name string `json:"name"`
			UID  string `json:"uid"`
		} `json:"serviceaccount"`
	} `json:"kubernetes.io"`
	LegacyNamespace string `json:"kubernetes.io/serviceaccount/namespace"`
	LegacyName      string `json:"kubernetes.io/serviceaccount/service-account.name"`
	LegacyUID       string `json:"kubernetes.io/serviceaccount/service-account.uid"`
}

// parseServiceAccountToken reads the service account a token names from its claims. The
// signature is not checked: the token is the pod's own, mounted by the kubelet, and only a
// stable value that no other service account has is wanted of it, not proof of anything.
func parseServiceAccountToken(token []byte) (serviceAccount, error) {
	parts := strings.Split(string(bytes.TrimSpace(token)), ".")
	if len(parts) != 3 {
		return serviceAccount{}, fmt.Errorf("not a JWT: %d dot-separated parts, want 3", len(parts))
	}
	payload, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil {
		return serviceAccount{}, fmt.Errorf("decoding the JWT's claims: %w", err)
	}
	var c tokenClaims
	if err := json.Unmarshal(payload, &c); err != nil {
		return serviceAccount{}, fmt.Errorf("reading the JWT's claims: %w", err)
	}
	sa := serviceAccount{Namespace: c.LegacyNamespace, Name: c.LegacyName, UID: c.LegacyUID}
	if k := c.Kubernetes; k != nil && k.ServiceAccount.UID != "" {
		sa = serviceAccount{Namespace: k.Namespace, Name: k.ServiceAccount.Name, UID: k.ServiceAccount.UID}
	}
	if sa.UID == "" {
		return serviceAccount{}, errors.New("no service account's UID in the token's claims (kubernetes.io.serviceaccount.uid, or kubernetes.io/serviceaccount/service-account.uid)")
	}
	return sa, nil
}

// webhookIdentity derives the webhook's identity from its service account's UID, which no
// other service account has, in this cluster or another, and which outlives every pod and
// token of it. The "webhook" input keeps it apart from an operator's identity, which hashes a
// kube-system namespace's UID in the same place.
func webhookIdentity(serviceAccountUID string) string {
	return registry.Identity(serviceAccountUID, CommandWebhook, "")
}

// webhookIdentityOf is the webhook's identity and where it comes from: --cluster-id when given,
// else the service account of the pod's token. Without either the webhook does not start: on
// a shared router, two webhooks of one cluster name and no identity take each other's entries
// for their own, and each external-dns deletes the other's.
func webhookIdentityOf(cfg *Config) (id, from string, err error) {
	if cfg.ClusterID != "" {
		return cfg.ClusterID, "--cluster-id", nil
	}
	fix := fmt.Sprintf("run it in a pod, whose service-account token gives it an identity, or set --cluster-id to %d hex digits of its own",
		registry.IdentityLength)
	token, err := os.ReadFile(cfg.ServiceAccountTokenFile)
	if err != nil {
		return "", "", fmt.Errorf("the webhook has no identity: reading the service-account token (--service-account-token-file): %w; %s", err, fix)
	}
	sa, err := parseServiceAccountToken(token)
	if err != nil {
		return "", "", fmt.Errorf("the webhook has no identity: the service-account token %s: %w; %s", cfg.ServiceAccountTokenFile, err, fix)
	}
	return webhookIdentity(sa.UID), "service account " + sa.String(), nil
}

package clusterconfig

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/router-hosts-operator/router-hosts-operator/api/v1alpha1"
	"github.com/router-hosts-operator/router-hosts-operator/plan"
	"github.com/router-hosts-operator/router-hosts-operator/registry"
	"github.com/router-hosts-operator/router-hosts-operator/source"
	"github.com/router-hosts-operator/router-hosts-operator/test/rhtestserver"
)

func base() Settings {
	return Settings{Config: registry.Config{ClusterName: "flags", DefaultTags: []string{"flag-tag"}, GracePeriod: 5 * time.Minute, Policy: plan.PolicySync, SilentClusterAfter: 168 * time.Hour,
		Budgets: registry.DefaultBudgets(), Interval: time.Minute},
		IPResolution: []source.Strategy{{Kind: source.StrategyIngressStatus}},
		Endpoint:     "flags.lan:50051", TLSFiles: true, VerifyDNS: "flags.lan:53",
		OptIn: source.OptIn{GatewayNames: []string{"infra/lan"}, ExternalDNSAnnotations: true}}
}

func i64(v int64) *int64 { return &v }

func i32(v int32) *int32 { return &v }

func boolp(v bool) *bool { return &v }

// secrets serves the test server's client material as the Secret ns/mtls.
func secrets(t *testing.T) ReadSecret {
	t.Helper()
	srv, err := rhtestserver.Start(t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	data := map[string][]byte{}
	for k, f := range map[string]string{"ca.crt": srv.CAFile(), "tls.crt": srv.CertFile(), "tls.key": srv.KeyFile()} {
		if data[k], err = os.ReadFile(f); err != nil {
			t.Fatal(err)
		}
	}
	return func(namespace, name string) (map[string][]byte, error) {
		switch namespace + "/" + name {
		case "ns/mtls":
			return data, nil
		case "ns/half":
			return map[string][]byte{"ca.crt": data["ca.crt"], "tls.crt": data["tls.crt"]}, nil
		case "ns/garbled":
			return map[string][]byte{"ca.crt": data["ca.crt"], "tls.crt": data["tls.key"], "tls.key": data["tls.key"]}, nil
		}
		return nil, errors.New("not found")
	}
}

func TestOverlay(t *testing.T) {
	read := secrets(t)
	for _, tc := range []struct {
		name  string
		spec  *v1alpha1.RouterHostsConfigSpec
		check func(t *testing.T, s Settings)
		err   string
		// material: err is a MaterialError, the Secret's mTLS material not loading.
		material bool
		// flags, when set, changes the flags' settings the spec is laid over.
		flags func(*Settings)
	}{
		{name: "no object: the flags", spec: nil, check: func(t *testing.T, s Settings) {
			if !s.Equal(base()) {
				t.Errorf("%+v", s)
			}
		}},
		{name: "an empty spec: the flags", spec: &v1alpha1.RouterHostsConfigSpec{}, check: func(t *testing.T, s Settings) {
			if !s.Equal(base()) {
				t.Errorf("%+v", s)
			}
		}},
		{name: "the design's example", spec: &v1alpha1.RouterHostsConfigSpec{
			Server: &v1alpha1.ServerSpec{Endpoint: "router.lan:50051", TLSSecretRef: &v1alpha1.SecretReference{Name: "mtls", Namespace: "ns"}},
			IPResolution: []v1alpha1.IPResolution{{Type: "IngressController", ServiceName: "traefik", ServiceNamespace: "traefik-system"},
				{Type: "Static", Address: "192.168.1.100"}},
			Deletion:    &v1alpha1.DeletionSpec{GracePeriodSeconds: i64(300)},
			DefaultTags: []string{"k8s-operator", "cluster:homelab"}},
			check: func(t *testing.T, s Settings) {
				want := []source.Strategy{{Kind: source.StrategyService, Namespace: "traefik-system", Name: "traefik"}, {Kind: source.StrategyStatic, IP: "192.168.1.100"}}
				if s.Endpoint != "router.lan:50051" || s.Keys == nil || s.Secret != "ns/mtls" || s.ClusterName != "homelab" ||
					len(s.DefaultTags) != 0 || s.GracePeriod != 300*time.Second || !slices.Equal(s.IPResolution, want) || s.Interval != time.Minute {
					t.Errorf("%+v", s)
				}
			}},
		{name: "every other field", spec: &v1alpha1.RouterHostsConfigSpec{ClusterName: "lab", Policy: "upsert-only", DomainFilter: []string{"home.lan"},
			ExcludeDomains: []string{"x.home.lan"}, Interval: i64(30), DefaultTags: []string{"team"},
			IPResolution: []v1alpha1.IPResolution{{Type: "GatewayStatus"}, {Type: "IngressStatus"}, {Type: "Service", ServiceName: "lb", ServiceNamespace: "infra"}}},
			check: func(t *testing.T, s Settings) {
				if s.ClusterName != "lab" || s.Policy != plan.UpsertOnly || !slices.Equal(s.DomainFilter, []string{"home.lan"}) ||
					!slices.Equal(s.ExcludeDomains, []string{"x.home.lan"}) || s.Interval != 30*time.Second || !slices.Equal(s.DefaultTags, []string{"team"}) ||
					len(s.IPResolution) != 3 || s.Endpoint != "flags.lan:50051" || s.Keys != nil {
					t.Errorf("%+v", s)
				}
			}},
		{name: "a cluster tag agreeing with clusterName", spec: &v1alpha1.RouterHostsConfigSpec{ClusterName: "lab", DefaultTags: []string{"cluster:lab"}},
			check: func(t *testing.T, s Settings) {
				if s.ClusterName != "lab" {
					t.Errorf("%+v", s)
				}
			}},
		{name: "a cluster tag contradicting clusterName", spec: &v1alpha1.RouterHostsConfigSpec{ClusterName: "lab", DefaultTags: []string{"cluster:other"}},
			err: `names cluster "other" but spec.clusterName is "lab"`},
		{name: "another reserved tag", spec: &v1alpha1.RouterHostsConfigSpec{DefaultTags: []string{"source:x"}}, err: "reserved"},
		{name: "an unknown step", spec: &v1alpha1.RouterHostsConfigSpec{IPResolution: []v1alpha1.IPResolution{{Type: "NodeIP"}}}, err: `unknown type "NodeIP"`},
		{name: "an unparseable address", spec: &v1alpha1.RouterHostsConfigSpec{IPResolution: []v1alpha1.IPResolution{{Type: "Static", Address: "router.lan"}}}, err: "router.lan"},
		{name: "a Service step without its Service", spec: &v1alpha1.RouterHostsConfigSpec{IPResolution: []v1alpha1.IPResolution{{Type: "Service", ServiceName: "lb"}}},
			err: "needs serviceName and serviceNamespace"},
		{name: "a missing Secret", spec: &v1alpha1.RouterHostsConfigSpec{Server: &v1alpha1.ServerSpec{Endpoint: "r:1", TLSSecretRef: &v1alpha1.SecretReference{Name: "gone", Namespace: "ns"}}},
			err: "Secret ns/gone: not found", material: true},
		{name: "a Secret without its key", spec: &v1alpha1.RouterHostsConfigSpec{Server: &v1alpha1.ServerSpec{Endpoint: "r:1", TLSSecretRef: &v1alpha1.SecretReference{Name: "half", Namespace: "ns"}}},
			err: "has no tls.key", material: true},
		{name: "a Secret with a garbled certificate", spec: &v1alpha1.RouterHostsConfigSpec{Server: &v1alpha1.ServerSpec{Endpoint: "r:1", TLSSecretRef: &v1alpha1.SecretReference{Name: "garbled", Namespace: "ns"}}},
			err: "client certificate and key", material: true},
		{name: "a bad domain filter", spec: &v1alpha1.RouterHostsConfigSpec{DomainFilter: []string{"*.lan"}}, err: "domain filter"},
		{name: "opt-in: a field left out keeps the flag's", spec: &v1alpha1.RouterHostsConfigSpec{OptIn: &v1alpha1.OptInSpec{IngressClasses: []string{"lan"}}},
			check: func(t *testing.T, s Settings) {
				want := base().OptIn
				want.IngressClasses = []string{"lan"}
				if !reflect.DeepEqual(s.OptIn, want) {
					t.Errorf("%+v, want %+v", s.OptIn, want)
				}
			}},
		{name: "opt-in: external-dns's annotations off over the flag", spec: &v1alpha1.RouterHostsConfigSpec{OptIn: &v1alpha1.OptInSpec{ExternalDNSAnnotations: new(false)}},
			check: func(t *testing.T, s Settings) {
				if s.OptIn.ExternalDNSAnnotations || !slices.Equal(s.OptIn.GatewayNames, base().OptIn.GatewayNames) {
					t.Errorf("%+v", s.OptIn)
				}
			}},
		{name: "opt-in: a Gateway without its namespace", spec: &v1alpha1.RouterHostsConfigSpec{OptIn: &v1alpha1.OptInSpec{GatewayNames: []string{"gw"}}}, err: "spec.optIn"},
		{name: "tenancy and budgets: what is set wins, the rest keeps the flags'", spec: &v1alpha1.RouterHostsConfigSpec{
			Tenancy: &v1alpha1.TenancySpec{NamespaceDomains: []v1alpha1.NamespaceDomains{{Namespace: "team-*", Domains: []string{"apps.lan"}}},
				AdoptionNamespaces: []string{}, MaxGracePeriodSeconds: i64(3600)},
			Budgets: &v1alpha1.BudgetsSpec{WritesPerSync: i32(50), EntriesPerObject: i32(0)}},
			check: func(t *testing.T, s Settings) {
				want := registry.Tenancy{Domains: []registry.NamespaceDomains{{Namespace: "team-*", Domains: []string{"apps.lan"}}}, Adopters: []string{},
					MaxGracePeriod: time.Hour}
				if !reflect.DeepEqual(s.Tenancy, want) {
					t.Errorf("tenancy %+v, want %+v", s.Tenancy, want)
				}
				b := base().Budgets
				b.WritesPerSync, b.EntriesPerObject = 50, 0
				if s.Budgets != b {
					t.Errorf("budgets %+v, want %+v", s.Budgets, b)
				}
			}},
		{name: "verifyDNS: set, it wins", spec: &v1alpha1.RouterHostsConfigSpec{Server: &v1alpha1.ServerSpec{Endpoint: "r:1", VerifyDNS: "192.168.1.1:53"}},
			check: func(t *testing.T, s Settings) {
				if s.VerifyDNS != "192.168.1.1:53" || s.Endpoint != "r:1" {
					t.Errorf("%+v", s)
				}
			}},
		{name: "verifyDNS: left out, the flag's", spec: &v1alpha1.RouterHostsConfigSpec{Server: &v1alpha1.ServerSpec{Endpoint: "r:1"}},
			check: func(t *testing.T, s Settings) {
				if s.VerifyDNS != "flags.lan:53" {
					t.Errorf("%+v", s)
				}
			}},
		{name: "compactOwnEntries: set, it wins", spec: &v1alpha1.RouterHostsConfigSpec{Server: &v1alpha1.ServerSpec{Endpoint: "r:1", CompactOwnEntries: boolp(true)}},
			check: func(t *testing.T, s Settings) {
				if !s.CompactOwnEntries {
					t.Errorf("compactOwnEntries %v, want true", s.CompactOwnEntries)
				}
			}},
		{name: "compactOwnEntries: left out, the flag's", spec: &v1alpha1.RouterHostsConfigSpec{Server: &v1alpha1.ServerSpec{Endpoint: "r:1"}},
			flags: func(s *Settings) { s.CompactOwnEntries = true },
			check: func(t *testing.T, s Settings) {
				if !s.CompactOwnEntries {
					t.Errorf("compactOwnEntries %v, want the flag's true", s.CompactOwnEntries)
				}
			}},
		{name: "compactOwnEntries: false wins over the flag", spec: &v1alpha1.RouterHostsConfigSpec{Server: &v1alpha1.ServerSpec{Endpoint: "r:1", CompactOwnEntries: boolp(false)}},
			flags: func(s *Settings) { s.CompactOwnEntries = true },
			check: func(t *testing.T, s Settings) {
				if s.CompactOwnEntries {
					t.Errorf("compactOwnEntries %v, want false", s.CompactOwnEntries)
				}
			}},
		{name: "verifyDNS: not host:port", spec: &v1alpha1.RouterHostsConfigSpec{Server: &v1alpha1.ServerSpec{Endpoint: "r:1", VerifyDNS: "router.lan"}},
			err: "spec.server.verifyDNS"},
		{name: "ownership: silentClusterAfter wins over the flag", spec: &v1alpha1.RouterHostsConfigSpec{Ownership: &v1alpha1.OwnershipSpec{SilentClusterAfter: &metav1.Duration{Duration: 72 * time.Hour}}},
			check: func(t *testing.T, s Settings) {
				if s.SilentClusterAfter != 72*time.Hour {
					t.Errorf("silentClusterAfter %s, want 72h", s.SilentClusterAfter)
				}
			}},
		{name: "ownership: left out, the flag's", spec: &v1alpha1.RouterHostsConfigSpec{Ownership: &v1alpha1.OwnershipSpec{}},
			check: func(t *testing.T, s Settings) {
				if s.SilentClusterAfter != base().SilentClusterAfter {
					t.Errorf("silentClusterAfter %s, want the flag's %s", s.SilentClusterAfter, base().SilentClusterAfter)
				}
			}},
		{name: "ownership: a negative silentClusterAfter", spec: &v1alpha1.RouterHostsConfigSpec{Ownership: &v1alpha1.OwnershipSpec{SilentClusterAfter: &metav1.Duration{Duration: -time.Hour}}},
			err: "spec.ownership.silentClusterAfter"},
		{name: "tenancy: a bad pattern", spec: &v1alpha1.RouterHostsConfigSpec{Tenancy: &v1alpha1.TenancySpec{AdoptionNamespaces: []string{"["}}}, err: "spec.tenancy"},
		{name: "tenancy: a maximum below the grace period", spec: &v1alpha1.RouterHostsConfigSpec{Tenancy: &v1alpha1.TenancySpec{MaxGracePeriodSeconds: i64(60)}},
			err: "above the maximum grace period"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			flags := base()
			if tc.flags != nil {
				tc.flags(&flags)
			}
			s, err := Overlay(flags, tc.spec, read)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one saying %q", err, tc.err)
				}
				if !s.Equal(base()) {
					t.Errorf("a refused config returned %+v, want the flags' settings", s)
				}
				var bad *MaterialError
				if errors.As(err, &bad) != tc.material {
					t.Errorf("%v: a MaterialError %v, want %v", err, !tc.material, tc.material)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, s)
		})
	}
}

// TestWithoutAnyServerMaterialNothingStarts: the endpoint and the mTLS material must come from
// the flags or the config.
func TestWithoutAnyServerMaterialNothingStarts(t *testing.T) {
	b := base()
	b.Endpoint = ""
	if _, err := Overlay(b, nil, nil); err == nil || !strings.Contains(err.Error(), "no router-hosts endpoint") || !IsNoRouter(err) {
		t.Errorf("no endpoint: %v, want a NoRouterError", err)
	}
	b = base()
	b.TLSFiles = false
	if _, err := Overlay(b, &v1alpha1.RouterHostsConfigSpec{Server: &v1alpha1.ServerSpec{Endpoint: "r:1"}}, nil); err == nil || !strings.Contains(err.Error(), "no mTLS material") || !IsNoRouter(err) {
		t.Errorf("no material: %v, want a NoRouterError", err)
	}
	b = base()
	b.Interval = 0
	if _, err := Overlay(b, nil, nil); err == nil || IsNoRouter(err) {
		t.Errorf("a bad interval: %v, want an error that is not a NoRouterError", err)
	}
}

// TestMaterialFailuresAreToldOncePerReason: a Secret whose material does not load is told to
// MaterialFailed when its reason first appears, not at each evaluation that finds it again;
// other problems are not material failures.
func TestMaterialFailuresAreToldOncePerReason(t *testing.T) {
	var told []error
	w := New(Options{MaterialFailed: func(err error) { told = append(told, err) }})
	garbled := fmt.Errorf("spec.server.tlsSecretRef: %w", &MaterialError{errors.New("Secret ns/mtls: client certificate and key: bad PEM")})
	missing := fmt.Errorf("spec.server.tlsSecretRef: %w", &MaterialError{errors.New("Secret ns/mtls has no tls.key")})
	tag := errors.New("spec.defaultTags: reserved")
	steps := []struct {
		prev, problem error
		wantNew       bool
		wantTold      int
	}{
		{nil, garbled, true, 1},
		{garbled, garbled, false, 1},
		{garbled, fmt.Errorf("spec.server.tlsSecretRef: %w", &MaterialError{errors.New("Secret ns/mtls: client certificate and key: bad PEM")}), false, 1},
		{garbled, missing, true, 2},
		{missing, nil, false, 2},
		{nil, tag, true, 2},
		{tag, garbled, true, 3},
	}
	for i, st := range steps {
		if got := w.noteProblem(st.prev, st.problem); got != st.wantNew || len(told) != st.wantTold {
			t.Fatalf("step %d: new %v and %d told, want %v and %d", i, got, len(told), st.wantNew, st.wantTold)
		}
	}
}

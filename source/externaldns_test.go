package source

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestAddExternalDNS(t *testing.T) {
	tests := []struct {
		name       string
		ann        map[string]string
		hosts      string // the claim's hostnames after, comma-separated
		ips, names string
		held       bool
		problem    string
		optedIn    bool
	}{
		{name: "hostnames and an IP target", ann: map[string]string{AnnotationExternalDNSHostname: "a.lan, b.lan", AnnotationExternalDNSTarget: "10.0.0.1"},
			hosts: "own.lan,a.lan,b.lan", ips: "10.0.0.1", optedIn: true},
		{name: "a hostname target, and one of each", ann: map[string]string{AnnotationExternalDNSHostname: "a.lan", AnnotationExternalDNSTarget: "LB.example.com, fd00::1"},
			hosts: "own.lan,a.lan", ips: "fd00::1", names: "lb.example.com", optedIn: true},
		{name: "no target: the chain resolves", ann: map[string]string{AnnotationExternalDNSHostname: "a.lan"}, hosts: "own.lan,a.lan", optedIn: true},
		{name: "a bad target holds", ann: map[string]string{AnnotationExternalDNSHostname: "a.lan", AnnotationExternalDNSTarget: "not a name!"},
			hosts: "own.lan,a.lan", held: true, problem: "neither an IP address nor a hostname", optedIn: true},
		{name: "an empty target holds", ann: map[string]string{AnnotationExternalDNSHostname: "a.lan", AnnotationExternalDNSTarget: " "},
			hosts: "own.lan,a.lan", held: true, problem: "is empty", optedIn: true},
		{name: "the operator's ip-address wins", ann: map[string]string{AnnotationExternalDNSHostname: "a.lan", AnnotationExternalDNSTarget: "lb.example.com", AnnotationIPAddress: "10.0.0.9"},
			hosts: "own.lan,a.lan", ips: "10.0.0.9", optedIn: true},
		{name: "opted out", ann: map[string]string{AnnotationExternalDNSHostname: "a.lan", AnnotationEnabled: "false"}, hosts: "own.lan,a.lan"},
		{name: "a target alone opts nothing in", ann: map[string]string{AnnotationExternalDNSTarget: "10.0.0.1"}, hosts: "own.lan", ips: "10.0.0.1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := &metav1.ObjectMeta{Annotations: tt.ann}
			if got := externalDNSOptedIn(o); got != tt.optedIn {
				t.Errorf("opted in: %v, want %v", got, tt.optedIn)
			}
			c := annotatedClaim(refOf("", "v1", "Service", o), o, []string{"own.lan"}, Reported{}, nil)
			addExternalDNS(&c, o)
			if got := strings.Join(c.hosts, ","); got != tt.hosts {
				t.Errorf("hosts %q, want %q", got, tt.hosts)
			}
			if got := strings.Join(c.overrides.ips, ","); got != tt.ips {
				t.Errorf("ips %q, want %q", got, tt.ips)
			}
			if got := strings.Join(c.overrides.names, ","); got != tt.names {
				t.Errorf("names %q, want %q", got, tt.names)
			}
			if c.overrides.badIPs != tt.held {
				t.Errorf("held %v, want %v", c.overrides.badIPs, tt.held)
			}
			var msgs []string
			for _, p := range c.overrides.problems {
				msgs = append(msgs, p.Message)
			}
			if all := strings.Join(msgs, "; "); (tt.problem == "") != (all == "") || !strings.Contains(all, tt.problem) {
				t.Errorf("problems %q, want %q", all, tt.problem)
			}
		})
	}
}

// TestExternalDNSModeKinds: in the mode, the annotated kinds read external-dns's annotations
// and HostMappings, whose spec is what they ask for, do not; the caches keep those two
// annotations of external-dns's and no other.
func TestExternalDNSModeKinds(t *testing.T) {
	live := &liveOptIn{}
	live.p.Store(compileOptIn(OptIn{ExternalDNSAnnotations: true}))
	cfg := Config{Resolver: &Resolver{}, optIn: live}
	for _, tc := range []struct {
		name string
		k    kind
		want bool
	}{{"hostmapping", newHostMappingKind(), false}, {"traefik", newTraefikKind(), true}, {"ingress", &ingressKind{}, true}, {"service", &serviceKind{}, true}} {
		if got := (&Source{kind: tc.k, cfg: cfg}).externalDNS(); got != tc.want {
			t.Errorf("%s reads external-dns's annotations: %v, want %v", tc.name, got, tc.want)
		}
	}
	m := slimMeta(metav1.ObjectMeta{Annotations: map[string]string{AnnotationExternalDNSHostname: "a.lan", AnnotationExternalDNSTarget: "10.0.0.1",
		externalDNSPrefix + "ttl": "60", AnnotationEnabled: "true"}})
	if len(m.Annotations) != 3 || m.Annotations[AnnotationExternalDNSTarget] != "10.0.0.1" {
		t.Errorf("cached annotations %v", m.Annotations)
	}
}

package source

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ktypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
)

func svc(name string, typ corev1.ServiceType, ann map[string]string, external []string, lb ...corev1.LoadBalancerIngress) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: ktypes.UID("uid-" + name), Annotations: ann},
		Spec:   corev1.ServiceSpec{Type: typ, ExternalIPs: external},
		Status: corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: lb}}}
}

func lbIP(ip string) corev1.LoadBalancerIngress { return corev1.LoadBalancerIngress{IP: ip} }

// serviceSource builds the service source on a fake clientset holding objs; the resolver's
// chain is static, which a Service must never fall back to.
func serviceSource(t *testing.T, objs ...runtime.Object) *Source {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	c := fakeClients(fake.NewClientset(objs...))
	r, err := NewResolver(ctx, c, []Strategy{{Kind: StrategyStatic, IP: "10.9.9.9"}})
	if err != nil {
		t.Fatal(err)
	}
	log := logrus.New()
	log.SetLevel(logrus.ErrorLevel)
	s, err := Build(ctx, "service", c, Config{Resolver: r, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestServiceEndpoints(t *testing.T) {
	lb := corev1.ServiceTypeLoadBalancer
	host := func(names string, kv ...string) map[string]string {
		return on(append([]string{AnnotationHostname, names}, kv...)...)
	}
	tests := []struct {
		name    string
		svc     *corev1.Service
		want    map[string][]string // hostname → targets; nil targets: held
		problem string              // a problem's message contains it
	}{
		{name: "LoadBalancer with several IPs", svc: svc("plex", lb, host("plex.lan"), nil, lbIP("10.0.0.2"), lbIP("10.0.0.1")),
			want: map[string][]string{"plex.lan": {"10.0.0.1", "10.0.0.2"}}},
		{name: "dual-stack LoadBalancer", svc: svc("mqtt", lb, host("mqtt.lan"), nil, lbIP("10.0.0.3"), lbIP("FD00::3")),
			want: map[string][]string{"mqtt.lan": {"10.0.0.3", "fd00::3"}}},
		{name: "several hostnames, the upstream annotation", svc: svc("dns", lb, host("dns.lan, ns1.lan"), nil, lbIP("10.0.0.4")),
			want: map[string][]string{"dns.lan": {"10.0.0.4"}, "ns1.lan": {"10.0.0.4"}}},
		{name: "LoadBalancer without status falls to externalIPs", svc: svc("game", lb, host("game.lan"), []string{"10.0.0.5"}),
			want: map[string][]string{"game.lan": {"10.0.0.5"}}},
		{name: "ClusterIP with externalIPs", svc: svc("ext", corev1.ServiceTypeClusterIP, host("ext.lan"), []string{"10.0.0.6"}),
			want: map[string][]string{"ext.lan": {"10.0.0.6"}}},
		{name: "NodePort without an address is held, never the chain's static", svc: svc("np", corev1.ServiceTypeNodePort, host("np.lan"), nil),
			want: map[string][]string{"np.lan": nil}, problem: "no load-balancer IP"},
		{name: "a hostname-only load balancer without DNS is held, saying why", svc: svc("elb", lb, host("elb.lan"), nil, corev1.LoadBalancerIngress{Hostname: "lb.example.com"}),
			want: map[string][]string{"elb.lan": nil}, problem: "lb.example.com"},
		{name: "the ip-address annotation wins", svc: svc("pin", lb, host("pin.lan", AnnotationIPAddress, "10.0.0.7"), nil, lbIP("10.0.0.8")),
			want: map[string][]string{"pin.lan": {"10.0.0.7"}}},
		{name: "no hostname annotation", svc: svc("nohost", lb, on(), nil, lbIP("10.0.0.9")),
			want: map[string][]string{}, problem: AnnotationHostname},
		{name: "not opted in", svc: svc("plain", lb, map[string]string{AnnotationHostname: "plain.lan"}, nil, lbIP("10.0.0.10")),
			want: map[string][]string{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := serviceSource(t, tc.svc)
			eps, err := s.Endpoints(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if got := hostTargets(eps); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("endpoints = %v, want %v", got, tc.want)
			}
			for _, e := range eps {
				if ref := e.Sources[0]; ref.Kind != "Service" || ref.Version != "v1" || ref.Group != "" || ref.Name != tc.svc.Name {
					t.Fatalf("source ref = %+v", ref)
				}
			}
			problems := s.Problems()[string(tc.svc.UID)]
			found := tc.problem == ""
			for _, p := range problems {
				found = found || strings.Contains(p.Message, tc.problem)
			}
			if !found {
				t.Fatalf("problems = %v, want one about %q", problems, tc.problem)
			}
		})
	}
}

// TestSlimAnnotatedService: an unannotated Service is cached as its identity alone; an opted-in
// one keeps what the source reads, and gives the same endpoints cut as whole.
func TestSlimAnnotatedService(t *testing.T) {
	full := svc("plex", corev1.ServiceTypeLoadBalancer, on(AnnotationHostname, "plex.lan"), []string{"10.0.0.9"}, lbIP("10.0.0.1"), corev1.LoadBalancerIngress{Hostname: "x.example"})
	full.Labels = map[string]string{"app": "plex"}
	full.Annotations["other/thing"] = "x"
	full.Spec.Ports = []corev1.ServicePort{{Port: 32400}}
	full.Spec.Selector = map[string]string{"app": "plex"}
	got, _ := slimAnnotatedService(full.DeepCopy())
	slim := got.(*corev1.Service)
	if slim.Labels != nil || slim.Spec.Ports != nil || slim.Spec.Selector != nil || len(slim.Annotations) != 2 || slim.Spec.Type != corev1.ServiceTypeLoadBalancer ||
		len(slim.Status.LoadBalancer.Ingress) != 2 || len(slim.Spec.ExternalIPs) != 1 {
		t.Fatalf("opted-in Service cached as %+v", slim)
	}
	s := serviceSource(t)
	a, _, pa := endpointsOf(s, full)
	b, _, pb := endpointsOf(s, slim)
	if !reflect.DeepEqual(hostTargets(a), hostTargets(b)) || len(pa) != len(pb) {
		t.Fatalf("cut %v %v, whole %v %v", hostTargets(b), pb, hostTargets(a), pa)
	}
	plain := svc("db", corev1.ServiceTypeClusterIP, map[string]string{AnnotationHostname: "db.lan", "x": "y"}, []string{"10.0.0.2"})
	got, _ = slimAnnotatedService(plain)
	if p := got.(*corev1.Service); p.Annotations != nil || p.Spec.ExternalIPs != nil || p.Name != "db" || p.UID != "uid-db" {
		t.Fatalf("unannotated Service cached as %+v", p)
	}
}

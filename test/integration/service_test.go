package integration

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/router-hosts-operator/router-hosts-operator/source"
)

// service creates a Service of typ with annotations and external IPs.
func (h *harness) service(name string, typ corev1.ServiceType, annotations map[string]string, externalIPs ...string) *corev1.Service {
	h.t.Helper()
	s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: name, Annotations: annotations},
		Spec: corev1.ServiceSpec{Type: typ, ExternalIPs: externalIPs, Ports: []corev1.ServicePort{{Port: 80}}}}
	got, err := h.cp.Client.CoreV1().Services(h.ns).Create(context.Background(), s, metav1.CreateOptions{})
	if err != nil {
		h.t.Fatalf("creating Service %s: %v", name, err)
	}
	return got
}

// updateService writes s back, as kubectl edit would.
func (h *harness) updateService(s *corev1.Service) *corev1.Service {
	h.t.Helper()
	got, err := h.cp.Client.CoreV1().Services(h.ns).Update(context.Background(), s, metav1.UpdateOptions{})
	if err != nil {
		h.t.Fatalf("updating Service %s: %v", s.Name, err)
	}
	return got
}

// setLoadBalancer writes a Service's load-balancer status, as MetalLB or kube-vip would.
func (h *harness) setLoadBalancer(s *corev1.Service, points ...corev1.LoadBalancerIngress) *corev1.Service {
	h.t.Helper()
	cur, err := h.cp.Client.CoreV1().Services(h.ns).Get(context.Background(), s.Name, metav1.GetOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	cur.Status.LoadBalancer.Ingress = points
	got, err := h.cp.Client.CoreV1().Services(h.ns).UpdateStatus(context.Background(), cur, metav1.UpdateOptions{})
	if err != nil {
		h.t.Fatalf("load-balancer status of %s: %v", s.Name, err)
	}
	return got
}

// TestServiceSource: LoadBalancer Services as MetalLB leaves them, in the order a user meets
// them: no address yet (held, nothing written, not even the chain's static address), then
// dual-stack IPs, a hostname-only point beside them (skipped), a second hostname, a NodePort
// without an address, externalIPs; three quiet syncs write nothing; a hostname removed from the
// annotation goes through the grace period.
func TestServiceSource(t *testing.T) {
	h := newHarness(t, options{sources: []string{"service"}, ipResolution: []string{"static:10.99.0.1"}, grace: time.Minute})
	plex := h.service("plex", corev1.ServiceTypeLoadBalancer, enabled("hostname", "plex.lan"))
	h.service("np", corev1.ServiceTypeNodePort, enabled("hostname", "np.lan"))
	h.service("ext", corev1.ServiceTypeClusterIP, enabled("hostname", "ext.lan, ext2.lan"), "10.43.0.9")
	h.service("plain", corev1.ServiceTypeClusterIP, map[string]string{source.AnnotationHostname: "plain.lan"}, "10.43.0.8")
	h.waitHost("ext.lan", "10.43.0.9")
	h.waitHost("plex.lan")
	h.sync()
	if n := len(h.entries("plex.lan")) + len(h.entries("np.lan")) + len(h.entries("plain.lan")); n != 0 {
		t.Fatalf("%d entries for Services without an address or not opted in; want none", n)
	}
	if len(h.entries("ext.lan")) != 1 || len(h.entries("ext2.lan")) != 1 {
		t.Fatal("externalIPs not written for both hostnames")
	}

	h.setLoadBalancer(plex, corev1.LoadBalancerIngress{IP: "10.43.0.1"}, corev1.LoadBalancerIngress{IP: "fd00::43"},
		corev1.LoadBalancerIngress{Hostname: "lb.example.com"})
	h.waitHost("plex.lan", "10.43.0.1", "fd00::43")
	h.sync()
	got := map[string]bool{}
	for _, e := range h.entries("plex.lan") {
		got[e.IP] = true
	}
	if len(got) != 2 || !got["10.43.0.1"] || !got["fd00::43"] {
		t.Fatalf("plex.lan entries %v, want 10.43.0.1 and fd00::43", got)
	}
	problems := h.op.Sources[0].Problems()[string(plex.UID)]
	if len(problems) != 1 || problems[0].Reason != source.ReasonInvalidAnnotation {
		t.Fatalf("problems of plex = %v, want one about the hostname-only point", problems)
	}

	h.srv.Service().ResetCalls()
	for i := 0; i < 3; i++ {
		h.sync()
	}
	if w := h.writes(); w != 0 {
		t.Fatalf("%d writes in three quiet syncs", w)
	}

	cur, err := h.cp.Client.CoreV1().Services(h.ns).Get(context.Background(), "ext", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cur.Annotations[source.AnnotationHostname] = "ext.lan"
	h.updateService(cur)
	h.waitGone("ext2.lan")
	h.sync()
	if _, marked := h.one("ext2.lan").TagValue("pending-deletion:"); !marked {
		t.Fatal("ext2.lan not marked for deletion after leaving the annotation")
	}
	h.clock.Step(2 * time.Minute)
	h.sync()
	if len(h.entries("ext2.lan")) != 0 || len(h.entries("ext.lan")) != 1 {
		t.Fatal("ext2.lan not deleted after its grace period, or ext.lan lost")
	}
}

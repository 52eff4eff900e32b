package integration

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestMigrationFromTheUpstreamOperator: a router holding the entries the upstream operator
// wrote (its comments and tags, ../shared/upstream-operator.md), one per kind it handles, and
// the same objects in the cluster. The operator adopts each entry in place (same ID, the
// upstream tags and comment kept verbatim, the address re-pointed where this operator resolves
// another one): no duplicate line, no lost entry, and a second sync writes nothing.
func TestMigrationFromTheUpstreamOperator(t *testing.T) {
	installGatewayAPI(t, cp)
	h := newHarness(t, options{sources: []string{"hostmapping", "traefik", "gateway", "service"}})
	type row struct {
		kind, hostname, upstreamIP, wantIP, comment string
		upstreamTags                                []string
	}
	rows := []row{
		{"HostMapping", "nas.mig.lan", "10.46.0.1", "10.46.0.1", "k8s:" + h.ns + "/nas", []string{"storage"}},
		{"IngressRoute", "app.mig.lan", "192.168.1.100", "10.46.0.2", "k8s-ingress:" + h.ns + "/app", []string{"kubernetes", "traefik", "ingress"}},
		{"HTTPRoute", "gw.mig.lan", "10.46.0.3", "10.46.0.3", "k8s-gateway:" + h.ns + "/web", []string{"kubernetes", "gateway", "httproute"}},
		{"Service", "svc.mig.lan", "10.46.0.4", "10.46.0.4", "k8s-service:" + h.ns + "/plex", []string{"kubernetes", "service"}},
	}
	ids := map[string]string{}
	for _, r := range rows {
		ids[r.hostname] = h.handMade(r.hostname, r.upstreamIP, nil, r.upstreamTags, r.comment).ID
	}

	// The objects the upstream operator served; its ip field on the HostMapping.
	h.hostMapping("nas", map[string]any{"hostname": "nas.mig.lan", "ip": "10.46.0.1", "tags": []any{"storage"}})
	h.route(irNew, "app", enabled("ip-address", "10.46.0.2"), "Host(`app.mig.lan`)")
	gw := map[string]any{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "gw"}
	h.gwObj(gwGVR, "Gateway", "gw", nil, map[string]any{"gatewayClassName": "example", "listeners": []any{
		map[string]any{"name": "web", "protocol": "HTTP", "port": int64(80)}}}, addresses("10.46.0.3"))
	h.gwObj(httpGVR, "HTTPRoute", "web", enabled(), map[string]any{"hostnames": strs("gw.mig.lan"), "parentRefs": []any{gw}}, parents(true, gw))
	h.service("plex", corev1.ServiceTypeClusterIP, enabled("hostname", "svc.mig.lan"), "10.46.0.4")
	for _, r := range rows {
		h.waitHost(r.hostname, r.wantIP)
	}
	h.sync()
	for _, r := range rows {
		got := h.entries(r.hostname)
		if len(got) != 1 {
			t.Fatalf("%s (%s): %d entries, want exactly the adopted one", r.hostname, r.kind, len(got))
		}
		e := got[0]
		if e.ID != ids[r.hostname] || e.IP != r.wantIP || e.Comment != r.comment {
			t.Errorf("%s (%s): %+v; want the upstream entry %s at %s with its comment", r.hostname, r.kind, e, ids[r.hostname], r.wantIP)
		}
		if !slices.Equal(e.Tags[:len(r.upstreamTags)], r.upstreamTags) || !e.HasTag("pre-existing:true") || !e.HasTag("kind:"+r.kind) {
			t.Errorf("%s (%s): tags %v; want the upstream tags first, then the operator's block", r.hostname, r.kind, e.Tags)
		}
		if v, _ := e.TagValue("original-ip:"); v != r.upstreamIP {
			t.Errorf("%s (%s): loan records original-ip %q, want %q", r.hostname, r.kind, v, r.upstreamIP)
		}
	}
	h.srv.Service().ResetCalls()
	h.sync()
	if w := h.writes(); w != 0 {
		t.Fatalf("%d writes in the sync after the migration", w)
	}
}

package integration

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"

	"github.com/router-hosts-operator/router-hosts-operator/controller"
	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/events"
	"github.com/router-hosts-operator/router-hosts-operator/registry"
)

// warnings collects the Warning events of the operator's real event recorder, by object
// name: the sources' warnings and those the recorder derives from each sync's report.
type warnings struct {
	mu sync.Mutex
	by map[string][]string
}

func (w *warnings) Event(obj runtime.Object, eventtype, reason, _ string) {
	ref, ok := obj.(*corev1.ObjectReference)
	if !ok || eventtype != corev1.EventTypeWarning {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.by[ref.Name] = append(w.by[ref.Name], reason)
}

func (w *warnings) Eventf(obj runtime.Object, eventtype, reason, format string, args ...any) {
	w.Event(obj, eventtype, reason, fmt.Sprintf(format, args...))
}

func (w *warnings) AnnotatedEventf(obj runtime.Object, _ map[string]string, eventtype, reason, format string, args ...any) {
	w.Event(obj, eventtype, reason, fmt.Sprintf(format, args...))
}

// recorder is the operator's event recorder writing into w.
func (w *warnings) recorder() *events.Recorder {
	r := events.NewWithRecorder(w, logrus.New())
	r.SetLeading(true)
	return r
}

// reservedTags is one tag from each part of the operator's reserved namespace.
func reservedTags() []string {
	out := []string{registry.TagOwner}
	for _, p := range registry.ReservedPrefixes() {
		out = append(out, p+"forged")
	}
	return out
}

func (w *warnings) reasons(name string) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.by[name]...)
}

// badRow is one piece of bad (or odd) input and what must come of it.
type badRow struct {
	name string
	// create makes the object; it returns the apiserver's error, if any.
	create func(h *harness, name string) error
	// rejected: the apiserver itself refuses the object.
	rejected bool
	// entries: hostname → IPs that must exist afterwards (nothing else may exist for the row).
	entries map[string][]string
	// warn: the Warning reason the object must get ("" for none).
	warn string
	// check inspects the row's entries further.
	check func(t *testing.T, recs []endpoint.Record)
}

func ingRow(ann map[string]string, hosts ...string) func(*harness, string) error {
	return func(h *harness, name string) error {
		_, err := cp.Client.NetworkingV1().Ingresses(h.ns).Create(context.Background(), ingress(h.ns, name, ann, hosts...), metav1.CreateOptions{})
		return err
	}
}

func routeRow(matches ...string) func(*harness, string) error {
	return routeRowWith(nil, matches...)
}

// routeRowWith makes an opted-in IngressRoute with extra annotations (keys without prefix).
func routeRowWith(extra map[string]string, matches ...string) func(*harness, string) error {
	return func(h *harness, name string) error {
		var routes []any
		for _, m := range matches {
			routes = append(routes, map[string]any{"match": m})
		}
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "traefik.io/v1alpha1", "kind": "IngressRoute",
			"metadata": map[string]any{"name": name, "namespace": h.ns, "annotations": map[string]any{"router-hosts.fzymgc.house/enabled": "true", "router-hosts.fzymgc.house/ip-address": "10.60.0.1"}},
			"spec":     map[string]any{"routes": routes}}}
		for k, v := range extra {
			unstructured.SetNestedField(u.Object, v, "metadata", "annotations", "router-hosts.fzymgc.house/"+k)
		}
		_, err := dynamic.NewForConfigOrDie(cp.Config).Resource(irNew).Namespace(h.ns).Create(context.Background(), u, metav1.CreateOptions{})
		return err
	}
}

func hmRow(spec map[string]any) func(*harness, string) error {
	return func(h *harness, name string) error {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "router-hosts.fzymgc.house/v1alpha1", "kind": "HostMapping",
			"metadata": map[string]any{"name": name, "namespace": h.ns}, "spec": spec}}
		_, err := h.hmClient().Create(context.Background(), u, metav1.CreateOptions{})
		return err
	}
}

func ip(v string) map[string]string { return enabled("ip-address", v) }

func manyNames(n int, suffix string) []string {
	var out []string
	for i := 0; i < n; i++ {
		out = append(out, fmt.Sprintf("a%02d.%s", i, suffix))
	}
	return out
}

func TestBadInput(t *testing.T) {
	w := &warnings{by: map[string][]string{}}
	rec := w.recorder()
	h := newHarness(t, options{sources: []string{"ingress", "traefik", "hostmapping"}, warner: rec, reporters: []controller.Reporter{rec}})
	long254 := strings.Repeat("abcdefghi.", 25) + "abcd"
	label64 := strings.Repeat("x", 64) + ".lan"
	tagsOf := func(want ...string) func(*testing.T, []endpoint.Record) {
		return func(t *testing.T, recs []endpoint.Record) {
			for _, tag := range want {
				neg := strings.HasPrefix(tag, "!")
				if recs[0].HasTag(strings.TrimPrefix(tag, "!")) == neg {
					t.Errorf("tags %v: want %s", recs[0].Tags, tag)
				}
			}
		}
	}
	aliasCount := func(n int) func(*testing.T, []endpoint.Record) {
		return func(t *testing.T, recs []endpoint.Record) {
			if len(recs[0].Aliases) != n {
				t.Errorf("%d aliases, want %d", len(recs[0].Aliases), n)
			}
		}
	}
	rows := []badRow{
		{name: "wildcard-host", create: ingRow(ip("10.60.1.1"), "*.wild.lan"), warn: "InvalidHostname"},
		{name: "wildcard-beside-good", create: ingRow(ip("10.60.1.2"), "*.wild2.lan", "good2.lan"), warn: "InvalidHostname", entries: map[string][]string{"good2.lan": {"10.60.1.2"}}},
		{name: "underscore", create: routeRow("Host(`under_score.lan`)"), warn: "InvalidHostname"},
		{name: "uppercase", create: routeRow("Host(`UPPER.Case.LAN`)"), entries: map[string][]string{"upper.case.lan": {"10.60.0.1"}}},
		{name: "trailing-dot", create: routeRow("Host(`dot.lan.`)"), entries: map[string][]string{"dot.lan": {"10.60.0.1"}}},
		{name: "idn", create: routeRow("Host(`bücher.lan`)"), entries: map[string][]string{"xn--bcher-kva.lan": {"10.60.0.1"}}},
		{name: "name-254-bytes", create: routeRow("Host(`" + long254 + "`)"), warn: "InvalidHostname"},
		{name: "label-64-bytes", create: routeRow("Host(`" + label64 + "`)"), warn: "InvalidHostname"},
		{name: "empty-host", create: ingRow(ip("10.60.1.3"), "")},
		{name: "empty-host-in-rule", create: routeRow("Host(``)"), warn: "InvalidHostname"},
		{name: "ipv6", create: ingRow(ip("FD00:0:0::60"), "six.lan"), entries: map[string][]string{"six.lan": {"fd00::60"}}},
		{name: "ipv4-mapped", create: ingRow(ip("::ffff:10.60.1.4"), "mapped.lan"), entries: map[string][]string{"mapped.lan": {"10.60.1.4"}}},
		{name: "invalid-ip", create: ingRow(ip("10.60.1.300"), "badip.lan"), warn: "InvalidAnnotation"},
		{name: "zone-ip", create: ingRow(ip("fe80::1%eth0"), "zone.lan"), warn: "InvalidAnnotation"},
		{name: "empty-ip", create: ingRow(ip(" , "), "emptyip.lan"), warn: "InvalidAnnotation"},
		{name: "grace-not-number", create: ingRow(enabled("ip-address", "10.60.1.5", "grace-period", "soon"), "g1.lan"), warn: "InvalidAnnotation", entries: map[string][]string{"g1.lan": {"10.60.1.5"}}, check: tagsOf("!grace-period:soon")},
		{name: "grace-negative", create: ingRow(enabled("ip-address", "10.60.1.6", "grace-period", "-5"), "g2.lan"), warn: "InvalidAnnotation", entries: map[string][]string{"g2.lan": {"10.60.1.6"}}},
		{name: "grace-huge", create: ingRow(enabled("ip-address", "10.60.1.7", "grace-period", "99999999999"), "g3.lan"), warn: "InvalidAnnotation", entries: map[string][]string{"g3.lan": {"10.60.1.7"}}},
		{name: "tag-with-space", create: ingRow(enabled("ip-address", "10.60.1.8", "tags", "good,two words"), "t1.lan"), warn: "InvalidAnnotation", entries: map[string][]string{"t1.lan": {"10.60.1.8"}}, check: tagsOf("good", "!two words")},
		{name: "tags-with-commas", create: ingRow(enabled("ip-address", "10.60.1.9", "tags", "a,,b,"), "t2.lan"), entries: map[string][]string{"t2.lan": {"10.60.1.9"}}, check: tagsOf("a", "b")},
		{name: "tag-with-newline", create: ingRow(enabled("ip-address", "10.60.1.10", "tags", "ok\ninjected"), "t3.lan"), warn: "InvalidAnnotation", entries: map[string][]string{"t3.lan": {"10.60.1.10"}}, check: tagsOf("!ok\ninjected")},
		{name: "tag-5000-bytes", create: ingRow(enabled("ip-address", "10.60.1.11", "tags", strings.Repeat("t", 5000)), "t4.lan"), warn: "InvalidAnnotation", entries: map[string][]string{"t4.lan": {"10.60.1.11"}}},
		{name: "51-aliases", create: ingRow(enabled("ip-address", "10.60.1.12", "aliases", strings.Join(manyNames(51, "al.lan"), ",")), "al.lan"), warn: "InvalidAnnotation", entries: map[string][]string{"al.lan": {"10.60.1.12"}}, check: aliasCount(50)},
		{name: "alias-equals-host", create: ingRow(enabled("ip-address", "10.60.1.13", "aliases", "self.lan,other-self.lan"), "self.lan"), warn: "InvalidAnnotation", entries: map[string][]string{"self.lan": {"10.60.1.13"}}, check: aliasCount(1)},
		{name: "alias-is-ip", create: ingRow(enabled("ip-address", "10.60.1.14", "aliases", "10.0.0.1"), "aip.lan"), warn: "InvalidAnnotation", entries: map[string][]string{"aip.lan": {"10.60.1.14"}}, check: aliasCount(0)},
		{name: "alias-invalid", create: ingRow(enabled("ip-address", "10.60.1.15", "aliases", "bad_alias,ok-alias.lan"), "abad.lan"), warn: "InvalidAnnotation", entries: map[string][]string{"abad.lan": {"10.60.1.15"}}, check: aliasCount(1)},
		{name: "annotation-1MiB", create: ingRow(enabled("ip-address", "10.60.1.16", "tags", strings.Repeat("x", 1<<20)), "huge.lan"), rejected: true},
		{name: "rule-built-to-break", create: routeRow("Host(`ok-rule.lan`) && ((Host(`\\`)) || Host(\"a\\\"b\") || HostRegexp(`(((`) || Host(`unterminated"), warn: "InvalidHostname", entries: map[string][]string{"ok-rule.lan": {"10.60.0.1"}}},
		{name: "rule-sni-star-only", create: routeRow("HostSNI(`*`)")},
		{name: "rule-regexp-only", create: routeRow("HostRegexp(`{x:.+}.lan`)")},
		{name: "not-exactly-true", create: ingRow(map[string]string{"router-hosts.fzymgc.house/enabled": "TRUE", "router-hosts.fzymgc.house/ip-address": "10.60.1.17"}, "nottrue.lan")},
		{name: "hm-no-ip-no-chain", create: hmRow(map[string]any{"hostname": "noaddr.lan"}), warn: "NoAddress"},
		{name: "hm-underscore", create: hmRow(map[string]any{"hostname": "hm_bad.lan", "ipAddress": "10.60.1.18"}), rejected: true},
		{name: "hm-bad-ip", create: hmRow(map[string]any{"hostname": "hmip.lan", "ipAddress": "10.60.1.300"}), rejected: true},
		{name: "hm-51-aliases", create: hmRow(map[string]any{"hostname": "hmal.lan", "ipAddress": "10.60.1.19", "aliases": toAny(manyNames(51, "hmal.lan"))}), rejected: true},
		{name: "hm-tag-with-comma", create: hmRow(map[string]any{"hostname": "hmtag.lan", "ipAddress": "10.60.1.20", "tags": []any{"a,b"}}), rejected: true},
		{name: "control", create: ingRow(ip("10.60.1.21"), "control.lan"), entries: map[string][]string{"control.lan": {"10.60.1.21"}}},
	}
	// Every reserved tag in every place a user supplies tags: dropped with a warning (the rest
	// of the object syncs), or refused by the HostMapping schema. --default-tag is refused at
	// start (TestBinaryRefusesReservedDefaultTags).
	for i, tag := range reservedTags() {
		host := fmt.Sprintf("reserved%d.lan", i)
		// The operator's own k8s-operator is there once; a forged one would make it twice.
		only := 0
		if tag == registry.TagOwner {
			only = 1
		}
		check := func(t *testing.T, recs []endpoint.Record) {
			tagsOf("mine")(t, recs)
			if n := slices.Index(recs[0].Tags, tag); (n >= 0) != (only == 1) || len(slices.DeleteFunc(slices.Clone(recs[0].Tags), func(x string) bool { return x != tag })) != only {
				t.Errorf("tags %q: the user's %q was written", recs[0].Tags, tag)
			}
		}
		rows = append(rows,
			badRow{name: fmt.Sprintf("reserved-%d-ingress", i), create: ingRow(enabled("ip-address", fmt.Sprintf("10.61.0.%d", i+1), "tags", "mine,"+tag), host),
				warn: "InvalidAnnotation", entries: map[string][]string{host: {fmt.Sprintf("10.61.0.%d", i+1)}}, check: check},
			badRow{name: fmt.Sprintf("reserved-%d-route", i), create: routeRowWith(map[string]string{"tags": tag + ",mine"}, "Host(`r"+host+"`)"),
				warn: "InvalidAnnotation", entries: map[string][]string{"r" + host: {"10.60.0.1"}}, check: check},
			badRow{name: fmt.Sprintf("reserved-%d-hostmapping", i), create: hmRow(map[string]any{"hostname": "hm" + host, "ipAddress": "10.61.1.1", "tags": []any{"mine", tag}}), rejected: true},
		)
	}
	want := map[string][]string{}
	for _, r := range rows {
		err := r.create(h, r.name)
		if r.rejected != (err != nil) {
			t.Errorf("%s: apiserver error %v, want rejected=%v", r.name, err, r.rejected)
		}
		for host, ips := range r.entries {
			want[host] = ips
		}
	}
	h.waitSource(func(eps []*endpoint.Endpoint) bool {
		got := map[string]bool{}
		for _, e := range eps {
			got[e.Hostname] = true
		}
		for host := range want {
			if !got[host] {
				return false
			}
		}
		return got["noaddr.lan"] && got["huge.lan"] == false
	})
	h.sync()

	recs, err := h.prov.Records(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	byHost := map[string][]endpoint.Record{}
	for _, rec := range recs {
		// No bad data ever reaches the server.
		if err := endpoint.ValidateRecord(&rec); err != nil || rec.Hostname != strings.ToLower(rec.Hostname) {
			t.Errorf("bad data written: %+v: %v", rec, err)
		}
		byHost[rec.Hostname] = append(byHost[rec.Hostname], rec)
	}
	for host := range byHost {
		if _, ok := want[host]; !ok {
			t.Errorf("unexpected entry %s %v", host, byHost[host])
		}
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			for host, ips := range r.entries {
				var got []string
				for _, rec := range byHost[host] {
					got = append(got, rec.IP)
				}
				sort.Strings(got)
				if strings.Join(got, ",") != strings.Join(ips, ",") {
					t.Fatalf("%s: IPs %v, want %v", host, got, ips)
				}
				if r.check != nil {
					r.check(t, byHost[host])
				}
			}
			reasons := w.reasons(r.name)
			if r.warn == "" && len(reasons) > 0 {
				t.Errorf("unexpected warnings %v", reasons)
			}
			if r.warn != "" && !slices.Contains(reasons, r.warn) {
				t.Errorf("warnings %v, want %s", reasons, r.warn)
			}
		})
	}
}

func toAny(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

func TestBinaryRefusesReservedDefaultTags(t *testing.T) {
	for _, tag := range reservedTags() {
		cmd := exec.Command(operatorBin, "--provider=inmemory", "--once", "--kubeconfig="+kubeconfig, "--default-tag="+tag)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Run(); err == nil {
			t.Errorf("--default-tag=%s was accepted", tag)
		} else if !strings.Contains(stderr.String(), "default-tag") || !strings.Contains(stderr.String(), "reserved") {
			t.Errorf("--default-tag=%s: error does not say why: %s", tag, stderr.String())
		}
	}
}

package status

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/router-hosts-operator/router-hosts-operator/api/v1alpha1"
	"github.com/router-hosts-operator/router-hosts-operator/controller"
	"github.com/router-hosts-operator/router-hosts-operator/dnscheck"
	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
)

// fakeAnswers is the DNS check as a test sets it.
type fakeAnswers struct {
	mu     sync.Mutex
	server string
	down   error
	states map[string]dnscheck.Answer
}

func (f *fakeAnswers) Server() string { f.mu.Lock(); defer f.mu.Unlock(); return f.server }
func (f *fakeAnswers) ServerDown() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.down
}
func (f *fakeAnswers) State(n string) dnscheck.Answer {
	f.mu.Lock()
	defer f.mu.Unlock()
	if a, ok := f.states[n]; ok {
		return a
	}
	return dnscheck.Answer{Result: dnscheck.Result{Name: n}}
}

func (f *fakeAnswers) set(n string, a dnscheck.Answer) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.states[n] = a
}

func answer(name string, v dnscheck.Finding, reported bool, want, got string) dnscheck.Answer {
	r := dnscheck.Result{Name: name, Finding: v}
	if want != "" {
		r.Want = []netip.Addr{netip.MustParseAddr(want)}
	}
	if got != "" {
		r.Got = []netip.Addr{netip.MustParseAddr(got)}
	}
	return dnscheck.Answer{Result: r, Reported: reported}
}

// TestTheAnsweringCondition: what the check of the router's DNS says of each name of an object
// written becomes its Answering condition, the worst finding winning; nothing while the check is
// off, and Unknown for an object without an entry of its own.
func TestTheAnsweringCondition(t *testing.T) {
	hm := &v1alpha1.HostMapping{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "d", UID: "uid-p", Generation: 2},
		Spec: v1alpha1.HostMappingSpec{Hostname: "printer.lan", IPAddress: "10.0.0.9", Aliases: []string{"lp.lan"}}}
	ref := endpoint.SourceRef{Kind: "HostMapping", Namespace: "d", Name: "p", UID: "uid-p", Generation: 2}
	ep := &endpoint.Endpoint{Hostname: "printer.lan", Targets: []string{"10.0.0.9"}, Aliases: []string{"lp.lan"}, Sources: []endpoint.SourceRef{ref}}
	desired := map[string]*endpoint.Endpoint{"printer.lan": ep}
	synced := &controller.Report{Objects: map[string]controller.Object{"uid-p": {Endpoints: []*endpoint.Endpoint{ep}}},
		Entries: map[string][]endpoint.Record{"printer.lan": {{ID: "01ABC", IP: "10.0.0.9", Hostname: "printer.lan", Aliases: []string{"lp.lan"}}}}}
	ok := answer("printer.lan", dnscheck.Answering, false, "10.0.0.9", "10.0.0.9")
	for _, tc := range []struct {
		name    string
		server  string
		down    error
		report  *controller.Report
		desired map[string]*endpoint.Endpoint
		states  map[string]dnscheck.Answer
		status  metav1.ConditionStatus
		reason  string
		message string
	}{
		{name: "the check is off: no condition", server: "", report: synced, desired: desired},
		{name: "every name answers", server: "r:53", report: synced, desired: desired,
			states: map[string]dnscheck.Answer{"printer.lan": ok, "lp.lan": answer("lp.lan", dnscheck.Answering, false, "10.0.0.9", "10.0.0.9")},
			status: metav1.ConditionTrue, reason: ReasonAnswering, message: "the router's DNS r:53 answers printer.lan, lp.lan as written"},
		{name: "an alias not answering", server: "r:53", report: synced, desired: desired,
			states: map[string]dnscheck.Answer{"printer.lan": ok, "lp.lan": answer("lp.lan", dnscheck.Missing, true, "10.0.0.9", "")},
			status: metav1.ConditionFalse, reason: ReasonNotAnswering, message: "lp.lan has no address (no data), written 10.0.0.9"},
		{name: "a name answering another address", server: "r:53", report: synced, desired: desired,
			states: map[string]dnscheck.Answer{"printer.lan": answer("printer.lan", dnscheck.Wrong, true, "10.0.0.9", "10.0.0.8")},
			status: metav1.ConditionFalse, reason: ReasonWrongAddress, message: "printer.lan answers 10.0.0.8, written 10.0.0.9"},
		{name: "a bad answer within the grace is no finding yet", server: "r:53", report: synced, desired: desired,
			states: map[string]dnscheck.Answer{"printer.lan": ok, "lp.lan": answer("lp.lan", dnscheck.Missing, false, "10.0.0.9", "")},
			status: metav1.ConditionUnknown, reason: ReasonChecking},
		{name: "not asked yet", server: "r:53", report: synced, desired: desired,
			status: metav1.ConditionUnknown, reason: ReasonChecking, message: "printer.lan, lp.lan"},
		{name: "the DNS server does not answer", server: "r:53", down: errors.New("no answer in 2s"), report: synced, desired: desired,
			status: metav1.ConditionUnknown, reason: ReasonDNSServerNotAnswering, message: "no answer in 2s"},
		{name: "the name is another's", server: "r:53", report: synced, desired: nil,
			states: map[string]dnscheck.Answer{"printer.lan": ok},
			status: metav1.ConditionUnknown, reason: ReasonNotWritten},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := NewHostMappings(nil, nil, logrus.New())
			h.UseAnswers(&fakeAnswers{server: tc.server, down: tc.down, states: tc.states})
			st := h.compute(hm, tc.report, tc.desired, nil)
			if st.answering != tc.status || st.answerReason != tc.reason || !strings.Contains(st.answerMessage, tc.message) {
				t.Fatalf("Answering %q %q %q, want %q %q containing %q", st.answering, st.answerReason, st.answerMessage, tc.status, tc.reason, tc.message)
			}
		})
	}
	// A name not asked yet (a restart) leaves the last finding as it is: no status write for
	// it.
	h0 := NewHostMappings(nil, nil, logrus.New())
	h0.UseAnswers(&fakeAnswers{server: "r:53"})
	answered := hm.DeepCopy()
	answered.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionAnswering, Status: metav1.ConditionTrue, Reason: ReasonAnswering, Message: "m"}}
	if st := h0.compute(answered, synced, desired, nil); st.answering != metav1.ConditionTrue || st.answerReason != ReasonAnswering || st.answerMessage != "m" {
		t.Fatalf("not asked yet after a finding: %q %q %q, want the finding kept", st.answering, st.answerReason, st.answerMessage)
	}
	// A source that failed says nothing new of the object: its condition stays.
	h := NewHostMappings(nil, nil, logrus.New())
	h.UseAnswers(&fakeAnswers{server: "r:53"})
	prev := hm.DeepCopy()
	prev.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionAnswering, Status: metav1.ConditionTrue, Reason: ReasonAnswering, Message: "m"}}
	if st := h.compute(prev, &controller.Report{Step: controller.StepSource}, nil, nil); st.answering != metav1.ConditionTrue || st.answerMessage != "m" {
		t.Fatalf("after a failed source: %+v", st)
	}
}

// TestRefreshWritesANewFindingWithoutASync: when the check's finding changes between syncs, the
// writer works the status out again from the last report and writes the new condition.
func TestRefreshWritesANewFindingWithoutASync(t *testing.T) {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "router-hosts.fzymgc.house/v1alpha1", "kind": "HostMapping",
		"metadata": map[string]any{"name": "p", "namespace": "d", "uid": "uid-p", "generation": int64(1)},
		"spec":     map[string]any{"hostname": "printer.lan", "ipAddress": "10.0.0.9"}}}
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{v1alpha1.HostMappingResource: "HostMappingList"}, u.DeepCopy())
	cache := &liveCache{hm: v1alpha1.FromUnstructured(u, metav1.ObjectMeta{Name: "p", Namespace: "d", UID: "uid-p", Generation: 1, ResourceVersion: "1"})}
	written := make(chan string, 8)
	client.PrependReactor("update", "hostmappings", func(a k8stesting.Action) (bool, runtime.Object, error) {
		obj := a.(k8stesting.UpdateAction).GetObject().(*unstructured.Unstructured)
		cache.set(v1alpha1.FromUnstructured(obj, metav1.ObjectMeta{Name: "p", Namespace: "d", UID: "uid-p", Generation: 1, ResourceVersion: "2"}))
		conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
		for _, c := range conds {
			if m := c.(map[string]any); m["type"] == v1alpha1.ConditionAnswering {
				written <- m["status"].(string) + " " + m["reason"].(string)
			}
		}
		return true, obj, nil
	})
	answers := &fakeAnswers{server: "r:53", states: map[string]dnscheck.Answer{}}
	h := NewHostMappings(cache, client.Resource(v1alpha1.HostMappingResource), logrus.New())
	h.UseAnswers(answers)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go h.Run(ctx)
	ep := &endpoint.Endpoint{Hostname: "printer.lan", Targets: []string{"10.0.0.9"}, Sources: []endpoint.SourceRef{{UID: "uid-p", Generation: 1}}}
	h.Report(ctx, &controller.Report{Desired: []*endpoint.Endpoint{ep}, Objects: map[string]controller.Object{"uid-p": {Endpoints: []*endpoint.Endpoint{ep}}},
		Entries: map[string][]endpoint.Record{"printer.lan": {{ID: "01ABC", IP: "10.0.0.9", Hostname: "printer.lan"}}}})
	next := func() string {
		t.Helper()
		select {
		case w := <-written:
			return w
		case <-time.After(10 * time.Second):
			t.Fatal("no status written")
			return ""
		}
	}
	if w := next(); w != "Unknown Checking" {
		t.Fatalf("after the sync: %s", w)
	}
	answers.set("printer.lan", answer("printer.lan", dnscheck.Missing, true, "10.0.0.9", ""))
	h.Refresh()
	if w := next(); w != "False NotAnswering" {
		t.Fatalf("after the finding: %s", w)
	}
	answers.set("printer.lan", answer("printer.lan", dnscheck.Answering, false, "10.0.0.9", "10.0.0.9"))
	h.Refresh()
	if w := next(); w != "True Answering" {
		t.Fatalf("after the fix: %s", w)
	}
}

// liveCache is a HostMapping cache that shows what was written.
type liveCache struct {
	mu sync.Mutex
	hm *v1alpha1.HostMapping
}

func (c *liveCache) set(hm *v1alpha1.HostMapping) { c.mu.Lock(); defer c.mu.Unlock(); c.hm = hm }
func (c *liveCache) Objects() ([]*v1alpha1.HostMapping, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return []*v1alpha1.HostMapping{c.hm}, nil
}
func (c *liveCache) Object(string, string) (*v1alpha1.HostMapping, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hm, nil
}

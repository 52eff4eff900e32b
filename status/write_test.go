package status

import (
	"context"
	"reflect"
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
)

// TestTheWrittenStatus: what a status write sends. A condition whose status stays keeps its
// transition time (the clock is the writer's), one that changes transitions now, the operator's
// own conditions are all it writes, and synced, routerHostsId and addresses are there even
// when empty.
func TestTheWrittenStatus(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := t0.Add(90 * time.Minute)
	cond := func(typ, status string) any {
		return map[string]any{"type": typ, "status": status, "reason": "Before", "message": "before",
			"observedGeneration": int64(1), "lastTransitionTime": t0.Format(time.RFC3339)}
	}
	synced := []any{cond(v1alpha1.ConditionSynced, "True"), cond(v1alpha1.ConditionReady, "True"), cond("Foreign", "True")}
	type written struct {
		status, reason, message string
		gen                     int64
		transition              time.Time
	}
	for _, tc := range []struct {
		name       string
		conditions []any
		st         state
		want       map[string]written
		addresses  []string
	}{
		{name: "still synced, with another message: the transition time stays", conditions: synced,
			st: state{synced: true, id: "01ABC", gen: 2, reason: ReasonSuccess, message: "Host synced to router-hosts", addresses: "10.0.0.9,fd00::9", ready: true},
			want: map[string]written{
				v1alpha1.ConditionSynced: {"True", ReasonSuccess, "Host synced to router-hosts", 2, t0},
				v1alpha1.ConditionReady:  {"True", ReasonSuccess, "Host synced to router-hosts", 2, t0}},
			addresses: []string{"10.0.0.9", "fd00::9"}},
		{name: "no longer synced: both conditions transition now", conditions: synced,
			st: state{gen: 2, reason: ReasonServerUnreachable, message: "connection refused", ready: true},
			want: map[string]written{
				v1alpha1.ConditionSynced: {"False", ReasonServerUnreachable, "connection refused", 2, now},
				v1alpha1.ConditionReady:  {"False", ReasonServerUnreachable, "connection refused", 2, now}},
			addresses: []string{}},
		{name: "a status written before Ready: Synced keeps its time, Ready starts now", conditions: synced[:1],
			st: state{synced: true, id: "01ABC", gen: 1, reason: ReasonSuccess, message: "ok", addresses: "10.0.0.9", ready: true},
			want: map[string]written{
				v1alpha1.ConditionSynced: {"True", ReasonSuccess, "ok", 1, t0},
				v1alpha1.ConditionReady:  {"True", ReasonSuccess, "ok", 1, now}},
			addresses: []string{"10.0.0.9"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "router-hosts.fzymgc.house/v1alpha1", "kind": "HostMapping",
				"spec":   map[string]any{"hostname": "printer.lan"},
				"status": map[string]any{"synced": true, "routerHostsId": "01ABC", "observedGeneration": int64(1), "conditions": tc.conditions}}}
			hm := v1alpha1.FromUnstructured(u, metav1.ObjectMeta{Name: "p", Namespace: "d", UID: "uid-p", Generation: 2, ResourceVersion: "7"})
			client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
				map[schema.GroupVersionResource]string{v1alpha1.HostMappingResource: "HostMappingList"})
			var sent *unstructured.Unstructured
			client.PrependReactor("update", "hostmappings", func(a k8stesting.Action) (bool, runtime.Object, error) {
				sent = a.(k8stesting.UpdateAction).GetObject().(*unstructured.Unstructured)
				return true, sent, nil
			})
			h := NewHostMappings(nil, client.Resource(v1alpha1.HostMappingResource), logrus.New())
			h.now = func() time.Time { return now }
			if err := h.write(context.Background(), hm, tc.st); err != nil {
				t.Fatal(err)
			}
			if sent == nil {
				t.Fatal("nothing written")
			}

			// Only the identity, the version read and the status.
			if _, hasSpec := sent.Object["spec"]; hasSpec || sent.GetName() != "p" || sent.GetNamespace() != "d" || sent.GetResourceVersion() != "7" {
				t.Fatalf("sent %v", sent.Object)
			}
			status := sent.Object["status"].(map[string]any)
			for _, f := range []string{"synced", "routerHostsId", "addresses", "observedGeneration"} {
				if _, ok := status[f]; !ok {
					t.Errorf("status.%s is not written", f)
				}
			}
			if status["synced"] != tc.st.synced || status["routerHostsId"] != tc.st.id || status["observedGeneration"] != tc.st.gen ||
				status["lastSyncTime"] != now.Format(time.RFC3339) {
				t.Errorf("status %v", status)
			}
			if addrs, _, _ := unstructured.NestedStringSlice(status, "addresses"); !reflect.DeepEqual(addrs, tc.addresses) {
				t.Errorf("addresses %#v, want %#v", addrs, tc.addresses)
			}
			conds, _, _ := unstructured.NestedSlice(status, "conditions")
			got := map[string]written{}
			for _, c := range conds {
				m := c.(map[string]any)
				at, err := time.Parse(time.RFC3339, m["lastTransitionTime"].(string))
				if err != nil {
					t.Fatal(err)
				}
				got[m["type"].(string)] = written{m["status"].(string), m["reason"].(string), m["message"].(string), m["observedGeneration"].(int64), at}
			}
			if len(conds) != len(tc.want) || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("conditions %v\nwant %v", conds, tc.want)
			}
		})
	}
}

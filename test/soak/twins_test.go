package soak

import (
	"slices"
	"strconv"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	pb "github.com/router-hosts-operator/router-hosts-operator/api/routerhostsv1"
	"github.com/router-hosts-operator/router-hosts-operator/registry"
)

// TestTwinsDeleteNoClaimedName: a twin's DeleteHost of an entry whose name a twin's object
// claims is a failure, whichever twin's object it is; one of a name nobody claims any more,
// or claimed too lately for the twins to have seen it, is not; another installation's deletes
// are checkWrites' to judge.
func TestTwinsDeleteNoClaimedName(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	entry := &pb.HostEntry{Id: "e1", Hostname: "t1-0.lan", IpAddress: "10.0.20.5", Version: "3", Tags: twinTags("t1", "u1")}
	for _, tc := range []struct {
		name string
		// claim is t1's object's claim on t1-0.lan: from, and until (0: still).
		from, until time.Duration
		inst        string
		at          time.Duration
		fail        bool
	}{
		{"t2 deletes t1's claimed name", 0, 0, "t2", 30 * time.Second, true},
		{"t1 deletes its own claimed name", 0, 0, "t1", 30 * time.Second, true},
		{"t2 deletes a name t1 let go of", 0, 10 * time.Second, "t2", 30 * time.Second, false},
		{"t2 deletes a name claimed a moment ago", 29 * time.Second, 0, "t2", 30 * time.Second, false},
		{"a deletes it (not the twins' to judge here)", 0, 0, "a", 30 * time.Second, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newModel()
			o := &Object{Cluster: "t1", Namespace: "t1", Name: "web", UID: "u1", Hosts: []string{"t1-0.lan"}, IPs: []string{"10.0.20.5"}}
			m.add(o, t0.Add(tc.from))
			if tc.until > 0 {
				m.remove(o, t0.Add(tc.until))
			}
			ck := testChecker(m, t0)
			l := newLedger()
			l.saw(entry)
			l.write(&write{inst: tc.inst, at: t0.Add(tc.at), method: methodDelete, id: "e1", expected: proto.String("3"), req: &pb.DeleteHostRequest{Id: "e1"}})
			got := ck.checkTwinDeletes(l)
			if (len(got) > 0) != tc.fail || slices.ContainsFunc(got, func(f Failure) bool { return f.Invariant != InvTwinsKept }) {
				t.Fatalf("failures %v, want a %s failure: %v", got, InvTwinsKept, tc.fail)
			}
		})
	}
}

// TestTwinReport: a twin says it has a twin by its metric and its log, both.
func TestTwinReport(t *testing.T) {
	// The warning as the operator logs it: registry.Twin's message, quoted by logrus.
	warned := `time="2026-01-01T00:00:00Z" level=debug msg="sync" component=controller` + "\n" +
		`time="2026-01-01T00:00:01Z" level=warning msg=` + strconv.Quote((&registry.Twin{ClusterID: "0000000f"}).Message()) +
		` component=events reason=TwinInstallation` + "\n"
	for _, tc := range []struct {
		name    string
		entries float64
		ok      bool
		log     string
		fail    bool
	}{
		{"metric and warning", 2, true, warned, false},
		{"no metric", 0, false, warned, true},
		{"the metric says none", 0, true, warned, true},
		{"no warning", 2, true, `time="2026-01-01T00:00:00Z" level=info msg="sync"` + "\n", true},
		{"the warning's end only", 2, true, `time="2026-01-01T00:00:00Z" level=warning msg="no other writer undoes this installation's writes any more" reason=TwinInstallationGone` + "\n", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := twinReport(tc.entries, tc.ok, tc.log); (got != "") != tc.fail {
				t.Fatalf("twinReport: %q, want a problem: %v", got, tc.fail)
			}
		})
	}
}

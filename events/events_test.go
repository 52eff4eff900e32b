package events

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"

	"github.com/router-hosts-operator/router-hosts-operator/controller"
	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/plan"
	"github.com/router-hosts-operator/router-hosts-operator/plan/plantest"
	"github.com/router-hosts-operator/router-hosts-operator/registry"
)

func drain(f *record.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-f.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func TestTransitionsOnly(t *testing.T) {
	fake := record.NewFakeRecorder(100)
	r := NewWithRecorder(fake, logrus.New())
	r.SetLeading(true)
	web := endpoint.SourceRef{Version: "v1", Group: "networking.k8s.io", Kind: "Ingress", Namespace: "d", Name: "web", UID: "u1"}
	desired := []*endpoint.Endpoint{{Hostname: "web.lan", Targets: []string{"10.0.0.1"}, Sources: []endpoint.SourceRef{web}}}
	create := plan.Change{Action: plan.Create, New: &endpoint.Record{Hostname: "web.lan", IP: "10.0.0.1"}}
	r.Report(context.Background(), &controller.Report{Desired: desired, Changes: []plan.Change{create}, Results: plantest.Written(create)})
	if got := drain(fake); len(got) != 1 || !strings.HasPrefix(got[0], "Normal SyncSucceeded") {
		t.Fatalf("events after a create = %q", got)
	}
	for i := 0; i < 3; i++ {
		r.Report(context.Background(), &controller.Report{Desired: desired})
	}
	if got := drain(fake); len(got) != 0 {
		t.Fatalf("no-op syncs emitted %q", got)
	}

	// A failure that persists is reported once, and again after it clears and recurs.
	upd := plan.Change{Action: plan.Update, Old: &endpoint.Record{ID: "x", Hostname: "web.lan", IP: "10.0.0.1"}, New: &endpoint.Record{ID: "x", Hostname: "web.lan", IP: "10.0.0.2"}}
	fail := func() *controller.Report {
		changes := []plan.Change{upd}
		ce := &plan.ChangeError{Change: changes[0], Err: errors.New("unavailable")}
		return &controller.Report{Desired: desired, Changes: changes, Step: controller.StepApply, Err: errors.New("x"),
			Failed: map[string]controller.Failure{"web.lan": {Err: ce, Kind: controller.FailureUnreachable}}, Results: []plan.Result{{Err: ce}}}
	}
	for i := 0; i < 3; i++ {
		r.Report(context.Background(), fail())
	}
	if got := drain(fake); len(got) != 1 || !strings.HasPrefix(got[0], "Warning SyncFailed") {
		t.Fatalf("three failing syncs emitted %q, want one SyncFailed", got)
	}
	r.Report(context.Background(), &controller.Report{Desired: desired})
	r.Report(context.Background(), fail())
	if got := drain(fake); len(got) != 1 {
		t.Fatalf("a recurring failure emitted %q, want one event", got)
	}

	// Mark: an existing object that dropped the hostname is told; a gone one is only logged.
	mark := func(uid string) plan.Change {
		return plan.Change{Action: plan.Mark, Old: &endpoint.Record{ID: "y", Hostname: "old.lan", IP: "10.0.0.9", Tags: []string{registry.PrefixSource + uid}}, New: &endpoint.Record{}}
	}
	r.Report(context.Background(), &controller.Report{Desired: desired, Changes: []plan.Change{mark("u1"), mark("gone")}, Results: plantest.Written(mark("u1"), mark("gone"))})
	if got := drain(fake); len(got) != 1 || !strings.HasPrefix(got[0], "Normal EntryScheduledForDeletion") {
		t.Fatalf("mark events = %q", got)
	}

	// Conflicts once; a standby emits nothing.
	loser := endpoint.SourceRef{Kind: "Ingress", Namespace: "b", Name: "steal", UID: "u9"}
	conflict := &controller.Report{Desired: desired, Conflicts: []registry.Conflict{{Hostname: "web.lan", Loser: loser, Winner: "d/web"}}}
	r.Report(context.Background(), conflict)
	r.Report(context.Background(), conflict)
	if got := drain(fake); len(got) != 1 || !strings.HasPrefix(got[0], "Warning HostnameConflict") {
		t.Fatalf("conflict events = %q", got)
	}
	r.SetLeading(false)
	r.Report(context.Background(), &controller.Report{Desired: desired, Changes: []plan.Change{create}, Results: plantest.Written(create)})
	r.Warn(web, "InvalidAnnotation", "x")
	if got := drain(fake); len(got) != 0 {
		t.Fatalf("a standby emitted %q", got)
	}
}

// TestNormalEventsAreCappedPerSync: a sync that creates entries for many objects emits at most
// MaxNormalPerSync events, the next sync has a fresh allowance, and warnings are never capped.
func TestNormalEventsAreCappedPerSync(t *testing.T) {
	const n = MaxNormalPerSync + 50
	fake := record.NewFakeRecorder(2 * n)
	r := NewWithRecorder(fake, logrus.New())
	r.SetLeading(true)
	var (
		desired []*endpoint.Endpoint
		changes []plan.Change
	)
	for i := 0; i < n; i++ {
		host := fmt.Sprintf("app-%d.lan", i)
		ref := endpoint.SourceRef{Kind: "Ingress", Namespace: "d", Name: host, UID: fmt.Sprintf("u%d", i)}
		desired = append(desired, &endpoint.Endpoint{Hostname: host, Targets: []string{"10.0.0.1"}, Sources: []endpoint.SourceRef{ref}})
		changes = append(changes, plan.Change{Action: plan.Create, New: &endpoint.Record{Hostname: host, IP: "10.0.0.1"}})
	}
	r.Report(context.Background(), &controller.Report{Desired: desired, Changes: changes, Results: plantest.Written(changes...)})
	if got := len(drain(fake)); got != MaxNormalPerSync {
		t.Fatalf("a sync creating %d entries emitted %d events, want %d", n, got, MaxNormalPerSync)
	}
	r.Report(context.Background(), &controller.Report{Desired: desired, Changes: changes[:1], Results: plantest.Written(changes[:1]...)})
	if got := len(drain(fake)); got != 1 {
		t.Fatalf("the next sync emitted %d events, want 1", got)
	}
	// A plan carried by several syncs, within the budget of writes per sync, is one sync's
	// worth of events: the cap covers the run.
	half := len(changes) / 2
	r.Report(context.Background(), &controller.Report{Desired: desired, Changes: changes[:half], Results: plantest.Written(changes[:half]...), Deferred: len(changes) - half})
	r.Report(context.Background(), &controller.Report{Desired: desired, Changes: changes[half:], Results: plantest.Written(changes[half:]...)})
	if got := len(drain(fake)); got != MaxNormalPerSync {
		t.Fatalf("two syncs carrying one plan emitted %d events, want %d", got, MaxNormalPerSync)
	}
	for i := 0; i < n; i++ {
		r.Warn(desired[i].Sources[0], "InvalidAnnotation", "bad")
	}
	if got := len(drain(fake)); got != n {
		t.Fatalf("%d warnings emitted of %d", got, n)
	}
}

func TestAFailedChangeIsNeverAnnouncedAsDone(t *testing.T) {
	fake := record.NewFakeRecorder(100)
	r := NewWithRecorder(fake, logrus.New())
	r.SetLeading(true)
	web := endpoint.SourceRef{Version: "v1", Group: "networking.k8s.io", Kind: "Ingress", Namespace: "d", Name: "web", UID: "u1"}
	desired := []*endpoint.Endpoint{{Hostname: "web.lan", Targets: []string{"10.0.0.1", "10.0.0.2"}, Sources: []endpoint.SourceRef{web}}}
	changes := []plan.Change{
		{Action: plan.Create, New: &endpoint.Record{Hostname: "web.lan", IP: "10.0.0.1"}},
		{Action: plan.Create, New: &endpoint.Record{Hostname: "web.lan", IP: "10.0.0.2"}},
		{Action: plan.Delete, Old: &endpoint.Record{ID: "x", Hostname: "web.lan", IP: "10.0.0.9", Tags: []string{"k8s-operator", "source:u1"}}},
	}
	// Both the second create and the delete were refused; only the first went through.
	ce1 := &plan.ChangeError{Change: changes[1], Err: errors.New("InvalidArgument"), Refused: true}
	ce2 := &plan.ChangeError{Change: changes[2], Err: errors.New("Aborted"), Refused: true}
	r.Report(context.Background(), &controller.Report{Desired: desired, Changes: changes,
		Failed: map[string]controller.Failure{"web.lan": {Err: ce2}}, Results: []plan.Result{{Stored: &endpoint.Record{ID: "a", Hostname: "web.lan", IP: "10.0.0.1"}}, {Err: ce1}, {Err: ce2}}})
	got := drain(fake)
	var normal []string
	for _, e := range got {
		if strings.HasPrefix(e, "Normal") {
			normal = append(normal, e)
		}
	}
	if len(normal) != 1 || !strings.Contains(normal[0], "10.0.0.1") {
		t.Fatalf("normal events %q; want only the create that went through", normal)
	}
}

// TestAConflictIsLoggedWhenItStartsAndWhenItEnds: a claim that loses to another namespace's
// or cluster's hold is one Warning event and one log line however many syncs see it, and one
// log line when it ends.
func TestAConflictIsLoggedWhenItStartsAndWhenItEnds(t *testing.T) {
	fake := record.NewFakeRecorder(100)
	log, hook := logtest.NewNullLogger()
	r := NewWithRecorder(fake, log)
	r.SetLeading(true)
	steal := endpoint.SourceRef{Version: "v1", Group: "networking.k8s.io", Kind: "Ingress", Namespace: "b", Name: "steal", UID: "u2"}
	theirs := endpoint.SourceRef{Version: "v1", Group: "networking.k8s.io", Kind: "Ingress", Namespace: "c", Name: "nas", UID: "u3"}
	conflicts := []registry.Conflict{{Hostname: "pay.lan", Loser: steal, Winner: "namespace a"}, {Hostname: "nas.lan", Loser: theirs, Winner: "cluster other"}}
	for i := 0; i < 5; i++ {
		r.Report(context.Background(), &controller.Report{Conflicts: conflicts})
	}
	if got := drain(fake); len(got) != 2 {
		t.Fatalf("events over five syncs = %q, want one HostnameConflict per claim", got)
	}
	if n := len(hook.AllEntries()); n != 2 || hook.LastEntry().Level != logrus.WarnLevel {
		t.Fatalf("%d log lines over five syncs, want one warning per claim", n)
	}
	hook.Reset()
	r.Report(context.Background(), &controller.Report{Conflicts: conflicts[1:]})
	if es := hook.AllEntries(); len(es) != 1 || es[0].Data["hostname"] != "pay.lan" || es[0].Level != logrus.InfoLevel {
		t.Fatalf("log when pay.lan's conflict ended: %v", es)
	}
	for i := 0; i < 3; i++ {
		r.Report(context.Background(), &controller.Report{Conflicts: conflicts[1:]})
	}
	if n := len(hook.AllEntries()); n != 1 {
		t.Fatalf("%d log lines after three more syncs, want none more", n)
	}
}

// TestRefusalsSayWhy: an object that loses a hostname and an alias gets one HostnameConflict
// naming both; the registry's refusals come under the reasons a user acts on.
func TestRefusalsSayWhy(t *testing.T) {
	fake := record.NewFakeRecorder(100)
	r := NewWithRecorder(fake, logrus.New())
	r.SetLeading(true)
	app := endpoint.SourceRef{Version: "v1", Group: "networking.k8s.io", Kind: "Ingress", Namespace: "tenant", Name: "app", UID: "u1"}
	big := endpoint.SourceRef{Version: "v1", Group: "networking.k8s.io", Kind: "Ingress", Namespace: "tenant", Name: "big", UID: "u2"}
	r.Report(context.Background(), &controller.Report{
		Conflicts: []registry.Conflict{{Hostname: "grafana.lan", Alias: true, Loser: app, Winner: "namespace monitoring"},
			{Hostname: "pay.lan", Loser: app, Winner: "namespace shop"}},
		Problems: []registry.Problem{{Source: app, Kind: registry.ProblemNotPermitted, Reason: registry.ReasonNameNotPermitted, Message: "hostname bank.lan is not written"},
			{Source: app, Kind: registry.ProblemOutsideDomains, Reason: registry.ReasonInvalidAnnotation, Message: "alias x.example.com is outside"},
			{Source: big, Kind: registry.ProblemOverBudget, Reason: registry.ReasonOverBudget, Message: "asks for 3000 entries"}}})
	got := strings.Join(drain(fake), "\n")
	for _, want := range []string{
		"Warning HostnameConflict alias grafana.lan is held by namespace monitoring; the alias is not written, the rest is; hostname pay.lan is held by namespace shop",
		"Warning NameNotPermitted hostname bank.lan is not written",
		"Warning InvalidAnnotation alias x.example.com is outside",
		"Warning OverBudget asks for 3000 entries",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("events\n%s\nwant one with %q", got, want)
		}
	}
}

// clusterReporter is a leading Recorder whose cluster-wide events go to the RouterHostsConfig.
func clusterReporter() (*record.FakeRecorder, *logtest.Hook, *Recorder) {
	fake := record.NewFakeRecorder(100)
	log, hook := logtest.NewNullLogger()
	r := NewWithRecorder(fake, log)
	r.SetLeading(true)
	r.SetClusterObject(func() *corev1.ObjectReference {
		return &corev1.ObjectReference{APIVersion: "router-hosts.fzymgc.house/v1alpha1", Kind: "RouterHostsConfig", Name: "default"}
	})
	return fake, hook, r
}

// TestClusterWideConditionsAreToldWhenTheyStartAndEnd: a namesake on the router and a held mass
// deletion are each a warning in the log and a Warning on the RouterHostsConfig once when they
// start, nothing while they last, and one line and a Normal event when they end.
func TestClusterWideConditionsAreToldWhenTheyStartAndEnd(t *testing.T) {
	fake, hook, r := clusterReporter()
	both := &controller.Report{Cluster: "home", Namesakes: []registry.Namesake{{ID: "bbbbbbbb", Entries: 3}},
		Braked: &registry.Braked{Leaving: 15, Owned: 20, Stopped: 15, Token: "15-0badc0de"}}
	for i := 0; i < 4; i++ {
		r.Report(context.Background(), both)
		both.Namesakes[0].Entries++ // the namesake's count moves; that is no new condition
	}
	got := drain(fake)
	if len(got) != 2 || !strings.Contains(got[0], "NamesakeCluster") || !strings.Contains(got[0], "bbbbbbbb") ||
		!strings.Contains(got[1], "MassDeletionHeld") || !strings.Contains(got[1], "15-0badc0de") {
		t.Fatalf("events over four syncs: %q", got)
	}
	if es := hook.AllEntries(); len(es) != 2 || es[0].Level != logrus.WarnLevel || es[1].Level != logrus.WarnLevel {
		t.Fatalf("log over four syncs: %v", es)
	}
	hook.Reset()
	for i := 0; i < 3; i++ {
		r.Report(context.Background(), &controller.Report{Cluster: "home"})
	}
	got = drain(fake)
	if len(got) != 2 || !strings.HasPrefix(got[0], "Normal NamesakeClusterGone") || !strings.HasPrefix(got[1], "Normal MassDeletionReleased") {
		t.Fatalf("events when both ended: %q", got)
	}
	if es := hook.AllEntries(); len(es) != 2 {
		t.Fatalf("log when both ended: %v", es)
	}
}

// TestTwinsAndIdentitiesAreToldWithTheirFix: a twin and an identity taken up are each told
// once while they last (the twin's counts moving is no new condition), with the fix, and once
// more when they end; a namesake whose entries name objects here is told to pin an identity,
// never to rename, and one whose entries do not, to rename.
func TestTwinsAndIdentitiesAreToldWithTheirFix(t *testing.T) {
	fake, _, r := clusterReporter()
	rep := &controller.Report{Cluster: "home", ClusterID: "aaaaaaaa", Twin: &registry.Twin{Disputed: 1, ClusterID: "aaaaaaaa"},
		Former: []registry.Namesake{{ID: "cccccccc", Entries: 4, Kin: 4}}}
	for i := 0; i < 3; i++ {
		r.Report(context.Background(), rep)
		rep.Twin.Disputed++
	}
	got := drain(fake)
	if len(got) != 2 || !strings.Contains(got[0], "TwinInstallation") || !strings.Contains(got[0], "Pin --cluster-id") ||
		!strings.Contains(got[1], "IdentityChanged") || !strings.Contains(got[1], "--cluster-id=cccccccc") || !strings.Contains(got[1], "cluster-id aaaaaaaa") {
		t.Fatalf("events over three syncs: %q", got)
	}
	r.Report(context.Background(), &controller.Report{Cluster: "home", ClusterID: "aaaaaaaa"})
	got = drain(fake)
	if len(got) != 2 || !strings.HasPrefix(got[0], "Normal TwinInstallationGone") || !strings.HasPrefix(got[1], "Normal IdentityTakenUp") {
		t.Fatalf("events when both ended: %q", got)
	}
	for _, tc := range []struct {
		kin          int
		want, unwant string
	}{
		{kin: 0, want: "a name of its own", unwant: "pin --cluster-id"},
		{kin: 2, want: "pin --cluster-id", unwant: "a name of its own"},
	} {
		_, hook, r := clusterReporter()
		r.Report(context.Background(), &controller.Report{Cluster: "home", Namesakes: []registry.Namesake{{ID: "bbbbbbbb", Entries: 2, Kin: tc.kin}}})
		es := hook.AllEntries()
		if len(es) != 1 || !strings.Contains(es[0].Message, tc.want) || strings.Contains(es[0].Message, tc.unwant) {
			t.Fatalf("a namesake with %d entries naming objects here: %v", tc.kin, es)
		}
	}
}

// TestASilentClusterIsToldWithItsReleaseCommand: a silent cluster is one Warning while it lasts
// (its entry count moving is no new condition) naming it, when it was last seen and its release
// command, and one log line per silent cluster with its entry count; once more when it ends.
func TestASilentClusterIsToldWithItsReleaseCommand(t *testing.T) {
	fake, hook, r := clusterReporter()
	last := time.Date(2026, 11, 20, 8, 0, 0, 0, time.UTC)
	rep := &controller.Report{Cluster: "home", Silent: []registry.SilentCluster{{Cluster: "lab", ClusterID: "bbbbbbbb", Entries: 12, LastSeen: last}}}
	for i := 0; i < 3; i++ {
		r.Report(context.Background(), rep)
		rep.Silent[0].Entries++
	}
	got := drain(fake)
	if len(got) != 1 || !strings.Contains(got[0], "Warning SilentCluster") || !strings.Contains(got[0], "2026-11-20T08:00:00Z") ||
		!strings.Contains(got[0], "router-hosts-operator release --cluster-name=lab --cluster-id=bbbbbbbb") {
		t.Fatalf("events over three syncs: %q", got)
	}
	es := hook.AllEntries()
	if len(es) != 1 || es[0].Data["cluster"] != "lab" || es[0].Data["cluster_id"] != "bbbbbbbb" || es[0].Data["entries"] != 12 ||
		es[0].Data["last_seen"] != "2026-11-20T08:00:00Z" || es[0].Data["release"] != "router-hosts-operator release --cluster-name=lab --cluster-id=bbbbbbbb" {
		t.Fatalf("log over three syncs: %v", es)
	}
	r.Report(context.Background(), &controller.Report{Cluster: "home"})
	if got := drain(fake); len(got) != 1 || !strings.HasPrefix(got[0], "Normal SilentClusterGone") {
		t.Fatalf("events when it ended: %q", got)
	}
}

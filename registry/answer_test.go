package registry

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/plan"
)

// TestTheAnswerStage: a release probe the operator's tags carry, on an entry of this cluster
// that no change of the sync writes, is answered by a write of its own that takes it off, after
// the changes it was handed (never in their array); an entry a change writes anyway answers by
// that change; a probe among a user's own tags is not the operator's. Every probe's own write
// is among the answers, which a dry run sends.
func TestTheAnswerStage(t *testing.T) {
	probe := PrefixReleaseProbe + t0.Format(time.RFC3339)
	probed := owned("p1", "web.lan", "10.0.0.1", PrefixNamespace+"a", PrefixSource+"u1", probe)
	plain := owned("e2", "db.lan", "10.0.0.2", PrefixNamespace+"a", PrefixSource+"u2")
	adopted := endpoint.Record{ID: "h1", Hostname: "nas.lan", IP: "10.0.0.4", Version: "1",
		Tags: []string{probe, "manual", TagPreExisting, TagOwner, PrefixCluster + "home", PrefixNamespace + "a", PrefixSource + "u4", PrefixOriginalIP + "10.0.0.4"}}
	moved := probed
	moved.IP = "10.0.0.9"
	for _, tc := range []struct {
		name    string
		records []endpoint.Record
		changes []plan.Change
		sent    []string
		answers []string
	}{
		{name: "no probe", records: []endpoint.Record{plain},
			changes: []plan.Change{{Action: plan.Mark, Old: &plain, New: &plain}}, sent: []string{"mark db.lan e2"}},
		{name: "a probed entry nothing writes", records: []endpoint.Record{probed, plain},
			changes: []plan.Change{{Action: plan.Mark, Old: &plain, New: &plain}}, sent: []string{"mark db.lan e2", "answer web.lan p1"},
			answers: []string{"answer web.lan p1"}},
		{name: "whatever else is held", records: []endpoint.Record{probed, plain}, sent: []string{"answer web.lan p1"}, answers: []string{"answer web.lan p1"}},
		{name: "a probed entry a change writes anyway", records: []endpoint.Record{probed, plain},
			changes: []plan.Change{{Action: plan.Update, Old: &probed, New: &moved}}, sent: []string{"update web.lan p1"}, answers: []string{"answer web.lan p1"}},
		{name: "a probe among a user's own tags", records: []endpoint.Record{adopted}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRegWith(t, func(*Config) {})
			handed := append(make([]plan.Change, 0, len(tc.changes)+1), tc.changes...)
			v := r.answer(changesAt(r, tc.records, nil, nil), handed)
			if got := wordsOfChanged(v); !reflect.DeepEqual(got, changeWords{sent: tc.sent}) {
				t.Errorf("sent %q, held %q; want %q sent", got.sent, got.held, tc.sent)
			}
			var answers []string
			for i := range v.answers {
				answers = append(answers, changeText(&v.answers[i]))
			}
			if !reflect.DeepEqual(answers, tc.answers) {
				t.Errorf("answers %q, want %q", answers, tc.answers)
			}
			if spare := handed[:len(handed)+1][len(handed)]; spare.Action != "" {
				t.Errorf("wrote %s past the changes it was handed", changeText(&spare))
			}
			for _, c := range slices.Concat(v.changes, v.answers) {
				if c.Action == ActionAnswer && (len(c.New.Tags) != len(c.Old.Tags)-1 || strings.Contains(strings.Join(c.New.Tags, " "), PrefixReleaseProbe)) {
					t.Errorf("the answer writes %q on %q", c.New.Tags, c.Old.Tags)
				}
			}
		})
	}
}

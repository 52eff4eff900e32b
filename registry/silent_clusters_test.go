package registry

import (
	"testing"
	"time"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/plan"
)

// TestTheSilentClustersStage: another installation is reported silent once its newest
// heartbeat is older than four of the renewal periods it carries (this installation's
// threshold for one that carries none); an installation with no heartbeat never is; the
// changes pass as they came.
func TestTheSilentClustersStage(t *testing.T) {
	theirs := func(id string, age time.Duration, every string) endpoint.Record {
		tags := []string{TagOwner, "cluster:lab", "source:u-" + id, PrefixAlive + t0.Add(-age).UTC().Format(time.RFC3339)}
		if every != "" {
			tags = append(tags, PrefixAliveEvery+every)
		}
		return endpoint.Record{ID: id, Hostname: id + ".lan", IP: "10.0.0.9", Version: "1", Tags: tags}
	}
	plain := endpoint.Record{ID: "p1", Hostname: "p.lan", IP: "10.0.0.8", Version: "1", Tags: []string{TagOwner, "cluster:quiet"}}
	for _, tc := range []struct {
		name    string
		after   time.Duration
		records []endpoint.Record
		want    int
	}{
		{name: "a fresh heartbeat", after: 4 * time.Hour, records: []endpoint.Record{theirs("f1", time.Hour, "3600")}},
		{name: "overdue by its own period", after: 4 * time.Hour, records: []endpoint.Record{theirs("o1", 5*time.Hour, "3600")}, want: 1},
		{name: "overdue by this threshold, not by its own longer period", after: 4 * time.Hour,
			records: []endpoint.Record{theirs("l1", 5*time.Hour, "7200")}},
		{name: "none carried: this threshold", after: 4 * time.Hour, records: []endpoint.Record{theirs("n1", 5*time.Hour, "")}, want: 1},
		{name: "no heartbeat at all", after: 4 * time.Hour, records: []endpoint.Record{plain}},
		{name: "heartbeats off here", records: []endpoint.Record{theirs("o1", 5*time.Hour, "3600")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRegWith(t, func(c *Config) { c.SilentClusterAfter = tc.after })
			in := changesAt(r, tc.records, nil, nil)
			in.others = in.st.beats.others
			changes := []plan.Change{{Action: plan.Create, New: &endpoint.Record{Hostname: "x.lan", IP: "10.0.0.1"}}}
			v := r.silentClusters(in, changes)
			if len(v.silent) != tc.want {
				t.Errorf("silent %+v, want %d", v.silent, tc.want)
			}
			if len(v.changes) != 1 || len(v.held) != 0 {
				t.Errorf("changes %v held %v, want the one change sent on", v.changes, v.held)
			}
		})
	}
}

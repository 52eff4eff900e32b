package plantest

import (
	"reflect"
	"testing"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/plan"
)

func TestWritten(t *testing.T) {
	create := plan.Change{Action: plan.Create, New: &endpoint.Record{ID: "1", Hostname: "a.lan", IP: "10.0.0.1"}}
	del := plan.Change{Action: plan.Delete, Old: &endpoint.Record{ID: "2", Hostname: "b.lan", IP: "10.0.0.2"}}
	got := Written(create, del)
	if len(got) != 2 || got[0].Err != nil || got[1].Err != nil {
		t.Fatalf("results %+v, want two that went through", got)
	}
	if got[0].Stored == nil || got[0].Stored == create.New || !reflect.DeepEqual(*got[0].Stored, *create.New) {
		t.Fatalf("create stored %+v, want a copy of %+v", got[0].Stored, create.New)
	}
	if got[1].Stored != nil {
		t.Fatalf("delete stored %+v, want nothing", got[1].Stored)
	}
}

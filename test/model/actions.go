package model

import (
	"errors"
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	pb "github.com/router-hosts-operator/router-hosts-operator/api/routerhostsv1"
	"github.com/router-hosts-operator/router-hosts-operator/controller"
	"github.com/router-hosts-operator/router-hosts-operator/registry"
)

// Action is one party's move, as plain data: a shrunk run replays what is left of its
// actions, and one whose object or entry is gone does nothing.
type Action struct {
	Kind  string
	Party string
	I, J  int
	D     time.Duration
}

// GoString prints an action as the Go literal a regression test lists.
func (a Action) GoString() string {
	return fmt.Sprintf("{Kind: %q, Party: %q, I: %d, J: %d, D: %d}", a.Kind, a.Party, a.I, a.J, a.D)
}

// move is one kind of action: how often it is drawn, how it is drawn, and what it does.
type move struct {
	kind   string
	weight int
	draw   func(w *World, r *rand.Rand) Action
	play   func(w *World, a Action) (party string, err error)
}

// moves is every party's repertoire: the installations' syncs and restarts, the clock, the
// objects' owners (tenants, external-dns), and the person at the router.
var moves = []move{
	{"sync", 40, drawInstallation("sync"), playSync},
	{"tick", 14, func(w *World, r *rand.Rand) Action {
		return Action{Kind: "tick", D: []time.Duration{time.Second, 5 * time.Second, 20 * time.Second, time.Minute, 3 * time.Minute}[r.Intn(5)]}
	}, func(w *World, a Action) (string, error) { w.clock.Step(a.D); return "clock", nil }},
	{"create", 9, func(w *World, r *rand.Rand) Action {
		return Action{Kind: "create", Party: w.clusters[r.Intn(len(w.clusters))].key, I: r.Int(), J: r.Int()}
	}, playCreate},
	{"delete", 6, drawObject("delete"), playObject(func(w *World, c *cluster, i int, _ Action) {
		c.objects = slices.Delete(c.objects, i, i+1)
	})},
	{"address", 5, drawObject("address"), playObject(func(w *World, c *cluster, i int, a Action) {
		o := *c.objects[i]
		o.ips = pickSome(rand.New(rand.NewSource(int64(a.J))), ips, 2)
		c.objects[i] = &o
	})},
	{"hostname", 4, drawObject("hostname"), playObject(func(w *World, c *cluster, i int, a Action) {
		if c.webhook {
			return // a record's hostname is its identity: a new one is another record
		}
		o := *c.objects[i]
		o.hosts = pickSome(rand.New(rand.NewSource(int64(a.J))), c.hosts, 2)
		c.objects[i] = &o
	})},
	{"flip", 0, nil, playObject(func(w *World, c *cluster, i int, a Action) {
		// An object with no grace period whose host flips between two names (a flap).
		o := *c.objects[i]
		o.hosts, o.grace = []string{c.hosts[a.J%2]}, ptr(time.Duration(0))
		c.objects[i] = &o
	})},
	{"share", 3, drawObject("share"), playObject(func(w *World, c *cluster, i int, _ Action) {
		o := *c.objects[i]
		o.shared = !o.shared
		c.objects[i] = &o
	})},
	{"hand-add", 3, func(w *World, r *rand.Rand) Action { return Action{Kind: "hand-add", I: r.Int(), J: r.Int()} }, playHandAdd},
	{"hand-edit", 3, func(w *World, r *rand.Rand) Action { return Action{Kind: "hand-edit", I: r.Int(), J: r.Int()} }, playHandEdit},
	{"hand-churn", 2, func(w *World, r *rand.Rand) Action { return Action{Kind: "hand-churn", I: r.Int()} }, playHandChurn},
	{"hand-delete", 1, func(w *World, r *rand.Rand) Action { return Action{Kind: "hand-delete", I: r.Int()} }, playHandDelete},
	{"restart", 2, drawInstallation("restart"), playLifecycle(func(w *World, in *installation, _ Action) error {
		in.up = true
		return w.startInstallation(in)
	})},
	{"stop", 1, drawInstallation("stop"), playLifecycle(func(w *World, in *installation, _ Action) error {
		in.up = false
		return nil
	})},
	{"identity", 1, func(w *World, r *rand.Rand) Action { return Action{Kind: "identity", Party: "a"} }, playLifecycle(func(w *World, in *installation, _ Action) error {
		// The Lease renamed: a new identity, an operator started anew.
		in.id = fmt.Sprintf("a%07d", len(in.ids)+1)
		in.ids = append(in.ids, in.id)
		return w.startInstallation(in)
	})},
	{"rename", 1, func(w *World, r *rand.Rand) Action { return Action{Kind: "rename", Party: "c"} }, func(w *World, a Action) (string, error) {
		// As docs/ownership.md advises, the operator syncs once before the rename, so that
		// an old name is never left with no entry naming an object here (a stopped one is
		// started under its old name first).
		in := w.installation(a.Party)
		if !in.up {
			if err := w.startInstallation(in); err != nil {
				return "", err
			}
		}
		if _, err := playSync(w, a); err != nil {
			return "", err
		}
		in.clusterName = map[string]string{"lab": "lab2", "lab2": "lab"}[in.clusterName]
		if !slices.Contains(in.names, in.clusterName) {
			in.names = append(in.names, in.clusterName)
		}
		return in.name, w.startInstallation(in)
	}},
}

func drawInstallation(kind string) func(w *World, r *rand.Rand) Action {
	return func(w *World, r *rand.Rand) Action {
		return Action{Kind: kind, Party: w.insts[r.Intn(len(w.insts))].name}
	}
}

func drawObject(kind string) func(w *World, r *rand.Rand) Action {
	return func(w *World, r *rand.Rand) Action {
		return Action{Kind: kind, Party: w.clusters[r.Intn(len(w.clusters))].key, I: r.Int(), J: r.Int()}
	}
}

// playObject changes the I-th object (modulo their number) of the cluster a names.
func playObject(f func(w *World, c *cluster, i int, a Action)) func(w *World, a Action) (string, error) {
	return func(w *World, a Action) (string, error) {
		c := w.clusterOf(a.Party)
		if c == nil || len(c.objects) == 0 {
			return "", nil
		}
		f(w, c, a.I%len(c.objects), a)
		return "objects", nil
	}
}

func playLifecycle(f func(w *World, in *installation, a Action) error) func(w *World, a Action) (string, error) {
	return func(w *World, a Action) (string, error) {
		in := w.installation(a.Party)
		if in == nil {
			return "", nil
		}
		return "lifecycle", f(w, in, a)
	}
}

func playSync(w *World, a Action) (string, error) {
	in := w.installation(a.Party)
	if in == nil || !in.up {
		return "", nil
	}
	w.prove(in, w.entries())
	rep, err := in.ctl.SyncOnce(w.ctx)
	var refused *controller.RefusedError
	if err != nil && !errors.As(err, &refused) {
		return in.name, fmt.Errorf("sync of %s: %w", in.name, err)
	}
	in.last, in.lastSync = rep, w.clock.Now()
	if in.firstRead.IsZero() {
		in.firstRead = in.lastSync
	}
	in.syncs++
	return in.name, nil
}

func playCreate(w *World, a Action) (string, error) {
	c := w.clusterOf(a.Party)
	if c == nil || len(c.objects) >= 6 {
		return "", nil
	}
	r := rand.New(rand.NewSource(int64(a.I)))
	w.nextUID++
	o := &object{uid: fmt.Sprintf("uid-%s-%d", strings.ToLower(c.key), w.nextUID), ns: c.namespaces[r.Intn(len(c.namespaces))],
		name: fmt.Sprintf("obj%d", w.nextUID), hosts: pickSome(r, c.hosts, 2), ips: pickSome(r, ips, 2), shared: r.Intn(3) == 0, created: w.clock.Now()}
	if c.webhook {
		o.hosts = o.hosts[:1]
		if slices.ContainsFunc(c.objects, func(p *object) bool { return p.hosts[0] == o.hosts[0] }) {
			return "", nil
		}
	}
	switch r.Intn(4) {
	case 1:
		o.grace = ptr(time.Duration(0))
	case 2:
		o.grace = ptr(20 * time.Second)
	case 3:
		o.grace = ptr(2 * time.Minute)
	}
	c.objects = append(c.objects, o)
	return "objects", nil
}

// personTags are what a person writes on entries by hand: plain labels, a tag with a space,
// one that looks like the operator's consent, one like a cluster's name.
var personTags = []string{"manual", "kind:printer", "has space", "shared:true", "cluster:home", "no-adopt"}

func playHandAdd(w *World, a Action) (string, error) {
	r := rand.New(rand.NewSource(int64(a.I)))
	req := &pb.AddHostRequest{IpAddress: ips[r.Intn(len(ips))], Hostname: hosts[r.Intn(len(hosts))], Tags: pickSome(r, personTags, 2)}
	if r.Intn(2) == 0 {
		req.Comment = proto.String("by hand")
	}
	_, _ = w.svc.Store().Add(req) // a duplicate is refused, as the person would be
	return person, nil
}

func playHandEdit(w *World, a Action) (string, error) {
	es := w.entries()
	ids := sortedIDs(es)
	if len(ids) == 0 {
		return "", nil
	}
	e := es[ids[a.I%len(ids)]]
	r := rand.New(rand.NewSource(int64(a.J)))
	req := &pb.UpdateHostRequest{Id: e.GetId(), ExpectedVersion: proto.String(e.GetVersion())}
	if r.Intn(2) == 0 {
		req.IpAddress = proto.String(ips[r.Intn(len(ips))])
	} else {
		// On an operator's entry the person writes no tag of the operator's (a cluster's name,
		// consent): whoever can write to the router can forge ownership, which no rule can
		// tell from the operator's own writing (docs/ownership.md, "Ownership").
		tag := personTags[r.Intn(len(personTags))]
		if slices.Contains(e.GetTags(), registry.TagOwner) && registry.Reserved(tag) {
			tag = "manual"
		}
		req.Tags = &pb.TagsUpdate{Values: append(slices.Clone(e.GetTags()), tag)}
	}
	_, _ = w.svc.Store().Update(req)
	return person, nil
}

// churn is how many events a hand-churn writes on its entry.
const churn = 8

// playHandChurn is a person's script that rewrites one entry, any writer's, as it is, again
// and again: every write is an event of its log, so hand-made entries and every cluster's
// grow long histories, which only their own installation may compact (O10).
func playHandChurn(w *World, a Action) (string, error) {
	es := w.entries()
	ids := sortedIDs(es)
	if len(ids) == 0 {
		return "", nil
	}
	id := ids[a.I%len(ids)]
	for range churn {
		e, err := w.svc.Store().Get(id)
		if err != nil {
			break
		}
		if _, err := w.svc.Store().Update(&pb.UpdateHostRequest{Id: id, ExpectedVersion: proto.String(e.GetVersion()), Tags: &pb.TagsUpdate{Values: e.GetTags()}}); err != nil {
			break
		}
	}
	return person, nil
}

func playHandDelete(w *World, a Action) (string, error) {
	es := w.entries()
	ids := sortedIDs(es)
	if len(ids) == 0 {
		return "", nil
	}
	_ = w.svc.Store().Delete(ids[a.I%len(ids)], nil)
	return person, nil
}

func pickSome(r *rand.Rand, pool []string, most int) []string {
	n := 1 + r.Intn(most)
	out := make([]string, 0, n)
	for _, i := range r.Perm(len(pool))[:n] {
		out = append(out, pool[i])
	}
	slices.Sort(out)
	return out
}

func ptr[T any](v T) *T { return &v }

// Package preview is the plan command's answer: what a sync of the cluster as manifests would
// leave it does to the router, one line per change grouped by the object it concerns, the
// refusals and holds the manifests cause, the brake's verdict and a summary. It compares two
// decisions the registry made (controller.Inspect), the cluster as it is and as the manifests
// make it, and words them as explain does; it decides nothing itself.
package preview

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/explain"
	"github.com/router-hosts-operator/router-hosts-operator/plan"
	"github.com/router-hosts-operator/router-hosts-operator/registry"
	"github.com/router-hosts-operator/router-hosts-operator/source"
)

// Version names the JSON shape (docs/plan.md); a change that breaks a reader gets a new one.
const Version = "router-hosts-operator/plan/v1"

// The signs that start a line.
const (
	SignCreate  = "+"
	SignUpdate  = "~"
	SignDelete  = "-"
	SignRefused = "!"
	SignUnknown = "?"
)

// Input is the two decisions and what the manifests did to the cluster.
type Input struct {
	// Before is the decision from the cluster as it is; nil offline, where the manifests are
	// the whole cluster and every refusal is theirs.
	Before *explain.Input
	// After is the decision from the cluster as the manifests make it.
	After *explain.Input
	// Manifest are the objects the manifests add, replace or prune.
	Manifest []Touched
	// Unread are the manifests' objects of kinds the operator does not read as configured.
	Unread []Touched
	// Config are the changes the manifests make to the RouterHostsConfig's spec.
	Config []ConfigChange
	// Notes are said as they are (how the router was read, say).
	Notes []string
}

// Touched is an object of the manifests.
type Touched struct {
	Object explain.Object `json:"object"`
	// Change is added, replaced or pruned.
	Change string `json:"change,omitempty"`
	Origin string `json:"origin,omitempty"`
	// StatusUnknown: the object's status is not in the manifests and no live object lends it.
	StatusUnknown bool `json:"statusUnknown,omitempty"`
}

// ConfigChange is one field of the RouterHostsConfig's spec the manifests change.
type ConfigChange struct {
	Field string `json:"field"`
	Old   string `json:"old"`
	New   string `json:"new"`
}

// Plan is the answer.
type Plan struct {
	Version string  `json:"version"`
	Groups  []Group `json:"groups"`
	// Config are the RouterHostsConfig's changed fields; what they do is among the groups.
	Config []ConfigChange `json:"config,omitempty"`
	// Brake is the brake's verdict: the deletions it would hold and how to confirm them.
	Brake   *BrakeVerdict `json:"brake,omitempty"`
	Unread  []Touched     `json:"unread,omitempty"`
	Notes   []string      `json:"notes,omitempty"`
	Summary Summary       `json:"summary"`
}

// Group is the lines of one object, or of entries no object read here names.
type Group struct {
	// Object is nil for the lines no object of this cluster concerns (heartbeats, entries of
	// objects gone before the plan).
	Object *explain.Object `json:"object,omitempty"`
	// Change is what the manifests do to the object: added, replaced, pruned; empty for an
	// object they leave as it is.
	Change string `json:"change,omitempty"`
	Origin string `json:"origin,omitempty"`
	Lines  []Line `json:"lines"`
}

// Line is one change, refusal, hold or unknown.
type Line struct {
	Sign string `json:"sign"`
	// Action is the write (create, update, adopt, mark, unmark, delete, release), or refused,
	// held or unknown.
	Action   string   `json:"action"`
	Hostname string   `json:"hostname"`
	Address  string   `json:"address,omitempty"`
	Aliases  []string `json:"aliases,omitempty"`
	// Old is what an update or a deletion changes from: the entry's address and aliases.
	OldAddress string   `json:"oldAddress,omitempty"`
	OldAliases []string `json:"oldAliases,omitempty"`
	// ID is the entry a write changes.
	ID string `json:"id,omitempty"`
	// Due is when a marked entry is deleted, after its grace period.
	Due *time.Time `json:"due,omitempty"`
	// A refusal's or hold's reason code (docs/explain.md), who holds the name and the fix.
	Code    string `json:"code,omitempty"`
	Holder  string `json:"holder,omitempty"`
	Message string `json:"message,omitempty"`
	Fix     string `json:"fix,omitempty"`
}

// BrakeVerdict is the brake's verdict on the plan.
type BrakeVerdict struct {
	Message string `json:"message"`
	Token   string `json:"token"`
	// Held is how many deletions it holds.
	Held int `json:"held"`
}

// Summary counts the plan.
type Summary struct {
	Creates  int `json:"creates"`
	Updates  int `json:"updates"`
	Deletes  int `json:"deletes"`
	Refusals int `json:"refusals"`
	Unknown  int `json:"unknown"`
	// Existing are the refusals that hold today, which the manifests neither cause nor touch:
	// counted, not shown.
	Existing int `json:"existing"`
	Unread   int `json:"unread"`
	// Unchanged are the manifests' objects the router already holds as they want: counted,
	// not shown.
	Unchanged int `json:"unchanged"`
	// Heartbeats are the renewals of this installation's heartbeat the sync would write: its
	// own, on its schedule, whatever the manifests say (a snapshot's age shows as one); counted,
	// not shown, and no change of the plan's.
	Heartbeats int `json:"heartbeats"`
}

// Exit is the command's exit status: 0 for no change, 1 for changes that all go through, 3
// when a line is refused or held (2 is an error, which is not a plan).
func (p *Plan) Exit() int {
	switch s := p.Summary; {
	case s.Refusals > 0 || p.Brake != nil:
		return 3
	case s.Creates+s.Updates+s.Deletes+s.Unknown > 0:
		return 1
	}
	return 0
}

// refusalKey is one refusal's identity, to tell a new one from one that holds today.
type refusalKey struct{ uid, code, name string }

// Make is the plan of in.
func Make(in *Input) *Plan {
	p := &Plan{Version: Version, Config: in.Config, Unread: in.Unread, Notes: in.Notes}
	p.Summary.Unread = len(in.Unread)
	b := newBuilder(in)
	b.changes()
	b.holds()
	b.refusals()
	p.Groups = b.groups()
	if br := in.After.Report.Braked; br != nil {
		p.Brake = &BrakeVerdict{Message: br.Message(), Token: br.Token}
		for _, h := range in.After.Report.Held {
			if h.Reason == registry.ReasonMassDeletionHeld {
				p.Brake.Held++
			}
		}
	}
	for _, g := range p.Groups {
		for _, l := range g.Lines {
			switch l.Sign {
			case SignCreate:
				p.Summary.Creates++
			case SignUpdate:
				p.Summary.Updates++
			case SignDelete:
				p.Summary.Deletes++
			case SignRefused:
				p.Summary.Refusals++
			case SignUnknown:
				p.Summary.Unknown++
			}
		}
	}
	p.Summary.Existing, p.Summary.Unchanged, p.Summary.Heartbeats = b.existing, b.unchanged, b.heartbeats
	return p
}

// builder gathers the lines by object.
type builder struct {
	in      *Input
	refs    map[string]endpoint.SourceRef
	touched map[string]Touched // by UID
	lines   map[string][]Line  // by UID; "" for no object
	// existing counts the refusals of today that the manifests do not touch, unchanged the
	// manifests' objects with no line, heartbeats the renewals of the heartbeat.
	existing, unchanged, heartbeats int
	byHost                          map[string]*endpoint.Endpoint
}

func newBuilder(in *Input) *builder {
	b := &builder{in: in, refs: map[string]endpoint.SourceRef{}, touched: map[string]Touched{}, lines: map[string][]Line{}}
	for _, i := range []*explain.Input{in.Before, in.After} {
		if i == nil {
			continue
		}
		for uid, o := range i.Report.Objects {
			for _, ep := range o.Endpoints {
				if ref, ok := ep.Ref(uid); ok {
					b.refs[uid] = ref
				}
			}
		}
	}
	for _, t := range in.Manifest {
		b.touched[t.Object.UID] = t
	}
	return b
}

// objectsOf are the UIDs of the objects a change concerns: the winners of its hostname for a
// write that keeps the name, the objects its entry names for one that lets it go.
func (b *builder) objectsOf(c *plan.Change) []string {
	if c.New != nil && c.Action != plan.Mark && c.Action != plan.Release {
		if ep := b.desired(c.New.Hostname); ep != nil {
			var uids []string
			for _, s := range ep.Sources {
				uids = append(uids, s.UID)
			}
			return uids
		}
	}
	return registry.SourceUIDs(c.Old)
}

func (b *builder) desired(host string) *endpoint.Endpoint {
	if b.byHost == nil {
		b.byHost = make(map[string]*endpoint.Endpoint, len(b.in.After.Report.Desired))
		for _, ep := range b.in.After.Report.Desired {
			b.byHost[ep.Hostname] = ep
		}
	}
	return b.byHost[host]
}

// add puts l under each object of uids that is known, else under no object.
func (b *builder) add(uids []string, l Line) {
	placed := false
	for _, uid := range uids {
		if _, ok := b.refs[uid]; ok {
			b.lines[uid] = append(b.lines[uid], l)
			placed = true
		} else if _, ok := b.touched[uid]; ok {
			b.lines[uid] = append(b.lines[uid], l)
			placed = true
		}
	}
	if !placed {
		b.lines[""] = append(b.lines[""], l)
	}
}

// changes are the writes the sync would send.
func (b *builder) changes() {
	rep := b.in.After.Report
	for i := range rep.Changes {
		c := &rep.Changes[i]
		if c.Action == plan.Update && registry.HeartbeatOnly(c.Old, c.New) {
			b.heartbeats++
			continue
		}
		b.add(b.objectsOf(c), lineOf(c))
	}
}

// lineOf words one write.
func lineOf(c *plan.Change) Line {
	l := Line{Action: string(c.Action), Hostname: c.Hostname()}
	if c.New != nil {
		l.Address, l.Aliases = c.New.IP, c.New.Aliases
	}
	if c.Old != nil {
		l.ID, l.OldAddress, l.OldAliases = c.Old.ID, c.Old.IP, c.Old.Aliases
	}
	switch c.Action {
	case plan.Create:
		l.Sign = SignCreate
	case plan.Mark:
		l.Sign = SignDelete
		l.Address, l.Aliases = "", nil
		if !c.Due.IsZero() {
			due := c.Due.UTC()
			l.Due = &due
		}
		l.Message = "marked for deletion; deleted after its grace period"
	case plan.Delete:
		l.Sign = SignDelete
		l.Address, l.Aliases = "", nil
		if c.Duplicate {
			l.Message = "a duplicate of another entry of the name"
		}
	case plan.Release:
		l.Sign = SignDelete
		l.Message = "given back as it was before it was adopted"
	case plan.Adopt:
		l.Sign = SignUpdate
		l.Message = "adopted: a hand-made entry taken up"
	case plan.Unmark:
		l.Sign = SignUpdate
		l.Message = "its deletion mark lifted: an object wants it again"
	default:
		l.Sign = SignUpdate
		if c.Old != nil && c.New != nil && c.Old.IP == c.New.IP && slices.Equal(c.Old.Aliases, c.New.Aliases) {
			l.Message = "tags: " + tagDiff(c.Old.Tags, c.New.Tags)
		}
	}
	return l
}

// tagDiff says which tags an update adds and removes.
func tagDiff(old, cur []string) string {
	var parts []string
	for _, t := range cur {
		if !slices.Contains(old, t) {
			parts = append(parts, "+"+t)
		}
	}
	for _, t := range old {
		if !slices.Contains(cur, t) {
			parts = append(parts, "-"+t)
		}
	}
	return strings.Join(parts, " ")
}

// holds are the changes the registry's change stages hold back. A deletion that waits out a
// grace period begun before is no change of the plan and is left out; every other hold is.
func (b *builder) holds() {
	for _, h := range b.in.After.Report.Held {
		if h.Reason == registry.ReasonGracePeriod {
			continue
		}
		l := lineOf(&h.Change)
		l.Sign, l.Action, l.Code = SignRefused, "held", h.Reason
		l.Message = "held: " + string(h.Change.Action) + " " + h.Change.Hostname()
		l.Fix = explain.HeldFix(&h)
		b.add(b.objectsOf(&h.Change), l)
	}
}

// refusals are what became of each object's claims other than a write or nothing to do: a
// name held by another, outside the filter, refused by the tenancy, an input problem. The ones
// of objects the manifests leave as they are and that hold today too are counted, not shown.
// A new object whose address only its status would give (a load balancer's) has it unknown.
func (b *builder) refusals() {
	before := map[refusalKey]bool{}
	if b.in.Before != nil {
		for _, r := range explain.ClaimOutcomes(b.in.Before) {
			before[refusalKey{r.UID, r.Outcome.Code, r.Name}] = true
		}
	}
	seen := map[refusalKey]bool{}
	for _, r := range explain.ClaimOutcomes(b.in.After) {
		k := refusalKey{r.UID, r.Outcome.Code, r.Name}
		if seen[k] {
			continue
		}
		seen[k] = true
		t, touched := b.touched[r.UID]
		if !touched && before[k] {
			b.existing++
			continue
		}
		if touched && t.StatusUnknown && r.Outcome.Code == source.ReasonNoAddress {
			for _, ep := range b.in.After.Report.Objects[r.UID].Endpoints {
				b.add([]string{r.UID}, Line{Sign: SignUnknown, Action: "unknown", Hostname: ep.Hostname, Code: r.Outcome.Code,
					Message: ep.Hostname + ": address unknown: it comes from the object's status (a load balancer's address), which the manifests lack; the sync after it is assigned writes it"})
			}
			continue
		}
		o := r.Outcome
		b.add([]string{r.UID}, Line{Sign: SignRefused, Action: "refused", Hostname: r.Name, Code: o.Code, Holder: o.Holder, Message: o.Message, Fix: o.Fix})
	}
}

// groups orders the groups: the manifests' objects first in their order of kind, namespace and
// name, then the other objects, then the lines of no object. An object the manifests add that
// claims names has a group even with no line, so that a reader sees it is already as it wants;
// the others with no line are counted.
func (b *builder) groups() []Group {
	var out []Group
	uids := map[string]bool{}
	for uid := range b.lines {
		if uid != "" {
			uids[uid] = true
		}
	}
	for uid := range b.touched {
		uids[uid] = true
	}
	for uid := range uids {
		g := Group{Lines: b.lines[uid]}
		if t, ok := b.touched[uid]; ok && len(g.Lines) == 0 && (t.Change != "added" || len(b.in.After.Report.Objects[uid].Endpoints) == 0) {
			b.unchanged++
			continue
		}
		if t, ok := b.touched[uid]; ok {
			o := t.Object
			g.Object, g.Change, g.Origin = &o, t.Change, t.Origin
		} else {
			ref := b.refs[uid]
			g.Object = &explain.Object{Kind: ref.Kind, Namespace: ref.Namespace, Name: ref.Name, UID: ref.UID}
		}
		if g.Lines == nil {
			g.Lines = []Line{}
		}
		sortLines(g.Lines)
		out = append(out, g)
	}
	slices.SortFunc(out, func(a, b Group) int {
		if (a.Change == "") != (b.Change == "") {
			if a.Change != "" {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Object.String(), b.Object.String())
	})
	if ls := b.lines[""]; len(ls) > 0 {
		sortLines(ls)
		out = append(out, Group{Lines: ls})
	}
	return out
}

// signOrder puts refusals first, then deletions, updates, creates and unknowns.
var signOrder = map[string]int{SignRefused: 0, SignDelete: 1, SignUpdate: 2, SignCreate: 3, SignUnknown: 4}

func sortLines(ls []Line) {
	slices.SortStableFunc(ls, func(a, b Line) int {
		if c := signOrder[a.Sign] - signOrder[b.Sign]; c != 0 {
			return c
		}
		return strings.Compare(a.Hostname, b.Hostname)
	})
}

// String is the line as the text shows it, after its sign.
func (l *Line) String() string {
	var s strings.Builder
	s.WriteString(l.Hostname)
	switch l.Sign {
	case SignCreate:
		fmt.Fprintf(&s, " → %s", l.Address)
		if len(l.Aliases) > 0 {
			fmt.Fprintf(&s, " (aliases %s)", strings.Join(l.Aliases, ", "))
		}
	case SignUpdate:
		switch {
		case l.Message != "" && l.Address == l.OldAddress && slices.Equal(l.Aliases, l.OldAliases):
			fmt.Fprintf(&s, " %s: %s", l.Address, l.Message)
		default:
			fmt.Fprintf(&s, ": %s → %s", l.OldAddress, l.Address)
			if !slices.Equal(l.Aliases, l.OldAliases) {
				fmt.Fprintf(&s, ", aliases [%s] → [%s]", strings.Join(l.OldAliases, ", "), strings.Join(l.Aliases, ", "))
			}
			if l.Message != "" && !strings.HasPrefix(l.Message, "tags:") {
				fmt.Fprintf(&s, " (%s)", l.Message)
			}
		}
	case SignDelete:
		fmt.Fprintf(&s, " %s", l.OldAddress)
		switch {
		case l.Due != nil:
			fmt.Fprintf(&s, ": marked now, deleted at %s after its grace period", l.Due.Format(time.RFC3339))
		case l.Message != "":
			fmt.Fprintf(&s, ": deleted (%s)", l.Message)
		default:
			s.WriteString(": deleted")
		}
	case SignRefused:
		if l.Hostname == "" {
			s.Reset()
		} else {
			s.WriteString(": ")
		}
		fmt.Fprintf(&s, "%s: %s", l.Code, l.Message)
		if l.Fix != "" {
			fmt.Fprintf(&s, "; fix: %s", l.Fix)
		}
	case SignUnknown:
		s.Reset()
		s.WriteString(l.Message)
	}
	return s.String()
}

// Title is the group's heading.
func (g *Group) Title() string {
	if g.Object == nil {
		return "entries no object here names (heartbeats, objects gone before)"
	}
	t := g.Object.String()
	var what []string
	if g.Change != "" {
		what = append(what, g.Change)
	}
	if g.Origin != "" {
		what = append(what, g.Origin)
	}
	if len(what) > 0 {
		t += " (" + strings.Join(what, ", ") + ")"
	}
	return t
}

// Line is the summary line.
func (s Summary) Line() string {
	var parts []string
	parts = append(parts, fmt.Sprintf("%d to create, %d to update, %d to delete", s.Creates, s.Updates, s.Deletes))
	parts = append(parts, fmt.Sprintf("%d refused or held", s.Refusals))
	if s.Unknown > 0 {
		parts = append(parts, fmt.Sprintf("%d with an address not known from manifests", s.Unknown))
	}
	if s.Unchanged > 0 {
		parts = append(parts, fmt.Sprintf("%d objects of the manifests already as they want (not shown)", s.Unchanged))
	}
	if s.Heartbeats > 0 {
		parts = append(parts, fmt.Sprintf("%d renewals of this installation's heartbeat, its own (not shown)", s.Heartbeats))
	}
	if s.Existing > 0 {
		parts = append(parts, fmt.Sprintf("%d refusals of today the manifests do not touch (not shown; explain tells them)", s.Existing))
	}
	if s.Unread > 0 {
		parts = append(parts, fmt.Sprintf("%d objects of kinds the operator does not read", s.Unread))
	}
	return "Plan: " + strings.Join(parts, "; ") + "."
}

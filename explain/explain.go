// Package explain tells a person why a name is on the router as it is, or is not: for each
// object that claims it, what the registry decided and why (the reason code, the word its
// Event uses, the facts behind it and what would fix it); each entry the router has for it,
// with its owner in words; the objects that name it but are never read; and whether the
// router's DNS answers it. It prints what one sync's registry decided (controller.Report) and
// what the source survey found; it decides nothing itself.
package explain

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/router-hosts-operator/router-hosts-operator/controller"
	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/plan"
	"github.com/router-hosts-operator/router-hosts-operator/registry"
	"github.com/router-hosts-operator/router-hosts-operator/source"
)

// Input is one decision and what was found beside it.
type Input struct {
	// Report is the registry's decision from one read of the cluster and the router.
	Report *controller.Report
	// Owners says whose each entry of the read is, by ID (registry.Ownerships).
	Owners map[string]registry.Ownership
	// Unread are the objects that name a name asked about but are never read.
	Unread []source.Unread
	// Answers are what the router's DNS answered, by name; nil without --verify-dns.
	Answers map[string]Answer
	// Now is when the decision was made.
	Now time.Time
	// DomainFilter is the domain filter the decision was made with (the settings in use), so
	// that a claim outside it is told the filter's value; DomainFilterSetBy is the
	// RouterHostsConfig that sets it, "" when the flags do, so that the fix names what to edit.
	DomainFilter      endpoint.DomainFilter
	DomainFilterSetBy string
}

// Object names one Kubernetes object.
type Object struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	UID       string `json:"uid,omitempty"`
}

func (o Object) String() string {
	if o.Namespace == "" {
		return o.Kind + " " + o.Name
	}
	return o.Kind + " " + o.Namespace + "/" + o.Name
}

func objectOf(r endpoint.SourceRef) Object {
	return Object{Kind: r.Kind, Namespace: r.Namespace, Name: r.Name, UID: r.UID}
}

// Outcome is one decision about a claim or an entry, with its reason.
type Outcome struct {
	// Code is the reason code (Codes), the word of the Event that tells it where one is posted.
	Code string `json:"code"`
	// Stage is the registry stage that decided, when one did.
	Stage   string `json:"stage,omitempty"`
	Message string `json:"message"`
	// The facts: who holds the name, when a held change goes, the token that confirms a mass
	// deletion, the change the next sync writes.
	Holder string     `json:"holder,omitempty"`
	Due    *time.Time `json:"due,omitempty"`
	Token  string     `json:"token,omitempty"`
	Change string     `json:"change,omitempty"`
	// Fix is what a person can do about it, when there is something.
	Fix string `json:"fix,omitempty"`
}

// Claimant is one object that claims a name: its claim and what became of it.
type Claimant struct {
	Object Object `json:"object"`
	// Alias: the object claims the name as an alias of Hostname.
	Alias     bool     `json:"alias,omitempty"`
	Hostname  string   `json:"hostname"`
	Addresses []string `json:"addresses"`
	Aliases   []string `json:"aliases,omitempty"`
	// Outcomes are what became of the claim; the first is the main one.
	Outcomes []Outcome `json:"outcomes"`
}

// Whose is whose an entry is, in words and as data.
type Whose struct {
	// Class is this, adopted, namesake, other-cluster, co-owned, silent-cluster or hand-made
	// (endpoint.Owner).
	Class     string `json:"class"`
	Cluster   string `json:"cluster,omitempty"`
	ClusterID string `json:"clusterID,omitempty"`
	// Objects are the objects of this cluster that want the entry; UIDs the ones no object
	// read here has (another cluster's, or gone).
	Objects   []Object `json:"objects,omitempty"`
	UIDs      []string `json:"uids,omitempty"`
	Namespace string   `json:"namespace,omitempty"`
	Kinds     []string `json:"kinds,omitempty"`
	// Shared: the hostname is shared with other clusters; CoOwners the other clusters that
	// want the line too (name@cluster-id); LastSeen a silent cluster's newest heartbeat.
	Shared   bool       `json:"shared,omitempty"`
	CoOwners []string   `json:"coOwners,omitempty"`
	LastSeen *time.Time `json:"lastSeen,omitempty"`
	// Words is the owner as a person reads it.
	Words string `json:"words"`
}

// RouterEntry is one entry on the router.
type RouterEntry struct {
	ID       string   `json:"id"`
	Hostname string   `json:"hostname"`
	Address  string   `json:"address"`
	Aliases  []string `json:"aliases,omitempty"`
	// Tags, Comment and Version are the entry as the router gave them (Version for an
	// expected_version), so that list -o json holds all a router snapshot needs (ReadSnapshot):
	// ownership is decided from the tags alone.
	Tags    []string `json:"tags,omitempty"`
	Comment string   `json:"comment,omitempty"`
	Version string   `json:"version,omitempty"`
	Owner   Whose    `json:"owner"`
	// State is synced, pending-deletion, held, will-change, adopted, hand-made, namesake or
	// other-cluster (States); Outcome says why, when a change or a hold concerns the entry.
	State   string   `json:"state"`
	Outcome *Outcome `json:"outcome,omitempty"`
	// Answer is what the router's DNS answers for the entry's hostname, when checked.
	Answer *Answer `json:"answer,omitempty"`
}

// Answer is what the router's DNS answered for a name.
type Answer struct {
	Server string `json:"server"`
	// Answering: the answer is what was written (for a name nobody wants: no answer).
	Answering bool     `json:"answering"`
	Got       []string `json:"got,omitempty"`
	Want      []string `json:"want,omitempty"`
	Detail    string   `json:"detail,omitempty"`
}

// Unread is an object that names the name but is never read.
type Unread struct {
	Object Object   `json:"object"`
	Source string   `json:"source"`
	Names  []string `json:"names"`
	Code   string   `json:"code"`
	Fix    string   `json:"fix"`
}

// Name is the whole answer for one name.
type Name struct {
	Name string `json:"name"`
	// AsWanted: the router holds the name as its claims want it (and its DNS answers it, when
	// checked); the command's exit status is 0 only then.
	AsWanted bool          `json:"asWanted"`
	Claims   []Claimant    `json:"claims"`
	Entries  []RouterEntry `json:"entries"`
	Unread   []Unread      `json:"unread,omitempty"`
	Answer   *Answer       `json:"answer,omitempty"`
	Notes    []Outcome     `json:"notes,omitempty"`
	// Said are the Warning events the running operator posted on the objects that claim the
	// name within the last hour: what only its loop sees (a twin, a write-rate budget spent)
	// shows here.
	Said []Said `json:"said,omitempty"`
}

// Said is one Warning event the running operator posted.
type Said struct {
	Object  Object    `json:"object"`
	Code    string    `json:"code"`
	Message string    `json:"message"`
	Count   int32     `json:"count"`
	Last    time.Time `json:"last"`
}

// decision indexes one Input for lookups by name and by entry.
type decision struct {
	in      *Input
	desired map[string]*endpoint.Endpoint
	// changes and held by hostname, lowercase; byEntry by the ID of the entry they change.
	changes      map[string][]*plan.Change
	held         map[string][]*registry.Held
	changeOf     map[string]*plan.Change
	heldOf       map[string]*registry.Held
	refs         map[string]endpoint.SourceRef
	entries      []endpoint.Record
	entriesByKey map[string][]int
	// unmanaged are the hostnames the registry found outside the managed domains.
	unmanaged map[string]bool
}

func index(in *Input) *decision {
	d := &decision{in: in, desired: map[string]*endpoint.Endpoint{}, changes: map[string][]*plan.Change{}, held: map[string][]*registry.Held{},
		changeOf: map[string]*plan.Change{}, heldOf: map[string]*registry.Held{}, refs: map[string]endpoint.SourceRef{}, entriesByKey: map[string][]int{}}
	rep := in.Report
	for _, ep := range rep.Desired {
		d.desired[ep.Hostname] = ep
	}
	for _, ep := range rep.Unmanaged {
		if d.unmanaged == nil {
			d.unmanaged = map[string]bool{}
		}
		d.unmanaged[ep.Hostname] = true
	}
	for i := range rep.Changes {
		c := &rep.Changes[i]
		d.changes[strings.ToLower(c.Hostname())] = append(d.changes[strings.ToLower(c.Hostname())], c)
		if c.Old != nil {
			d.changeOf[c.Old.ID] = c
		}
	}
	for i := range rep.Held {
		h := &rep.Held[i]
		key := strings.ToLower(h.Change.Hostname())
		d.held[key] = append(d.held[key], h)
		if h.Change.Old != nil {
			d.heldOf[h.Change.Old.ID] = h
		}
	}
	for _, o := range rep.Objects {
		for _, ep := range o.Endpoints {
			for _, s := range ep.Sources {
				d.refs[s.UID] = s
			}
		}
	}
	for _, u := range in.Unread {
		d.refs[u.Ref.UID] = u.Ref
	}
	if st := rep.State; st != nil {
		d.entries = append(d.entries, st.Owned...)
		for _, k := range slices.Sorted(maps.Keys(st.Foreign)) {
			d.entries = append(d.entries, st.Foreign[k]...)
		}
		for _, k := range slices.Sorted(maps.Keys(st.Unowned)) {
			d.entries = append(d.entries, st.Unowned[k]...)
		}
	}
	for i := range d.entries {
		d.entriesByKey[strings.ToLower(d.entries[i].Hostname)] = append(d.entriesByKey[strings.ToLower(d.entries[i].Hostname)], i)
		for _, a := range d.entries[i].Aliases {
			if k := strings.ToLower(a); k != strings.ToLower(d.entries[i].Hostname) {
				d.entriesByKey[k] = append(d.entriesByKey[k], i)
			}
		}
	}
	return d
}

// ExplainName is the answer for one name, lowercase.
func ExplainName(in *Input, name string) Name {
	return index(in).name(strings.TrimSuffix(strings.ToLower(name), "."))
}

// Names lists the names an object claims (hostnames and aliases, lowercase), for
// ExplainObject, and whether the object was read at all.
func Names(in *Input, uid string) ([]string, bool) {
	o, ok := in.Report.Objects[uid]
	if !ok {
		return nil, false
	}
	var names []string
	for _, ep := range o.Endpoints {
		names = append(names, ep.Hostname)
		names = append(names, ep.Aliases...)
	}
	slices.Sort(names)
	return slices.Compact(names), true
}

// Written are the addresses the router holds for each name, lowercase, as a hostname or an
// alias of any entry, whoever wrote it: what its DNS should answer. Names nothing on the router
// carries have none, and their DNS should answer nothing.
func Written(in *Input) map[string][]string {
	d := index(in)
	out := make(map[string][]string, len(d.entriesByKey))
	for name, idx := range d.entriesByKey {
		var ips []string
		for _, i := range idx {
			ips = append(ips, d.entries[i].IP)
		}
		slices.Sort(ips)
		out[name] = slices.Compact(ips)
	}
	return out
}

// Problems are what an object's input has wrong, as the sources found it, with what would
// fix each.
func Problems(in *Input, uid string) []Outcome {
	var out []Outcome
	for _, p := range in.Report.Objects[uid].Problems {
		out = append(out, Outcome{Code: p.Reason, Message: p.Message, Fix: problemFix(p.Reason)})
	}
	return out
}

// ExplainNames is the answer for each of names, sharing one index.
func ExplainNames(in *Input, names []string) []Name {
	d := index(in)
	out := make([]Name, 0, len(names))
	for _, n := range names {
		out = append(out, d.name(strings.TrimSuffix(strings.ToLower(n), ".")))
	}
	return out
}

func (d *decision) name(n string) Name {
	out := Name{Name: n, Claims: []Claimant{}, Entries: []RouterEntry{}}
	rep := d.in.Report
	for _, uid := range slices.Sorted(maps.Keys(rep.Objects)) {
		obj := rep.Objects[uid]
		for _, ep := range obj.Endpoints {
			alias := slices.Contains(ep.Aliases, n)
			if ep.Hostname != n && !alias {
				continue
			}
			ref := refOfObject(ep, uid)
			c := Claimant{Object: objectOf(ref), Alias: alias, Hostname: ep.Hostname, Addresses: ep.Targets, Aliases: ep.Aliases}
			c.Outcomes = d.outcomes(n, ep, ref, obj.Problems)
			out.Claims = append(out.Claims, c)
		}
	}
	for _, i := range d.entriesByKey[n] {
		out.Entries = append(out.Entries, d.entry(&d.entries[i]))
	}
	for _, u := range d.in.Unread {
		if slices.Contains(u.Names, n) {
			out.Unread = append(out.Unread, Unread{Object: objectOf(u.Ref), Source: u.Source, Names: u.Names, Code: u.Reason, Fix: u.Fix})
		}
	}
	if len(out.Claims) == 0 {
		note := Outcome{Code: Unclaimed, Message: "no object of this cluster claims " + n}
		if len(out.Unread) > 0 {
			note.Message += "; objects that name it are never read (below)"
		}
		out.Notes = append(out.Notes, note)
	}
	if a, ok := d.in.Answers[n]; ok {
		out.Answer = &a
		switch {
		case a.Answering:
		case len(a.Want) == 0:
			out.Notes = append(out.Notes, Outcome{Code: StillAnswering, Message: a.describe(n),
				Fix: "the router no longer holds the name but its DNS still serves it: check its reload hook (router-hosts [hooks]) and the DNS server's log"})
		default:
			out.Notes = append(out.Notes, Outcome{Code: NotAnswering, Message: a.describe(n),
				Fix: "the router wrote the entry but its DNS serves another answer: check its reload hook (router-hosts [hooks]) and the DNS server's log"})
		}
	}
	out.AsWanted = d.asWanted(&out)
	return out
}

// asWanted: at least one object claims the name, every claim is on the router exactly as it
// asks (nothing refused, dropped or still to be written), and the DNS answers it when checked.
func (d *decision) asWanted(n *Name) bool {
	for _, c := range n.Claims {
		if len(c.Outcomes) != 1 || c.Outcomes[0].Code != Synced {
			return false
		}
	}
	return len(n.Claims) > 0 && (n.Answer == nil || n.Answer.Answering)
}

// refOfObject is the object uid's own reference among the endpoint's sources.
func refOfObject(ep *endpoint.Endpoint, uid string) endpoint.SourceRef {
	if ref, ok := ep.Ref(uid); ok {
		return ref
	}
	return endpoint.SourceRef{UID: uid}
}

// outcomes is what became of one object's claim (ep) on name n: the registry's refusals, the
// object's own problems, then what the plan and the change stages made of the name.
func (d *decision) outcomes(n string, ep *endpoint.Endpoint, ref endpoint.SourceRef, problems []endpoint.Problem) []Outcome {
	var out []Outcome
	rep := d.in.Report
	if d.unmanaged[ep.Hostname] {
		out = append(out, d.outside(ep.Hostname))
	}
	for _, c := range rep.Conflicts {
		if c.Loser.UID == ref.UID && (c.Hostname == n || (!c.Alias && c.Hostname == ep.Hostname)) {
			out = append(out, conflictOutcome(&c))
		}
	}
	for _, p := range rep.Problems {
		if p.Source.UID == ref.UID {
			out = append(out, problemOutcome(&p))
		}
	}
	for _, p := range problems {
		out = append(out, Outcome{Code: p.Reason, Message: p.Message, Fix: problemFix(p.Reason)})
	}
	host := ep.Hostname
	won := d.desired[host]
	if won == nil || !slices.ContainsFunc(won.Sources, func(s endpoint.SourceRef) bool { return s.UID == ref.UID }) {
		if len(out) == 0 {
			out = append(out, Outcome{Code: registry.ReasonHostnameConflict, Message: "another claim holds " + host})
		}
		return out
	}
	if n != host && !slices.Contains(won.Aliases, n) && len(out) > 0 {
		return out // the alias was refused (above); the hostname's own fate is its own explain
	}
	for _, h := range d.held[host] {
		o := Outcome{Code: h.Reason, Stage: h.Stage, Message: "held: " + h.Change.String(), Token: h.Token, Change: h.Change.String()}
		if !h.Due.IsZero() {
			due := h.Due.UTC()
			o.Due = &due
			o.Message += fmt.Sprintf(" (goes at %s, in %s)", due.Format(time.RFC3339), h.Due.Sub(d.in.Now).Round(time.Second))
		}
		o.Fix = heldFix(h)
		out = append(out, o)
	}
	for _, c := range d.changes[host] {
		out = append(out, Outcome{Code: Pending, Message: "the next sync writes: " + c.String(), Change: c.String()})
	}
	if len(d.held[host]) == 0 && len(d.changes[host]) == 0 {
		switch {
		case won.NoAddress():
			if !slices.ContainsFunc(out, func(o Outcome) bool { return o.Code == source.ReasonNoAddress }) {
				out = append(out, Outcome{Code: source.ReasonNoAddress, Message: host + " has no address now; its entries are kept as they are"})
			}
		default:
			out = append([]Outcome{{Code: Synced, Message: fmt.Sprintf("the router holds %s → %s as wanted", n, strings.Join(won.Targets, ","))}}, out...)
		}
	}
	return out
}

// outside is the outcome of a claim on host, which the decision found outside the domain
// filter: the filter's value as the decision had it, and the domain that excludes host when one
// does. An Input without the filter (an empty one manages every name) gives the bare sentence.
func (d *decision) outside(host string) Outcome {
	o := Outcome{Code: OutsideDomainFilter, Message: host + " is outside the names this operator manages",
		Fix: "widen --domain-filter (or narrow --exclude-domains), or the RouterHostsConfig's spec.domainFilter"}
	f := d.in.DomainFilter.String()
	if f == "" {
		return o
	}
	by := d.in.DomainFilterSetBy
	if by == "" {
		o.Message += " (" + f + ")"
	} else {
		o.Message += " (" + f + ", as RouterHostsConfig " + by + " sets it)"
	}
	excluded := d.in.DomainFilter.ExcludedBy(host)
	if excluded != "" {
		o.Message += ": it is under the excluded " + excluded
	}
	switch {
	case excluded != "" && by != "":
		o.Fix = "take " + excluded + " out of spec.excludeDomains of RouterHostsConfig " + by + " (now " + f + ")"
	case excluded != "":
		o.Fix = "take " + excluded + " out of --exclude-domains (now " + f + "), or set the RouterHostsConfig's spec.excludeDomains"
	case by != "":
		o.Fix = "add the name's domain to spec.domainFilter of RouterHostsConfig " + by + " (now " + f + ")"
	default:
		o.Fix = "add the name's domain to --domain-filter (now " + f + "), or set the RouterHostsConfig's spec.domainFilter"
	}
	return o
}

// entry describes one router entry.
func (d *decision) entry(rec *endpoint.Record) RouterEntry {
	o := d.in.Owners[rec.ID]
	e := RouterEntry{ID: rec.ID, Hostname: rec.Hostname, Address: rec.IP, Aliases: rec.Aliases, Tags: rec.Tags, Comment: rec.Comment,
		Version: rec.Version, Owner: d.owner(o)}
	switch o.Class {
	case endpoint.OwnerThis:
		e.State = StateSynced
		if o.Marked {
			e.State = StatePendingDeletion
		}
	default:
		e.State = string(o.Class)
	}
	if h := d.heldOf[rec.ID]; h != nil {
		e.State = StateHeld
		if h.Reason == registry.ReasonGracePeriod {
			e.State = StatePendingDeletion
		}
		oc := Outcome{Code: h.Reason, Stage: h.Stage, Message: "held: " + h.Change.String(), Token: h.Token, Change: h.Change.String(), Fix: heldFix(h)}
		if !h.Due.IsZero() {
			due := h.Due.UTC()
			oc.Due = &due
			oc.Message += fmt.Sprintf(" (goes at %s, in %s)", due.Format(time.RFC3339), h.Due.Sub(d.in.Now).Round(time.Second))
		}
		e.Outcome = &oc
	} else if c := d.changeOf[rec.ID]; c != nil {
		e.State = StateWillChange
		e.Outcome = &Outcome{Code: Pending, Message: "the next sync writes: " + c.String(), Change: c.String()}
	} else if o.Marked && !o.Due.IsZero() {
		due := o.Due.UTC()
		e.Outcome = &Outcome{Code: registry.ReasonGracePeriod, Due: &due, Message: fmt.Sprintf("marked for deletion; goes at %s", due.Format(time.RFC3339))}
	}
	if a, ok := d.in.Answers[strings.ToLower(rec.Hostname)]; ok {
		e.Answer = &a
	}
	return e
}

// The states of an entry, beside the owner classes other than this.
const (
	StateSynced          = "synced"
	StatePendingDeletion = "pending-deletion"
	StateHeld            = "held"
	StateWillChange      = "will-change"
)

// States lists every state an entry can have, for --state and the docs.
func States() []string {
	return []string{StateSynced, StatePendingDeletion, StateHeld, StateWillChange, string(endpoint.OwnerAdopted),
		string(endpoint.OwnerNamesake), string(endpoint.OwnerOtherCluster), string(endpoint.OwnerCoOwned),
		string(endpoint.OwnerSilentCluster), string(endpoint.OwnerHandMade)}
}

// owner puts an entry's ownership in words, its objects resolved from their UIDs.
func (d *decision) owner(o registry.Ownership) Whose {
	out := Whose{Class: string(o.Class), Cluster: o.Cluster, ClusterID: o.ClusterID, Namespace: o.Namespace, Kinds: o.Kinds,
		Shared: o.Shared, CoOwners: o.CoOwners}
	if !o.LastSeen.IsZero() {
		last := o.LastSeen.UTC()
		out.LastSeen = &last
	}
	for _, uid := range o.Sources {
		if ref, ok := d.refs[uid]; ok && (o.Class == endpoint.OwnerThis || o.Class == endpoint.OwnerAdopted) {
			out.Objects = append(out.Objects, objectOf(ref))
		} else {
			out.UIDs = append(out.UIDs, uid)
		}
	}
	var objs []string
	for _, ob := range out.Objects {
		objs = append(objs, ob.String())
	}
	if n := len(out.UIDs); n > 0 && (o.Class == endpoint.OwnerThis || o.Class == endpoint.OwnerAdopted) {
		gone := "an object no longer in the cluster"
		if n > 1 {
			gone = fmt.Sprintf("%d objects no longer in the cluster", n)
		}
		objs = append(objs, gone+" (uid "+strings.Join(out.UIDs, ", ")+")")
	}
	cluster := fmt.Sprintf("cluster %s", o.Cluster)
	switch o.Class {
	case endpoint.OwnerThis:
		out.Words = "this cluster (" + cluster + ") for " + strings.Join(objs, ", ")
	case endpoint.OwnerAdopted:
		out.Words = "adopted by this cluster (" + cluster + ") from a hand-made entry, given back when no object wants it, for " + strings.Join(objs, ", ")
	case endpoint.OwnerNamesake:
		out.Words = fmt.Sprintf("a namesake: another installation writing %s, cluster-id %s", cluster, o.ClusterID)
	case endpoint.OwnerOtherCluster:
		out.Words = "another cluster: " + cluster
		if o.Namespace != "" {
			out.Words += fmt.Sprintf(" (namespace %s, %s)", o.Namespace, strings.Join(o.Kinds, ","))
		}
	case endpoint.OwnerCoOwned:
		out.Words = "another cluster's line (" + cluster + "), shared, which this cluster co-owns: it stays while either wants it"
	case endpoint.OwnerSilentCluster:
		out.Words = fmt.Sprintf("a silent cluster: %s, cluster-id %s, whose newest heartbeat is from %s; "+
			"if it is gone for good, let it go with `%s`", cluster, o.ClusterID, o.LastSeen.UTC().Format(time.RFC3339),
			o.Release)
	default:
		out.Words = "hand-made (no operator tag)"
	}
	if o.Shared && o.Class != endpoint.OwnerCoOwned {
		out.Words += "; shared with other clusters"
	}
	if len(o.CoOwners) > 0 {
		out.Words += "; co-owned by " + strings.Join(o.CoOwners, ", ")
	}
	if o.Marked && !o.Due.IsZero() {
		out.Words += fmt.Sprintf("; marked for deletion, goes at %s", o.Due.UTC().Format(time.RFC3339))
	}
	return out
}

func holderFix(winner string) string {
	switch {
	case strings.HasPrefix(winner, "cluster "):
		return "another cluster's entry is never changed: remove it there, or `release` that cluster"
	case strings.HasPrefix(winner, "namespace "), strings.Contains(winner, "/"):
		return "the older claim holds the name until it lets go (then this one takes it after the holder's grace period)"
	}
	return "a hand-made entry is adopted only by a namespace --adopt-namespace allows, and never with the no-adopt tag"
}

func problemFix(reason string) string {
	switch reason {
	case registry.ReasonNameNotPermitted:
		return "claim a name under the namespace's domains (--namespace-domains / spec.tenancy)"
	case registry.ReasonOverBudget:
		return "fewer names or writes for the object or namespace, or a larger budget (spec.budgets)"
	case registry.ReasonInvalidAnnotation, source.ReasonInvalidHostname:
		return "correct the object's annotation or spec as the message says"
	case source.ReasonNoAddress:
		return "give the object an address (ip-address annotation, a load balancer status, --ip-resolution)"
	}
	return ""
}

func heldFix(h *registry.Held) string {
	switch h.Reason {
	case registry.ReasonMassDeletionHeld:
		return "set spec.deletion.brake.confirm: " + h.Token + " on the RouterHostsConfig (or --confirm-mass-deletion=" + h.Token + "), or bring the objects back"
	case registry.ReasonPolicy:
		return "--policy=" + string(h.Policy) + " forbids it; --policy=sync allows every change"
	case registry.ReasonGracePeriod:
		return "bring an object that claims the name back to keep it; the grace-period annotation shortens the wait"
	case registry.ReasonTwinInstallation:
		return "stop the other writer with this installation's identity (a second install with the same Lease, a restored copy)"
	}
	return ""
}

// describe says what the DNS answered for n.
func (a Answer) describe(n string) string {
	got := "nothing"
	if len(a.Got) > 0 {
		got = strings.Join(a.Got, ",")
	}
	want := "nothing"
	if len(a.Want) > 0 {
		want = strings.Join(a.Want, ",")
	}
	s := fmt.Sprintf("%s answers %s for %s, wanted %s", a.Server, got, n, want)
	if a.Detail != "" {
		s += " (" + a.Detail + ")"
	}
	return s
}

// Exit is the command's exit status for these answers: 0 when every name is as wanted, 1 when
// one is not.
func Exit(names []Name) int {
	for _, n := range names {
		if !n.AsWanted {
			return 1
		}
	}
	return 0
}

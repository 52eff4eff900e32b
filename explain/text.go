package explain

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// Version is the version of the JSON shapes below, which scripts may rely on: fields are only
// ever added under one version.
const Version = "router-hosts-operator/explain/v1"

// NamesJSON is explain -o json's document.
type NamesJSON struct {
	Version string `json:"version"`
	// Object is the object asked about, when one was.
	Object *Object `json:"object,omitempty"`
	Names  []Name  `json:"names"`
	// Unread is the object asked about when it is never read; Problems what its input has
	// wrong, as its Warning events say.
	Unread   []Unread  `json:"unread,omitempty"`
	Problems []Outcome `json:"problems,omitempty"`
	// Notes are what explain could not look at (a kind it could not list), each a sentence.
	Notes []string `json:"notes,omitempty"`
	// Said are the Warning events the running operator posted on the RouterHostsConfig within
	// the last hour: the cluster-wide ones (a twin, the brake, a namesake).
	Said []Said `json:"said,omitempty"`
}

// ListJSON is list -o json's document, which is also a router snapshot (ReadSnapshot) when
// nothing filtered it.
type ListJSON struct {
	Version string `json:"version"`
	// Filtered: --owner, --state or --namespace picked the entries, so the document is not
	// the whole router and ReadSnapshot refuses it.
	Filtered bool          `json:"filtered,omitempty"`
	Entries  []RouterEntry `json:"entries"`
}

// NewListJSON is the document list -o json writes of entries, the ones f picked.
func NewListJSON(entries []RouterEntry, f Filter) ListJSON {
	return ListJSON{Version: Version, Filtered: f != Filter{}, Entries: entries}
}

// WriteJSON writes v indented.
func WriteJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("writing JSON: %w", err)
	}
	return nil
}

// WriteText writes the answers for people.
func WriteText(w io.Writer, doc *NamesJSON) {
	if doc.Object != nil && len(doc.Names) == 0 && len(doc.Unread) == 0 {
		fmt.Fprintf(w, "%s: read, and names nothing the operator writes\n", doc.Object)
	}
	for _, p := range doc.Problems {
		writeOutcome(w, "  ", &p)
	}
	for _, u := range doc.Unread {
		fmt.Fprintf(w, "%s is never read: %s\n  fix: %s\n", u.Object, u.Code, u.Fix)
	}
	for i, n := range doc.Names {
		if i > 0 {
			fmt.Fprintln(w)
		}
		writeName(w, &n)
	}
	writeSaid(w, doc.Said)
	for _, note := range doc.Notes {
		fmt.Fprintf(w, "note: %s\n", note)
	}
}

func writeName(w io.Writer, n *Name) {
	summary := "on the router as wanted"
	if !n.AsWanted {
		summary = "NOT on the router as wanted"
	}
	fmt.Fprintf(w, "%s: %s\n", n.Name, summary)
	for _, o := range n.Notes {
		writeOutcome(w, "  ", &o)
	}
	if len(n.Claims) > 0 {
		fmt.Fprintln(w, "claims:")
	}
	for _, c := range n.Claims {
		what := strings.Join(c.Addresses, ",")
		if what == "" {
			what = "no address"
		}
		if c.Alias {
			what += " (as an alias of " + c.Hostname + ")"
		}
		if len(c.Aliases) > 0 && !c.Alias {
			what += " aliases " + strings.Join(c.Aliases, ",")
		}
		fmt.Fprintf(w, "  %s  %s\n", c.Object, what)
		for _, o := range c.Outcomes {
			writeOutcome(w, "    ", &o)
		}
	}
	if len(n.Entries) > 0 {
		fmt.Fprintln(w, "entries:")
	} else {
		fmt.Fprintln(w, "entries: none on the router")
	}
	for _, e := range n.Entries {
		name := ""
		if !strings.EqualFold(e.Hostname, n.Name) {
			name = " (as an alias of " + e.Hostname + ")"
		}
		fmt.Fprintf(w, "  id %s  %s%s  %s  [%s]\n", e.ID, e.Address, name, e.Owner.Words, e.State)
		if e.Outcome != nil {
			writeOutcome(w, "    ", e.Outcome)
		}
	}
	if len(n.Unread) > 0 {
		fmt.Fprintln(w, "never read:")
	}
	for _, u := range n.Unread {
		fmt.Fprintf(w, "  %s  %s\n    fix: %s\n", u.Object, u.Code, u.Fix)
	}
	writeSaid(w, n.Said)
	if n.Answer != nil {
		state := "answers as written"
		if !n.Answer.Answering {
			state = "does NOT answer as written"
		}
		fmt.Fprintf(w, "dns: %s %s: %s\n", n.Answer.Server, state, n.Answer.describe(n.Name))
	}
}

func writeOutcome(w io.Writer, indent string, o *Outcome) {
	stage := ""
	if o.Stage != "" {
		stage = " (" + o.Stage + ")"
	}
	fmt.Fprintf(w, "%s%s%s: %s\n", indent, o.Code, stage, o.Message)
	if o.Token != "" {
		fmt.Fprintf(w, "%s  token: %s\n", indent, o.Token)
	}
	if o.Fix != "" {
		fmt.Fprintf(w, "%s  fix: %s\n", indent, o.Fix)
	}
}

// WriteList writes list's table for people.
func WriteList(w io.Writer, entries []RouterEntry) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "HOSTNAME\tADDRESS\tALIASES\tOWNER\tSTATE\tDNS")
	for _, e := range entries {
		dns := "-"
		if e.Answer != nil {
			dns = "answers"
			if !e.Answer.Answering {
				dns = "NOT answering"
			}
		}
		state := e.State
		if e.Outcome != nil && e.Outcome.Due != nil {
			state += " (due " + e.Outcome.Due.Format("2006-01-02T15:04:05Z") + ")"
		}
		aliases := strings.Join(e.Aliases, ",")
		if aliases == "" {
			aliases = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", e.Hostname, e.Address, aliases, ownerColumn(&e.Owner), state, dns)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("writing the list: %w", err)
	}
	return nil
}

// ownerColumn is the owner in a table cell: the objects for this cluster's, the cluster for
// another's.
func ownerColumn(o *Whose) string {
	switch o.Class {
	case "this", "adopted":
		var objs []string
		for _, ob := range o.Objects {
			objs = append(objs, strings.ToLower(ob.Kind)+"/"+ob.Namespace+"/"+ob.Name)
		}
		if len(o.UIDs) > 0 {
			objs = append(objs, fmt.Sprintf("%d gone", len(o.UIDs)))
		}
		if len(objs) == 0 {
			return o.Class
		}
		return strings.Join(objs, ",")
	case "namesake":
		return "namesake " + o.ClusterID
	case "other-cluster":
		return "cluster " + o.Cluster
	case "co-owned":
		return "cluster " + o.Cluster + " (co-owned)"
	case "silent-cluster":
		return "cluster " + o.Cluster + " (silent)"
	}
	return "hand-made"
}

// writeSaid writes what the running operator said, newest last.
func writeSaid(w io.Writer, said []Said) {
	if len(said) > 0 {
		fmt.Fprintln(w, "the running operator said (Warning events, last hour):")
	}
	for _, e := range said {
		fmt.Fprintf(w, "  %s  %s (%d×, last %s): %s\n", e.Object, e.Code, e.Count, e.Last.UTC().Format(time.RFC3339), e.Message)
	}
}

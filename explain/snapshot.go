package explain

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
)

// rewrite is how to fix a snapshot ReadSnapshot refuses.
const rewrite = "write it again with `router-hosts-operator list -o json`, of this operator's version or later and with no --owner, --state or --namespace"

// ReadSnapshot reads a router snapshot: the document list -o json writes (NewListJSON), of a
// version this operator knows, with nothing filtered. It returns the router's entries exactly
// as the list read them (ID, address, hostname, aliases, tags, comment, version), in the
// document's order, since ownership is decided from the tags and a write's expected_version is
// the version: a plan from them decides as one from the router itself. It refuses a document
// that cannot be that, saying why: a filtered list, or one an older operator wrote without the
// tags and versions.
func ReadSnapshot(r io.Reader) ([]endpoint.Record, error) {
	// Entries is a pointer so that a document without them (explain -o json, which has the
	// same version) is told apart from an empty router.
	var doc struct {
		Version  string         `json:"version"`
		Filtered bool           `json:"filtered"`
		Entries  *[]RouterEntry `json:"entries"`
	}
	dec := json.NewDecoder(r)
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("reading the router snapshot, the output of `list -o json`: %w", err)
	}
	if err := dec.Decode(&struct{}{}); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("reading the router snapshot: more than one JSON document; %s", rewrite)
	}
	switch {
	case doc.Version == "":
		return nil, fmt.Errorf("the router snapshot has no version: it is not the output of `list -o json`; %s", rewrite)
	case doc.Version != Version:
		return nil, fmt.Errorf("the router snapshot's version is %q, and this operator reads %s; %s", doc.Version, Version, rewrite)
	case doc.Entries == nil:
		return nil, fmt.Errorf("the router snapshot has no entries: it is not the output of `list -o json` (explain -o json has names instead); %s", rewrite)
	case doc.Filtered:
		return nil, fmt.Errorf("the router snapshot is a filtered list (--owner, --state or --namespace), not the whole router; %s", rewrite)
	}
	entries := *doc.Entries
	if len(entries) > 0 && !hasTagsOrVersions(entries) {
		return nil, fmt.Errorf("the router snapshot's entries carry no tags and no versions, as a list of an operator older than this one writes it, and ownership is decided from the tags; %s", rewrite)
	}
	out := make([]endpoint.Record, 0, len(entries))
	seen := make(map[string]bool, len(entries))
	for i := range entries {
		e := &entries[i]
		switch {
		case e.ID == "":
			return nil, fmt.Errorf("the router snapshot's entry %d (%s %s) has no id; %s", i+1, e.Hostname, e.Address, rewrite)
		case e.Version == "":
			return nil, fmt.Errorf("the router snapshot's entry %s (%s %s) has no version; %s", e.ID, e.Hostname, e.Address, rewrite)
		case seen[e.ID]:
			return nil, fmt.Errorf("the router snapshot has the entry %s twice; %s", e.ID, rewrite)
		}
		seen[e.ID] = true
		out = append(out, endpoint.Record{ID: e.ID, IP: e.Address, Hostname: e.Hostname, Aliases: e.Aliases, Tags: e.Tags,
			Comment: e.Comment, Version: e.Version})
	}
	return out, nil
}

// hasTagsOrVersions reports whether one of entries carries tags or a version: a list written
// before they were printed has neither on any entry.
func hasTagsOrVersions(entries []RouterEntry) bool {
	for i := range entries {
		if len(entries[i].Tags) > 0 || entries[i].Version != "" {
			return true
		}
	}
	return false
}

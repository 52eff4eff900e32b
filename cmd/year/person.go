package main

import (
	"context"
	"fmt"
	"slices"

	"google.golang.org/protobuf/proto"

	pb "github.com/router-hosts-operator/router-hosts-operator/api/routerhostsv1"
	"github.com/router-hosts-operator/router-hosts-operator/test/rhclient"
)

// ownTag marks the operator's entries (the design's tag, whatever the cluster's name).
const ownTag = "k8s-operator"

// noAdoptTag is the tag the person puts on a line of theirs (docs/ownership.md): their data.
const noAdoptTag = "no-adopt"

// person edits the router by hand, as a homelab's owner does, with a plain client, and
// remembers what they left so the year can check nobody changed it.
type person struct {
	cli pb.HostsServiceClient
	// lines are their own entries by ID, as they last left them; order is their IDs in the
	// order they were made.
	lines map[string]*pb.HostEntry
	order []string
	n     int
}

func (p *person) add(ctx context.Context, hostname string) error {
	p.n++
	r, err := p.cli.AddHost(ctx, &pb.AddHostRequest{Hostname: hostname, IpAddress: fmt.Sprintf("192.168.1.%d", 9+p.n),
		Comment: proto.String("added by hand"), Tags: []string{"manual"}})
	if err != nil {
		return fmt.Errorf("the person's AddHost of %s: %w", hostname, err)
	}
	p.lines[r.GetId()] = r.GetEntry()
	p.order = append(p.order, r.GetId())
	return nil
}

// edit is one day's hand edit.
func (p *person) edit(ctx context.Context, k handKind) error {
	switch k {
	case handAdd:
		return p.add(ctx, fmt.Sprintf("device-%02d.home.lab", p.n))
	case handMove:
		id := p.order[len(p.order)-1]
		e := p.lines[id]
		p.n++
		r, err := p.cli.UpdateHost(ctx, &pb.UpdateHostRequest{Id: id, ExpectedVersion: proto.String(e.GetVersion()), IpAddress: proto.String(fmt.Sprintf("192.168.1.%d", 9+p.n))})
		if err != nil {
			return fmt.Errorf("the person's UpdateHost of %s: %w", e.GetHostname(), err)
		}
		p.lines[id] = r.GetEntry()
	case handRemove:
		id := p.order[len(p.order)-1]
		if _, err := p.cli.DeleteHost(ctx, &pb.DeleteHostRequest{Id: id, ExpectedVersion: proto.String(p.lines[id].GetVersion())}); err != nil {
			return fmt.Errorf("the person's DeleteHost of %s: %w", p.lines[id].GetHostname(), err)
		}
		delete(p.lines, id)
		p.order = p.order[:len(p.order)-1]
	case handTag:
		id := p.order[len(p.order)-1]
		e := p.lines[id]
		tags := append(slices.Clone(e.GetTags()), noAdoptTag)
		r, err := p.cli.UpdateHost(ctx, &pb.UpdateHostRequest{Id: id, ExpectedVersion: proto.String(e.GetVersion()), Tags: &pb.TagsUpdate{Values: tags}})
		if err != nil {
			return fmt.Errorf("the person's tag on %s: %w", e.GetHostname(), err)
		}
		p.lines[id] = r.GetEntry()
	case handOverride:
		all, err := rhclient.List(ctx, p.cli)
		if err != nil {
			return err
		}
		for _, e := range all {
			if slices.Contains(e.GetTags(), ownTag) {
				if _, err := p.cli.UpdateHost(ctx, &pb.UpdateHostRequest{Id: e.GetId(), ExpectedVersion: proto.String(e.GetVersion()), IpAddress: proto.String("192.168.99.99")}); err != nil {
					return fmt.Errorf("the person's address on %s: %w", e.GetHostname(), err)
				}
				break
			}
		}
	}
	return nil
}

// check compares the router's entries with what the cluster wants (hostname → address) and
// what the person left: the operator's entries are exactly the cluster's names (an address a
// person put on one is back), and the person's lines are as they left them.
func (p *person) check(entries []*pb.HostEntry, want map[string]string) error {
	own := map[string]string{}
	byID := map[string]*pb.HostEntry{}
	for _, e := range entries {
		byID[e.GetId()] = e
		if slices.Contains(e.GetTags(), ownTag) {
			if prev, ok := own[e.GetHostname()]; ok {
				return fmt.Errorf("%s has two entries of the operator's (%s and %s)", e.GetHostname(), prev, e.GetIpAddress())
			}
			own[e.GetHostname()] = e.GetIpAddress()
		}
	}
	if !equalNames(own, want) {
		return fmt.Errorf("the operator's entries are not the cluster's names: %d entries, %d names%s", len(own), len(want), firstDifference(own, want))
	}
	for id, left := range p.lines {
		got := byID[id]
		if got == nil || !proto.Equal(stripTimes(got), stripTimes(left)) {
			return fmt.Errorf("the person's line %s changed: left %v, found %v", left.GetHostname(), left, got)
		}
	}
	return nil
}

func stripTimes(e *pb.HostEntry) *pb.HostEntry {
	c := proto.Clone(e).(*pb.HostEntry)
	c.CreatedAt, c.UpdatedAt = nil, nil
	return c
}

func firstDifference(got, want map[string]string) string {
	for _, h := range sortedKeys(want) {
		if got[h] != want[h] {
			return fmt.Sprintf(" (first: %s at %q, want %q)", h, got[h], want[h])
		}
	}
	for _, h := range sortedKeys(got) {
		if _, ok := want[h]; !ok {
			return fmt.Sprintf(" (first: %s at %s, not wanted)", h, got[h])
		}
	}
	return ""
}

package main

import (
	"bytes"
	"strings"
	"testing"

	pb "github.com/router-hosts-operator/router-hosts-operator/api/routerhostsv1"
	"github.com/router-hosts-operator/router-hosts-operator/test/rhtestserver"
)

func TestList(t *testing.T) {
	srv, err := rhtestserver.Start(t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	for _, r := range []*pb.AddHostRequest{
		{IpAddress: "10.0.0.2", Hostname: "b.lan", Tags: []string{"z", "a"}},
		{IpAddress: "10.0.0.1", Hostname: "b.lan", Aliases: []string{"x.lan", "w.lan"}},
		{IpAddress: "10.0.0.9", Hostname: "a.lan"},
	} {
		if _, err := srv.Store().Add(r); err != nil {
			t.Fatal(err)
		}
	}
	var out bytes.Buffer
	if err := list([]string{"-addr", srv.Addr(), "-ca", srv.CAFile(), "-cert", srv.CertFile(), "-key", srv.KeyFile()}, &out); err != nil {
		t.Fatal(err)
	}
	// Sorted by hostname then IP; tags sorted, aliases as stored.
	want := []string{
		"HOSTNAME IP ALIASES TAGS",
		"a.lan 10.0.0.9 - -",
		"b.lan 10.0.0.1 x.lan,w.lan -",
		"b.lan 10.0.0.2 - a,z",
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	for i := range lines {
		lines[i] = strings.Join(strings.Fields(lines[i]), " ")
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Fatalf("table:\n%s\nwant:\n%s", out.String(), strings.Join(want, "\n"))
	}
	if err := list([]string{"-addr", srv.Addr(), "-ca", srv.CAFile(), "-cert", srv.CertFile(), "-key", srv.KeyFile(), "-server-name", "router.lan"}, &out); err == nil {
		t.Fatal("a server certificate without the requested name was accepted")
	}
}

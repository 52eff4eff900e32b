package operator

import "testing"

func TestBuildString(t *testing.T) {
	for _, c := range []struct {
		b    Build
		want string
	}{
		{Build{Version: "v0.1.0", Commit: "0123abc", Date: "2026-11-24T00:00:00Z"}, "v0.1.0 (commit 0123abc, built 2026-11-24T00:00:00Z)"},
		{Build{Version: "dev"}, "dev (commit unknown, built unknown)"},
	} {
		if got := c.b.String(); got != c.want {
			t.Errorf("%+v: %q, want %q", c.b, got, c.want)
		}
	}
	// What -ldflags set is never replaced by the toolchain's stamp.
	if b := (Build{Version: "v1", Commit: "set", Date: "set"}).WithVCS(); b.Commit != "set" || b.Date != "set" {
		t.Errorf("WithVCS replaced the build's own values: %+v", b)
	}
}

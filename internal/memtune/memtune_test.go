package memtune

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"
)

func TestContainerLimit(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		name  string
		files []string
		want  int64
	}{
		{"v2 limit", []string{write("v2", "134217728\n")}, 134217728},
		{"v2 unlimited", []string{write("v2max", "max\n"), write("v1a", "1000")}, 0},
		{"v1 limit after a missing v2", []string{filepath.Join(dir, "absent"), write("v1", "67108864")}, 67108864},
		{"v1 unlimited", []string{write("v1max", "9223372036854771712")}, 0},
		{"garbage", []string{write("bad", "lots")}, 0},
		{"no cgroup", []string{filepath.Join(dir, "none")}, 0},
	} {
		if got := containerLimit(tc.files); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestSetMemoryLimit(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(before) })
	p := filepath.Join(t.TempDir(), "memory.max")
	if err := os.WriteFile(p, []byte("134217728"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GOMEMLIMIT", "")
	if got := setMemoryLimit([]string{p}); got != 96<<20 || debug.SetMemoryLimit(-1) != got {
		t.Fatalf("soft limit %d (runtime %d), want 128 MiB less 32 MiB", got, debug.SetMemoryLimit(-1))
	}
	small := filepath.Join(t.TempDir(), "memory.max")
	if err := os.WriteFile(small, []byte("50331648"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := setMemoryLimit([]string{small}); got != 24<<20 {
		t.Fatalf("soft limit %d for a 48 MiB container, want half of it", got)
	}
	t.Setenv("GOMEMLIMIT", "100MiB")
	if got := setMemoryLimit([]string{p}); got != 0 {
		t.Fatalf("GOMEMLIMIT set, yet the limit was changed to %d", got)
	}
}

func TestSetGCPercent(t *testing.T) {
	before := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(before) })
	t.Setenv("GOGC", "")
	if got := setGCPercent(); got != 50 || debug.SetGCPercent(100) != 50 {
		t.Fatalf("GOGC unset: set %d, want 50", got)
	}
	t.Setenv("GOGC", "200")
	if got := setGCPercent(); got != 0 || debug.SetGCPercent(100) != 100 {
		t.Fatalf("GOGC set, yet the GC percent was changed to %d", got)
	}
}

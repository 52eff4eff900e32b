// Package memtune sets the Go runtime's memory knobs for a small, mostly idle operator in a
// container with a memory limit.
package memtune

import (
	"math"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
)

// defaultGCPercent replaces Go's 100 when GOGC is not set: the heap may grow by half its live
// size between collections instead of doubling. The operator is idle between syncs, so the
// extra collections cost milliseconds a sync and save a good part of its peak heap
// (docs/performance.md).
const defaultGCPercent = 50

// setGCPercent applies defaultGCPercent unless GOGC says otherwise; it returns the value set,
// 0 when GOGC was left to the runtime.
func setGCPercent() int {
	if os.Getenv("GOGC") != "" {
		return 0
	}
	debug.SetGCPercent(defaultGCPercent)
	return defaultGCPercent
}

// The cgroup files that hold the container's memory limit: v2, then v1.
var cgroupLimitFiles = []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}

// memoryReserve is the part of the container's limit kept back from the Go runtime's soft
// limit: the runtime counts only the memory it manages, while the cgroup also charges the
// binary's own mapped pages (about 25 MiB, docs/performance.md).
const memoryReserve = 32 << 20

// setMemoryLimit gives the Go runtime a soft memory limit below the container's (the limit
// less memoryReserve, at least half of it), so the GC works harder as the heap nears the limit
// instead of the kernel killing the pod. GOMEMLIMIT, when set, wins (the runtime has applied
// it already). It returns the limit set, 0 for none.
func setMemoryLimit(files []string) int64 {
	if os.Getenv("GOMEMLIMIT") != "" {
		return 0
	}
	limit := containerLimit(files)
	if limit <= 0 {
		return 0
	}
	soft := max(limit-memoryReserve, limit/2)
	debug.SetMemoryLimit(soft)
	return soft
}

// containerLimit reads the first cgroup limit file that names a limit; "max", a v1 "no limit"
// (a value near the int64 maximum) or no file at all mean none.
func containerLimit(files []string) int64 {
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		v := strings.TrimSpace(string(b))
		if v == "max" {
			return 0
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 || n >= math.MaxInt64/2 {
			return 0
		}
		return n
	}
	return 0
}

// Set sets the collector's pace and a soft memory limit below the container's; it returns
// the soft limit set, 0 when there is none.
func Set() int64 {
	setGCPercent()
	return setMemoryLimit(cgroupLimitFiles)
}

package main

import (
	"math"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
)

// The cgroup files that hold the container's memory limit: v2, then v1.
var cgroupLimitFiles = []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}

// memoryLimitShare is the part of the container's limit given to the Go runtime as its soft
// limit; the rest covers what the runtime does not count (the binary's mapped pages).
const memoryLimitShare = 0.9

// setMemoryLimit gives the Go runtime a soft memory limit below the container's, so the GC
// works harder as the heap nears the limit instead of the kernel killing the pod. GOMEMLIMIT,
// when set, wins (the runtime has applied it already). It returns the limit set, 0 for none.
func setMemoryLimit(files []string) int64 {
	if os.Getenv("GOMEMLIMIT") != "" {
		return 0
	}
	limit := containerLimit(files)
	if limit <= 0 {
		return 0
	}
	soft := int64(float64(limit) * memoryLimitShare)
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

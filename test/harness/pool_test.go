package harness

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestPool: every job runs exactly once, never more than workers at a time, and the error is
// the lowest-numbered failure's, with the count of the others, whichever finished first.
func TestPool(t *testing.T) {
	for _, tc := range []struct {
		name    string
		workers int
		jobs    int
		fail    []int
		wantMax int // the most jobs that may run at once
		wantErr string
	}{
		{name: "no jobs", workers: 4, jobs: 0, wantMax: 0},
		{name: "fewer workers than jobs", workers: 3, jobs: 50, wantMax: 3},
		{name: "more workers than jobs", workers: 16, jobs: 5, wantMax: 5},
		{name: "all at once", workers: 0, jobs: 7, wantMax: 7},
		{name: "one failure", workers: 4, jobs: 20, fail: []int{9}, wantMax: 4, wantErr: "job 9: sentinel"},
		// The highest-numbered failure ends first, so that "first" cannot mean first in time.
		{name: "several failures", workers: 8, jobs: 20, fail: []int{17, 4, 11}, wantMax: 8, wantErr: "job 4: sentinel (and 2 more failed)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			runs := make([]atomic.Int32, tc.jobs)
			var (
				mu            sync.Mutex
				running, most int
				sentinel      = errors.New("sentinel")
			)
			failing := map[int]bool{}
			for _, i := range tc.fail {
				failing[i] = true
			}
			err := Pool(tc.workers, tc.jobs, func(i int) error {
				runs[i].Add(1)
				mu.Lock()
				running++
				most = max(most, running)
				mu.Unlock()
				defer func() { mu.Lock(); running--; mu.Unlock() }()
				if failing[i] {
					time.Sleep(time.Duration(tc.jobs-i) * time.Millisecond)
					return fmt.Errorf("job %d: %w", i, sentinel)
				}
				time.Sleep(time.Millisecond)
				return nil
			})
			for i := range runs {
				if n := runs[i].Load(); n != 1 {
					t.Errorf("job %d ran %d times", i, n)
				}
			}
			if most > tc.wantMax {
				t.Errorf("%d jobs ran at once, want at most %d", most, tc.wantMax)
			}
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("err %v, want none", err)
			case tc.wantErr != "" && (err == nil || err.Error() != tc.wantErr):
				t.Errorf("err %v, want %q", err, tc.wantErr)
			}
			if tc.wantErr != "" && !errors.Is(err, sentinel) {
				t.Errorf("err %v does not wrap the job's error", err)
			}
		})
	}
}

package harness

import (
	"fmt"
	"sync"
)

// Pool runs job(0) … job(jobs-1), each once, on at most workers goroutines (all at once when
// workers < 1). A failed job does not stop the others: each job is independent, and the
// caller wants every one tried. It returns nil when every job succeeded, and otherwise the
// error of the lowest-numbered job that failed, with how many others failed: one cause to
// read, not thousands of copies of it.
func Pool(workers, jobs int, job func(i int) error) error {
	if jobs < 1 {
		return nil
	}
	if workers < 1 || workers > jobs {
		workers = jobs
	}
	errs := make([]error, jobs)
	next := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := range next {
				errs[i] = job(i)
			}
		})
	}
	for i := range jobs {
		next <- i
	}
	close(next)
	wg.Wait()
	var first error
	failed := 0
	for _, err := range errs {
		if err != nil {
			if first == nil {
				first = err
			}
			failed++
		}
	}
	if failed > 1 {
		return fmt.Errorf("%w (and %d more failed)", first, failed-1)
	}
	return first
}

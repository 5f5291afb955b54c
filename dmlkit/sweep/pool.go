package sweep

import (
	"context"
	"sync"
)

// runPool calls do for each job on max(workers, 1) goroutines and returns when every started call
// has returned. Jobs are handed out in order; once ctx is cancelled no further job starts (a job
// already handed to a worker is skipped there), so a cancelled pool leaves the remaining jobs
// neither run nor failed. [Execute] and [Remeasure] share it.
func runPool[J any](ctx context.Context, workers int, jobs []J, do func(J)) {
	ch := make(chan J)
	var wg sync.WaitGroup
	for range max(workers, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range ch {
				if ctx.Err() != nil {
					continue // cancelled before this job started
				}
				do(j)
			}
		}()
	}
feed:
	for _, j := range jobs {
		if ctx.Err() != nil { // select picks at random among ready cases: check first
			break
		}
		select {
		case <-ctx.Done():
			break feed
		case ch <- j:
		}
	}
	close(ch)
	wg.Wait()
}

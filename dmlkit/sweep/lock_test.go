package sweep

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// blockingRunner is fakeRunner, except that its first call signals started and then waits for
// release.
func blockingRunner(calls *atomic.Int64, started chan<- struct{}, release <-chan struct{}) Runner {
	good := fakeRunner(calls)
	var n atomic.Int64
	return func(ctx context.Context, r RunSpec, p func(string)) (*Outcome, error) {
		if n.Add(1) == 1 {
			close(started)
			select {
			case <-release:
			case <-time.After(30 * time.Second):
				return nil, errors.New("never released")
			}
		}
		return good(ctx, r, p)
	}
}

// TestSecondSweepOnOneStoreFailsFast: while one sweep runs on a results directory, a second one on
// the same directory (same process, its own file descriptors) runs nothing and fails at once,
// naming the directory and the holder's PID; the first then completes the store exactly once.
func TestSecondSweepOnOneStoreFailsFast(t *testing.T) {
	s := mustParse(t, specYAML)
	plan, _ := s.Resolve("small")
	dir := t.TempDir()
	var callsA, callsB atomic.Int64
	started, release := make(chan struct{}), make(chan struct{})
	errA := make(chan error, 1)
	go func() {
		_, _, err := RunSweep(bg(), s, SweepOptions{Scale: "small", ExecOptions: ExecOptions{
			Runner: blockingRunner(&callsA, started, release), Store: NewStore(dir), WorkDir: t.TempDir()}})
		errA <- err
	}()
	<-started
	t0 := time.Now()
	_, _, errB := RunSweep(bg(), s, SweepOptions{Scale: "small", ExecOptions: ExecOptions{
		Runner: fakeRunner(&callsB), Store: NewStore(dir), WorkDir: t.TempDir()}})
	close(release)
	if err := <-errA; err != nil {
		t.Fatalf("first sweep: %v", err)
	}
	if errB == nil || !strings.Contains(errB.Error(), dir) || !strings.Contains(errB.Error(), "PID "+strconv.Itoa(os.Getpid())) {
		t.Fatalf("second sweep: err %v, want one naming %s and PID %d", errB, dir, os.Getpid())
	}
	if callsB.Load() != 0 || time.Since(t0) > 5*time.Second {
		t.Fatalf("second sweep ran %d runs in %v", callsB.Load(), time.Since(t0))
	}
	checkStoreComplete(t, NewStore(dir), plan)
}

// TestLockHelper is not a test by itself: TestSweepLockAcrossProcesses runs the test binary with
// DMLKIT_LOCK_HELPER set; it runs a sweep whose first run writes DIR/started and waits for
// DIR/release.
func TestLockHelper(t *testing.T) {
	dir := os.Getenv("DMLKIT_LOCK_HELPER")
	if dir == "" {
		t.Skip("helper process for TestSweepLockAcrossProcesses")
	}
	s := mustParse(t, specYAML)
	var calls atomic.Int64
	good := fakeRunner(&calls)
	var n atomic.Int64
	runner := func(ctx context.Context, r RunSpec, p func(string)) (*Outcome, error) {
		if n.Add(1) == 1 {
			_ = os.WriteFile(filepath.Join(dir, "started"), []byte(strconv.Itoa(os.Getpid())), 0o644)
			for i := 0; ; i++ {
				if _, err := os.Stat(filepath.Join(dir, "release")); err == nil {
					break
				}
				if i > 3000 {
					return nil, errors.New("never released")
				}
				time.Sleep(10 * time.Millisecond)
			}
		}
		return good(ctx, r, p)
	}
	_, _, err := RunSweep(bg(), s, SweepOptions{Scale: "small", ExecOptions: ExecOptions{Runner: runner,
		Store: NewStore(filepath.Join(dir, "results")), WorkDir: filepath.Join(dir, "work")}})
	if err != nil {
		t.Fatal(err)
	}
}

func TestSweepLockAcrossProcesses(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no flock")
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestLockHelper$", "-test.count=1")
	cmd.Env = append(os.Environ(), "DMLKIT_LOCK_HELPER="+dir)
	out := &strings.Builder{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	for i := 0; ; i++ {
		if _, err := os.Stat(filepath.Join(dir, "started")); err == nil {
			break
		}
		if i > 3000 {
			t.Fatalf("helper never started its first run:\n%s", out)
		}
		time.Sleep(10 * time.Millisecond)
	}
	s := mustParse(t, specYAML)
	plan, _ := s.Resolve("small")
	results := filepath.Join(dir, "results")
	var calls atomic.Int64
	_, _, err := RunSweep(bg(), s, SweepOptions{Scale: "small", ExecOptions: ExecOptions{
		Runner: fakeRunner(&calls), Store: NewStore(results), WorkDir: t.TempDir()}})
	want := fmt.Sprintf("PID %d", cmd.Process.Pid)
	if err == nil || !strings.Contains(err.Error(), results) || !strings.Contains(err.Error(), want) || calls.Load() != 0 {
		t.Fatalf("sweep beside another process: err %v after %d runs, want an error naming %s and %s", err, calls.Load(), results, want)
	}
	if err := os.WriteFile(filepath.Join(dir, "release"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("helper: %v\n%s", err, out)
	}
	checkStoreComplete(t, NewStore(results), plan)
}

// TestSweepLockWaitAndShards: with WaitLock the second sweep waits for the first (told whom it
// waits for) and then finds every run stored; shards of one sweep share the directory but not a
// shard, and no shard runs beside an unsharded sweep.
func TestSweepLockWaitAndShards(t *testing.T) {
	s := mustParse(t, specYAML)
	plan, _ := s.Resolve("small")
	dir := t.TempDir()
	var callsA, callsB atomic.Int64
	started, release := make(chan struct{}), make(chan struct{})
	errA := make(chan error, 1)
	go func() {
		_, _, err := RunSweep(bg(), s, SweepOptions{Scale: "small", ExecOptions: ExecOptions{
			Runner: blockingRunner(&callsA, started, release), Store: NewStore(dir), WorkDir: t.TempDir()}})
		errA <- err
	}()
	<-started
	// A shard cannot start beside the unsharded sweep either.
	if _, err := NewStore(dir).LockSweep(bg(), LockOptions{Index: 1, Of: 3}); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("PID %d", os.Getpid())) {
		t.Fatalf("shard beside an unsharded sweep: %v", err)
	}
	var waited atomic.Int64
	go func() {
		for waited.Load() == 0 {
			time.Sleep(5 * time.Millisecond)
		}
		close(release)
	}()
	_, sum, err := RunSweep(bg(), s, SweepOptions{Scale: "small", WaitLock: true, Waiting: func(e *LockedError) {
		if len(e.Holders) == 1 && strings.Contains(e.Holders[0], fmt.Sprintf("PID %d", os.Getpid())) {
			waited.Add(1)
		} else {
			t.Errorf("waiting for %v", e.Holders)
			waited.Add(1)
		}
	}, ExecOptions: ExecOptions{Runner: fakeRunner(&callsB), Store: NewStore(dir), WorkDir: t.TempDir()}})
	if err != nil || <-errA != nil {
		t.Fatalf("waiting sweep: %v", err)
	}
	if waited.Load() != 1 || callsB.Load() != 0 || sum.Skipped != 12 {
		t.Fatalf("waiting sweep: told %d times, ran %d, summary %+v", waited.Load(), callsB.Load(), sum)
	}
	checkStoreComplete(t, NewStore(dir), plan)

	// Shards: 0 and 1 of 2 together; a second shard 1 and an unsharded sweep are refused.
	st := NewStore(t.TempDir())
	l0, err := st.LockSweep(bg(), LockOptions{Index: 0, Of: 2})
	if err != nil {
		t.Fatal(err)
	}
	l1, err := NewStore(st.Dir).LockSweep(bg(), LockOptions{Index: 1, Of: 2})
	if err != nil {
		t.Fatal(err)
	}
	var le *LockedError
	if _, err := NewStore(st.Dir).LockSweep(bg(), LockOptions{Index: 1, Of: 2}); !errors.As(err, &le) || !strings.Contains(err.Error(), "shard 1 of 2") {
		t.Fatalf("shard 1 twice: %v", err)
	}
	if _, err := NewStore(st.Dir).LockSweep(bg(), LockOptions{}); !errors.As(err, &le) || len(le.Holders) != 2 {
		t.Fatalf("unsharded beside shards: %v", err)
	}
	ctx, cancel := context.WithTimeout(bg(), 50*time.Millisecond)
	defer cancel()
	if _, err := NewStore(st.Dir).LockSweep(ctx, LockOptions{Wait: true, Poll: time.Millisecond}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("waiting past the context: %v", err)
	}
	l0.Unlock()
	l1.Unlock()
	l, err := NewStore(st.Dir).LockSweep(bg(), LockOptions{})
	if err != nil {
		t.Fatalf("after the shards: %v", err)
	}
	l.Unlock()
}

// TestShardsOfDifferentCountsRefused: while shard 0 of 2 holds a results directory, a shard with
// another --of (1 of 3) is refused at once, also with Wait, by an error naming both shard
// settings, and its sweep runs nothing; shard 1 of 2 still runs beside shard 0 of 2; once the
// --of 2 shards are gone, shard 1 of 3 may start (and then refuses --of 2 in turn).
func TestShardsOfDifferentCountsRefused(t *testing.T) {
	st := NewStore(t.TempDir())
	l0, err := st.LockSweep(bg(), LockOptions{Index: 0, Of: 2})
	if err != nil {
		t.Fatal(err)
	}
	for _, wait := range []bool{false, true} {
		ctx, cancel := context.WithTimeout(bg(), 2*time.Second)
		_, err := NewStore(st.Dir).LockSweep(ctx, LockOptions{Index: 1, Of: 3, Wait: wait, Poll: time.Millisecond})
		cancel()
		var se *ShardCountError
		if !errors.As(err, &se) || !strings.Contains(err.Error(), "shard 0 of 2") || !strings.Contains(err.Error(), "shard 1 of 3") || !strings.Contains(err.Error(), st.Dir) {
			t.Fatalf("shard 1 of 3 beside shard 0 of 2 (wait %v): %v", wait, err)
		}
	}
	s := mustParse(t, specYAML)
	var calls atomic.Int64
	if _, _, err := RunSweep(bg(), s, SweepOptions{Scale: "small", Index: 2, Of: 3, ExecOptions: ExecOptions{
		Runner: fakeRunner(&calls), Store: NewStore(st.Dir), WorkDir: t.TempDir()}}); err == nil || calls.Load() != 0 {
		t.Fatalf("sweep shard 2 of 3 beside shard 0 of 2: err %v after %d runs", err, calls.Load())
	}
	l1, err := NewStore(st.Dir).LockSweep(bg(), LockOptions{Index: 1, Of: 2})
	if err != nil {
		t.Fatalf("shard 1 of 2 beside shard 0 of 2: %v", err)
	}
	l0.Unlock()
	if _, err := NewStore(st.Dir).LockSweep(bg(), LockOptions{Index: 0, Of: 3}); err == nil {
		t.Fatal("shard 0 of 3 beside shard 1 of 2 started")
	}
	l1.Unlock()
	l3, err := NewStore(st.Dir).LockSweep(bg(), LockOptions{Index: 1, Of: 3})
	if err != nil {
		t.Fatalf("shard 1 of 3 after the --of 2 shards: %v", err)
	}
	var se *ShardCountError
	if _, err := NewStore(st.Dir).LockSweep(bg(), LockOptions{Index: 0, Of: 2}); !errors.As(err, &se) {
		t.Fatalf("shard 0 of 2 beside shard 1 of 3: %v", err)
	}
	l3.Unlock()
}

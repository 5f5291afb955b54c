package reproduce

import (
	"context"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/data"
	"github.com/dmlkit/dmlkit/dmlkit/data/prepare"
	"github.com/dmlkit/dmlkit/dmlkit/sweep"
)

// synthImages: nClasses classes of perClass 12×12 grey images, each class a random 4×4 binary
// template plus noise (as in the train package's tests).
func synthImages(seed uint64, nClasses, perClass int, offset int32) *data.Images {
	const side = 12
	r := rand.New(rand.NewPCG(seed, 11))
	s := &data.Images{Name: "synth", N: nClasses * perClass, H: side, W: side, C: 1}
	s.Pix = make([]uint8, s.N*side*side)
	s.Labels = make([]int32, s.N)
	for c := 0; c < nClasses; c++ {
		var tpl [16]bool
		for i := range tpl {
			tpl[i] = r.IntN(2) == 1
		}
		for k := 0; k < perClass; k++ {
			i := c*perClass + k
			s.Labels[i] = offset + int32(c)
			img := s.Pix[i*side*side : (i+1)*side*side]
			for y := 0; y < side; y++ {
				for x := 0; x < side; x++ {
					v := r.IntN(90)
					if tpl[y/3*4+x/3] {
						v += 165
					}
					img[y*side+x] = uint8(v)
				}
			}
		}
	}
	return s
}

func init() {
	prepare.RegisterDataset("synth-reproduce-test", func(map[string]any) (*data.Split, error) {
		return &data.Split{Train: synthImages(1, 16, 8, 0), Test: synthImages(2, 10, 6, 100)}, nil
	})
}

const divergeSpec = `paper: toy
base:
  data: {name: synth-reproduce-test}
  model: {channels: [4, 8], dim: 8}
  sampler: {name: m_per_class, batch_size: 16, m: 4}
  epochs: 1
  eval: {every: 1, ks: [1, 2], batch_size: 32, metric: R@1}
  checkpoint: {keep: 0}
  loss: {name: contrastive}
scales:
  small: {}
sweep:
  grid: {optimizer.lr: [0.003, 1.0e+30]}
  seeds: [0]
  seed_key: seed
`

// TestDivergedRunLeavesAFailedRecord: the run with lr 1e30 diverges at step 2. It leaves a record
// marked failed with that step (before: no record, so every resume trained it again), which no
// table or claim uses; a resumed sweep skips it, and only RetryFailed runs it again.
func TestDivergedRunLeavesAFailedRecord(t *testing.T) {
	t.Setenv("GOMLX_BACKEND", "go")
	s, err := sweep.Parse([]byte(divergeSpec), filepath.Join(t.TempDir(), "spec.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	sweep.SetValidator(ValidateTrainConfig)
	var calls atomic.Int64
	runner := func(ctx context.Context, rs sweep.RunSpec, p func(string)) (*sweep.Outcome, error) {
		calls.Add(1)
		return TrainRunner(ctx, rs, p)
	}
	store := sweep.NewStore(t.TempDir())
	opt := sweep.SweepOptions{Scale: "small", ExecOptions: sweep.ExecOptions{Runner: runner, Store: store, WorkDir: t.TempDir()}}
	_, sum, err := sweep.RunSweep(context.Background(), s, opt)
	if err == nil || !strings.Contains(err.Error(), "diverged at step 2") || sum == nil || sum.Ran != 1 || len(sum.Failed) != 1 {
		t.Fatalf("first sweep: err %v, summary %+v", err, sum)
	}
	recs, rep, err := store.Load()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 {
		t.Fatalf("%d records stored (%v), want the finished run and the diverged one", len(recs), rep)
	}
	checkFailed(t, recs)
	if len(sweep.Select(recs, "", nil)) != 1 || len(sweep.GroupBy(recs, []string{"optimizer.lr"})) != 1 {
		t.Fatalf("the failed record is selected or grouped")
	}

	// Resume: nothing runs again; the failed run is reported as stored failed.
	calls.Store(0)
	_, sum, err = sweep.RunSweep(context.Background(), s, opt)
	if err != nil || calls.Load() != 0 || sum.Skipped != 2 || sum.SkippedFailed != 1 {
		t.Fatalf("resume: err %v, %d calls, summary %+v", err, calls.Load(), sum)
	}
	// --retry-failed: the diverged run trains again, fails again, and the store still holds one
	// record per run.
	opt.RetryFailed = true
	_, sum, err = sweep.RunSweep(context.Background(), s, opt)
	if err == nil || calls.Load() != 1 || sum.Skipped != 1 || len(sum.Failed) != 1 {
		t.Fatalf("retry: err %v, %d calls, summary %+v", err, calls.Load(), sum)
	}
	recs, rep, err = store.Load()
	if err != nil || len(recs) != 2 || len(rep.Duplicates) != 0 {
		t.Fatalf("after retry: %d records, %+v, %v", len(recs), rep, err)
	}
	checkFailed(t, recs)
}

func checkFailed(t *testing.T, recs []sweep.Record) {
	t.Helper()
	var failed []sweep.Record
	for _, r := range recs {
		if r.Failed != "" {
			failed = append(failed, r)
		}
	}
	if len(failed) != 1 || failed[0].FailedStep != 2 || !strings.Contains(failed[0].Failed, "diverged at step 2") || len(failed[0].Metrics) != 0 {
		t.Fatalf("failed records %+v: want one, diverged at step 2, without metrics", failed)
	}
	if lr, _ := failed[0].Value("optimizer.lr"); lr != 1e30 {
		t.Fatalf("the failed record is for lr %v", lr)
	}
}

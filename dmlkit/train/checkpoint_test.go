package train

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/gomlx/gomlx/ml/model"
)

// TestCheckpointIgnoresStaleTemporary: a leftover that blocks the old fixed temporary name
// (ckpt-….gob.tmp, here a directory) does not stop a checkpoint: it is written through
// dmlkit/atomicfile under a unique temporary name, reads back, and leaves no temporary behind.
func TestCheckpointIgnoresStaleTemporary(t *testing.T) {
	dir := t.TempDir()
	cd := filepath.Join(dir, checkpointDir)
	stale := filepath.Join(cd, checkpointName(7)+".tmp")
	if err := os.MkdirAll(stale, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := saveCheckpoint(dir, model.NewStore(), State{Step: 7, Epoch: 2}, 2); err != nil {
		t.Fatal(err)
	}
	ck, err := LatestCheckpoint(dir)
	if err != nil || filepath.Base(ck) != checkpointName(7) {
		t.Fatalf("latest checkpoint %q, %v", ck, err)
	}
	st, err := loadCheckpoint(ck, model.NewStore())
	if err != nil || st.Step != 7 || st.Epoch != 2 {
		t.Fatalf("read back %+v, %v", st, err)
	}
	ents, _ := os.ReadDir(cd)
	if len(ents) != 2 { // the checkpoint and the stale directory
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("checkpoint directory holds %v", names)
	}
}

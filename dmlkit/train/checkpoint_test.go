package train

import (
	"bytes"
	"encoding/gob"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/core/tensors"
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

// TestCheckpointChecksum: a checkpoint whose bytes changed (one flipped bit in a weight) or lost
// its checksum trailer is refused naming the file; before, it resumed into a different model
// without a word. A version-2 checkpoint (written before checksums) is still read.
func TestCheckpointChecksum(t *testing.T) {
	dir := t.TempDir()
	store := model.NewStore()
	w := make([]float32, 64)
	for i := range w {
		w[i] = float32(i) / 64
	}
	if _, err := store.CreateVariable("/model/w", tensors.FromFlatDataAndDimensions(w, 8, 8)); err != nil {
		t.Fatal(err)
	}
	if err := saveCheckpoint(dir, store, State{Step: 3}, 0); err != nil {
		t.Fatal(err)
	}
	ck, _ := LatestCheckpoint(dir)
	good, err := os.ReadFile(ck)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := loadCheckpoint(ck, model.NewStore()); err != nil {
		t.Fatalf("intact checkpoint: %v", err)
	}
	// Flip one bit of the payload that gob alone decodes without complaint into other weights:
	// the case a checksum must catch.
	payload, _, ok := splitChecksum(good)
	if !ok {
		t.Fatal("no checksum trailer")
	}
	var flipped []byte
	for i := len(payload) - 1; i > 0 && flipped == nil; i-- {
		b := bytes.Clone(good)
		b[i] ^= 0x01
		var cf checkpointFile
		if gob.NewDecoder(bytes.NewReader(b[:len(payload)])).Decode(&cf) == nil && len(cf.Vars) == 1 && len(cf.Vars[0].F32) == 64 {
			for j, v := range cf.Vars[0].F32 {
				if v != w[j] {
					flipped = b
					break
				}
			}
		}
	}
	if flipped == nil {
		t.Fatal("no bit flip that gob decodes into other weights")
	}
	for _, tc := range []struct {
		name string
		b    []byte
		want string
	}{
		{"one flipped bit", flipped, "checksum mismatch"},
		{"trailer cut off", good[:len(payload)], "without its checksum trailer"},
	} {
		if err := os.WriteFile(ck, tc.b, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := loadCheckpoint(ck, model.NewStore()); err == nil || !strings.Contains(err.Error(), ck) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error naming %s and %q", tc.name, err, ck, tc.want)
		}
	}
	// Version 2: the gob payload alone.
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(&checkpointFile{Version: 2, State: State{Step: 5}}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(ck, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if st, err := loadCheckpoint(ck, model.NewStore()); err != nil || st.Step != 5 {
		t.Errorf("version 2: %+v, %v", st, err)
	}
}

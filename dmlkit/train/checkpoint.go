package train

import (
	"bytes"
	"crypto/sha256"
	"encoding/gob"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/dmlkit/dmlkit/dmlkit/atomicfile"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

// State is the position of a run, saved with every checkpoint.
type State struct {
	Step         int     // optimiser steps done
	Epoch        int     // current epoch (0-based)
	BatchInEpoch int     // batches of Epoch already done
	BestVal      float64 // best validation metric so far (early stopping)
	HaveBest     bool
	BadEvals     int     // evaluations since the best
	WallSeconds  float64 // training wall time before this (resumed) session
	LossSum      float64 // running loss sum since the last evaluation
	LossCount    int
}

type savedVar struct {
	Path      string
	Trainable bool
	DType     string
	Dims      []int
	F32       []float32
	F64       []float64
	I32       []int32
	I64       []int64
	U64       []uint64
}

type checkpointFile struct {
	Version int
	State   State
	Vars    []savedVar
}

// checkpointVersion 3 files end with checksumTag and the hex SHA-256 of the gob payload before
// it (and a newline): a flipped bit would otherwise resume into a different model without a
// word. Version 2 files (no checksum) are still read.
const checkpointVersion = 3

const checksumTag = "\ndmlkit-sha256:"

const checkpointDir = "checkpoints"

func checkpointName(step int) string { return fmt.Sprintf("ckpt-%09d.gob", step) }

// saveCheckpoint writes every float32 variable of store and st to dir/checkpoints, keeping the
// newest keep files (keep ≤ 0: all). The file is written with atomicfile.WriteFile (a temporary
// file renamed into place), so a reader never sees a partial checkpoint.
func saveCheckpoint(dir string, store *model.Store, st State, keep int) error {
	cd := filepath.Join(dir, checkpointDir)
	if err := os.MkdirAll(cd, 0o755); err != nil {
		return fmt.Errorf("train: checkpoint: %w", err)
	}
	cf := checkpointFile{Version: checkpointVersion, State: st}
	for v := range store.IterVariables() {
		if strings.HasPrefix(v.Path(), "/"+accScope+"/") {
			continue // accumulators are zero between steps
		}
		t, err := v.Value()
		if err != nil {
			return fmt.Errorf("train: checkpoint: variable %s: %w", v.Path(), err)
		}
		sv := savedVar{Path: v.Path(), Trainable: v.Trainable, DType: t.DType().String(), Dims: v.Shape().Dimensions}
		switch t.DType() {
		case dtypes.Float32:
			sv.F32 = tensors.MustCopyFlatData[float32](t)
		case dtypes.Float64:
			sv.F64 = tensors.MustCopyFlatData[float64](t)
		case dtypes.Int32:
			sv.I32 = tensors.MustCopyFlatData[int32](t)
		case dtypes.Int64:
			sv.I64 = tensors.MustCopyFlatData[int64](t)
		case dtypes.Uint64:
			sv.U64 = tensors.MustCopyFlatData[uint64](t)
		default:
			return fmt.Errorf("train: checkpoint: variable %s has dtype %s, which checkpoints do not support", v.Path(), t.DType())
		}
		cf.Vars = append(cf.Vars, sv)
	}
	sort.Slice(cf.Vars, func(i, j int) bool { return cf.Vars[i].Path < cf.Vars[j].Path })
	final := filepath.Join(cd, checkpointName(st.Step))
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(&cf); err != nil {
		return fmt.Errorf("train: checkpoint %s: %w", final, err)
	}
	sum := sha256.Sum256(buf.Bytes())
	buf.WriteString(checksumTag + hex.EncodeToString(sum[:]) + "\n")
	if err := atomicfile.WriteFile(final, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("train: checkpoint: %w", err)
	}
	if keep > 0 {
		list, _ := listCheckpoints(dir)
		for len(list) > keep {
			os.Remove(list[0])
			list = list[1:]
		}
	}
	return nil
}

// listCheckpoints returns the checkpoint files of a run directory, oldest first.
func listCheckpoints(dir string) ([]string, error) {
	m, err := filepath.Glob(filepath.Join(dir, checkpointDir, "ckpt-*.gob"))
	if err != nil {
		return nil, err
	}
	sort.Strings(m)
	return m, nil
}

// LatestCheckpoint returns the newest checkpoint of a run directory ("" if none).
func LatestCheckpoint(dir string) (string, error) {
	l, err := listCheckpoints(dir)
	if err != nil || len(l) == 0 {
		return "", err
	}
	return l[len(l)-1], nil
}

// loadCheckpoint creates (or overwrites) the store's variables from a checkpoint file and returns
// the saved state. Call it before any graph is built so the model picks the saved values up.
func loadCheckpoint(path string, store *model.Store) (State, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return State{}, fmt.Errorf("train: %w", err)
	}
	payload, recorded, hasSum := splitChecksum(b)
	if hasSum {
		if got := sha256.Sum256(payload); hex.EncodeToString(got[:]) != recorded {
			return State{}, fmt.Errorf("train: checkpoint %s: checksum mismatch (the file's SHA-256 is %s, it records %s): the file is corrupt; resume from an earlier checkpoint or start again",
				path, hex.EncodeToString(got[:]), recorded)
		}
	}
	var cf checkpointFile
	if err := gob.NewDecoder(bytes.NewReader(payload)).Decode(&cf); err != nil {
		return State{}, fmt.Errorf("train: checkpoint %s: %w", path, err)
	}
	switch {
	case cf.Version == checkpointVersion && !hasSum:
		return State{}, fmt.Errorf("train: checkpoint %s: version %d without its checksum trailer: the file is truncated or corrupt", path, cf.Version)
	case cf.Version != 2 && cf.Version != checkpointVersion:
		return State{}, fmt.Errorf("train: checkpoint %s: version %d, want 2 or %d", path, cf.Version, checkpointVersion)
	}
	for _, sv := range cf.Vars {
		var t *tensors.Tensor
		switch {
		case sv.F32 != nil:
			t = tensors.FromFlatDataAndDimensions(sv.F32, sv.Dims...)
		case sv.F64 != nil:
			t = tensors.FromFlatDataAndDimensions(sv.F64, sv.Dims...)
		case sv.I32 != nil:
			t = tensors.FromFlatDataAndDimensions(sv.I32, sv.Dims...)
		case sv.I64 != nil:
			t = tensors.FromFlatDataAndDimensions(sv.I64, sv.Dims...)
		case sv.U64 != nil:
			t = tensors.FromFlatDataAndDimensions(sv.U64, sv.Dims...)
		default:
			return State{}, fmt.Errorf("train: checkpoint %s: variable %s (%s) has no data", path, sv.Path, sv.DType)
		}
		if v := store.GetVariable(sv.Path); v != nil {
			if !v.Shape().Equal(t.Shape()) {
				return State{}, fmt.Errorf("train: checkpoint %s: variable %s has shape %s, model wants %s", path, sv.Path, t.Shape(), v.Shape())
			}
			if err := v.SetValue(t); err != nil {
				return State{}, fmt.Errorf("train: checkpoint %s: %s: %w", path, sv.Path, err)
			}
			continue
		}
		v, err := store.CreateVariable(sv.Path, t)
		if err != nil {
			return State{}, fmt.Errorf("train: checkpoint %s: %s: %w", path, sv.Path, err)
		}
		v.SetTrainable(sv.Trainable)
	}
	return cf.State, nil
}

// splitChecksum splits a checkpoint file into its payload and the hex checksum its trailer
// records; ok is false when the file has no well-formed trailer.
func splitChecksum(b []byte) (payload []byte, sum string, ok bool) {
	const hexLen = 2 * sha256.Size
	n := len(checksumTag) + hexLen + 1
	if len(b) < n || b[len(b)-1] != '\n' || string(b[len(b)-n:len(b)-n+len(checksumTag)]) != checksumTag {
		return b, "", false
	}
	return b[:len(b)-n], string(b[len(b)-hexLen-1 : len(b)-1]), true
}

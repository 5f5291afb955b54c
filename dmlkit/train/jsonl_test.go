package train

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// readJSONL: blank and whitespace-only lines are skipped; a bad line is reported with its file
// and 1-based line number; a missing file wraps fs.ErrNotExist (truncateStepLog relies on it).
func TestReadJSONL(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.jsonl")
	if err := os.WriteFile(good, []byte("{\"step\": 1}\n\n   \n{\"step\": 3}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	recs, err := readJSONL[StepRecord](good)
	if err != nil || len(recs) != 2 || recs[0].Step != 1 || recs[1].Step != 3 {
		t.Fatalf("good file: %v, %+v", err, recs)
	}
	bad := filepath.Join(dir, "bad.jsonl")
	if err := os.WriteFile(bad, []byte("{\"step\": 1}\n{\"step\": \n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := readJSONL[StepRecord](bad); err == nil || !strings.Contains(err.Error(), bad+":2:") {
		t.Errorf("bad line: %v, want %s:2: in the error", err, bad)
	}
	if _, err := readJSONL[EvalRecord](filepath.Join(dir, "missing.jsonl")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v, want fs.ErrNotExist", err)
	}
}

package train

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dmlkit/dmlkit/dmlkit/checksum"
)

// TestRunRecordsWeightDigest: a run on the ONNX fixture (copied beside a SHA256SUMS listing it)
// records the file's SHA-256 in Result.Digests and env.json; with one bit of the copy flipped,
// the run is refused before it writes anything, naming the field, the file and both digests
// (worked out here with crypto/sha256).
func TestRunRecordsWeightDigest(t *testing.T) {
	b, err := os.ReadFile(onnxFixture)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "backbone.onnx")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("%x", sha256.Sum256(b))
	sums := filepath.Join(dir, checksum.SumsFile)
	if err := os.WriteFile(sums, []byte(want+"  backbone.onnx\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := onnxRunConfig()
	cfg.Model.Pretrained = p
	cfg.Epochs = 1
	out := filepath.Join(t.TempDir(), "run")
	res, err := Run(context.Background(), cfg, out, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Digests["model.pretrained"]; got != want {
		t.Errorf("Result.Digests[model.pretrained] = %q, want %s", got, want)
	}
	j, err := os.ReadFile(filepath.Join(out, "env.json"))
	if err != nil {
		t.Fatal(err)
	}
	var env Env
	if err := json.Unmarshal(j, &env); err != nil {
		t.Fatal(err)
	}
	if got := env.Digests["model.pretrained"]; got != want {
		t.Errorf("env.json digests[model.pretrained] = %q, want %s", got, want)
	}

	bad := append([]byte(nil), b...)
	bad[len(bad)-100] ^= 0x04
	if err := os.WriteFile(p, bad, 0o644); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(p, later, later); err != nil {
		t.Fatal(err)
	}
	out2 := filepath.Join(t.TempDir(), "run")
	_, err = Run(context.Background(), cfg, out2, nil)
	if err == nil {
		t.Fatal("a damaged backbone file was used")
	}
	for _, s := range []string{"model.pretrained", p, sums, want, fmt.Sprintf("%x", sha256.Sum256(bad))} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not name %s", err, s)
		}
	}
	if _, err := os.Stat(out2); !os.IsNotExist(err) {
		t.Errorf("the refused run created %s (%v)", out2, err)
	}
}

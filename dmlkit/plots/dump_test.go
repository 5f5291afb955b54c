package plots

import (
	"os"
	"path/filepath"
	"testing"
)

func TestDumpFigures(t *testing.T) {
	dir := os.Getenv("DMLKIT_PLOTS_DUMP")
	if dir == "" {
		t.Skip("set DMLKIT_PLOTS_DUMP=dir to write the fixture figures there for inspection")
	}
	st := DefaultStyle()
	for name, p := range fixtures(t, st) {
		if _, err := Save(p, st, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
		probs, _ := CheckLayout(p, st)
		for _, pr := range probs {
			t.Logf("%s: %s", name, pr)
		}
	}
}

package train

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLoadConfigNamesTheProblem: an empty run configuration and eval.degrade given as a map are
// errors naming the file and the field (before: "EOF" and "cannot unmarshal !!map into
// []data.Degradation").
func TestLoadConfigNamesTheProblem(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ name, text, want string }{
		{"empty.yaml", "", "empty.yaml: the file is empty (want a YAML mapping of run settings"},
		{"comment.yaml", "# nothing yet\n", "comment.yaml: the file is empty"},
		{"degrade.yaml", "eval:\n  degrade: {kind: noise, level: 0.1}\n", `degrade.yaml: field "eval.degrade" (line 2): a list of {kind, level}, given as a mapping`},
	} {
		p := filepath.Join(dir, tc.name)
		if err := os.WriteFile(p, []byte(tc.text), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadConfig(p); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
	p := filepath.Join(dir, "ok.yaml")
	if err := os.WriteFile(p, []byte("eval:\n  degrade: [{kind: noise, level: 0.1}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if c, err := LoadConfig(p); err != nil || len(c.Eval.Degrade) != 1 || c.Eval.Degrade[0].Level != 0.1 {
		t.Errorf("a list: %+v, %v", c.Eval.Degrade, err)
	}
}

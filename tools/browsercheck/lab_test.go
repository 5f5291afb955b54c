package main

import (
	"strings"
	"testing"
)

func TestLabVerdict(t *testing.T) {
	tests := []struct {
		name  string
		st    LabState
		wants []string // substrings of the error; none means it passes
	}{
		{"passes", LabState{CodeCells: 10, Status: "idle", Images: 4, PNGs: 4}, nil},
		{"no image", LabState{CodeCells: 10, Status: "idle"}, []string{"0 images rendered, want at least 1"}},
		{"error output", LabState{CodeCells: 10, Images: 1, Errors: 1, ErrorText: []string{"ERROR: exit status 2"}},
			[]string{"1 error outputs: ERROR: exit status 2"}},
		{"cells not run", LabState{CodeCells: 10, Pending: 3, Images: 1}, []string{"3 of 10 code cells did not run"}},
	}
	for _, tc := range tests {
		err := tc.st.Verdict(1)
		if len(tc.wants) == 0 {
			if err != nil {
				t.Errorf("%s: Verdict = %v, want pass", tc.name, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("%s: Verdict passed, want an error", tc.name)
			continue
		}
		for _, w := range tc.wants {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: Verdict = %q, want it to mention %q", tc.name, err, w)
			}
		}
	}
}

// TestLabJS: the panel is looked up by its path, quoted as a JavaScript string.
func TestLabJS(t *testing.T) {
	js := labJS(`a "b".ipynb`, "return 1;", "null")
	if !strings.Contains(js, `w.context.path === "a \"b\".ipynb"`) || strings.Contains(js, "PATH") {
		t.Errorf("labJS did not substitute the quoted path:\n%s", js)
	}
	if !strings.HasPrefix(js, "(() => { const panel = ") || !strings.HasSuffix(js, "if (!panel) return null; return 1; })()") {
		t.Errorf("labJS = %s", js)
	}
}

package main

import (
	"strings"
	"testing"
)

func TestVerdict(t *testing.T) {
	tests := []struct {
		name  string
		st    State
		min   int
		wants []string // substrings of the error; none means it passes
	}{
		{"passes", State{Cells: 4, Idle: true, Images: 1}, 1, nil},
		{"more images than needed", State{Cells: 4, Idle: true, Images: 3}, 1, nil},
		{"no image", State{Cells: 4, Idle: true}, 1, []string{"0 images rendered, want at least 1"}},
		{"error output", State{Cells: 4, Idle: true, Images: 1, Errors: 1, ErrorText: []string{"exit status 2"}}, 1,
			[]string{"1 error outputs: exit status 2"}},
		{"unfinished and no image", State{Cells: 4, Pending: 2, Idle: true}, 1,
			[]string{"2 of 4 code cells did not finish", "0 images"}},
	}
	for _, tc := range tests {
		err := tc.st.Verdict(tc.min)
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

func TestExportVerdict(t *testing.T) {
	for _, tc := range []struct {
		name string
		st   ExportState
		want string // substring of the error; "" means it passes
	}{
		{"typeset, opens on its results", ExportState{Math: 13, Abstract: 300, FirstResult: 700}, ""},
		{"no tagged first result (the tour)", ExportState{Math: 2, Abstract: -1, FirstResult: -1}, ""},
		// Today's export read offline: MathJax missing, the TeX shown as text.
		{"raw TeX", ExportState{RawTeX: []string{"$S_{an}$"}, Abstract: -1, FirstResult: -1}, "1 formulas shown as TeX"},
		{"formula drawn empty", ExportState{Math: 3, EmptyMath: 1, Abstract: -1, FirstResult: -1}, "1 of 3 formulas drawn empty"},
		// Today's layout: ~3,000 px of setup before the first result.
		{"first result below the screen", ExportState{Abstract: 200, FirstResult: 3000}, "below the first screen"},
		{"no abstract", ExportState{Abstract: -1, FirstResult: 500}, "no abstract before the first result"},
		// The RS@k export before nbcheck's wide-table rule (browsercheck -exports on it): its setting
		// table drawn 1,993 px wide on a page whose text ends at 1,177 px; IDML's failed alike (1,442 px).
		{"table wider than the page", ExportState{Abstract: -1, FirstResult: -1, PageRight: 1177, WideTables: []string{"fig8 fig9 init-bg200: 1993 px"}}, "1 tables wider than the page"},
	} {
		err := tc.st.Verdict()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v, want pass", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestBarString(t *testing.T) {
	for _, tc := range []struct {
		frac float64
		want string
	}{
		{0, ">" + strings.Repeat(" ", 29)},
		{0.5, strings.Repeat("=", 15) + ">" + strings.Repeat(" ", 14)},
		{1, strings.Repeat("=", 30)},
		{1.7, strings.Repeat("=", 30)}, // clamped
	} {
		if got := barString(tc.frac); got != tc.want {
			t.Errorf("barString(%v) = %q, want %q", tc.frac, got, tc.want)
		}
	}
	// Off a terminal the printer writes one line per finished stage and nothing else.
	var buf bytes.Buffer
	p := newProgressPrinter(&buf)
	p.update("load", 0, 2)
	p.update("load", 2, 2)
	p.update("load", 2, 2)
	if buf.String() != "load: done\n" {
		t.Errorf("non-terminal progress output %q", buf.String())
	}
}

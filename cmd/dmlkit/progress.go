package main

import (
	"fmt"
	"io"
	"os"
	"strings"
)

// barWidth is the width of the CLI's progress bars, in characters.
const barWidth = 30

// barString renders the "=====>    " body of a progress bar at fraction frac ∈ [0, 1].
func barString(frac float64) string {
	n := min(max(int(frac*barWidth), 0), barWidth)
	bar := strings.Repeat("=", n)
	if n < barWidth {
		bar += ">" + strings.Repeat(" ", barWidth-n-1)
	}
	return bar
}

// progressPrinter renders library progress callbacks as a one-line bar on a terminal, or as one
// line per finished stage on anything else (CI logs).
type progressPrinter struct {
	w    io.Writer
	tty  bool
	last string
}

func newProgressPrinter(w io.Writer) *progressPrinter {
	tty := false
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			tty = true
		}
	}
	return &progressPrinter{w: w, tty: tty}
}

func (p *progressPrinter) update(stage string, done, total int) {
	if !p.tty {
		if done >= total && stage != p.last {
			p.last = stage
			fmt.Fprintf(p.w, "%s: done\n", stage)
		}
		return
	}
	frac := 1.0
	if total > 0 {
		frac = float64(done) / float64(total)
	}
	line := fmt.Sprintf("\r%-40s [%s] %3.0f%%", stage, barString(frac), 100*frac)
	if line == p.last {
		return
	}
	p.last = line
	fmt.Fprint(p.w, line)
	if done >= total {
		fmt.Fprintln(p.w)
	}
}

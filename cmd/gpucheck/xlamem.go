package main

import (
	"bufio"
	"bytes"
	"flag"
	"io"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"k8s.io/klog/v2"
)

// xlaExecMemory is XLA's own report of one compiled executable's device memory (PJRT's
// GetCompiledMemoryStats, which go-xla logs at klog verbosity 1 after each compilation:
// "Memory usage: On Device: [Code:…, Inputs:…, Outputs:…, Aliases:…, Temporary:…]"), in bytes.
// Temporary is the executable's scratch: the activations kept for the backward pass and every
// intermediate, as XLA's buffer assignment packs them. go-xla prints the sizes with
// github.com/gomlx/compute/support/humanize.Bytes: powers of 1024 with one decimal ("83.0 MiB"),
// so a value is good to ±0.05 of its unit (under 5 % from 1 KiB up, under 0.5 % from 10 units up).
type xlaExecMemory struct {
	Code      int64 `json:"code"`
	Inputs    int64 `json:"inputs"`
	Outputs   int64 `json:"outputs"`
	Aliases   int64 `json:"aliases"`
	Temporary int64 `json:"temporary"`
}

// Total is what the executable needs while it runs: code + inputs + outputs − aliases +
// temporary (pjrt.ExecutableMemoryUsageStats.Requirements).
func (m xlaExecMemory) Total() int64 { return m.Code + m.Inputs + m.Outputs - m.Aliases + m.Temporary }

var xlaMemLine = regexp.MustCompile(`Memory usage: On Device: \[Code:([^,]+), Inputs:([^,]+), Outputs:([^,]+), Aliases:([^,]+), Temporary:([^\]]+)\]`)

// parseXLAMemoryLine reads one go-xla "Memory usage" log line.
func parseXLAMemoryLine(line string) (xlaExecMemory, bool) {
	m := xlaMemLine.FindStringSubmatch(line)
	if m == nil {
		return xlaExecMemory{}, false
	}
	var v [5]int64
	for i := range v {
		b, ok := parseHumanBytes(m[i+1])
		if !ok {
			return xlaExecMemory{}, false
		}
		v[i] = b
	}
	return xlaExecMemory{Code: v[0], Inputs: v[1], Outputs: v[2], Aliases: v[3], Temporary: v[4]}, true
}

// parseHumanBytes reads the sizes go-xla's log line holds: humanize.Bytes of
// github.com/gomlx/compute/support/humanize ("0 B", "512 B", "1.5 KiB", "83.0 MiB", "12.3 GiB", powers
// of 1024), and, should a go-xla version render them with go-humanize, its SI units ("1.2 kB",
// "83 MB", powers of 1000). Negative or unknown sizes are refused.
func parseHumanBytes(s string) (int64, bool) {
	f := strings.Fields(strings.TrimSpace(s))
	if len(f) != 2 {
		return 0, false
	}
	x, err := strconv.ParseFloat(f[0], 64)
	if err != nil || x < 0 {
		return 0, false
	}
	mult := map[string]float64{
		"B":   1,
		"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40, "PiB": 1 << 50,
		"kB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12,
	}[f[1]]
	if mult == 0 {
		return 0, false
	}
	return int64(x*mult + 0.5), true
}

// xlaMemCapture collects the memory statistics of every executable compiled while it is on.
type xlaMemCapture struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	execs []xlaExecMemory
}

func (c *xlaMemCapture) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.buf.Write(p)
	for {
		line, err := c.buf.ReadString('\n')
		if err != nil { // keep the partial line for the next write
			rest := line
			c.buf.Reset()
			c.buf.WriteString(rest)
			break
		}
		if m, ok := parseXLAMemoryLine(line); ok {
			c.execs = append(c.execs, m)
		}
	}
	return len(p), nil
}

// startXLAMemCapture turns klog's verbosity to 1 and routes its output to a capture (and
// nowhere else), so that go-xla's per-compilation memory report is recorded; the Go backend
// logs nothing there. The returned function restores nothing (gpucheck runs one bench per
// process) and returns the executables' reports in compilation order.
func startXLAMemCapture() func() []xlaExecMemory {
	c := &xlaMemCapture{}
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	klog.InitFlags(fs)
	for k, v := range map[string]string{"v": "1", "logtostderr": "false", "alsologtostderr": "false", "stderrthreshold": "FATAL"} {
		_ = fs.Set(k, v)
	}
	klog.SetOutput(c)
	return func() []xlaExecMemory {
		klog.Flush()
		c.mu.Lock()
		defer c.mu.Unlock()
		sc := bufio.NewScanner(strings.NewReader(c.buf.String()))
		for sc.Scan() {
			if m, ok := parseXLAMemoryLine(sc.Text()); ok {
				c.execs = append(c.execs, m)
			}
		}
		c.buf.Reset()
		return append([]xlaExecMemory(nil), c.execs...)
	}
}

// largestXLAExec is the report with the largest Total (a training step's executable), or nil.
func largestXLAExec(execs []xlaExecMemory) *xlaExecMemory {
	var best *xlaExecMemory
	for i := range execs {
		if best == nil || execs[i].Total() > best.Total() {
			best = &execs[i]
		}
	}
	return best
}

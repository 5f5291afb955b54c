package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image/png"
	"sort"
	"strings"
	"time"
)

// pngMagic is the 8-byte signature every PNG file starts with.
var pngMagic = []byte{0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'}

// Options configures [Check].
type Options struct {
	// DefaultBudget is the longest a code cell may run when it sets no `dmlkit.budget_s` in its
	// metadata. Zero means 300 s.
	DefaultBudget time.Duration
}

// Problem is one reason an executed notebook fails the check.
type Problem struct {
	Cell int    `json:"cell"` // index into the notebook's cells (0-based); -1 for the notebook as a whole
	Kind string `json:"kind"` // "error", "image", "budget", "not-executed", "timing"
	Msg  string `json:"msg"`
}

func (p Problem) String() string {
	if p.Cell < 0 {
		return fmt.Sprintf("%s: %s", p.Kind, p.Msg)
	}
	return fmt.Sprintf("cell %d: %s: %s", p.Cell, p.Kind, p.Msg)
}

// CellTiming is the measured run time of one executed code cell.
type CellTiming struct {
	Cell     int           `json:"cell"`
	Duration time.Duration `json:"duration_ns"`
	Budget   time.Duration `json:"budget_ns"`
	Head     string        `json:"head"` // the cell's first source line, to name it in reports
}

// Result is the outcome of checking one executed notebook.
type Result struct {
	Notebook     string       `json:"notebook"`
	CodeCells    int          `json:"code_cells"`
	Images       int          `json:"images"`        // valid PNG outputs found
	ExpectImages int          `json:"expect_images"` // notebook metadata dmlkit.expect_images
	Timings      []CellTiming `json:"timings"`
	Problems     []Problem    `json:"problems"`
}

// OK reports whether the notebook passed.
func (r *Result) OK() bool { return len(r.Problems) == 0 }

// notebook is the part of the nbformat v4 JSON the check reads.
type notebook struct {
	Metadata struct {
		Dmlkit struct {
			ExpectImages int `json:"expect_images"`
		} `json:"dmlkit"`
	} `json:"metadata"`
	Cells []cell `json:"cells"`
}

type cell struct {
	CellType       string          `json:"cell_type"`
	Source         json.RawMessage `json:"source"` // a string or a list of strings
	ExecutionCount *int            `json:"execution_count"`
	Metadata       struct {
		Dmlkit struct {
			BudgetS float64 `json:"budget_s"`
		} `json:"dmlkit"`
		Execution map[string]string `json:"execution"` // nbclient record_timing timestamps
	} `json:"metadata"`
	Outputs []output `json:"outputs"`
}

type output struct {
	OutputType string                     `json:"output_type"`
	Name       string                     `json:"name"` // stream name: stdout or stderr
	Text       json.RawMessage            `json:"text"` // stream text
	Ename      string                     `json:"ename"`
	Evalue     string                     `json:"evalue"`
	Data       map[string]json.RawMessage `json:"data"`
}

// multiline decodes an nbformat "multiline string": either a JSON string or a list of strings
// to be concatenated.
func multiline(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var parts []string
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", fmt.Errorf("want a string or a list of strings, got %.40s", raw)
	}
	return strings.Join(parts, ""), nil
}

// Start and end keys of nbclient's record_timing metadata, in order of preference.
var (
	startKeys = []string{"iopub.status.busy", "iopub.execute_input"}
	endKeys   = []string{"shell.execute_reply", "iopub.status.idle"}
)

func timestamp(m map[string]string, keys []string) (time.Time, string, error) {
	for _, k := range keys {
		if v, ok := m[k]; ok {
			t, err := time.Parse(time.RFC3339Nano, v)
			if err != nil {
				return time.Time{}, k, fmt.Errorf("metadata.execution[%q] = %q: %v", k, v, err)
			}
			return t, k, nil
		}
	}
	return time.Time{}, "", fmt.Errorf("metadata.execution has none of %s (was the notebook executed with record_timing?)", strings.Join(keys, ", "))
}

// Check inspects an executed notebook (nbformat v4 JSON, as written by nbconvert/nbclient with
// record_timing) and lists every problem:
//
//   - an output with output_type "error" (GoNB reports compile errors and panics this way);
//   - a non-empty code cell that did not run (no execution_count or no timing metadata);
//   - a code cell whose run time, from nbclient's metadata.execution timestamps, exceeds its
//     budget: cell metadata dmlkit.budget_s, else opts.DefaultBudget (timestamps may be rounded
//     to the second, so durations are exact to about ±1 s);
//   - an image/png output that is not base64, lacks the PNG signature or does not decode;
//   - fewer valid PNG outputs than the notebook metadata dmlkit.expect_images.
//
// It returns an error only when data is not a notebook.
func Check(name string, data []byte, opts Options) (*Result, error) {
	if opts.DefaultBudget <= 0 {
		opts.DefaultBudget = 300 * time.Second
	}
	var nb notebook
	if err := json.Unmarshal(data, &nb); err != nil {
		return nil, fmt.Errorf("%s: not a notebook: %v", name, err)
	}
	r := &Result{Notebook: name, ExpectImages: nb.Metadata.Dmlkit.ExpectImages}
	for i, c := range nb.Cells {
		if c.CellType != "code" {
			continue
		}
		src, err := multiline(c.Source)
		if err != nil {
			return nil, fmt.Errorf("%s: cell %d: source: %v", name, i, err)
		}
		if strings.TrimSpace(src) == "" {
			continue
		}
		r.CodeCells++
		head := headline(src)
		if c.ExecutionCount == nil {
			r.Problems = append(r.Problems, Problem{i, "not-executed", fmt.Sprintf("%q has no execution_count", head)})
			continue
		}
		budget := opts.DefaultBudget
		if b := c.Metadata.Dmlkit.BudgetS; b > 0 {
			budget = time.Duration(b * float64(time.Second))
		}
		start, _, err1 := timestamp(c.Metadata.Execution, startKeys)
		end, _, err2 := timestamp(c.Metadata.Execution, endKeys)
		switch {
		case err1 != nil:
			r.Problems = append(r.Problems, Problem{i, "timing", err1.Error()})
		case err2 != nil:
			r.Problems = append(r.Problems, Problem{i, "timing", err2.Error()})
		default:
			d := end.Sub(start)
			r.Timings = append(r.Timings, CellTiming{Cell: i, Duration: d, Budget: budget, Head: head})
			if d > budget {
				r.Problems = append(r.Problems, Problem{i, "budget", fmt.Sprintf("%q ran %v, over its budget of %v", head, d, budget)})
			}
		}
		var panicLine string // GoNB prints a panic on stderr, then reports "exit status 2" as the error
		for _, o := range c.Outputs {
			switch o.OutputType {
			case "stream":
				if text, err := multiline(o.Text); err == nil && o.Name == "stderr" && panicLine == "" {
					if k := strings.Index(text, "panic: "); k >= 0 {
						panicLine, _, _ = strings.Cut(text[k:], "\n")
					}
				}
			case "error":
				msg := fmt.Sprintf("%s: %s", o.Ename, strings.TrimSpace(o.Evalue))
				if panicLine != "" {
					msg += " (" + panicLine + ")"
				}
				r.Problems = append(r.Problems, Problem{i, "error", msg})
			case "display_data", "execute_result":
				raw, ok := o.Data["image/png"]
				if !ok {
					continue
				}
				if err := checkPNG(raw); err != nil {
					r.Problems = append(r.Problems, Problem{i, "image", err.Error()})
					continue
				}
				r.Images++
			}
		}
	}
	if r.Images < r.ExpectImages {
		r.Problems = append(r.Problems, Problem{-1, "image", fmt.Sprintf("%d valid image/png outputs, metadata dmlkit.expect_images wants at least %d", r.Images, r.ExpectImages)})
	}
	sort.SliceStable(r.Problems, func(a, b int) bool { return r.Problems[a].Cell < r.Problems[b].Cell })
	return r, nil
}

// headline returns the first line of a code cell that says what it does, skipping blank lines,
// GoNB's "%%" marker and import blocks.
func headline(src string) string {
	inImport := false
	for _, l := range strings.Split(src, "\n") {
		t := strings.TrimSpace(l)
		switch {
		case t == "" || t == "%%":
		case t == "import (":
			inImport = true
		case inImport:
			inImport = t != ")"
		case strings.HasPrefix(t, "import "):
		default:
			return t
		}
	}
	return strings.TrimSpace(src)
}

// checkPNG verifies that an image/png output value (base64, possibly split into lines) decodes to
// a PNG: the 8-byte signature, then a header image/png can read.
func checkPNG(raw json.RawMessage) error {
	s, err := multiline(raw)
	if err != nil {
		return fmt.Errorf("image/png: %v", err)
	}
	s = strings.Map(func(r rune) rune {
		if r == '\n' || r == '\r' || r == ' ' {
			return -1
		}
		return r
	}, s)
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return fmt.Errorf("image/png is not base64: %v", err)
	}
	if !bytes.HasPrefix(b, pngMagic) {
		return fmt.Errorf("image/png output (%d bytes) lacks the PNG signature", len(b))
	}
	cfg, err := png.DecodeConfig(bytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("image/png output does not decode: %v", err)
	}
	if cfg.Width == 0 || cfg.Height == 0 {
		return fmt.Errorf("image/png output is empty (%dx%d)", cfg.Width, cfg.Height)
	}
	return nil
}

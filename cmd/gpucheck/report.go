package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

func init() {
	register("report", "merge the JSON parts of a run (one or more --parts folders) into the JSON report and the Markdown summary", runReport)
}

// torchBench is the JSON part scripts/gpucheck_torch.py writes.
type torchBench struct {
	Side        string  `json:"side"`
	Case        string  `json:"case"`
	OK          bool    `json:"ok"`
	Error       string  `json:"error,omitempty"`
	StepMS      float64 `json:"step_ms"`
	FirstMS     float64 `json:"first_step_ms"`
	Timed       int     `json:"timed_steps"`
	Device      string  `json:"device"`
	Torch       string  `json:"torch_version"`
	Threads     int     `json:"threads"`
	TF32        bool    `json:"tf32"`
	MaxAllocMiB float64 `json:"max_memory_allocated_mib"`
	RSSMiB      float64 `json:"peak_rss_mib"`
	FinalLoss   float64 `json:"final_loss"`
	Params      int64   `json:"params"`
	Precision   string  `json:"precision,omitempty"` // fp32, or bf16 / fp16 under torch.autocast
}

// gpuMem is the script's nvidia-smi sampling around one process.
type gpuMem struct {
	PeakMiB     float64 `json:"peak_mib"`
	BaselineMiB float64 `json:"baseline_mib"`
}

type benchRow struct {
	Case      string       `json:"case"`
	Params    benchCase    `json:"parameters"`
	Dmlkit    *benchReport `json:"dmlkit,omitempty"`
	Torch     *torchBench  `json:"torch,omitempty"`
	Ratio     float64      `json:"ratio_dmlkit_over_torch,omitempty"` // step time; ≤ 1 means dmlkit is as fast
	MemDmlkit *gpuMem      `json:"gpu_memory_dmlkit,omitempty"`
	MemTorch  *gpuMem      `json:"gpu_memory_torch,omitempty"`
}

type phaseStatus struct {
	Phase string  `json:"phase"`
	RC    int     `json:"exit_status"`
	Sec   float64 `json:"seconds"`
	Note  string  `json:"note,omitempty"`
}

type fullReport struct {
	OK       bool              `json:"ok"`
	Failures []string          `json:"failures,omitempty"`
	Meta     map[string]string `json:"meta"`
	Phases   []phaseStatus     `json:"phases"`
	Device   *deviceReport     `json:"device,omitempty"`
	Losses   *lossesReport     `json:"losses,omitempty"`
	Metrics  *metricsReport    `json:"metrics,omitempty"`
	Bench    []benchRow        `json:"bench"`
	Smoke    []smokeRun        `json:"smoke"`
	SmokeErr []string          `json:"smoke_errors,omitempty"`
}

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

func runReport(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var parts multiFlag
	fs.Var(&parts, "parts", "folder of JSON parts (repeatable: a GPU session may split the bundle over two device calls)")
	jsonOut := fs.String("json", "", "write the merged JSON report here")
	mdOut := fs.String("md", "", "write the Markdown summary here")
	title := fs.String("title", "dmlkit GPU check", "summary title")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if len(parts) == 0 {
		return fmt.Errorf("--parts: at least one folder")
	}
	rep, err := mergeParts(parts)
	if err != nil {
		return err
	}
	if err := writeJSON(*jsonOut, rep); err != nil {
		return err
	}
	md := renderMarkdown(rep, *title)
	if *mdOut != "" {
		if err := os.WriteFile(*mdOut, []byte(md), 0o644); err != nil {
			return err
		}
	} else {
		io.WriteString(stdout, md)
	}
	if !rep.OK {
		return fmt.Errorf("%w: %s", errMismatch, strings.Join(rep.Failures, "; "))
	}
	return nil
}

// partLine is one line of parts.jsonl: scripts/gpu-check.sh appends every JSON part a phase
// writes as {"name": ..., "data": {...}}, so that a run's results are a handful of files (the
// device tool returns at most 8) and survive a run cut short.
type partLine struct {
	Name string          `json:"name"`
	Data json.RawMessage `json:"data"`
}

func readPartLines(path string) ([]partLine, error) {
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []partLine
	for i, line := range strings.Split(string(b), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		var pl partLine
		if err := json.Unmarshal([]byte(line), &pl); err != nil {
			return nil, fmt.Errorf("%s line %d: %w", path, i+1, err)
		}
		out = append(out, pl)
	}
	return out, nil
}

// appendPart appends v as part name to dir/parts.jsonl (what the script does with each JSON file).
func appendPart(dir, name string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	line, err := json.Marshal(partLine{Name: name, Data: data})
	if err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(dir, "parts.jsonl"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = f.Write(append(line, '\n'))
	return err
}

// mergeParts reads every folder's parts (later folders win for single parts: device, losses,
// metrics) and checks them. A bench row keeps its two sides paired: the dmlkit side, the PyTorch
// side and their memory samples come from the last folder in which dmlkit's side ran, since
// gpu-check.sh runs the two alternately on the same GPU in one call; a memory sample is used only
// beside the bench part of its own folder (a skipped step still leaves one, of an idle GPU). A
// row whose dmlkit side ran in no folder takes the last folder's PyTorch side.
func mergeParts(dirs []string) (*fullReport, error) {
	rep := &fullReport{Meta: map[string]string{}}
	// sides is one folder's parts of one row.
	type sides struct {
		dmlkit              *benchReport
		torch               *torchBench
		memDmlkit, memTorch *gpuMem
	}
	rows := map[string]*benchRow{}
	for _, dir := range dirs {
		if err := readMeta(filepath.Join(dir, "meta.txt"), rep.Meta); err != nil && !os.IsNotExist(err) {
			return nil, err
		}
		ph, err := readPhases(filepath.Join(dir, "phases.tsv"))
		if err != nil && !os.IsNotExist(err) {
			return nil, err
		}
		rep.Phases = append(rep.Phases, ph...)
		lines, err := readPartLines(filepath.Join(dir, "parts.jsonl"))
		if err != nil {
			return nil, err
		}
		here := map[string]*sides{}
		var order []string
		side := func(c string) *sides {
			if here[c] == nil {
				here[c] = &sides{}
				order = append(order, c)
			}
			return here[c]
		}
		for _, pl := range lines {
			base, raw := pl.Name, []byte(pl.Data)
			read := func(v any) error {
				if err := json.Unmarshal(raw, v); err != nil {
					return fmt.Errorf("%s: part %s: %w", dir, base, err)
				}
				return nil
			}
			switch {
			case base == "device":
				rep.Device = &deviceReport{}
				err = read(rep.Device)
			case base == "losses":
				rep.Losses = &lossesReport{}
				err = read(rep.Losses)
			case base == "metrics":
				rep.Metrics = &metricsReport{}
				err = read(rep.Metrics)
			case strings.HasPrefix(base, "bench-dmlkit-"):
				var b benchReport
				if err = read(&b); err == nil {
					side(strings.TrimPrefix(base, "bench-dmlkit-")).dmlkit = &b
				}
			case strings.HasPrefix(base, "bench-torch-"):
				var t torchBench
				if err = read(&t); err == nil {
					side(strings.TrimPrefix(base, "bench-torch-")).torch = &t
				}
			case strings.HasPrefix(base, "gpumem-dmlkit-"):
				var m gpuMem
				if err = read(&m); err == nil {
					side(strings.TrimPrefix(base, "gpumem-dmlkit-")).memDmlkit = &m
				}
			case strings.HasPrefix(base, "gpumem-torch-"):
				var m gpuMem
				if err = read(&m); err == nil {
					side(strings.TrimPrefix(base, "gpumem-torch-")).memTorch = &m
				}
			case strings.HasPrefix(base, "smoke-"):
				var s smokeReport
				if err = read(&s); err == nil {
					rep.Smoke = append(rep.Smoke, s.Runs...)
					if s.Error != "" {
						rep.SmokeErr = append(rep.SmokeErr, base+": "+s.Error)
					}
				}
			}
			if err != nil {
				return nil, err
			}
		}
		for _, c := range order {
			s := here[c]
			r := rows[c]
			if r == nil {
				r = &benchRow{Case: c}
				rows[c] = r
			}
			if s.dmlkit != nil {
				// dmlkit's side ran here: the row is this folder's pair.
				*r = benchRow{Case: c, Dmlkit: s.dmlkit, Params: s.dmlkit.Case, Torch: s.torch}
				if s.torch != nil {
					r.MemTorch = s.memTorch
				}
				r.MemDmlkit = s.memDmlkit
			} else if s.torch != nil && (r.Dmlkit == nil || r.Torch == nil) {
				r.Torch, r.MemTorch = s.torch, s.memTorch
			}
		}
	}
	var names []string
	for c := range rows {
		names = append(names, c)
	}
	sort.Slice(names, func(i, j int) bool { return caseOrder(names[i]) < caseOrder(names[j]) })
	scale := "full"
	if strings.Contains(rep.Meta["mode"], "scale small") {
		scale = "small"
	}
	for _, c := range names {
		r := rows[c]
		if r.Params.Name == "" {
			// dmlkit's side ran nowhere: the case's parameters from the case table.
			name, prec, _ := strings.Cut(c, "+")
			if bc, err := findCase(scale, name); err == nil {
				bc.Precision = prec
				r.Params = bc
			}
		}
		if r.Dmlkit != nil && r.Torch != nil && r.Dmlkit.OK && r.Torch.OK && r.Torch.StepMS > 0 {
			r.Ratio = r.Dmlkit.StepMS / r.Torch.StepMS
		}
		rep.Bench = append(rep.Bench, *r)
	}
	rep.check()
	return rep, nil
}

// caseOrder sorts the bench rows: by case, then fp32 before the other precisions (a row key is
// "<case>" or "<case>+<precision>", see benchCase.rowKey).
func caseOrder(c string) string {
	name, prec, _ := strings.Cut(c, "+")
	for i, n := range []string{"smallcnn", "resnet50", "vit_b16", "rsk_multistage", "idml_pa"} {
		if name == n {
			return strconv.Itoa(i) + "+" + prec
		}
	}
	return "9" + c
}

// check collects the failures: a phase that exited non-zero, a check part that is missing or not
// ok, a benchmark side that did not run.
func (r *fullReport) check() {
	fail := func(f string, a ...any) { r.Failures = append(r.Failures, fmt.Sprintf(f, a...)) }
	for _, p := range r.Phases {
		if p.RC != 0 {
			fail("phase %s exited %d%s", p.Phase, p.RC, noteSuffix(p.Note))
		}
	}
	switch {
	case r.Device == nil:
		fail("no device part")
	case !r.Device.OK:
		fail("device: %s", firstLine(r.Device.Error))
	}
	if r.Losses != nil && !r.Losses.OK {
		fail("losses differ: %v%s", r.Losses.Mismatches, noteSuffix(firstLine(r.Losses.Error)))
	}
	if r.Metrics != nil && !r.Metrics.OK {
		fail("metrics differ: %v%s", r.Metrics.Mismatches, noteSuffix(firstLine(r.Metrics.Error)))
	}
	for _, b := range r.Bench {
		if b.Dmlkit == nil || !b.Dmlkit.OK {
			fail("bench %s: dmlkit side did not run", b.Case)
		}
		if b.Torch == nil || !b.Torch.OK {
			fail("bench %s: PyTorch side did not run", b.Case)
		}
	}
	for _, s := range r.Smoke {
		if !s.OK {
			fail("smoke %s %s: %s", s.Paper, s.Key, firstLine(s.Error))
		}
	}
	for _, e := range r.SmokeErr {
		fail("smoke: %s", firstLine(e))
	}
	r.OK = len(r.Failures) == 0
}

func noteSuffix(s string) string {
	if s == "" {
		return ""
	}
	return " (" + s + ")"
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// readMeta reads key=value lines (written by scripts/gpu-check.sh).
func readMeta(path string, into map[string]string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok && strings.TrimSpace(k) != "" {
			into[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	return sc.Err()
}

// readPhases reads phase<TAB>exit status<TAB>seconds<TAB>note lines.
func readPhases(path string) ([]phaseStatus, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []phaseStatus
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.SplitN(sc.Text(), "\t", 4)
		if len(fields) < 3 {
			continue
		}
		p := phaseStatus{Phase: fields[0]}
		p.RC, _ = strconv.Atoi(fields[1])
		p.Sec, _ = strconv.ParseFloat(fields[2], 64)
		if len(fields) == 4 {
			p.Note = fields[3]
		}
		out = append(out, p)
	}
	return out, sc.Err()
}

func fmtMem(m *gpuMem) string {
	if m == nil || m.PeakMiB <= 0 {
		return "–"
	}
	return fmt.Sprintf("%.0f MiB", m.PeakMiB-m.BaselineMiB)
}

func renderMarkdown(r *fullReport, title string) string {
	var b strings.Builder
	p := func(f string, a ...any) { fmt.Fprintf(&b, f, a...) }
	p("# %s\n\n", title)
	status := "PASSED"
	if !r.OK {
		status = "FAILED"
	}
	p("**%s.** Generated by `scripts/gpu-check.sh` (`gpucheck report`); the full numbers are in the JSON report beside this file.\n\n", status)
	for _, f := range r.Failures {
		p("- failure: %s\n", f)
	}
	if len(r.Failures) > 0 {
		p("\n")
	}
	keys := make([]string, 0, len(r.Meta))
	for k := range r.Meta {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	p("| | |\n|---|---|\n")
	for _, k := range keys {
		p("| %s | %s |\n", k, strings.ReplaceAll(r.Meta[k], "|", "/"))
	}
	if d := r.Device; d != nil {
		p("| backend under test | `%s` (%s) |\n", d.Backend, d.Description)
		p("| devices | %s |\n", strings.Join(d.Devices, "; "))
		p("| host CPU | %s (%d threads) |\n", d.CPUModel, d.NumCPU)
	}
	p("\n## Phases\n\n| phase | exit | seconds | note |\n|---|---|---|---|\n")
	total := 0.0
	for _, ph := range r.Phases {
		p("| %s | %d | %.0f | %s |\n", ph.Phase, ph.RC, ph.Sec, ph.Note)
		total += ph.Sec
	}
	p("| **total** | | **%.0f** | |\n", total)
	if l := r.Losses; l != nil {
		p("\n## Losses: backend vs Go backend (float32)\n\n")
		p("Batch %d × %d (%d classes, interleaved), paper defaults. Tolerance: value |Δ| ≤ %.0e·(1+|v|), gradient max|Δ| ≤ %.0e·max|g_ref| + 1e-7. Proxies are created on the reference and copied.\n\n",
			l.Batch, l.Dim, l.Classes, l.ValueTol, l.GradTol)
		p("| loss | ok | value | Go value | value \\|Δ\\| | grad max\\|Δ\\| / max\\|g\\| | s (backend) | s (Go) |\n|---|---|---|---|---|---|---|---|\n")
		for _, x := range l.Results {
			ok := "yes"
			if !x.OK {
				ok = "**NO** " + firstLine(x.Error)
			}
			if x.Stochastic {
				ok += fmt.Sprintf(" (random draws: default agrees %v; checked as %s)", x.RNGMatch, x.Variant)
			}
			rel := math.NaN()
			if x.GradMax > 0 {
				rel = x.GradDiff / x.GradMax
			}
			p("| %s | %s | %.7g | %.7g | %.2g | %.2g | %.2f | %.2f |\n", x.Name, ok, x.Value, x.RefValue, x.ValueDiff, rel, x.Sec, x.RefSec)
		}
	}
	if m := r.Metrics; m != nil {
		p("\n## Retrieval metrics: kNN on the backend vs dmlkit/metrics on the CPU\n\n")
		p("Random SOP-like set %d × %d (unit-norm float32, classes of ~5.35), inner product, %d neighbours per query, query blocks of %d. Tolerance |Δ| ≤ %.0e.\n\n",
			m.N, m.Dim, m.KNN, m.QueryBlock, m.Tol)
		p("| metric | CPU | backend | \\|Δ\\| |\n|---|---|---|---|\n")
		var ks []string
		for k := range m.CPU {
			ks = append(ks, k)
		}
		sort.Strings(ks)
		for _, k := range ks {
			p("| %s | %.6f | %.6f | %.2g |\n", k, m.CPU[k], m.Device[k], math.Abs(m.CPU[k]-m.Device[k]))
		}
		p("\nTop-1 neighbour agreement %.5f (top-1 score max |Δ| %.2g). Time: CPU %.2f s (%d threads); backend %.2f s after a first block of %.2f s (compilation).\n",
			m.Top1Agree, m.Top1Score, m.CPUSec, m.CPUThreads, m.DevSec, m.DevFirstSec)
		if len(m.Mismatches) > 0 {
			p("\n**Mismatches:** %s\n", strings.Join(m.Mismatches, "; "))
		}
	}
	if len(r.Bench) > 0 {
		p("\n## Training step: dmlkit vs PyTorch on the same machine\n\n")
		p("Mean step time after the first step (which compiles); both sides copy the batch from host memory each step. Rows marked bf16 / fp16 run dmlkit with train.precision and PyTorch under torch.autocast (float32 weights; fp16 with loss scaling). Ratio = dmlkit / PyTorch (target ≤ 1.0×). Memory: peak device memory in use during the process (nvidia-smi sampling, minus the idle baseline); PyTorch's own max_memory_allocated beside it; beside dmlkit's, XLA's own report of its training step's executable (code + inputs + outputs − aliases + temporary; temporary holds the activations kept for the backward pass); on CPU, peak resident memory.\n\n")
		p("| case | parameters | dmlkit ms/step | PyTorch ms/step | ratio | dmlkit first step s | peak memory dmlkit | peak memory PyTorch | device |\n|---|---|---|---|---|---|---|---|---|\n")
		for _, x := range r.Bench {
			pc := x.Params
			params := fmt.Sprintf("%s, batch %d, %d²×%d", pc.Backbone, pc.Batch, pc.Size, pc.Channels)
			if pc.Chunk > 0 {
				params += fmt.Sprintf(", chunks of %d", pc.Chunk)
			}
			params += ", " + pc.Loss
			if pc.IDML {
				params += fmt.Sprintf(" (ProxyAnchor base; + %d mixup images; %d + %d heads, avg + max pool, AdamW)", pc.Batch, pc.Dim, pc.Dim)
			}
			if pc.Precision != "" && pc.Precision != "fp32" {
				params += ", " + pc.Precision + " (dmlkit train.precision; PyTorch AMP)"
			}
			dm, tm, first, ratio, memD, memT, dev := "–", "–", "–", "–", fmtMem(x.MemDmlkit), fmtMem(x.MemTorch), ""
			if x.Dmlkit != nil {
				if x.Dmlkit.OK {
					dm = fmt.Sprintf("%.1f", x.Dmlkit.StepMS)
					first = fmt.Sprintf("%.1f", x.Dmlkit.FirstSec)
				} else {
					dm = "failed: " + firstLine(x.Dmlkit.Error)
				}
				if memD == "–" && x.Dmlkit.RSSMiB > 0 {
					memD = fmt.Sprintf("%.0f MiB RSS", x.Dmlkit.RSSMiB)
				}
				if m := x.Dmlkit.XLAStep; m != nil {
					memD += fmt.Sprintf(" (XLA's step: %.0f MiB, of which temporary %.0f MiB)", float64(m.Total())/(1<<20), float64(m.Temporary)/(1<<20))
				}
			}
			if x.Torch != nil {
				if x.Torch.OK {
					tm = fmt.Sprintf("%.1f", x.Torch.StepMS)
				} else {
					tm = "failed: " + firstLine(x.Torch.Error)
				}
				if x.Torch.MaxAllocMiB > 0 {
					memT += fmt.Sprintf(" (allocated %.0f MiB)", x.Torch.MaxAllocMiB)
				} else if memT == "–" && x.Torch.RSSMiB > 0 {
					memT = fmt.Sprintf("%.0f MiB RSS", x.Torch.RSSMiB)
				}
				dev = fmt.Sprintf("%s, torch %s, %d threads, tf32 %v", x.Torch.Device, x.Torch.Torch, x.Torch.Threads, x.Torch.TF32)
			}
			if x.Ratio > 0 {
				ratio = fmt.Sprintf("%.2f×", x.Ratio)
			}
			p("| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", x.Case, params, dm, tm, ratio, first, memD, memT, dev)
		}
	}
	if len(r.Smoke) > 0 || len(r.SmokeErr) > 0 {
		p("\n## Full-scale spec smoke (synthetic images)\n\n")
		p("One run per group of full-scale runs that share backbone, input size, batch and multistage settings (the group's loss with most terms); what was changed is listed per run.\n\n")
		p("| paper | group | runs | loss | ok | steps | s/step | first step s | loss value | changes |\n|---|---|---|---|---|---|---|---|---|---|\n")
		for _, s := range r.Smoke {
			ok := "yes"
			if !s.OK {
				ok = "**NO** " + firstLine(s.Error)
			}
			p("| %s | %s | %d | `%s` | %s | %d | %.2f | %.1f | %.4g | %s |\n", s.Paper, s.Key, s.Represent, s.Loss, ok, s.Steps, s.StepSec, s.FirstSec, s.FinalLoss, strings.Join(s.Changes, "; "))
		}
		for _, e := range r.SmokeErr {
			p("\n- %s\n", firstLine(e))
		}
	}
	return b.String()
}

package sweep

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// RunRefPrefix marks a configuration string that names another run of the same spec and scale:
// "run:SELECTOR". It lets a sweep point start from what another point trained, e.g. fine-tuning
// from a pre-training run (seed 003 Fig. 7 / Table 5):
//
//	sweep:
//	  list:
//	    - {name: pretrain-bg866, data.train_classes: [98, 964]}
//	    - {name: init-bg866, data.train_classes: [0, 98], model.init_from: "run:pretrain-bg866"}
//	  seeds: [0, 1, 2]
//
// SELECTOR is one or more terms separated by white space: key=value (a configuration key and its
// value as [FormatValue] writes it, e.g. data.train_classes=[98,964]; the form of --only), or a
// bare word W, short for name=W. It must match exactly one run of a sweep point (tuning steps'
// runs are never sources) of the same seed — unless it names the spec's seed key itself
// (e.g. "run:pretrain seed=0": every seed starts from seed 0's run).
//
// Resolution ([Spec.PlanWith]): the reference is replaced in the run's configuration by
// "run:<hash>", the [Hash] of the source run, so the dependent run's identity follows the source's
// configuration and never depends on where run directories live. Until the source run is stored
// (a record that is not marked failed), the dependent run is pending ([Plan.Pending]), as a point
// that waits for a tuning step; [RunSweep] runs it in a later round. A selector that matches no
// run, or more than one, is an error naming the field.
//
// Execution ([Execute]): the runner receives, in RunSpec.Config, the absolute path of the source's
// run directory (WorkDir/<scale>/<hash>, see [RunDir]) in place of "run:<hash>"; the stored record
// keeps "run:<hash>". The source's run directory must therefore be on this machine (the same
// --workdir; a shared volume for shards on several machines), or the run fails naming the field.
const RunRefPrefix = "run:"

// RunDir is the working directory of the run with the given hash, as [Execute] lays them out:
// workDir/<scale>/<hash> (scale "" is "default").
func RunDir(workDir, scale, hash string) string {
	return filepath.Join(workDir, scaleDir(scale), hash)
}

// runRef is one "run:" reference in a configuration: the dotted key holding it, the selector as
// written and its terms (key → value as FormatValue writes it).
type runRef struct {
	key   string
	sel   string
	terms map[string]string
}

// resolvedRef matches "run:<hash>", a reference after resolution.
var resolvedRef = regexp.MustCompile(`^run:[0-9a-f]{16}$`)

// findRunRefs returns the "run:" references among the string leaves of cfg, sorted by key.
func findRunRefs(cfg map[string]any) ([]runRef, error) {
	var out []runRef
	flat := Flatten(cfg)
	for _, k := range SortedKeys(flat) {
		s, ok := flat[k].(string)
		if !ok || !strings.HasPrefix(s, RunRefPrefix) {
			continue
		}
		terms, err := parseRunSelector(strings.TrimPrefix(s, RunRefPrefix))
		if err != nil {
			return nil, fmt.Errorf("field %q: %q: %w", k, s, err)
		}
		out = append(out, runRef{key: k, sel: s, terms: terms})
	}
	return out, nil
}

// parseRunSelector reads the terms of a selector: key=value, or a bare word for name=word.
func parseRunSelector(sel string) (map[string]string, error) {
	fields := strings.Fields(sel)
	if len(fields) == 0 {
		return nil, fmt.Errorf("empty selector: want run:NAME or run:key=value ...")
	}
	terms := map[string]string{}
	for _, f := range fields {
		k, v, ok := strings.Cut(f, "=")
		if !ok {
			k, v = "name", f
		}
		if k == "" || v == "" {
			return nil, fmt.Errorf("term %q: want key=value or a name", f)
		}
		if prev, dup := terms[k]; dup && prev != v {
			return nil, fmt.Errorf("key %q given twice (%s, %s)", k, prev, v)
		}
		terms[k] = v
	}
	return terms, nil
}

// heldRun is a run whose configuration holds "run:" references; it is planned once every source
// is stored.
type heldRun struct {
	run   Run
	refs  []runRef
	waits []string // the sources it still waits for (set by resolveRefs)
}

// candidate is a run a selector may name: a planned run, or one still waiting for a tuning step
// or for its own source (its configuration as far as it is known).
type candidate struct {
	cfg     map[string]any
	seed    int64
	label   string
	run     *Run // nil: not planned yet
	heldIdx int  // index in the held list, -1 for others
}

func (c candidate) matches(terms map[string]string, seedKey string, seed int64) bool {
	if _, named := terms[seedKey]; !named && c.seed != seed {
		return false
	}
	for k, want := range terms {
		v, ok := Get(c.cfg, k)
		if !ok || FormatValue(v) != want {
			return false
		}
	}
	return true
}

// resolveRefs plans the held runs whose sources are stored (done: hash → "" for a stored run,
// the failure for a run stored as failed), replacing each reference with "run:<hash>" of its
// source; the others stay held and become pending points. waiting are the sweep points' runs that
// wait for a tuning step (their configurations without the selection). Selectors that match no
// run or several are errors.
func (s *Spec) resolveRefs(plan *Plan, held []heldRun, waiting []candidate, done map[string]string, seedKey string, byHash map[string]string) error {
	var waitsOn map[string][]refEdge // held run → the held runs its references name (last round)
	for {
		var cands []candidate
		for i := range plan.Runs {
			if r := &plan.Runs[i]; r.Tune == "" {
				cands = append(cands, candidate{cfg: r.Config, seed: r.Seed, label: r.Label(), run: r, heldIdx: -1})
			}
		}
		cands = append(cands, waiting...)
		for i := range held {
			if held[i].run.Tune == "" {
				cands = append(cands, candidate{cfg: held[i].run.Config, seed: held[i].run.Seed, label: held[i].run.Label(), heldIdx: i})
			}
		}
		var next []heldRun
		var planned []Run
		waitsOn = map[string][]refEdge{}
		for i, h := range held {
			cfg := Clone(h.run.Config)
			h.waits = nil
			h.run.sources = nil
			for _, ref := range h.refs {
				var hits []candidate
				for _, c := range cands {
					if c.heldIdx != i && c.matches(ref.terms, seedKey, h.run.Seed) {
						hits = append(hits, c)
					}
				}
				where := fmt.Sprintf("experiments: %s: scale %q, run %s: field %q: %q", s.Name(), plan.Scale, h.run.Label(), ref.key, ref.sel)
				switch {
				case len(hits) == 0:
					return fmt.Errorf("%s matches no run of a sweep point with seed %d", where, h.run.Seed)
				case len(hits) > 1:
					var labels []string
					for _, c := range hits {
						labels = append(labels, c.label)
					}
					sort.Strings(labels)
					if len(labels) > 4 {
						labels = append(labels[:4], fmt.Sprintf("and %d more", len(labels)-4))
					}
					return fmt.Errorf("%s is ambiguous: it matches %d runs (%s); add key=value terms", where, len(hits), strings.Join(labels, "; "))
				}
				src := hits[0]
				if src.run == nil {
					h.waits = append(h.waits, "the run "+src.label+" (not planned yet)")
					if src.heldIdx >= 0 {
						waitsOn[h.run.Label()] = append(waitsOn[h.run.Label()], refEdge{to: src.label, key: ref.key, sel: ref.sel})
					}
					continue
				}
				failure, stored := done[src.run.Hash]
				if !stored || failure != "" {
					h.run.sources = append(h.run.sources, src.run.Hash)
				}
				switch {
				case !stored:
					h.waits = append(h.waits, "the run "+src.label+" ("+src.run.Hash+")")
				case failure != "":
					h.waits = append(h.waits, "the run "+src.label+" ("+src.run.Hash+", stored as failed: "+failure+")")
				default:
					if err := SetPath(cfg, ref.key, RunRefPrefix+src.run.Hash); err != nil {
						return fmt.Errorf("%s: %w", where, err)
					}
				}
			}
			if len(h.waits) > 0 {
				next = append(next, h)
				continue
			}
			hash, err := Hash(cfg)
			if err != nil {
				return err
			}
			r := h.run
			r.Hash, r.Config = hash, cfg
			if prev, dup := byHash[hash]; dup {
				return fmt.Errorf("experiments: %s: sweep points %q and %q resolve to the same configuration", s.Name(), prev, r.Label())
			}
			byHash[hash] = r.Label()
			planned = append(planned, r)
		}
		plan.Runs = append(plan.Runs, planned...)
		held = next
		if len(planned) == 0 || len(held) == 0 {
			break
		}
	}
	if cyc := refCycle(waitsOn); cyc != "" {
		return fmt.Errorf("experiments: %s: scale %q: runs wait for each other through \"run:\" references and can never start: %s", s.Name(), plan.Scale, cyc)
	}
	sort.SliceStable(plan.Runs, func(a, b int) bool { return plan.Runs[a].Index < plan.Runs[b].Index })
	plan.Held = nil
	for _, h := range held {
		plan.Held = append(plan.Held, h.run)
		label := strings.TrimSuffix(Run{Params: h.run.Params}.Label(), " seed=0")
		if h.run.Tune != "" {
			label = "tuning step " + h.run.Tune
		}
		label += fmt.Sprintf(" seed=%d", h.run.Seed)
		plan.Pending = append(plan.Pending, Pending{Point: label, Waits: h.waits,
			Reason: "waits for " + strings.Join(h.waits, ", ") + " to be stored (it starts from that run)"})
	}
	return nil
}

// refEdge is a "run:" reference of a held run to another held run: the source's label, and the
// field and selector naming it.
type refEdge struct{ to, key, sel string }

// refCycle returns a cycle of held runs that name each other ("A: model.init_from "run:b" → B:
// model.init_from "run:a" → A"), or "" when there is none: such runs wait for ever.
func refCycle(edges map[string][]refEdge) string {
	const (
		unseen = iota
		onPath
		finished
	)
	state := map[string]int{}
	var path []string
	var steps []refEdge
	var found string
	var visit func(n string) bool
	visit = func(n string) bool {
		state[n] = onPath
		path = append(path, n)
		for _, e := range edges[n] {
			steps = append(steps, e)
			switch state[e.to] {
			case onPath:
				start := slices.Index(path, e.to)
				var b strings.Builder
				for i := start; i < len(path); i++ {
					st := steps[len(steps)-len(path)+i]
					fmt.Fprintf(&b, "%s: %s %q → ", path[i], st.key, st.sel)
				}
				b.WriteString(e.to)
				found = b.String()
				return true
			case unseen:
				if visit(e.to) {
					return true
				}
			}
			steps = steps[:len(steps)-1]
		}
		path = path[:len(path)-1]
		state[n] = finished
		return false
	}
	for _, n := range SortedKeys(edges) {
		if state[n] == unseen && visit(n) {
			return found
		}
	}
	return ""
}

// runPaths returns cfg with every resolved reference "run:<hash>" replaced by the absolute path of
// that run's directory under runsDir (the directory holding this scale's run directories). The
// directory must exist. Errors name the field.
func runPaths(cfg map[string]any, runsDir string) (map[string]any, error) {
	flat := Flatten(cfg)
	var out map[string]any
	for _, k := range SortedKeys(flat) {
		s, ok := flat[k].(string)
		if !ok || !strings.HasPrefix(s, RunRefPrefix) {
			continue
		}
		if !resolvedRef.MatchString(s) {
			return nil, fmt.Errorf("field %q: %q is not a resolved run reference (run:<hash>); plan the run with Spec.PlanWith", k, s)
		}
		dir, err := filepath.Abs(filepath.Join(runsDir, strings.TrimPrefix(s, RunRefPrefix)))
		if err != nil {
			return nil, fmt.Errorf("field %q: %w", k, err)
		}
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			return nil, fmt.Errorf("field %q: %s: the source run's directory %s does not exist here (stored by another machine, or its working directory was removed: run the sweep with the --workdir that holds it)", k, s, dir)
		}
		if out == nil {
			out = Clone(cfg)
		}
		if err := SetPath(out, k, dir); err != nil {
			return nil, fmt.Errorf("field %q: %w", k, err)
		}
	}
	if out == nil {
		return cfg, nil
	}
	return out, nil
}

// doneStates maps the hashes of scale's records to "" (stored) or their failure.
func doneStates(records []Record, scale string) map[string]string {
	out := map[string]string{}
	for _, r := range records {
		if r.Scale == scale {
			if prev, ok := out[r.Hash]; !ok || prev != "" {
				out[r.Hash] = r.Failed
			}
		}
	}
	return out
}

// heldTunes lists the tuning steps that have runs held back by a "run:" reference.
func (p *Plan) heldTunes() []string {
	var out []string
	for _, r := range p.Held {
		if r.Tune != "" && !slices.Contains(out, r.Tune) {
			out = append(out, r.Tune)
		}
	}
	return out
}

package sweep

import (
	"fmt"
	"sort"
	"strings"
)

// Phases. A sweep's runs depend on each other through tuning steps (a point "tuned" at a step
// exists once the step's runs are stored and its rule has selected) and through "run:"
// references (a run that starts from another run). A cluster job runs them in phases, each
// starting once the previous one has finished:
//
//   - the runs of a tuning step whose point names no other step, and the sweep points that are
//     tuned at nothing and start from no run, are in phase 1;
//   - a tuning step is in the phase after the latest of the steps its point is tuned at (its
//     stage, [Spec.TuneStage], plus one); a run in the grids of several steps is in the
//     earliest of their phases;
//   - a sweep point's runs are in the phase after the latest step they are tuned at;
//   - a run that starts from another run is at least in the phase after that run's.
//
// Phases are numbered from 1, as `dmlkit run --phase K` takes them.

// TuneStage is the stage of the tuning step name: 0 for a step whose point is tuned at no other
// step, else one more than the highest stage of the steps it is tuned at (-1 if no such step).
func (s *Spec) TuneStage(name string) int {
	return s.tuneStage(name, map[string]bool{})
}

func (s *Spec) tuneStage(name string, seen map[string]bool) int {
	t := s.TuneStep(name)
	if t == nil || seen[name] { // cycles are refused by Parse
		return -1
	}
	seen[name] = true
	defer delete(seen, name)
	deps, _ := TunedNames(t.Point)
	st := 0
	for _, d := range deps {
		st = max(st, s.tuneStage(d, seen)+1)
	}
	return st
}

// phaser computes the phases (0-based) of a plan's runs, memoised by hash.
type phaser struct {
	plan   *Plan
	byHash map[string]*Run
	memo   map[string]int
}

func newPhaser(p *Plan) *phaser {
	ph := &phaser{plan: p, byHash: map[string]*Run{}, memo: map[string]int{}}
	for i := range p.Runs {
		ph.byHash[p.Runs[i].Hash] = &p.Runs[i]
	}
	return ph
}

// base is the phase a run's tuning steps put it in.
func (ph *phaser) base(r Run) int {
	s := ph.plan.Spec
	if r.Tune != "" {
		st := s.TuneStage(r.Tune)
		for _, a := range r.Also {
			st = min(st, s.TuneStage(a))
		}
		return max(st, 0)
	}
	st := 0
	for _, n := range r.Tuned {
		st = max(st, s.TuneStage(n)+1)
	}
	return st
}

// phase is the 0-based phase of a planned run.
func (ph *phaser) phase(r Run) int {
	if v, ok := ph.memo[r.Hash]; ok {
		return v
	}
	ph.memo[r.Hash] = ph.base(r) // guards cycles (refused by resolveRefs)
	p := ph.base(r)
	for _, src := range resolvedSources(r.Config) {
		if sr := ph.byHash[src]; sr != nil {
			p = max(p, ph.phase(*sr)+1)
		}
	}
	ph.memo[r.Hash] = p
	return p
}

// heldPhase is the phase of a held run as far as its planned sources tell (its other sources
// are not planned yet, so they are in later phases than what is planned).
func (ph *phaser) heldPhase(r Run) int {
	p := ph.base(r)
	for _, src := range r.sources {
		if sr := ph.byHash[src]; sr != nil {
			p = max(p, ph.phase(*sr)+1)
		}
	}
	return p
}

// resolvedSources lists the hashes of the runs a planned run's configuration starts from.
func resolvedSources(cfg map[string]any) []string {
	var out []string
	for _, v := range Flatten(cfg) {
		if s, ok := v.(string); ok && resolvedRef.MatchString(s) {
			out = append(out, strings.TrimPrefix(s, RunRefPrefix))
		}
	}
	sort.Strings(out)
	return out
}

// RunPhases returns the phase (from 1) of every run of the plan, by hash.
func (p *Plan) RunPhases() map[string]int {
	ph := newPhaser(p)
	out := make(map[string]int, len(p.Runs))
	for _, r := range p.Runs {
		out[r.Hash] = ph.phase(r) + 1
	}
	return out
}

// PhaseRuns returns the runs of phase k (from 1) in plan order.
func (p *Plan) PhaseRuns(k int) []Run {
	ph := newPhaser(p)
	var out []Run
	for _, r := range p.Runs {
		if ph.phase(r)+1 == k {
			out = append(out, r)
		}
	}
	return out
}

// PhaseShard keeps the runs at positions ≡ index (mod n) of runs (a phase's runs in plan order):
// unlike [Shard], which goes by Run.Index over the whole plan, it spreads one phase's runs evenly.
func PhaseShard(runs []Run, index, n int) ([]Run, error) {
	if n < 1 || index < 0 || index >= n {
		return nil, fmt.Errorf("experiments: shard --index %d --of %d: need 0 <= index < of", index, n)
	}
	var out []Run
	for i, r := range runs {
		if i%n == index {
			out = append(out, r)
		}
	}
	return out, nil
}

// PhaseError is the error of a phase's task started before what its runs need is stored: the
// selections of earlier tuning steps, or the runs of earlier phases.
type PhaseError struct {
	Phase   int
	Missing []string
}

func (e *PhaseError) Error() string {
	m := e.Missing
	more := ""
	if len(m) > 8 {
		m, more = m[:8], fmt.Sprintf("; and %d more", len(e.Missing)-8)
	}
	return fmt.Sprintf("experiments: phase %d cannot run: it needs what earlier phases store, and %d of it is missing (did an earlier phase fail or not finish?): %s%s",
		e.Phase, len(e.Missing), strings.Join(m, "; "), more)
}

// PhaseMissing lists what phase k (from 1) needs and the records lack: the selection of every
// tuning step of an earlier stage, every run of an earlier phase (a record marked failed
// counts as stored), and the sources of the held runs of phases up to k.
func (s *Spec) PhaseMissing(p *Plan, records []Record, k int) []string {
	var out []string
	for _, st := range s.Selections(p, records) {
		if stage := s.TuneStage(st.Name); stage+1 < k && st.Values == nil {
			why := fmt.Sprintf("%d of %d runs stored", st.Runs, st.Want)
			if st.Runs == st.Want {
				why = fmt.Sprintf("all %d runs stored, but the rule selects none (every run failed or none passes its guard)", st.Runs)
			}
			out = append(out, fmt.Sprintf("the selection of tuning step %q (phase %d: %s)", st.Name, stage+1, why))
		}
	}
	done := Done(records, p.Scale)
	ph := newPhaser(p)
	for _, r := range p.Runs {
		if k0 := ph.phase(r) + 1; k0 < k && !done[r.Hash] {
			out = append(out, fmt.Sprintf("run %s %s of phase %d (not stored)", r.Hash, r.Label(), k0))
		}
	}
	for _, h := range p.Held {
		if k0 := ph.heldPhase(h) + 1; k0 <= k {
			out = append(out, fmt.Sprintf("the source of run %s of phase %d", h.Label(), k0))
		}
	}
	return out
}

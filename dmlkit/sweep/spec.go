package sweep

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
)

// Spec is one experiment definition: a base configuration, scale presets that override it, a
// sweep over parameters × seeds, the paper's reported numbers, and the figures and tables that are
// regenerated from the stored results. See the package documentation for the file format.
type Spec struct {
	Paper       string                    `yaml:"paper"`       // directory name under reproductions/ and figures/
	Description string                    `yaml:"description"` // free text
	Base        map[string]any            `yaml:"base"`        // nested base configuration
	Scales      map[string]map[string]any `yaml:"scales"`      // scale name → dotted-key overrides (+ seeds/grid/list)
	Sweep       Sweep                     `yaml:"sweep"`       // parameters × seeds
	Reference   []Reference               `yaml:"reference"`   // the paper's numbers, cited
	Figures     []FigureSpec              `yaml:"figures"`     // declarative figures
	Labels      LabelMap                  `yaml:"labels"`      // human texts of keys and values in figures (see LabelMap)
	Tables      []TableSpec               `yaml:"tables"`      // declarative tables
	Tune        []TuneSpec                `yaml:"tune"`        // tuning steps on held-out training classes (see [TuneSpec])
	Launch      Launch                    `yaml:"launch"`      // container image and resources for --emit
	// Leaderboard ranks the methods of the sweep per regime (see [LeaderboardSpec]); nil: none.
	Leaderboard *LeaderboardSpec `yaml:"leaderboard"`
	// Committed names scales beyond small and pretrained whose records, tables and figures are
	// committed with the paper: SPECDIR/results/<scale>.jsonl, SPECDIR/tables/<scale>/ and
	// figures/PAPER/<scale>/ (e.g. the benchmark's converged protocol, run over several sessions).
	Committed []string `yaml:"committed"`
	// Diagnostics names the figure-specific evaluation protocols every run of the spec computes
	// beyond the metrics (e.g. "fig1_thresholds", "pair_distances" for seed 000's Figs. 1 and 10;
	// the names [SetDiagnostics] registered). A spec that names none gets none. Not part of any
	// run's configuration: naming one does not change a run's hash.
	Diagnostics []string `yaml:"diagnostics"`
	// DescriptiveKeys are the keys the paper's references use to describe rows the spec never runs
	// (the paper's backbone, recipe or dataset variant): a reference not scoped to a table may match
	// on them, and on keys the spec's runs have; any other key in its match is refused as a typo.
	// paper.yaml's own descriptive_keys are appended.
	DescriptiveKeys []string `yaml:"descriptive_keys"`

	// Path is the file the spec was read from (empty when parsed from bytes); Dir its directory.
	// Results live in Dir/results unless overridden.
	Path string `yaml:"-"`
	Dir  string `yaml:"-"`
}

// Sweep lists the runs of a spec: every combination of the Grid values, crossed with every entry
// of List (when both are given), crossed with Seeds. A List entry may carry its own "seeds" (e.g.
// one seed for the points of an ablation grid, three where a difference is claimed); "seeds" is
// never a configuration key.
type Sweep struct {
	Grid    map[string][]any `yaml:"grid"`     // dotted key → values; keys are expanded in sorted order
	List    []map[string]any `yaml:"list"`     // explicit points, each a map of dotted key → value; a "seeds" entry replaces Seeds for that point
	Seeds   []int64          `yaml:"seeds"`    // default [0]
	SeedKey string           `yaml:"seed_key"` // dotted key the seed is written to; default "seed"
}

// Reference is one number reported by the paper, transcribed with its source. It applies to the
// result groups whose configuration matches every key of Match.
type Reference struct {
	Match  map[string]any `yaml:"match"`
	Metric string         `yaml:"metric"`
	Value  float64        `yaml:"value"`
	Std    float64        `yaml:"std"`    // optional ± reported by the paper (0: none)
	Source string         `yaml:"source"` // e.g. "seed 000 Table 2, iNat row"
	// Tables, when set, scopes the reference to these tables. A table with scoped references uses
	// only those (e.g. Table 9's ViT-B/16 RS@k row beside the same runs that Table 2 compares with
	// its ResNet-50 row); the others use the unscoped ones.
	Tables []string `yaml:"tables"`

	// File is the file the reference was read from when it is not the spec (paper.yaml), and
	// Index its position in that file's list.
	File  string `yaml:"-"`
	Index int    `yaml:"-"`
}

// IndexAt is the reference's position in its file: Index for one read from paper.yaml, else i (its
// position in the spec's list, which the spec's own references start).
func (r *Reference) IndexAt(i int) int {
	if r.File != "" {
		return r.Index
	}
	return i
}

// Launch holds what --emit needs to run the sweep in a cluster.
type Launch struct {
	Image     string            `yaml:"image"`      // container image; default "dmlkit:latest"
	GPUs      int               `yaml:"gpus"`       // GPUs per run (default 0)
	CPUs      int               `yaml:"cpus"`       // CPUs per run (default 2)
	Memory    string            `yaml:"memory"`     // e.g. "16Gi" (default "8Gi")
	Time      string            `yaml:"time"`       // SLURM time limit, e.g. "04:00:00" (default "24:00:00")
	Parallel  int               `yaml:"parallel"`   // max shards running at once (default: all)
	Partition string            `yaml:"partition"`  // SLURM partition (optional)
	Volume    string            `yaml:"volume"`     // k8s PersistentVolumeClaim mounted at /work (optional)
	Env       map[string]string `yaml:"env"`        // extra environment variables
	Workdir   string            `yaml:"workdir"`    // repository root inside the container (default /work)
	ExtraArgs []string          `yaml:"extra_args"` // appended to `dmlkit run`
}

var paperName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]*$`)

// reserved keys of a scale entry that are not configuration overrides.
var scaleReserved = map[string]bool{"seeds": true, "grid": true, "list": true}

// Load reads and checks a spec file. A directory is accepted and means DIR/spec.yaml. References
// listed in paper.yaml next to the spec (same format as the spec's reference field) are appended. Structural
// errors (unknown top-level fields, wrong YAML types, unknown figure kinds, uncited references)
// are reported with the file and line; configuration values are checked later by [Spec.Plan].
func Load(path string) (*Spec, error) {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		path = filepath.Join(path, "spec.yaml")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("experiments: %w", err)
	}
	s, err := Parse(b, path)
	if err != nil {
		return nil, err
	}
	s.Path = path
	s.Dir = filepath.Dir(path)
	// reproductions/<paper>/spec.yaml: the directory names the paper (figures/<paper>/, the
	// front page's links and `dmlkit run <paper>` all assume it).
	if filepath.Base(filepath.Dir(s.Dir)) == "reproductions" && filepath.Base(s.Dir) != s.Paper {
		return nil, fmt.Errorf("experiments: %s: field \"paper\": %q differs from its directory %q (reproductions/<paper>/spec.yaml)", path, s.Paper, filepath.Base(s.Dir))
	}
	// The paper's numbers may also live in paper.yaml next to the spec (a list under "reference:").
	pp := filepath.Join(s.Dir, "paper.yaml")
	if pb, err := os.ReadFile(pp); err == nil {
		var paper struct {
			Reference       []Reference `yaml:"reference"`
			DescriptiveKeys []string    `yaml:"descriptive_keys"`
		}
		dec := yaml.NewDecoder(bytes.NewReader(pb))
		dec.KnownFields(true)
		if err := dec.Decode(&paper); err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("experiments: %s: %w", pp, err)
		}
		for i, r := range paper.Reference {
			if r.Metric == "" || r.Source == "" {
				return nil, fmt.Errorf("experiments: %s: field \"reference[%d]\": metric and source are required", pp, i)
			}
			paper.Reference[i].File, paper.Reference[i].Index = pp, i
		}
		s.Reference = append(s.Reference, paper.Reference...)
		s.DescriptiveKeys = append(s.DescriptiveKeys, paper.DescriptiveKeys...)
	}
	return s, nil
}

// Parse decodes a spec from YAML; name is used in error messages.
func Parse(data []byte, name string) (*Spec, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var s Spec
	if err := dec.Decode(&s); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("experiments: %s: empty spec", name)
		}
		return nil, fmt.Errorf("experiments: %s: %w", name, err)
	}
	s.Base = AsMap(Normalize(s.Base))
	for k, v := range s.Scales {
		s.Scales[k] = AsMap(Normalize(v))
	}
	for k, v := range s.Sweep.Grid {
		s.Sweep.Grid[k] = Normalize(v).([]any)
	}
	for i, p := range s.Sweep.List {
		s.Sweep.List[i] = AsMap(Normalize(p))
	}
	if err := s.check(); err != nil {
		return nil, fmt.Errorf("experiments: %s: %w", name, err)
	}
	return &s, nil
}

func AsMap(v any) map[string]any {
	if m, ok := v.(map[string]any); ok {
		return m
	}
	return map[string]any{}
}

// check validates the structure of the spec (not the configuration values).
func (s *Spec) check() error {
	if s.Paper == "" {
		return errors.New("field \"paper\": missing")
	}
	if !paperName.MatchString(s.Paper) {
		return fmt.Errorf("field \"paper\": %q must be lower-case letters, digits, '-' or '_'", s.Paper)
	}
	for i, c := range s.Committed {
		if _, ok := s.Scales[c]; !ok || c == "small" || c == "pretrained" || slices.Contains(s.Committed[:i], c) {
			return fmt.Errorf("field \"committed[%d]\": %q is not a further scale of the spec (its scales: %s; small and pretrained are committed always)", i, c, strings.Join(s.ScaleNames(), ", "))
		}
	}
	for _, k := range SortedKeys(s.Sweep.Grid) {
		if k == "" {
			return errors.New("field \"sweep.grid\": empty key")
		}
		if len(s.Sweep.Grid[k]) == 0 {
			return fmt.Errorf("field \"sweep.grid.%s\": no values", k)
		}
	}
	for i, p := range s.Sweep.List {
		if v, ok := p["seeds"]; ok {
			if _, err := toSeeds(v); err != nil {
				return fmt.Errorf("field \"sweep.list[%d].seeds\": %w", i, err)
			}
		}
	}
	known := RegisteredDiagnostics()
	seenDiag := map[string]bool{}
	for i, d := range s.Diagnostics {
		if seenDiag[d] {
			return fmt.Errorf("field \"diagnostics[%d]\": %q listed twice", i, d)
		}
		seenDiag[d] = true
		if _, ok := known[d]; !ok && known != nil {
			return fmt.Errorf("field \"diagnostics[%d]\": unknown diagnostic %q (known: %s)", i, d, strings.Join(SortedKeys(known), ", "))
		}
	}
	seen := map[int64]bool{}
	for _, sd := range s.Sweep.Seeds {
		if seen[sd] {
			return fmt.Errorf("field \"sweep.seeds\": seed %d listed twice", sd)
		}
		seen[sd] = true
	}
	for name, sc := range s.Scales {
		if err := checkScale(name, sc); err != nil {
			return err
		}
	}
	for i, r := range s.Reference {
		if r.Metric == "" {
			return fmt.Errorf("field \"reference[%d].metric\": missing", i)
		}
		if r.Source == "" {
			return fmt.Errorf("field \"reference[%d].source\": missing (cite the table and row)", i)
		}
	}
	if err := s.checkTunes(); err != nil {
		return err
	}
	if s.Leaderboard != nil {
		if err := s.Leaderboard.check(s); err != nil {
			return err
		}
	}
	if err := s.Labels.Check(); err != nil {
		return err
	}
	names := map[string]bool{}
	for i := range s.Figures {
		f := &s.Figures[i]
		if err := f.Check(); err != nil {
			return fmt.Errorf("field \"figures[%d]\" (%s): %w", i, f.Name, err)
		}
		if names["fig:"+f.Name] {
			return fmt.Errorf("field \"figures[%d].name\": %q used twice", i, f.Name)
		}
		names["fig:"+f.Name] = true
	}
	for i := range s.Tables {
		t := &s.Tables[i]
		if err := t.Check(); err != nil {
			var fe *FieldError
			if errors.As(err, &fe) { // a nested field: name its full path
				return fmt.Errorf("field \"tables[%d].%s\" (%s): %s", i, fe.Path, t.Name, fe.Msg)
			}
			return fmt.Errorf("field \"tables[%d]\" (%s): %w", i, t.Name, err)
		}
		if names["tab:"+t.Name] {
			return fmt.Errorf("field \"tables[%d].name\": %q used twice", i, t.Name)
		}
		names["tab:"+t.Name] = true
	}
	return nil
}

func checkScale(name string, sc map[string]any) error {
	if v, ok := sc["seeds"]; ok {
		if _, err := toSeeds(v); err != nil {
			return fmt.Errorf("field \"scales.%s.seeds\": %w", name, err)
		}
	}
	if v, ok := sc["grid"]; ok {
		g, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("field \"scales.%s.grid\": want a map of key → list of values, got %T", name, v)
		}
		for k, vals := range g {
			if l, ok := vals.([]any); !ok || len(l) == 0 {
				return fmt.Errorf("field \"scales.%s.grid.%s\": want a non-empty list", name, k)
			}
		}
	}
	if v, ok := sc["list"]; ok {
		l, ok := v.([]any)
		if !ok {
			return fmt.Errorf("field \"scales.%s.list\": want a list of maps, got %T", name, v)
		}
		for i, e := range l {
			m, ok := e.(map[string]any)
			if !ok {
				return fmt.Errorf("field \"scales.%s.list[%d]\": want a map, got %T", name, i, e)
			}
			if v, ok := m["seeds"]; ok {
				if _, err := toSeeds(v); err != nil {
					return fmt.Errorf("field \"scales.%s.list[%d].seeds\": %w", name, i, err)
				}
			}
		}
	}
	return nil
}

func toSeeds(v any) ([]int64, error) {
	l, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("want a list of integers, got %T", v)
	}
	out := make([]int64, len(l))
	seen := map[int64]bool{}
	for i, e := range l {
		var s int64
		switch x := e.(type) {
		case int:
			s = int64(x)
		case int64:
			s = x
		case float64:
			if x != float64(int64(x)) {
				return nil, fmt.Errorf("element %d: want an integer, got %v", i, x)
			}
			s = int64(x)
		default:
			return nil, fmt.Errorf("element %d: want an integer, got %v (%T)", i, e, e)
		}
		if seen[s] {
			return nil, fmt.Errorf("seed %d listed twice", s)
		}
		seen[s] = true
		out[i] = s
	}
	return out, nil
}

// ScaleNames lists the scales the spec defines, sorted.
func (s *Spec) ScaleNames() []string { return SortedKeys(s.Scales) }

// Run is one resolved configuration of a sweep.
type Run struct {
	Index  int            // position in the full plan of its scale; shards are assigned by it
	Hash   string         // [Hash] of Config
	Seed   int64          // also written into Config at the spec's seed key
	Params map[string]any // the swept values (dotted key → value), without the seed
	Config map[string]any // the full resolved configuration
	Tune   string         // the tuning step the run belongs to ("" for a sweep point)
	// Also names further tuning steps whose grids hold the same configuration: it is planned and
	// run once, and each of those steps reads its record (e.g. a margin grid at the selected rate
	// and that margin's own rate grid meet in one point).
	Also []string
	// Tuned names the tuning steps whose selections the run's configuration takes (a sweep
	// point's "tuned" entry, or the steps a tuning step's own point is tuned at), and Taken the
	// keys whose values came from them (a value written in the point wins over a selection).
	Tuned []string
	Taken []string
	// sources: for a held run ([Plan.Held]), the hashes of the planned runs it starts from
	// and waits for (see phase.go).
	sources []string
}

// InTune reports whether the run is a point of tuning step name's grid (its Tune or one of Also).
func (r Run) InTune(name string) bool { return r.Tune == name || slices.Contains(r.Also, name) }

// Label is a short human description of the run: its swept values and seed.
func (r Run) Label() string {
	var parts []string
	for _, k := range SortedKeys(r.Params) {
		parts = append(parts, k+"="+FormatValue(r.Params[k]))
	}
	parts = append(parts, fmt.Sprintf("seed=%d", r.Seed))
	return strings.Join(parts, " ")
}

// Plan is the ordered list of runs of one scale of a spec.
type Plan struct {
	Spec  *Spec
	Scale string
	Runs  []Run
	// Pending lists the points that wait for a tuning step's selection, and the runs that wait
	// for the run they start from ([RunRefPrefix]) to be stored (see [Spec.PlanWith]); their runs
	// are not in Runs yet.
	Pending []Pending
	// Held are the runs waiting for their source run, their references unresolved (validated
	// with Runs).
	Held []Run
}

// Resolve expands the sweep of the given scale into runs, without checking configuration values.
// Precedence, lowest first: base, the scale's overrides, the sweep point, the seed. A scale entry
// may replace the seeds, grid (per key) or list of the sweep. An empty scale name is allowed only
// when the spec defines no scales.
//
// Points that take values from a tuning step ("tuned") are pending here, as no records are read;
// [Spec.PlanWith] resolves them from the stored tuning runs.
//
// Runs that start from another run ("run:" references, [RunRefPrefix]) are pending here too, as
// nothing is stored yet.
func (s *Spec) Resolve(scale string) (*Plan, error) { return s.resolve(scale, nil, nil) }

// resolve is Resolve with the selections of the tuning steps (step name → dotted key → value)
// and the stored runs of the scale (hash → "" or the failure of a run stored as failed; see
// resolveRefs). The runs of the tuning steps the points need come first; a run's Index counts
// the runs of pending points too, so shards keep their runs when a selection arrives.
func (s *Spec) resolve(scale string, sel map[string]map[string]any, done map[string]string) (*Plan, error) {
	var over map[string]any
	if scale == "" {
		if len(s.Scales) > 0 {
			return nil, fmt.Errorf("experiments: %s: choose a scale (%s)", s.Name(), strings.Join(s.ScaleNames(), ", "))
		}
	} else {
		var ok bool
		over, ok = s.Scales[scale]
		if !ok {
			return nil, fmt.Errorf("experiments: %s: unknown scale %q (defined: %s)", s.Name(), scale, strings.Join(s.ScaleNames(), ", "))
		}
	}
	seeds := s.Sweep.Seeds
	grid := map[string][]any{}
	for k, v := range s.Sweep.Grid {
		grid[k] = v
	}
	list := s.Sweep.List
	if v, ok := over["seeds"]; ok {
		seeds, _ = toSeeds(v) // checked by Parse
	}
	if v, ok := over["grid"]; ok {
		for k, vals := range v.(map[string]any) {
			grid[k] = vals.([]any)
		}
	}
	if v, ok := over["list"]; ok {
		list = nil
		for _, e := range v.([]any) {
			list = append(list, e.(map[string]any))
		}
	}
	if len(seeds) == 0 {
		seeds = []int64{0}
	}
	seedKey := s.Sweep.SeedKey
	if seedKey == "" {
		seedKey = "seed"
	}

	base := Clone(s.Base)
	for _, k := range SortedKeys(over) {
		if scaleReserved[k] {
			continue
		}
		if err := mergeAt(base, k, over[k]); err != nil {
			return nil, fmt.Errorf("experiments: %s: scale %q: %w", s.Name(), scale, err)
		}
	}

	type point struct {
		pt    map[string]any
		seeds []int64
		tune  string
		waits []string
		tuned []string // the steps whose selections the point takes
		taken []string // the keys it took from them
	}
	var points []point
	var needed []string
	for _, pt := range expand(grid, list) {
		pt, names := pointTunes(pt)
		needed = append(needed, names...)
		taken := takenKeys(pt, names, sel)
		pt, waits := applyTunes(pt, names, sel)
		points = append(points, point{pt: pt, seeds: seeds, waits: waits, tuned: names, taken: taken})
	}
	var all []point
	for _, tp := range s.tunePoints(needed, sel) {
		all = append(all, point{pt: tp.point, seeds: tp.seeds, tune: tp.tune, waits: tp.waits, tuned: tp.tuned, taken: tp.taken})
	}
	all = append(all, points...)
	plan := &Plan{Spec: s, Scale: scale}
	byHash := map[string]string{}
	runAt := map[string]int{} // hash → index in plan.Runs
	index := 0
	var held []heldRun
	var waiting []candidate // sweep points' runs waiting for a tuning step, as far as known
	for _, p := range all {
		pt, ptSeeds := p.pt, p.seeds
		if v, ok := pt["seeds"]; ok {
			ptSeeds, _ = toSeeds(v) // checked by Parse
			q := make(map[string]any, len(pt))
			for k, v := range pt {
				if k != "seeds" {
					q[k] = v
				}
			}
			pt = q
		}
		if len(p.waits) > 0 {
			label := strings.TrimSuffix(Run{Params: pt}.Label(), " seed=0")
			if p.tune != "" {
				label = "tuning step " + p.tune
			}
			plan.Pending = append(plan.Pending, Pending{Point: label, Waits: p.waits,
				Reason: "waits for the selection of " + strings.Join(p.waits, ", ")})
			index += len(ptSeeds)
			if p.tune == "" {
				for _, seed := range ptSeeds {
					cfg := Clone(base)
					for _, k := range SortedKeys(pt) {
						_ = mergeAt(cfg, k, pt[k]) // errors surface once the selection arrives
					}
					_ = SetPath(cfg, seedKey, seed)
					stripNeutral(cfg)
					waiting = append(waiting, candidate{cfg: cfg, seed: seed, label: Run{Params: pt, Seed: seed}.Label(), heldIdx: -1})
				}
			}
			continue
		}
		for _, seed := range ptSeeds {
			cfg := Clone(base)
			for _, k := range SortedKeys(pt) {
				if err := mergeAt(cfg, k, pt[k]); err != nil {
					return nil, fmt.Errorf("experiments: %s: sweep: %w", s.Name(), err)
				}
			}
			if err := SetPath(cfg, seedKey, seed); err != nil {
				return nil, fmt.Errorf("experiments: %s: field \"sweep.seed_key\": %w", s.Name(), err)
			}
			stripNeutral(cfg)
			refs, err := findRunRefs(cfg)
			if err != nil {
				return nil, fmt.Errorf("experiments: %s: scale %q, run %s: %w", s.Name(), scale, Run{Params: pt, Seed: seed}.Label(), err)
			}
			if len(refs) > 0 { // planned once its source runs are stored (resolveRefs)
				held = append(held, heldRun{run: Run{Index: index, Seed: seed, Params: pt, Config: cfg, Tune: p.tune, Tuned: p.tuned, Taken: p.taken}, refs: refs})
				index++
				continue
			}
			h, err := Hash(cfg)
			if err != nil {
				return nil, fmt.Errorf("experiments: %s: scale %q, run %s: %w", s.Name(), scale, Run{Params: pt, Seed: seed}.Label(), err)
			}
			r := Run{Index: index, Hash: h, Seed: seed, Params: pt, Config: cfg, Tune: p.tune, Tuned: p.tuned, Taken: p.taken}
			index++
			if prev, dup := byHash[h]; dup {
				// Two tuning steps' grids may meet in one configuration: it runs once, in both steps.
				if i, ok := runAt[h]; ok && r.Tune != "" && plan.Runs[i].Tune != "" && !plan.Runs[i].InTune(r.Tune) {
					plan.Runs[i].Also = append(plan.Runs[i].Also, r.Tune)
					continue
				}
				return nil, fmt.Errorf("experiments: %s: sweep points %q and %q resolve to the same configuration", s.Name(), prev, r.Label())
			}
			byHash[h] = r.Label()
			runAt[h] = len(plan.Runs)
			plan.Runs = append(plan.Runs, r)
		}
	}
	if len(held) > 0 {
		if err := s.resolveRefs(plan, held, waiting, done, seedKey, byHash); err != nil {
			return nil, err
		}
	}
	return plan, nil
}

// mergeAt sets key to value; a map value is merged key by key rather than replacing the group.
func mergeAt(cfg map[string]any, key string, value any) error {
	if m, ok := value.(map[string]any); ok && len(m) > 0 {
		for _, k := range SortedKeys(m) {
			if err := mergeAt(cfg, key+"."+k, m[k]); err != nil {
				return err
			}
		}
		return nil
	}
	return SetPath(cfg, key, value)
}

// expand returns the sweep points: the cartesian product of the grid (keys in sorted order, the
// last key varying fastest) crossed with the list entries. With neither, one empty point.
func expand(grid map[string][]any, list []map[string]any) []map[string]any {
	points := []map[string]any{{}}
	for _, k := range SortedKeys(grid) {
		var next []map[string]any
		for _, p := range points {
			for _, v := range grid[k] {
				q := make(map[string]any, len(p)+1)
				for pk, pv := range p {
					q[pk] = pv
				}
				q[k] = v
				next = append(next, q)
			}
		}
		points = next
	}
	if len(list) == 0 {
		return points
	}
	var out []map[string]any
	for _, p := range points {
		for _, l := range list {
			q := make(map[string]any, len(p)+len(l))
			for k, v := range p {
				q[k] = v
			}
			for k, v := range Flatten(l) {
				q[k] = v
			}
			out = append(out, q)
		}
	}
	return out
}

func (s *Spec) Name() string {
	if s.Path != "" {
		return s.Path
	}
	return "spec " + s.Paper
}

// Plan resolves the scale and checks every run's configuration with the registered [Validator]
// (see [SetValidator]) before anything is trained. The first invalid run's error names the spec,
// the run's swept values and the field path.
func (s *Spec) Plan(scale string) (*Plan, error) {
	p, err := s.Resolve(scale)
	if err != nil {
		return nil, err
	}
	if err := p.Validate(registeredValidator()); err != nil {
		return nil, err
	}
	return p, nil
}

// Validate checks each run's configuration with v (nil: no check), also of the runs that wait
// for the run they start from (with their "run:" references as written). Errors name the run.
func (p *Plan) Validate(v Validator) error {
	if v == nil {
		return nil
	}
	for _, r := range append(slices.Clone(p.Runs), p.Held...) {
		if err := v(Clone(r.Config)); err != nil {
			return fmt.Errorf("experiments: %s: scale %q, run %s: %w", p.Spec.Name(), p.Scale, r.Label(), err)
		}
	}
	return nil
}

// Filter keeps the runs whose configuration matches every key of only; several values for one key
// are alternatives. Values compare as written ([ValueEqual]); a key missing from a run's
// configuration never matches. Run.Index is kept, so sharding is unaffected by filtering.
func Filter(runs []Run, only map[string][]string) []Run {
	if len(only) == 0 {
		return runs
	}
	var out []Run
	for _, r := range runs {
		if matchAll(r.Config, only) {
			out = append(out, r)
		}
	}
	return out
}

func matchAll(cfg map[string]any, only map[string][]string) bool {
	for k, alts := range only {
		v, ok := Get(cfg, k)
		if !ok {
			return false
		}
		hit := false
		for _, a := range alts {
			if FormatValue(v) == a {
				hit = true
				break
			}
		}
		if !hit {
			return false
		}
	}
	return true
}

// ParseOnly turns ["loss.name=rsk", "loss.name=smoothap", "seed=0"] into a filter for [Filter].
func ParseOnly(list []string) (map[string][]string, error) {
	out := map[string][]string{}
	for _, s := range list {
		k, v, ok := strings.Cut(s, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, fmt.Errorf("experiments: --only %q is not of the form key=value", s)
		}
		out[k] = append(out[k], strings.TrimSpace(v))
	}
	return out, nil
}

// Shard returns the runs of shard index of n: those whose Index ≡ index (mod n). Over index =
// 0..n-1 the shards partition the plan, every run in exactly one shard, and a shard's contents do
// not depend on which runs are already done.
func Shard(runs []Run, index, n int) ([]Run, error) {
	if n < 1 || index < 0 || index >= n {
		return nil, fmt.Errorf("experiments: shard --index %d --of %d: need 0 <= index < of", index, n)
	}
	var out []Run
	for _, r := range runs {
		if r.Index%n == index {
			out = append(out, r)
		}
	}
	return out, nil
}

// SweptKeys lists the dotted keys the plan varies (grid and list keys), sorted.
func (p *Plan) SweptKeys() []string {
	set := map[string]bool{}
	for _, r := range p.Runs {
		for k := range r.Params {
			set[k] = true
		}
	}
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

package jobs

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/dmlkit/dmlkit/dmlkit/sweep"
)

// EmitOptions describes the sweep a cluster job runs.
type EmitOptions struct {
	SpecPath string   // the spec's path inside the container, relative to the working directory
	Scale    string   // scale to run
	Shards   int      // most array tasks / completions per phase; default: one per run of the phase
	Only     []string // --only filters passed through
	Workers  int      // runs at once within a task (default: the task's cores)
	// Results is the results directory the tasks share (default: /results/PAPER/results on
	// the k8s volume; $DMLKIT_RESULTS/PAPER/results for SLURM); Workdir the run directories
	// (default: runs beside results).
	Results, Workdir string
	// Resources per task, overriding what [JobPlan.Size] sized (0, nil or "": keep it).
	CPUs   int
	GPUs   *int
	Memory string // a Kubernetes quantity, e.g. 4Gi
	Time   string // HH:MM:SS
}

// Container layout of docker/Dockerfile and docker/Dockerfile.cuda that the emitted jobs rely on.
const (
	// ImageRepoDir is where the images put the repository (WORKDIR, $DMLKIT_HOME): a k8s pod's
	// working directory, so that SpecPath (reproductions/PAPER/spec.yaml) resolves.
	ImageRepoDir = "/home/dmlkit/dmlkit"
	// ImageResultsDir is the images' results volume (VOLUME, $RESULTS_DIR).
	ImageResultsDir = "/results"
	// ImageUID is the images' user (useradd --uid): the pod runs as it, and fsGroup makes the
	// results volume writable to it.
	ImageUID = 1000
	// DefaultResultsClaim is the PersistentVolumeClaim an emitted k8s job creates and mounts at
	// ImageResultsDir when the spec's launch.volume names none.
	DefaultResultsClaim = "dmlkit-results"
)

// JobPlan is a sweep laid out for a cluster job: its phases ([sweep.Plan.RunPhases]), each a set of runs
// that can start once the previous phases are stored, with the resources of one task.
type JobPlan struct {
	Spec  *sweep.Spec
	Scale string
	// FromStore: the counts subtract the runs stored in the records the job starts from (the
	// volume holds them); else the job starts from an empty store.
	FromStore bool
	Phases    []JobPhase
	// Unresolved are points that no phase resolves (they would stay pending).
	Unresolved []sweep.Pending
}

// JobPhase is one phase of a [JobPlan].
type JobPhase struct {
	Phase  int         // from 1, as `dmlkit run --phase` takes it
	Runs   []sweep.Run // the runs the job runs in it (not stored in its starting records)
	Stored int         // runs of the phase stored already (FromStore)
	Steps  []string    // tuning steps with runs in it
	Points int         // of Runs, runs of sweep points
	// Measured are the records (of the sizing store) of the phase's runs, or nil.
	Measured []sweep.Record
	Tasks    int // array tasks / completions
	Res      Resources
}

// Resources are what one task of a phase asks for.
type Resources struct {
	CPUs, GPUs   int
	Memory, Time string // a Kubernetes quantity (4Gi) and HH:MM:SS
	Basis        string // how they were chosen, for the job's header
}

// placeholderMetric is the value the job plan gives the selection metrics of runs it has no
// record of: the counts of later phases do not depend on which grid point a rule selects.
const placeholderMetric = 0.0

// Plan lays out the sweep of scale as phases. start are the records the job begins with
// (nil: an empty volume); known are records to size the tasks by and to take the selections
// from where they hold the tuning runs (the committed or local store; may be nil): the plan of
// each next phase is resolved on start plus, for each run of the earlier phases, its known
// record or a placeholder (whose selection metrics are all equal). only is the --only filter.
func Plan(s *sweep.Spec, scale string, start, known []sweep.Record, only map[string][]string) (*JobPlan, error) {
	var recs []sweep.Record
	have := map[string]bool{}
	for _, r := range start {
		if r.Scale == scale {
			recs = append(recs, r)
			have[r.Hash] = true
		}
	}
	stored := maps1(have)
	byHash := map[string]sweep.Record{}
	for _, r := range known {
		if r.Scale == scale {
			if prev, ok := byHash[r.Hash]; !ok || prev.Failed != "" {
				byHash[r.Hash] = r
			}
		}
	}
	placeholder := sweep.Metrics{}
	for _, t := range s.Tune {
		for _, m := range []string{t.Select.Metric, t.Select.Guard} {
			if m != "" {
				placeholder[m] = placeholderMetric
			}
		}
	}
	var plan *sweep.Plan
	for round := 0; ; round++ {
		var err error
		if plan, err = s.PlanWith(scale, recs); err != nil {
			return nil, err
		}
		added := false
		for _, r := range plan.Runs {
			if have[r.Hash] {
				continue
			}
			have[r.Hash], added = true, true
			if k, ok := byHash[r.Hash]; ok {
				recs = append(recs, k)
				continue
			}
			recs = append(recs, sweep.Record{Hash: r.Hash, Paper: s.Paper, Scale: scale, Seed: r.Seed, Params: r.Params, Config: r.Config, Metrics: placeholder})
		}
		if !added {
			break
		}
		if round > len(plan.Runs)+len(s.Tune)+2 {
			return nil, fmt.Errorf("experiments: %s: scale %q: the phases do not settle", s.Name(), scale)
		}
	}
	jp := &JobPlan{Spec: s, Scale: scale, FromStore: len(stored) > 0, Unresolved: plan.Pending}
	phases := plan.RunPhases()
	byPhase := map[int]*JobPhase{}
	for _, r := range sweep.Filter(plan.Runs, only) {
		k := phases[r.Hash]
		p := byPhase[k]
		if p == nil {
			p = &JobPhase{Phase: k}
			byPhase[k] = p
		}
		if stored[r.Hash] {
			p.Stored++
			continue
		}
		p.Runs = append(p.Runs, r)
		if r.Tune == "" {
			p.Points++
		}
		for _, t := range append([]string{r.Tune}, r.Also...) {
			if t != "" && !slices.Contains(p.Steps, t) {
				p.Steps = append(p.Steps, t)
			}
		}
		if k, ok := byHash[r.Hash]; ok {
			p.Measured = append(p.Measured, k)
		}
	}
	ks := make([]int, 0, len(byPhase))
	for k := range byPhase {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	for _, k := range ks {
		if p := byPhase[k]; len(p.Runs) > 0 { // a phase stored entirely needs no task
			slices.Sort(p.Steps)
			jp.Phases = append(jp.Phases, *p)
		}
	}
	return jp, nil
}

func maps1(m map[string]bool) map[string]bool {
	out := make(map[string]bool, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// CPUScale reports whether scale is one a CPU runs (smoke, small): its tasks ask for no GPU.
func CPUScale(scale string) bool { return scale == "smoke" || scale == "small" }

// Sizing of CPU-scale tasks: measured time × timeSafety + timeOverhead, memory × memSafety +
// memOverheadMB; without measurements, the defaults.
const (
	timeSafety      = 3.0
	timeOverheadMin = 10.0
	memSafety       = 1.5
	memOverheadMB   = 512.0
	defaultCPUs     = 2
	defaultMemory   = "4Gi"
	defaultTime     = "02:00:00"
)

// Size sets each phase's task count (one per run, at most opt.Shards) and resources. At the
// CPU scales (smoke, small) a task asks for CPUs only (launch.cpus, default 2), and memory and
// time from the measured runs of its phase (Record.Seconds and mem/peak_rss_mb of the sizing
// records; else of any record of the scale) with a safety factor, else modest defaults. At
// other scales the spec's launch block applies (full: at least one GPU). opt's CPUs, GPUs,
// Memory and Time override both.
func (jp *JobPlan) Size(opt EmitOptions, known []sweep.Record) {
	l := jp.Spec.Launch
	var scaleRecs []sweep.Record
	for _, r := range known {
		if r.Scale == jp.Scale && r.Seconds > 0 {
			scaleRecs = append(scaleRecs, r)
		}
	}
	for i := range jp.Phases {
		p := &jp.Phases[i]
		p.Tasks = len(p.Runs)
		if opt.Shards > 0 && opt.Shards < p.Tasks {
			p.Tasks = opt.Shards
		}
		perTask := (len(p.Runs) + p.Tasks - 1) / p.Tasks
		var res Resources
		if CPUScale(jp.Scale) {
			res.CPUs = defaultCPUs
			if l.CPUs > 0 && l.GPUs == 0 {
				res.CPUs = l.CPUs
			}
			secs, mb, n, from := 0.0, 0.0, 0, "its runs"
			measure := func(recs []sweep.Record) {
				for _, r := range recs {
					if r.Seconds > 0 {
						secs, n = max(secs, r.Seconds), n+1
					}
					mb = max(mb, r.Metrics[sweep.MetricPeakRSS])
				}
			}
			measure(p.Measured)
			if n == 0 {
				measure(scaleRecs)
				from = "the scale's stored runs"
			}
			if n == 0 {
				res.Memory, res.Time = defaultMemory, defaultTime
				res.Basis = "no stored run to measure: defaults"
			} else {
				res.Time = clock(timeSafety*secs*float64(perTask)/60 + timeOverheadMin)
				res.Memory = defaultMemory
				mem := "no memory measured: default memory"
				if mb > 0 {
					res.Memory = fmt.Sprintf("%dGi", int(math.Ceil((memSafety*mb+memOverheadMB)/1024)))
					mem = fmt.Sprintf("peak RSS %.0f MB ×%.1f + %.0f MB", mb, memSafety, memOverheadMB)
				}
				res.Basis = fmt.Sprintf("measured on %d of %s: longest %.0f s ×%.0f ×%d runs per task + %.0f min; %s", n, from, secs, timeSafety, perTask, timeOverheadMin, mem)
			}
		} else {
			res.CPUs, res.GPUs, res.Memory, res.Time = l.CPUs, l.GPUs, l.Memory, l.Time
			if res.CPUs <= 0 {
				res.CPUs = 2
			}
			if jp.Scale == "full" && res.GPUs <= 0 {
				res.GPUs = 1
			}
			if res.Memory == "" {
				res.Memory = "8Gi"
			}
			if res.Time == "" {
				res.Time = "24:00:00"
			}
			res.Basis = "the spec's launch block"
		}
		var over []string
		if opt.CPUs > 0 {
			res.CPUs = opt.CPUs
			over = append(over, "CPUs")
		}
		if opt.GPUs != nil {
			res.GPUs = *opt.GPUs
			over = append(over, "GPUs")
		}
		if opt.Memory != "" {
			res.Memory = opt.Memory
			over = append(over, "memory")
		}
		if opt.Time != "" {
			res.Time = opt.Time
			over = append(over, "time")
		}
		if len(over) > 0 {
			res.Basis += "; " + strings.Join(over, ", ") + " set on the command line"
		}
		p.Res = res
	}
}

// clock formats minutes as HH:MM:SS, rounded up to 5 minutes.
func clock(minutes float64) string {
	m := int(math.Ceil(minutes/5)) * 5
	return fmt.Sprintf("%02d:%02d:00", m/60, m%60)
}

// args are the dmlkit arguments of phase p's task; index and of are as the scheduler writes them.
func (o EmitOptions) args(jp *JobPlan, p JobPhase, index, of string) []string {
	args := []string{"run", o.SpecPath}
	if o.Scale != "" {
		args = append(args, "--scale", o.Scale)
	}
	for _, f := range o.Only {
		args = append(args, "--only", f)
	}
	if o.Workers > 0 {
		args = append(args, "--workers", strconv.Itoa(o.Workers))
	}
	if o.Results != "" {
		args = append(args, "--results", o.Results)
	}
	if o.Workdir != "" {
		args = append(args, "--workdir", o.Workdir)
	}
	args = append(args, "--phase", strconv.Itoa(p.Phase), "--index", index, "--of", of)
	return append(args, jp.Spec.Launch.ExtraArgs...)
}

// phaseLines describe the phases for the job's header, one comment line each.
func (jp *JobPlan) phaseLines(unit string) string {
	var b strings.Builder
	for _, p := range jp.Phases {
		var what []string
		if len(p.Steps) > 0 {
			what = append(what, "tuning step "+strings.Join(p.Steps, ", "))
		}
		if p.Points > 0 {
			what = append(what, fmt.Sprintf("%d runs of sweep points", p.Points))
		}
		stored := ""
		if p.Stored > 0 {
			stored = fmt.Sprintf(" (%d more stored already)", p.Stored)
		}
		gpu := ""
		if p.Res.GPUs > 0 {
			gpu = fmt.Sprintf(", %d GPU", p.Res.GPUs)
		}
		fmt.Fprintf(&b, "#   phase %d: %d runs%s (%s) in %d %s, each %d CPUs%s, %s, %s (%s)\n",
			p.Phase, len(p.Runs), stored, strings.Join(what, "; "), p.Tasks, unit, p.Res.CPUs, gpu, p.Res.Memory, p.Res.Time, p.Res.Basis)
	}
	if len(jp.Unresolved) > 0 {
		fmt.Fprintf(&b, "#   and %d points no phase resolves (first: %s: %s)\n", len(jp.Unresolved), jp.Unresolved[0].Point, jp.Unresolved[0].Reason)
	}
	return b.String()
}

func (jp *JobPlan) countsLine() string {
	n := 0
	for _, p := range jp.Phases {
		n += len(p.Runs)
	}
	from := "an empty store (the job's volume; --emit-from-store counts the stored records instead)"
	if jp.FromStore {
		from = "the stored records (the job's volume holds them: stored runs are left out)"
	}
	return fmt.Sprintf("%d runs of paper %q, scale %q, in %d phases, counted on %s", n, jp.Spec.Paper, jp.Scale, len(jp.Phases), from)
}

// phasesText is the common part of both jobs' headers.
func (jp *JobPlan) phasesText(unit string) string {
	return "# " + jp.countsLine() + ":\n" + jp.phaseLines(unit) +
		"# A phase starts once the previous one has ended with every task successful. A task runs\n" +
		"# `dmlkit run SPEC --phase K --index I --of N` (the phase's runs at positions ≡ I mod N), skips stored runs (a\n" +
		"# retried task resumes) and fails when one of its runs is left without a record, or before running anything when\n" +
		"# what its phase needs from earlier ones (a tuning step's selection, a run it starts from) is not stored, naming\n" +
		"# it. A run stored as failed (diverged) is a result: the phase completes with it.\n"
}

func (jp *JobPlan) check() error {
	if len(jp.Phases) == 0 {
		return errors.New("experiments: emit: nothing to run (every run of the selection is stored)")
	}
	return nil
}

// cpuImage is the image of a task asking for no GPU: launch.image, or docker/'s CPU tag when
// that is the CUDA one (dmlkit:cuda → dmlkit:cpu).
func cpuImage(image string, gpus int) string {
	if gpus == 0 && strings.HasSuffix(image, ":cuda") {
		return strings.TrimSuffix(image, ":cuda") + ":cpu"
	}
	return image
}

func launchImage(l sweep.Launch, gpus int) string {
	if l.Image == "" {
		if gpus > 0 {
			return "dmlkit:cuda"
		}
		return "dmlkit:cpu" // docker/Dockerfile's tag in docker/README.md
	}
	return cpuImage(l.Image, gpus)
}

var dnsBad = regexp.MustCompile(`[^a-z0-9-]+`)

func jobName(paper, scale string) string {
	name := "dmlkit-" + paper
	if scale != "" {
		name += "-" + scale
	}
	name = strings.Trim(dnsBad.ReplaceAllString(strings.ToLower(name), "-"), "-")
	if len(name) > 52 { // room for the controller's pod suffixes
		name = strings.TrimRight(name[:52], "-")
	}
	return name
}

func launchDefaults(l sweep.Launch) sweep.Launch {
	if l.Image == "" {
		l.Image = "dmlkit:cpu" // docker/Dockerfile's tag in docker/README.md
		if l.GPUs > 0 {
			l.Image = "dmlkit:cuda"
		}
	}
	if l.CPUs <= 0 {
		l.CPUs = 2
	}
	if l.Memory == "" {
		l.Memory = "8Gi"
	}
	if l.Time == "" {
		l.Time = "24:00:00"
	}
	if l.Workdir == "" {
		l.Workdir = ImageRepoDir
	}
	return l
}

// EmitK8s returns a bash script that holds Kubernetes manifests running the job's phases in the
// spec's container image, and submits them: `bash FILE manifests` prints them; `bash FILE
// storage` applies the storage (a ReadWriteMany claim "dmlkit-results" it creates, or the
// existing launch.volume, and a Pod "<job>-files" mounting it for `kubectl cp`) and waits for the
// pod; `bash FILE` (submit) applies the storage, then each phase's Indexed Job "<job>-pK" in turn,
// waiting with `kubectl wait --for=condition=complete` and stopping when one fails. Completion
// index i of phase K runs `dmlkit run SPEC --phase K --index i --of N` (JOB_COMPLETION_INDEX) in
// the images' repository directory with the volume at /results: records in
// /results/PAPER/results, run directories in /results/PAPER/runs, benchmarks in /results/data.
// Objects are labelled dmlkit/part=storage or dmlkit/part=job, and jobs dmlkit/phase=K.
func EmitK8s(jp *JobPlan, opt EmitOptions) (string, error) {
	if opt.SpecPath == "" {
		return "", errors.New("experiments: emit: no spec path")
	}
	if err := jp.check(); err != nil {
		return "", err
	}
	l := jp.Spec.Launch
	workdir := l.Workdir
	if workdir == "" {
		workdir = ImageRepoDir
	}
	paper := jp.Spec.Paper
	if opt.Results == "" {
		opt.Results = ImageResultsDir + "/" + paper + "/results"
	}
	if opt.Workdir == "" {
		opt.Workdir = ImageResultsDir + "/" + paper + "/runs"
	}
	name := jobName(paper, jp.Scale)
	labels := func(part string, phase int) map[string]string {
		m := map[string]string{"app": "dmlkit", "dmlkit/paper": paper, "dmlkit/part": part}
		if jp.Scale != "" {
			m["dmlkit/scale"] = jp.Scale
		}
		if phase > 0 {
			m["dmlkit/phase"] = strconv.Itoa(phase)
		}
		return m
	}
	dataDir := ImageResultsDir + "/data"
	env := []map[string]string{{"name": "DMLKIT_DATA", "value": dataDir}}
	for _, k := range sweep.SortedKeys(l.Env) {
		if k != "DMLKIT_DATA" {
			env = append(env, map[string]string{"name": k, "value": l.Env[k]})
		} else {
			env[0]["value"] = l.Env[k]
		}
	}
	claim := l.Volume
	if claim == "" {
		claim = DefaultResultsClaim
	}
	mounts := []any{map[string]any{"name": "results", "mountPath": ImageResultsDir}}
	volumes := []any{map[string]any{"name": "results", "persistentVolumeClaim": map[string]any{"claimName": claim}}}
	security := map[string]any{"runAsUser": ImageUID, "runAsGroup": ImageUID, "fsGroup": ImageUID}
	filesImage := launchImage(l, 0)
	var docs []any
	if l.Volume == "" {
		docs = append(docs, map[string]any{
			"apiVersion": "v1",
			"kind":       "PersistentVolumeClaim",
			"metadata":   map[string]any{"name": claim, "labels": labels("storage", 0)},
			"spec": map[string]any{
				"accessModes": []string{"ReadWriteMany"},
				"resources":   map[string]any{"requests": map[string]string{"storage": "20Gi"}},
			},
		})
	}
	docs = append(docs, map[string]any{
		"apiVersion": "v1",
		"kind":       "Pod",
		"metadata":   map[string]any{"name": name + "-files", "labels": labels("storage", 0)},
		"spec": map[string]any{
			"restartPolicy":   "Never",
			"securityContext": security,
			"containers": []any{map[string]any{
				"name":         "files",
				"image":        filesImage,
				"workingDir":   ImageResultsDir,
				"command":      []string{"sleep", "infinity"},
				"volumeMounts": mounts,
			}},
			"volumes": volumes,
		},
	})
	var jobs []string
	for _, p := range jp.Phases {
		parallel := l.Parallel
		if parallel <= 0 || parallel > p.Tasks {
			parallel = p.Tasks
		}
		limits := map[string]string{"cpu": strconv.Itoa(p.Res.CPUs), "memory": p.Res.Memory}
		if p.Res.GPUs > 0 {
			limits["nvidia.com/gpu"] = strconv.Itoa(p.Res.GPUs)
		}
		jn := fmt.Sprintf("%s-p%d", name, p.Phase)
		jobs = append(jobs, jn)
		container := map[string]any{
			"name":         "dmlkit",
			"image":        launchImage(l, p.Res.GPUs),
			"workingDir":   workdir,
			"command":      []string{"dmlkit"},
			"args":         opt.args(jp, p, "$(JOB_COMPLETION_INDEX)", strconv.Itoa(p.Tasks)),
			"env":          env,
			"resources":    map[string]any{"requests": limits, "limits": limits},
			"volumeMounts": mounts,
		}
		docs = append(docs, map[string]any{
			"apiVersion": "batch/v1",
			"kind":       "Job",
			"metadata":   map[string]any{"name": jn, "labels": labels("job", p.Phase)},
			"spec": map[string]any{
				"completionMode":       "Indexed",
				"completions":          p.Tasks,
				"parallelism":          parallel,
				"backoffLimitPerIndex": 2,
				"template": map[string]any{
					"metadata": map[string]any{"labels": labels("job", p.Phase)},
					"spec": map[string]any{
						"restartPolicy":   "Never",
						"securityContext": security,
						"containers":      []any{container},
						"volumes":         volumes,
					},
				},
			},
		})
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	for _, d := range docs {
		if err := enc.Encode(d); err != nil {
			return "", fmt.Errorf("experiments: emit k8s: %w", err)
		}
	}
	if err := enc.Close(); err != nil {
		return "", fmt.Errorf("experiments: emit k8s: %w", err)
	}
	pvcNote := fmt.Sprintf("the claim %q it creates (ReadWriteMany, 20Gi: edit the size or set launch.volume to an existing claim)", claim)
	if l.Volume != "" {
		pvcNote = fmt.Sprintf("the existing claim %q (launch.volume; the pods mount it ReadWriteMany)", claim)
	}
	var b strings.Builder
	b.WriteString("#!/bin/bash\n")
	fmt.Fprintf(&b, "# Generated by `dmlkit run %s --emit k8s`: one Kubernetes Indexed Job per phase of the sweep.\n", opt.SpecPath)
	b.WriteString(jp.phasesText("completions"))
	fmt.Fprintf(&b, `# Pods run in %s as uid %d; records go to %s and run directories to %s on
# %s, mounted at %s. The store locks with flock: the volume's
# file system must support it across nodes (NFS v4, CephFS; Lustre mounted with -o flock).
# Benchmarks are read from $DMLKIT_DATA=%s on the same volume.
#   bash FILE manifests                          # print the manifests (kubectl apply -f - ...)
#   bash FILE storage                            # the claim and the %s pod, waited for
#   kubectl cp ~/.cache/dmlkit/cub %s:%s/cub     # benchmarks the images lack (they carry omniglot, fashion-mnist)
#   bash FILE                                    # submit: each phase's job in turn, waiting for it
#   kubectl get jobs -l dmlkit/paper=%s -w       # watch (kubectl logs job/%s-pK for a phase's pods)
#   kubectl cp %s:%s/%s out/cluster/%s   # gather
#   dmlkit tables %s --scale %s --results out/cluster/%s/results   # and figures, the same flags
# When a phase fails the script stops and the later phases do not start; fix the cause and run it
# again: phases complete already are skipped, a failed phase's job is replaced, stored runs are skipped.
set -euo pipefail
manifests() {
  cat <<'DMLKIT_MANIFESTS'
`, workdir, ImageUID, opt.Results, opt.Workdir, pvcNote, ImageResultsDir, dataDir, name+"-files", name+"-files", dataDir,
		paper, name, name+"-files", ImageResultsDir, paper, paper, opt.specArg(paper), jp.Scale, paper)
	b.WriteString(buf.String())
	fmt.Fprintf(&b, `DMLKIT_MANIFESTS
}
storage() {
  manifests | kubectl apply -f - -l dmlkit/part=storage
  kubectl wait --for=condition=Ready --timeout=10m pod/%s
}
# job_state JOB: Complete, Failed, or empty (running, or absent).
job_state() {
  kubectl get "job/$1" -o jsonpath='{range .status.conditions[?(@.status=="True")]}{.type}{" "}{end}' 2>/dev/null | grep -oE 'Complete|Failed' | head -n1 || true
}
phase() { # K JOB
  local k=$1 job=$2 state
  state=$(job_state "$job")
  if [[ $state == Complete ]]; then
    echo "phase $k: job/$job complete already"
    return 0
  fi
  if [[ $state == Failed ]]; then
    kubectl delete "job/$job" --wait=true
  fi
  manifests | kubectl apply -f - -l "dmlkit/part=job,dmlkit/phase=$k"
  echo "phase $k: waiting for job/$job"
  until kubectl wait --for=condition=complete --timeout=60s "job/$job" >/dev/null 2>&1; do
    if [[ $(job_state "$job") == Failed ]]; then
      echo "phase $k failed: job/$job (kubectl logs job/$job; kubectl describe job/$job); the later phases were not started" >&2
      exit 1
    fi
  done
  echo "phase $k: complete"
}
case "${1:-submit}" in
manifests) manifests ;;
storage) storage ;;
submit)
  storage
`, name+"-files")
	for i, p := range jp.Phases {
		fmt.Fprintf(&b, "  phase %d %s\n", p.Phase, jobs[i])
	}
	fmt.Fprintf(&b, `  echo "all %d phases complete: gather with kubectl cp %s:%s/%s out/cluster/%s"
  ;;
*) echo "usage: bash $0 [manifests|storage|submit]" >&2; exit 2 ;;
esac
`, len(jp.Phases), name+"-files", ImageResultsDir, paper, paper)
	return b.String(), nil
}

// EmitSlurm returns a bash script that submits the job's phases to SLURM as array jobs chained
// with --dependency=afterok (`bash FILE` from the repository root, on a file system every node
// shares) and is itself the array tasks' script: sbatch runs it as `FILE --phase K N GPUS`, and
// task SLURM_ARRAY_TASK_ID runs `dmlkit run SPEC --phase K --index $SLURM_ARRAY_TASK_ID --of N`
// in the submit directory, inside the spec's container image with apptainer when it is
// available, else with `dmlkit` on PATH or the checkout's bin/dmlkit. The tasks share the store
// in $DMLKIT_RESULTS/PAPER/results (default: out/cluster under the submit directory,
// git-ignored), which its flock-based locking keeps consistent on a file system with working
// flock across nodes. A phase's job that fails cancels the later ones (--kill-on-invalid-dep).
func EmitSlurm(jp *JobPlan, opt EmitOptions) (string, error) {
	if opt.SpecPath == "" {
		return "", errors.New("experiments: emit: no spec path")
	}
	if err := jp.check(); err != nil {
		return "", err
	}
	l := jp.Spec.Launch
	paper := jp.Spec.Paper
	if opt.Results == "" {
		opt.Results = "${DMLKIT_RESULTS}/" + paper + "/results"
	}
	if opt.Workdir == "" {
		opt.Workdir = "${DMLKIT_RESULTS}/" + paper + "/runs"
	}
	name := jobName(paper, jp.Scale)
	args := opt.args(jp, JobPhase{Phase: 0}, "${SLURM_ARRAY_TASK_ID}", "${of}")
	quoted := make([]string, len(args))
	for i, a := range args {
		switch {
		case a == "0" && i > 0 && args[i-1] == "--phase":
			quoted[i] = `"${phase}"`
		case strings.Contains(a, "${"):
			quoted[i] = `"` + a + `"` // expanded by the shell
		default:
			quoted[i] = shellQuote(a)
		}
	}
	var b strings.Builder
	b.WriteString("#!/bin/bash\n")
	fmt.Fprintf(&b, "# Generated by `dmlkit run %s --emit slurm`: one SLURM array job per phase of the sweep.\n", opt.SpecPath)
	b.WriteString(jp.phasesText("array tasks"))
	fmt.Fprintf(&b, `# Submit from the repository root, on a file system all nodes share (not with sbatch: this script
# submits one array job per phase, each with --dependency=afterok on the previous one):
#   bash FILE
#   squeue --me --name=%s   # watch; logs in $DMLKIT_RESULTS/logs
#   dmlkit tables %s --scale %s --results out/cluster/%s/results   # and figures, the same flags
# Records: $DMLKIT_RESULTS/%s/results (default out/cluster/ here): nothing to gather. The store locks
# with flock, which the shared file system must support across nodes (NFS v4; Lustre mounted with -o flock).
# When a task fails, its phase's job ends failed and SLURM cancels the later phases (--kill-on-invalid-dep=yes,
# their reason DependencyNeverSatisfied); fix the cause and run bash FILE again: stored runs are skipped.
set -euo pipefail
cd "${SLURM_SUBMIT_DIR:-$PWD}"
export DMLKIT_RESULTS="${DMLKIT_RESULTS:-$PWD/out/cluster}"
if [[ ${1:-} == --phase ]]; then # an array task: --phase K N GPUS
  phase=$2 of=$3 gpus=${4:-0}
  : "${SLURM_ARRAY_TASK_ID:?a task of phase $phase runs as an array task (bash $0 submits the job)}"
  mkdir -p "$DMLKIT_RESULTS"
`, strings.Join(phaseNames(name, jp), ","), opt.specArg(paper), jp.Scale, paper, paper)
	for _, k := range sweep.SortedKeys(l.Env) {
		fmt.Fprintf(&b, "  export %s=%s\n", k, shellQuote(l.Env[k]))
	}
	fmt.Fprintf(&b, "  IMAGE=${DMLKIT_IMAGE:-%s}\n", shellQuote(launchImage(l, 0)))
	fmt.Fprintf(&b, "  (( gpus > 0 )) && IMAGE=${DMLKIT_IMAGE:-%s}\n", shellQuote(launchImage(l, 1)))
	fmt.Fprintf(&b, "  ARGS=(%s)\n", strings.Join(quoted, " "))
	// apptainer: the image's dmlkit on the checkout (bound at the same path) and the results;
	// IMAGE is a registry reference (docker://) or a .sif file.
	b.WriteString(`  if command -v apptainer >/dev/null 2>&1; then
    [[ $IMAGE == *.sif ]] || IMAGE=docker://$IMAGE
    binds=$PWD,$DMLKIT_RESULTS
    [[ -n ${DMLKIT_DATA:-} ]] && binds=$binds,$DMLKIT_DATA
    nv=()
    (( gpus > 0 )) && nv=(--nv)
    exec apptainer exec "${nv[@]}" --bind "$binds" --pwd "$PWD" "$IMAGE" dmlkit "${ARGS[@]}"
  fi
  if command -v dmlkit >/dev/null 2>&1; then
    exec dmlkit "${ARGS[@]}"
  fi
  exec bin/dmlkit "${ARGS[@]}"
fi
if [[ -n ${SLURM_JOB_ID:-} ]]; then
  echo "$0: run this script with bash from the repository root (it submits one array job per phase), not with sbatch" >&2
  exit 2
fi
self=$(readlink -f "${BASH_SOURCE[0]}")
mkdir -p "$DMLKIT_RESULTS/logs"
dep=()
ids=()
`)
	for _, p := range jp.Phases {
		array := fmt.Sprintf("0-%d", p.Tasks-1)
		if l.Parallel > 0 && l.Parallel < p.Tasks {
			array += "%" + strconv.Itoa(l.Parallel)
		}
		opts := []string{"--parsable", `"${dep[@]}"`, "--job-name=" + fmt.Sprintf("%s-p%d", name, p.Phase), "--array=" + array,
			fmt.Sprintf("--cpus-per-task=%d", p.Res.CPUs), "--mem=" + slurmMemory(p.Res.Memory), "--time=" + p.Res.Time}
		if p.Res.GPUs > 0 {
			opts = append(opts, fmt.Sprintf("--gres=gpu:%d", p.Res.GPUs))
		}
		if l.Partition != "" {
			opts = append(opts, "--partition="+shellQuote(l.Partition))
		}
		opts = append(opts, `--output="$DMLKIT_RESULTS/logs/%x-%A_%a.out"`)
		fmt.Fprintf(&b, "id=$(sbatch %s \"$self\" --phase %d %d %d)\n", strings.Join(opts, " "), p.Phase, p.Tasks, p.Res.GPUs)
		fmt.Fprintf(&b, "id=${id%%%%;*}\necho \"phase %d: job $id (%d array tasks, %d runs)\"\n", p.Phase, p.Tasks, len(p.Runs))
		b.WriteString("dep=(--dependency=afterok:$id --kill-on-invalid-dep=yes)\n")
		b.WriteString("ids+=(\"$id\")\n")
	}
	// squeue lists queued and running jobs only: once the phases have left the queue, their
	// states are sacct's (with accounting) or scontrol's (for MinJobAge, 300 s by default), and
	// the store says what is still pending.
	fmt.Fprintf(&b, `echo "submitted %d phases: jobs ${ids[*]}; watch: squeue --me --name=%s"
echo "when they have left the queue: sacct -j $(IFS=,; echo "${ids[*]}") (or scontrol show job ID) for their states; what is still pending: dmlkit run %s --scale %s --dry-run --results $DMLKIT_RESULTS/%s/results"
`, len(jp.Phases), strings.Join(phaseNames(name, jp), ","), opt.specArg(paper), jp.Scale, paper)
	return b.String(), nil
}

// specArg names the spec as a command run from the repository root takes it: PAPER for
// reproductions/PAPER/spec.yaml, else its path.
func (o EmitOptions) specArg(paper string) string {
	if o.SpecPath == "reproductions/"+paper+"/spec.yaml" {
		return paper
	}
	return shellQuote(o.SpecPath)
}

func phaseNames(name string, jp *JobPlan) []string {
	var out []string
	for _, p := range jp.Phases {
		out = append(out, fmt.Sprintf("%s-p%d", name, p.Phase))
	}
	return out
}

// slurmMemory converts Kubernetes quantities (16Gi, 512Mi) to SLURM's (16G, 512M).
func slurmMemory(m string) string {
	for _, suf := range []string{"Gi", "Mi", "Ti", "Ki"} {
		if strings.HasSuffix(m, suf) {
			return strings.TrimSuffix(m, suf) + suf[:1]
		}
	}
	return m
}

func shellQuote(s string) string {
	if s != "" && regexp.MustCompile(`^[A-Za-z0-9_./:=@%+,-]+$`).MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

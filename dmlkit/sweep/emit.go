package sweep

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// EmitOptions describes the sweep a cluster manifest runs.
type EmitOptions struct {
	SpecPath string   // the spec's path inside the container, relative to the working directory
	Scale    string   // scale to run
	Shards   int      // number of shards (array tasks / completions); default: one per run
	Only     []string // --only filters passed through
	Workers  int      // runs at once within a shard (default 1)
	// Results is the results directory the shards share (default: /results/PAPER/results on
	// the k8s volume; $DMLKIT_RESULTS/PAPER/results for SLURM); Workdir the run directories
	// (default: runs beside results).
	Results, Workdir string
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

func (o EmitOptions) args(plan *Plan, index string) ([]string, int, error) {
	if o.SpecPath == "" {
		return nil, 0, errors.New("experiments: emit: no spec path")
	}
	n := o.Shards
	if n <= 0 {
		n = len(plan.Runs)
	}
	if n < 1 {
		return nil, 0, errors.New("experiments: emit: the plan has no runs")
	}
	args := []string{"run", o.SpecPath}
	if o.Scale != "" {
		args = append(args, "--scale", o.Scale)
	}
	for _, f := range o.Only {
		args = append(args, "--only", f)
	}
	if o.Workers > 1 {
		args = append(args, "--workers", strconv.Itoa(o.Workers))
	}
	if o.Results != "" {
		args = append(args, "--results", o.Results)
	}
	if o.Workdir != "" {
		args = append(args, "--workdir", o.Workdir)
	}
	// The runs that take a tuning step's selection exist once the step's runs (spread over all
	// shards) are stored: every shard waits for them (SweepOptions.WaitPending).
	args = append(args, "--index", index, "--of", strconv.Itoa(n), "--wait-pending")
	args = append(args, plan.Spec.Launch.ExtraArgs...)
	return args, n, nil
}

// countsLine says how many runs the plan holds and how many points wait for tuning steps.
func countsLine(plan *Plan, n int, unit string) string {
	s := fmt.Sprintf("%d runs of paper %q, scale %q, in %d %s", len(plan.Runs), plan.Spec.Paper, plan.Scale, n, unit)
	if len(plan.Pending) > 0 {
		s += fmt.Sprintf("; %d more points wait for tuning steps (their runs are spread over the same %s, which wait for them)", len(plan.Pending), unit)
	}
	return s
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

func launchDefaults(l Launch) Launch {
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

// EmitK8s returns Kubernetes manifests that run the plan's shards in the spec's container image
// (spec field launch; default dmlkit:cpu, or dmlkit:cuda with GPUs): an Indexed Job whose
// completion index i runs `dmlkit run SPEC --index i --of N --wait-pending` (the index comes
// from JOB_COMPLETION_INDEX, which the Job controller sets in every pod) in the images'
// repository directory, with the results volume mounted at /results: the PersistentVolumeClaim
// launch.volume, or a ReadWriteMany claim "dmlkit-results" the manifests create. Records go to
// /results/PAPER/results and run directories to /results/PAPER/runs, as the images' `reproduce`
// entry point lays them out; benchmarks are read from /results/data ($DMLKIT_DATA). A Pod
// "<job>-files" mounting the same volume serves `kubectl cp` (data in, results out). Each
// object is labelled dmlkit/part=storage (claim, files pod) or dmlkit/part=job, so that
// `kubectl apply -l` can create the storage, fill it, then start the job.
func EmitK8s(plan *Plan, opt EmitOptions) (string, error) {
	l := launchDefaults(plan.Spec.Launch)
	paper := plan.Spec.Paper
	if opt.Results == "" {
		opt.Results = ImageResultsDir + "/" + paper + "/results"
	}
	if opt.Workdir == "" {
		opt.Workdir = ImageResultsDir + "/" + paper + "/runs"
	}
	args, n, err := opt.args(plan, "$(JOB_COMPLETION_INDEX)")
	if err != nil {
		return "", err
	}
	parallel := l.Parallel
	if parallel <= 0 || parallel > n {
		parallel = n
	}
	name := jobName(paper, plan.Scale)
	labels := func(part string) map[string]string {
		m := map[string]string{"app": "dmlkit", "dmlkit/paper": paper, "dmlkit/part": part}
		if plan.Scale != "" {
			m["dmlkit/scale"] = plan.Scale
		}
		return m
	}
	limits := map[string]string{"cpu": strconv.Itoa(l.CPUs), "memory": l.Memory}
	if l.GPUs > 0 {
		limits["nvidia.com/gpu"] = strconv.Itoa(l.GPUs)
	}
	dataDir := ImageResultsDir + "/data"
	env := []map[string]string{{"name": "DMLKIT_DATA", "value": dataDir}}
	for _, k := range SortedKeys(l.Env) {
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
	container := map[string]any{
		"name":         "dmlkit",
		"image":        l.Image,
		"workingDir":   l.Workdir,
		"command":      []string{"dmlkit"},
		"args":         args,
		"env":          env,
		"resources":    map[string]any{"requests": limits, "limits": limits},
		"volumeMounts": mounts,
	}
	job := map[string]any{
		"apiVersion": "batch/v1",
		"kind":       "Job",
		"metadata":   map[string]any{"name": name, "labels": labels("job")},
		"spec": map[string]any{
			"completionMode":       "Indexed",
			"completions":          n,
			"parallelism":          parallel,
			"backoffLimitPerIndex": 2,
			"template": map[string]any{
				"metadata": map[string]any{"labels": labels("job")},
				"spec": map[string]any{
					"restartPolicy":   "Never",
					"securityContext": security,
					"containers":      []any{container},
					"volumes":         volumes,
				},
			},
		},
	}
	files := map[string]any{
		"apiVersion": "v1",
		"kind":       "Pod",
		"metadata":   map[string]any{"name": name + "-files", "labels": labels("storage")},
		"spec": map[string]any{
			"restartPolicy":   "Never",
			"securityContext": security,
			"containers": []any{map[string]any{
				"name":         "files",
				"image":        l.Image,
				"workingDir":   ImageResultsDir,
				"command":      []string{"sleep", "infinity"},
				"volumeMounts": mounts,
			}},
			"volumes": volumes,
		},
	}
	var docs []any
	if l.Volume == "" {
		docs = append(docs, map[string]any{
			"apiVersion": "v1",
			"kind":       "PersistentVolumeClaim",
			"metadata":   map[string]any{"name": claim, "labels": labels("storage")},
			"spec": map[string]any{
				"accessModes": []string{"ReadWriteMany"},
				"resources":   map[string]any{"requests": map[string]string{"storage": "20Gi"}},
			},
		})
	}
	docs = append(docs, files, job)
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
	head := fmt.Sprintf(`# Generated by `+"`dmlkit run %s --emit k8s`"+`: %s.
# Shard i runs the runs with index ≡ i (mod %d); completed runs are skipped, so a retried pod resumes.
# Pods run image %s in %s as uid %d; records go to %s and run directories to %s on
# %s, mounted at %s. The store locks with flock: the volume's
# file system must support it across nodes (NFS v4, CephFS; Lustre mounted with -o flock).
# Benchmarks are read from $DMLKIT_DATA=%s on the same volume.
#   kubectl apply -f FILE -l dmlkit/part=storage                 # the claim and the %s pod
#   kubectl wait --for=condition=Ready pod/%s
#   kubectl cp ~/.cache/dmlkit/cub %s:%s/cub     # benchmarks the images lack (they carry omniglot, fashion-mnist)
#   kubectl apply -f FILE -l dmlkit/part=job
#   kubectl wait --for=condition=complete --timeout=-1s job/%s
#   kubectl cp %s:%s/%s out/cluster/%s                           # gather
#   dmlkit tables %s --scale %s --results out/cluster/%s/results   # and figures, the same flags
`, opt.SpecPath, countsLine(plan, n, "shards"), n, l.Image, l.Workdir, ImageUID, opt.Results, opt.Workdir,
		pvcNote, ImageResultsDir, dataDir, name+"-files", name+"-files", name+"-files", dataDir, name,
		name+"-files", ImageResultsDir, paper, paper, paper, plan.Scale, paper)
	return head + buf.String(), nil
}

// EmitSlurm returns a SLURM batch script running the plan's shards as a job array: task
// SLURM_ARRAY_TASK_ID runs `dmlkit run SPEC --index $SLURM_ARRAY_TASK_ID --of N --wait-pending`
// in the directory the script was submitted from (the repository root, on a file system every
// node shares), inside the spec's container image with apptainer when it is available, else with
// `dmlkit` on PATH or the checkout's bin/dmlkit. The shards share the store in
// $DMLKIT_RESULTS/PAPER/results (default: out/cluster under the submit directory, git-ignored),
// which its flock-based locking keeps consistent on a file system with working flock across
// nodes.
func EmitSlurm(plan *Plan, opt EmitOptions) (string, error) {
	l := launchDefaults(plan.Spec.Launch)
	paper := plan.Spec.Paper
	if opt.Results == "" {
		opt.Results = "${DMLKIT_RESULTS}/" + paper + "/results"
	}
	if opt.Workdir == "" {
		opt.Workdir = "${DMLKIT_RESULTS}/" + paper + "/runs"
	}
	args, n, err := opt.args(plan, `${SLURM_ARRAY_TASK_ID}`)
	if err != nil {
		return "", err
	}
	quoted := make([]string, len(args))
	for i, a := range args {
		if strings.Contains(a, "${") {
			quoted[i] = `"` + a + `"` // expanded by the shell
		} else {
			quoted[i] = shellQuote(a)
		}
	}
	var b strings.Builder
	b.WriteString("#!/bin/bash\n")
	fmt.Fprintf(&b, "# Generated by `dmlkit run %s --emit slurm`: %s.\n", opt.SpecPath, countsLine(plan, n, "array tasks"))
	b.WriteString("# Task i runs the runs with index ≡ i (mod N); completed runs are skipped, so a requeued task resumes.\n")
	b.WriteString("# Submit from the repository root, on a file system all nodes share, with: sbatch FILE\n")
	b.WriteString("# Records: $DMLKIT_RESULTS/" + paper + "/results (default out/cluster/ here); the store locks with flock,\n")
	b.WriteString("# which the shared file system must support across nodes (NFS v4; Lustre mounted with -o flock).\n")
	fmt.Fprintf(&b, "# Then: dmlkit tables %s --scale %s --results out/cluster/%s/results (and figures, the same flags).\n", paper, plan.Scale, paper)
	fmt.Fprintf(&b, "#SBATCH --job-name=%s\n", jobName(paper, plan.Scale))
	array := fmt.Sprintf("0-%d", n-1)
	if l.Parallel > 0 && l.Parallel < n {
		array += "%" + strconv.Itoa(l.Parallel)
	}
	fmt.Fprintf(&b, "#SBATCH --array=%s\n", array)
	fmt.Fprintf(&b, "#SBATCH --cpus-per-task=%d\n", l.CPUs)
	fmt.Fprintf(&b, "#SBATCH --mem=%s\n", slurmMemory(l.Memory))
	fmt.Fprintf(&b, "#SBATCH --time=%s\n", l.Time)
	if l.GPUs > 0 {
		fmt.Fprintf(&b, "#SBATCH --gres=gpu:%d\n", l.GPUs)
	}
	if l.Partition != "" {
		fmt.Fprintf(&b, "#SBATCH --partition=%s\n", l.Partition)
	}
	b.WriteString("#SBATCH --output=%x-%A_%a.out\n")
	b.WriteString("set -euo pipefail\n")
	b.WriteString("cd \"${SLURM_SUBMIT_DIR:-$PWD}\"\n")
	b.WriteString("export DMLKIT_RESULTS=\"${DMLKIT_RESULTS:-$PWD/out/cluster}\"\n")
	b.WriteString("mkdir -p \"$DMLKIT_RESULTS\"\n")
	for _, k := range SortedKeys(l.Env) {
		fmt.Fprintf(&b, "export %s=%s\n", k, shellQuote(l.Env[k]))
	}
	fmt.Fprintf(&b, "IMAGE=${DMLKIT_IMAGE:-%s}\n", shellQuote(l.Image))
	fmt.Fprintf(&b, "ARGS=(%s)\n", strings.Join(quoted, " "))
	nv := ""
	if l.GPUs > 0 {
		nv = " --nv"
	}
	// apptainer: the image's dmlkit on the checkout (bound at the same path) and the results;
	// IMAGE is a registry reference (docker://) or a .sif file.
	fmt.Fprintf(&b, `if command -v apptainer >/dev/null 2>&1; then
  [[ $IMAGE == *.sif ]] || IMAGE=docker://$IMAGE
  binds=$PWD,$DMLKIT_RESULTS
  [[ -n ${DMLKIT_DATA:-} ]] && binds=$binds,$DMLKIT_DATA
  exec apptainer exec%s --bind "$binds" --pwd "$PWD" "$IMAGE" dmlkit "${ARGS[@]}"
fi
if command -v dmlkit >/dev/null 2>&1; then
  exec dmlkit "${ARGS[@]}"
fi
exec bin/dmlkit "${ARGS[@]}"
`, nv)
	return b.String(), nil
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

package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// k8sObjects decodes a multi-document manifest into its objects by kind.
func k8sObjects(t *testing.T, text string) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	dec := yaml.NewDecoder(strings.NewReader(text))
	for {
		var obj map[string]any
		if err := dec.Decode(&obj); err != nil {
			if err.Error() == "EOF" {
				return out
			}
			t.Fatalf("manifest does not parse: %v\n%s", err, text)
		}
		out[obj["kind"].(string)] = obj
	}
}

// k8sManifests returns the manifests an emitted k8s job script holds (`bash FILE manifests`).
func k8sManifests(t *testing.T, script string) string {
	t.Helper()
	_, man, ok := strings.Cut(script, "<<'DMLKIT_MANIFESTS'\n")
	man, _, ok2 := strings.Cut(man, "\nDMLKIT_MANIFESTS\n")
	if !ok || !ok2 {
		t.Fatalf("no manifests in the script:\n%s", script)
	}
	return man + "\n"
}

// dockerLayout is what docker/Dockerfile and docker/Dockerfile.cuda promise to a job running the
// image: the repository directory, the results volume and the user.
type dockerLayout struct{ home, workdir, volume, results, uid string }

func readDockerLayout(t *testing.T, path string) dockerLayout {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	find := func(re string) string {
		m := regexp.MustCompile(re).FindStringSubmatch(text)
		if m == nil {
			t.Fatalf("%s: no match for %s", path, re)
		}
		return m[1]
	}
	return dockerLayout{
		home:    find(`DMLKIT_HOME=(\S+)`),
		workdir: find(`(?m)^WORKDIR (\S+)$`), // the first: where the project is copied
		volume:  find(`(?m)^VOLUME \["([^"]+)"\]`),
		results: find(`RESULTS_DIR=(\S+)`),
		uid:     find(`useradd [^\n]*--uid (\d+)`),
	}
}

// TestEmittedJobsMatchImagesAndDryRun renders `run tcm --emit k8s` and `--emit slurm` from the
// repository's TCM spec and checks them against the Dockerfiles (working directory = where the
// images put the repository, results volume, user, image tag built by docker/README.md) and
// against `run tcm --dry-run` (counted on an empty store, the job's volume: all phases hold the
// committed plan's runs, the first phase those a dry-run on a fresh store lists; at scale small
// CPUs only). A task of the SLURM script is then executed by bash with a stub dmlkit, which must
// be called in the submit directory with the shared results store.
func TestEmittedJobsMatchImagesAndDryRun(t *testing.T) {
	layouts := []dockerLayout{readDockerLayout(t, "../../docker/Dockerfile"), readDockerLayout(t, "../../docker/Dockerfile.cuda")}
	for _, l := range layouts {
		if l != layouts[0] || l.home != l.workdir || l.volume != l.results {
			t.Fatalf("Dockerfiles disagree on their layout: %+v", layouts)
		}
	}
	lay := layouts[0]
	dockerReadme, err := os.ReadFile("../../docker/README.md")
	if err != nil {
		t.Fatal(err)
	}
	ignore, _ := os.ReadFile("../../docker/Dockerfile.dockerignore")
	for _, l := range strings.Split(string(ignore), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") && strings.HasPrefix("reproductions/tcm/spec.yaml", strings.TrimSuffix(l, "/")) {
			t.Errorf("docker/Dockerfile.dockerignore leaves the spec out of the image: %q", l)
		}
	}
	t.Chdir("../..") // the jobs name the spec relative to the repository root
	empty := t.TempDir()
	dryRuns := func(args ...string) (runs, pending int) {
		code, dry, stderr := runCLI(append([]string{"run", "tcm", "--dry-run"}, args...)...)
		if code != 0 {
			t.Fatalf("dry-run %v: %s", args, stderr)
		}
		m := regexp.MustCompile(`(\d+) of (\d+) runs \(scale "small"\) selected`).FindStringSubmatch(dry)
		if m == nil {
			t.Fatalf("dry-run summary missing:\n%s", dry)
		}
		runs, _ = strconv.Atoi(m[2])
		return runs, strings.Count(dry, "\npending: ")
	}
	all, _ := dryRuns()                           // the committed records: every run resolved
	first, pending := dryRuns("--results", empty) // a fresh store: the first phase, the rest pending
	if pending == 0 || first >= all {
		t.Fatalf("dry-runs: %d runs stored, %d on a fresh store with %d pending", all, first, pending)
	}
	// The job starts from an empty volume: its counts are those of an empty store, all phases
	// together the committed plan's runs, the first phase the fresh store's dry-run.
	code, script, stderr := runCLI("run", "tcm", "--emit", "k8s")
	if code != 0 {
		t.Fatalf("emit k8s: %s", stderr)
	}
	head := fmt.Sprintf("%d runs of paper \"tcm\", scale \"small\", in 3 phases, counted on an empty store", all)
	if !strings.Contains(script, head) || !strings.Contains(script, fmt.Sprintf("#   phase 1: %d runs ", first)) {
		t.Errorf("k8s header lacks %q and phase 1's %d runs:\n%s", head, first, script[:min(len(script), 2500)])
	}
	objs := k8sObjects(t, k8sManifests(t, script))
	job, pvc, pod := objs["Job"], objs["PersistentVolumeClaim"], objs["Pod"] // the last phase's job
	if job == nil || pvc == nil || pod == nil {
		t.Fatalf("want a claim, a files pod and jobs, got %v", objs)
	}
	podSpec := job["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
	ctr := podSpec["containers"].([]any)[0].(map[string]any)
	if ctr["workingDir"] != lay.home {
		t.Errorf("workingDir %v, want the images' repository %s", ctr["workingDir"], lay.home)
	}
	img := ctr["image"].(string) // the spec's launch.image, its CPU tag at scale small
	if !strings.Contains(string(dockerReadme), "-t "+img+" ") || img != "dmlkit:cpu" {
		t.Errorf("image %q is not the CPU tag docker/README.md builds", img)
	}
	limits := ctr["resources"].(map[string]any)["limits"].(map[string]any)
	if _, gpu := limits["nvidia.com/gpu"]; gpu || limits["cpu"] != "2" {
		t.Errorf("a small-scale task asks for %v, want 2 CPUs and no GPU", limits)
	}
	mount := ctr["volumeMounts"].([]any)[0].(map[string]any)
	vol := podSpec["volumes"].([]any)[0].(map[string]any)
	claim := vol["persistentVolumeClaim"].(map[string]any)["claimName"]
	if mount["mountPath"] != lay.volume || mount["name"] != vol["name"] || claim != pvc["metadata"].(map[string]any)["name"] {
		t.Errorf("mount %v, volume %v, claim %v: want the claim mounted at the images' volume %s", mount, vol, pvc["metadata"], lay.volume)
	}
	if sc := podSpec["securityContext"].(map[string]any); fmt.Sprint(sc["runAsUser"]) != lay.uid || fmt.Sprint(sc["fsGroup"]) != lay.uid {
		t.Errorf("securityContext %v, want uid/fsGroup %s", sc, lay.uid)
	}
	args := strings.Join(anyStrings(ctr["args"]), " ")
	wantArgs := fmt.Sprintf("run reproductions/tcm/spec.yaml --scale small --results %s/tcm/results --workdir %s/tcm/runs --phase 3 --index $(JOB_COMPLETION_INDEX) --of ", lay.volume, lay.volume)
	if !strings.HasPrefix(args, wantArgs) {
		t.Errorf("args\n%s\nwant\n%s…", args, wantArgs)
	}
	// With --emit-from-store the volume holds the committed records: nothing is left to run.
	if code, _, stderr := runCLI("run", "tcm", "--emit", "k8s", "--emit-from-store"); code == 0 || !strings.Contains(stderr, "nothing to run") {
		t.Errorf("--emit-from-store on the complete committed store: exit %d, %s", code, stderr)
	}

	code, sh, stderr := runCLI("run", "tcm", "--emit", "slurm")
	if code != 0 {
		t.Fatalf("emit slurm: %s", stderr)
	}
	for _, want := range []string{
		fmt.Sprintf(" --array=0-%d ", first-1),
		fmt.Sprintf(`"$self" --phase 1 %d 0)`, first),
		strings.Replace(head, "shards", "array tasks", 1),
		"--dependency=afterok:$id",
	} {
		if !strings.Contains(sh, want) {
			t.Errorf("slurm script lacks %q", want)
		}
	}
	// Run the script as task 3 of phase 1 with a stub dmlkit: it must run in the submit
	// directory, with the task's arguments and the store under $DMLKIT_RESULTS.
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	tmp := t.TempDir()
	stub := filepath.Join(tmp, "bin")
	os.MkdirAll(stub, 0o755)
	os.WriteFile(filepath.Join(stub, "dmlkit"), []byte("#!/bin/sh\necho \"cwd=$PWD\"; echo \"args=$*\"\n"), 0o755)
	submit, _ := os.Getwd()
	script = filepath.Join(tmp, "job.sh")
	os.WriteFile(script, []byte(sh), 0o644)
	cmd := exec.Command(bash, script, "--phase", "1", strconv.Itoa(first), "0")
	cmd.Dir = tmp // sbatch runs the script wherever; it must cd to the submit directory
	cmd.Env = append(os.Environ(), "PATH="+stub+":/usr/bin:/bin", "SLURM_ARRAY_TASK_ID=3", "SLURM_SUBMIT_DIR="+submit, "DMLKIT_RESULTS="+filepath.Join(tmp, "shared"))
	out, err := cmd.CombinedOutput()
	want := fmt.Sprintf("cwd=%s\nargs=run reproductions/tcm/spec.yaml --scale small --results %s/tcm/results --workdir %s/tcm/runs --phase 1 --index 3 --of %d\n",
		submit, filepath.Join(tmp, "shared"), filepath.Join(tmp, "shared"), first)
	if err != nil || string(out) != want {
		t.Errorf("slurm script: %v\n%s\nwant\n%s", err, out, want)
	}
}

func anyStrings(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, fmt.Sprint(x))
	}
	return out
}

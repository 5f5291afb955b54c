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
// against `run tcm --dry-run` (one shard per run listed; with an empty store, the tuning runs
// and the pending points the dry-run names). The SLURM script is then executed by bash with a
// stub dmlkit, which must be called in the submit directory with the shared results store.
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
	for _, c := range []struct {
		name    string
		args    []string
		pending bool
	}{
		{"stored", nil, false},                        // the committed records: every run resolved
		{"fresh", []string{"--results", empty}, true}, // a fresh store: tuning runs, points pending
	} {
		code, dry, stderr := runCLI(append([]string{"run", "tcm", "--dry-run"}, c.args...)...)
		if code != 0 {
			t.Fatalf("%s: dry-run: %s", c.name, stderr)
		}
		m := regexp.MustCompile(`(\d+) of (\d+) runs \(scale "small"\) selected`).FindStringSubmatch(dry)
		if m == nil {
			t.Fatalf("%s: dry-run summary missing:\n%s", c.name, dry)
		}
		runs, _ := strconv.Atoi(m[2])
		pending := strings.Count(dry, "\npending: ")
		if c.pending != (pending > 0) {
			t.Fatalf("%s: %d runs, %d points pending", c.name, runs, pending)
		}

		code, man, stderr := runCLI(append([]string{"run", "tcm", "--emit", "k8s"}, c.args...)...)
		if code != 0 {
			t.Fatalf("%s: emit k8s: %s", c.name, stderr)
		}
		head := fmt.Sprintf("%d runs of paper \"tcm\", scale \"small\", in %d shards", runs, runs)
		if pending > 0 {
			head += fmt.Sprintf("; %d more points wait for tuning steps", pending)
		}
		if !strings.Contains(man, head) {
			t.Errorf("%s: k8s header lacks %q:\n%s", c.name, head, man[:min(len(man), 1500)])
		}
		objs := k8sObjects(t, man)
		job, pvc, pod := objs["Job"], objs["PersistentVolumeClaim"], objs["Pod"]
		if job == nil || pvc == nil || pod == nil {
			t.Fatalf("%s: want a claim, a files pod and a job, got %v", c.name, objs)
		}
		js := job["spec"].(map[string]any)
		if js["completions"] != runs || js["completionMode"] != "Indexed" {
			t.Errorf("%s: completions %v, want %d (the dry-run's runs)", c.name, js["completions"], runs)
		}
		podSpec := js["template"].(map[string]any)["spec"].(map[string]any)
		ctr := podSpec["containers"].([]any)[0].(map[string]any)
		if ctr["workingDir"] != lay.home {
			t.Errorf("%s: workingDir %v, want the images' repository %s", c.name, ctr["workingDir"], lay.home)
		}
		img := ctr["image"].(string) // the spec's launch.image
		if !strings.Contains(string(dockerReadme), "-t "+img+" ") {
			t.Errorf("%s: image %q is not a tag docker/README.md builds", c.name, img)
		}
		mount := ctr["volumeMounts"].([]any)[0].(map[string]any)
		vol := podSpec["volumes"].([]any)[0].(map[string]any)
		claim := vol["persistentVolumeClaim"].(map[string]any)["claimName"]
		if mount["mountPath"] != lay.volume || mount["name"] != vol["name"] || claim != pvc["metadata"].(map[string]any)["name"] {
			t.Errorf("%s: mount %v, volume %v, claim %v: want the claim mounted at the images' volume %s", c.name, mount, vol, pvc["metadata"], lay.volume)
		}
		if sc := podSpec["securityContext"].(map[string]any); fmt.Sprint(sc["runAsUser"]) != lay.uid || fmt.Sprint(sc["fsGroup"]) != lay.uid {
			t.Errorf("%s: securityContext %v, want uid/fsGroup %s", c.name, sc, lay.uid)
		}
		args := strings.Join(anyStrings(ctr["args"]), " ")
		wantArgs := fmt.Sprintf("run reproductions/tcm/spec.yaml --scale small --results %s/tcm/results --workdir %s/tcm/runs --index $(JOB_COMPLETION_INDEX) --of %d --wait-pending", lay.volume, lay.volume, runs)
		if c.args != nil {
			wantArgs = fmt.Sprintf("run reproductions/tcm/spec.yaml --scale small --results %s --workdir %s/tcm/runs --index $(JOB_COMPLETION_INDEX) --of %d --wait-pending", empty, lay.volume, runs)
		}
		if args != wantArgs {
			t.Errorf("%s: args\n%s\nwant\n%s", c.name, args, wantArgs)
		}

		code, sh, stderr := runCLI(append([]string{"run", "tcm", "--emit", "slurm"}, c.args...)...)
		if code != 0 {
			t.Fatalf("%s: emit slurm: %s", c.name, stderr)
		}
		for _, want := range []string{
			fmt.Sprintf("#SBATCH --array=0-%d\n", runs-1),
			strings.Replace(head, "shards", "array tasks", 1),
			fmt.Sprintf("--of %d --wait-pending)", runs),
		} {
			if !strings.Contains(sh, want) {
				t.Errorf("%s: slurm script lacks %q", c.name, want)
			}
		}
		if c.name != "stored" {
			continue
		}
		// Run the script as task 3 of the array with a stub dmlkit: it must run in the submit
		// directory, with the shard's arguments and the store under $DMLKIT_RESULTS.
		bash, err := exec.LookPath("bash")
		if err != nil {
			t.Skip("no bash")
		}
		tmp := t.TempDir()
		stub := filepath.Join(tmp, "bin")
		os.MkdirAll(stub, 0o755)
		os.WriteFile(filepath.Join(stub, "dmlkit"), []byte("#!/bin/sh\necho \"cwd=$PWD\"; echo \"args=$*\"\n"), 0o755)
		submit, _ := os.Getwd()
		script := filepath.Join(tmp, "job.sh")
		os.WriteFile(script, []byte(sh), 0o644)
		cmd := exec.Command(bash, script)
		cmd.Dir = tmp // sbatch runs the script wherever; it must cd to the submit directory
		cmd.Env = append(os.Environ(), "PATH="+stub+":/usr/bin:/bin", "SLURM_ARRAY_TASK_ID=3", "SLURM_SUBMIT_DIR="+submit, "DMLKIT_RESULTS="+filepath.Join(tmp, "shared"))
		out, err := cmd.CombinedOutput()
		want := fmt.Sprintf("cwd=%s\nargs=run reproductions/tcm/spec.yaml --scale small --results %s/tcm/results --workdir %s/tcm/runs --index 3 --of %d --wait-pending\n",
			submit, filepath.Join(tmp, "shared"), filepath.Join(tmp, "shared"), runs)
		if err != nil || string(out) != want {
			t.Errorf("slurm script: %v\n%s\nwant\n%s", err, out, want)
		}
	}
}

func anyStrings(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, fmt.Sprint(x))
	}
	return out
}

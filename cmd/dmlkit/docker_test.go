package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/sweep"
)

// TestDockerReadmeRunCounts keeps docker/README.md's table of run counts true: for every paper,
// the runs `dmlkit run PAPER --scale smoke --dry-run` lists on an empty store (and the points it
// says wait), the benchmarks those runs read, and the runs of the committed small-scale store.
func TestDockerReadmeRunCounts(t *testing.T) {
	b, err := os.ReadFile("../../docker/README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(b), "<!-- smoke-runs")
	table, _, ok2 := strings.Cut(table, "<!-- /smoke-runs -->")
	if !ok || !ok2 {
		t.Fatal("docker/README.md: no <!-- smoke-runs --> table")
	}
	rows := regexp.MustCompile("(?m)^\\| `([a-z]+)` \\| (.*) \\|$").FindAllStringSubmatch(table, -1)
	papers, _ := filepath.Glob("../../reproductions/*/spec.yaml")
	if len(rows) != len(papers) {
		t.Errorf("docker/README.md's table has %d rows, reproductions/ %d specs", len(rows), len(papers))
	}
	t.Chdir("../..")
	empty := t.TempDir()
	for _, row := range rows {
		paper := row[1]
		code, dry, stderr := runCLI("run", paper, "--scale", "smoke", "--dry-run", "--results", empty)
		if code != 0 {
			t.Fatalf("%s: %s", paper, stderr)
		}
		m := regexp.MustCompile(`(\d+) of (\d+) runs`).FindStringSubmatch(dry)
		smoke := m[2]
		if n := strings.Count(dry, "\npending: "); n > 0 {
			smoke += fmt.Sprintf(" + %d waiting for ", n)
		}
		spec, err := sweep.Load(filepath.Join("reproductions", paper, "spec.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		plan, err := spec.Plan("smoke")
		if err != nil {
			t.Fatal(err)
		}
		var sets []string
		for _, r := range plan.Runs {
			if v, ok := sweep.Get(r.Config, "data.name"); ok && !slices.Contains(sets, fmt.Sprint(v)) {
				sets = append(sets, fmt.Sprint(v))
			}
		}
		slices.Sort(sets)
		code, dry, stderr = runCLI("run", paper, "--dry-run")
		if code != 0 {
			t.Fatalf("%s: %s", paper, stderr)
		}
		small := regexp.MustCompile(`(\d+) of (\d+) runs`).FindStringSubmatch(dry)[2]
		cells := strings.Split(row[2], " | ")
		if len(cells) != 3 || !strings.HasPrefix(cells[0], smoke) || cells[1] != strings.Join(sets, ", ") || cells[2] != small {
			t.Errorf("docker/README.md row %s: %q; the dry-runs say smoke %q…, benchmarks %q, small %s", paper, row[2], smoke, strings.Join(sets, ", "), small)
		}
	}
}

// TestDockerfilesLint checks what a build would otherwise find late: every COPY source exists in
// the build context, every ARG with a default is in docker/README.md's table of build arguments,
// and the images fetch the benchmarks their build-time notebook check trains on.
func TestDockerfilesLint(t *testing.T) {
	readme, err := os.ReadFile("../../docker/README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"Dockerfile", "Dockerfile.cuda"} {
		b, err := os.ReadFile(filepath.Join("../../docker", f))
		if err != nil {
			t.Fatal(err)
		}
		text := strings.ReplaceAll(string(b), "\\\n", " ")
		for _, m := range regexp.MustCompile(`(?m)^COPY ((?:--\S+ )*)(\S+) \S+$`).FindAllStringSubmatch(text, -1) {
			if strings.Contains(m[1], "--from=") {
				continue // from another stage
			}
			if _, err := os.Stat(filepath.Join("../..", m[2])); err != nil {
				t.Errorf("docker/%s: COPY %s: %v", f, m[2], err)
			}
		}
		for _, m := range regexp.MustCompile(`(?m)^ARG (\w+)=`).FindAllStringSubmatch(text, -1) {
			if !strings.Contains(string(readme), "`"+m[1]+"`") {
				t.Errorf("docker/%s: ARG %s is not in docker/README.md's build arguments", f, m[1])
			}
		}
		fetch := regexp.MustCompile(`(?m)^ARG FETCH_DATA="([^"]*)"`).FindStringSubmatch(text)
		if fetch == nil || !strings.Contains(text, `dmlkit data fetch "$d"`) {
			t.Errorf("docker/%s: no FETCH_DATA download of the smoke benchmarks", f)
			continue
		}
		// The notebook check trains every paper's smoke sweep: each benchmark it reads is fetched.
		papers, _ := filepath.Glob("../../reproductions/*/spec.yaml")
		for _, p := range papers {
			spec, err := sweep.Load(p)
			if err != nil {
				t.Fatal(err)
			}
			plan, err := spec.Plan("smoke")
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range plan.Runs {
				if v, ok := sweep.Get(r.Config, "data.name"); ok && !slices.Contains(strings.Fields(fetch[1]), fmt.Sprint(v)) {
					t.Errorf("docker/%s: %s's smoke run %s reads %v, which FETCH_DATA=%q does not fetch", f, spec.Paper, r.Hash, v, fetch[1])
				}
			}
		}
	}
}

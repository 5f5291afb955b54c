package main

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestReadmeCommandsRunInCI keeps the README true: the two set-up commands it shows in sh blocks
// under "Quick start" must be exactly the commands .ci/run executes.
func TestReadmeCommandsRunInCI(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	ci, err := os.ReadFile("../../.ci/run")
	if err != nil {
		t.Fatal(err)
	}
	_, quick, ok := strings.Cut(string(readme), "## Quick start")
	if !ok {
		t.Fatal("README.md has no \"## Quick start\" section")
	}
	quick, _, _ = strings.Cut(quick, "\n## ")
	blocks := regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllStringSubmatch(quick, -1)
	if len(blocks) != 2 {
		t.Fatalf("Quick start shows %d command blocks, want exactly 2 (demo, tests)", len(blocks))
	}
	ciLines := map[string]bool{}
	for _, l := range strings.Split(string(ci), "\n") {
		ciLines[strings.TrimSpace(l)] = true
	}
	for _, b := range blocks {
		cmd := strings.TrimSpace(b[1])
		if strings.Contains(cmd, "\n") {
			t.Errorf("Quick start block %q is more than one command", cmd)
		}
		if !ciLines[cmd] {
			t.Errorf("README command %q is not run verbatim by .ci/run", cmd)
		}
	}
}

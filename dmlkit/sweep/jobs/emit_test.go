package jobs

import (
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/sweep"
)

func TestHelpers(t *testing.T) {
	for in, want := range map[string]string{"16Gi": "16G", "512Mi": "512M", "4G": "4G"} {
		if got := slurmMemory(in); got != want {
			t.Errorf("slurmMemory(%q) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[string]string{"abc/d.yaml": "abc/d.yaml", "a b": "'a b'", "it's": `'it'\''s'`, "": "''"} {
		if got := shellQuote(in); got != want {
			t.Errorf("shellQuote(%q) = %q, want %q", in, got, want)
		}
	}
	if got := jobName("My_Paper", "full"); got != "dmlkit-my-paper-full" {
		t.Errorf("jobName = %q", got)
	}
	if got := clock(61); got != "01:05:00" {
		t.Errorf("clock(61) = %q, want 01:05:00", got)
	}
	if got := launchImage(launchDefaults(sweep.Launch{}), 0); got != "dmlkit:cpu" {
		t.Errorf("launchImage = %q", got)
	}
	if got := cpuImage("reg/dmlkit:cuda", 0); got != "reg/dmlkit:cpu" {
		t.Errorf("cpuImage = %q", got)
	}
	for path, want := range map[string]string{"reproductions/tcm/spec.yaml": "tcm", "scripts/testdata/tcm.yaml": "scripts/testdata/tcm.yaml", "reproductions/cit/spec.yaml": "reproductions/cit/spec.yaml"} {
		if got := (EmitOptions{SpecPath: path}).specArg("tcm"); got != want {
			t.Errorf("specArg(%q) for paper tcm = %q, want %q", path, got, want)
		}
	}
	if !CPUScale("smoke") || !CPUScale("small") || CPUScale("full") {
		t.Error("CPUScale: want smoke and small only")
	}
}

package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestEnvCommand(t *testing.T) {
	t.Setenv("GOMLX_BACKEND", "go")
	var out, errb bytes.Buffer
	if code := run([]string{"env", "--json"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var info map[string]any
	if err := json.Unmarshal(out.Bytes(), &info); err != nil {
		t.Fatalf("env --json is not JSON: %v\n%s", err, out.String())
	}
	for _, k := range []string{"backend", "devices", "go_version", "simd"} {
		if _, ok := info[k]; !ok {
			t.Errorf("env --json lacks %q: %s", k, out.String())
		}
	}
	// The Go backend, with or without a configuration: when a test before this one in the package
	// (e.g. a smoke sweep through `dmlkit run`) created the process's shared backend as
	// "go:ops_sequential", env reports that one.
	if b, _ := info["backend"].(string); b != "go" && !strings.HasPrefix(b, "go:") {
		t.Errorf("backend = %v, want go (or go:<config>)", info["backend"])
	}
	out.Reset()
	if code := run([]string{"env"}, &out, &errb); code != 0 || !strings.Contains(out.String(), "simd:") {
		t.Fatalf("env: exit %d, output %q", code, out.String())
	}
	out.Reset()
	if code := run([]string{"help"}, &out, &errb); code != 0 || !strings.Contains(out.String(), "eval") || !strings.Contains(out.String(), "reproduce") {
		t.Fatalf("help: exit %d, output %q", code, out.String())
	}
	if code := run([]string{"nosuchcommand"}, &out, &errb); code != 2 {
		t.Fatalf("unknown command exit %d, want 2", code)
	}
}

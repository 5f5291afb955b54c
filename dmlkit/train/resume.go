package train

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
)

// resumeSafe are the configuration fields a resumed run may change: none of them shapes the
// model, its data or the optimisation that produced the checkpoint. epochs and steps may only
// grow (the run continues; a schedule other than constant is stretched over the new total).
var resumeSafe = map[string]bool{
	"name":                   true,
	"checkpoint.every_steps": true,
	"checkpoint.keep":        true,
	"eval.batch_size":        true,
	"eval.time_loss":         true,
	// The runner's protocols on the final test embeddings (package reproduce): computed after
	// training, they do not touch the checkpoint.
	"eval.cluster":      true,
	"eval.full_map":     true,
	"eval.hierarchical": true,
}

// resumeSafePrefixes are groups of resumeSafe fields: the runner's re-identification,
// verification and re-ranking protocols.
var resumeSafePrefixes = []string{"eval.reid.", "eval.verify.", "eval.rerank."}

// isResumeSafe reports whether field k may change on resume (resumeSafe, resumeSafePrefixes).
func isResumeSafe(k string) bool {
	if resumeSafe[k] {
		return true
	}
	for _, p := range resumeSafePrefixes {
		if strings.HasPrefix(k, p) {
			return true
		}
	}
	return false
}

// checkResume compares cfg with the configuration stored in the run directory dir
// (config.resolved.yaml, written by the session that started the run). It returns an error naming
// every field that differs in a way the checkpoint cannot honour, and otherwise the allowed
// changes, one line each ("epochs: 2 → 3").
func checkResume(dir string, cfg *Config) ([]string, error) {
	path := filepath.Join(dir, "config.resolved.yaml")
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("train: resume: %w (the configuration that produced the checkpoint is unknown)", err)
	}
	stored, err := LoadConfig(path)
	if err != nil {
		return nil, fmt.Errorf("train: resume: %w", err)
	}
	old, err := flatConfig(&stored)
	if err != nil {
		return nil, fmt.Errorf("train: resume: %s: %w", path, err)
	}
	cur, err := flatConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("train: resume: %w", err)
	}
	keys := map[string]bool{}
	for k := range old {
		keys[k] = true
	}
	for k := range cur {
		keys[k] = true
	}
	sorted := make([]string, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	var bad, allowed []string
	for _, k := range sorted {
		o, oOK := old[k]
		c, cOK := cur[k]
		if oOK == cOK && o == c {
			continue
		}
		show := func(s string, ok bool) string {
			switch {
			case !ok:
				return "(unset)"
			case s == "":
				return `""`
			}
			return s
		}
		line := fmt.Sprintf("%s: %s → %s", k, show(o, oOK), show(c, cOK))
		switch {
		case isResumeSafe(k):
			allowed = append(allowed, line)
		case k == "epochs" && cfg.Epochs >= stored.Epochs:
			allowed = append(allowed, line)
		case k == "steps" && stored.Steps > 0 && (cfg.Steps == 0 || cfg.Steps >= stored.Steps):
			allowed = append(allowed, line)
		default:
			bad = append(bad, line)
		}
	}
	if len(bad) > 0 {
		return nil, fmt.Errorf("train: resume: the configuration differs from the one that produced the checkpoint (%s) in %s; "+
			"only more epochs or steps, the run name, checkpoint.*, eval.batch_size/eval.time_loss and the runner's protocols (eval.cluster, full_map, hierarchical, reid, verify, rerank) may change on resume",
			path, strings.Join(bad, "; "))
	}
	return allowed, nil
}

// flatConfig returns the configuration as dotted leaf keys ("model.dim", "loss.set.neg_margin")
// with their values printed by fmt (so a value given as the string "0.5" through --set equals 0.5
// read from YAML).
func flatConfig(c *Config) (map[string]string, error) {
	y, err := c.YAML()
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := yaml.Unmarshal(y, &m); err != nil {
		return nil, err
	}
	out := map[string]string{}
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				walk(prefix+k+".", e)
			}
		case []any:
			if len(x) == 0 {
				return // an empty list is the same as none
			}
			for i, e := range x {
				walk(fmt.Sprintf("%s%d.", prefix, i), e)
			}
		case nil:
		default:
			out[strings.TrimSuffix(prefix, ".")] = fmt.Sprint(x)
		}
	}
	walk("", m)
	return out, nil
}

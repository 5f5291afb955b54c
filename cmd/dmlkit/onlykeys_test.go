package main

import (
	"strings"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/sweep"
)

// TestCheckOnlyKeysPendingPoints: before the tuning runs are resolved the plan holds only them, and
// a key of the points waiting for them (here "name") must still be accepted — `dmlkit run cit
// --only name=fig6` failed with "no run has the configuration key" although 134 runs matched once
// resolved; a key neither resolved nor pending is still refused.
func TestCheckOnlyKeysPendingPoints(t *testing.T) {
	plan := &sweep.Plan{Scale: "small",
		Runs:    []sweep.Run{{Config: map[string]any{"optimizer": map[string]any{"lr": 0.1}, "data": map[string]any{"val_classes": 0.1}}}},
		Pending: []sweep.Pending{{Point: "loss.name=contrastive name=fig6"}}}
	if err := checkOnlyKeys(plan, map[string][]string{"name": {"fig6"}}); err != nil {
		t.Errorf("a key of a pending point: %v", err)
	}
	if err := checkOnlyKeys(plan, map[string][]string{"data.val_classes": {"0.1"}}); err != nil {
		t.Errorf("a key of a resolved run: %v", err)
	}
	if err := checkOnlyKeys(plan, map[string][]string{"nam": {"fig6"}}); err == nil || !strings.Contains(err.Error(), `key "nam"`) {
		t.Errorf("a typo: %v", err)
	}
	// A value no run or pending point has (issue 43: "--only loss.name=citt" ran nothing, exit 0);
	// alternatives of one key each need a match.
	for only, want := range map[string]map[string][]string{
		`--only loss.name=citt: no run of scale "small" has loss.name = citt (its values: contrastive)`:     {"loss.name": {"citt"}},
		`--only data.val_classes=0.2: no run of scale "small" has data.val_classes = 0.2 (its values: 0.1)`: {"data.val_classes": {"0.1", "0.2"}},
	} {
		if err := checkOnlyKeys(plan, want); err == nil || err.Error() != only {
			t.Errorf("%v: %v, want %q", want, err, only)
		}
	}
}

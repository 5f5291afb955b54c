package train

import (
	"reflect"
	"strings"
	"testing"
)

// Keys naming a map- or struct-valued path as a whole replace it entirely; a whole key is applied
// before its sub-keys; YAML mappings given as strings (as --set passes them) are parsed.
func TestApplyReplacesWholeMaps(t *testing.T) {
	base := func() Config {
		c := Default()
		c.Loss = LossConfig{Name: "contrastive", Set: map[string]any{"pos_margin": 0.1, "neg_margin": 0.5}}
		c.Data.Options = map[string]any{"root": "/data", "size": 28}
		return c
	}

	// loss.set as a whole: exactly the given map, old keys gone.
	c := base()
	if err := c.Apply(map[string]any{"loss.set": "{neg_margin: 0.7}"}); err != nil {
		t.Fatal(err)
	}
	if want := map[string]any{"neg_margin": 0.7}; !reflect.DeepEqual(c.Loss.Set, want) {
		t.Errorf("loss.set = %v, want %v", c.Loss.Set, want)
	}

	// loss as a whole (the CLI form): name and set exactly as given, old set dropped.
	c = base()
	if err := c.Apply(map[string]any{"loss": "{name: triplet, set: {margin: 0.1}}"}); err != nil {
		t.Fatal(err)
	}
	if want := (LossConfig{Name: "triplet", Set: map[string]any{"margin": 0.1}}); !reflect.DeepEqual(c.Loss, want) {
		t.Errorf("loss = %+v, want %+v", c.Loss, want)
	}

	// loss as a whole from a terms config: name and set reset (not the default's contrastive).
	c = base()
	if err := c.Apply(map[string]any{"loss": map[string]any{"terms": []any{
		map[string]any{"name": "triplet", "weight": 1.0, "set": map[string]any{"margin": 0.2}},
	}}}); err != nil {
		t.Fatal(err)
	}
	if want := (LossConfig{Terms: []LossTerm{{Name: "triplet", Weight: 1, Set: map[string]any{"margin": 0.2}}}}); !reflect.DeepEqual(c.Loss, want) {
		t.Errorf("loss = %+v, want %+v", c.Loss, want)
	}

	// Whole key before its sub-keys, whatever the map order: cit with gamma 0.5 only.
	c = base()
	if err := c.Apply(map[string]any{"loss.set.gamma": "0.5", "loss": "{name: cit}"}); err != nil {
		t.Fatal(err)
	}
	if want := (LossConfig{Name: "cit", Set: map[string]any{"gamma": "0.5"}}); !reflect.DeepEqual(c.Loss, want) {
		t.Errorf("loss = %+v, want %+v", c.Loss, want)
	}

	// data.options as a whole, given as a Go map: replaced, and the caller's map is not aliased.
	c = base()
	opts := map[string]any{"dir": "/feat"}
	if err := c.Apply(map[string]any{"data.options": opts, "data.options.split": "official"}); err != nil {
		t.Fatal(err)
	}
	if want := map[string]any{"dir": "/feat", "split": "official"}; !reflect.DeepEqual(c.Data.Options, want) {
		t.Errorf("data.options = %v, want %v", c.Data.Options, want)
	}
	if len(opts) != 1 {
		t.Errorf("the caller's map was modified: %v", opts)
	}
	if c.Data.Name != "omniglot" {
		t.Errorf("data.name changed to %q", c.Data.Name)
	}

	// A term's set as a whole.
	c = base()
	c.Loss = LossConfig{Terms: []LossTerm{{Name: "triplet", Weight: 1, Set: map[string]any{"margin": 0.2, "swap": true}}}}
	if err := c.Apply(map[string]any{"loss.terms.0.set": "{margin: 0.3}"}); err != nil {
		t.Fatal(err)
	}
	if want := map[string]any{"margin": 0.3}; !reflect.DeepEqual(c.Loss.Terms[0].Set, want) {
		t.Errorf("loss.terms[0].set = %v, want %v", c.Loss.Terms[0].Set, want)
	}

	// Errors: not a mapping; an unknown field inside a whole group.
	c = base()
	if err := c.Apply(map[string]any{"loss.set": "[1, 2]"}); err == nil || !strings.Contains(err.Error(), "loss.set") {
		t.Errorf("loss.set=[1, 2]: err = %v, want one naming loss.set", err)
	}
	if err := c.Apply(map[string]any{"loss": "{nme: triplet}"}); err == nil || !strings.Contains(err.Error(), "loss.nme") {
		t.Errorf("loss={nme: triplet}: err = %v, want one naming loss.nme", err)
	}
}

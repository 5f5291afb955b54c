package models

import (
	"strings"
	"testing"
)

// TestPCAHeadValidate: the pca head is fitted on fixed features, so it needs a frozen backbone or
// backbone features, and refuses layer_norm (it would be fitted on other features than it
// projects) and the IDML dual head; each error names the field.
func TestPCAHeadValidate(t *testing.T) {
	for _, c := range []struct {
		name  string
		cfg   Config
		field string // "" when valid
	}{
		{"frozen cnn", Config{Backbone: "cnn", Channels: []int{4}, Head: "pca", Dim: 2, FreezeBackbone: true}, ""},
		{"features", Config{Backbone: "features", Head: "pca", Dim: 2}, ""},
		{"trained cnn", Config{Backbone: "cnn", Channels: []int{4}, Head: "pca", Dim: 2}, "model.head"},
		{"layer norm", Config{Backbone: "features", Head: "pca", Dim: 2, LayerNorm: true}, "model.head"},
		{"dual head", Config{Backbone: "features", Head: "pca", Dim: 2, DualHead: true}, "model.dual_head"},
		{"no dim", Config{Backbone: "features", Head: "pca"}, "model.dim"},
	} {
		err := c.cfg.Validate("model")
		switch {
		case c.field == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.field != "" && (err == nil || !strings.HasPrefix(err.Error(), c.field)):
			t.Errorf("%s: error %v, want one naming %s", c.name, err, c.field)
		}
	}
}

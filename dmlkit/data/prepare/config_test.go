package prepare

import (
	"strings"
	"testing"
)

// TestValFoldsChecked: one fold, a negative count, or folds together with val_classes are errors
// naming data.val_folds; 4 folds alone hold out a validation split (HasVal).
func TestValFoldsChecked(t *testing.T) {
	for _, c := range []Config{{Name: "omniglot", ValFolds: 1}, {Name: "omniglot", ValFolds: -2}, {Name: "omniglot", ValFolds: 4, ValClasses: 0.1}} {
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "data.val_folds") {
			t.Errorf("%+v: %v", c, err)
		}
	}
	c := Config{Name: "omniglot", ValFolds: 4}
	if err := c.Validate(); err != nil || !c.HasVal() {
		t.Errorf("4 folds: %v, HasVal %v", err, c.HasVal())
	}
	if (&Config{Name: "omniglot"}).HasVal() {
		t.Error("no split: HasVal")
	}
}

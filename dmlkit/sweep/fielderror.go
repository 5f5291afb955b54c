package sweep

import (
	"fmt"
)

// FieldError is a validation error at a field path relative to the checked value, e.g.
// "claims[0].base"; [Spec] prefixes the path of the value.
type FieldError struct {
	Path, Msg string
}

func (e *FieldError) Error() string { return fmt.Sprintf("field %q: %s", e.Path, e.Msg) }

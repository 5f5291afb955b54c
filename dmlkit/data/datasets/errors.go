package datasets

import (
	"fmt"
	"os"

	"github.com/dmlkit/dmlkit/dmlkit/data"
)

// ferr builds a *[data.FileError] whose error wraps kind (may be nil) and the formatted text,
// which may itself wrap an error with %w.
func ferr(dataset, file string, line int, kind error, format string, args ...any) error {
	err := fmt.Errorf(format, args...)
	if kind != nil {
		err = fmt.Errorf("%w: %w", kind, err)
	}
	return &data.FileError{Dataset: dataset, File: file, Line: line, Err: err}
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

//go:build !unix

package experiments

import "os"

// Without flock, appends from one process are still serialised by Store's callers (Execute
// appends from one goroutine at a time); concurrent processes are not protected.
func lockFile(*os.File) error { return nil }

func unlockFile(*os.File) {}

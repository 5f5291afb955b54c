//go:build !unix

package sweep

import "os"

// Without flock, appends from one process are still serialised by Store's callers (Execute
// appends from one goroutine at a time); concurrent processes are not protected, and the sweep
// lock ([Store.LockSweep]) always succeeds.
func lockFile(*os.File) error { return nil }

func unlockFile(*os.File) {}

func tryLockFile(*os.File, bool) (bool, error) { return true, nil }

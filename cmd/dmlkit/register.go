package main

import "github.com/dmlkit/dmlkit/dmlkit/reproduce"

// The trainer is the runner and validator of `dmlkit run` and `dmlkit reproduce`.
func init() { reproduce.Register() }

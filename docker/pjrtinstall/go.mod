// Module pjrtinstall is the build-time installer of the XLA PJRT CUDA plugin used by
// docker/Dockerfile.cuda. Its go-xla version must match the one in dmlkit's go.mod.
module github.com/dmlkit/dmlkit/docker/pjrtinstall

go 1.27

toolchain go1.27.4

require (
	github.com/go-logr/logr v1.4.3 // indirect
	github.com/gofrs/flock v0.13.0 // indirect
	github.com/gomlx/compute v0.1.14 // indirect
	github.com/gomlx/go-xla v0.4.13
	github.com/pkg/errors v0.9.1 // indirect
	golang.org/x/exp v0.0.0-20260908205506-85c1c2202aba // indirect
	golang.org/x/sys v0.48.0 // indirect
	golang.org/x/term v0.40.0 // indirect
	k8s.io/klog/v2 v2.140.0 // indirect
)

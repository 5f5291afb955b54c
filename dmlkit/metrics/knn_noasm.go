//go:build !amd64 || purego

package metrics

func knnDetectKernel() knnKernel { return knnGenericKernel }

func knnAVX2ForTest() func(a, b, c *float32, kc, ldc int) { return knnDotGeneric4x4 }

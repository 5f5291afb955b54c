//go:build amd64 && !purego

package metrics

// Micro-kernels in knn_amd64.s. Both compute a tile C = A·Bᵀ of packed panels: a holds kc groups of mr
// query values (a[k*mr+i]), b holds kc groups of nr reference values (b[k*nr+j]); the tile is written to c
// with a row stride of ldc floats. Every C element is one sequential chain of fused multiply-adds over k,
// so a (query, reference) pair gets the same bits whichever tile position it lands in.

//go:noescape
func knnDot14x32AVX512(a, b, c *float32, kc, ldc int)

//go:noescape
func knnDot6x16AVX2(a, b, c *float32, kc, ldc int)

func knnCPUID(leaf, sub uint32) (a, b, c, d uint32)
func knnXGETBV() (eax, edx uint32)

func knnDetectKernel() knnKernel {
	maxLeaf, _, _, _ := knnCPUID(0, 0)
	if maxLeaf < 7 {
		return knnGenericKernel
	}
	_, _, c1, _ := knnCPUID(1, 0)
	const osxsave, fma, avx = 1 << 27, 1 << 12, 1 << 28
	if c1&osxsave == 0 || c1&avx == 0 || c1&fma == 0 {
		return knnGenericKernel
	}
	xcr0, _ := knnXGETBV()
	if xcr0&0x6 != 0x6 { // XMM and YMM state enabled by the OS
		return knnGenericKernel
	}
	_, b7, _, _ := knnCPUID(7, 0)
	const avx2, avx512f = 1 << 5, 1 << 16
	if b7&avx512f != 0 && xcr0&0xe6 == 0xe6 { // + opmask, ZMM_Hi256, Hi16_ZMM state
		return knnKernel{name: "avx512-14x32", mr: 14, nr: 32, fn: knnDot14x32AVX512}
	}
	if b7&avx2 != 0 {
		return knnKernel{name: "avx2-6x16", mr: 6, nr: 16, fn: knnDot6x16AVX2}
	}
	return knnGenericKernel
}

// knnAVX2ForTest lets tests run the AVX2 kernel on AVX-512 machines.
func knnAVX2ForTest() func(a, b, c *float32, kc, ldc int) { return knnDot6x16AVX2 }

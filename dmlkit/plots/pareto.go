package plots

import "sort"

// ParetoFrontier returns the indices of the points not dominated by any other point, sorted by
// increasing x (ties by y). With maxX (maxY) larger x (y) is better, otherwise smaller is. Point j
// dominates i when it is at least as good in both coordinates and strictly better in one; equal
// points do not dominate each other, so duplicates on the frontier are all kept.
func ParetoFrontier(x, y []float64, maxX, maxY bool) []int {
	if len(x) != len(y) {
		panic("plots: ParetoFrontier: len(x) != len(y)")
	}
	better := func(a, b float64, max bool) (ge, gt bool) {
		if max {
			return a >= b, a > b
		}
		return a <= b, a < b
	}
	var out []int
	for i := range x {
		dominated := false
		for j := range x {
			if i == j {
				continue
			}
			gex, gtx := better(x[j], x[i], maxX)
			gey, gty := better(y[j], y[i], maxY)
			if gex && gey && (gtx || gty) {
				dominated = true
				break
			}
		}
		if !dominated {
			out = append(out, i)
		}
	}
	sort.SliceStable(out, func(a, b int) bool {
		if x[out[a]] != x[out[b]] {
			return x[out[a]] < x[out[b]]
		}
		return y[out[a]] < y[out[b]]
	})
	return out
}

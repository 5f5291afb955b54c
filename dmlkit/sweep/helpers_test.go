// Test helpers copied from package report's tests (tune_test.go): a package's tests cannot call another package's.

package sweep

import ()

// toyAcc is the validation accuracy of a configuration: best at lr 0.3, then at margin 2.
func toyAcc(cfg map[string]any) float64 {
	lr, _ := Get(cfg, "opt.lr")
	m, _ := Get(cfg, "loss.m")
	l, _ := Numeric(lr)
	mf, _ := Numeric(m)
	return 1 - (l-0.3)*(l-0.3) + mf/10
}

package train

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/data"
	"github.com/dmlkit/dmlkit/dmlkit/data/prepare"
)

func init() {
	// synth-gaps is synth-test with the training class ids doubled (0, 2, 4, …): the same classes
	// under other names, as a validation split or max_train_classes leaves them.
	prepare.RegisterDataset("synth-gaps", func(opts map[string]any) (*data.Split, error) {
		tr := synthImages(1, 16, 8, 12, 0)
		for i := range tr.Labels {
			tr.Labels[i] *= 2
		}
		return &data.Split{Train: tr, Test: synthImages(2, 10, 6, 12, 100)}, nil
	})
}

// TestClassIdsAreNamesOnly: training depends on the training classes, not on the integers that
// name them. With a proxy loss (one proxy per class, indexed by label) and with a pair loss, a
// dataset whose 16 training classes are named 0, 2, …, 30 trains to byte-identical test
// embeddings as the same data named 0, …, 15. (Before, the proxy loss got labels up to 30 for 16
// proxies — what a data.val_classes split does to every proxy-loss run — and silently trained
// something else.)
func TestClassIdsAreNamesOnly(t *testing.T) {
	for _, loss := range []string{"proxyanchor", "contrastive"} {
		t.Run(loss, func(t *testing.T) {
			var embs [][]byte
			for _, ds := range []string{"synth-test", "synth-gaps"} {
				cfg := testConfig()
				cfg.Data.Name = ds
				cfg.Loss.Name = loss
				cfg.Epochs = 1
				dir := t.TempDir()
				if _, err := Run(context.Background(), cfg, dir, nil); err != nil {
					t.Fatalf("%s: %v", ds, err)
				}
				b, err := os.ReadFile(filepath.Join(dir, "test_embeddings.npy"))
				if err != nil {
					t.Fatal(err)
				}
				embs = append(embs, b)
			}
			if !bytes.Equal(embs[0], embs[1]) {
				t.Error("renaming the training classes changed the trained model")
			}
		})
	}
}

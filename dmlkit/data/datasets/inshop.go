package datasets

import (
	"path/filepath"
	"strconv"
	"strings"

	"github.com/dmlkit/dmlkit/dmlkit/data"
)

// InShop loads DeepFashion In-Shop Clothes Retrieval from root: Eval/list_eval_partition.txt
// (line 1: the number of rows; line 2: the header "image_name item_id evaluation_status"; then
// rows "img/WOMEN/…/id_00000001/02_1_front.jpg id_00000001 train"), images relative to root.
// Status train/query/gallery fills Train (3,997 items / 25,882 images), Query (14,218) and
// Gallery (12,612). Labels are the item numbers (id_00000001 → 1). The row count must match
// line 1, so a truncated list is reported.
func InShop(root string, opt LoadOptions) (*data.FileSplit, error) {
	const ds = "inshop"
	if err := requireDir(ds, root); err != nil {
		return nil, err
	}
	path := filepath.Join(root, "Eval", "list_eval_partition.txt")
	lines, err := readList(ds, path, false)
	if err != nil {
		return nil, err
	}
	if len(lines) < 2 {
		return nil, ferr(ds, path, 0, data.ErrTruncated, "want a count line and a header, got %d lines", len(lines))
	}
	want, err := strconv.Atoi(lines[0].fields[0])
	if err != nil || len(lines[0].fields) != 1 {
		return nil, ferr(ds, path, lines[0].n, data.ErrFormat, "want the row count, got %q", lines[0].fields)
	}
	if h := lines[1].fields; len(h) != 3 || h[0] != "image_name" {
		return nil, ferr(ds, path, lines[1].n, data.ErrFormat, "want the header \"image_name item_id evaluation_status\", got %q", h)
	}
	rows := lines[2:]
	if len(rows) != want {
		return nil, ferr(ds, path, 0, data.ErrTruncated, "line 1 announces %d rows, found %d", want, len(rows))
	}
	out := &data.FileSplit{Train: &data.Files{Name: "inshop/train"}, Query: &data.Files{Name: "inshop/query"}, Gallery: &data.Files{Name: "inshop/gallery"}}
	for _, l := range rows {
		if len(l.fields) != 3 {
			return nil, ferr(ds, path, l.n, data.ErrFormat, "want \"image_name item_id evaluation_status\", got %d fields", len(l.fields))
		}
		id, ok := strings.CutPrefix(l.fields[1], "id_")
		item, err := strconv.Atoi(id)
		if !ok || err != nil || item < 0 {
			return nil, ferr(ds, path, l.n, data.ErrUnknownClass, "item id %q (want id_NNNNNNNN)", l.fields[1])
		}
		var dst *data.Files
		switch l.fields[2] {
		case "train":
			dst = out.Train
		case "query":
			dst = out.Query
		case "gallery":
			dst = out.Gallery
		default:
			return nil, ferr(ds, path, l.n, data.ErrFormat, "evaluation status %q (want train, query or gallery)", l.fields[2])
		}
		p, err := joinUnder(ds, path, l.n, root, l.fields[0])
		if err != nil {
			return nil, err
		}
		if err := opt.check(ds, path, l.n, p); err != nil {
			return nil, err
		}
		dst.Paths = append(dst.Paths, p)
		dst.Labels = append(dst.Labels, int32(item))
	}
	return out, nil
}

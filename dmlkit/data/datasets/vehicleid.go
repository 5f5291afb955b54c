package datasets

import (
	"fmt"
	"path/filepath"
	"strconv"

	"github.com/dmlkit/dmlkit/dmlkit/data"
)

// VehicleID loads PKU VehicleID from root: train_test_split/train_list.txt and
// test_list_<testSize>.txt (testSize 800, 1600 or 2400), rows "0004712 <vehicle id>" naming
// image/<name>.jpg. Labels are the vehicle ids. In the DML protocol each test list is one whole
// retrieval set. A vehicle id in both train and test is an error.
func VehicleID(root string, testSize int, opt LoadOptions) (*data.FileSplit, error) {
	const ds = "vehicleid"
	if testSize != 800 && testSize != 1600 && testSize != 2400 {
		return nil, fmt.Errorf("data: vehicleid: test size %d, want 800, 1600 or 2400", testSize)
	}
	if err := requireDir(ds, root); err != nil {
		return nil, err
	}
	out := &data.FileSplit{Train: &data.Files{Name: "vehicleid/train"}, Test: &data.Files{Name: fmt.Sprintf("vehicleid/test%d", testSize)}}
	seen := map[int]string{}
	for _, part := range []struct {
		file string
		dst  *data.Files
	}{{"train_list.txt", out.Train}, {fmt.Sprintf("test_list_%d.txt", testSize), out.Test}} {
		lp := filepath.Join(root, "train_test_split", part.file)
		lines, err := readList(ds, lp, false)
		if err != nil {
			return nil, err
		}
		if len(lines) == 0 {
			return nil, ferr(ds, lp, 0, data.ErrFormat, "empty list")
		}
		for _, l := range lines {
			if len(l.fields) != 2 {
				return nil, ferr(ds, lp, l.n, data.ErrFormat, "want \"image_name vehicle_id\", got %d fields", len(l.fields))
			}
			if _, err := strconv.Atoi(l.fields[0]); err != nil {
				return nil, ferr(ds, lp, l.n, data.ErrFormat, "image name %q is not numeric", l.fields[0])
			}
			vid, err := strconv.Atoi(l.fields[1])
			if err != nil || vid < 0 {
				return nil, ferr(ds, lp, l.n, data.ErrUnknownClass, "vehicle id %q", l.fields[1])
			}
			if other, ok := seen[vid]; ok && other != part.file {
				return nil, ferr(ds, lp, l.n, data.ErrFormat, "vehicle %d also appears in %s; train and test must be disjoint", vid, other)
			}
			seen[vid] = part.file
			p, err := joinUnder(ds, lp, l.n, filepath.Join(root, "image"), l.fields[0]+".jpg")
			if err != nil {
				return nil, err
			}
			if err := opt.check(ds, lp, l.n, p); err != nil {
				return nil, err
			}
			part.dst.Paths = append(part.dst.Paths, p)
			part.dst.Labels = append(part.dst.Labels, int32(vid))
		}
	}
	return out, nil
}

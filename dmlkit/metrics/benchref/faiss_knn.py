#!/usr/bin/python3
"""Reference timing for dmlkit's kNN engine: faiss IndexFlatIP top-k self-retrieval.

Usage: faiss_knn.py DATA.f32 N D K THREADS

DATA.f32 holds N*D little-endian float32 values (row-major, already L2-normalised). The script searches
K+1 neighbours (the query itself is in the index), drops the self-match by index, and prints one JSON line
with the search wall and CPU (process_time, all threads) time, the load+index time and the peak resident memory (VmHWM) of the process.

Run it tuned as the benchmark does:
    OPENBLAS_CORETYPE=Cooperlake OMP_WAIT_POLICY=PASSIVE OMP_NUM_THREADS=2 /usr/bin/python3 faiss_knn.py ...
"""
import json
import sys
import time


def vmhwm_kib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return -1


def main():
    path, n, d, k, threads = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
    try:
        import faiss
        import numpy as np
    except ImportError as e:  # reported, not fatal: the Go side prints "skipped"
        print(json.dumps({"error": "import: %s" % e}))
        return
    faiss.omp_set_num_threads(threads)
    t0 = time.perf_counter()
    x = np.fromfile(path, dtype=np.float32).reshape(n, d)
    index = faiss.IndexFlatIP(d)
    index.add(x)
    t1, c1 = time.perf_counter(), time.process_time()
    sims, ids = index.search(x, k + 1)
    t2, c2 = time.perf_counter(), time.process_time()
    # drop the self-match by index (it need not be first when another row has an equal score)
    self_mask = ids == np.arange(n)[:, None]
    keep = np.where(self_mask.any(axis=1)[:, None], ~self_mask, np.arange(k + 1)[None, :] < k)
    ids = ids[keep].reshape(n, k)
    t3 = time.perf_counter()
    np.save(path + ".faiss_ids.npy", ids.astype(np.int64))
    print(json.dumps({
        "faiss_version": faiss.__version__,
        "threads": threads,
        "load_s": t1 - t0,
        "search_s": t2 - t1,
        "search_cpu_s": c2 - c1,
        "drop_self_s": t3 - t2,
        "vmhwm_mib": vmhwm_kib() / 1024.0,
    }))


if __name__ == "__main__":
    main()

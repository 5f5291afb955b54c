// Package sweep plans, runs, stores and tunes dmlkit's sweeps: an experiment is data (a YAML
// spec), each run's result is stored as a record, and cluster jobs are emitted from the same
// plan.
//
// It reads a spec (reproductions/<paper>/spec.yaml, with paper.yaml's references) and the results
// store; it writes records (reproductions/<paper>/results/<scale>.jsonl, or the directory given),
// measurements that reruns add to stored records (<scale>.measurements beside them, [Remeasure]:
// kept only when the rerun reproduces the record's metrics bit for bit), the run working
// directories the registered runner fills, and emitted Kubernetes or SLURM job files. It imports neither the judging package (judge) nor the presenting one (report); both
// read its Spec and Records.
//
// # Spec format
//
// A spec lives in reproductions/<paper>/spec.yaml:
//
//	paper: tcm                      # directory name under reproductions/ and figures/
//	description: Smooth-AP ± TCM on iNat
//	base:                           # the nested configuration every run starts from
//	  data: {name: omniglot, limit_classes: 0}
//	  loss: {name: smoothap}
//	  train: {epochs: 20, lr: 1.0e-4}
//	scales:                         # presets over the one definition: dotted key → value
//	  smoke: {train.epochs: 1, data.limit_classes: 20, seeds: [0]}
//	  small: {train.epochs: 20}
//	  full:  {data.name: inat, model.backbone: resnet50, grid: {loss.name: [smoothap]}}
//	sweep:
//	  grid: {loss.name: [smoothap, rsk], regularizer.tcm: [false, true]}
//	  list: [{train.lr: 1.0e-4}, {train.lr: 1.0e-5, train.epochs: 40}]   # optional
//	  seeds: [0, 1, 2]
//	  seed_key: train.seed          # where the seed goes in the config (default "seed")
//	reference:                      # the paper's numbers, cited (paper.yaml next to the spec may add more)
//	  - {match: {loss.name: smoothap, regularizer.tcm: false}, metric: R@1, value: 67.4,
//	     source: "seed 000 Table 2, iNat row"}
//	tables:
//	  - name: main
//	    rows: [loss.name, regularizer.tcm]
//	    metrics: [R@1, OPIS]
//	    factor: 100
//	tune:                           # tuning steps on held-out training classes (see TuneSpec)
//	  - {name: lr, point: {data.val_classes: 0.1}, grid: {train.lr: [1.0e-4, 1.0e-3]}, select: {metric: val/R@1}}
//	figures: [{name: r1_curve, kind: line, series: [val.R@1], group: [loss.name]}]
//	launch:  {image: ghcr.io/dmlkit/dmlkit:cuda, gpus: 1, memory: 16Gi}   # for --emit
//
// The spec's sections that only the presenting package draws — tables ([TableSpec]), figures
// ([FigureSpec], kinds in [FigureKinds]), the leaderboard ([LeaderboardSpec]) and the display
// labels ([LabelMap]) — are declared and validated here, since [Load] rejects a spec whose
// sections are malformed before anything runs; package report renders them.
//
// Resolution of one run, lowest precedence first: base; the scale's overrides (a nested map value
// is merged key by key); the sweep point (grid values × list entries); the seed, written at
// seed_key. A scale may also replace the sweep's seeds, individual grid keys, or the list through
// its reserved keys seeds, grid and list. The grid is expanded with its keys in sorted order, the
// last varying fastest; runs are numbered in that order (× seeds), and that number (Run.Index)
// alone decides the shard of a run.
//
// # Identity, resume and shards
//
// A run's identity is [Hash]: the first 16 hex digits of the SHA-256 of the canonical JSON of its
// resolved configuration (sorted keys; the seed included). [Execute] skips every run whose
// (scale, hash) already has a record, so re-running a sweep after a crash or a kill runs exactly
// the missing runs; a run that did not finish leaves no record and its working directory is wiped
// before it starts again. [Shard] gives shard i of n the runs with Index ≡ i (mod n), so
// `dmlkit run SPEC --index I --of N` covers every run once. A cluster job runs the sweep in
// phases (tuning stages, then the points tuned at them; see [Plan.RunPhases], [SweepOptions].Phase):
// one Kubernetes Indexed Job (jobs.EmitK8s of package dmlkit/sweep/jobs, JOB_COMPLETION_INDEX)
// or SLURM array (jobs.EmitSlurm, SLURM_ARRAY_TASK_ID) per phase, each task `dmlkit run SPEC
// --phase K --index I --of N` ([PhaseShard]), each phase starting after the previous one
// succeeded.
//
// # Validation
//
// [Load] rejects unknown spec fields, YAML type errors, unknown figure kinds and references
// without a source, naming the file, line or field. [Spec.Plan] then checks every resolved
// configuration with the registered [Validator] before anything is trained, so an unknown loss,
// dataset or parameter, or a value of the wrong type, fails with its dotted field path (e.g.
// `scale "small", run loss.name=foo seed=0: field "loss.name": unknown value "foo"`).
// [StructValidator] builds such a validator from a typed config struct via package config.
//
// # Training is pluggable
//
// This package does not import the trainer. A run is a resolved map[string]any executed by the
// [Runner] registered with [SetRunner]; until one is registered, running fails with
// [ErrNoRunner] ("no runner registered"), while tables and figures still work from stored records.
//
// # Results store
//
// [Store] keeps one JSON object per line in reproductions/<paper>/results/<scale>.jsonl: hash,
// paper, scale, seed, swept params, full config, metrics, optional series, timings, start time,
// wall seconds and the environment (backend, versions, devices). Appends are atomic (one write
// under flock on an O_APPEND file, then fsync); see [Store] for the exact guarantee. The small
// scale's files are committed with the repository.
//
// # Aggregation
//
// [GroupBy] groups records by any keys (config keys, or seed/scale/paper/hash) and [Group.Stat]
// gives mean ± sample std over the group's seeds; the tuning steps, the judging and the
// presenting packages all aggregate with them.
//
// # Tuning
//
// A spec's tuning steps ([TuneSpec]) select hyper-parameters on held-out training classes by a
// stated rule ([Selection]); sweep points naming a step in "tuned" take its selection.
// [Spec.PlanWith] resolves them from the stored tuning runs (until a step's grid is stored, the
// points that need it are pending), [RunSweep] runs the steps first, and every step's selection
// is a regenerated table (tune_<name>); a selection at the edge of its grid is flagged.
//
// # Runs that start from other runs
//
// A configuration string "run:SELECTOR" ([RunRefPrefix]; e.g. model.init_from: "run:pretrain-bg866")
// names the run of another sweep point of the same scale and seed: fine-tuning from a
// pre-training run. [Spec.PlanWith] replaces it with "run:<hash>" of that run once the run is
// stored (until then the dependent run is pending, like a point waiting for a tuning step), so
// hashes never depend on where run directories live; [Execute] hands the runner the source's run
// directory. A selector matching no run or several is an error naming the field.
package sweep

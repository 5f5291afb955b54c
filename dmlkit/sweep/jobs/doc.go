// Package jobs turns a sweep spec's plan into cluster jobs, one per phase: a SLURM script that
// submits one array job per phase chained with --dependency=afterok ([EmitSlurm]), or a bash
// script holding Kubernetes manifests, one Indexed Job per phase, that it applies in turn
// ([EmitK8s]).
//
// It reads a [sweep.Spec] (its tune steps and launch block) and records ([sweep.Record]): [Plan]
// lays the sweep of a scale out as phases (the phases of [sweep.Plan.RunPhases]), counted on the
// records the job starts from, with the selections of tuning steps taken from known records or
// placeholders; [JobPlan.Size] sets each phase's task count and per-task resources (at the CPU
// scales measured from the records' run time and peak memory, else from the spec's launch
// block). It writes nothing itself: the emitters return the job's text, which `dmlkit run SPEC
// --emit slurm|k8s` writes out. Every task runs `dmlkit run SPEC --phase K --index I --of N`,
// whose selection of runs ([sweep.PhaseShard], sweep's phase.go) stays in package sweep.
package jobs

// Package judge decides dmlkit's claims: it reads a paper's claims (reproductions/<paper>/claims.yaml)
// and the stored records of package sweep, and returns verdicts with their comparability, regime
// and form. It writes no file; package report renders what it returns. It imports package sweep
// (the spec and the records) and never package report.
//
// The paper's claims are data ([ClaimSet], [LoadClaims]), one claim per setting, of a kind
// (better, equivalent, trend, interaction, argmax, rank), with the arms it compares as selectors
// on the stored records. [CheckClaims] and [CheckSelections] check the keys, values and metrics a
// claims file names against the spec and the records ([Vocabulary]). [ClaimSet.Evaluate] pairs
// the arms' records by seed and decides from the 95 % Student-t interval of the per-seed paired
// quantity and the share of seeds that agree ([VerdictRule]): held, contradicted or
// inconclusive, with the reason. Records written from a dirty tree or by failed runs are left
// out, and so are records of runs the spec's current plan no longer produces ([DropSuperseded]).
//
// Each verdict carries the comparability of its arms (tuning, training budget, the training
// floor — one per setting, the same for an arm in every claim, floor.go; "the method did not
// train here" and failure-is-the-effect ablations as outcomes of their own:
// [ClaimVerdict.ComparabilityNote], [CauseLabel]) and the regime of its records ([RegimeOf],
// [ClaimVerdict.Regime]; [ClaimsReport.RegimePairs] pairs a claim with its re-test in another
// regime). [CompareSettings] gives the seed-paired [Effect] of one key's two settings. A
// [ClaimsReport] holds a paper's verdicts and
// their own text: [ClaimsReport.Markdown] and [ClaimsReport.LaTeX] (every arm's mean ± SE, the
// effect with its interval, n), grouped by the paper's tables and figures ([ClaimsReport.Groups]).
package judge

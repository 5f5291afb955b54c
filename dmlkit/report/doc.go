// Package report presents dmlkit's results: it reads a spec and the stored records of package
// sweep and the verdicts of package judge, and writes the tables, figures, leaderboards, claim
// tables and README blocks that `dmlkit tables`, `dmlkit figures` and `dmlkit summary`
// regenerate, byte-identical, without training. It imports packages sweep and judge; neither
// imports it.
//
// # Tables and figures
//
// [BuildTable] renders a spec's table ([sweep.TableSpec]) as Markdown and LaTeX (booktabs) with a
// "(paper)" column wherever a [sweep.Reference] matches, citing its source; [RenderTables] writes
// every table of a spec. [RenderFigures] draws the declared figures with package plots into
// figures/<paper>/ as PNG, SVG and PDF; the kinds are listed at [sweep.FigureSpec] (line, pareto,
// heatmap, histogram, utility, density2d, bar, and embedding2d: per-class directions, circular
// spreads and densities of 2-D embeddings, one panel per model, as in seed 000 Fig. 5).
//
// # Claims, front page and summary
//
// [RenderClaims] writes a paper's verdict table (package judge's [judge.ClaimsReport]) and
// refreshes the generated block of the paper's README ([UpdateMarked]); [FindingsMarkdown] and
// [CentralEffects] write the front page's findings, [SummaryMarkdown] the summary of every paper.
//
// # Leaderboard
//
// A spec whose sweep trains many methods under one protocol (issue 31's benchmark of DML losses)
// declares a leaderboard: section ([sweep.LeaderboardSpec]): the config key naming a method, the
// metrics (the first ranks), their display factors, which are lower-is-better, the methods in
// display order (label, who proposed them, the seed papers using them) and one or more regimes
// (scales). [BuildLeaderboard] ranks each regime's final runs by the mean over seeds with 95 %
// t-intervals and the verdicts' training rule; [AgreementOf] compares two regimes' rankings by
// Kendall's τ-b ([KendallTauB]) with a seeded percentile bootstrap over seeds ([BootstrapTau]),
// and [Agreements] every pair of the spec's regimes (files named by [AgreementName]);
// [RenderLeaderboard] and [RenderLeaderboardFigures] write the tables and figures that `dmlkit
// tables` and `dmlkit figures` regenerate, and [LeaderboardSummary] the lines of a README block.
package report

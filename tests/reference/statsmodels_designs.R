# lme4 reference fits for the statsmodels backend's design suite (issue 24, defect 1).
#
# Run from the repo root:  Rscript tests/reference/statsmodels_designs.R
# Writes tests/reference/statsmodels_designs.json. The test
# tests/stats/test_statsmodels_designs.py fits each design with gbstats'
# statsmodels backend and requires lme4's answer (within 1e-3) or a clear refusal.
#
# Data: factorial.csv, random_intercept.csv and random_slope.csv come from
# tests/reference/make_data.py (seeded); between_subject.csv and nested.csv are
# written here from R's seeded Mersenne-Twister (set.seed below), so this script
# rebuilds them byte for byte.
#
# Every fit: lme4::lmer, REML (lme4's default, and what the statsmodels backend
# fits), factors with levels in C-locale sorted order (gbstats' order), treatment
# coding unless the design says "sum" (contr.sum: R's names close1, stance1, ...).
# `statsmodels` says what the backend must do: "fit" (one grouping factor) or
# "refuse" (crossed or nested-in-two-factors random effects: MixedLM takes one).

suppressPackageStartupMessages({
  library(lme4)
  library(jsonlite)
})

dir <- file.path("tests", "reference")
if (!dir.exists(dir)) stop("run this script from the repository root")
RNGkind("Mersenne-Twister", "Inversion", "Rejection")

# ---- seeded data sets of their own ----------------------------------------------
set.seed(2024)
# Between-subject factor: 3 groups x 12 subjects, each subject sees 2 conditions x 6 items.
n_subj <- 36
between <- expand.grid(trial = 1:12, subject = sprintf("p%02d", 1:n_subj), stringsAsFactors = FALSE)
subject_group <- setNames(rep(c("control", "fast", "slow"), each = 12), sprintf("p%02d", 1:n_subj))
between$group <- unname(subject_group[between$subject])
between$cond <- ifelse(between$trial %% 2 == 0, "anti", "pro")
u <- setNames(rnorm(n_subj, sd = 0.7), sprintf("p%02d", 1:n_subj))
group_effect <- c(control = 0, fast = 0.5, slow = -0.4)
between$y <- round(4 + group_effect[between$group] + 0.6 * (between$cond == "pro") -
                   0.3 * (between$cond == "pro") * (between$group == "fast") +
                   u[between$subject] + rnorm(nrow(between), sd = 1), 6)
between <- between[, c("subject", "group", "cond", "y")]
write.csv(between, file.path(dir, "between_subject.csv"), row.names = FALSE)

# Nested: 8 schools x 5 classes x 10 pupils; class labels are unique across schools.
nested <- expand.grid(pupil = 1:10, class = 1:5, school = sprintf("s%d", 1:8), stringsAsFactors = FALSE)
nested$class <- paste0(nested$school, "c", nested$class)
school_u <- setNames(rnorm(8, sd = 0.8), sprintf("s%d", 1:8))
class_u <- setNames(rnorm(40, sd = 0.5), unique(nested$class))
nested$x <- round(rnorm(nrow(nested)), 6)
nested$y <- round(10 + 0.8 * nested$x + school_u[nested$school] + class_u[nested$class] +
                  rnorm(nrow(nested), sd = 1), 6)
nested <- nested[, c("school", "class", "x", "y")]
write.csv(nested, file.path(dir, "nested.csv"), row.names = FALSE)

# ---- the designs -----------------------------------------------------------------
designs <- list(
  issue_factorial = list(data = "factorial.csv", formula = "y ~ close + (1 | subject)",
                         statsmodels = "fit",
                         why = "issue 24: L-BFGS 'converged' to intercept 0, SE NaN, logLik inf"),
  factorial_by_item = list(data = "factorial.csv", formula = "y ~ close + (1 | item)",
                           statsmodels = "fit", why = "random intercept for items"),
  factorial_sum = list(data = "factorial.csv", formula = "y ~ close * stance + (1 | subject)",
                       sum = c("close", "stance"), statsmodels = "fit",
                       why = "sum coding, interaction"),
  factorial_treatment_slope = list(data = "factorial.csv",
                                   formula = "y ~ close * stance + (1 + close | subject)",
                                   statsmodels = "fit",
                                   why = "treatment coding, correlated random slope of a factor"),
  binary_response_lmm = list(data = "factorial.csv", formula = "correct ~ close + stance + (1 | subject)",
                             statsmodels = "fit", why = "a 0/1 response fitted as an LMM"),
  between_subject = list(data = "between_subject.csv", formula = "y ~ group * cond + (1 | subject)",
                         statsmodels = "fit", why = "a between-subject factor (treatment)"),
  between_subject_sum = list(data = "between_subject.csv", formula = "y ~ group + cond + (1 | subject)",
                             sum = c("group", "cond"), statsmodels = "fit",
                             why = "a between-subject factor (sum)"),
  nested_inner = list(data = "nested.csv", formula = "y ~ x + (1 | class)", statsmodels = "fit",
                      why = "classes nested in schools, uniquely labelled, one grouping factor"),
  random_intercept = list(data = "random_intercept.csv", formula = "y ~ x + cond + (1 | subject)",
                          statsmodels = "fit", why = "continuous and factor predictors"),
  random_slope = list(data = "random_slope.csv", formula = "y ~ x + (1 + x | subject)",
                      statsmodels = "fit", why = "correlated random slope of a covariate"),
  crossed = list(data = "factorial.csv", formula = "y ~ close + (1 | subject) + (1 | item)",
                 statsmodels = "refuse", why = "crossed random effects: two grouping factors"),
  nested_two_levels = list(data = "nested.csv", formula = "y ~ x + (1 | school) + (1 | class)",
                           statsmodels = "refuse",
                           why = "nested random effects (lme4 school/class; class ids are unique): two grouping factors")
)

read_design <- function(file) {
  d <- read.csv(file.path(dir, file), stringsAsFactors = FALSE)
  for (col in names(d)) {
    if (is.character(d[[col]])) {
      d[[col]] <- factor(d[[col]], levels = sort(unique(d[[col]]), method = "radix"))
    }
  }
  d
}

fit_one <- function(spec) {
  d <- read_design(spec$data)
  for (col in spec$sum) contrasts(d[[col]]) <- contr.sum(nlevels(d[[col]]))
  fit <- lmer(as.formula(spec$formula), data = d, REML = TRUE)
  s <- coef(summary(fit))
  vc <- as.data.frame(VarCorr(fit))
  vc <- vc[is.na(vc$var2), ]
  list(data = spec$data, formula = spec$formula, sum = as.list(spec$sum),
       statsmodels = spec$statsmodels, why = spec$why,
       fixed = data.frame(term = rownames(s), estimate = s[, "Estimate"], se = s[, "Std. Error"],
                          row.names = NULL),
       varcor = data.frame(group = vc$grp, term = ifelse(is.na(vc$var1), "", vc$var1),
                           variance = vc$vcov, row.names = NULL),
       loglik = as.numeric(logLik(fit)), nobs = nobs(fit), is_singular = isSingular(fit),
       lme4_messages = as.list(fit@optinfo$conv$lme4$messages))
}

out <- list(
  generated_by = "Rscript tests/reference/statsmodels_designs.R",
  r_version = R.version.string,
  lme4_version = as.character(packageVersion("lme4")),
  designs = lapply(designs, fit_one)
)
write_json(out, file.path(dir, "statsmodels_designs.json"), digits = NA, auto_unbox = TRUE,
           pretty = TRUE, dataframe = "rows", na = "null")
cat("wrote", file.path(dir, "statsmodels_designs.json"), "\n")

# lme4 reference values for gbstats' mixed-model tests.
#
# Run from the repo root:  Rscript tests/reference/make_refs.R
# Reads tests/reference/<model>.csv (written by tests/reference/make_data.py),
# writes tests/reference/lme4_refs.json with, per model: fixed effects
# (estimate, SE, Satterthwaite df / Wald z, p-value), variance components,
# logLik, AIC, BIC, nobs and isSingular, plus the R, lme4 and lmerTest versions.
#
# LMMs: lmerTest::lmer, REML (lme4's default), Satterthwaite df; ci_low/ci_high
# are t intervals, estimate +/- qt(0.975, df) * se (wald_ci_* keep confint's
# Wald z intervals for comparison).
# GLMM: lme4::glmer, binomial logit, Laplace, Wald z; ci_* = confint(method = "Wald").
# Factors: levels in C-locale sorted order (what gbstats uses), first level =
# reference, treatment contrasts (R's default).

suppressPackageStartupMessages({
  library(lme4)
  library(lmerTest)
  library(jsonlite)
})

dir <- file.path("tests", "reference")
if (!dir.exists(dir)) stop("run this script from the repository root")

models <- list(
  random_intercept = list(formula = "y ~ x + cond + (1 | subject)", family = "gaussian"),
  random_slope     = list(formula = "y ~ x + (1 + x | subject)", family = "gaussian"),
  crossed          = list(formula = "y ~ cond + (1 | subject) + (1 | item)", family = "gaussian"),
  binomial_glmm    = list(formula = "correct ~ cond * x + (1 | subject) + (1 | item)",
                          family = "binomial")
)

read_design <- function(name) {
  d <- read.csv(file.path(dir, paste0(name, ".csv")), stringsAsFactors = FALSE)
  for (col in names(d)) {
    if (is.character(d[[col]])) {
      d[[col]] <- factor(d[[col]], levels = sort(unique(d[[col]]), method = "radix"))
    }
  }
  d
}

fixed_table <- function(fit, family) {
  s <- coef(summary(fit))
  if (family == "gaussian") {
    stat <- s[, "t value"]; df <- s[, "df"]; p <- s[, "Pr(>|t|)"]
  } else {
    stat <- s[, "z value"]; df <- rep(NA_real_, nrow(s)); p <- s[, "Pr(>|z|)"]
  }
  wald <- confint(fit, parm = "beta_", method = "Wald")
  lo <- wald[rownames(s), 1]; hi <- wald[rownames(s), 2]
  if (family == "gaussian") {
    # t intervals with the coefficient's own Satterthwaite df, the interval
    # that inverts lmerTest's t test (gbstats' interval for lme4 LMMs).
    half <- qt(0.975, df) * s[, "Std. Error"]
    lo <- s[, "Estimate"] - half; hi <- s[, "Estimate"] + half
  }
  data.frame(term = rownames(s), estimate = s[, "Estimate"], se = s[, "Std. Error"],
             stat = stat, df = df, p_value = p, ci_low = lo, ci_high = hi,
             wald_ci_low = wald[rownames(s), 1], wald_ci_high = wald[rownames(s), 2],
             row.names = NULL)
}

variance_table <- function(fit) {
  vc <- as.data.frame(VarCorr(fit))
  vc <- vc[is.na(vc$var2), ]  # variances only; correlations are not compared
  data.frame(group = vc$grp, term = ifelse(is.na(vc$var1), "", vc$var1),
             variance = vc$vcov, sd = vc$sdcor, row.names = NULL)
}

fit_one <- function(name, spec) {
  d <- read_design(name)
  f <- as.formula(spec$formula)
  fit <- if (spec$family == "gaussian") {
    lmerTest::lmer(f, data = d, REML = TRUE)
  } else {
    glmer(f, data = d, family = binomial)
  }
  list(formula = spec$formula, family = spec$family, data = paste0(name, ".csv"),
       fixed = fixed_table(fit, spec$family), varcor = variance_table(fit),
       loglik = as.numeric(logLik(fit)), aic = AIC(fit), bic = BIC(fit),
       nobs = nobs(fit), is_singular = isSingular(fit), reml = isREML(fit),
       lme4_messages = as.list(fit@optinfo$conv$lme4$messages))
}

# Column names of model.matrix for formulas exercising R's coding rules
# (interaction order, marginality, no intercept, logical columns). The Python
# test rebuilds this same small data frame.
naming_data <- data.frame(a = factor(c("p", "q", "r", "p")), b = factor(c("u", "v", "u", "v")),
                          x = c(1, 2, 3, 4), c = c(TRUE, FALSE, TRUE, FALSE))
naming_formulas <- c("~ a * b", "~ b:a + a + x", "~ 0 + a + x:a + c", "~ 0 + x + a + c",
                     "~ a:b", "~ x:a", "~ a + a:b", "~ a:x + b", "~ a * x * c", "~ c + x")
term_names <- lapply(setNames(naming_formulas, naming_formulas),
                     function(f) colnames(model.matrix(as.formula(f), naming_data)))

out <- list(
  generated_by = "Rscript tests/reference/make_refs.R",
  r_version = R.version.string,
  lme4_version = as.character(packageVersion("lme4")),
  lmerTest_version = as.character(packageVersion("lmerTest")),
  matrix_version = as.character(packageVersion("Matrix")),
  term_names = term_names,
  models = lapply(setNames(names(models), names(models)), function(n) fit_one(n, models[[n]]))
)

write_json(out, file.path(dir, "lme4_refs.json"), digits = NA, auto_unbox = TRUE,
           pretty = TRUE, dataframe = "rows", na = "null")
cat("wrote", file.path(dir, "lme4_refs.json"), "\n")

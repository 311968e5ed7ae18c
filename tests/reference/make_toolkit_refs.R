# R reference values for gbstats' mixed-model toolkit: contrasts, model
# comparison, estimated marginal means, random effects, R2 and ICC.
#
# Run from the repo root:  Rscript tests/reference/make_toolkit_refs.R
# Reads tests/reference/<design>.csv (written by tests/reference/make_data.py),
# writes tests/reference/toolkit_refs.json (with R, lme4, lmerTest, emmeans
# and performance versions). Factors: levels in C-locale sorted order, as
# gbstats reads them; contrasts as each entry names them.
#
# What each section calls in R:
#   contrasts   lmerTest::lmer / lme4::glmer with contrasts = list(...);
#               coef(summary(.)); LMM intervals est +/- qt(.975, Satterthwaite
#               df) * se, GLMM intervals confint(method = "Wald")
#   lrt         anova(small, large) (lme4 refits REML fits by ML)
#   emmeans     emmeans(fit, specs, by, lmer.df = ...), pairs(., adjust = ..., reverse = ...);
#               type = "response" via regrid() (differences of probabilities)
#   ranef       as.data.frame(ranef(fit, condVar = TRUE)), as.data.frame(VarCorr(fit))
#   r2_icc      performance::r2_nakagawa, performance::icc

suppressPackageStartupMessages({
  library(lme4)
  library(lmerTest)
  library(emmeans)
  library(performance)
  library(jsonlite)
})

dir <- file.path("tests", "reference")
if (!dir.exists(dir)) stop("run this script from the repository root")

read_design <- function(name) {
  d <- read.csv(file.path(dir, paste0(name, ".csv")), stringsAsFactors = FALSE)
  for (col in names(d)) {
    if (is.character(d[[col]])) {
      d[[col]] <- factor(d[[col]], levels = sort(unique(d[[col]]), method = "radix"))
    }
  }
  d
}

# A user contrast matrix for stance (levels anti, neutral, pro), with named
# columns; the Python test builds the same matrix.
stance_matrix <- matrix(c(-1, 0, 1, 0.5, -1, 0.5), nrow = 3,
                        dimnames = list(c("anti", "neutral", "pro"), c("Lin", "Mid")))

r_contrasts <- function(spec) {
  if (is.null(spec)) return(NULL)
  lapply(spec, function(s) if (identical(s, "sum")) "contr.sum" else stance_matrix)
}

# Every fitted model used below, by name.
models <- list(
  fact_lmm_treat = list(data = "factorial", family = "gaussian",
                        formula = "y ~ close * stance + (1 | subject) + (1 | item)"),
  fact_lmm_sum   = list(data = "factorial", family = "gaussian",
                        formula = "y ~ close * stance + (1 | subject) + (1 | item)",
                        contrasts = list(close = "sum", stance = "sum")),
  fact_lmm_matrix = list(data = "factorial", family = "gaussian",
                         formula = "y ~ close + stance + (1 | subject) + (1 | item)",
                         contrasts = list(stance = "matrix")),
  fact_lmm_add   = list(data = "factorial", family = "gaussian",
                        formula = "y ~ close + stance + (1 | subject) + (1 | item)"),
  fact_lmm_subj  = list(data = "factorial", family = "gaussian",
                        formula = "y ~ close * stance + (1 | subject)"),
  fact_glmm_treat = list(data = "factorial", family = "binomial",
                         formula = "correct ~ close * stance + (1 | subject) + (1 | item)"),
  fact_glmm_sum  = list(data = "factorial", family = "binomial",
                        formula = "correct ~ close * stance + (1 | subject) + (1 | item)",
                        contrasts = list(close = "sum", stance = "sum")),
  fact_glmm_add  = list(data = "factorial", family = "binomial",
                        formula = "correct ~ close + stance + (1 | subject) + (1 | item)"),
  ri_sum         = list(data = "random_intercept", family = "gaussian",
                        formula = "y ~ x + cond + (1 | subject)", contrasts = list(cond = "sum")),
  ri_treat       = list(data = "random_intercept", family = "gaussian",
                        formula = "y ~ x + cond + (1 | subject)"),
  ri_small       = list(data = "random_intercept", family = "gaussian",
                        formula = "y ~ x + (1 | subject)"),
  slope          = list(data = "random_slope", family = "gaussian",
                        formula = "y ~ x + (1 + x | subject)")
)

fit_model <- function(spec) {
  d <- read_design(spec$data)
  f <- as.formula(spec$formula)
  if (spec$family == "gaussian") {
    lmerTest::lmer(f, data = d, REML = TRUE, contrasts = r_contrasts(spec$contrasts))
  } else {
    glmer(f, data = d, family = binomial, contrasts = r_contrasts(spec$contrasts))
  }
}
fits <- lapply(models, fit_model)

fixed_table <- function(fit, family) {
  s <- coef(summary(fit))
  if (family == "gaussian") {
    df <- s[, "df"]; stat <- s[, "t value"]; p <- s[, "Pr(>|t|)"]
    half <- qt(0.975, df) * s[, "Std. Error"]
    lo <- s[, "Estimate"] - half; hi <- s[, "Estimate"] + half
  } else {
    df <- rep(NA_real_, nrow(s)); stat <- s[, "z value"]; p <- s[, "Pr(>|z|)"]
    wald <- confint(fit, parm = "beta_", method = "Wald")
    lo <- wald[rownames(s), 1]; hi <- wald[rownames(s), 2]
  }
  data.frame(term = rownames(s), estimate = s[, "Estimate"], se = s[, "Std. Error"],
             stat = stat, df = df, p_value = p, ci_low = lo, ci_high = hi, row.names = NULL)
}

model_record <- function(name) {
  spec <- models[[name]]
  fit <- fits[[name]]
  list(data = paste0(spec$data, ".csv"), formula = spec$formula, family = spec$family,
       contrasts = if (is.null(spec$contrasts)) list() else spec$contrasts,
       fixed = fixed_table(fit, spec$family), loglik = as.numeric(logLik(fit)),
       aic = AIC(fit), bic = BIC(fit), nobs = nobs(fit))
}

lrt_record <- function(small, large) {
  a <- as.data.frame(anova(fits[[small]], fits[[large]]))
  list(small = small, large = large,
       table = data.frame(model = c(small, large), npar = a$npar, aic = a$AIC, bic = a$BIC,
                          loglik = a$logLik, deviance = a$deviance, chisq = a$Chisq,
                          df = a$Df, p_value = a$`Pr(>Chisq)`, row.names = NULL))
}

emm_record <- function(name, specs, by = NULL, type = "link", adjust = "tukey",
                       lmer_df = "satterthwaite", reverse = FALSE) {
  fit <- fits[[name]]
  emm <- if (models[[name]]$family == "gaussian") {
    emmeans(fit, specs = specs, by = by, lmer.df = lmer_df)
  } else {
    emmeans(fit, specs = specs, by = by)
  }
  if (type == "response") emm <- regrid(emm)
  means <- as.data.frame(summary(emm, infer = c(TRUE, TRUE)))
  pairs_ <- as.data.frame(summary(pairs(emm, adjust = adjust, reverse = reverse),
                                  infer = c(TRUE, TRUE)))
  list(model = name, specs = specs, by = if (is.null(by)) list() else by, type = type,
       adjust = adjust, lmer_df = lmer_df, reverse = reverse, means = means, contrasts = pairs_)
}

ranef_record <- function(name) {
  fit <- fits[[name]]
  re <- as.data.frame(ranef(fit, condVar = TRUE))
  vc <- as.data.frame(VarCorr(fit))
  list(model = name,
       ran_vals = data.frame(group = as.character(re$grpvar), term = as.character(re$term),
                             level = as.character(re$grp), estimate = re$condval,
                             se = re$condsd),
       ran_pars = data.frame(group = vc$grp, var1 = ifelse(is.na(vc$var1), "", vc$var1),
                             var2 = ifelse(is.na(vc$var2), "", vc$var2), sdcor = vc$sdcor))
}

r2_record <- function(name) {
  r2 <- suppressWarnings(r2_nakagawa(fits[[name]]))
  ic <- suppressWarnings(icc(fits[[name]]))
  list(model = name, r2_marginal = as.numeric(r2$R2_marginal),
       r2_conditional = as.numeric(r2$R2_conditional),
       icc_adjusted = as.numeric(ic$ICC_adjusted), icc_unadjusted = as.numeric(ic$ICC_unadjusted))
}

out <- list(
  generated_by = "Rscript tests/reference/make_toolkit_refs.R",
  r_version = R.version.string,
  lme4_version = as.character(packageVersion("lme4")),
  lmerTest_version = as.character(packageVersion("lmerTest")),
  emmeans_version = as.character(packageVersion("emmeans")),
  performance_version = as.character(packageVersion("performance")),
  stance_matrix = list(levels = rownames(stance_matrix), names = colnames(stance_matrix),
                       rows = unname(split(stance_matrix, row(stance_matrix)))),
  models = lapply(setNames(names(models), names(models)), model_record),
  lrt = list(
    fixed_interaction = lrt_record("fact_lmm_add", "fact_lmm_treat"),
    random_item = lrt_record("fact_lmm_subj", "fact_lmm_treat"),
    glmm_interaction = lrt_record("fact_glmm_add", "fact_glmm_treat"),
    single_group = lrt_record("ri_small", "ri_treat")
  ),
  emmeans = list(
    close_by_stance = emm_record("fact_lmm_treat", "close", by = "stance", adjust = "none"),
    stance_by_close_tukey = emm_record("fact_lmm_treat", "stance", by = "close", adjust = "tukey"),
    stance_by_close_holm = emm_record("fact_lmm_treat", "stance", by = "close", adjust = "holm"),
    stance_by_close_sum = emm_record("fact_lmm_sum", "stance", by = "close", adjust = "tukey"),
    stance_averaged = emm_record("fact_lmm_treat", "stance", adjust = "tukey"),
    cells = emm_record("fact_lmm_treat", c("close", "stance"), adjust = "holm"),
    glmm_link = emm_record("fact_glmm_treat", "stance", by = "close", adjust = "tukey"),
    glmm_response = emm_record("fact_glmm_treat", "stance", by = "close", type = "response",
                               adjust = "holm"),
    # the shape studies.cognitive_bias reports: pro - anti style (revpairwise) at each level
    glmm_response_reverse = emm_record("fact_glmm_treat", "close", by = "stance",
                                       type = "response", adjust = "none", reverse = TRUE),
    single_group_asymptotic = emm_record("ri_treat", "cond", adjust = "none",
                                         lmer_df = "asymptotic"),
    single_group_tukey = emm_record("ri_treat", "cond", adjust = "tukey", lmer_df = "asymptotic"),
    single_group_holm = emm_record("ri_treat", "cond", adjust = "holm", lmer_df = "asymptotic")
  ),
  ranef = list(slope = ranef_record("slope"), crossed = ranef_record("fact_lmm_treat"),
               glmm = ranef_record("fact_glmm_treat")),
  r2_icc = lapply(setNames(nm = c("ri_treat", "slope", "fact_lmm_treat", "fact_glmm_treat")),
                  r2_record)
)

write_json(out, file.path(dir, "toolkit_refs.json"), digits = NA, auto_unbox = TRUE,
           pretty = TRUE, dataframe = "rows", na = "null")
cat("wrote", file.path(dir, "toolkit_refs.json"), "\n")

# Watson et al.'s (2023) regression on the published Camilliere stimuli: the
# lme4 reference values for tests/studies/test_singular_they_camilliere.py.
#
# Run from the repo root:  Rscript tests/reference/watson_regression.R
# Reads tests/reference/watson_regression.csv (written by
# make_watson_regression_data.py: smollm2-135m surprisal in nats of the 160
# closeness x gender stimuli, gendered and close coded +1/-1, item number itm)
# and fits the model as their camilliere/part_5_regression.R does:
# lmerTest::lmer, REML (the default), Satterthwaite df. Writes
# tests/reference/watson_regression_refs.json: fixed effects (estimate, SE,
# Satterthwaite df, t, p, and the t interval estimate +/- qt(0.975, df) * SE),
# variance components, REML criterion, nobs, groups, and the R, lme4 and
# lmerTest versions.

suppressPackageStartupMessages({
  library(lme4)
  library(lmerTest)
  library(jsonlite)
})

dir <- file.path("tests", "reference")
if (!dir.exists(dir)) stop("run this script from the repository root")

data <- read.csv(file.path(dir, "watson_regression.csv"), stringsAsFactors = FALSE)
data$itm <- factor(data$itm)
model <- lmer(surprisal_they ~ gendered + close + (1 | itm), data = data)

coefs <- summary(model)$coefficients
fixed <- lapply(rownames(coefs), function(term) {
  est <- coefs[term, "Estimate"]; se <- coefs[term, "Std. Error"]; df <- coefs[term, "df"]
  list(term = term, estimate = est, se = se, df = df, t = coefs[term, "t value"],
       p_value = coefs[term, "Pr(>|t|)"],
       ci_low = est - qt(0.975, df) * se, ci_high = est + qt(0.975, df) * se)
})
vc <- as.data.frame(VarCorr(model))
refs <- list(
  formula = "surprisal_they ~ gendered + close + (1 | itm)",
  fixed = fixed,
  variances = list(itm = vc$vcov[vc$grp == "itm"], residual = vc$vcov[vc$grp == "Residual"]),
  reml_criterion = unname(REMLcrit(model)),
  nobs = nobs(model),
  n_groups = unname(ngrps(model)["itm"]),
  is_singular = isSingular(model),
  versions = list(R = R.version.string, lme4 = as.character(packageVersion("lme4")),
                  lmerTest = as.character(packageVersion("lmerTest")))
)
write_json(refs, file.path(dir, "watson_regression_refs.json"), digits = NA, auto_unbox = TRUE,
           pretty = TRUE)
print(summary(model))

# blme::bglmer reference values for gbstats' penalised GLMM (issue 25 item 7).
#
# Run from the repo root:  Rscript tests/reference/bglmer_reference.R
# Writes tests/reference/separation_glmm.csv (simulated here, seeded) and
# tests/reference/bglmer_refs.json with, for `correct ~ cond + x + (1 | subject)`:
#   glmer:  lme4::glmer, binomial logit, Laplace (the unpenalised fit, whose
#           condc estimate runs off towards infinity);
#   bglmer: blme::bglmer with fixef.prior = normal(sd = c(10, 2.5)) and
#           cov.prior = NULL (what gbstats' fit_glmm(penalised = TRUE) fits);
# each with fixed effects (estimate, SE, z, p), variance components, logLik
# and the R, lme4 and blme versions.
#
# The data: 30 subjects x 12 trials, cond a/b/c (4 trials each), x ~ N(0, 1);
# log-odds 0.2 + 0.8 [cond b] + 0.5 x + subject N(0, 0.6^2); every cond c trial
# is then set correct, so cond c is quasi-completely separated.

suppressPackageStartupMessages({
  library(lme4)
  library(blme)
  library(jsonlite)
})

dir <- file.path("tests", "reference")
if (!dir.exists(dir)) stop("run this script from the repository root")

set.seed(2025)
n_subject <- 30
n_trial <- 12
subject <- rep(sprintf("s%02d", seq_len(n_subject)), each = n_trial)
cond <- rep(rep(c("a", "b", "c"), times = 4), times = n_subject)
x <- round(rnorm(n_subject * n_trial), 4)
u <- rnorm(n_subject, 0, 0.6)[rep(seq_len(n_subject), each = n_trial)]
eta <- 0.2 + 0.8 * (cond == "b") + 0.5 * x + u
correct <- as.integer(runif(length(eta)) < plogis(eta))
correct[cond == "c"] <- 1L
data <- data.frame(subject = subject, cond = cond, x = x, correct = correct)
write.csv(data, file.path(dir, "separation_glmm.csv"), row.names = FALSE)

data$cond <- factor(data$cond, levels = c("a", "b", "c"))
formula <- correct ~ cond + x + (1 | subject)

tidy <- function(fit) {
  co <- coef(summary(fit))
  vc <- as.data.frame(VarCorr(fit))
  list(
    fixed = lapply(seq_len(nrow(co)), function(i) list(
      term = rownames(co)[i], estimate = co[i, 1], se = co[i, 2], z = co[i, 3], p = co[i, 4])),
    ranef = lapply(seq_len(nrow(vc)), function(i) list(
      group = vc$grp[i], term = vc$var1[i], variance = vc$vcov[i], sd = vc$sdcor[i])),
    loglik = as.numeric(logLik(fit)), nobs = nobs(fit))
}

glmer_fit <- suppressWarnings(glmer(formula, data = data, family = binomial))
bglmer_fit <- bglmer(formula, data = data, family = binomial,
                     fixef.prior = normal(sd = c(10, 2.5)), cov.prior = NULL)

out <- list(
  formula = "correct ~ cond + x + (1 | subject)",
  fixef_prior = "normal(sd = c(10, 2.5))", cov_prior = "NULL",
  glmer = tidy(glmer_fit), bglmer = tidy(bglmer_fit),
  versions = list(R = paste(R.version$major, R.version$minor, sep = "."),
                  lme4 = as.character(packageVersion("lme4")),
                  blme = as.character(packageVersion("blme"))))
write_json(out, file.path(dir, "bglmer_refs.json"), digits = NA, auto_unbox = TRUE,
           pretty = TRUE)

# R reference values for gbstats' "centered_helmert" contrast
# (gbstats.mixed.contrasts.centered_helmert / CenteredHelmert).
#
# Run from the repo root:  GBSTATS_DATA=/path/to/data Rscript tests/reference/centered_helmert.R
# Writes tests/reference/centered_helmert_refs.json.
#
# The coding (Fraundorf's centerfactor, as used by Gardner & Brown-Schmidt 2024):
# for contrast i the i-th reference level gets -0.5, earlier reference levels 0,
# other levels +0.5; then the column is centred on its mean over the observations.
# This script does the centring the other way round from gbstats: it builds the
# uncentred matrix, expands it to one row per observation with R's own factor
# indexing, and subtracts colMeans() of that per-observation matrix, so a
# mistake in gbstats' count-weighted formula would show.
#
# Cases: the Condition factors of gardner2024 Exp 3 and Exp 4 (reference
# levels "last", "first"), a 3-level factor with default references (the
# first two levels), and a 2-level factor. Then glmer fits Exp 3's main model
# with the Exp 3 coding, for an end-to-end check of gbstats' lme4 path.

suppressPackageStartupMessages({
  library(lme4)
  library(jsonlite)
})

dir <- file.path("tests", "reference")
if (!dir.exists(dir)) stop("run this script from the repository root")
data_dir <- Sys.getenv("GBSTATS_DATA")
if (data_dir == "") stop("set GBSTATS_DATA to the folder holding gardner2024/")

uncentred <- function(levels, reference) {
  k <- length(levels)
  m <- matrix(NA_real_, nrow = k, ncol = k - 1, dimnames = list(levels, NULL))
  for (i in seq_len(k - 1)) {
    col <- rep(0.5, k)
    col[match(reference[seq_len(i - 1)], levels)] <- 0
    col[match(reference[i], levels)] <- -0.5
    m[, i] <- col
  }
  m
}

centred_on_observations <- function(x, reference) {
  x <- factor(x)
  m <- uncentred(levels(x), reference)
  per_obs <- m[as.integer(x), , drop = FALSE]      # one row per observation
  sweep(m, 2, colMeans(per_obs))
}

case <- function(x, reference) {
  x <- factor(x)
  m <- centred_on_observations(x, reference)
  list(levels = levels(x), reference = reference,
       counts = as.list(table(x)), matrix = unname(m))
}

exp3 <- read.csv(file.path(data_dir, "gardner2024", "exp3_data.csv"), stringsAsFactors = TRUE)
exp4 <- read.csv(file.path(data_dir, "gardner2024", "exp4_data.csv"), stringsAsFactors = TRUE)
toy3 <- rep(c("a", "b", "c"), times = c(5, 11, 2))
toy2 <- rep(c("no", "yes"), times = c(7, 3))

out <- list(
  exp3 = case(exp3$Condition, c("last", "first")),
  exp4 = case(exp4$Condition, c("last", "first")),
  toy3_default = case(toy3, c("a", "b")),
  toy2_default = case(toy2, c("no"))
)

exp3$GenderRatingCentered <- exp3$GenderRating - mean(exp3$GenderRating)
contrasts(exp3$Condition) <- centred_on_observations(exp3$Condition, c("last", "first"))
fit <- glmer(She ~ Condition * GenderRatingCentered + (1 | SubjID) + (1 | Name),
             data = exp3, family = binomial)
co <- coef(summary(fit))
vc <- as.data.frame(VarCorr(fit))
out$exp3_glmer <- list(
  formula = "She ~ Condition * GenderRatingCentered + (1 | SubjID) + (1 | Name)",
  terms = rownames(co), estimate = unname(co[, "Estimate"]), se = unname(co[, "Std. Error"]),
  variance = setNames(as.list(vc$vcov), vc$grp), logLik = as.numeric(logLik(fit)))
out$versions <- list(R = R.version.string, lme4 = as.character(packageVersion("lme4")))

write_json(out, file.path(dir, "centered_helmert_refs.json"), digits = NA, auto_unbox = TRUE,
           pretty = TRUE)
cat("wrote", file.path(dir, "centered_helmert_refs.json"), "\n")
